/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-writer.c: WebDataset tar shards (see shard-writer.h). */
#include "shard-writer.h"
#include "idx-reader.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

#define BLOCK 512

struct _ShardWriter
{
  char *dir;
  char *prefix;
  guint shard_size;
  guint n_shards;   /* finished */
  guint in_current; /* samples in the open one */
  FILE *file;
  char *tmp_path;
  char *path;
  gboolean failed;
};

ShardWriter *
shard_writer_new (const char *dir, const char *prefix, guint shard_size)
{
  ShardWriter *w = g_new0 (ShardWriter, 1);

  w->dir = g_strdup (dir);
  w->prefix = g_strdup (prefix);
  w->shard_size = MAX (shard_size, 1);
  return w;
}

static gboolean
shard_writer_io_error (ShardWriter *w, const char *what, GError **error)
{
  g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED, "%s: %s: %s",
      w->tmp_path, what, g_strerror (errno));
  w->failed = TRUE;
  return FALSE;
}

/* A ustar header for a regular file @name of @size bytes. */
static void
tar_header (guint8 *h, const char *name, guint64 size)
{
  guint sum = 0, i;

  memset (h, 0, BLOCK);
  memcpy (h, name, MIN (strlen (name), 99));
  memcpy (h + 100, "0000644", 7);
  memcpy (h + 108, "0000000", 7);
  memcpy (h + 116, "0000000", 7);
  g_snprintf ((char *)h + 124, 12, "%011" G_GINT64_MODIFIER "o", size);
  memcpy (h + 136, "00000000000", 11);
  h[156] = '0';
  memcpy (h + 257, "ustar", 6); /* with its NUL */
  memcpy (h + 263, "00", 2);
  memset (h + 148, ' ', 8);
  for (i = 0; i < BLOCK; i++)
    sum += h[i];
  g_snprintf ((char *)h + 148, 8, "%06o", sum);
}

static gboolean
tar_member (ShardWriter *w, const char *name, const void *data, gsize size,
    GError **error)
{
  static const guint8 zeros[BLOCK] = { 0 };
  guint8 header[BLOCK];
  gsize pad = (BLOCK - size % BLOCK) % BLOCK;

  tar_header (header, name, size);
  if (fwrite (header, 1, BLOCK, w->file) != BLOCK
      || fwrite (data, 1, size, w->file) != size
      || fwrite (zeros, 1, pad, w->file) != pad)
    return shard_writer_io_error (w, "write failed", error);
  return TRUE;
}

/* Ends the open shard: the two zero blocks of a tar's end, then the
 * rename. */
static gboolean
shard_writer_close (ShardWriter *w, GError **error)
{
  static const guint8 zeros[2 * BLOCK] = { 0 };
  gboolean ok = TRUE;

  if (w->file == NULL)
    return TRUE;
  if (fwrite (zeros, 1, sizeof (zeros), w->file) != sizeof (zeros))
    ok = shard_writer_io_error (w, "write failed", error);
  if (fclose (w->file) != 0 && ok)
    ok = shard_writer_io_error (w, "write failed", error);
  w->file = NULL;
  if (ok && g_rename (w->tmp_path, w->path) != 0)
    ok = shard_writer_io_error (w, "cannot rename", error);
  if (!ok)
    g_unlink (w->tmp_path);
  g_clear_pointer (&w->tmp_path, g_free);
  g_clear_pointer (&w->path, g_free);
  w->n_shards++;
  w->in_current = 0;
  return ok;
}

gboolean
shard_writer_add (ShardWriter *w, const char *key, const void *jpeg, gsize size,
    guint label, GError **error)
{
  char name[128], text[16];

  if (w->failed) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "the shard writer failed before");
    return FALSE;
  }
  if (strlen (key) > 90 || strchr (key, '.') != NULL) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "\"%s\" cannot be a sample key (90 characters at most, no dot)", key);
    return FALSE;
  }
  if (w->file == NULL) {
    char *base = g_strdup_printf ("%s-%06u.tar", w->prefix, w->n_shards);

    w->path = g_build_filename (w->dir, base, NULL);
    w->tmp_path = g_strconcat (w->path, ".tmp", NULL);
    g_free (base);
    w->file = fopen (w->tmp_path, "wb");
    if (w->file == NULL)
      return shard_writer_io_error (w, "cannot create", error);
  }
  g_snprintf (name, sizeof (name), "%s.jpg", key);
  if (!tar_member (w, name, jpeg, size, error))
    return FALSE;
  g_snprintf (name, sizeof (name), "%s.cls", key);
  g_snprintf (text, sizeof (text), "%u", label);
  if (!tar_member (w, name, text, strlen (text), error))
    return FALSE;
  if (++w->in_current == w->shard_size)
    return shard_writer_close (w, error);
  return TRUE;
}

gboolean
shard_writer_finish (
    ShardWriter *w, guint *n_shards, char **pattern, GError **error)
{
  gboolean ok = !w->failed && shard_writer_close (w, error);

  if (w->file != NULL) {
    fclose (w->file);
    g_unlink (w->tmp_path);
  }
  *n_shards = w->n_shards;
  *pattern = w->n_shards == 0 ? g_strdup ("")
      : w->n_shards == 1
      ? g_strdup_printf ("%s-000000.tar", w->prefix)
      : g_strdup_printf ("%s-{000000..%06u}.tar", w->prefix, w->n_shards - 1);
  g_free (w->tmp_path);
  g_free (w->path);
  g_free (w->dir);
  g_free (w->prefix);
  g_free (w);
  return ok;
}
