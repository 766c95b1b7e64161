/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gsttrainhostallocator.c: GstMemory in the trainer's batch memory.
 *
 * The memory comes from gt_host_alloc: page-locked (pinned) when a CUDA
 * device is usable, so that the trainer's copy to the device runs
 * asynchronously and at full speed, else 64-byte-aligned ordinary memory.
 * cudatrainsink offers a buffer pool on this allocator in its reply to the
 * ALLOCATION query, and batcher writes each batch's images into it, so that
 * a batch reaches the trainer with no copy in between. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gsttrainhostallocator.h"

#include "trainer.h"

#include <string.h>

typedef struct
{
  GstMemory memory;
  guint8 *data; /* of the memory this one shares, or its own */
  gboolean pinned;
} GstTrainHostMemory;

struct _GstTrainHostAllocator
{
  GstAllocator parent;
  gint gpu_id; /* where page-locked memory is made; -1: plain memory */
};

G_DEFINE_TYPE (
    GstTrainHostAllocator, gst_train_host_allocator, GST_TYPE_ALLOCATOR);

static GstTrainHostMemory *
host_memory_new (GstAllocator *allocator, GstMemory *parent, guint8 *data,
    gboolean pinned, GstMemoryFlags flags, gsize maxsize, gsize align,
    gsize offset, gsize size)
{
  GstTrainHostMemory *memory = g_new0 (GstTrainHostMemory, 1);

  gst_memory_init (GST_MEMORY_CAST (memory), flags, allocator, parent, maxsize,
      align, offset, size);
  memory->data = data;
  memory->pinned = pinned;
  return memory;
}

static GstMemory *
gst_train_host_allocator_alloc (
    GstAllocator *allocator, gsize size, GstAllocationParams *params)
{
  gsize maxsize = size + params->prefix + params->padding;
  int pinned = 0;
  guint8 *data;

  /* gt_host_alloc aligns to 64 bytes; a pool asking for more is refused */
  if (params->align >= 64)
    return NULL;
  data = gt_host_alloc (
      maxsize, GST_TRAIN_HOST_ALLOCATOR (allocator)->gpu_id, &pinned);
  if (data == NULL)
    return NULL;
  if (params->prefix && (params->flags & GST_MEMORY_FLAG_ZERO_PREFIXED))
    memset (data, 0, params->prefix);
  if (params->padding && (params->flags & GST_MEMORY_FLAG_ZERO_PADDED))
    memset (data + params->prefix + size, 0, params->padding);
  return GST_MEMORY_CAST (host_memory_new (allocator, NULL, data, pinned,
      params->flags, maxsize, params->align, params->prefix, size));
}

static void
gst_train_host_allocator_free (GstAllocator *allocator, GstMemory *memory)
{
  GstTrainHostMemory *host = (GstTrainHostMemory *)memory;

  /* a shared memory points into its parent's block */
  if (memory->parent == NULL)
    gt_host_free (host->data);
  g_free (host);
}

static gpointer
host_memory_map (GstMemory *memory, gsize maxsize, GstMapFlags flags)
{
  return ((GstTrainHostMemory *)memory)->data;
}

static void
host_memory_unmap (GstMemory *memory)
{}

static GstMemory *
host_memory_share (GstMemory *memory, gssize offset, gssize size)
{
  GstTrainHostMemory *host = (GstTrainHostMemory *)memory;
  GstMemory *parent = memory->parent ? memory->parent : memory;

  if (size == -1)
    size = offset < (gssize)memory->size ? (gssize)memory->size - offset : 0;
  return GST_MEMORY_CAST (
      host_memory_new (memory->allocator, parent, host->data, host->pinned,
          GST_MINI_OBJECT_FLAGS (parent) | GST_MINI_OBJECT_FLAG_LOCK_READONLY,
          memory->maxsize, memory->align, memory->offset + offset, size));
}

static void
gst_train_host_allocator_class_init (GstTrainHostAllocatorClass *klass)
{
  GstAllocatorClass *allocator_class = GST_ALLOCATOR_CLASS (klass);

  allocator_class->alloc = gst_train_host_allocator_alloc;
  allocator_class->free = gst_train_host_allocator_free;
}

static void
gst_train_host_allocator_init (GstTrainHostAllocator *self)
{
  GstAllocator *allocator = GST_ALLOCATOR_CAST (self);

  allocator->mem_type = GST_TRAIN_HOST_MEMORY_TYPE;
  allocator->mem_map = host_memory_map;
  allocator->mem_unmap = host_memory_unmap;
  allocator->mem_share = host_memory_share;
}

GstAllocator *
gst_train_host_allocator_new (gint gpu_id)
{
  GstTrainHostAllocator *self =
      gst_object_ref_sink (g_object_new (GST_TYPE_TRAIN_HOST_ALLOCATOR, NULL));

  self->gpu_id = gpu_id;
  return GST_ALLOCATOR_CAST (self);
}

gboolean
gst_train_host_memory_is_pinned (GstMemory *memory)
{
  return memory != NULL && memory->allocator != NULL
      && GST_IS_TRAIN_HOST_ALLOCATOR (memory->allocator)
      && ((GstTrainHostMemory *)memory)->pinned;
}

gboolean
gst_train_host_memory_is_ours (GstMemory *memory)
{
  return memory != NULL && memory->allocator != NULL
      && GST_IS_TRAIN_HOST_ALLOCATOR (memory->allocator);
}

/* At most this many pool buffers exist at a time (echo adds what it holds):
 * page-locked memory is scarce, and more batches in flight would not make a
 * step faster. */
#define MAX_POOL_BATCHES 8

void
gst_train_host_allocator_propose_pool (
    GstQuery *query, GstCaps *caps, guint64 bytes, gint gpu_id)
{
  GstAllocationParams params;
  GstAllocator *allocator;
  GstBufferPool *pool;
  GstStructure *config;

  if (bytes == 0 || bytes > G_MAXUINT)
    return; /* a pool's buffer size is a guint */
  allocator = gst_train_host_allocator_new (gpu_id);
  gst_allocation_params_init (&params);
  pool = gst_buffer_pool_new ();
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (
      config, caps, (guint)bytes, 0, MAX_POOL_BATCHES);
  gst_buffer_pool_config_set_allocator (config, allocator, &params);
  /* the pool only: without it, a page-locked allocation per batch would
   * cost more than the copy it saves */
  if (gst_buffer_pool_set_config (pool, config))
    gst_query_add_allocation_pool (
        query, pool, (guint)bytes, 0, MAX_POOL_BATCHES);
  gst_object_unref (pool);
  gst_object_unref (allocator);
}
