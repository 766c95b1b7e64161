/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* augment-private.h: the augment element's insides, shared by its files.
 *
 * gstaugment.c owns the element: properties, documentation, caps, the
 * jobs on the shared pool, state changes. augment-region.c draws what
 * happens to each image (its generator, crop window and flip), answers
 * imagedec's region query with the same draws and fits a decoded region
 * (#GstTrainRegionMeta) to them. Calls go that way only: gstaugment.c to
 * augment-region.c. */
#ifndef __GST_AUGMENT_PRIVATE_H__
#define __GST_AUGMENT_PRIVATE_H__

#include "gstaugment.h"
#include "augment-ops.h"
#include "memory-recycler.h"
#include "train-pool.h"
#include "gt-random.h"

#include <gst/video/video.h>

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_augment_debug);
#define GST_CAT_DEFAULT gst_augment_debug

typedef enum
{
  GST_AUGMENT_CROP_RANDOM_RESIZED,
  GST_AUGMENT_CROP_CENTER,
  GST_AUGMENT_CROP_RESIZE,
} GstAugmentCrop;

/* The properties as they were when the element started. */
typedef struct
{
  gint width;
  gint height;
  GstAugmentCrop crop;
  GstTrainCropRange range;
  gdouble flip;
  gint resize_short;
  guint64 seed;
  guint n_threads;
} GstAugmentSettings;

/* One image on its way through the shared pool: what was drawn for it in
 * the streaming thread, then its output. */
typedef struct
{
  GstTrainTask task; /* first: the pool hands it back */
  GstAugment *augment;
  GstBuffer *input;
  GstVideoFrame in_frame; /* mapped until the task has run */
  GstTrainResizeWindow window;
  gboolean flip;
  GstBuffer *output;
  GstTrainResampleScratch scratch; /* kept from image to image */
} GstAugmentJob;

struct _GstAugment
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* Properties, and whether the element runs with @settings, under the
   * object lock. */
  GstAugmentSettings props;
  gboolean started;

  /* Streaming state: set at start, then touched by the streaming thread
   * only. */
  GstAugmentSettings settings;
  GtRandom rng;       /* the draws of the image being augmented */
  guint64 rank_seed;  /* @seed, mixed with the rank of a data-parallel job */
  guint64 unnamed_in; /* buffers without a sample meta so far */
  GstVideoInfo in_info;
  gboolean have_in_caps;
  GstTrainRecycler *recycler; /* where output images get their memory */

  /* Images in flight in @pool (the process's; NULL with n-threads=1), in
   * input order, at most @window of them; done jobs kept for reuse. Touched
   * by the streaming thread only. */
  GstTrainPool *pool;
  guint window;
  GQueue jobs;
  GQueue free_jobs;
};

/* Answers a region query (GST_TRAIN_REGION_QUERY) that came to @pad, the
 * sink pad (augment-region.c). */
gboolean gst_augment_answer_region (
    GstAugment *augment, GstPad *pad, GstQuery *query);

/* Seeds the draws of @job's sample and draws its window and flip, fitted
 * to the region its input is, if any. FALSE, with an error posted, when
 * that region does not hold the window; the caller then drops @job. */
gboolean gst_augment_draw_buffer (GstAugment *augment, GstAugmentJob *job);

G_END_DECLS

#endif /* __GST_AUGMENT_PRIVATE_H__ */
