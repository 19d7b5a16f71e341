//! Compiles `csrc/cvjpeg.c` (the OpenCV `JpegDecoder` mirror) against the libjpeg-turbo headers that mozjpeg-sys
//! generated for its static library (exported to us as `DEP_JPEG_INCLUDE` through its `links = "jpeg"`).

fn main() {
    println!("cargo:rerun-if-changed=csrc/cvjpeg.c");
    let include = std::env::var_os("DEP_JPEG_INCLUDE")
        .expect("mozjpeg-sys did not export DEP_JPEG_INCLUDE (the libjpeg headers); is it a dependency?");
    let mut build = cc::Build::new();
    for dir in std::env::split_paths(&include) {
        build.include(dir);
    }
    build.file("csrc/cvjpeg.c").warnings(true).extra_warnings(true).compile("yolo26_cvjpeg");
}
