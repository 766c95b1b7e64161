/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-memory.h: a tar shard in memory as a source of the shard reader
 * (elements/data/shard-reader.h), read in steps of a chosen size so that
 * headers and members straddle the reader's buffer differently; for the
 * fuzz target of the reader and the element tests' reader checks. */
#ifndef GST_TRAIN_SHARD_MEMORY_H
#define GST_TRAIN_SHARD_MEMORY_H

#include "shard-reader.h"

G_BEGIN_DECLS

typedef struct
{
  const guint8 *data;
  gsize size;
  gsize at;   /* the next byte to read */
  gsize step; /* the most bytes one read hands over */
} ShardMemory;

/* GstTrainShardSourceFuncs.read and .skip over a ShardMemory. */
gssize shard_memory_read (
    gpointer source, guint8 *data, gsize size, GError **error);
gint64 shard_memory_skip (gpointer source, guint64 size, GError **error);

G_END_DECLS

#endif /* GST_TRAIN_SHARD_MEMORY_H */
