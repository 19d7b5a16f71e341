//! One struct per ultralytics block.
pub mod attention;
pub mod blocks;
pub mod conv;
pub mod head;
