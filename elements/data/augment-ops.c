/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* augment-ops.c: see augment-ops.h. */
#include "augment-ops.h"

#include <math.h>
#include <string.h>

/* RandomResizedCrop gives up after this many boxes that do not fit. */
#define CROP_TRIES 10

static gdouble
uniform (GtRandom *rng, gdouble low, gdouble high)
{
  return low + (high - low) * gt_random_double (rng);
}

/* Python's round(): to nearest, ties to even (nearbyint in the default
 * rounding mode), which is not C's round(). @value must fit a gint. */
static gint
python_round (gdouble value)
{
  return (gint)nearbyint (value);
}

gboolean
gst_train_augment_draw_crop (GtRandom *rng, gint width, gint height,
    const GstTrainCropRange *range, GstTrainCropBox *box)
{
  gdouble area = (gdouble)width * (gdouble)height;
  gdouble log_ratio_min = log (range->ratio_min);
  gdouble log_ratio_max = log (range->ratio_max);
  gdouble in_ratio;
  gint attempt, w, h;

  for (attempt = 0; attempt < CROP_TRIES; attempt++) {
    gdouble target_area =
        area * uniform (rng, range->scale_min, range->scale_max);
    gdouble aspect = exp (uniform (rng, log_ratio_min, log_ratio_max));
    /* Still doubles: a box far larger than the image must not overflow. */
    gdouble wd = nearbyint (sqrt (target_area * aspect));
    gdouble hd = nearbyint (sqrt (target_area / aspect));

    if (wd > 0 && wd <= width && hd > 0 && hd <= height) {
      w = (gint)wd;
      h = (gint)hd;
      box->top = (gint)gt_random_below (rng, (guint64)(height - h + 1));
      box->left = (gint)gt_random_below (rng, (guint64)(width - w + 1));
      box->height = h;
      box->width = w;
      return TRUE;
    }
  }

  /* The central fallback: the largest box of the nearest allowed ratio. */
  in_ratio = (gdouble)width / (gdouble)height;
  if (in_ratio < range->ratio_min) {
    /* w / ratio_min < height here, and h * ratio_max < width below. */
    w = width;
    h = python_round (w / range->ratio_min);
  } else if (in_ratio > range->ratio_max) {
    h = height;
    w = python_round (h * range->ratio_max);
  } else {
    w = width;
    h = height;
  }
  /* torchvision would hand an empty box to the resize and fail there (a
   * one-pixel-wide image with ratio-min 2, say): keep at least a pixel. */
  w = CLAMP (w, 1, width);
  h = CLAMP (h, 1, height);
  box->top = (height - h) / 2;
  box->left = (width - w) / 2;
  box->height = h;
  box->width = w;
  return FALSE;
}

gboolean
gst_train_augment_draw_flip (GtRandom *rng, gdouble probability)
{
  return gt_random_double (rng) < probability;
}

void
gst_train_augment_crop_window (const GstTrainCropBox *box, gint out_width,
    gint out_height, GstTrainResizeWindow *window)
{
  window->x =
      (GstTrainAxisWindow){ box->left, box->width, out_width, 0, out_width };
  window->y =
      (GstTrainAxisWindow){ box->top, box->height, out_height, 0, out_height };
}

/* CenterCrop along one axis of the resized image: an image smaller than the
 * crop is padded with (out - resized) / 2 black pixels before it, and a
 * larger one is cut at round((resized - out) / 2), ties to even. */
static void
center_axis (gint in_size, gint resized, gint out, GstTrainAxisWindow *axis)
{
  axis->src_start = 0;
  axis->src_size = in_size;
  axis->full_size = resized;
  axis->size = out;
  if (out > resized)
    axis->offset = -((out - resized) / 2);
  else
    axis->offset = python_round ((resized - out) / 2.0);
}

void
gst_train_augment_center_window (gint width, gint height, gint resize_short,
    gint out_width, gint out_height, GstTrainResizeWindow *window)
{
  gint short_side = MIN (width, height), long_side = MAX (width, height);
  /* torchvision's _compute_resized_output_size: the long side is
   * int(resize_short * long / short), a truncated true division. */
  gdouble exact_long =
      (gdouble)((gint64)resize_short * long_side) / (gdouble)short_side;
  gint new_long = (gint)MIN (exact_long, (gdouble)G_MAXINT);
  gint new_width = width <= height ? resize_short : new_long;
  gint new_height = width <= height ? new_long : resize_short;

  center_axis (width, MAX (new_width, 1), out_width, &window->x);
  center_axis (height, MAX (new_height, 1), out_height, &window->y);
}

void
gst_train_augment_resize_window (gint width, gint height, gint out_width,
    gint out_height, GstTrainResizeWindow *window)
{
  window->x = (GstTrainAxisWindow){ 0, width, out_width, 0, out_width };
  window->y = (GstTrainAxisWindow){ 0, height, out_height, 0, out_height };
}

/* ---- the filter ---- */

/* torch's bilinear antialiasing filter: a triangle of half-width 1. */
static inline gfloat
triangle (gfloat x)
{
  if (x < 0.0f)
    x = -x;
  if (x < 1.0f)
    return (gfloat)(1.0 - x);
  return 0.0f;
}

/* torch 1.13 (_compute_weights_aa in UpSampleKernel.cpp) computes these in
 * the tensor's type, float32, with some steps promoted to double; the casts
 * below repeat its steps so that our weights round as its weights do. On
 * photographs one output value in about 30,000 then differs from
 * torchvision's, by one level (tests/integration/augment_parity.py). */
static void
axis_filter_init (GstTrainAxisFilter *filter, const GstTrainAxisWindow *window)
{
  gfloat scale = (gfloat)window->src_size / (gfloat)window->full_size;
  /* Shrinking widens the triangle by the scale: that is the antialiasing. */
  gfloat support = scale >= 1.0f ? scale : 1.0f;
  gfloat invscale = scale >= 1.0f ? (gfloat)(1.0 / scale) : 1.0f;
  gint max_taps = (gint)ceilf (support) * 2 + 1;
  gint i;

  filter->size = window->size;
  filter->max_taps = max_taps;
  filter->span_begin = G_MAXINT;
  filter->span_end = 0;
  filter->first = g_new0 (gint, MAX (window->size, 1));
  filter->taps = g_new0 (gint, MAX (window->size, 1));
  filter->weights = g_new0 (gfloat, (gsize)MAX (window->size, 1) * max_taps);

  for (i = 0; i < window->size; i++) {
    gint out = window->offset + i;
    gfloat *weights = filter->weights + (gsize)i * max_taps;
    gfloat center, total = 0.0f;
    gint64 xmin, xsize, j;

    if (out < 0 || out >= window->full_size)
      continue; /* padding: no taps, black */

    center = (gfloat)(scale * (out + 0.5));
    xmin = MAX ((gint64)((gdouble)(center - support) + 0.5), 0);
    xsize = MIN ((gint64)((gdouble)(center + support) + 0.5),
                (gint64)window->src_size)
        - xmin;
    xsize = CLAMP (xsize, 0, max_taps);
    for (j = 0; j < xsize; j++) {
      gfloat distance = (gfloat)(j + xmin) - center;

      weights[j] = triangle ((gfloat)(((gdouble)distance + 0.5) * invscale));
      total += weights[j];
    }
    for (j = 0; j < xsize && total != 0.0f; j++)
      weights[j] /= total;
    filter->first[i] = window->src_start + (gint)xmin;
    filter->taps[i] = (gint)xsize;
    if (xsize > 0) {
      filter->span_begin = MIN (filter->span_begin, filter->first[i]);
      filter->span_end = MAX (filter->span_end, filter->first[i] + (gint)xsize);
    }
  }
  if (filter->span_begin > filter->span_end)
    filter->span_begin = filter->span_end = 0; /* all padding */
}

static void
axis_filter_clear (GstTrainAxisFilter *filter)
{
  g_clear_pointer (&filter->first, g_free);
  g_clear_pointer (&filter->taps, g_free);
  g_clear_pointer (&filter->weights, g_free);
}

void
gst_train_resample_plan_init (GstTrainResamplePlan *plan,
    const GstTrainResizeWindow *window, gboolean flip)
{
  axis_filter_init (&plan->x, &window->x);
  axis_filter_init (&plan->y, &window->y);
  plan->flip = flip;
}

void
gst_train_resample_plan_clear (GstTrainResamplePlan *plan)
{
  axis_filter_clear (&plan->x);
  axis_filter_clear (&plan->y);
}

void
gst_train_resample_scratch_clear (GstTrainResampleScratch *scratch)
{
  g_clear_pointer (&scratch->data, g_free);
  g_clear_pointer (&scratch->slots, g_free);
  scratch->capacity = 0;
  scratch->n_slots = 0;
}

/* ---- resampling ---- */

/* The passes below keep pixels as four floats, R, G, B and an unused
 * fourth: each tap is then one 4-wide multiply-add, which GCC vectorises at
 * -O2 when a loop body spells out the four lanes of restrict-qualified
 * pointers. Every channel still sees torch's float operations in torch's
 * order, so the lanes change the speed, not the result. */
#define LANES 4

/* Input pixels [@begin, @end) of one RGB row as floats. */
static void
row_to_float (const guint8 *src, gint begin, gint end, gfloat *restrict out)
{
  const guint8 *p = src + (gsize)begin * 3;
  gint x;

  for (x = begin; x < end; x++, p += 3, out += LANES) {
    out[0] = p[0];
    out[1] = p[1];
    out[2] = p[2];
    out[3] = 0.0f;
  }
}

/* One input row, already as floats from pixel fx->span_begin on, resized
 * along x into @out. */
static void
resample_row_x (const gfloat *restrict in, const GstTrainAxisFilter *fx,
    gfloat *restrict out)
{
  gint x, k;

  for (x = 0; x < fx->size; x++, out += LANES) {
    const gfloat *p = in + (gsize)(fx->first[x] - fx->span_begin) * LANES;
    const gfloat *w = fx->weights + (gsize)x * fx->max_taps;
    gint taps = fx->taps[x];
    gfloat r, g, b, a;

    if (taps == 0) {
      out[0] = out[1] = out[2] = out[3] = 0.0f;
      continue;
    }
    /* torch sums in this order: first tap, then each next one added. */
    r = p[0] * w[0];
    g = p[1] * w[0];
    b = p[2] * w[0];
    a = p[3] * w[0];
    for (k = 1; k < taps; k++) {
      const gfloat *q = p + k * LANES;

      r += q[0] * w[k];
      g += q[1] * w[k];
      b += q[2] * w[k];
      a += q[3] * w[k];
    }
    out[0] = r;
    out[1] = g;
    out[2] = b;
    out[3] = a;
  }
}

/* acc = row * weight (@first) or acc += row * weight, over @n floats, a
 * multiple of LANES. */
static void
accumulate_row (gfloat *restrict acc, const gfloat *restrict row, gfloat weight,
    gsize n, gboolean first)
{
  gsize i;

  if (first) {
    for (i = 0; i < n; i += LANES) {
      acc[i] = row[i] * weight;
      acc[i + 1] = row[i + 1] * weight;
      acc[i + 2] = row[i + 2] * weight;
      acc[i + 3] = row[i + 3] * weight;
    }
  } else {
    for (i = 0; i < n; i += LANES) {
      acc[i] += row[i] * weight;
      acc[i + 1] += row[i + 1] * weight;
      acc[i + 2] += row[i + 2] * weight;
      acc[i + 3] += row[i + 3] * weight;
    }
  }
}

/* Writes the finished row @acc (@width pixels of LANES floats) as RGB
 * bytes, mirrored when @flip (RandomHorizontalFlip comes after the resize).
 * torch.round() then a cast to uint8 rounds ties to even: adding and
 * taking away 2^23 rounds a float in [0, 2^23) that way in the default
 * rounding mode, four lanes at a time, without a libm call per sample. The
 * weights are positive and sum to one, so the values lie in [0, 255] but
 * for float error, which the clamp is for. */
static void
store_row (
    const gfloat *restrict acc, gint width, gboolean flip, guint8 *restrict out)
{
  const gfloat magic = 8388608.0f;
  gint x;

  for (x = 0; x < width; x++, acc += LANES) {
    guint8 *px = out + (gsize)(flip ? width - 1 - x : x) * 3;
    gint rounded[LANES];

    rounded[0] = (gint)((acc[0] + magic) - magic);
    rounded[1] = (gint)((acc[1] + magic) - magic);
    rounded[2] = (gint)((acc[2] + magic) - magic);
    rounded[3] = (gint)((acc[3] + magic) - magic);
    px[0] = (guint8)CLAMP (rounded[0], 0, 255);
    px[1] = (guint8)CLAMP (rounded[1], 0, 255);
    px[2] = (guint8)CLAMP (rounded[2], 0, 255);
  }
}

void
gst_train_resample_rows (const GstTrainResamplePlan *plan, const guint8 *src,
    gsize src_stride, guint8 *dst, gsize dst_stride, gint row_begin,
    gint row_end, GstTrainResampleScratch *scratch)
{
  const GstTrainAxisFilter *fx = &plan->x, *fy = &plan->y;
  gsize row_floats = (gsize)fx->size * LANES;
  gsize in_floats = (gsize)(fx->span_end - fx->span_begin) * LANES;
  /* The width-resized input rows live in a ring of as many rows as the
   * widest vertical filter, each slot remembering which input row it holds,
   * then come the accumulator row and the input row as floats: a few tens
   * of kilobytes that stay in cache, where a whole intermediate image would
   * not. */
  gint ring = fy->max_taps;
  gsize need = (ring + 1) * row_floats + in_floats;
  gfloat *acc, *in;
  gint *slot_rows;
  gint y, k, slot;

  if (scratch->capacity < need) {
    g_free (scratch->data);
    scratch->data = g_new (gfloat, need);
    scratch->capacity = need;
  }
  if (scratch->n_slots < ring) {
    g_free (scratch->slots);
    scratch->slots = g_new (gint, ring);
    scratch->n_slots = ring;
  }
  acc = scratch->data + ring * row_floats;
  in = acc + row_floats;
  slot_rows = scratch->slots;
  for (slot = 0; slot < ring; slot++)
    slot_rows[slot] = -1;

  for (y = row_begin; y < row_end; y++) {
    guint8 *out = dst + (gsize)y * dst_stride;
    const gfloat *w = fy->weights + (gsize)y * fy->max_taps;
    gint first = fy->first[y], taps = fy->taps[y];

    if (taps == 0) {
      memset (out, 0, (gsize)fx->size * 3);
      continue;
    }
    for (k = 0; k < taps; k++) {
      gint row = first + k;

      slot = row % ring;
      if (slot_rows[slot] != row) {
        row_to_float (
            src + (gsize)row * src_stride, fx->span_begin, fx->span_end, in);
        resample_row_x (in, fx, scratch->data + (gsize)slot * row_floats);
        slot_rows[slot] = row;
      }
    }
    for (k = 0; k < taps; k++)
      accumulate_row (acc,
          scratch->data + (gsize)((first + k) % ring) * row_floats, w[k],
          row_floats, k == 0);

    store_row (acc, fx->size, plan->flip, out);
  }
}
