/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* datasetsrc-shards.h: the state of datasetsrc's shard mode
 * (datasetsrc-shards.c), apart from the element's insides
 * (datasetsrc-private.h) that every mode shares; the files mode keeps its
 * own in datasetsrc-files.c. */
#ifndef __GST_DATASET_SRC_SHARDS_H__
#define __GST_DATASET_SRC_SHARDS_H__

#include "datasetsrc-private.h"
#include "shard-fetch.h"
#include "shard-pattern.h"
#include "shard-reader.h"
#include "shard-shuffle.h"

G_BEGIN_DECLS

/* The dataset index of sample @ordinal of shard @shard (its place in the
 * location's list): unique, and the same every epoch. */
#define GST_DATASET_SRC_SHARD_INDEX(shard, ordinal)                            \
  (((guint64)(shard) << 32) | (guint64)(ordinal))

/* A sample in the shuffle buffer: read whole, or (brought back by a
 * resume) only its place, its image read when it goes out. */
typedef struct
{
  guint shard;
  GstTrainShardSample sample;
} GstDatasetSrcShardItem;

/* A shard open in a slot of the rotation (shard-shuffle.h). */
typedef struct
{
  guint shard; /* index into the location's list */
  GstTrainShardStream *stream;
  GstTrainShardReader *reader; /* NULL: the slot is empty */
} GstDatasetSrcShardSlot;

/* The mode's state, src->mode_state from start to stop. */
typedef struct _GstDatasetSrcShards GstDatasetSrcShards;

struct _GstDatasetSrcShards
{
  gchar **shards; /* the location's, in order */
  guint n_shards;
  guint *mine; /* this rank's, indices into @shards */
  guint n_mine;
  GstTrainShardFetcher *fetcher;

  /* where reading stands (streaming thread only) */
  gint epoch;   /* -1 before the first */
  guint *order; /* @mine in this epoch's order */
  /* the shards read at once, their samples taken in turn: fetch-ahead + 1
   * slots with interleave (fewer when the rank has fewer shards), else
   * one */
  GstTrainShardRotation rotation;
  GstDatasetSrcShardSlot *slots;
  guint n_slots;
  gboolean input_done; /* nothing more goes into the buffer this epoch */
  GstTrainShardShuffle buffer;
  GstFlowReturn input_ret; /* why the buffer's input failed */
  guint64 epoch_emitted;   /* samples out of the buffer this epoch */
  gboolean done;
  /* samples in an epoch of this rank, once one was read whole (0 before),
   * and whether the tags said so downstream */
  guint64 epoch_size;
  gboolean epoch_size_sent;

  /* an exact resume: the place in the sequence of the next sample out of
   * the buffer (which of them downstream wants: src->keep) */
  guint64 position;
};

void gst_dataset_src_shard_item_free (gpointer item);

/* Closes the shards being read, if any. */
void gst_dataset_src_shards_close (GstDatasetSrcShards *sh);

/* Enters @epoch: its shard order, no shard open, an empty shuffle buffer
 * with its draws. FALSE when num-epochs ends before it. */
gboolean gst_dataset_src_shards_enter_epoch (
    const GstDatasetSrcSettings *s, GstDatasetSrcShards *sh, gint epoch);

/* Opens @shard in @slot at byte @offset, where its sample @ordinal begins
 * (0, 0: its start), and fetches ahead what follows the open shards;
 * posts the error and returns it when it cannot. */
GstFlowReturn gst_dataset_src_shards_open (GstDatasetSrc *src, guint slot,
    guint shard, guint64 offset, guint64 ordinal);

/* Posts an error for @error of the shard pieces (a shard missing, a
 * transfer that failed; a flush posts nothing) and returns what create()
 * returns for it. Takes @error. */
GstFlowReturn gst_dataset_src_shards_fail (GstDatasetSrc *src, GError *error);

/* What is wrong with @sample, as a new string in *@why (returned too), or
 * NULL when it is a good one: an image, a label below @num_classes. */
const gchar *gst_dataset_src_shard_check (
    const GstTrainShardSample *sample, guint num_classes, gchar **why);

G_END_DECLS

#endif /* __GST_DATASET_SRC_SHARDS_H__ */
