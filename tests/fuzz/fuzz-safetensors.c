/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-safetensors.c: the safetensors reader (trainer/safetensors-read.c) on
 * arbitrary bytes, through gt_st_open_memory, which runs the same checks
 * and JSON header parser as gt_st_open on a file.
 *
 * A file it accepts must keep every promise of safetensors.h: each tensor's
 * bytes inside the data section and as long as dtype and shape say, each
 * name found again by gt_st_find, each metadata key by gt_st_metadata.
 * Then it is written back with gt_st_writer and read again: the copy must
 * hold the same tensors, bytes and metadata (the writer's JSON escaping
 * against the reader's unescaping).
 */
#include "fuzz-scratch.h"
#include "safetensors.h"

#include <string.h>

/* Touches the first and last byte of @tensor's data so that
 * AddressSanitizer sees an offset outside the input. */
static guint8
touch (const GtStFile *file, const GtStTensor *tensor)
{
  const guint8 *bytes = gt_st_data (file, tensor);

  if (tensor->end == tensor->begin)
    return 0;
  return bytes[0] ^ bytes[tensor->end - tensor->begin - 1];
}

static void
check_contract (const GtStFile *file)
{
  int i, n = gt_st_num_tensors (file);
  volatile guint8 sink = 0;

  for (i = 0; i < n; i++) {
    const GtStTensor *tensor = gt_st_tensor (file, i);

    FUZZ_CHECK (tensor != NULL && tensor->name != NULL, "missing tensor");
    FUZZ_CHECK (gt_st_find (file, tensor->name) == tensor,
        "gt_st_find does not find a tensor by its name");
    FUZZ_CHECK (gt_st_dtype_name (tensor->dtype) != NULL, "unknown dtype");
    FUZZ_CHECK (tensor->ndim >= 0 && tensor->ndim <= GT_ST_MAX_DIMS,
        "too many dimensions");
    FUZZ_CHECK (tensor->begin <= tensor->end, "data_offsets reversed");
    FUZZ_CHECK (tensor->end - tensor->begin
            == gt_st_numel (tensor) * gt_st_dtype_size (tensor->dtype),
        "data_offsets do not match dtype and shape");
    sink ^= touch (file, tensor);
  }
  FUZZ_CHECK (gt_st_tensor (file, n) == NULL, "a tensor past the count");
  for (i = 0; i < gt_st_num_metadata (file); i++) {
    const char *key = gt_st_metadata_key (file, i);

    FUZZ_CHECK (key != NULL && gt_st_metadata (file, key) != NULL,
        "gt_st_metadata does not find a key it listed");
    FUZZ_CHECK (i == 0 || strcmp (gt_st_metadata_key (file, i - 1), key) < 0,
        "metadata keys out of order");
  }
  (void)sink;
}

/* Writes @file back out and checks that reading it again gives the same. */
static void
check_round_trip (const GtStFile *file)
{
  GtStWriter *writer = gt_st_writer_new ();
  gchar *path = fuzz_scratch_path ("copy.safetensors");
  char why[512];
  GtStFile *copy;
  int i;

  FUZZ_CHECK (writer != NULL, "gt_st_writer_new failed");
  for (i = 0; i < gt_st_num_tensors (file); i++) {
    const GtStTensor *t = gt_st_tensor (file, i);

    FUZZ_CHECK (gt_st_writer_add (writer, t->name, t->dtype, t->ndim, t->shape,
                    gt_st_data (file, t))
            == 0,
        "the writer refuses a tensor the reader accepted");
  }
  for (i = 0; i < gt_st_num_metadata (file); i++) {
    const char *key = gt_st_metadata_key (file, i);

    FUZZ_CHECK (
        gt_st_writer_set_metadata (writer, key, gt_st_metadata (file, key))
            == 0,
        "the writer refuses metadata the reader accepted");
  }
  FUZZ_CHECK (gt_st_writer_write (writer, path, why, sizeof (why)) == 0, why);
  gt_st_writer_free (writer);

  copy = gt_st_open (path, why, sizeof (why));
  FUZZ_CHECK (copy != NULL, why);
  FUZZ_CHECK (gt_st_num_tensors (copy) == gt_st_num_tensors (file),
      "the copy has another tensor count");
  for (i = 0; i < gt_st_num_tensors (file); i++) {
    const GtStTensor *t = gt_st_tensor (file, i);
    const GtStTensor *c = gt_st_find (copy, t->name);

    FUZZ_CHECK (c != NULL, "a tensor is missing from the copy");
    FUZZ_CHECK (c->dtype == t->dtype && c->ndim == t->ndim
            && memcmp (c->shape, t->shape, sizeof (t->shape[0]) * t->ndim) == 0,
        "a tensor changed dtype or shape in the copy");
    FUZZ_CHECK (c->end - c->begin == t->end - t->begin
            && memcmp (gt_st_data (copy, c), gt_st_data (file, t),
                   t->end - t->begin)
                == 0,
        "a tensor's bytes changed in the copy");
  }
  FUZZ_CHECK (gt_st_num_metadata (copy) == gt_st_num_metadata (file),
      "the copy has another metadata count");
  for (i = 0; i < gt_st_num_metadata (file); i++) {
    const char *key = gt_st_metadata_key (file, i);
    const char *value = gt_st_metadata (copy, key);

    FUZZ_CHECK (
        value != NULL && strcmp (value, gt_st_metadata (file, key)) == 0,
        "a metadata value changed in the copy");
  }
  gt_st_close (copy);
  g_free (path);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char why[512] = "";
  GtStFile *file = gt_st_open_memory (data, size, why, sizeof (why));

  if (file == NULL) {
    FUZZ_CHECK (why[0] != '\0', "a refusal without a reason");
    return 0;
  }
  check_contract (file);
  check_round_trip (file);
  gt_st_close (file);
  return 0;
}
