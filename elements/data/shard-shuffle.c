/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-shuffle.c: shard order, the rotation over open shards and the
 * sample shuffle buffer (see shard-shuffle.h). */
#include "shard-shuffle.h"

#include <string.h>

guint *
gst_train_rank_split (guint n_shards, guint rank, guint n_ranks, guint *n_mine)
{
  guint *mine, i, n = 0;

  g_return_val_if_fail (n_ranks > 0 && rank < n_ranks, NULL);
  mine = g_new (guint, n_shards / n_ranks + 1);
  for (i = rank; i < n_shards; i += n_ranks)
    mine[n++] = i;
  *n_mine = n;
  return mine;
}

void
gst_train_shard_epoch_order (const guint *mine, guint *order, guint n,
    guint64 seed, gint epoch, gboolean shuffle)
{
  guint64 *positions = g_new (guint64, MAX (n, 1));
  guint i;

  for (i = 0; i < n; i++)
    positions[i] = i;
  if (shuffle) {
    GtRandom rng;

    gt_random_init (&rng, seed, GST_TRAIN_SHARD_ORDER_STREAM (epoch));
    gt_random_shuffle (&rng, positions, n);
  }
  for (i = 0; i < n; i++)
    order[i] = mine[positions[i]];
  g_free (positions);
}

void
gst_train_shard_rotation_init (
    GstTrainShardRotation *rotation, guint n_slots, guint n_shards)
{
  guint i;

  gst_train_shard_rotation_clear (rotation);
  rotation->n_slots = MAX (n_slots, 1);
  rotation->n_shards = n_shards;
  rotation->open = g_new (guint, rotation->n_slots);
  for (i = 0; i < rotation->n_slots; i++)
    rotation->open[i] = G_MAXUINT;
}

gint
gst_train_shard_rotation_next (GstTrainShardRotation *rotation, guint *opened)
{
  guint i;

  *opened = G_MAXUINT;
  for (i = 0; i < rotation->n_slots; i++) {
    guint slot = rotation->turn;

    if (rotation->open[slot] != G_MAXUINT)
      return (gint)slot;
    if (rotation->next < rotation->n_shards) {
      rotation->open[slot] = *opened = rotation->next++;
      rotation->n_open++;
      return (gint)slot;
    }
    rotation->turn = (slot + 1) % rotation->n_slots;
  }
  return -1;
}

void
gst_train_shard_rotation_end (GstTrainShardRotation *rotation, guint slot)
{
  g_return_if_fail (slot < rotation->n_slots);
  if (rotation->open[slot] == G_MAXUINT)
    return;
  rotation->open[slot] = G_MAXUINT;
  rotation->n_open--;
}

void
gst_train_shard_rotation_advance (GstTrainShardRotation *rotation)
{
  rotation->turn = (rotation->turn + 1) % rotation->n_slots;
}

void
gst_train_shard_rotation_stop (GstTrainShardRotation *rotation)
{
  guint i;

  for (i = 0; i < rotation->n_slots; i++)
    gst_train_shard_rotation_end (rotation, i);
  rotation->next = rotation->n_shards;
}

void
gst_train_shard_rotation_clear (GstTrainShardRotation *rotation)
{
  g_clear_pointer (&rotation->open, g_free);
  memset (rotation, 0, sizeof (*rotation));
}

void
gst_train_shard_shuffle_init (GstTrainShardShuffle *buffer, guint capacity,
    guint64 seed, guint64 stream, GDestroyNotify free_item)
{
  gst_train_shard_shuffle_clear (buffer);
  gt_random_init (&buffer->rng, seed, stream);
  buffer->items = g_ptr_array_new_with_free_func (free_item);
  buffer->capacity = MAX (capacity, 1);
}

gint
gst_train_shard_shuffle_fill (GstTrainShardShuffle *buffer,
    gboolean *input_done, GstTrainShardNextFunc next, gpointer user_data)
{
  guint initial = MIN (GST_TRAIN_SHARD_SHUFFLE_INITIAL, buffer->capacity);

  while (!*input_done) {
    guint k;

    for (k = 0; k < 2; k++) {
      gpointer item = NULL;
      gint got;

      if (k == 1 && buffer->items->len >= buffer->capacity)
        break;
      got = next (user_data, &item);
      if (got < 0)
        return -1;
      if (got == 0) {
        *input_done = TRUE;
        break;
      }
      g_ptr_array_add (buffer->items, item);
    }
    if (buffer->items->len >= initial)
      break;
  }
  return 0;
}

gpointer
gst_train_shard_shuffle_take (GstTrainShardShuffle *buffer)
{
  GPtrArray *items = buffer->items;
  guint k;
  gpointer item;

  if (items->len == 0)
    return NULL;
  /* with one slot there is nothing to draw: no draw is made */
  k = buffer->capacity == 1 ? 0 : gt_random_below (&buffer->rng, items->len);
  item = items->pdata[k];
  items->pdata[k] = items->pdata[items->len - 1];
  g_ptr_array_steal_index (items, items->len - 1);
  return item;
}

void
gst_train_shard_shuffle_clear (GstTrainShardShuffle *buffer)
{
  g_clear_pointer (&buffer->items, g_ptr_array_unref);
}
