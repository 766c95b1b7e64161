/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dataset-index.h: the list of samples behind datasetsrc.
 *
 * Loads an ImageFolder tree (labels in torchvision's order) or a list file
 * into memory: one entry (path, label) per sample, in dataset order. GLib
 * only, so that tools and tests can use it without a pipeline.
 */
#ifndef __GST_TRAIN_DATASET_INDEX_H__
#define __GST_TRAIN_DATASET_INDEX_H__

#include <glib.h>

G_BEGIN_DECLS

typedef struct
{
  gchar *path;
  gint label;
} GstTrainDatasetEntry;

typedef struct
{
  /* Class names in label order. */
  GPtrArray *class_names;
  /* GstTrainDatasetEntry, in dataset order. */
  GArray *entries;
  /* Class folders that held no image (ImageFolder only), in label order. */
  GPtrArray *empty_classes;
} GstTrainDatasetIndex;

/* Labels in a list file stay below this (class names are made for each). */
#define GST_TRAIN_DATASET_MAX_CLASSES (1 << 20)

#define GST_TRAIN_DATASET_ERROR (gst_train_dataset_error_quark ())

typedef enum
{
  GST_TRAIN_DATASET_ERROR_NOT_FOUND,
  GST_TRAIN_DATASET_ERROR_UNREADABLE,
  GST_TRAIN_DATASET_ERROR_EMPTY,
  GST_TRAIN_DATASET_ERROR_BAD_LINE,
} GstTrainDatasetError;

GQuark gst_train_dataset_error_quark (void);

/* Loads @location: a folder in ImageFolder layout, or a list file of
 * "relative/path<TAB>label" lines. Only files whose extension (compared
 * without case) is in @extensions count as images in a folder. Returns NULL
 * and sets @error when the location is missing or unreadable, holds no
 * sample, or a list line is malformed (the message names the line). */
GstTrainDatasetIndex *gst_train_dataset_index_load (
    const gchar *location, const gchar *const *extensions, GError **error);

/* Frees @index and everything it holds. */
void gst_train_dataset_index_free (GstTrainDatasetIndex *index);

/* Splits a comma-separated extension list ("jpg,jpeg") into lower-case
 * suffixes without dots; free with g_strfreev(). */
gchar **gst_train_dataset_parse_extensions (const gchar *list);

G_END_DECLS

#endif /* __GST_TRAIN_DATASET_INDEX_H__ */
