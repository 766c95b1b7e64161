/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* jpeg-decode.c: imagedec's decoding core, as in jpeg-decode.h. */
#include "jpeg-decode.h"

#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE */
#include <string.h>

#include <jpeglib.h>

/* No real photograph comes near this; a corrupt header that claims more is
 * refused before we allocate for it. */
#define MAX_PIXELS (G_GUINT64_CONSTANT (1) << 28)

/* The smallest libjpeg-turbo scale (at most 1/1, and a power of two when
 * @fast_scales_only) that keeps the short side of a @width x @height image at
 * @min_short_side pixels or more. */
static tjscalingfactor
pick_scale (
    int width, int height, guint min_short_side, gboolean fast_scales_only)
{
  tjscalingfactor best = { 1, 1 };
  tjscalingfactor *factors;
  int i, n_factors = 0;

  if (min_short_side == 0)
    return best;
  factors = tjGetScalingFactors (&n_factors);
  for (i = 0; factors != NULL && i < n_factors; i++) {
    tjscalingfactor f = factors[i];
    int short_side = MIN (TJSCALED (width, f), TJSCALED (height, f));

    if (f.num > f.denom)
      continue;
    /* Only 1/2 and 1/4 have SIMD inverse DCTs (1/8 keeps the DC term alone):
     * a 7/8 decode is slower than a full one. */
    if (fast_scales_only && f.num != 1)
      continue;
    if ((guint)short_side >= min_short_side
        && f.num * best.denom < best.num * f.denom)
      best = f;
  }
  return best;
}

/* libjpeg-turbo's own CMYK to RGB rule (its cmyk.h, used by djpeg): the
 * stored values are Adobe-inverted, so R = C * K / 255, rounded. */
static void
cmyk_to_rgb (
    const guint8 *cmyk, guint8 *rgb, int width, int height, int rgb_stride)
{
  int x, y;

  for (y = 0; y < height; y++) {
    const guint8 *in = cmyk + (gsize)y * width * 4;
    guint8 *out = rgb + (gsize)y * rgb_stride;

    for (x = 0; x < width; x++, in += 4, out += 3) {
      guint k = in[3];

      out[0] = (2 * in[0] * k + 255) / 510;
      out[1] = (2 * in[1] * k + 255) / 510;
      out[2] = (2 * in[2] * k + 255) / 510;
    }
  }
}

/* Luminance of RGB rows, with libjpeg's weights (ITU-R BT.601). */
static void
rgb_to_gray (const guint8 *rgb, int rgb_stride, guint8 *gray, int gray_stride,
    int width, int height)
{
  int x, y;

  for (y = 0; y < height; y++) {
    const guint8 *in = rgb + (gsize)y * rgb_stride;
    guint8 *out = gray + (gsize)y * gray_stride;

    for (x = 0; x < width; x++, in += 3)
      out[x] = (19595 * in[0] + 38470 * in[1] + 7471 * in[2] + 32768) >> 16;
  }
}

/* Zeroes @pad bytes at @p and at every @stride bytes after it, @rows times.
 * Video rows pad to 4 bytes, so @pad is 1 to 3 unless the caller asked for
 * a wider stride: plain stores then, where a memset() call per row took
 * about 0.7% of imagedec's time on the benchmark corpus (perf; see
 * docs/benchmarks/input-stage.md). */
static void
zero_row_padding (guint8 *p, int stride, gsize pad, int rows)
{
  int y;

  for (y = 0; y < rows; y++, p += stride) {
    switch (pad) {
      case 3:
        p[2] = 0;
        /* fall through */
      case 2:
        p[1] = 0;
        /* fall through */
      case 1:
        p[0] = 0;
        break;
      default:
        memset (p, 0, pad);
        break;
    }
  }
}

gboolean
gst_train_jpeg_read_header (const guint8 *data, gsize size,
    guint min_short_side, gboolean fast_scales_only, GstTrainJpegHeader *header,
    gchar **error)
{
  /* A tables-only stream passes tjDecompressHeader3() without a size. */
  int width = 0, height = 0, subsamp, colorspace, ret;
  tjhandle handle;

  if (size == 0) {
    *error = g_strdup ("the buffer is empty");
    return FALSE;
  }
  if (size > G_MAXULONG) {
    *error = g_strdup ("not a decodable JPEG (larger than a long)");
    return FALSE;
  }
  if ((handle = tjInitDecompress ()) == NULL) {
    *error = g_strdup_printf (
        "could not create a decoder (%s)", tjGetErrorStr2 (NULL));
    return FALSE;
  }
  ret = tjDecompressHeader3 (
      handle, data, size, &width, &height, &subsamp, &colorspace);
  if (ret != 0)
    *error =
        g_strdup_printf ("not a decodable JPEG (%s)", tjGetErrorStr2 (handle));
  tjDestroy (handle);
  if (ret != 0)
    return FALSE;
  if (width <= 0 || height <= 0
      || (guint64)width * (guint64)height > MAX_PIXELS) {
    *error = g_strdup_printf ("implausible image size %dx%d", width, height);
    return FALSE;
  }

  header->width = width;
  header->height = height;
  header->colorspace = colorspace;
  header->scale = pick_scale (width, height, min_short_side, fast_scales_only);
  header->out_width = TJSCALED (width, header->scale);
  header->out_height = TJSCALED (height, header->scale);
  return TRUE;
}

gboolean
gst_train_jpeg_decode (const guint8 *data, gsize size,
    const GstTrainJpegHeader *header, gboolean gray, guint8 *out, int stride,
    gchar **error)
{
  int out_width = header->out_width, out_height = header->out_height;
  gsize row_bytes = (gsize)out_width * (gray ? 1 : 3);
  tjhandle handle = tjInitDecompress ();
  int ret;

  if (handle == NULL) {
    *error = g_strdup_printf (
        "could not create a decoder (%s)", tjGetErrorStr2 (NULL));
    return FALSE;
  }

  if (header->colorspace == TJCS_CMYK || header->colorspace == TJCS_YCCK) {
    /* TurboJPEG does not convert CMYK itself: decode the inks, then apply
     * libjpeg-turbo's rule. */
    guint8 *cmyk = g_malloc ((gsize)out_width * out_height * 4);

    ret = tjDecompress2 (handle, data, size, cmyk, out_width, out_width * 4,
        out_height, TJPF_CMYK, TJFLAG_STOPONWARNING);
    if (ret == 0 && !gray) {
      cmyk_to_rgb (cmyk, out, out_width, out_height, stride);
    } else if (ret == 0) {
      guint8 *rgb = g_malloc ((gsize)out_width * out_height * 3);

      cmyk_to_rgb (cmyk, rgb, out_width, out_height, out_width * 3);
      rgb_to_gray (rgb, out_width * 3, out, stride, out_width, out_height);
      g_free (rgb);
    }
    g_free (cmyk);
  } else {
    ret = tjDecompress2 (handle, data, size, out, out_width, stride, out_height,
        gray ? TJPF_GRAY : TJPF_RGB, TJFLAG_STOPONWARNING);
  }
  if (ret != 0) {
    /* With TJFLAG_STOPONWARNING a truncated or damaged file stops here
     * instead of coming out half grey. */
    *error =
        g_strdup_printf ("corrupt JPEG data (%s)", tjGetErrorStr2 (handle));
    tjDestroy (handle);
    return FALSE;
  }
  tjDestroy (handle);
  /* Recycled memory would carry an older image in the bytes that pad each
   * row to its stride: equal images should be equal buffers. */
  if ((gsize)stride > row_bytes)
    zero_row_padding (out + row_bytes, stride, stride - row_bytes, out_height);
  return TRUE;
}

gboolean
gst_train_jpeg_region_supported (
    const GstTrainJpegHeader *header, gboolean gray)
{
  return !gray && header->colorspace != TJCS_CMYK
      && header->colorspace != TJCS_YCCK;
}

/* Columns decoded on each side of a region beyond what it needs. Chroma
 * upsampling blends each pixel with its neighbours' samples, and
 * libjpeg-turbo treats the edges of a cropped decode as image edges: the
 * outermost column of a crop differs from a full decode (the test
 * test_region_decode_matches_full_decode holds the margin). Rows need none:
 * jpeg_skip_scanlines() keeps the rows that upsampling reads. */
#define REGION_MARGIN 8

/* Rows read per jpeg_read_scanlines() call: more than libjpeg-turbo makes
 * at once (at most 4 with DCT scaling). */
#define REGION_ROWS 16

/* libjpeg's error manager, jumping back on errors and, as TurboJPEG's
 * TJFLAG_STOPONWARNING, on warnings (corrupt data). */
typedef struct
{
  struct jpeg_error_mgr pub;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
} RegionError;

static void
region_error_exit (j_common_ptr cinfo)
{
  RegionError *err = (RegionError *)cinfo->err;

  cinfo->err->format_message (cinfo, err->message);
  longjmp (err->jump, 1);
}

static void
region_emit_message (j_common_ptr cinfo, int level)
{
  if (level < 0)
    region_error_exit (cinfo);
}

gboolean
gst_train_jpeg_decode_region (const guint8 *data, gsize size,
    const GstTrainJpegHeader *header, int left, int top, int width, int height,
    gboolean read_all, guint8 *out, int stride, gchar **error)
{
  struct jpeg_decompress_struct cinfo;
  RegionError err;
  gsize row_bytes = (gsize)width * 3;
  JDIMENSION x, w, rest;
  guint8 *volatile line = NULL;
  int y;

  g_return_val_if_fail (left >= 0 && top >= 0 && width > 0 && height > 0
          && width <= header->out_width - left
          && height <= header->out_height - top,
      FALSE);

  cinfo.err = jpeg_std_error (&err.pub);
  err.pub.error_exit = region_error_exit;
  err.pub.emit_message = region_emit_message;
  jpeg_create_decompress (&cinfo);
  if (setjmp (err.jump)) {
    *error = g_strdup_printf ("corrupt JPEG data (%s)", err.message);
    jpeg_destroy_decompress (&cinfo);
    g_free (line);
    return FALSE;
  }
  jpeg_mem_src (&cinfo, data, size);
  jpeg_read_header (&cinfo, TRUE);
  /* What tjDecompress2() sets for TJPF_RGB without flags. */
  cinfo.scale_num = header->scale.num;
  cinfo.scale_denom = header->scale.denom;
  cinfo.out_color_space = JCS_RGB;
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = TRUE;
  jpeg_start_decompress (&cinfo);
  if ((int)cinfo.output_width != header->out_width
      || (int)cinfo.output_height != header->out_height
      || cinfo.output_components != 3) {
    g_snprintf (err.message, sizeof (err.message),
        "decodes to %ux%u with %d components, its header said %dx%d RGB",
        cinfo.output_width, cinfo.output_height, cinfo.output_components,
        header->out_width, header->out_height);
    longjmp (err.jump, 1);
  }

  /* libjpeg-turbo moves x left to an iMCU boundary, keeping x + w. */
  x = MAX (left - REGION_MARGIN, 0);
  w = MIN (left + width + REGION_MARGIN, header->out_width) - x;
  if ((int)w < header->out_width)
    jpeg_crop_scanline (&cinfo, &x, &w);
  if (top > 0 && jpeg_skip_scanlines (&cinfo, top) != (JDIMENSION)top) {
    g_snprintf (err.message, sizeof (err.message), "no row %d", top);
    longjmp (err.jump, 1);
  }
  /* Rows go through a few rows of scratch: libjpeg-turbo writes several
   * rows per call when it may (one row per call costs it a copy of its
   * own), and each row's wanted part is copied out. */
  line = g_malloc ((gsize)w * 3 * REGION_ROWS);
  for (y = 0; y < height;) {
    JSAMPROW rows[REGION_ROWS];
    int i, n = MIN (height - y, REGION_ROWS), got;

    for (i = 0; i < n; i++)
      rows[i] = line + (gsize)i * w * 3;
    got = (int)jpeg_read_scanlines (&cinfo, rows, n);
    if (got <= 0) {
      g_snprintf (err.message, sizeof (err.message), "no row %d", top + y);
      longjmp (err.jump, 1);
    }
    for (i = 0; i < got; i++, y++)
      memcpy (out + (gsize)y * stride, rows[i] + (gsize)(left - (int)x) * 3,
          row_bytes);
  }
  /* With @read_all the rows below are read too, entropy-decoded only: a
   * file damaged or cut anywhere then fails here as its whole decode does.
   * (Skipping to the very end would read nothing: libjpeg-turbo then just
   * marks the image done. The last row is read as a row.) */
  rest = cinfo.output_height - cinfo.output_scanline;
  if (!read_all) {
    jpeg_abort_decompress (&cinfo);
    goto done;
  }
  if (rest > 1 && jpeg_skip_scanlines (&cinfo, rest - 1) != rest - 1) {
    g_snprintf (
        err.message, sizeof (err.message), "no row %u", cinfo.output_scanline);
    longjmp (err.jump, 1);
  }
  if (rest > 0) {
    JSAMPROW row = line;

    if (jpeg_read_scanlines (&cinfo, &row, 1) != 1) {
      g_snprintf (err.message, sizeof (err.message), "no row %u",
          cinfo.output_scanline);
      longjmp (err.jump, 1);
    }
  }
  jpeg_finish_decompress (&cinfo);
done:
  jpeg_destroy_decompress (&cinfo);
  g_free (line);
  if ((gsize)stride > row_bytes)
    zero_row_padding (out + row_bytes, stride, stride - row_bytes, height);
  return TRUE;
}
