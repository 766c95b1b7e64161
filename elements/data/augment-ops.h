/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* augment-ops.h: the arithmetic behind the augment element, without
 * GStreamer: torchvision's crop boxes and its antialiased bilinear resize.
 *
 * The crop rules follow torchvision 0.14 (RandomResizedCrop.get_params,
 * Resize + CenterCrop) and the resampler follows torch 1.13's
 * interpolate(mode="bilinear", align_corners=False, antialias=True) on
 * float32, which is what torchvision's F.resized_crop(..., antialias=True)
 * runs on a uint8 image: a separable triangle filter, widened by the
 * downscale factor when shrinking, width first, then height, rounded half
 * to even at the end. GLib only, so that tests and tools can call it
 * directly.
 */
#ifndef __GST_TRAIN_AUGMENT_OPS_H__
#define __GST_TRAIN_AUGMENT_OPS_H__

#include <glib.h>

#include "gt-random.h"

G_BEGIN_DECLS

/* A rectangle of the input image, in pixels. */
typedef struct
{
  gint top;
  gint left;
  gint height;
  gint width;
} GstTrainCropBox;

/* The ranges RandomResizedCrop draws from: the box's area as a fraction of
 * the image's, and its aspect ratio (width / height). */
typedef struct
{
  gdouble scale_min;
  gdouble scale_max;
  gdouble ratio_min;
  gdouble ratio_max;
} GstTrainCropRange;

/* The generator stream the augment element draws from (with its seed
 * property): one seed given to datasetsrc, whose streams are epochs, and to
 * augment gives unrelated numbers. Per image the element draws the crop box
 * (crop=random-resized only), then the flip. */
#define GST_TRAIN_AUGMENT_RANDOM_STREAM G_GUINT64_CONSTANT (0x6175676d656e74)

/* Draws a crop box of a @width x @height image from @rng exactly as
 * torchvision's RandomResizedCrop.get_params does (ten tries, then the
 * central fallback). Returns FALSE when the fallback was taken. */
gboolean gst_train_augment_draw_crop (GtRandom *rng, gint width, gint height,
    const GstTrainCropRange *range, GstTrainCropBox *box);

/* Draws whether to mirror an image, TRUE with @probability; always takes
 * one number from @rng, so that the probability does not shift later
 * draws. */
gboolean gst_train_augment_draw_flip (GtRandom *rng, gdouble probability);

/* One axis of a resize, and the part of its result that is kept: the input
 * pixels [src_start, src_start + src_size) are resized to @full_size
 * pixels, of which [offset, offset + size) are the output. Output pixels
 * outside [0, full_size) are black, as torchvision pads a centre crop that
 * is larger than the image. */
typedef struct
{
  gint src_start;
  gint src_size;
  gint full_size;
  gint offset;
  gint size;
} GstTrainAxisWindow;

/* The two axes of one output image. */
typedef struct
{
  GstTrainAxisWindow x;
  GstTrainAxisWindow y;
} GstTrainResizeWindow;

/* Resize the @box of the input to @out_width x @out_height (torchvision's
 * F.resized_crop). */
void gst_train_augment_crop_window (const GstTrainCropBox *box, gint out_width,
    gint out_height, GstTrainResizeWindow *window);

/* torchvision's Resize(@resize_short) followed by CenterCrop((@out_height,
 * @out_width)) on a @width x @height image, as the part of the resized
 * image that is kept. */
void gst_train_augment_center_window (gint width, gint height,
    gint resize_short, gint out_width, gint out_height,
    GstTrainResizeWindow *window);

/* The whole @width x @height image resized to @out_width x @out_height. */
void gst_train_augment_resize_window (gint width, gint height, gint out_width,
    gint out_height, GstTrainResizeWindow *window);

/* The filter of one axis: for output pixel i, the input pixels first[i] ..
 * first[i] + taps[i] - 1 weighted by weights[i * max_taps ...]; all of
 * them lie in [span_begin, span_end). */
typedef struct
{
  gint size;
  gint max_taps;
  gint *first;
  gint *taps;
  gfloat *weights;
  gint span_begin;
  gint span_end;
} GstTrainAxisFilter;

/* Everything needed to resample one image: both axis filters and whether
 * the result is mirrored left to right. */
typedef struct
{
  GstTrainAxisFilter x;
  GstTrainAxisFilter y;
  gboolean flip;
} GstTrainResamplePlan;

/* Computes the filters for @window; free with
 * gst_train_resample_plan_clear(). */
void gst_train_resample_plan_init (GstTrainResamplePlan *plan,
    const GstTrainResizeWindow *window, gboolean flip);
void gst_train_resample_plan_clear (GstTrainResamplePlan *plan);

/* Float rows (and which input row each holds) that a resampling thread
 * keeps between images; zero-initialise, free with
 * gst_train_resample_scratch_clear(). */
typedef struct
{
  gfloat *data;
  gsize capacity;
  gint *slots;
  gint n_slots;
} GstTrainResampleScratch;

void gst_train_resample_scratch_clear (GstTrainResampleScratch *scratch);

/* Writes output rows [@row_begin, @row_end) of @plan from the packed RGB
 * image @src into the packed RGB image @dst. Rows are independent, so
 * threads may each run a share of the rows; the result does not depend on
 * how the rows are shared. */
void gst_train_resample_rows (const GstTrainResamplePlan *plan,
    const guint8 *src, gsize src_stride, guint8 *dst, gsize dst_stride,
    gint row_begin, gint row_end, GstTrainResampleScratch *scratch);

G_END_DECLS

#endif /* __GST_TRAIN_AUGMENT_OPS_H__ */
