/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-jpeg.c: imagedec's decoding core (elements/data/jpeg-decode.c) on
 * arbitrary bytes, handled as the element handles a sample: read the
 * header, pick the scale, decode into rows of the element's stride. Each
 * input decodes alone, as in the element (no decoder state carries over).
 *
 * The input is the JPEG file itself. The decode settings come from its
 * length, so that mutations that add or drop bytes try them all: RGB or
 * GRAY8 output, power-of-two or any scale, and a min-short-side of 0, 1, 16
 * or 56 pixels.
 *
 * When an RGB decode succeeds, a rectangle of the image (placed by the
 * length too) is decoded alone as well, as imagedec does for augment
 * (gst_train_jpeg_decode_region), and must give the same pixels.
 */
#include "fuzz-scratch.h"
#include "jpeg-decode.h"

#include <string.h>

/* The element takes up to 2^28 pixels; decoding that many costs seconds,
 * which would slow the search without reaching other code. */
#define MAX_FUZZ_OUTPUT_PIXELS (1 << 22)

/* Decodes a rectangle of the image alone and compares it with the same
 * pixels of the whole decode @full (rows of @stride bytes). */
static void
check_region (const uint8_t *data, size_t size,
    const GstTrainJpegHeader *header, const guint8 *full, int stride)
{
  int left = (int)((size * 7) % (size_t)header->out_width);
  int top = (int)((size * 13) % (size_t)header->out_height);
  int width = 1 + (int)((size * 5) % (size_t)(header->out_width - left));
  int height = 1 + (int)((size * 3) % (size_t)(header->out_height - top));
  int region_stride = (width * 3 + 3) & ~3, y;
  guint8 *region = g_malloc ((gsize)region_stride * height);
  gchar *error = NULL;

  /* The whole image decoded: so does every part of it. */
  FUZZ_CHECK (
      gst_train_jpeg_decode_region (data, size, header, left, top, width,
          height, (size >> 4) & 1, region, region_stride, &error),
      "a region of a decodable image does not decode");
  for (y = 0; y < height; y++)
    FUZZ_CHECK (memcmp (region + (gsize)y * region_stride,
                    full + (gsize)(top + y) * stride + (gsize)left * 3,
                    (gsize)width * 3)
            == 0,
        "a region decodes to other pixels than the whole image");
  g_free (region);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static const guint min_short_sides[] = { 0, 1, 16, 56 };
  gboolean gray = size & 1, fast_scales_only = (size >> 1) & 1;
  guint min_short_side = min_short_sides[(size >> 2) & 3];
  GstTrainJpegHeader header;
  gchar *error = NULL;
  guint8 *pixels;
  int stride;
  gboolean ok;

  ok = gst_train_jpeg_read_header (
      data, size, min_short_side, fast_scales_only, &header, &error);
  if (ok) {
    FUZZ_CHECK (error == NULL, "an error message on success");
    FUZZ_CHECK (header.width > 0 && header.height > 0, "empty image");
    FUZZ_CHECK (header.out_width > 0 && header.out_width <= header.width
            && header.out_height > 0 && header.out_height <= header.height,
        "scaled size outside 1 .. full size");
    FUZZ_CHECK ((header.scale.num == 1 && header.scale.denom == 1)
            || MIN (header.out_width, header.out_height) >= (int)min_short_side,
        "scaled below min-short-side");
    if ((guint64)header.out_width * header.out_height > MAX_FUZZ_OUTPUT_PIXELS)
      return 0;
    /* GstVideoInfo's stride for RGB and GRAY8: rows padded to 4 bytes. */
    stride = (header.out_width * (gray ? 1 : 3) + 3) & ~3;
    pixels = g_malloc ((gsize)stride * header.out_height);
    ok = gst_train_jpeg_decode (
        data, size, &header, gray, pixels, stride, &error);
    if (ok && gst_train_jpeg_region_supported (&header, gray))
      check_region (data, size, &header, pixels, stride);
    g_free (pixels);
  }
  if (!ok) {
    FUZZ_CHECK (
        error != NULL && error[0] != '\0', "a failure without a reason");
    g_free (error);
  }
  return 0;
}
