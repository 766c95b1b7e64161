/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* jpeg-decode.h: imagedec's decoding core, JPEG bytes to RGB or GRAY8 rows.
 *
 * GLib and libjpeg-turbo only, with no GstBuffer in sight, so that the
 * element and the fuzzer (tests/fuzz/fuzz-jpeg.c) run the same code on the
 * same bytes: the element maps its buffers and calls these two in turn.
 */
#ifndef __GST_TRAIN_JPEG_DECODE_H__
#define __GST_TRAIN_JPEG_DECODE_H__

#include <glib.h>
#include <turbojpeg.h>

G_BEGIN_DECLS

/* What a JPEG header says, and the size it decodes to. */
typedef struct
{
  int width;
  int height;
  int colorspace; /* TJCS_* */
  tjscalingfactor scale;
  int out_width;
  int out_height;
} GstTrainJpegHeader;

/* Each image is read with a TurboJPEG or libjpeg decoder of its own (one
 * costs well under a microsecond): a reused decoder keeps the tables of
 * the images before, as libjpeg does for abbreviated streams, so a corrupt
 * file that lacks its quantization table would decode with another
 * image's tables, depending on which thread took it, instead of failing
 * (fuzz-jpeg found it through the region decode, which disagreed). */

/* Reads the header of @data, refuses an empty buffer and an
 * implausible size, and picks the smallest scale (a power of two when
 * @fast_scales_only) that keeps the short side at @min_short_side pixels or
 * more (0: full size). FALSE, with the reason in *@error, when it does not
 * decode. */
gboolean gst_train_jpeg_read_header (const guint8 *data, gsize size,
    guint min_short_side, gboolean fast_scales_only, GstTrainJpegHeader *header,
    gchar **error);

/* Decodes @data as @header says into @out: @header->out_height rows of
 * @stride bytes, RGB or (@gray) GRAY8, the bytes after each row zeroed.
 * FALSE, with the reason in *@error, on corrupt or truncated data. */
gboolean gst_train_jpeg_decode (const guint8 *data, gsize size,
    const GstTrainJpegHeader *header, gboolean gray, guint8 *out, int stride,
    gchar **error);

/* Whether gst_train_jpeg_decode_region() can decode @header's image for
 * this output: RGB of a YCbCr, RGB or grayscale JPEG (not CMYK/YCCK, not
 * GRAY8 output). */
gboolean gst_train_jpeg_region_supported (
    const GstTrainJpegHeader *header, gboolean gray);

/* Decodes only the @width x @height rectangle at (@left, @top) of the image
 * as @header scales it, into @out (@height rows of @stride bytes, RGB, the
 * bytes after each row zeroed): the same pixels as gst_train_jpeg_decode()
 * gives there, for less work. libjpeg-turbo skips the inverse DCT, the
 * upsampling and the colour conversion of every pixel outside the
 * rectangle. With @read_all, the rest of the entropy-coded data is read
 * too, so that a file damaged or cut anywhere fails (FALSE, with the reason
 * in *@error) exactly when gst_train_jpeg_decode() fails on it; without, it
 * stops after the rectangle's last row (the data before it is read), for
 * files already known to decode. */
gboolean gst_train_jpeg_decode_region (const guint8 *data, gsize size,
    const GstTrainJpegHeader *header, int left, int top, int width, int height,
    gboolean read_all, guint8 *out, int stride, gchar **error);

G_END_DECLS

#endif /* __GST_TRAIN_JPEG_DECODE_H__ */
