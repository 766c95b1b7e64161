/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-conv.c: the reference convolution, im2col + sgemm, in fp32 on the
 * CPU; it hands the layers the direct kernels fit to cpu-direct-conv.c. */
#include "cpu-conv.h"
#include "cpu-blas.h"
#include "cpu-direct-conv.h"
#include "cpu-norm.h"
#include "cpu-streaming.h"

#include <stdlib.h>
#include <string.h>

typedef struct
{
  GtCpuScratch *scratch;
  const GtConvSpec *conv;
  const float *x;
  int n, h, w, out_h, out_w;
  const float *weight;
  const float *dy;
  float *y;
  float *dx;
  float *dweight;
  /* derived once: output pixels of the batch, floats of one im2col row,
   * rows per im2col chunk */
  size_t rows, width, chunk;
} ConvTask;

static int
conv_is_direct (const GtConvSpec *conv)
{
  return conv->kernel == 1 && conv->stride == 1 && conv->padding == 0;
}

static size_t
conv_column_width (const GtConvSpec *conv)
{
  return (size_t)conv->kernel * conv->kernel * conv->in_channels;
}

/* A task over @n images through @conv (sizes from its plan); the caller
 * sets the tensors it reads and writes. */
static ConvTask
conv_task (GtCpuScratch *scratch, const GtConvSpec *conv, const float *x, int n,
    const float *weight)
{
  ConvTask task = {
    .scratch = scratch,
    .conv = conv,
    .x = x,
    .n = n,
    .h = conv->in_h,
    .w = conv->in_w,
    .out_h = conv->out_h,
    .out_w = conv->out_w,
    .weight = weight,
    .rows = (size_t)n * conv->out_h * conv->out_w,
    .width = conv_column_width (conv),
  };

  /* as many rows per im2col chunk as the scratch holds */
  task.chunk = scratch->column_floats / task.width;
  if (task.chunk == 0)
    task.chunk = 1;
  return task;
}

/* The kernel columns [*first, *last) of a kernel row that land inside an
 * input row of @width pixels when the window starts at @x0. */
static inline void
conv_taps_inside (
    const GtConvSpec *conv, int x0, int width, int *first, int *last)
{
  *first = x0 < 0 ? -x0 : 0;
  *last = width - x0 < conv->kernel ? width - x0 : conv->kernel;
  if (*last < *first)
    *last = *first;
}

/* Where output row @row (image, y, x) reads its window: the image, the
 * output row, and the input column of the window's left edge. */
static inline void
conv_locate_row (
    const ConvTask *task, size_t row, size_t *image, int *oy, int *x0)
{
  size_t pixels = (size_t)task->out_h * task->out_w;
  int ox = (int)(row % pixels) % task->out_w;

  *image = row / pixels;
  *oy = (int)(row % pixels) / task->out_w;
  *x0 = ox * task->conv->stride - task->conv->padding;
}

/* Writes, for output rows [first, first + count), the input patches in the
 * weight's (kernel row, kernel column, channel) order, zeros outside. With
 * stride 1 and NHWC, the taps of one kernel row are neighbouring pixels:
 * one copy each. */
static void
im2col (const ConvTask *task, size_t first, size_t count, float *columns)
{
  const GtConvSpec *conv = task->conv;
  size_t channels = conv->in_channels;
  size_t width = conv_column_width (conv);
  size_t r;

  for (r = 0; r < count; r++) {
    float *out = columns + r * width;
    int ky, oy, x0, tap_first, tap_last;
    size_t image;

    conv_locate_row (task, first + r, &image, &oy, &x0);
    conv_taps_inside (conv, x0, task->w, &tap_first, &tap_last);
    for (ky = 0; ky < conv->kernel; ky++, out += conv->kernel * channels) {
      int iy = oy * conv->stride - conv->padding + ky;

      if (iy < 0 || iy >= task->h || tap_first == tap_last) {
        memset (out, 0, conv->kernel * channels * sizeof (float));
        continue;
      }
      if (tap_first > 0)
        memset (out, 0, tap_first * channels * sizeof (float));
      if (conv->stride == 1 || tap_last - tap_first == 1) {
        memcpy (out + tap_first * channels,
            task->x
                + ((image * task->h + iy) * task->w + x0 + tap_first)
                    * channels,
            (tap_last - tap_first) * channels * sizeof (float));
      } else {
        int kx;

        for (kx = tap_first; kx < tap_last; kx++)
          memcpy (out + kx * channels,
              task->x + ((image * task->h + iy) * task->w + x0 + kx) * channels,
              channels * sizeof (float));
      }
      if (tap_last < conv->kernel)
        memset (out + tap_last * channels, 0,
            (conv->kernel - tap_last) * channels * sizeof (float));
    }
  }
}

/* Adds the column gradients of rows [first, first + count) back onto the
 * input pixels they were copied from (im2col's transpose). */
static void
col2im_add (
    const ConvTask *task, size_t first, size_t count, const float *columns)
{
  const GtConvSpec *conv = task->conv;
  size_t channels = conv->in_channels;
  size_t width = conv_column_width (conv);
  size_t r;

  for (r = 0; r < count; r++) {
    const float *in = columns + r * width;
    int ky, kx, oy, x0, tap_first, tap_last;
    size_t image;

    conv_locate_row (task, first + r, &image, &oy, &x0);
    conv_taps_inside (conv, x0, task->w, &tap_first, &tap_last);
    for (ky = 0; ky < conv->kernel; ky++, in += conv->kernel * channels) {
      int iy = oy * conv->stride - conv->padding + ky;

      if (iy < 0 || iy >= task->h)
        continue;
      for (kx = tap_first; kx < tap_last; kx++) {
        const float *restrict from = in + kx * channels;
        float *restrict to =
            task->dx + ((image * task->h + iy) * task->w + x0 + kx) * channels;
        size_t c;

        for (c = 0; c < channels; c++)
          to[c] += from[c];
      }
    }
  }
}

static void
conv_forward_task (void *data, int thread, int num_threads)
{
  ConvTask *task = data;
  const GtConvSpec *conv = task->conv;
  size_t width = task->width, chunk = task->chunk;
  int out_c = conv->out_channels;
  size_t begin, end, r;

  gt_cpu_split (task->rows, thread, num_threads, &begin, &end);
  if (begin == end)
    return;
  if (conv_is_direct (conv)) {
    gt_cpu_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, (int)(end - begin),
        out_c, conv->in_channels, 1.f, task->x + begin * conv->in_channels,
        conv->in_channels, task->weight, conv->in_channels, 0.f,
        task->y + begin * out_c, out_c);
    return;
  }
  for (r = begin; r < end; r += chunk) {
    size_t count = end - r < chunk ? end - r : chunk;
    float *columns = task->scratch->columns[thread];

    im2col (task, r, count, columns);
    gt_cpu_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, (int)count, out_c,
        (int)width, 1.f, columns, (int)width, task->weight, (int)width, 0.f,
        task->y + r * out_c, out_c);
  }
}

/* The direct kernels, when the configuration picked them (the scratch then
 * holds their table), take narrow 3x3 layers whose padded image fits the
 * scratch; the rest, and everything in the reference configuration, goes
 * through im2col + sgemm. */
static int
direct_fits (
    const GtCpuScratch *scratch, const GtConvSpec *conv, int with_input_grad)
{
  size_t pad = gt_cpu_direct_conv_needs (conv);

  return scratch->direct_kernels != NULL && pad > 0
      && (!with_input_grad || gt_cpu_direct_conv_applies (conv, 1))
      && pad <= scratch->pad_floats;
}

void
gt_cpu_conv_forward (GtCpuPool *pool, GtCpuScratch *scratch,
    const GtConvSpec *conv, const float *x, int n, const float *weight,
    float *y)
{
  ConvTask task = conv_task (scratch, conv, x, n, weight);

  task.y = y;
  if (direct_fits (scratch, conv, 0)) {
    gt_cpu_direct_conv_forward (pool, scratch, conv, x, n, weight, y);
    return;
  }
  gt_cpu_pool_run (pool, conv_forward_task, &task);
}

int
gt_cpu_conv_forward_moments (GtCpuPool *pool, GtCpuScratch *scratch,
    const GtConvSpec *conv, const float *x, int n, const float *weight,
    float *y, double *mean, double *m2)
{
  int channels = conv->out_channels, t;
  size_t stride = 2 * (size_t)scratch->max_channels + 1;
  double count = 0;

  if (!direct_fits (scratch, conv, 0) || channels > scratch->max_channels) {
    gt_cpu_conv_forward (pool, scratch, conv, x, n, weight, y);
    return 0;
  }
  gt_cpu_direct_conv_forward_moments (pool, scratch, conv, x, n, weight, y);
  /* the threads' moments, merged in thread order */
  memset (mean, 0, channels * sizeof (double));
  memset (m2, 0, channels * sizeof (double));
  for (t = 0; t < gt_cpu_pool_size (pool); t++) {
    const double *part = scratch->conv_moments + t * stride;

    gt_cpu_moments_merge (
        &count, mean, m2, part[0], part + 1, part + 1 + channels, channels);
  }
  return 1;
}

/* Each thread sums dy^T * columns over its rows into its own buffer (the
 * result for thread 0), then the partial sums are added up. */
static void
conv_weight_grad_task (void *data, int thread, int num_threads)
{
  ConvTask *task = data;
  const GtConvSpec *conv = task->conv;
  size_t width = task->width, chunk = task->chunk;
  int out_c = conv->out_channels;
  float *dweight =
      thread == 0 ? task->dweight : task->scratch->weight_partials[thread];
  size_t begin, end, r;

  gt_cpu_split (task->rows, thread, num_threads, &begin, &end);
  if (begin == end) {
    memset (dweight, 0, out_c * width * sizeof (float));
    return;
  }
  if (conv_is_direct (conv)) {
    gt_cpu_sgemm (CblasRowMajor, CblasTrans, CblasNoTrans, out_c, (int)width,
        (int)(end - begin), 1.f, task->dy + begin * out_c, out_c,
        task->x + begin * width, (int)width, 0.f, dweight, (int)width);
    return;
  }
  for (r = begin; r < end; r += chunk) {
    size_t count = end - r < chunk ? end - r : chunk;
    float *columns = task->scratch->columns[thread];

    im2col (task, r, count, columns);
    gt_cpu_sgemm (CblasRowMajor, CblasTrans, CblasNoTrans, out_c, (int)width,
        (int)count, 1.f, task->dy + r * out_c, out_c, columns, (int)width,
        r == begin ? 0.f : 1.f, dweight, (int)width);
  }
}

static void
conv_weight_sum_task (void *data, int thread, int num_threads)
{
  ConvTask *task = data;
  size_t count = task->width * task->conv->out_channels;
  size_t begin, end, i;
  int t;

  gt_cpu_split (count, thread, num_threads, &begin, &end);
  for (t = 1; t < num_threads; t++) {
    const float *partial = task->scratch->weight_partials[t];

    for (i = begin; i < end; i++)
      task->dweight[i] += partial[i];
  }
}

/* dx = dy * weight, as columns scattered back (im2col's transpose); split
 * by images so that no two threads add onto the same pixel. */
GT_CPU_STREAMING static void
conv_data_grad_task (void *data, int thread, int num_threads)
{
  ConvTask *task = data;
  const GtConvSpec *conv = task->conv;
  size_t pixels = (size_t)task->out_h * task->out_w;
  size_t width = task->width, chunk = task->chunk;
  int out_c = conv->out_channels;
  size_t begin, end, r;

  if (conv_is_direct (conv)) {
    gt_cpu_split ((size_t)task->n * pixels, thread, num_threads, &begin, &end);
    if (begin < end)
      gt_cpu_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans,
          (int)(end - begin), (int)width, out_c, 1.f, task->dy + begin * out_c,
          out_c, task->weight, (int)width, 0.f, task->dx + begin * width,
          (int)width);
    return;
  }
  gt_cpu_split (task->n, thread, num_threads, &begin, &end);
  if (begin == end)
    return;
  memset (task->dx + begin * task->h * task->w * conv->in_channels, 0,
      (end - begin) * task->h * task->w * conv->in_channels * sizeof (float));
  end *= pixels;
  for (r = begin * pixels; r < end; r += chunk) {
    size_t count = end - r < chunk ? end - r : chunk;
    float *columns = task->scratch->columns[thread];

    gt_cpu_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)count,
        (int)width, out_c, 1.f, task->dy + r * out_c, out_c, task->weight,
        (int)width, 0.f, columns, (int)width);
    col2im_add (task, r, count, columns);
  }
}

void
gt_cpu_conv_backward (GtCpuPool *pool, GtCpuScratch *scratch,
    const GtConvSpec *conv, const float *x, int n, const float *weight,
    const float *dy, float *dx, float *dweight)
{
  ConvTask task = conv_task (scratch, conv, x, n, weight);

  task.dy = dy;
  task.dx = dx;
  task.dweight = dweight;
  if (direct_fits (scratch, conv, dx != NULL)) {
    gt_cpu_direct_conv_backward (
        pool, scratch, conv, x, n, weight, dy, dx, dweight);
    return;
  }
  if (direct_fits (scratch, conv, 0)) {
    /* a strided 3x3: the direct kernels for the weights, im2col's
     * transpose for the input */
    gt_cpu_direct_conv_backward (
        pool, scratch, conv, x, n, weight, dy, NULL, dweight);
    gt_cpu_pool_run (pool, conv_data_grad_task, &task);
    return;
  }
  gt_cpu_pool_run (pool, conv_weight_grad_task, &task);
  if (gt_cpu_pool_size (pool) > 1)
    gt_cpu_pool_run (pool, conv_weight_sum_task, &task);
  if (dx != NULL)
    gt_cpu_pool_run (pool, conv_data_grad_task, &task);
}
