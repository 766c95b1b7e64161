/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-writer.h: WebDataset shards, as gst-train-dataset writes them.
 *
 * Plain tar files (POSIX ustar, which Python's tarfile, GNU tar and
 * WebDataset read) named PREFIX-000000.tar, PREFIX-000001.tar, ... of
 * @shard_size samples each (the last one fewer), each sample two members
 * in a row: KEY.jpg (the JPEG as given) and KEY.cls (the label in
 * decimal), as WebDataset's ShardWriter writes {"__key__", "jpg", "cls"}.
 * Each shard is written through a temporary name and a rename. Owner,
 * group and times are zero, so that the same input gives the same bytes.
 * GLib only. */
#ifndef GST_TRAIN_SHARD_WRITER_H
#define GST_TRAIN_SHARD_WRITER_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct _ShardWriter ShardWriter;

/* Writes shards @dir/@prefix-NNNNNN.tar of @shard_size (> 0) samples. */
ShardWriter *shard_writer_new (
    const char *dir, const char *prefix, guint shard_size);

/* Adds a sample: @key (no dot, no slash needed), the @size bytes of a JPEG
 * at @jpeg, and its @label. FALSE with @error set when a shard cannot be
 * written (the writer is then spent). */
gboolean shard_writer_add (ShardWriter *writer, const char *key,
    const void *jpeg, gsize size, guint label, GError **error);

/* Finishes the last shard and frees the writer: the number of shards in
 * *@n_shards and their brace pattern ("PREFIX-{000000..000009}.tar") in
 * *@pattern (free with g_free()); FALSE with @error set on a failed
 * write. */
gboolean shard_writer_finish (
    ShardWriter *writer, guint *n_shards, char **pattern, GError **error);

G_END_DECLS

#endif /* GST_TRAIN_SHARD_WRITER_H */
