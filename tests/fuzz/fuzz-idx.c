/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-idx.c: gst-train-dataset's IDX reader
 * (pipelines/dataset-tool/idx-reader.c) on arbitrary bytes, written to a
 * scratch file and read as an image file and as a label file. The reader
 * sniffs the gzip magic itself, so gzip and plain inputs take the same
 * door.
 *
 * A file it accepts must hold exactly the bytes its header announces, and
 * memory follows the data: an input of a few kilobytes never fails for lack
 * of memory, whatever its header claims (libFuzzer's -malloc_limit_mb, or
 * replay.c's address-space limit, makes a large allocation fail).
 */
#include "fuzz-scratch.h"
#include "idx-reader.h"

#include <string.h>

static void
load (const char *path, size_t size, gboolean want_images)
{
  GError *error = NULL;
  IdxFile f;

  if (idx_load (&f, path, want_images, &error)) {
    guint64 payload = (guint64)f.count * f.rows * f.cols * f.channels;
    volatile guint8 last;

    FUZZ_CHECK (error == NULL, "an error on success");
    FUZZ_CHECK (f.count > 0 && payload > 0 && f.data != NULL, "no data");
    FUZZ_CHECK (want_images || (f.rows == 1 && f.cols == 1 && f.channels == 1),
        "labels with a shape");
    FUZZ_CHECK (f.channels == 1 || f.channels == 3, "bad channel count");
    /* AddressSanitizer sees a buffer shorter than the header says. */
    last = f.data[payload - 1];
    (void)last;
  } else {
    FUZZ_CHECK (error != NULL && error->message[0] != '\0',
        "a failure without a reason");
    FUZZ_CHECK (size > (1 << 20) || !strstr (error->message, "out of memory"),
        "out of memory on a small file: memory follows the header");
    g_error_free (error);
  }
  idx_file_clear (&f);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static gchar *path;

  if (path == NULL)
    path = fuzz_scratch_path ("input.idx");
  fuzz_write_file (path, data, size);
  load (path, size, TRUE);
  load (path, size, FALSE);
  return 0;
}
