/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gsttrainhostallocator.h: GstMemory in the trainer's batch memory
 * (gt_host_alloc: pinned when a CUDA device is usable). */
#ifndef __GST_TRAIN_HOST_ALLOCATOR_H__
#define __GST_TRAIN_HOST_ALLOCATOR_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TRAIN_HOST_MEMORY_TYPE "GstTrainHostMemory"

#define GST_TYPE_TRAIN_HOST_ALLOCATOR (gst_train_host_allocator_get_type ())
G_DECLARE_FINAL_TYPE (GstTrainHostAllocator, gst_train_host_allocator, GST,
    TRAIN_HOST_ALLOCATOR, GstAllocator)

/* Page-locked memory on CUDA device @gpu_id when it is usable; @gpu_id < 0:
 * plain (aligned) memory. */
GstAllocator *gst_train_host_allocator_new (gint gpu_id);
/* Adds to the ALLOCATION @query a pool of @bytes-sized buffers of this
 * allocator for @gpu_id (at most a few at a time). */
void gst_train_host_allocator_propose_pool (
    GstQuery *query, GstCaps *caps, guint64 bytes, gint gpu_id);
/* TRUE for memory of this allocator. */
gboolean gst_train_host_memory_is_ours (GstMemory *memory);
/* TRUE for memory of this allocator that is page-locked. */
gboolean gst_train_host_memory_is_pinned (GstMemory *memory);

G_END_DECLS

#endif /* __GST_TRAIN_HOST_ALLOCATOR_H__ */
