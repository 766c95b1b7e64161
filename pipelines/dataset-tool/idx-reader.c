/* idx-reader.c: the IDX reader and --class-names parser of
 * gst-train-dataset, as in idx-reader.h.
 *
 * Copyright (C) gst-train contributors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "idx-reader.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#define IDX_TYPE_UBYTE 0x08

GQuark
dataset_error_quark (void)
{
  return g_quark_from_static_string ("gst-train-dataset-error-quark");
}

void
idx_file_clear (IdxFile *f)
{
  g_free (f->path);
  g_free (f->data);
  memset (f, 0, sizeof (*f));
}

static guint32
read_be32 (const guint8 *p)
{
  return ((guint32)p[0] << 24) | ((guint32)p[1] << 16) | ((guint32)p[2] << 8)
      | (guint32)p[3];
}

/* zlib's message without the "path: " it puts in front. */
static const char *
gz_message (gzFile gz, const char *path, int *errnum)
{
  const char *msg = gzerror (gz, errnum);
  gsize plen = strlen (path);

  if (msg && strncmp (msg, path, plen) == 0 && msg[plen] == ':'
      && msg[plen + 1] == ' ')
    msg += plen + 2;
  return msg;
}

/* Reads up to len bytes; returns the count read (short at end of file), or
 * -1 with error set on a read or decompression error. */
static gssize
gz_read_full (gzFile gz, const char *path, gboolean is_gzip, guint8 *buf,
    gsize len, GError **error)
{
  gsize done = 0;

  while (done < len) {
    gsize want = MIN (len - done, (gsize)1 << 30);
    int got = gzread (gz, buf + done, (unsigned)want);

    if (got < 0) {
      int errnum = 0;
      const char *msg = gz_message (gz, path, &errnum);

      if (errnum == Z_ERRNO)
        g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
            "%s: read error: %s", path, g_strerror (errno));
      else
        g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED, "%s: %s: %s",
            path, is_gzip ? "corrupt gzip data" : "read error", msg);
      return -1;
    }
    if (got == 0)
      break;
    done += (gsize)got;
  }
  return (gssize)done;
}

/* Reads up to @payload bytes into @f->data, which grows with what the file
 * holds rather than with what its header claims: a few bytes that announce
 * gigabytes are a truncated file, not an allocation of gigabytes. Returns
 * the count read (short at end of file), or -1 with error set. */
static gssize
read_payload (gzFile gz, IdxFile *f, gsize payload, GError **error)
{
  gsize done = 0, capacity = 0;

  while (done < payload) {
    gssize got;

    if (done == capacity) {
      guint8 *larger;

      capacity = MIN (payload, MAX (capacity * 2, (gsize)1 << 20));
      larger = g_try_realloc (f->data, capacity);
      if (!larger) {
        g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
            "%s: out of memory loading %" G_GSIZE_FORMAT " bytes", f->path,
            payload);
        return -1;
      }
      f->data = larger;
    }
    got = gz_read_full (
        gz, f->path, f->gzip, f->data + done, capacity - done, error);
    if (got < 0)
      return -1;
    done += (gsize)got;
    if (done < capacity)
      break;
  }
  return (gssize)done;
}

/* Explains a short read: a damaged gzip stream or a plain short file. */
static void
set_truncated_error (GError **error, gzFile gz, const IdxFile *f,
    const char *what, guint64 expected, guint64 got)
{
  int errnum = Z_OK;
  const char *msg = gz_message (gz, f->path, &errnum);

  g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
      "%s: file is truncated: %s needs %" G_GUINT64_FORMAT " bytes%s, "
      "only %" G_GUINT64_FORMAT " there%s%s",
      f->path, what, expected, f->gzip ? " (uncompressed)" : "", got,
      (f->gzip && errnum != Z_OK && msg && *msg) ? "; gzip: " : "",
      (f->gzip && errnum != Z_OK && msg && *msg) ? msg : "");
}

gboolean
idx_load (IdxFile *f, const char *path, gboolean want_images, GError **error)
{
  const char *kind = want_images ? "image" : "label";
  guint8 head[4];
  guint8 dims_raw[4 * 4];
  guint32 dims[4] = { 0, 0, 0, 0 };
  guint ndims;
  guint64 payload;
  guint64 header_len;
  gssize got;
  guint8 extra;
  gzFile gz;
  FILE *fp;
  size_t n;
  guint i;

  memset (f, 0, sizeof (*f));
  f->path = g_strdup (path);

  /* Sniff the gzip magic; only used to word the messages, gzread reads
   * plain files as they are. */
  fp = fopen (path, "rb");
  if (!fp) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: cannot open %s file: %s", path, kind, g_strerror (errno));
    return FALSE;
  }
  n = fread (head, 1, 2, fp);
  fclose (fp);
  f->gzip = (n == 2 && head[0] == 0x1f && head[1] == 0x8b);

  gz = gzopen (path, "rb");
  if (!gz) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: cannot open %s file: %s", path, kind,
        errno ? g_strerror (errno) : "out of memory");
    return FALSE;
  }
  gzbuffer (gz, 256 * 1024);

  got = gz_read_full (gz, path, f->gzip, head, 4, error);
  if (got < 0)
    goto fail;
  if (got < 4) {
    set_truncated_error (error, gz, f, "the IDX magic number", 4, (guint64)got);
    goto fail;
  }

  ndims = head[3];
  if (head[0] != 0 || head[1] != 0 || head[2] != IDX_TYPE_UBYTE
      || (want_images && ndims != 3 && ndims != 4)
      || (!want_images && ndims != 1)) {
    guint32 magic = read_be32 (head);
    const char *hint = "";

    if (want_images && magic == 0x00000801)
      hint = " (this looks like an IDX label file: are --images and "
             "--labels swapped?)";
    else if (!want_images && (magic == 0x00000803 || magic == 0x00000804))
      hint = " (this looks like an IDX image file: are --images and "
             "--labels swapped?)";
    else if (head[0] == 0 && head[1] == 0 && head[2] != IDX_TYPE_UBYTE
        && head[2] >= 0x09 && head[2] <= 0x0e)
      hint = " (only unsigned byte data, type 0x08, is supported)";
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: not an IDX %s file: magic number 0x%08x, expected %s%s", path,
        kind, magic,
        want_images ? "0x00000803 (uint8 images: count, rows, cols) or "
                      "0x00000804 (count, rows, cols, channels)"
                    : "0x00000801 (uint8 labels: count)",
        hint);
    goto fail;
  }

  got = gz_read_full (gz, path, f->gzip, dims_raw, 4 * ndims, error);
  if (got < 0)
    goto fail;
  if ((guint)got < 4 * ndims) {
    set_truncated_error (
        error, gz, f, "the IDX header", 4 + 4 * ndims, 4 + (guint64)got);
    goto fail;
  }
  for (i = 0; i < ndims; i++)
    dims[i] = read_be32 (dims_raw + 4 * i);
  header_len = 4 + 4 * (guint64)ndims;

  f->count = dims[0];
  if (want_images) {
    f->rows = dims[1];
    f->cols = dims[2];
    f->channels = ndims == 4 ? dims[3] : 1;
    if (f->rows == 0 || f->cols == 0 || f->rows > 65535 || f->cols > 65535) {
      g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
          "%s: bad image size %ux%u in the IDX header (rows and columns "
          "must be 1..65535)",
          path, f->rows, f->cols);
      goto fail;
    }
    if (f->channels != 1 && f->channels != 3) {
      g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
          "%s: images have %u channels in the IDX header; only 1 "
          "(grayscale) or 3 (RGB) are supported",
          path, f->channels);
      goto fail;
    }
  } else {
    f->rows = f->cols = f->channels = 1;
  }
  if (f->count == 0) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: the IDX header says the file holds no %ss", path, kind);
    goto fail;
  }

  payload = (guint64)f->count * f->rows * f->cols * f->channels;
  if (payload > G_MAXSIZE / 2) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: IDX data too large (%" G_GUINT64_FORMAT " bytes)", path, payload);
    goto fail;
  }
  got = read_payload (gz, f, (gsize)payload, error);
  if (got < 0)
    goto fail;
  if ((guint64)got < payload) {
    char *what;

    if (want_images)
      what = g_strdup_printf ("%u images of %ux%u%s", f->count, f->rows,
          f->cols, f->channels == 3 ? "x3" : "");
    else
      what = g_strdup_printf ("%u labels", f->count);
    set_truncated_error (
        error, gz, f, what, header_len + payload, header_len + (guint64)got);
    g_free (what);
    goto fail;
  }

  got = gz_read_full (gz, path, f->gzip, &extra, 1, error);
  if (got < 0)
    goto fail;
  if (got > 0) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: more data than the IDX header announces (%u %ss, "
        "%" G_GUINT64_FORMAT " bytes%s expected)",
        path, f->count, kind, header_len + payload,
        f->gzip ? " uncompressed" : "");
    goto fail;
  }

  gzclose (gz);
  return TRUE;

fail:
  gzclose (gz);
  return FALSE;
}

gboolean
parse_class_names (const char *arg, char ***names_out, GError **error)
{
  char **names = g_strsplit (arg, ",", -1);
  guint n = g_strv_length (names);
  guint i;

  if (n == 0) {
    g_strfreev (names);
    g_set_error (
        error, DATASET_ERROR, DATASET_ERROR_FAILED, "--class-names is empty");
    return FALSE;
  }
  if (n > 256) {
    g_strfreev (names);
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "--class-names gives %u names; uint8 labels allow at most 256", n);
    return FALSE;
  }
  for (i = 0; i < n; i++) {
    const char *c;

    if (names[i][0] == '\0') {
      g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
          "--class-names: name %u (label %u) is empty", i + 1, i);
      g_strfreev (names);
      return FALSE;
    }
    for (c = names[i]; *c; c++) {
      if (*c == '/' || (guchar)*c < 0x20 || *c == 0x7f) {
        g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
            "--class-names: name \"%s\" (label %u) contains '/' or a "
            "control character; names become folder names",
            names[i], i);
        g_strfreev (names);
        return FALSE;
      }
    }
  }
  *names_out = names;
  return TRUE;
}
