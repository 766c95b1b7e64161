/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* imagefolder-shards.c: an ImageFolder into WebDataset shards (see
 * imagefolder-shards.h). */
#include "imagefolder-shards.h"
#include "dataset-index.h"
#include "gt-random.h"
#include "idx-reader.h"
#include "output-dir.h"
#include "shard-writer.h"

#include <glib/gstdio.h>

gboolean
imagefolder_to_shards (const char *input, const char *output,
    const char *prefix, guint shard_size, guint64 seed, gboolean keep_order,
    GError **error)
{
  gchar **extensions = gst_train_dataset_parse_extensions ("jpg,jpeg");
  char *input_abs = g_canonicalize_filename (input, NULL);
  char *settings = g_strdup_printf ("shards input=%s prefix=%s shard-size=%u "
                                    "seed=%" G_GUINT64_FORMAT " keep-order=%d",
      input_abs, prefix, shard_size, seed, keep_order);
  GstTrainDatasetIndex *index = NULL;
  guint64 *order = NULL, i, n;
  gint64 t0 = g_get_monotonic_time ();
  ShardWriter *writer = NULL;
  char *pattern = NULL, *marker = NULL, *partial;
  guint n_shards, width;
  gboolean ok = FALSE;

  switch (output_check (output, settings, error)) {
    case OUTPUT_COMPLETE:
      ok = TRUE;
      goto out;
    case OUTPUT_ERROR:
      goto out;
    case OUTPUT_FRESH:
      break;
  }
  index = gst_train_dataset_index_load (
      input, (const gchar *const *)extensions, error);
  if (index == NULL || !output_make_dir (output, error))
    goto out;
  marker = g_strdup_printf ("settings=%s\n", settings);
  if (!output_write_text (output, MARKER_PARTIAL, marker, error))
    goto out;

  n = index->entries->len;
  width = output_name_width (n > 0 ? n - 1 : 0);
  order = g_new (guint64, MAX (n, 1));
  for (i = 0; i < n; i++)
    order[i] = i;
  if (!keep_order) {
    GtRandom rng;

    gt_random_init (&rng, seed, 0);
    gt_random_shuffle (&rng, order, n);
  }
  writer = shard_writer_new (output, prefix, shard_size);
  for (i = 0; i < n; i++) {
    const GstTrainDatasetEntry *entry =
        &g_array_index (index->entries, GstTrainDatasetEntry, order[i]);
    char key[32], *data;
    gsize size;

    if (!g_file_get_contents (entry->path, &data, &size, error))
      break;
    g_snprintf (
        key, sizeof (key), "%0*" G_GUINT64_FORMAT, (int)width, order[i]);
    ok = shard_writer_add (writer, key, data, size, entry->label, error);
    g_free (data);
    if (!ok)
      break;
  }
  ok = i == n;
  if (!shard_writer_finish (writer, &n_shards, &pattern, ok ? error : NULL))
    ok = FALSE;
  if (!ok)
    goto out;

  g_free (marker);
  marker = g_strdup_printf ("settings=%s\ncounts=%" G_GUINT64_FORMAT
                            " images in %u shards (%s)\nclasses=%u\n",
      settings, n, n_shards, pattern, index->class_names->len);
  ok = output_write_text (output, MARKER_COMPLETE, marker, error);
  if (!ok)
    goto out;
  partial = g_build_filename (output, MARKER_PARTIAL, NULL);
  g_unlink (partial);
  g_free (partial);
  g_print ("%s: %" G_GUINT64_FORMAT " images in %u shards (%s), %u classes "
           "(num-classes=%u), %.2f s\n",
      output, n, n_shards, pattern, index->class_names->len,
      index->class_names->len, (g_get_monotonic_time () - t0) / 1e6);

out:
  if (index != NULL)
    gst_train_dataset_index_free (index);
  g_strfreev (extensions);
  g_free (input_abs);
  g_free (settings);
  g_free (order);
  g_free (pattern);
  g_free (marker);
  return ok;
}
