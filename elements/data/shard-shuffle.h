/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-shuffle.h: the order in which datasetsrc reads shards and hands out
 * their samples, as WebDataset shuffles: each rank keeps its own shards
 * (WebDataset's split_by_node over the shards as listed), reads them in an
 * order drawn afresh each epoch from the seed (its detshuffle), each shard
 * front to back, several at once with their samples taken in turn (the
 * rotation: its DataLoader workers), and the samples pass through a
 * shuffle buffer that hands
 * out a random one of those it holds (its shuffle stage, with its
 * `initial`: see gst_train_shard_shuffle_fill; the picked slot takes the
 * last one's place). GLib only, over gt-random,
 * so that an exact resume replays the same draws without data. */
#ifndef __GST_TRAIN_SHARD_SHUFFLE_H__
#define __GST_TRAIN_SHARD_SHUFFLE_H__

#include <glib.h>

#include "gt-random.h"

G_BEGIN_DECLS

/* The shards of rank @rank of @n_ranks among @n_shards: rank, rank +
 * n_ranks, ... (a new array of *@n_mine indices; free with g_free()). */
guint *gst_train_rank_split (
    guint n_shards, guint rank, guint n_ranks, guint *n_mine);

/* Fills @order with the @n shards of @mine in the order of @epoch: a
 * permutation drawn from @seed and @epoch, or as they are without
 * @shuffle. */
void gst_train_shard_epoch_order (const guint *mine, guint *order, guint n,
    guint64 seed, gint epoch, gboolean shuffle);

/* The rotation that interleaves the samples of several open shards: up
 * to @n_slots shards of an epoch's order are open at once, and samples are
 * taken from them in turn, one from each (slot 0, 1, ..., n_slots - 1, 0,
 * ...), as a PyTorch DataLoader takes batches from its WebDataset workers
 * in turn. When a shard ends, the next shard of the order is opened in its
 * slot and gives that turn's sample; once the order is spent, empty slots
 * are passed over. So the order depends on the shard order and on how
 * many good samples each shard holds, never on when their bytes arrive,
 * and one slot reads the shards one after the other. The caller opens and
 * reads the shards; the rotation says which slot is next. */
typedef struct
{
  guint n_slots;
  guint n_shards; /* in the epoch's order */
  guint next;     /* place in the order of the next shard to open */
  guint turn;     /* the slot the next sample comes from */
  guint n_open;   /* slots that hold a shard */
  guint *open;    /* each slot's place in the order, or G_MAXUINT */
} GstTrainShardRotation;

/* @n_slots empty slots (at least one) before the first of @n_shards. */
void gst_train_shard_rotation_init (
    GstTrainShardRotation *rotation, guint n_slots, guint n_shards);

/* The slot the next sample comes from. When it held no shard, the next
 * one of the order is opened there first: *@opened is its place in the
 * order (else G_MAXUINT). -1 once every shard of the order has ended. */
gint gst_train_shard_rotation_next (
    GstTrainShardRotation *rotation, guint *opened);

/* The shard of @slot has no more samples: the slot is empty. */
void gst_train_shard_rotation_end (GstTrainShardRotation *rotation, guint slot);

/* A sample came from the turn's slot: the turn goes to the next slot. */
void gst_train_shard_rotation_advance (GstTrainShardRotation *rotation);

/* Ends every shard and opens none (num-samples ends an epoch early). */
void gst_train_shard_rotation_stop (GstTrainShardRotation *rotation);

void gst_train_shard_rotation_clear (GstTrainShardRotation *rotation);

/* The sample shuffle buffer. Items are pointers, freed with the
 * GDestroyNotify given at init when the buffer is cleared. */
typedef struct
{
  GtRandom rng;
  GPtrArray *items;
  guint capacity;
} GstTrainShardShuffle;

/* An empty buffer of @capacity items (0 or 1: items leave in the order
 * they came) whose draws are the stream @stream of @seed. */
void gst_train_shard_shuffle_init (GstTrainShardShuffle *buffer, guint capacity,
    guint64 seed, guint64 stream, GDestroyNotify free_item);

/* Where a buffer's items come from: 1 with *@item set, 0 at the end of
 * the input, -1 on an error (which the caller keeps). */
typedef gint (*GstTrainShardNextFunc) (gpointer user_data, gpointer *item);

/* Items the buffer holds before the first one leaves (or its capacity,
 * when smaller): WebDataset's `initial`, so that output starts early. */
#define GST_TRAIN_SHARD_SHUFFLE_INITIAL 100

/* Reads into @buffer, from @next, what WebDataset's shuffle stage reads
 * before it hands an item out: an item, and one more while the buffer
 * holds fewer than its capacity, again until it holds its initial count
 * or the input ends (*@input_done set then; nothing is read once it is
 * set). So the buffer fills up two items per item out, while output has
 * begun. 0, or -1 when @next failed. */
gint gst_train_shard_shuffle_fill (GstTrainShardShuffle *buffer,
    gboolean *input_done, GstTrainShardNextFunc next, gpointer user_data);

/* A random item out of the buffer (the oldest with a capacity of 0 or 1);
 * NULL when it is empty. */
gpointer gst_train_shard_shuffle_take (GstTrainShardShuffle *buffer);

/* Frees the items held and empties the buffer (safe on a zeroed one). */
void gst_train_shard_shuffle_clear (GstTrainShardShuffle *buffer);

/* The stream of the shuffle buffer's draws in @epoch, and of the shard
 * order's: apart, so that the two are independent. */
#define GST_TRAIN_SHARD_BUFFER_STREAM(epoch) (((guint64)(epoch) << 1) | 1)
#define GST_TRAIN_SHARD_ORDER_STREAM(epoch) ((guint64)(epoch) << 1)

G_END_DECLS

#endif /* __GST_TRAIN_SHARD_SHUFFLE_H__ */
