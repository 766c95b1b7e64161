/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* augment.c: tests of the augment element and of its arithmetic
 * (augment-ops.h): the crop boxes against the distribution torchvision's
 * rule implies, the resampler against closed forms, and the element's
 * caps, metas, errors, order and determinism. Pixels against torchvision
 * itself are tests/integration/augment_parity.py. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <math.h>
#include <string.h>

#include "augment-ops.h"
#include "check-main.h"
#include "fixtures.h"
#include "jpeg-decode.h"
#include "train-common.h"
#include "train-meta.h"

static const GstTrainCropRange default_range = { 0.08, 1.0, 3.0 / 4.0,
  4.0 / 3.0 };

/* ---- crop boxes ---- */

/* What torchvision's rule implies for one image: the probability that a
 * try fits, and the moments of the accepted boxes' area fraction and log
 * aspect ratio, integrated on a grid over the two uniform draws with the
 * same rounding and the same acceptance test. */
typedef struct
{
  gdouble p_accept;
  gdouble area_mean, area_var, area_m4;
  gdouble log_aspect_mean, log_aspect_var, log_aspect_m4;
} CropMoments;

static void
expected_crop_moments (
    gint width, gint height, const GstTrainCropRange *range, CropMoments *m)
{
  const gint n = 2000;
  gdouble area = (gdouble)width * height;
  gdouble log_min = log (range->ratio_min), log_max = log (range->ratio_max);
  gdouble *aspects = g_new (gdouble, n);
  gdouble s_area[5] = { 0 }, s_log[5] = { 0 };
  gdouble accepted = 0;
  gint i, j, k;

  for (j = 0; j < n; j++)
    aspects[j] = exp (log_min + (log_max - log_min) * (j + 0.5) / n);
  for (i = 0; i < n; i++) {
    gdouble target = area
        * (range->scale_min
            + (range->scale_max - range->scale_min) * (i + 0.5) / n);

    for (j = 0; j < n; j++) {
      gdouble w = nearbyint (sqrt (target * aspects[j]));
      gdouble h = nearbyint (sqrt (target / aspects[j]));
      gdouble a, l;

      if (w <= 0 || w > width || h <= 0 || h > height)
        continue;
      a = w * h / area;
      l = log (w / h);
      accepted++;
      for (k = 1; k <= 4; k++) {
        s_area[k] += pow (a, k);
        s_log[k] += pow (l, k);
      }
    }
  }
  g_free (aspects);
  m->p_accept = accepted / ((gdouble)n * n);
  /* Central moments from raw ones. */
  {
    gdouble a1 = s_area[1] / accepted, a2 = s_area[2] / accepted;
    gdouble a3 = s_area[3] / accepted, a4 = s_area[4] / accepted;
    gdouble l1 = s_log[1] / accepted, l2 = s_log[2] / accepted;
    gdouble l3 = s_log[3] / accepted, l4 = s_log[4] / accepted;

    m->area_mean = a1;
    m->area_var = a2 - a1 * a1;
    m->area_m4 = a4 - 4 * a3 * a1 + 6 * a2 * a1 * a1 - 3 * pow (a1, 4);
    m->log_aspect_mean = l1;
    m->log_aspect_var = l2 - l1 * l1;
    m->log_aspect_m4 = l4 - 4 * l3 * l1 + 6 * l2 * l1 * l1 - 3 * pow (l1, 4);
  }
}

/* Fails unless the sample mean and variance of @values agree with @mean
 * and @var within @sigmas standard errors (of the mean: sqrt(var/n); of
 * the variance: sqrt((m4 - var^2)/n)). */
static void
assert_moments (const gchar *what, const gdouble *values, guint n, gdouble mean,
    gdouble var, gdouble m4, gdouble sigmas)
{
  gdouble sum = 0, sum2 = 0, sample_mean, sample_var;
  gdouble se_mean = sqrt (var / n), se_var = sqrt ((m4 - var * var) / n);
  guint i;

  for (i = 0; i < n; i++)
    sum += values[i];
  sample_mean = sum / n;
  for (i = 0; i < n; i++)
    sum2 += (values[i] - sample_mean) * (values[i] - sample_mean);
  sample_var = sum2 / (n - 1);
  GST_INFO ("%s: mean %.5f (expected %.5f +- %.5f), variance %.6f (expected "
            "%.6f +- %.6f)",
      what, sample_mean, mean, se_mean, sample_var, var, se_var);
  fail_unless (fabs (sample_mean - mean) < sigmas * se_mean,
      "%s: mean %.5f, expected %.5f (standard error %.5f)", what, sample_mean,
      mean, se_mean);
  fail_unless (fabs (sample_var - var) < sigmas * se_var,
      "%s: variance %.6f, expected %.6f (standard error %.6f)", what,
      sample_var, var, se_var);
}

GST_START_TEST (test_crop_boxes_follow_torchvision_rule)
{
  const guint n = 20000;
  const gint width = 500, height = 375;
  gdouble *areas = g_new (gdouble, n), *log_aspects = g_new (gdouble, n);
  gdouble *tops = g_new (gdouble, n), *lefts = g_new (gdouble, n);
  GtRandom rng;
  CropMoments m;
  guint i, fallbacks = 0, n_tops = 0, n_lefts = 0;

  expected_crop_moments (width, height, &default_range, &m);
  gt_random_init (&rng, 42, 0);
  for (i = 0; i < n; i++) {
    GstTrainCropBox box;

    if (!gst_train_augment_draw_crop (
            &rng, width, height, &default_range, &box))
      fallbacks++;
    fail_unless (box.width >= 1 && box.height >= 1);
    fail_unless (box.left >= 0 && box.left + box.width <= width);
    fail_unless (box.top >= 0 && box.top + box.height <= height);
    areas[i] = (gdouble)box.width * box.height / (width * height);
    log_aspects[i] = log ((gdouble)box.width / box.height);
    /* The position is uniform on 0 .. height - h: standardised, mean 0 and
     * variance 1 (where there is room to move). */
    if (box.height < height)
      tops[n_tops++] = (box.top - (height - box.height) / 2.0)
          / sqrt ((pow (height - box.height + 1, 2) - 1) / 12.0);
    if (box.width < width)
      lefts[n_lefts++] = (box.left - (width - box.width) / 2.0)
          / sqrt ((pow (width - box.width + 1, 2) - 1) / 12.0);
  }
  /* Ten tries that each fit with probability p_accept (0.74): the fallback
   * is (1 - p)^10, about 1.3e-6 here, so 0.03 expected in 20,000. */
  GST_INFO ("500x375: a try fits with probability %.4f", m.p_accept);
  fail_unless (pow (1 - m.p_accept, 10) * n < 0.1);
  fail_unless (fallbacks <= 2, "%u fallbacks", fallbacks);
  /* The drawn fraction is uniform on [0.08, 1] (mean 0.54), but above 0.56
   * boxes of extreme ratio do not fit and are drawn again: the accepted
   * mean is lower, 0.433. */
  fail_unless (m.area_mean > 0.42 && m.area_mean < 0.45, "%f", m.area_mean);
  assert_moments (
      "area fraction", areas, n, m.area_mean, m.area_var, m.area_m4, 4.5);
  assert_moments ("log aspect", log_aspects, n, m.log_aspect_mean,
      m.log_aspect_var, m.log_aspect_m4, 4.5);
  /* Standardised discrete uniform: mean 0, variance 1, fourth moment
   * below 1.8. */
  fail_unless (n_tops > n / 2 && n_lefts > n / 2);
  assert_moments ("top", tops, n_tops, 0.0, 1.0, 1.8, 4.5);
  assert_moments ("left", lefts, n_lefts, 0.0, 1.0, 1.8, 4.5);
  g_free (areas);
  g_free (log_aspects);
  g_free (tops);
  g_free (lefts);
}

GST_END_TEST;

GST_START_TEST (test_crop_fallback)
{
  const guint n = 20000;
  GtRandom rng;
  CropMoments m;
  guint i, fallbacks = 0;
  gdouble expected, se;

  gt_random_init (&rng, 7, 0);
  /* 400x100 (ratio 4): a box fits only when area / aspect <= 1/4 of the
   * image, so many draws use all ten tries. The fallback keeps the full
   * height at the largest allowed ratio: 133x100 in the middle. */
  expected_crop_moments (400, 100, &default_range, &m);
  for (i = 0; i < n; i++) {
    GstTrainCropBox box;

    if (!gst_train_augment_draw_crop (&rng, 400, 100, &default_range, &box)) {
      fallbacks++;
      fail_unless_equals_int (box.height, 100);
      fail_unless_equals_int (box.width, 133);
      fail_unless_equals_int (box.top, 0);
      fail_unless_equals_int (box.left, 133);
    }
  }
  expected = pow (1 - m.p_accept, 10);
  se = sqrt (expected * (1 - expected) / n);
  GST_INFO ("400x100: fallback rate %.4f, expected %.4f +- %.4f",
      (gdouble)fallbacks / n, expected, se);
  fail_unless (expected > 0.05 && expected < 0.9);
  fail_unless (fabs ((gdouble)fallbacks / n - expected) < 4.5 * se,
      "fallback rate %.4f, expected %.4f", (gdouble)fallbacks / n, expected);

  /* 1000x50: no try can fit (h <= 50 needs area / aspect <= 0.05); the
   * fallback is 67x50 (round(50 * 4/3)) at (466, 0). */
  for (i = 0; i < 100; i++) {
    GstTrainCropBox box;

    fail_if (
        gst_train_augment_draw_crop (&rng, 1000, 50, &default_range, &box));
    fail_unless (
        box.width == 67 && box.height == 50 && box.left == 466 && box.top == 0);
  }
  /* 50x1000 (ratio 1/20 < 3/4): full width, h = round(50 / (3/4)) = 67. */
  {
    GstTrainCropBox box;

    fail_if (
        gst_train_augment_draw_crop (&rng, 50, 1000, &default_range, &box));
    fail_unless (
        box.width == 50 && box.height == 67 && box.left == 0 && box.top == 466);
  }
  /* A square image at scale 1: a try fits only at ratio 1 +- 0.5%, and the
   * fallback (ratio 1 is allowed) takes the whole image, as the tries do. */
  {
    GstTrainCropRange whole = { 1.0, 1.0, 3.0 / 4.0, 4.0 / 3.0 };

    fallbacks = 0;
    for (i = 0; i < 1000; i++) {
      GstTrainCropBox box;

      if (!gst_train_augment_draw_crop (&rng, 100, 100, &whole, &box))
        fallbacks++;
      fail_unless (box.width == 100 && box.height == 100 && box.left == 0
          && box.top == 0);
    }
    fail_unless (fallbacks > 500 && fallbacks < 900, "%u", fallbacks);
  }
}

GST_END_TEST;

/* Whether torchvision's rule could have given @box with an aspect ratio in
 * @range: w = round(sqrt(t * a)) and h = round(sqrt(t / a)) put the drawn
 * ratio a between (w - 1/2) / (h + 1/2) and (w + 1/2) / (h - 1/2). */
static gboolean
box_ratio_in_range (const GstTrainCropBox *box, const GstTrainCropRange *range)
{
  gdouble lowest = (box->width - 0.5) / (box->height + 0.5);
  gdouble highest = (box->width + 0.5) / (box->height - 0.5);

  return highest >= range->ratio_min && lowest <= range->ratio_max;
}

/* torchvision's central fallback for a @width x @height image: the largest
 * centred box of the allowed ratio nearest the image's. */
static GstTrainCropBox
fallback_box (gint width, gint height, const GstTrainCropRange *range)
{
  gdouble in_ratio = (gdouble)width / height;
  gint w = width, h = height;

  if (in_ratio < range->ratio_min)
    h = (gint)nearbyint (width / range->ratio_min);
  else if (in_ratio > range->ratio_max)
    w = (gint)nearbyint (height * range->ratio_max);
  return (GstTrainCropBox){ (height - h) / 2, (width - w) / 2, h, w };
}

/* The default ratio range, 3/4 .. 4/3, is symmetric in log: a box drawn
 * with its width and height swapped has the same distribution of aspect
 * ratios there. These ranges are not: 1 .. 2 gives only boxes wider than
 * tall, 0.5 .. 0.8 only boxes taller than wide. */
GST_START_TEST (test_crop_boxes_asymmetric_ratio)
{
  const GstTrainCropRange ranges[] = { { 0.08, 1.0, 1.0, 2.0 },
    { 0.08, 1.0, 0.5, 0.8 } };
  /* Landscape, portrait, and a 4:1 strip where many draws fall back. */
  const gint sizes[][2] = { { 500, 375 }, { 375, 500 }, { 400, 100 } };
  const guint n = 20000;
  gdouble *areas = g_new (gdouble, n), *log_aspects = g_new (gdouble, n);
  GtRandom rng;
  guint r, s, i;

  gt_random_init (&rng, 99, 0);
  for (r = 0; r < G_N_ELEMENTS (ranges); r++) {
    const GstTrainCropRange *range = &ranges[r];

    for (s = 0; s < G_N_ELEMENTS (sizes); s++) {
      gint width = sizes[s][0], height = sizes[s][1];
      GstTrainCropBox fallback = fallback_box (width, height, range);
      gchar *what = g_strdup_printf ("%dx%d, ratio %g .. %g", width, height,
          range->ratio_min, range->ratio_max);
      gchar *what_area = g_strdup_printf ("%s: area fraction", what);
      gchar *what_aspect = g_strdup_printf ("%s: log aspect", what);
      guint drawn = 0, fallbacks = 0;
      gdouble expected, tolerance;
      CropMoments m;

      expected_crop_moments (width, height, range, &m);
      for (i = 0; i < n; i++) {
        GstTrainCropBox box;

        if (!gst_train_augment_draw_crop (&rng, width, height, range, &box)) {
          fallbacks++;
          fail_unless (box.width == fallback.width
                  && box.height == fallback.height && box.left == fallback.left
                  && box.top == fallback.top,
              "%s: fallback box %dx%d at (%d, %d), torchvision's is %dx%d at "
              "(%d, %d)",
              what, box.width, box.height, box.left, box.top, fallback.width,
              fallback.height, fallback.left, fallback.top);
          continue;
        }
        fail_unless (box.width >= 1 && box.height >= 1);
        fail_unless (box.left >= 0 && box.left + box.width <= width);
        fail_unless (box.top >= 0 && box.top + box.height <= height);
        fail_unless (box_ratio_in_range (&box, range),
            "%s: box %dx%d (width / height %.3f) is outside the ratio range",
            what, box.width, box.height, (gdouble)box.width / box.height);
        areas[drawn] = (gdouble)box.width * box.height / (width * height);
        log_aspects[drawn] = log ((gdouble)box.width / box.height);
        drawn++;
      }
      /* Ten tries that each fit with probability p_accept: a count of
       * fallbacks within 4.5 standard deviations (and one, for the cases
       * where it is about 0). */
      expected = pow (1 - m.p_accept, 10);
      tolerance = 4.5 * sqrt (n * expected * (1 - expected)) + 1;
      GST_INFO ("%s: %u fallbacks, expected %.1f +- %.1f", what, fallbacks,
          n * expected, tolerance);
      fail_unless (fabs (fallbacks - n * expected) < tolerance,
          "%s: %u fallbacks, expected %.1f", what, fallbacks, n * expected);
      fail_unless (drawn > n / 4, "%s: only %u boxes drawn", what, drawn);
      assert_moments (
          what_area, areas, drawn, m.area_mean, m.area_var, m.area_m4, 4.5);
      assert_moments (what_aspect, log_aspects, drawn, m.log_aspect_mean,
          m.log_aspect_var, m.log_aspect_m4, 4.5);
      g_free (what);
      g_free (what_area);
      g_free (what_aspect);
    }
  }
  g_free (areas);
  g_free (log_aspects);
}

GST_END_TEST;

/* ---- windows ---- */

GST_START_TEST (test_center_and_resize_windows)
{
  GstTrainResizeWindow w;

  /* 375x500 portrait: short side 375 -> 256, long int(256 * 500 / 375) =
   * 341; the 224 crop starts at round(32 / 2) = 16 and round(117 / 2) =
   * round(58.5) = 58 (ties to even). */
  gst_train_augment_center_window (375, 500, 256, 224, 224, &w);
  fail_unless_equals_int (w.x.full_size, 256);
  fail_unless_equals_int (w.y.full_size, 341);
  fail_unless_equals_int (w.x.offset, 16);
  fail_unless_equals_int (w.y.offset, 58);
  fail_unless_equals_int (w.x.src_size, 375);
  fail_unless_equals_int (w.y.src_size, 500);
  /* 259 wide: round(35 / 2) = round(17.5) = 18. */
  gst_train_augment_center_window (259, 256, 256, 224, 224, &w);
  fail_unless_equals_int (w.x.full_size, 259);
  fail_unless_equals_int (w.x.offset, 18);
  fail_unless_equals_int (w.y.offset, 16);
  /* A resized image smaller than the crop is padded: 24 columns and 124
   * rows short, so it starts 12 and 62 pixels in. */
  gst_train_augment_center_window (400, 200, 100, 224, 224, &w);
  fail_unless_equals_int (w.x.full_size, 200);
  fail_unless_equals_int (w.y.full_size, 100);
  fail_unless_equals_int (w.x.offset, -12);
  fail_unless_equals_int (w.y.offset, -62);

  gst_train_augment_resize_window (640, 480, 224, 200, &w);
  fail_unless (w.x.src_start == 0 && w.x.src_size == 640 && w.x.full_size == 224
      && w.x.offset == 0 && w.x.size == 224);
  fail_unless (w.y.src_start == 0 && w.y.src_size == 480 && w.y.full_size == 200
      && w.y.offset == 0 && w.y.size == 200);
}

GST_END_TEST;

/* ---- resampling ---- */

/* A packed RGB test picture with detail at every scale. */
static guint8 *
make_picture (gint width, gint height, gsize stride, guint seed)
{
  guint8 *pixels = g_malloc0 (stride * height);
  guint32 state = seed * 2654435761u + 1;
  gint x, y, c;

  for (y = 0; y < height; y++)
    for (x = 0; x < width; x++)
      for (c = 0; c < 3; c++) {
        state = state * 1103515245u + 12345;
        pixels[y * stride + x * 3 + c] =
            (guint8)((x * 7 + y * 3 + c * 50 + ((state >> 16) % 64)) & 0xff);
      }
  return pixels;
}

static guint8 *
resample (const guint8 *src, gsize src_stride,
    const GstTrainResizeWindow *window, gboolean flip)
{
  GstTrainResamplePlan plan;
  GstTrainResampleScratch scratch = { 0 };
  guint8 *out = g_malloc ((gsize)window->x.size * 3 * window->y.size);

  gst_train_resample_plan_init (&plan, window, flip);
  gst_train_resample_rows (&plan, src, src_stride, out,
      (gsize)window->x.size * 3, 0, window->y.size, &scratch);
  gst_train_resample_plan_clear (&plan);
  gst_train_resample_scratch_clear (&scratch);
  return out;
}

/* Output pixel i of a factor-2 shrink: torch's triangle of half-width 2
 * centred at 2i + 1 gives the input pixels 2i - 1 .. 2i + 2 the weights
 * 1, 3, 3, 1 (/ 8), renormalised where they fall off the edge. */
static void
shrink2_weights (gint i, gint in_size, gint *first, gdouble *weights, gint *n)
{
  static const gdouble kernel[4] = { 1, 3, 3, 1 };
  gdouble total = 0;
  gint k;

  *n = 0;
  *first = MAX (2 * i - 1, 0);
  for (k = 0; k < 4; k++) {
    gint p = 2 * i - 1 + k;

    if (p < 0 || p >= in_size)
      continue;
    weights[(*n)++] = kernel[k];
    total += kernel[k];
  }
  for (k = 0; k < *n; k++)
    weights[k] /= total;
}

GST_START_TEST (test_resampler_closed_forms)
{
  const gint width = 64, height = 48;
  gsize stride = width * 3;
  guint8 *src = make_picture (width, height, stride, 3);
  GstTrainCropBox box = { 5, 7, 20, 30 };
  GstTrainResizeWindow w;
  guint8 *out, *flipped;
  gint x, y, c;

  /* A box resized to its own size is copied. */
  gst_train_augment_crop_window (&box, 30, 20, &w);
  out = resample (src, stride, &w, FALSE);
  for (y = 0; y < 20; y++)
    fail_unless (memcmp (out + y * 90, src + (y + 5) * stride + 7 * 3, 90) == 0,
        "row %d", y);
  /* Flipped, it is mirrored. */
  flipped = resample (src, stride, &w, TRUE);
  for (y = 0; y < 20; y++)
    for (x = 0; x < 30; x++)
      for (c = 0; c < 3; c++)
        fail_unless_equals_int (
            flipped[y * 90 + x * 3 + c], out[y * 90 + (29 - x) * 3 + c]);
  g_free (out);
  g_free (flipped);

  /* Halving the whole picture: the separable 1-3-3-1 filter. */
  gst_train_augment_resize_window (width, height, width / 2, height / 2, &w);
  out = resample (src, stride, &w, FALSE);
  for (y = 0; y < height / 2; y++)
    for (x = 0; x < width / 2; x++)
      for (c = 0; c < 3; c++) {
        gdouble wx[4], wy[4], sum = 0;
        gint fx, fy, nx, ny, i, j;

        shrink2_weights (x, width, &fx, wx, &nx);
        shrink2_weights (y, height, &fy, wy, &ny);
        for (j = 0; j < ny; j++)
          for (i = 0; i < nx; i++)
            sum += wy[j] * wx[i] * src[(fy + j) * stride + (fx + i) * 3 + c];
        /* Float rounding may tip a value near .5 either way. */
        fail_unless (fabs (out[(y * (width / 2) + x) * 3 + c] - sum) <= 0.51,
            "(%d, %d, %d): %u, expected %.3f", x, y, c,
            out[(y * (width / 2) + x) * 3 + c], sum);
      }
  g_free (out);

  /* Doubling: plain bilinear, output pixel i at input (i + 0.5) / 2 - 0.5,
   * clamped at the edges. */
  gst_train_augment_resize_window (width, height, width * 2, height * 2, &w);
  out = resample (src, stride, &w, FALSE);
  for (y = 0; y < height * 2; y++)
    for (x = 0; x < width * 2; x++)
      for (c = 0; c < 3; c++) {
        gdouble sx = CLAMP ((x + 0.5) / 2 - 0.5, 0, width - 1);
        gdouble sy = CLAMP ((y + 0.5) / 2 - 0.5, 0, height - 1);
        gint x0 = (gint)sx, y0 = (gint)sy;
        gint x1 = MIN (x0 + 1, width - 1), y1 = MIN (y0 + 1, height - 1);
        gdouble ax = sx - x0, ay = sy - y0;
        gdouble v = (1 - ay)
                * ((1 - ax) * src[y0 * stride + x0 * 3 + c]
                    + ax * src[y0 * stride + x1 * 3 + c])
            + ay
                * ((1 - ax) * src[y1 * stride + x0 * 3 + c]
                    + ax * src[y1 * stride + x1 * 3 + c]);

        fail_unless (fabs (out[(y * width * 2 + x) * 3 + c] - v) <= 0.51,
            "(%d, %d, %d): %u, expected %.3f", x, y, c,
            out[(y * width * 2 + x) * 3 + c], v);
      }
  g_free (out);
  g_free (src);
}

GST_END_TEST;

GST_START_TEST (test_resampler_rows_split_and_padding)
{
  const gint width = 301, height = 203;
  gsize stride = GST_ROUND_UP_4 (width * 3);
  guint8 *src = make_picture (width, height, stride, 9);
  GstTrainResizeWindow w;
  GstTrainResamplePlan plan;
  GstTrainResampleScratch scratch = { 0 };
  guint8 *whole, *split;
  gsize out_stride = 100 * 3;
  gint splits[] = { 0, 1, 2, 17, 18, 50, 99, 100 };
  guint i;
  gint y, x;

  /* The scratch first holds rows of another resize, with a wider filter. */
  gst_train_augment_resize_window (width, height, 20, 10, &w);
  split = g_malloc0 (out_stride * 100);
  gst_train_resample_plan_init (&plan, &w, FALSE);
  gst_train_resample_rows (&plan, src, stride, split, 60, 0, 10, &scratch);
  gst_train_resample_plan_clear (&plan);

  /* Any split of the rows gives the same bytes. */
  gst_train_augment_center_window (width, height, 90, 100, 100, &w);
  whole = resample (src, stride, &w, TRUE);
  gst_train_resample_plan_init (&plan, &w, TRUE);
  for (i = 0; i + 1 < G_N_ELEMENTS (splits); i++)
    gst_train_resample_rows (&plan, src, stride, split, out_stride, splits[i],
        splits[i + 1], &scratch);
  fail_unless (memcmp (whole, split, out_stride * 100) == 0);
  gst_train_resample_plan_clear (&plan);

  /* The short side 203 -> 90 makes a 133x90 image (int(90 * 301 / 203)):
   * a 100x100 centre crop is padded with 5 black rows above and 5 below,
   * and cut at round(33 / 2) = 16 across. */
  fail_unless_equals_int (w.x.full_size, 133);
  fail_unless_equals_int (w.y.full_size, 90);
  fail_unless_equals_int (w.y.offset, -5);
  fail_unless_equals_int (w.x.offset, 16);
  for (y = 0; y < 100; y++) {
    gboolean black = TRUE;

    for (x = 0; x < 300; x++)
      black = black && whole[y * out_stride + x] == 0;
    fail_unless (black == (y < 5 || y >= 95), "row %d", y);
  }
  gst_train_resample_scratch_clear (&scratch);
  g_free (whole);
  g_free (split);
  g_free (src);
}

GST_END_TEST;

/* ---- the element, with a harness ---- */

/* A buffer holding make_picture() in GStreamer's default RGB layout (rows
 * padded to 4 bytes), with a sample meta. */
static GstBuffer *
picture_buffer (gint width, gint height, guint seed, guint64 index)
{
  gsize stride = GST_ROUND_UP_4 (width * 3);
  guint8 *pixels = make_picture (width, height, stride, seed);
  GstBuffer *buffer = gst_buffer_new_wrapped (pixels, stride * height);

  gst_buffer_add_train_sample_meta (buffer, (gint)index % 3, index, 0, NULL);
  GST_BUFFER_PTS (buffer) = index * GST_SECOND;
  return buffer;
}

static void
set_rgb_caps (GstHarness *h, gint width, gint height)
{
  gchar *caps = g_strdup_printf (
      "video/x-raw, format=RGB, width=%d, height=%d, framerate=0/1", width,
      height);

  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
}

/* What augment should make of @buffer with @window and @flip, from the ops
 * directly, in the output's layout. */
static guint8 *
expected_output (GstBuffer *buffer, gint width, gint height,
    const GstTrainResizeWindow *window, gboolean flip)
{
  GstMapInfo map;
  guint8 *out;

  gst_buffer_map (buffer, &map, GST_MAP_READ);
  out = resample (map.data, GST_ROUND_UP_4 (width * 3), window, flip);
  gst_buffer_unmap (buffer, &map);
  return out;
}

/* Fails unless @buffer, an RGB image in GStreamer's default layout (rows
 * padded to 4 bytes), holds the packed @expected and zero padding. */
static void
assert_buffer_equals (
    GstBuffer *buffer, const guint8 *expected, gint width, gint height)
{
  gsize stride = GST_ROUND_UP_4 (width * 3);
  GstMapInfo map;
  gint y;

  gst_buffer_map (buffer, &map, GST_MAP_READ);
  fail_unless_equals_int (map.size, stride * height);
  for (y = 0; y < height; y++) {
    gsize pad;

    fail_unless (
        memcmp (map.data + y * stride, expected + y * width * 3, width * 3)
            == 0,
        "row %d differs", y);
    /* Row padding is zeroed, not left from a recycled image. */
    for (pad = width * 3; pad < stride; pad++)
      fail_unless_equals_int (map.data[y * stride + pad], 0);
  }
  gst_buffer_unmap (buffer, &map);
}

/* Pushes @buffer and drains the element: augment keeps a few images in
 * flight on the shared threads until more come, an event or a drain. */
static void
push_and_drain (GstHarness *h, GstBuffer *buffer)
{
  GstQuery *drain = gst_query_new_drain ();

  fail_unless_equals_int (gst_harness_push (h, buffer), GST_FLOW_OK);
  fail_unless (gst_pad_peer_query (h->srcpad, drain));
  gst_query_unref (drain);
}

/* The generator of one sample's draws, as the element's documentation
 * says: the seed, and the sample's index, epoch and emissions. */
static void
sample_random (
    GtRandom *rng, guint64 seed, guint64 index, gint epoch, guint emissions)
{
  guint64 mix = index, stream;

  stream = gt_random_splitmix64 (&mix);
  mix = ((guint64)(guint32)epoch << 32) | emissions;
  stream ^= gt_random_splitmix64 (&mix);
  gt_random_init (rng, seed, GST_TRAIN_AUGMENT_RANDOM_STREAM ^ stream);
}

/* Pushes images of several sizes, sample index by sample index backwards,
 * through "augment width=50 height=40 seed=1234 @props" and checks each
 * output against the ops with @range: a sample's draws do not depend on
 * what came before it. */
static void
check_draws_per_sample (const gchar *props, const GstTrainCropRange *range)
{
  const gint sizes[][2] = { { 37, 29 }, { 200, 150 }, { 37, 29 }, { 64, 300 },
    { 500, 375 }, { 1, 1 }, { 224, 224 }, { 90, 91 } };
  const guint64 seed = 1234;
  gchar *launch =
      g_strdup_printf ("augment width=50 height=40 seed=1234 %s", props);
  GstHarness *h = gst_harness_new_parse (launch);
  GtRandom rng;
  guint i;

  for (i = G_N_ELEMENTS (sizes); i-- > 0;) {
    gint w = sizes[i][0], ht = sizes[i][1];
    GstBuffer *in = picture_buffer (w, ht, i, i), *out;
    GstTrainResizeWindow window;
    GstTrainCropBox box;
    GstTrainSampleMeta *meta;
    gboolean flip;
    guint8 *want;

    /* The documented draw order: the box, then the flip. */
    sample_random (&rng, seed, i, 0, 0);
    gst_train_augment_draw_crop (&rng, w, ht, range, &box);
    flip = gst_train_augment_draw_flip (&rng, 0.5);
    gst_train_augment_crop_window (&box, 50, 40, &window);
    want = expected_output (in, w, ht, &window, flip);

    set_rgb_caps (h, w, ht);
    push_and_drain (h, gst_buffer_ref (in));
    out = gst_harness_pull (h);
    assert_buffer_equals (out, want, 50, 40);
    /* Metas and timestamps travel on. */
    meta = gst_buffer_get_train_sample_meta (out);
    fail_unless (meta != NULL);
    fail_unless_equals_uint64 (meta->index, i);
    fail_unless_equals_int (meta->label, (gint)i % 3);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), i * GST_SECOND);
    /* Same output caps whatever the input size. */
    fixture_check_pad_caps (h->sinkpad, "RGB", 50, 40);
    gst_buffer_unref (out);
    gst_buffer_unref (in);
    g_free (want);
  }
  gst_harness_teardown (h);
  g_free (launch);
}

GST_START_TEST (test_element_draws_per_sample)
{
  const GstTrainCropRange wide = { 0.08, 1.0, 1.0, 2.0 };
  const GstTrainCropRange tall = { 0.2, 0.9, 0.5, 0.8 };

  check_draws_per_sample ("n-threads=3", &default_range);
  /* Ranges that are not symmetric in log reach the draws as given. */
  check_draws_per_sample ("n-threads=3 ratio-min=1 ratio-max=2", &wide);
  check_draws_per_sample (
      "n-threads=1 scale-min=0.2 scale-max=0.9 ratio-min=0.5 ratio-max=0.8",
      &tall);
}

GST_END_TEST;

GST_START_TEST (test_element_center_resize_and_flip)
{
  struct
  {
    const gchar *crop;
    gdouble flip;
  } cases[] = { { "center", 0.0 }, { "center", 1.0 }, { "resize", 0.0 },
    { "resize", 1.0 } };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *launch = g_strdup_printf ("augment crop=%s flip=%g width=64 "
                                     "height=48 resize-short=80 n-threads=2",
        cases[i].crop, cases[i].flip);
    GstHarness *h = gst_harness_new_parse (launch);
    /* An odd width, so that input rows are padded. */
    GstBuffer *in = picture_buffer (301, 203, 5, 0), *out;
    GstTrainResizeWindow window;
    guint8 *want;

    g_free (launch);
    if (strcmp (cases[i].crop, "center") == 0)
      gst_train_augment_center_window (301, 203, 80, 64, 48, &window);
    else
      gst_train_augment_resize_window (301, 203, 64, 48, &window);
    want = expected_output (in, 301, 203, &window, cases[i].flip > 0.5);
    set_rgb_caps (h, 301, 203);
    push_and_drain (h, gst_buffer_ref (in));
    out = gst_harness_pull (h);
    assert_buffer_equals (out, want, 64, 48);
    gst_buffer_unref (out);
    gst_buffer_unref (in);
    g_free (want);
    gst_harness_teardown (h);
  }
}

GST_END_TEST;

/* Checks that the element posted an error on @bus whose message contains
 * @part1 and, unless NULL, @part2. */
static void
expect_bus_error (GstBus *bus, const gchar *part1, const gchar *part2)
{
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  GError *error = NULL;

  fail_unless (msg != NULL, "no error");
  gst_message_parse_error (msg, &error, NULL);
  fail_unless (strstr (error->message, part1) != NULL, "%s", error->message);
  if (part2 != NULL)
    fail_unless (strstr (error->message, part2) != NULL, "%s", error->message);
  g_error_free (error);
  gst_message_unref (msg);
}

/* A harness around augment whose element posts to a bus of its own. */
static GstHarness *
harness_with_bus (const gchar *launch, GstBus **bus)
{
  GstHarness *h = gst_harness_new_parse (launch);

  *bus = gst_bus_new ();
  gst_element_set_bus (h->element, *bus);
  return h;
}

static void
harness_with_bus_teardown (GstHarness *h, GstBus *bus)
{
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_START_TEST (test_element_refuses_bad_input)
{
  GstHarness *h;
  GstBus *bus;
  GstCaps *caps;
  GstSegment segment;

  /* An image before any caps. */
  h = harness_with_bus ("augment", &bus);
  gst_harness_push_event (h, gst_event_new_stream_start ("augment-test"));
  gst_segment_init (&segment, GST_FORMAT_TIME);
  gst_harness_push_event (h, gst_event_new_segment (&segment));
  fail_unless_equals_int (gst_harness_push (h, picture_buffer (8, 8, 1, 17)),
      GST_FLOW_NOT_NEGOTIATED);
  expect_bus_error (bus, "Sample 17 arrived before any caps", NULL);
  harness_with_bus_teardown (h, bus);

  /* A buffer too small for the size its caps announce. */
  h = harness_with_bus ("augment", &bus);
  set_rgb_caps (h, 40, 30);
  fail_unless_equals_int (
      gst_harness_push (h, picture_buffer (8, 8, 1, 18)), GST_FLOW_ERROR);
  expect_bus_error (bus, "Sample 18", "40x30 RGB");
  harness_with_bus_teardown (h, bus);

  /* Not RGB: negotiation refuses the caps (the template says RGB, so that
   * autopluggers put a converter in front), and the data flow stops. */
  h = harness_with_bus ("augment", &bus);
  gst_harness_push_event (h, gst_event_new_stream_start ("augment-test"));
  caps = gst_caps_from_string (
      "video/x-raw, format=GRAY8, width=8, height=8, framerate=0/1");
  gst_harness_push_event (h, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  gst_harness_push_event (h, gst_event_new_segment (&segment));
  fail_unless_equals_int (gst_harness_push (h, picture_buffer (8, 8, 1, 19)),
      GST_FLOW_NOT_NEGOTIATED);
  harness_with_bus_teardown (h, bus);

  /* Downstream that takes another size is told so by name. */
  h = harness_with_bus ("augment width=64 height=64", &bus);
  gst_harness_set_sink_caps_str (
      h, "video/x-raw, format=RGB, width=32, height=32");
  set_rgb_caps (h, 8, 8);
  expect_bus_error (
      bus, "Downstream does not accept RGB images of 64x64", NULL);
  fail_unless_equals_int (gst_harness_push (h, picture_buffer (8, 8, 1, 20)),
      GST_FLOW_NOT_NEGOTIATED);
  harness_with_bus_teardown (h, bus);
}

GST_END_TEST;

/* ---- the element in pipelines ---- */

/* Two class folders, "a" and "b", which the images alternate between. */
static const gchar *const two_classes[] = { "a", "b", NULL };

/* A tree of @n JPEGs whose sizes change every few images, in the scratch
 * folder, which it returns. */
static const gchar *
write_mixed_tree (guint n)
{
  fixture_write_jpeg_tree (fixture_scratch (), n, two_classes,
      (FixtureCycle){ 40, 60, 7 }, (FixtureCycle){ 30, 70, 5 }, NULL, 0);
  return fixture_scratch ();
}

static RunResult *
run_augment (const gchar *root, const gchar *augment_props)
{
  return fixture_run_printf ("datasetsrc location=\"%s\" shuffle=false ! "
                             "imagedec n-threads=2 ! augment %s ! fakesink "
                             "name=sink",
      root, augment_props);
}

/* Every output image of a run of @launch, one after the other (guint8). */
static GArray *
all_pixels (gpointer launch)
{
  RunResult *r = fixture_run (launch);
  GArray *pixels = g_array_new (FALSE, FALSE, 1);
  guint i;

  fail_unless (r->error == NULL, "%s", r->error);
  for (i = 0; i < r->samples->len; i++) {
    GstMapInfo map;
    GstBuffer *buffer =
        gst_sample_get_buffer (run_result_sample (r, i)->sample);

    fail_unless (gst_buffer_map (buffer, &map, GST_MAP_READ));
    g_array_append_vals (pixels, map.data, map.size);
    gst_buffer_unmap (buffer, &map);
  }
  run_result_free (r);
  return pixels;
}

/* In a data-parallel job (the launcher's environment), rank 0 crops as a
 * process alone does and rank 1 crops otherwise, from one seed. */
GST_START_TEST (test_seed_differs_per_rank)
{
  const gchar *root = write_mixed_tree (8);
  /* every rank reads every image (num-ranks set), to compare the crops */
  gchar *launch = g_strdup_printf ("datasetsrc location=\"%s\" shuffle=false "
                                   "num-ranks=1 ! imagedec ! augment "
                                   "width=16 height=16 seed=5 ! fakesink "
                                   "name=sink",
      root);
  GArray *alone = fixture_expect_rank_draws (all_pixels, launch, "cropped");

  fail_unless_equals_int (alone->len, 8 * 16 * 16 * 3);
  g_array_unref (alone);
  g_free (launch);
}

GST_END_TEST;

GST_START_TEST (test_pipeline_gives_fixed_caps)
{
  RunResult *r = run_augment (write_mixed_tree (24), "");
  guint i;

  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->warnings->len, 0);
  fail_unless_equals_int (r->samples->len, 24);
  for (i = 0; i < r->samples->len; i++) {
    RunSample *s = run_result_sample (r, i);
    GstVideoInfo info;

    fail_unless (
        gst_video_info_from_caps (&info, gst_sample_get_caps (s->sample)));
    fail_unless_equals_int (
        GST_VIDEO_INFO_FORMAT (&info), GST_VIDEO_FORMAT_RGB);
    fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&info), 224);
    fail_unless_equals_int (GST_VIDEO_INFO_HEIGHT (&info), 224);
    fail_unless_equals_int (
        gst_buffer_get_size (gst_sample_get_buffer (s->sample)), 224 * 224 * 3);
    /* Dataset order (class a, then b) and labels survive. */
    fail_unless (s->has_meta);
    fail_unless_equals_uint64 (s->index, i);
    fail_unless_equals_int (s->label, i < 12 ? 0 : 1);
  }
  run_result_free (r);
}

GST_END_TEST;

GST_START_TEST (test_same_seed_same_output_whatever_threads)
{
  const gchar *root = write_mixed_tree (30);
  RunResult *one = run_augment (root, "seed=7 n-threads=1 width=96 height=80");
  RunResult *four = run_augment (root, "seed=7 n-threads=4 width=96 height=80");
  RunResult *other =
      run_augment (root, "seed=8 n-threads=4 width=96 height=80");
  /* flip=0 leaves the boxes of the seed as they were. */
  RunResult *no_flip =
      run_augment (root, "seed=7 n-threads=2 width=96 height=80 flip=0");
  RunResult *pooled;
  guint64 worker_tasks;
  gchar *launch;
  guint i, flipped = 0;

  fail_unless (one->error == NULL, "%s", one->error);
  fail_unless (four->error == NULL, "%s", four->error);
  fail_unless (other->error == NULL, "%s", other->error);
  fail_unless (no_flip->error == NULL, "%s", no_flip->error);
  fail_unless_equals_int (one->samples->len, 30);
  fail_unless (run_result_same_outputs (one, four));
  fail_if (run_result_same_outputs (one, other));
  for (i = 0; i < 30; i++) {
    fail_unless_equals_uint64 (run_result_sample (one, i)->index, i);
    fail_unless_equals_uint64 (run_result_sample (four, i)->index, i);
    fail_unless_equals_uint64 (run_result_sample (other, i)->index, i);
  }
  /* Each image is either the unflipped one or its mirror. */
  for (i = 0; i < 30; i++) {
    GstBuffer *a = gst_sample_get_buffer (run_result_sample (one, i)->sample);
    GstBuffer *b =
        gst_sample_get_buffer (run_result_sample (no_flip, i)->sample);
    GstMapInfo ma, mb;
    gboolean same, mirrored = TRUE;
    gint y, x;

    gst_buffer_map (a, &ma, GST_MAP_READ);
    gst_buffer_map (b, &mb, GST_MAP_READ);
    same = memcmp (ma.data, mb.data, ma.size) == 0;
    for (y = 0; y < 80 && mirrored; y++)
      for (x = 0; x < 96 && mirrored; x++)
        mirrored = memcmp (ma.data + y * 288 + x * 3,
                       mb.data + y * 288 + (95 - x) * 3, 3)
            == 0;
    fail_unless (same || mirrored, "image %u", i);
    if (!same)
      flipped++;
    gst_buffer_unmap (a, &ma);
    gst_buffer_unmap (b, &mb);
  }
  /* Half of 30 flipped, give or take: P(< 5 or > 25) is below 1e-3. */
  fail_unless (flipped >= 5 && flipped <= 25, "%u flipped", flipped);

  /* A budget of 3 (two workers) and only augment in the pool (datasetsrc
   * and imagedec work in the streaming thread): the workers crop some of
   * the 60 images, which the bytes above do not show. */
  g_setenv ("GST_TRAIN_THREADS", "3", TRUE);
  worker_tasks = fixture_pool_worker_tasks ();
  launch = g_strdup_printf (
      "datasetsrc location=\"%s\" shuffle=false num-epochs=2 n-threads=0 "
      "! imagedec n-threads=1 ! augment seed=7 n-threads=4 width=96 "
      "height=80 ! fakesink name=sink",
      root);
  pooled = fixture_run (launch);
  worker_tasks = fixture_pool_worker_tasks () - worker_tasks;
  g_unsetenv ("GST_TRAIN_THREADS");
  fail_unless (pooled->error == NULL, "%s", pooled->error);
  fail_unless_equals_int (pooled->samples->len, 60);
  fail_unless (worker_tasks > 0, "the pool's workers cropped no image");
  run_result_free (pooled);
  g_free (launch);

  run_result_free (one);
  run_result_free (four);
  run_result_free (other);
  run_result_free (no_flip);
}

GST_END_TEST;

GST_START_TEST (test_bad_settings_fail_at_start)
{
  const gchar *root = write_mixed_tree (2);
  RunResult *r = run_augment (root, "scale-min=0.9 scale-max=0.5");

  fail_unless (r->error != NULL);
  fail_unless (strstr (r->error,
                   "scale-min (0.9) is larger than scale-max "
                   "(0.5)")
          != NULL,
      "%s", r->error);
  run_result_free (r);

  r = run_augment (root, "ratio-min=2 ratio-max=1.5");
  fail_unless (r->error != NULL);
  fail_unless (
      strstr (r->error, "ratio-min (2) is larger than ratio-max (1.5)") != NULL,
      "%s", r->error);
  run_result_free (r);
}

GST_END_TEST;

/* Counts buffers reaching a fakesink, so the test can wait for data. */
typedef struct
{
  GMutex lock;
  GCond cond;
  guint count;
} HandoffCount;

static void
count_handoff (
    GstElement *sink, GstBuffer *buffer, GstPad *pad, gpointer user_data)
{
  HandoffCount *c = user_data;

  g_mutex_lock (&c->lock);
  c->count++;
  g_cond_signal (&c->cond);
  g_mutex_unlock (&c->lock);
}

GST_START_TEST (test_stop_and_restart_while_streaming)
{
  HandoffCount counted;
  GstElement *sink;
  const gchar *root = write_mixed_tree (6);
  gchar *launch = g_strdup_printf ("datasetsrc location=\"%s\" num-epochs=-1 "
                                   "! imagedec ! augment n-threads=4 "
                                   "! fakesink name=sink signal-handoffs=true",
      root);
  GstElement *pipeline = gst_parse_launch (launch, NULL);
  guint i;

  g_mutex_init (&counted.lock);
  g_cond_init (&counted.cond);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_signal_connect (sink, "handoff", G_CALLBACK (count_handoff), &counted);
  gst_object_unref (sink);

  /* An endless stream, four threads sharing each image, stopped from
   * PLAYING and started again. */
  for (i = 0; i < 2; i++) {
    gint64 deadline;

    fixture_play_until_flowing (pipeline);
    /* Stop with decoding and augmenting in full flow: after 20 more
     * images have gone through. */
    deadline = fixture_deadline (60);
    g_mutex_lock (&counted.lock);
    counted.count = 0;
    while (counted.count < 20)
      fixture_cond_wait (&counted.cond, &counted.lock, deadline,
          "20 images through the stream");
    g_mutex_unlock (&counted.lock);
    fail_unless (gst_element_set_state (pipeline, GST_STATE_NULL)
        == GST_STATE_CHANGE_SUCCESS);
  }
  gst_object_unref (pipeline);
  g_mutex_clear (&counted.lock);
  g_cond_clear (&counted.cond);
  g_free (launch);
}

GST_END_TEST;

/* ---- imagedec decoding only the crop (decode-region) ---- */

/* Images of several kinds and sizes (a CMYK one among them, which
 * imagedec decodes whole), two class folders, in the scratch folder, which
 * it returns. */
static const gchar *
write_kinds_tree (guint n)
{
  static const FixtureJpeg kinds[] = {
    { FIXTURE_YCC_420, FALSE, FALSE, 0, 90 },
    { FIXTURE_YCC_422, FALSE, FALSE, 1, 90 },
    { FIXTURE_YCC_444, FALSE, FALSE, 0, 95 },
    { FIXTURE_YCC_420, TRUE, FALSE, 0, 85 },
    { FIXTURE_GRAY, FALSE, FALSE, 0, 90 },
    { FIXTURE_CMYK, FALSE, FALSE, 0, 90 },
  };

  fixture_write_jpeg_tree (fixture_scratch (), n, two_classes,
      (FixtureCycle){ 45, 53, 7 }, (FixtureCycle){ 33, 61, 5 }, kinds,
      G_N_ELEMENTS (kinds));
  return fixture_scratch ();
}

typedef struct
{
  guint images;          /* into augment */
  guint epoch_images[3]; /* of them, of epochs 0, 1 and 2 */
  guint regions;         /* of them, regions of an image */
  guint queries;         /* region queries that reached augment */
  GArray *answers;       /* RegionAnswer, when asked for */
  GByteArray *pixels;    /* every output image, in order */
} RegionRun;

/* A rectangle augment answered a region query with. */
typedef struct
{
  guint64 index;
  gint epoch;
  GstTrainRegion region;
} RegionAnswer;

static GstPadProbeReturn
count_regions (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  RegionRun *run = data;
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER (info);
  GstTrainSampleMeta *meta = gst_buffer_get_train_sample_meta (buffer);

  run->images++;
  if (meta != NULL && meta->epoch >= 0
      && meta->epoch < (gint)G_N_ELEMENTS (run->epoch_images))
    run->epoch_images[meta->epoch]++;
  if (gst_buffer_get_train_region_meta (buffer))
    run->regions++;
  return GST_PAD_PROBE_OK;
}

/* After augment answered: the rectangle, if any, and whose. */
static GstPadProbeReturn
keep_answers (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  RegionRun *run = data;
  GstQuery *query = GST_PAD_PROBE_INFO_QUERY (info);
  GstBuffer *sample;
  GstTrainSampleMeta *meta;
  RegionAnswer answer;
  GstPad *origin;
  gint width, height;

  if (gst_train_region_query_parse (query, &origin, &sample, &width, &height)
      && gst_train_region_query_get (query, &answer.region)
      && (meta = gst_buffer_get_train_sample_meta (sample)) != NULL) {
    answer.index = meta->index;
    answer.epoch = meta->epoch;
    g_array_append_val (run->answers, answer);
  }
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
count_queries (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  RegionRun *run = data;
  const GstStructure *s =
      gst_query_get_structure (GST_PAD_PROBE_INFO_QUERY (info));

  if (s != NULL && gst_structure_has_name (s, GST_TRAIN_REGION_QUERY))
    run->queries++;
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
keep_pixels (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  RegionRun *run = data;
  GstMapInfo map;

  fail_unless (
      gst_buffer_map (GST_PAD_PROBE_INFO_BUFFER (info), &map, GST_MAP_READ));
  g_byte_array_append (run->pixels, map.data, map.size);
  gst_buffer_unmap (GST_PAD_PROBE_INFO_BUFFER (info), &map);
  return GST_PAD_PROBE_OK;
}

/* Plays datasetsrc ! imagedec @dec_props ! @between augment ! fakesink over
 * @root for @epochs to EOS, counting what reaches augment and keeping its
 * output, and with @answers the rectangles it answered. */
static void
run_regions_full (const gchar *root, const gchar *dec_props,
    const gchar *between, const gchar *aug_props, guint epochs,
    gboolean answers, RegionRun *run)
{
  gchar *launch = g_strdup_printf (
      "datasetsrc location=\"%s\" shuffle=false num-epochs=%u ! imagedec %s ! "
      "%s augment name=aug seed=3 width=40 height=32 %s ! fakesink name=sink",
      root, epochs, dec_props, between, aug_props);
  GError *err = NULL;
  GstElement *pipeline = gst_parse_launch (launch, &err);
  GstElement *aug, *sink;
  GstPad *pad;
  gchar *error;

  fail_unless (pipeline != NULL, "%s: %s", launch, err ? err->message : "");
  memset (run, 0, sizeof (*run));
  run->pixels = g_byte_array_new ();
  if (answers)
    run->answers = g_array_new (FALSE, FALSE, sizeof (RegionAnswer));
  aug = gst_bin_get_by_name (GST_BIN (pipeline), "aug");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  pad = gst_element_get_static_pad (aug, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_regions, run, NULL);
  gst_pad_add_probe (pad,
      GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM | GST_PAD_PROBE_TYPE_PUSH,
      count_queries, run, NULL);
  if (answers)
    gst_pad_add_probe (pad,
        GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM | GST_PAD_PROBE_TYPE_PULL,
        keep_answers, run, NULL);
  gst_object_unref (pad);
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, keep_pixels, run, NULL);
  gst_object_unref (pad);
  error = fixture_play_to_eos (pipeline, 0, NULL, NULL);
  fail_unless (error == NULL, "%s: %s", launch, error);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (aug);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_free (launch);
}

static void
run_regions (const gchar *root, const gchar *dec_props, const gchar *between,
    RegionRun *run)
{
  run_regions_full (root, dec_props, between, "", 2, FALSE, run);
}

static gboolean
same_bytes (GByteArray *a, GByteArray *b)
{
  return a->len == b->len && memcmp (a->data, b->data, a->len) == 0;
}

/* imagedec decodes only the box augment crops when augment is linked to it
 * directly, and the output is byte for byte that of whole decodes: every
 * kind of JPEG, DCT scales, imagedec's threads or none. With anything
 * between them (a queue, echo) it decodes whole images. */
GST_START_TEST (test_region_decode_gives_the_same_images)
{
  const gchar *root = write_kinds_tree (24);
  static const gchar *const dec_props[] = { "n-threads=1", "n-threads=3",
    "min-short-side=40" };
  RegionRun whole, region, other;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (dec_props); i++) {
    gchar *off = g_strdup_printf ("%s decode-region=false", dec_props[i]);

    run_regions (root, off, "", &whole);
    fail_unless_equals_int (whole.images, 48);
    fail_unless_equals_int (whole.regions, 0);
    run_regions (root, dec_props[i], "", &region);
    fail_unless_equals_int (region.images, 48);
    /* All but the CMYK images (8 of 48) and crops of the whole image: the
     * fallback of RandomResizedCrop and scale 1, rare. */
    fail_unless (region.regions >= 30 && region.regions <= 40, "%s: %u regions",
        dec_props[i], region.regions);
    /* one query per image it can decode a part of (not the CMYK ones) */
    fail_unless_equals_int (region.queries, 40);
    fail_unless_equals_int (whole.queries, 0);
    fail_unless (same_bytes (whole.pixels, region.pixels), "%s: pixels differ",
        dec_props[i]);
    g_byte_array_unref (whole.pixels);
    g_byte_array_unref (region.pixels);
    g_free (off);
  }

  run_regions (root, "decode-region=false", "", &whole);
  run_regions (root, "", "queue !", &other);
  fail_unless_equals_int (other.images, 48);
  fail_unless_equals_int (other.regions, 0);
  /* refused once (augment is not linked to imagedec), never asked again */
  fail_unless (other.queries <= 1, "%u queries", other.queries);
  fail_unless (same_bytes (whole.pixels, other.pixels));
  g_byte_array_unref (other.pixels);
  run_regions (root, "", "echo factor=2 !", &other);
  fail_unless_equals_int (other.images, 96);
  fail_unless_equals_int (other.regions, 0);
  fail_unless (other.queries <= 1, "%u queries", other.queries);
  g_byte_array_unref (other.pixels);
  g_byte_array_unref (whole.pixels);
}

GST_END_TEST;

/* The relink of test_region_queries_resume_after_relink: imagedec ! queue
 * ! augment becomes imagedec ! augment once @relink_after images passed,
 * from a blocking probe on imagedec's source pad, the queue drained first
 * (an EOS sent into it and dropped at its source pad) so that no image is
 * lost. The counts of @run as they stood then are kept. */
typedef struct
{
  GstElement *pipeline, *queue, *aug;
  guint relink_after, passed;
  RegionRun *run;
  RegionRun before; /* @run when the queue had drained */
  GMutex lock;
  GCond cond;
  gboolean drained;
  const gchar *failed; /* what went wrong in the probe, for the test */
} Relink;

static GstPadProbeReturn
drop_drain_eos (GstPad *pad, GstPadProbeInfo *info, gpointer data)
{
  Relink *relink = data;

  if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) != GST_EVENT_EOS)
    return GST_PAD_PROBE_OK;
  g_mutex_lock (&relink->lock);
  relink->drained = TRUE;
  g_cond_signal (&relink->cond);
  g_mutex_unlock (&relink->lock);
  return GST_PAD_PROBE_DROP;
}

/* In imagedec's streaming thread (a failed check here would leave the
 * pipeline hanging: it notes what failed for the test thread instead). */
static GstPadProbeReturn
relink_without_queue (GstPad *dec_src, GstPadProbeInfo *info, gpointer data)
{
  Relink *relink = data;
  GstPad *queue_sink, *queue_src, *aug_sink;
  gint64 deadline = g_get_monotonic_time () + 60 * G_TIME_SPAN_SECOND;
  gulong eos_probe;

  if (relink->passed < relink->relink_after) {
    relink->passed++;
    return GST_PAD_PROBE_PASS;
  }
  queue_sink = gst_element_get_static_pad (relink->queue, "sink");
  queue_src = gst_element_get_static_pad (relink->queue, "src");
  aug_sink = gst_element_get_static_pad (relink->aug, "sink");
  eos_probe = gst_pad_add_probe (queue_src, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      drop_drain_eos, relink, NULL);
  gst_pad_send_event (queue_sink, gst_event_new_eos ());
  g_mutex_lock (&relink->lock);
  while (!relink->drained
      && g_cond_wait_until (&relink->cond, &relink->lock, deadline))
    ;
  g_mutex_unlock (&relink->lock);
  gst_pad_remove_probe (queue_src, eos_probe);
  if (!relink->drained) {
    relink->failed = "the queue did not drain within a minute";
  } else {
    relink->before = *relink->run;
    gst_pad_unlink (dec_src, queue_sink);
    gst_pad_unlink (queue_src, aug_sink);
    gst_element_set_state (relink->queue, GST_STATE_NULL);
    gst_bin_remove (GST_BIN (relink->pipeline), relink->queue);
    if (gst_pad_link (dec_src, aug_sink) != GST_PAD_LINK_OK)
      relink->failed = "imagedec does not link to augment";
  }
  gst_object_unref (queue_sink);
  gst_object_unref (queue_src);
  gst_object_unref (aug_sink);
  return GST_PAD_PROBE_REMOVE;
}

/* A query refused while a queue stood between imagedec and augment is
 * asked again once imagedec is relinked to augment directly: regions
 * resume at the image after the relink, every image after it is asked for
 * once and decoded in part, and the pixels are those of whole decodes.
 * 4:3 images and crops of at most half their area: RandomResizedCrop never
 * falls back to the whole image, so every answer is a rectangle. */
GST_START_TEST (test_region_queries_resume_after_relink)
{
  const guint n = 24, relink_after = 8;
  const gchar *crops = "scale-min=0.2 scale-max=0.5";
  const gchar *root = fixture_scratch ();
  gchar *launch;
  RegionRun whole, run;
  Relink relink = { 0 };
  GstElement *dec;
  GstPad *dec_src;
  gchar *error;
  guint i;

  for (i = 0; i < n; i++) {
    gchar *path = g_strdup_printf ("%s/a/%02u.jpg", root, i);

    fixture_write_jpeg (path, 64, 48, i);
    g_free (path);
  }
  run_regions_full (root, "decode-region=false", "", crops, 1, FALSE, &whole);
  fail_unless_equals_int (whole.images, n);

  /* n-threads=1: each image is asked for, decoded and pushed before the
   * next comes in, so the counts below are exact */
  launch = g_strdup_printf (
      "datasetsrc location=\"%s\" shuffle=false num-epochs=1 ! imagedec "
      "name=dec n-threads=1 ! queue name=queue ! augment name=aug seed=3 "
      "width=40 height=32 %s ! fakesink name=sink",
      root, crops);
  relink.pipeline = gst_parse_launch (launch, NULL);
  fail_unless (relink.pipeline != NULL, "%s", launch);
  relink.queue = gst_bin_get_by_name (GST_BIN (relink.pipeline), "queue");
  relink.aug = gst_bin_get_by_name (GST_BIN (relink.pipeline), "aug");
  relink.relink_after = relink_after;
  relink.run = &run;
  g_mutex_init (&relink.lock);
  g_cond_init (&relink.cond);
  memset (&run, 0, sizeof (run));
  run.pixels = g_byte_array_new ();
  {
    GstElement *sink = gst_bin_get_by_name (GST_BIN (relink.pipeline), "sink");
    GstPad *pad = gst_element_get_static_pad (relink.aug, "sink");

    gst_pad_add_probe (
        pad, GST_PAD_PROBE_TYPE_BUFFER, count_regions, &run, NULL);
    gst_pad_add_probe (pad,
        GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM | GST_PAD_PROBE_TYPE_PUSH,
        count_queries, &run, NULL);
    gst_object_unref (pad);
    pad = gst_element_get_static_pad (sink, "sink");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, keep_pixels, &run, NULL);
    gst_object_unref (pad);
    gst_object_unref (sink);
  }
  dec = gst_bin_get_by_name (GST_BIN (relink.pipeline), "dec");
  dec_src = gst_element_get_static_pad (dec, "src");
  gst_pad_add_probe (dec_src,
      GST_PAD_PROBE_TYPE_BLOCK | GST_PAD_PROBE_TYPE_BUFFER,
      relink_without_queue, &relink, NULL);
  error = fixture_play_to_eos (relink.pipeline, 0, NULL, NULL);
  gst_element_set_state (relink.pipeline, GST_STATE_NULL);
  fail_unless (error == NULL, "%s", error);
  fail_unless (relink.failed == NULL, "%s", relink.failed);

  /* through the queue: whole images, the query refused once at most */
  fail_unless_equals_int (relink.before.images, relink_after);
  fail_unless_equals_int (relink.before.regions, 0);
  fail_unless (relink.before.queries <= 1, "%u queries", relink.before.queries);
  /* relinked: the image in the probe went on whole (decoded before the
   * relink); each one after it was asked for and decoded in part */
  fail_unless_equals_int (run.images, n);
  fail_unless (run.queries - relink.before.queries == n - relink_after - 1
          && run.regions == n - relink_after - 1,
      "after the relink: %u queries and %u regions for %u images",
      run.queries - relink.before.queries, run.regions, n - relink_after - 1);
  fail_unless (same_bytes (whole.pixels, run.pixels));

  g_byte_array_unref (whole.pixels);
  g_byte_array_unref (run.pixels);
  gst_object_unref (dec_src);
  gst_object_unref (dec);
  gst_object_unref (relink.queue);
  gst_object_unref (relink.aug);
  gst_object_unref (relink.pipeline);
  g_mutex_clear (&relink.lock);
  g_cond_clear (&relink.cond);
  g_free (launch);
}

GST_END_TEST;

/* Whether @data decodes: the rectangle @r (NULL: the whole image), and
 * with @read_all the rest of the file too. */
static gboolean
decodes (GBytes *data, const GstTrainRegion *r, gboolean read_all)
{
  gsize size;
  const guint8 *bytes = g_bytes_get_data (data, &size);
  GstTrainJpegHeader header;
  gchar *error = NULL;
  guint8 *out;
  gboolean ok;

  fail_unless (
      gst_train_jpeg_read_header (bytes, size, 0, TRUE, &header, &error), "%s",
      error);
  out = g_malloc (3 * header.out_width * header.out_height);
  if (r == NULL)
    ok = gst_train_jpeg_decode (
        bytes, size, &header, FALSE, out, 3 * header.out_width, &error);
  else
    ok = gst_train_jpeg_decode_region (bytes, size, &header, r->left, r->top,
        r->width, r->height, read_all, out, 3 * r->width, &error);
  g_free (error);
  g_free (out);
  return ok;
}

/* A file cut short is skipped whether imagedec decodes a region or the
 * whole image, in every epoch, even where the crop lies above the cut: the
 * first time it sees a file, imagedec reads it to its end, and only a file
 * that decoded then is read no further than its box later. Small boxes, and
 * files that lose only their last tenth, so that most boxes lie above the
 * cut: a damaged file marked as known to decode would show in epochs 2
 * and 3. */
GST_START_TEST (test_region_decode_skips_what_whole_decodes_skip)
{
  static const FixtureJpeg baseline = { FIXTURE_YCC_420, FALSE, FALSE, 0, 90 };
  static const GstTrainRegion top_box = { 16, 0, 48, 32 };
  const gchar *root = fixture_scratch ();
  const gchar *small = "scale-min=0.08 scale-max=0.1";
  GBytes *damaged[8] = { NULL };
  RegionRun whole, region;
  guint i, e, would_decode = 0;

  for (i = 0; i < 8; i++) {
    gchar *name = g_strdup_printf ("%02u.jpg", i);
    gchar *path = g_build_filename (root, "a", name, NULL);
    gsize size;
    guint8 *data = fixture_jpeg_encode (160, 120, i, &baseline, &size);

    /* every other file loses its last tenth */
    if (i % 2) {
      size = size * 9 / 10;
      damaged[i] = g_bytes_new (data, size);
      /* what imagedec meets: the file fails whole and read to its end,
       * and a box at its top decodes when the rest is not read */
      fail_if (decodes (damaged[i], NULL, FALSE), "file %u decodes", i);
      fail_if (decodes (damaged[i], &top_box, TRUE), "file %u decodes", i);
      fail_unless (decodes (damaged[i], &top_box, FALSE),
          "the top of file %u does not decode", i);
    }
    fixture_write_file (path, data, size);
    g_free (data);
    g_free (name);
    g_free (path);
  }
  run_regions_full (root, "decode-region=false", "", small, 3, FALSE, &whole);
  run_regions_full (root, "", "", small, 3, TRUE, &region);

  /* The run could show a damaged file taken for a good one: some boxes
   * asked of the damaged files after the first epoch decode without
   * reading to the end. */
  for (i = 0; i < region.answers->len; i++) {
    RegionAnswer *a = &g_array_index (region.answers, RegionAnswer, i);

    if (a->epoch > 0 && damaged[a->index] != NULL
        && decodes (damaged[a->index], &a->region, FALSE))
      would_decode++;
  }
  fail_unless (would_decode > 0,
      "no box asked of a damaged file after the first epoch lies above the "
      "cut: the test shows nothing");

  /* the 4 whole files in each epoch, whole or in regions, the same pixels */
  for (e = 0; e < 3; e++) {
    fail_unless_equals_int (whole.epoch_images[e], 4);
    fail_unless (region.epoch_images[e] == whole.epoch_images[e],
        "epoch %u: %u images from region decodes, %u from whole decodes", e + 1,
        region.epoch_images[e], whole.epoch_images[e]);
  }
  fail_unless_equals_int (region.images, 12);
  fail_unless_equals_int (region.regions, 12);
  fail_unless (same_bytes (whole.pixels, region.pixels));
  g_byte_array_unref (whole.pixels);
  g_byte_array_unref (region.pixels);
  g_array_unref (region.answers);
  for (i = 0; i < 8; i++)
    g_clear_pointer (&damaged[i], g_bytes_unref);
}

GST_END_TEST;

/* A region that does not hold augment's crop (a bug, or an answer meant
 * for another element) is an error that names the sample, never a wrong
 * crop. */
GST_START_TEST (test_region_without_the_crop_is_an_error)
{
  GstTrainRegion r = { 0, 0, 8, 8 };
  GstBus *bus;
  GstHarness *h = harness_with_bus ("augment width=4 height=4", &bus);
  GstBuffer *buffer = picture_buffer (8, 8, 1, 21);

  set_rgb_caps (h, 8, 8);
  /* 8x8 at (0, 0) of a 400x300 image: no crop of that image fits. */
  gst_buffer_add_train_region_meta (buffer, 400, 300, &r);
  fail_unless_equals_int (gst_harness_push (h, buffer), GST_FLOW_ERROR);
  expect_bus_error (bus,
      "Sample 21 is the 8x8 region at (0, 0) of a 400x300 image, which does "
      "not hold its crop",
      "decode-region=false");
  harness_with_bus_teardown (h, bus);
}

GST_END_TEST;

#define AUGMENT_TESTS(test)                                                    \
  test (test_crop_boxes_follow_torchvision_rule);                              \
  test (test_crop_fallback);                                                   \
  test (test_crop_boxes_asymmetric_ratio);                                     \
  test (test_center_and_resize_windows);                                       \
  test (test_resampler_closed_forms);                                          \
  test (test_resampler_rows_split_and_padding);                                \
  test (test_element_draws_per_sample);                                        \
  test (test_element_center_resize_and_flip);                                  \
  test (test_element_refuses_bad_input);                                       \
  test (test_pipeline_gives_fixed_caps);                                       \
  test (test_seed_differs_per_rank);                                           \
  test (test_same_seed_same_output_whatever_threads);                          \
  test (test_bad_settings_fail_at_start);                                      \
  test (test_stop_and_restart_while_streaming);                                \
  test (test_region_decode_gives_the_same_images);                             \
  test (test_region_queries_resume_after_relink);                              \
  test (test_region_without_the_crop_is_an_error);                             \
  test (test_region_decode_skips_what_whole_decodes_skip);

CHECK_MAIN_WITH_TEARDOWN (
    augment, "augment", fixture_scratch_teardown, AUGMENT_TESTS);
