/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* augment-region.c: what augment does to each image, drawn from the
 * sample's own generator, and the region query that lets imagedec decode
 * only the crop (see gstaugment.c and augment-private.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "augment-private.h"
#include "train-common.h"
#include "train-meta.h"

/* Seeds @rng for the draws of the sample @meta describes (NULL: the next
 * buffer without one): the same sample (epoch, index, emissions) gets the
 * same draws whatever came before it. */
static void
gst_augment_seed_sample (
    GstAugment *augment, const GstTrainSampleMeta *meta, GtRandom *rng)
{
  guint64 mix, stream;

  if (meta != NULL) {
    mix = meta->index;
    stream = gt_random_splitmix64 (&mix);
    mix = ((guint64)(guint32)meta->epoch << 32) | meta->emissions;
    stream ^= gt_random_splitmix64 (&mix);
  } else {
    mix = augment->unnamed_in++ ^ G_GUINT64_CONSTANT (0x6e6f6d657461);
    stream = gt_random_splitmix64 (&mix);
  }
  gt_random_init (
      rng, augment->rank_seed, GST_TRAIN_AUGMENT_RANDOM_STREAM ^ stream);
}

/* Draws from @rng what happens to a @width x @height image: the window of
 * the resize and the flip. */
static void
gst_augment_draw (GstAugment *augment, GtRandom *rng, gint width, gint height,
    GstTrainResizeWindow *window, gboolean *flip)
{
  const GstAugmentSettings *s = &augment->settings;
  GstTrainCropBox box;
  gboolean drawn;

  switch (s->crop) {
    case GST_AUGMENT_CROP_RANDOM_RESIZED:
      drawn = gst_train_augment_draw_crop (rng, width, height, &s->range, &box);
      GST_LOG_OBJECT (augment, "%dx%d: box %dx%d at (%d, %d)%s", width, height,
          box.width, box.height, box.left, box.top,
          drawn ? "" : " (central fallback)");
      gst_train_augment_crop_window (&box, s->width, s->height, window);
      break;
    case GST_AUGMENT_CROP_CENTER:
      gst_train_augment_center_window (
          width, height, s->resize_short, s->width, s->height, window);
      break;
    case GST_AUGMENT_CROP_RESIZE:
    default:
      gst_train_augment_resize_window (
          width, height, s->width, s->height, window);
      break;
  }
  /* Drawn whatever the probability, so that the crops of a seed do not
   * depend on it. */
  *flip = gst_train_augment_draw_flip (rng, s->flip);
}

/* Answers a region query (GST_TRAIN_REGION_QUERY) from the element linked
 * to @pad: the box of the sample's crop, the only pixels its resize reads
 * (torchvision crops first, then resizes the crop alone). Only for
 * samples with a sample meta, whose draws do not depend on what came
 * before (others are answered with no region: decode them whole). FALSE,
 * for the whole stream, with crop=center or resize and for a query that
 * did not come straight from upstream: an element between could repeat
 * (echo), reorder or change the images. */
gboolean
gst_augment_answer_region (GstAugment *augment, GstPad *pad, GstQuery *query)
{
  GstPad *origin, *peer;
  GstBuffer *sample;
  GstTrainSampleMeta *meta;
  GstTrainResizeWindow window;
  GstTrainRegion region;
  GtRandom rng;
  gboolean flip, direct;
  gint width, height;

  if (!gst_train_region_query_parse (query, &origin, &sample, &width, &height))
    return FALSE;
  peer = gst_pad_get_peer (pad);
  direct = peer != NULL && peer == origin;
  if (peer != NULL)
    gst_object_unref (peer);
  /* FALSE for what holds the whole stream (imagedec then asks no more);
   * answered without a region for what holds one sample: it is decoded
   * whole */
  if (!direct || augment->settings.crop != GST_AUGMENT_CROP_RANDOM_RESIZED)
    return FALSE;
  meta = gst_buffer_get_train_sample_meta (sample);
  if (meta == NULL || width <= 0 || height <= 0)
    return TRUE;

  gst_augment_seed_sample (augment, meta, &rng);
  gst_augment_draw (augment, &rng, width, height, &window, &flip);
  region.left = window.x.src_start;
  region.top = window.y.src_start;
  region.width = window.x.src_size;
  region.height = window.y.src_size;
  gst_train_region_query_set (query, &region);
  return TRUE;
}

/* Draws @job's window and flip. An image that is a region of a larger one
 * (GstTrainRegionMeta, from imagedec) is drawn at the larger size, as the
 * answer to the region query was, and its window moved into the region.
 * FALSE, with an error posted, when the region does not hold the window. */
gboolean
gst_augment_draw_buffer (GstAugment *augment, GstAugmentJob *job)
{
  GstTrainRegionMeta *rmeta = gst_buffer_get_train_region_meta (job->input);
  gint width = GST_VIDEO_FRAME_WIDTH (&job->in_frame);
  gint height = GST_VIDEO_FRAME_HEIGHT (&job->in_frame);
  GstTrainAxisWindow *x = &job->window.x, *y = &job->window.y;
  gchar *name;

  gst_augment_seed_sample (
      augment, gst_buffer_get_train_sample_meta (job->input), &augment->rng);
  if (rmeta == NULL) {
    gst_augment_draw (
        augment, &augment->rng, width, height, &job->window, &job->flip);
    return TRUE;
  }
  gst_augment_draw (augment, &augment->rng, rmeta->full_width,
      rmeta->full_height, &job->window, &job->flip);
  x->src_start -= rmeta->region.left;
  y->src_start -= rmeta->region.top;
  if (rmeta->region.width == width && rmeta->region.height == height
      && x->src_start >= 0 && x->src_start + x->src_size <= width
      && y->src_start >= 0 && y->src_start + y->src_size <= height)
    return TRUE;

  name = gst_train_describe_sample (job->input);
  GST_ELEMENT_ERROR (augment, STREAM, FORMAT,
      ("Sample %s is the %dx%d region at (%d, %d) of a %dx%d image, which "
       "does not hold its crop; set decode-region=false on the decoder.",
          name, rmeta->region.width, rmeta->region.height, rmeta->region.left,
          rmeta->region.top, rmeta->full_width, rmeta->full_height),
      ("buffer %dx%d, crop %dx%d at (%d, %d) of the region", width, height,
          x->src_size, y->src_size, x->src_start, y->src_start));
  g_free (name);
  return FALSE;
}
