/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memory-recycler.c: see memory-recycler.h. */
#include "memory-recycler.h"

/* Block sizes are whole pages. */
#define BLOCK_GRANULE 4096

typedef struct
{
  GstTrainRecycler *owner;
  guint8 *data;
  gsize capacity;
} GstTrainBlock;

struct _GstTrainRecycler
{
  gint refcount;
  GMutex lock;
  GPtrArray *free_blocks; /* most recently returned last */
  guint max_free;
  gsize high_water; /* capacity of new blocks: the largest size asked for */
};

static void
gst_train_block_free (GstTrainBlock *block)
{
  g_free (block->data);
  g_free (block);
}

GstTrainRecycler *
gst_train_recycler_new (guint max_free)
{
  GstTrainRecycler *recycler = g_new0 (GstTrainRecycler, 1);

  recycler->refcount = 1;
  g_mutex_init (&recycler->lock);
  recycler->free_blocks =
      g_ptr_array_new_with_free_func ((GDestroyNotify)gst_train_block_free);
  recycler->max_free = max_free;
  return recycler;
}

void
gst_train_recycler_unref (GstTrainRecycler *recycler)
{
  if (recycler == NULL || !g_atomic_int_dec_and_test (&recycler->refcount))
    return;
  g_ptr_array_unref (recycler->free_blocks);
  g_mutex_clear (&recycler->lock);
  g_free (recycler);
}

/* The GstMemory's destroy notify: the block goes back, or is freed when the
 * free list is full. */
static void
gst_train_block_release (gpointer data)
{
  GstTrainBlock *block = data;
  GstTrainRecycler *owner = block->owner;
  gboolean kept = FALSE;

  g_mutex_lock (&owner->lock);
  /* Blocks smaller than the largest image seen would only serve smaller
   * images: let them go, so that every kept block fits every image and the
   * most recently used, cache-warm one is always the one reused. */
  if (owner->free_blocks->len < owner->max_free
      && block->capacity >= owner->high_water) {
    g_ptr_array_add (owner->free_blocks, block);
    kept = TRUE;
  }
  g_mutex_unlock (&owner->lock);
  if (!kept)
    gst_train_block_free (block);
  gst_train_recycler_unref (owner);
}

GstBuffer *
gst_train_recycler_new_buffer (GstTrainRecycler *recycler, gsize size)
{
  GstTrainBlock *block = NULL;
  GstBuffer *buffer;
  gsize capacity;
  guint i;

  g_mutex_lock (&recycler->lock);
  if (size > recycler->high_water)
    recycler->high_water =
        (size + BLOCK_GRANULE - 1) / BLOCK_GRANULE * BLOCK_GRANULE;
  for (i = recycler->free_blocks->len; i > 0; i--) {
    GstTrainBlock *candidate = g_ptr_array_index (recycler->free_blocks, i - 1);

    if (candidate->capacity >= size) {
      block = g_ptr_array_steal_index (recycler->free_blocks, i - 1);
      break;
    }
  }
  capacity = MAX (recycler->high_water, BLOCK_GRANULE);
  g_mutex_unlock (&recycler->lock);

  if (block == NULL) {
    block = g_new (GstTrainBlock, 1);
    block->capacity = capacity;
    block->data = g_malloc (block->capacity);
  }
  block->owner = recycler;
  g_atomic_int_inc (&recycler->refcount);

  buffer = gst_buffer_new ();
  gst_buffer_append_memory (buffer,
      gst_memory_new_wrapped (0, block->data, block->capacity, 0, size, block,
          gst_train_block_release));
  return buffer;
}
