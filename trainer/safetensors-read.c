/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* safetensors-read.c: the safetensors reader of safetensors.h: a
 * read-only mapping whose JSON header is checked (json-parse.h accepts only
 * what the format needs) before any pointer into it is handed out. */
#include "json-parse.h"
#include "safetensors-private.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct GtStFile
{
  void *map;
  size_t map_size;
  const unsigned char *data;
  uint64_t data_size;
  GtStTensor *tensors; /* header order */
  int num_tensors;
  const GtStTensor **by_name;  /* sorted, for gt_st_find */
  GtStMetadataEntry *metadata; /* sorted by key */
  int num_metadata;
};

static int
parse_dtype (GtJsonParser *ps, GtStTensor *tensor)
{
  char *name;
  int i;

  if (gt_json_peek (ps) != '"')
    return gt_json_fail (
        ps, "tensor \"%.80s\": dtype is not a string", tensor->name);
  if (gt_json_parse_string (ps, &name) < 0)
    return -1;
  for (i = 0; gt_st_dtype_name ((GtStDtype)i) != NULL; i++) {
    if (strcmp (name, gt_st_dtype_name ((GtStDtype)i)) == 0) {
      tensor->dtype = (GtStDtype)i;
      free (name);
      return 0;
    }
  }
  gt_json_fail (
      ps, "tensor \"%.80s\": unknown dtype \"%.16s\"", tensor->name, name);
  free (name);
  return -1;
}

/* Checks what needs the whole entry: shape against dtype and offsets, and
 * offsets against the data section. */
static int
check_tensor (GtJsonParser *ps, const GtStTensor *tensor, uint64_t data_size)
{
  uint64_t numel = 1, dim, size = gt_st_dtype_size (tensor->dtype);
  int i;

  if (tensor->ndim > GT_ST_MAX_DIMS)
    return gt_json_fail (ps,
        "tensor \"%.80s\": shape has %d dimensions, more "
        "than %d",
        tensor->name, tensor->ndim, GT_ST_MAX_DIMS);
  for (i = 0; i < tensor->ndim; i++) {
    if (tensor->shape[i] < 0)
      return gt_json_fail (ps, "tensor \"%.80s\": negative dimension %" PRId64,
          tensor->name, tensor->shape[i]);
    dim = (uint64_t)tensor->shape[i];
    if (dim != 0 && numel > UINT64_MAX / dim)
      return gt_json_fail (
          ps, "tensor \"%.80s\": element count overflows", tensor->name);
    numel *= dim;
  }
  if (numel > UINT64_MAX / size)
    return gt_json_fail (
        ps, "tensor \"%.80s\": byte size overflows", tensor->name);
  if (tensor->begin > tensor->end)
    return gt_json_fail (ps,
        "tensor \"%.80s\": data_offsets begin %" PRIu64
        " is after end %" PRIu64,
        tensor->name, tensor->begin, tensor->end);
  if (tensor->end > data_size)
    return gt_json_fail (ps,
        "tensor \"%.80s\": data_offsets end %" PRIu64
        " is past the end of the %" PRIu64 "-byte data section",
        tensor->name, tensor->end, data_size);
  if (tensor->end - tensor->begin != numel * size)
    return gt_json_fail (ps,
        "tensor \"%.80s\": data_offsets span %" PRIu64
        " bytes but dtype and shape need %" PRIu64,
        tensor->name, tensor->end - tensor->begin, numel * size);
  return 0;
}

static int
parse_tensor (GtJsonParser *ps, GtStTensor *tensor, uint64_t data_size)
{
  bool first = true, have_dtype = false, have_shape = false;
  bool have_offsets = false;
  int64_t offsets[2] = { 0, 0 };
  int more, count, rc;
  char *field;

  if (gt_json_peek (ps) != '{')
    return gt_json_fail (
        ps, "tensor \"%.80s\": entry is not an object", tensor->name);
  ps->pos++;
  while ((more = gt_json_next_item (ps, '}', &first)) == 1) {
    if (gt_json_parse_key (ps, &field) < 0)
      return -1;
    if (strcmp (field, "dtype") == 0 && !have_dtype) {
      have_dtype = true;
      rc = parse_dtype (ps, tensor);
    } else if (strcmp (field, "shape") == 0 && !have_shape) {
      have_shape = true;
      rc = gt_json_parse_int_array (
          ps, tensor->shape, GT_ST_MAX_DIMS, &tensor->ndim);
    } else if (strcmp (field, "data_offsets") == 0 && !have_offsets) {
      have_offsets = true;
      rc = gt_json_parse_int_array (ps, offsets, 2, &count);
      if (rc == 0 && count != 2)
        rc = gt_json_fail (ps,
            "tensor \"%.80s\": data_offsets has %d "
            "entries, not two",
            tensor->name, count);
      else if (rc == 0 && (offsets[0] < 0 || offsets[1] < 0))
        rc = gt_json_fail (
            ps, "tensor \"%.80s\": negative data_offsets", tensor->name);
      tensor->begin = (uint64_t)offsets[0];
      tensor->end = (uint64_t)offsets[1];
    } else if (strcmp (field, "dtype") == 0 || strcmp (field, "shape") == 0
        || strcmp (field, "data_offsets") == 0) {
      rc = gt_json_fail (
          ps, "tensor \"%.80s\": duplicate \"%s\" field", tensor->name, field);
    } else {
      rc = gt_json_skip_value (ps);
    }
    free (field);
    if (rc < 0)
      return -1;
  }
  if (more < 0)
    return -1;
  if (!have_dtype || !have_shape || !have_offsets)
    return gt_json_fail (ps, "tensor \"%.80s\": missing \"%s\" field",
        tensor->name,
        !have_dtype       ? "dtype"
            : !have_shape ? "shape"
                          : "data_offsets");
  return check_tensor (ps, tensor, data_size);
}

static int
parse_metadata (GtJsonParser *ps, GtStFile *file)
{
  bool first = true;
  int more, capacity = 0;
  char *key, *value;
  GtStMetadataEntry *larger;

  if (gt_json_expect (ps, '{', "expected an object for __metadata__") < 0)
    return -1;
  while ((more = gt_json_next_item (ps, '}', &first)) == 1) {
    if (gt_json_parse_key (ps, &key) < 0)
      return -1;
    if (gt_json_peek (ps) != '"' || gt_json_parse_string (ps, &value) < 0) {
      gt_json_fail (ps, "metadata value for \"%.80s\" is not a string", key);
      free (key);
      return -1;
    }
    larger = gt_st_grow (file->metadata, file->num_metadata, &capacity,
        sizeof (GtStMetadataEntry));
    if (larger == NULL) {
      free (key);
      free (value);
      return gt_json_fail (ps, "out of memory");
    }
    file->metadata = larger;
    file->metadata[file->num_metadata++] = (GtStMetadataEntry){ key, value };
  }
  return more;
}

static int
parse_header (GtJsonParser *ps, GtStFile *file)
{
  bool first = true, have_metadata = false;
  int more, capacity = 0;
  GtStTensor *tensor;
  char *key;

  if (gt_json_expect (ps, '{', "expected '{' at the start of the header") < 0)
    return -1;
  while ((more = gt_json_next_item (ps, '}', &first)) == 1) {
    if (gt_json_parse_key (ps, &key) < 0)
      return -1;
    if (strcmp (key, "__metadata__") == 0) {
      free (key);
      if (have_metadata)
        return gt_json_fail (ps, "duplicate __metadata__");
      have_metadata = true;
      if (parse_metadata (ps, file) < 0)
        return -1;
      continue;
    }
    tensor = gt_st_grow (
        file->tensors, file->num_tensors, &capacity, sizeof (GtStTensor));
    if (tensor == NULL) {
      free (key);
      return gt_json_fail (ps, "out of memory");
    }
    file->tensors = tensor;
    tensor = &file->tensors[file->num_tensors++];
    memset (tensor, 0, sizeof (*tensor));
    tensor->name = key;
    if (parse_tensor (ps, tensor, file->data_size) < 0)
      return -1;
  }
  if (more < 0)
    return -1;
  if (gt_json_peek (ps) != '\0' || ps->pos != ps->end)
    return gt_json_syntax_error (ps, "unexpected text after the header object");
  return 0;
}

static int
compare_tensor_names (const void *a, const void *b)
{
  return strcmp ((*(const GtStTensor *const *)a)->name,
      (*(const GtStTensor *const *)b)->name);
}

static int
compare_tensor_ranges (const void *a, const void *b)
{
  const GtStTensor *x = *(const GtStTensor *const *)a;
  const GtStTensor *y = *(const GtStTensor *const *)b;

  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

static int
compare_metadata_keys (const void *a, const void *b)
{
  return strcmp (
      ((const GtStMetadataEntry *)a)->key, ((const GtStMetadataEntry *)b)->key);
}

/* Sorting makes the duplicate and overlap checks O(n log n), which matters
 * for a hostile header with millions of entries. */
static int
check_layout (GtJsonParser *ps, GtStFile *file)
{
  size_t n = (size_t)file->num_tensors;
  const GtStTensor **by_range;
  size_t i;
  int rc = 0;

  file->by_name = malloc ((n + 1) * sizeof (*file->by_name));
  by_range = malloc ((n + 1) * sizeof (*by_range));
  if (file->by_name == NULL || by_range == NULL) {
    free (by_range);
    return gt_json_fail (ps, "out of memory");
  }
  for (i = 0; i < n; i++)
    file->by_name[i] = by_range[i] = &file->tensors[i];
  qsort (file->by_name, n, sizeof (*file->by_name), compare_tensor_names);
  qsort (by_range, n, sizeof (*by_range), compare_tensor_ranges);
  for (i = 1; i < n && rc == 0; i++) {
    if (strcmp (file->by_name[i - 1]->name, file->by_name[i]->name) == 0)
      rc = gt_json_fail (
          ps, "duplicate tensor name \"%.80s\"", file->by_name[i]->name);
    else if (by_range[i]->begin < by_range[i - 1]->end)
      rc = gt_json_fail (ps,
          "tensors \"%.80s\" and \"%.80s\" overlap in the "
          "data section",
          by_range[i - 1]->name, by_range[i]->name);
  }
  free (by_range);
  if (file->metadata != NULL)
    qsort (file->metadata, (size_t)file->num_metadata,
        sizeof (GtStMetadataEntry), compare_metadata_keys);
  for (i = 1; i < (size_t)file->num_metadata && rc == 0; i++)
    if (strcmp (file->metadata[i - 1].key, file->metadata[i].key) == 0)
      rc = gt_json_fail (
          ps, "duplicate metadata key \"%.80s\"", file->metadata[i].key);
  return rc;
}

/* Checks the @size bytes at @bytes as a whole safetensors file and fills
 * @file from them: both gt_st_open and gt_st_open_memory end here. */
static int
parse_file (
    GtJsonParser *ps, GtStFile *file, const unsigned char *bytes, size_t size)
{
  uint64_t header_size = 0;
  size_t bad;
  int i;

  if (size < 8)
    return gt_json_fail (ps, "file is shorter than the 8-byte header size");
  for (i = 7; i >= 0; i--)
    header_size = (header_size << 8) | bytes[i];
  if (header_size > MAX_HEADER_SIZE)
    return gt_json_fail (ps,
        "header size %" PRIu64 " is over the %u-byte limit", header_size,
        MAX_HEADER_SIZE);
  if (header_size > size - 8)
    return gt_json_fail (ps,
        "header size %" PRIu64 " runs past the end of the "
        "%zu-byte file",
        header_size, size);
  bad = gt_utf8_find_invalid (bytes + 8, (size_t)header_size);
  if (bad < header_size)
    return gt_json_fail (ps, "header is not valid UTF-8 at byte %zu", bad);
  file->data = bytes + 8 + header_size;
  file->data_size = size - 8 - header_size;
  ps->start = ps->pos = (const char *)bytes + 8;
  ps->end = ps->start + header_size;
  ps->depth = 2;
  if (parse_header (ps, file) < 0)
    return -1;
  return check_layout (ps, file);
}

GtStFile *
gt_st_open (const char *path, char *why, size_t why_size)
{
  GtJsonParser ps = { 0 };
  GtStFile *file;
  struct stat st;
  int fd;

  if (path == NULL) {
    gt_st_report (why, why_size, "no path given");
    return NULL;
  }
  file = calloc (1, sizeof (*file));
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (file == NULL || fd < 0 || fstat (fd, &st) < 0) {
    gt_json_fail (&ps, "cannot open: %s", strerror (errno));
    goto fail;
  }
  if (!S_ISREG (st.st_mode) || st.st_size < 8
      || (uint64_t)st.st_size != (uint64_t)(size_t)st.st_size) {
    gt_json_fail (&ps, "%s",
        !S_ISREG (st.st_mode) ? "not a regular file"
            : st.st_size < 8  ? "file is shorter than the 8-byte header size"
                              : "file is too large to map");
    goto fail;
  }
  /* A mapping rather than a copy: checkpoints can be gigabytes, and the
   * writer replaces files by rename, so a mapped file never shrinks. */
  file->map = mmap (NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (file->map == MAP_FAILED) {
    file->map = NULL;
    gt_json_fail (&ps, "cannot map: %s", strerror (errno));
    goto fail;
  }
  file->map_size = (size_t)st.st_size;
  close (fd);
  fd = -1;

  if (parse_file (&ps, file, file->map, file->map_size) < 0)
    goto fail;
  return file;

fail:
  if (fd >= 0)
    close (fd);
  gt_st_report (why, why_size, "%s: %s", path, ps.message);
  gt_st_close (file);
  return NULL;
}

GtStFile *
gt_st_open_memory (const void *bytes, size_t size, char *why, size_t why_size)
{
  GtJsonParser ps = { 0 };
  GtStFile *file;

  if (bytes == NULL && size > 0) {
    gt_st_report (why, why_size, "(memory): no bytes given");
    return NULL;
  }
  file = calloc (1, sizeof (*file));
  if (file == NULL) {
    gt_st_report (why, why_size, "(memory): out of memory");
    return NULL;
  }
  if (parse_file (&ps, file, bytes, size) < 0) {
    gt_st_report (why, why_size, "(memory): %s", ps.message);
    gt_st_close (file);
    return NULL;
  }
  return file;
}

void
gt_st_close (GtStFile *file)
{
  int i;

  if (file == NULL)
    return;
  for (i = 0; i < file->num_tensors; i++)
    free ((char *)file->tensors[i].name);
  for (i = 0; i < file->num_metadata; i++) {
    free (file->metadata[i].key);
    free (file->metadata[i].value);
  }
  free (file->tensors);
  free (file->by_name);
  free (file->metadata);
  if (file->map != NULL)
    munmap (file->map, file->map_size);
  free (file);
}

int
gt_st_num_tensors (const GtStFile *file)
{
  return file != NULL ? file->num_tensors : 0;
}

const GtStTensor *
gt_st_tensor (const GtStFile *file, int index)
{
  if (file == NULL || index < 0 || index >= file->num_tensors)
    return NULL;
  return &file->tensors[index];
}

const GtStTensor *
gt_st_find (const GtStFile *file, const char *name)
{
  GtStTensor key = { .name = name };
  const GtStTensor *key_pointer = &key;
  const GtStTensor **found;

  if (file == NULL || name == NULL || file->num_tensors == 0)
    return NULL;
  found = bsearch (&key_pointer, file->by_name, (size_t)file->num_tensors,
      sizeof (*file->by_name), compare_tensor_names);
  return found != NULL ? *found : NULL;
}

const void *
gt_st_data (const GtStFile *file, const GtStTensor *tensor)
{
  if (file == NULL || tensor == NULL)
    return NULL;
  return file->data + tensor->begin;
}

uint64_t
gt_st_numel (const GtStTensor *tensor)
{
  uint64_t numel = 1;
  int i;

  for (i = 0; i < tensor->ndim; i++)
    numel *= (uint64_t)tensor->shape[i];
  return numel;
}

const char *
gt_st_metadata (const GtStFile *file, const char *key)
{
  GtStMetadataEntry wanted = { (char *)key, NULL };
  const GtStMetadataEntry *found;

  if (file == NULL || key == NULL || file->num_metadata == 0)
    return NULL;
  found = bsearch (&wanted, file->metadata, (size_t)file->num_metadata,
      sizeof (GtStMetadataEntry), compare_metadata_keys);
  return found != NULL ? found->value : NULL;
}

int
gt_st_num_metadata (const GtStFile *file)
{
  return file != NULL ? file->num_metadata : 0;
}

const char *
gt_st_metadata_key (const GtStFile *file, int index)
{
  if (file == NULL || index < 0 || index >= file->num_metadata)
    return NULL;
  return file->metadata[index].key;
}
