//! YOLO26 training (filled by the training issues).
