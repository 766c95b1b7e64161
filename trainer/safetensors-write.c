/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* safetensors-write.c: the atomic safetensors writer of safetensors.h. */
#include "json-parse.h"
#include "safetensors-private.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct
{
  GtStTensor info; /* owns info.name; begin and end as it will be written */
  const void *data;
} PendingTensor;

struct GtStWriter
{
  PendingTensor *tensors;
  int num_tensors, tensor_capacity;
  GtStMetadataEntry *metadata;
  int num_metadata, metadata_capacity;
};

static bool
is_utf8 (const char *s)
{
  size_t n = strlen (s);

  return gt_utf8_find_invalid ((const unsigned char *)s, n) == n;
}

GtStWriter *
gt_st_writer_new (void)
{
  return calloc (1, sizeof (GtStWriter));
}

void
gt_st_writer_free (GtStWriter *writer)
{
  int i;

  if (writer == NULL)
    return;
  for (i = 0; i < writer->num_tensors; i++)
    free ((char *)writer->tensors[i].info.name);
  for (i = 0; i < writer->num_metadata; i++) {
    free (writer->metadata[i].key);
    free (writer->metadata[i].value);
  }
  free (writer->tensors);
  free (writer->metadata);
  free (writer);
}

int
gt_st_writer_add (GtStWriter *writer, const char *name, GtStDtype dtype,
    int ndim, const int64_t *shape, const void *data)
{
  uint64_t numel = 1, size = gt_st_dtype_size (dtype), begin = 0;
  PendingTensor *tensors, *tensor;
  int i;

  if (writer == NULL || name == NULL || size == 0 || ndim < 0
      || ndim > GT_ST_MAX_DIMS || (ndim > 0 && shape == NULL) || !is_utf8 (name)
      || strcmp (name, "__metadata__") == 0)
    return -1;
  for (i = 0; i < ndim; i++) {
    if (shape[i] < 0
        || (shape[i] != 0 && numel > UINT64_MAX / (uint64_t)shape[i]))
      return -1;
    numel *= (uint64_t)shape[i];
  }
  if (writer->num_tensors > 0)
    begin = writer->tensors[writer->num_tensors - 1].info.end;
  if (numel > (UINT64_MAX - begin) / size || (numel > 0 && data == NULL))
    return -1;
  for (i = 0; i < writer->num_tensors; i++)
    if (strcmp (writer->tensors[i].info.name, name) == 0)
      return -1;
  tensors = gt_st_grow (writer->tensors, writer->num_tensors,
      &writer->tensor_capacity, sizeof (PendingTensor));
  if (tensors == NULL)
    return -1;
  writer->tensors = tensors;
  tensor = &tensors[writer->num_tensors];
  memset (tensor, 0, sizeof (*tensor));
  if ((tensor->info.name = strdup (name)) == NULL)
    return -1;
  tensor->info.dtype = dtype;
  tensor->info.ndim = ndim;
  if (ndim > 0)
    memcpy (tensor->info.shape, shape, (size_t)ndim * sizeof (*shape));
  tensor->info.begin = begin;
  tensor->info.end = begin + numel * size;
  tensor->data = data;
  writer->num_tensors++;
  return 0;
}

int
gt_st_writer_set_metadata (
    GtStWriter *writer, const char *key, const char *value)
{
  GtStMetadataEntry *entries;
  char *copy;
  int i;

  if (writer == NULL || key == NULL || value == NULL || !is_utf8 (key)
      || !is_utf8 (value) || (copy = strdup (value)) == NULL)
    return -1;
  for (i = 0; i < writer->num_metadata; i++) {
    if (strcmp (writer->metadata[i].key, key) == 0) {
      free (writer->metadata[i].value);
      writer->metadata[i].value = copy;
      return 0;
    }
  }
  entries = gt_st_grow (writer->metadata, writer->num_metadata,
      &writer->metadata_capacity, sizeof (GtStMetadataEntry));
  if (entries != NULL)
    writer->metadata = entries;
  if (entries == NULL
      || (entries[writer->num_metadata].key = strdup (key)) == NULL) {
    free (copy);
    return -1;
  }
  entries[writer->num_metadata++].value = copy;
  return 0;
}

static void
put_json_string (FILE *out, const char *s)
{
  static const char escapes[] = "\"\\\b\f\n\r\t";
  const char *escape;

  fputc ('"', out);
  for (; *s != '\0'; s++) {
    if ((escape = strchr (escapes, *s)) != NULL)
      fprintf (out, "\\%c", "\"\\bfnrt"[escape - escapes]);
    else if ((unsigned char)*s < 0x20)
      fprintf (out, "\\u%04x", (unsigned)*s);
    else
      fputc (*s, out);
  }
  fputc ('"', out);
}

/* The JSON header, padded with spaces to a multiple of 8 bytes so that the
 * data section is 8-byte aligned in the file (as the reference writer does),
 * or NULL when out of memory. */
static char *
build_header (const GtStWriter *writer, size_t *length)
{
  char *text = NULL;
  FILE *out = open_memstream (&text, length);
  int i, d, failed;

  if (out == NULL)
    return NULL;
  fputc ('{', out);
  for (i = 0; i < writer->num_metadata; i++) {
    fputs (i == 0 ? "\"__metadata__\":{" : ",", out);
    put_json_string (out, writer->metadata[i].key);
    fputc (':', out);
    put_json_string (out, writer->metadata[i].value);
    if (i == writer->num_metadata - 1)
      fputc ('}', out);
  }
  for (i = 0; i < writer->num_tensors; i++) {
    const GtStTensor *tensor = &writer->tensors[i].info;

    if (i > 0 || writer->num_metadata > 0)
      fputc (',', out);
    put_json_string (out, tensor->name);
    fprintf (out, ":{\"dtype\":\"%s\",\"shape\":[",
        gt_st_dtype_name (tensor->dtype));
    for (d = 0; d < tensor->ndim; d++)
      fprintf (out, "%s%" PRId64, d > 0 ? "," : "", tensor->shape[d]);
    fprintf (out, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
        tensor->begin, tensor->end);
  }
  fputc ('}', out);
  while (ftell (out) > 0 && ftell (out) % 8 != 0)
    fputc (' ', out);
  failed = ferror (out);
  if (fclose (out) != 0 || failed) {
    free (text);
    return NULL;
  }
  return text;
}

/* Loops because write may store less than asked (signals, pipes, limits). */
static int
write_all (int fd, const void *data, uint64_t length)
{
  const char *p = data;
  ssize_t written;

  while (length > 0) {
    written = write (fd, p, length > (1u << 30) ? (1u << 30) : length);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      if (written == 0)
        errno = EIO;
      return -1;
    }
    p += written;
    length -= (uint64_t)written;
  }
  return 0;
}

/* Makes the rename durable; a file system that cannot sync directories
 * (EINVAL) has nothing more to do. */
static int
sync_directory_of (const char *path)
{
  const char *slash = strrchr (path, '/');
  char *directory;
  int fd, rc;

  if (slash == NULL)
    directory = strdup (".");
  else
    directory = strndup (path, slash == path ? 1 : (size_t)(slash - path));
  if (directory == NULL)
    return -1;
  fd = open (directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free (directory);
  if (fd < 0)
    return -1;
  rc = fsync (fd) < 0 && errno != EINVAL ? -1 : 0;
  if (close (fd) < 0)
    rc = -1;
  return rc;
}

int
gt_st_writer_write (
    GtStWriter *writer, const char *path, char *why, size_t why_size)
{
  static const char suffix[] = ".tmp-XXXXXX";
  const char *step = "cannot build the header";
  unsigned char size_field[8];
  char *header = NULL, *temp_path = NULL;
  size_t header_length = 0;
  bool created = false, renamed = false;
  int fd = -1, i, rc, saved_errno;

  if (writer == NULL || path == NULL) {
    gt_st_report (
        why, why_size, "%s: no writer or path", path ? path : "(null)");
    return -1;
  }
  errno = ENOMEM;
  header = build_header (writer, &header_length);
  temp_path = malloc (strlen (path) + sizeof (suffix));
  if (header == NULL || temp_path == NULL)
    goto fail;
  if (header_length > MAX_HEADER_SIZE) {
    errno = EFBIG;
    goto fail;
  }
  for (i = 0; i < 8; i++)
    size_field[i] = (unsigned char)((uint64_t)header_length >> (8 * i));
  strcpy (temp_path, path);
  strcat (temp_path, suffix);

  step = "cannot create a temporary file next to it";
  fd = mkstemp (temp_path);
  if (fd < 0)
    goto fail;
  created = true;
  /* mkstemp creates 0600; a checkpoint is shared like any other output. */
  step = "cannot write the temporary file";
  if (fchmod (fd, 0644) < 0 || write_all (fd, size_field, 8) < 0
      || write_all (fd, header, header_length) < 0)
    goto fail;
  for (i = 0; i < writer->num_tensors; i++)
    if (write_all (fd, writer->tensors[i].data,
            writer->tensors[i].info.end - writer->tensors[i].info.begin)
        < 0)
      goto fail;
  step = "cannot fsync the temporary file";
  if (fsync (fd) < 0)
    goto fail;
  step = "cannot close the temporary file";
  rc = close (fd);
  fd = -1; /* closed even when close reports an error */
  if (rc < 0)
    goto fail;
  step = "cannot rename the temporary file over it";
  if (rename (temp_path, path) < 0)
    goto fail;
  renamed = true;
  step = "replaced, but cannot fsync its directory";
  if (sync_directory_of (path) < 0)
    goto fail;
  free (header);
  free (temp_path);
  return 0;

fail:
  saved_errno = errno;
  if (fd >= 0)
    close (fd);
  if (created && !renamed)
    unlink (temp_path);
  gt_st_report (
      why, why_size, "%s: %s: %s", path, step, strerror (saved_errno));
  free (header);
  free (temp_path);
  return -1;
}
