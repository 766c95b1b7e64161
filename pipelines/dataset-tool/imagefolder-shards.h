/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* imagefolder-shards.h: gst-train-dataset's "shards" command, an
 * ImageFolder tree (or a list file) made into WebDataset shards. GLib
 * only. */
#ifndef GST_TRAIN_IMAGEFOLDER_SHARDS_H
#define GST_TRAIN_IMAGEFOLDER_SHARDS_H

#include <glib.h>

G_BEGIN_DECLS

/* Writes the JPEGs of @input (labels as torchvision's ImageFolder numbers
 * them, or a list file's) into @output/@prefix-NNNNNN.tar, @shard_size
 * samples a shard, each file's bytes as they are; the key of a sample is
 * its index in the dataset's order. The samples go in an order shuffled
 * from @seed (shards of one class each would feed a training run one class
 * at a time), or in dataset order with @keep_order. The output folder gets
 * the markers of output-dir.h: a second run with the same settings does
 * nothing. */
gboolean imagefolder_to_shards (const char *input, const char *output,
    const char *prefix, guint shard_size, guint64 seed, gboolean keep_order,
    GError **error);

G_END_DECLS

#endif /* GST_TRAIN_IMAGEFOLDER_SHARDS_H */
