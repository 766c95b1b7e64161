/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* memory-recycler.h: output memory that comes back when downstream is done.
 *
 * Elements that make one large buffer per sample (a decoded image is
 * hundreds of kilobytes) would otherwise get fresh pages from malloc for
 * every sample and fault them in, cold in the cache. The recycler hands out
 * buffers whose memory returns to it when the last reference goes, and gives
 * the most recently returned block that fits to the next request, so a
 * steady stream keeps writing to the same few, cache-warm blocks. Unlike a
 * GstBufferPool it serves any size.
 */
#ifndef __GST_TRAIN_MEMORY_RECYCLER_H__
#define __GST_TRAIN_MEMORY_RECYCLER_H__

#include <gst/gst.h>

G_BEGIN_DECLS

typedef struct _GstTrainRecycler GstTrainRecycler;

/* A recycler that keeps at most @max_free returned blocks. */
GstTrainRecycler *gst_train_recycler_new (guint max_free);

/* A writable buffer of @size bytes, one memory, from a recycled block when
 * one is large enough. Thread-safe. */
GstBuffer *gst_train_recycler_new_buffer (
    GstTrainRecycler *recycler, gsize size);

/* Drops the caller's reference; blocks still downstream keep the recycler
 * alive until they return, and are freed then. */
void gst_train_recycler_unref (GstTrainRecycler *recycler);

G_END_DECLS

#endif
