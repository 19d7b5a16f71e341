//! One integration-test binary (linking is slow here): every module below is a test suite.
mod detector;
mod loss_parity;
mod model_parity;
mod model_shape;
mod preprocess;
mod train;
mod val_parity;
mod weights_io;
