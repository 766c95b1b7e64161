/* fuzz-jpeg.c: imagedec's decoding core (elements/jpeg-decode.c) on
 * arbitrary bytes, handled as the element handles a sample: read the
 * header, pick the scale, decode into rows of the element's stride, and
 * replace the TurboJPEG handle after a failure.
 *
 * The input is the JPEG file itself. The decode settings come from its
 * length, so that mutations that add or drop bytes try them all: RGB or
 * GRAY8 output, power-of-two or any scale, and a min-short-side of 0, 1, 16
 * or 56 pixels.
 */
#include "fuzz-scratch.h"
#include "jpeg-decode.h"

/* The element takes up to 2^28 pixels; decoding that many costs seconds,
 * which would slow the search without reaching other code. */
#define MAX_FUZZ_OUTPUT_PIXELS (1 << 22)

static tjhandle handle;

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

  if (handle == NULL)
    handle = tjInitDecompress ();
  FUZZ_CHECK (handle != NULL, "tjInitDecompress failed");

  ok = gst_train_jpeg_read_header (
      handle, data, size, min_short_side, fast_scales_only, &header, &error);
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
        handle, data, size, &header, gray, pixels, stride, &error);
    g_free (pixels);
  }
  if (!ok) {
    FUZZ_CHECK (
        error != NULL && error[0] != '\0', "a failure without a reason");
    g_free (error);
    /* As the element does: a handle that failed is not used again. */
    tjDestroy (handle);
    handle = NULL;
  }
  return 0;
}
