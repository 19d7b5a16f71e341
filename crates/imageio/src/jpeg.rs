//! JPEG through libjpeg-turbo (mozjpeg-sys' bundled build) driven by `csrc/cvjpeg.c`, a C mirror of OpenCV's
//! `cv::JpegDecoder::readHeader` / `readData` for `cv2.imdecode(buf, cv2.IMREAD_COLOR)`.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

use image::RgbImage;

use crate::exif::ExifState;
use crate::{DecodeError, Format};

// Link the static libjpeg-turbo that mozjpeg-sys builds; our C shim calls into it.
use mozjpeg_sys as _;

#[repr(C)]
#[derive(Default)]
struct CvInfo {
    width: c_uint,
    height: c_uint,
    num_components: c_int,
    jpeg_color_space: c_int,
    progressive: c_int,
    saw_adobe_marker: c_int,
    adobe_transform: c_int,
}

#[repr(C)]
struct CvState {
    _private: [u8; 0],
}

type Callback = unsafe extern "C" fn(ctx: *mut c_void, kind: c_int, data: *const u8, len: usize);

extern "C" {
    fn cvjpeg_open(
        buf: *const u8,
        len: usize,
        cb: Option<Callback>,
        ctx: *mut c_void,
        info: *mut CvInfo,
        out: *mut *mut CvState,
    ) -> c_int;
    fn cvjpeg_read(st: *mut CvState, out: *mut u8, rows: *mut c_uint) -> c_int;
    fn cvjpeg_close(st: *mut CvState);
    fn cvjpeg_error_message(st: *const CvState) -> *const c_char;
}

const OK: c_int = 0;
const SUSPENDED: c_int = 2;

/// What the C side reports while it runs: libjpeg warnings and the EXIF blocks of the APP1 markers.
#[derive(Default)]
struct Sink {
    warnings: Vec<String>,
    exif: ExifState,
}

/// Called from C; must not unwind (it cannot: it only pushes to a `Vec` and parses bytes).
unsafe extern "C" fn callback(ctx: *mut c_void, kind: c_int, data: *const u8, len: usize) {
    // SAFETY: `ctx` is the `Box<Sink>` owned by the `Jpeg` that is running the C call, and `data` points to `len`
    // bytes that live for the duration of this call (libjpeg's message buffer or saved-marker data).
    let sink = unsafe { &mut *(ctx as *mut Sink) };
    let bytes = if data.is_null() || len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(data, len) } };
    if kind == 0 {
        sink.warnings.push(String::from_utf8_lossy(bytes).into_owned());
    } else if let Some(tiff) = bytes.strip_prefix(b"Exif\0\0") {
        // OpenCV: APP1 markers longer than 6 bytes that start with "Exif\0\0" go to ExifReader::parseExif.
        sink.exif.parse(tiff);
    }
}

/// An opened JPEG (header read), ready for `read`.
pub(crate) struct Jpeg<'a> {
    state: *mut CvState,
    sink: Box<Sink>,
    info: CvInfo,
    _buf: &'a [u8],
}

/// Header facts of a JPEG.
pub(crate) struct JpegHeader {
    pub width: u32,
    pub height: u32,
    pub orientation: u16,
}

impl Drop for Jpeg<'_> {
    fn drop(&mut self) {
        // SAFETY: `state` came from `cvjpeg_open` (possibly null) and is closed exactly once.
        unsafe { cvjpeg_close(self.state) }
    }
}

impl<'a> Jpeg<'a> {
    fn message(&self) -> String {
        if self.state.is_null() {
            return "out of memory".to_string();
        }
        // SAFETY: the state is alive; the message is a NUL-terminated buffer inside it.
        let m = unsafe { CStr::from_ptr(cvjpeg_error_message(self.state)) };
        m.to_string_lossy().into_owned()
    }

    /// `JpegDecoder::readHeader` on an in-memory buffer.
    pub(crate) fn open(buf: &'a [u8]) -> Result<Self, DecodeError> {
        let mut jpeg = Jpeg { state: std::ptr::null_mut(), sink: Box::default(), info: CvInfo::default(), _buf: buf };
        let ctx = &mut *jpeg.sink as *mut Sink as *mut c_void;
        // SAFETY: `buf` outlives `jpeg` (lifetime 'a), `ctx` points to the boxed sink that lives as long as `jpeg`,
        // and the C side never keeps `info` past the call.
        let rc = unsafe { cvjpeg_open(buf.as_ptr(), buf.len(), Some(callback), ctx, &mut jpeg.info, &mut jpeg.state) };
        match rc {
            OK => Ok(jpeg),
            SUSPENDED => Err(DecodeError::Truncated {
                format: Format::Jpeg,
                message: jpeg.message(),
                rows_decoded: 0,
                height: 0,
                warnings: std::mem::take(&mut jpeg.sink.warnings),
            }),
            _ => Err(DecodeError::Corrupt { format: Format::Jpeg, message: jpeg.message() }),
        }
    }

    pub(crate) fn header(&self) -> JpegHeader {
        JpegHeader { width: self.info.width, height: self.info.height, orientation: self.sink.exif.orientation() }
    }

    /// `JpegDecoder::readData` into an RGB image (before the EXIF orientation); returns the libjpeg warnings too.
    pub(crate) fn read(mut self) -> Result<(RgbImage, Vec<String>), DecodeError> {
        let (w, h) = (self.info.width, self.info.height);
        let len = (w as usize).checked_mul(h as usize).and_then(|p| p.checked_mul(3)).ok_or(DecodeError::TooLarge {
            width: w,
            height: h,
            limit: crate::MAX_PIXELS,
        })?;
        let mut out = vec![0u8; len];
        let mut rows: c_uint = 0;
        // SAFETY: `out` has room for `w * h * 3` bytes, which is what the C side writes at most; the sink and the
        // input buffer are alive (owned / borrowed by `self`).
        let rc = unsafe { cvjpeg_read(self.state, out.as_mut_ptr(), &mut rows) };
        let warnings = std::mem::take(&mut self.sink.warnings);
        match rc {
            OK => {
                let img = RgbImage::from_raw(w, h, out)
                    .ok_or_else(|| DecodeError::Corrupt { format: Format::Jpeg, message: "bad buffer size".into() })?;
                Ok((img, warnings))
            }
            SUSPENDED => Err(DecodeError::Truncated {
                format: Format::Jpeg,
                message: self.message(),
                rows_decoded: rows,
                height: h,
                warnings,
            }),
            _ => Err(DecodeError::Corrupt { format: Format::Jpeg, message: self.message() }),
        }
    }
}
