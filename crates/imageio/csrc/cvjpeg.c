/*
 * OpenCV-exact JPEG decoding on libjpeg-turbo (bundled by mozjpeg-sys).
 *
 * This file mirrors OpenCV's `cv::JpegDecoder` (modules/imgcodecs/src/grfmt_jpeg.cpp, OpenCV 4.10+ / 5.x) as used
 * by `cv2.imdecode(buf, cv2.IMREAD_COLOR)`:
 *
 *  - the memory source manager whose `fill_input_buffer` returns FALSE (a suspending source: truncated data makes
 *    `jpeg_read_scanlines` return 0 rows, which OpenCV treats as a failed decode),
 *  - `jpeg_save_markers(APP1, 0xffff)` before `jpeg_read_header(TRUE)`,
 *  - out_color_space JCS_EXT_RGB/BGR with 3 components for 1- and 3-component files, JCS_CMYK with 4 components for
 *    4-component (CMYK / YCCK) files, then OpenCV's own CMYK->RGB formula (`icvCvt_CMYK2RGB_8u_C4C3R`),
 *  - libjpeg's defaults otherwise (JDCT_ISLOW, fancy upsampling, block smoothing),
 *  - an error manager whose `error_exit` longjmps back (so a corrupt file is an error code, never `exit()`).
 *
 * Differences from OpenCV that do not change pixels: warnings are collected through a callback instead of being
 * printed to stderr by libjpeg's default `output_message`; OpenCV's manual MJPEG Huffman table insertion is compiled
 * out in OpenCV itself for libjpeg-turbo >= 1.3.90 (libjpeg-turbo loads the standard tables on its own).
 *
 * setjmp/longjmp never crosses a Rust frame: every libjpeg call below is made from a C function of this file that
 * has set the jump buffer itself, and the callbacks into Rust (`cvjpeg_cb`) never unwind.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jpeglib.h"

/* kind 0: a libjpeg warning (NUL-terminated text, len = strlen); kind 1: the data of one APP1 marker. */
typedef void (*cvjpeg_cb)(void *ctx, int kind, const unsigned char *data, size_t len);

enum { CVJPEG_OK = 0, CVJPEG_ERROR = 1, CVJPEG_SUSPENDED = 2 };

struct cvjpeg_err {
  struct jpeg_error_mgr pub;
  jmp_buf setjmp_buffer;
  char msg[JMSG_LENGTH_MAX];
  cvjpeg_cb cb;
  void *ctx;
};

struct cvjpeg_src {
  struct jpeg_source_mgr pub;
  int skip;
};

typedef struct cvjpeg_state {
  struct jpeg_decompress_struct cinfo;
  struct cvjpeg_err jerr;
  struct cvjpeg_src source;
  int created;
} cvjpeg_state;

typedef struct cvjpeg_info {
  unsigned int width;  /* output_width after jpeg_calc_output_dimensions (scale 1/1) */
  unsigned int height; /* output_height */
  int num_components;
  int jpeg_color_space; /* J_COLOR_SPACE of the file */
  int progressive;
  int saw_adobe_marker;
  int adobe_transform;
} cvjpeg_info;

static void stub(j_decompress_ptr cinfo) { (void)cinfo; }

/* OpenCV: `fill_input_buffer` returns FALSE: the whole file is already in the buffer, more data never comes. */
static boolean fill_input_buffer(j_decompress_ptr cinfo) {
  (void)cinfo;
  return FALSE;
}

/* OpenCV's `skip_input_data`, verbatim. */
static void skip_input_data(j_decompress_ptr cinfo, long num_bytes) {
  struct cvjpeg_src *source = (struct cvjpeg_src *)cinfo->src;
  if (num_bytes > (long)source->pub.bytes_in_buffer) {
    source->skip = (int)(num_bytes - source->pub.bytes_in_buffer);
    source->pub.next_input_byte += source->pub.bytes_in_buffer;
    source->pub.bytes_in_buffer = 0;
  } else {
    source->pub.bytes_in_buffer -= num_bytes;
    source->pub.next_input_byte += num_bytes;
    source->skip = 0;
  }
}

static void error_exit(j_common_ptr cinfo) {
  struct cvjpeg_err *err = (struct cvjpeg_err *)cinfo->err;
  (*cinfo->err->format_message)(cinfo, err->msg);
  longjmp(err->setjmp_buffer, 1);
}

/* libjpeg's default emit_message prints the first warning to stderr; we hand every warning to the caller. Trace
 * messages (msg_level >= 0) are dropped, as with the default trace_level 0. */
static void emit_message(j_common_ptr cinfo, int msg_level) {
  struct cvjpeg_err *err = (struct cvjpeg_err *)cinfo->err;
  if (msg_level < 0) {
    char buf[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, buf);
    cinfo->err->num_warnings++;
    if (err->cb) err->cb(err->ctx, 0, (const unsigned char *)buf, strlen(buf));
  }
}

static void output_message(j_common_ptr cinfo) { (void)cinfo; }

const char *cvjpeg_error_message(const cvjpeg_state *st) { return st->jerr.msg; }

void cvjpeg_close(cvjpeg_state *st) {
  if (!st) return;
  if (st->created) jpeg_destroy_decompress(&st->cinfo);
  free(st);
}

/*
 * OpenCV `JpegDecoder::readHeader` for a memory buffer. On success *out is a state to pass to `cvjpeg_read` /
 * `cvjpeg_close`; on failure *out may still be non-NULL (the error message lives there) and must be closed.
 * `buf` must stay alive and unchanged until `cvjpeg_close`.
 */
int cvjpeg_open(const unsigned char *buf, size_t len, cvjpeg_cb cb, void *ctx, cvjpeg_info *info,
                cvjpeg_state **out) {
  cvjpeg_state *st = (cvjpeg_state *)calloc(1, sizeof(cvjpeg_state));
  *out = st;
  if (!st) return CVJPEG_ERROR;
  st->jerr.cb = cb;
  st->jerr.ctx = ctx;
  st->cinfo.err = jpeg_std_error(&st->jerr.pub);
  st->jerr.pub.error_exit = error_exit;
  st->jerr.pub.emit_message = emit_message;
  st->jerr.pub.output_message = output_message;

  if (setjmp(st->jerr.setjmp_buffer) != 0) return CVJPEG_ERROR;

  jpeg_create_decompress(&st->cinfo);
  st->created = 1;

  st->cinfo.src = &st->source.pub;
  st->source.pub.init_source = stub;
  st->source.pub.fill_input_buffer = fill_input_buffer;
  st->source.pub.skip_input_data = skip_input_data;
  st->source.pub.resync_to_restart = jpeg_resync_to_restart;
  st->source.pub.term_source = stub;
  st->source.skip = 0;
  st->source.pub.next_input_byte = buf;
  st->source.pub.bytes_in_buffer = len;

  jpeg_save_markers(&st->cinfo, JPEG_APP0 + 1, 0xffff);
  if (jpeg_read_header(&st->cinfo, TRUE) != JPEG_HEADER_OK) {
    /* OpenCV ignores the return value, but a suspended header leaves m_width == 0 or makes
     * jpeg_calc_output_dimensions fail (JERR_BAD_STATE): readHeader/readData fail either way. */
    strcpy(st->jerr.msg, "Premature end of JPEG file (the header is incomplete)");
    return CVJPEG_SUSPENDED;
  }

  if (cb) {
    jpeg_saved_marker_ptr m;
    for (m = st->cinfo.marker_list; m != NULL; m = m->next)
      if (m->marker == JPEG_APP0 + 1) cb(ctx, 1, m->data, m->data_length);
  }

  st->cinfo.scale_num = 1;
  st->cinfo.scale_denom = 1;
  jpeg_calc_output_dimensions(&st->cinfo);

  info->width = st->cinfo.output_width;
  info->height = st->cinfo.output_height;
  info->num_components = st->cinfo.num_components;
  info->jpeg_color_space = (int)st->cinfo.jpeg_color_space;
  info->progressive = st->cinfo.progressive_mode ? 1 : 0;
  info->saw_adobe_marker = st->cinfo.saw_Adobe_marker ? 1 : 0;
  info->adobe_transform = st->cinfo.Adobe_transform;
  return CVJPEG_OK;
}

/* OpenCV `icvCvt_CMYK2RGB_8u_C4C3R` (modules/imgcodecs/src/utils.cpp) for one row. */
static void cmyk_to_rgb(const unsigned char *cmyk, unsigned char *rgb, unsigned int width) {
  unsigned int i;
  for (i = 0; i < width; i++, rgb += 3, cmyk += 4) {
    int c = cmyk[0], m = cmyk[1], y = cmyk[2], k = cmyk[3];
    c = k - ((255 - c) * k >> 8);
    m = k - ((255 - m) * k >> 8);
    y = k - ((255 - y) * k >> 8);
    rgb[0] = (unsigned char)c;
    rgb[1] = (unsigned char)m;
    rgb[2] = (unsigned char)y;
  }
}

/*
 * OpenCV `JpegDecoder::readData` for a 3-channel (IMREAD_COLOR) destination, RGB order. `out` holds
 * width * height * 3 bytes. `*rows` receives the number of rows decoded.
 */
int cvjpeg_read(cvjpeg_state *st, unsigned char *out, unsigned int *rows) {
  volatile unsigned int done = 0;
  volatile int finishing = 0;
  struct jpeg_decompress_struct *cinfo = &st->cinfo;
  *rows = 0;
  if (setjmp(st->jerr.setjmp_buffer) != 0) {
    *rows = done;
    if (finishing) {
      /* OpenCV sets `result = true` before jpeg_finish_decompress, so an error raised there is ignored. */
      if (st->jerr.cb) st->jerr.cb(st->jerr.ctx, 0, (const unsigned char *)st->jerr.msg, strlen(st->jerr.msg));
      return CVJPEG_OK;
    }
    return CVJPEG_ERROR;
  }
  {
    const unsigned int width = cinfo->output_width, height = cinfo->output_height;
    const int direct = cinfo->num_components != 4;
    JSAMPARRAY buffer = NULL;
    if (direct) {
      cinfo->out_color_space = JCS_EXT_RGB;
      cinfo->out_color_components = 3;
    } else {
      cinfo->out_color_space = JCS_CMYK;
      cinfo->out_color_components = 4;
    }

    jpeg_start_decompress(cinfo);
    if (!direct) buffer = (*cinfo->mem->alloc_sarray)((j_common_ptr)cinfo, JPOOL_IMAGE, width * 4, 1);

    while (done < height) {
      unsigned char *row = out + (size_t)done * width * 3;
      if (direct) {
        JSAMPROW r = row;
        if (jpeg_read_scanlines(cinfo, &r, 1) != 1) break;
      } else {
        if (jpeg_read_scanlines(cinfo, buffer, 1) != 1) break;
        cmyk_to_rgb(buffer[0], row, width);
      }
      done++;
    }
    *rows = done;
    if (done < height) {
      strcpy(st->jerr.msg, "Premature end of JPEG file (jpeg_read_scanlines returned no row)");
      return CVJPEG_SUSPENDED;
    }
    /* OpenCV ignores the result of jpeg_finish_decompress (it suspends when the EOI marker is missing) and also an
     * error raised inside it (it has already set `result = true`). */
    finishing = 1;
    jpeg_finish_decompress(cinfo);
  }
  return CVJPEG_OK;
}
