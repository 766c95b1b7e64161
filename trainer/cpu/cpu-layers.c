/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-layers.c: pooling, the classifier, the loss and the input's
 * normalisation, in fp32 on the CPU (the convolutions are in cpu-conv.c,
 * batch-norm in cpu-norm.c). */
#include "cpu-layers.h"
#include "cpu-blas.h"
#include "cpu-streaming.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- pooling ---- */

typedef struct
{
  const float *x;
  const float *dy;
  int n, h, w, channels, out_h, out_w;
  float *y;
  float *dx;
  int *argmax;
  int hw;
} PoolTask;

/* Each thread takes whole images: y and argmax of its images only. */
GT_CPU_STREAMING static void
maxpool_forward_task (void *data, int thread, int num_threads)
{
  PoolTask *task = data;
  int channels = task->channels;
  size_t begin, end, image;

  gt_cpu_split (task->n, thread, num_threads, &begin, &end);
  for (image = begin; image < end; image++) {
    const float *in = task->x + image * task->h * task->w * channels;
    size_t out_base = image * task->out_h * task->out_w * channels;
    int oy, ox, ky, kx, c;

    for (oy = 0; oy < task->out_h; oy++)
      for (ox = 0; ox < task->out_w; ox++) {
        float *out = task->y + out_base + (oy * task->out_w + ox) * channels;
        int *arg = task->argmax + out_base + (oy * task->out_w + ox) * channels;

        for (c = 0; c < channels; c++) {
          out[c] = -FLT_MAX;
          arg[c] = -1;
        }
        for (ky = 0; ky < 3; ky++) {
          int iy = oy * 2 - 1 + ky;

          if (iy < 0 || iy >= task->h)
            continue;
          for (kx = 0; kx < 3; kx++) {
            int ix = ox * 2 - 1 + kx;
            int offset = (iy * task->w + ix) * channels;

            if (ix < 0 || ix >= task->w)
              continue;
            /* Strictly greater: the first maximum wins, as in PyTorch
             * (NaN propagates too: a NaN is never replaced). */
            for (c = 0; c < channels; c++)
              if (in[offset + c] > out[c] || isnan (in[offset + c])) {
                if (arg[c] >= 0 && isnan (out[c]))
                  continue;
                out[c] = in[offset + c];
                arg[c] = offset + c;
              }
          }
        }
      }
  }
}

/* A max-pool task over @n images of @h x @w x @channels. */
static PoolTask
maxpool_task (int n, int h, int w, int channels)
{
  return (PoolTask){
    .n = n,
    .h = h,
    .w = w,
    .channels = channels,
    .out_h = gt_maxpool_output_size (h),
    .out_w = gt_maxpool_output_size (w),
  };
}

void
gt_cpu_maxpool_forward (GtCpuPool *pool, const float *x, int n, int h, int w,
    int channels, float *y, int *argmax)
{
  PoolTask task = maxpool_task (n, h, w, channels);

  task.x = x;
  task.y = y;
  task.argmax = argmax;
  gt_cpu_pool_run (pool, maxpool_forward_task, &task);
}

GT_CPU_STREAMING static void
maxpool_backward_task (void *data, int thread, int num_threads)
{
  PoolTask *task = data;
  size_t in_size = (size_t)task->h * task->w * task->channels;
  size_t out_size = (size_t)task->out_h * task->out_w * task->channels;
  size_t begin, end, image, i;

  gt_cpu_split (task->n, thread, num_threads, &begin, &end);
  for (image = begin; image < end; image++) {
    float *dx = task->dx + image * in_size;

    memset (dx, 0, in_size * sizeof (float));
    for (i = 0; i < out_size; i++)
      dx[task->argmax[image * out_size + i]] += task->dy[image * out_size + i];
  }
}

void
gt_cpu_maxpool_backward (GtCpuPool *pool, const float *dy, int n, int h, int w,
    int channels, const int *argmax, float *dx)
{
  PoolTask task = maxpool_task (n, h, w, channels);

  task.dy = dy;
  task.argmax = (int *)argmax;
  task.dx = dx;
  gt_cpu_pool_run (pool, maxpool_backward_task, &task);
}

void
gt_cpu_avgpool_forward (const float *x, int n, int hw, int channels, float *y)
{
  int image, p, c;

  for (image = 0; image < n; image++) {
    float *out = y + (size_t)image * channels;
    double sums[channels];

    memset (sums, 0, sizeof (sums));
    for (p = 0; p < hw; p++) {
      const float *in = x + ((size_t)image * hw + p) * channels;

      for (c = 0; c < channels; c++)
        sums[c] += in[c];
    }
    for (c = 0; c < channels; c++)
      out[c] = (float)(sums[c] / hw);
  }
}

GT_CPU_STREAMING static void
avgpool_backward_task (void *data, int thread, int num_threads)
{
  PoolTask *task = data;
  size_t begin, end, row;
  int c;

  gt_cpu_split ((size_t)task->n * task->hw, thread, num_threads, &begin, &end);
  for (row = begin; row < end; row++) {
    const float *g = task->dy + (row / task->hw) * task->channels;
    float *out = task->dx + row * task->channels;

    for (c = 0; c < task->channels; c++)
      out[c] = g[c] / task->hw;
  }
}

void
gt_cpu_avgpool_backward (
    GtCpuPool *pool, const float *dy, int n, int hw, int channels, float *dx)
{
  PoolTask task = {
    .dy = dy, .n = n, .hw = hw, .channels = channels, .dx = dx
  };

  gt_cpu_pool_run (pool, avgpool_backward_task, &task);
}

/* ---- classifier and loss ---- */

void
gt_cpu_linear_forward (const float *x, int n, int in_features, int out_features,
    const float *weight, const float *bias, float *y)
{
  int i;

  for (i = 0; i < n; i++)
    memcpy (y + (size_t)i * out_features, bias, out_features * sizeof (float));
  gt_cpu_sgemm (CblasRowMajor, CblasNoTrans, CblasTrans, n, out_features,
      in_features, 1.f, x, in_features, weight, in_features, 1.f, y,
      out_features);
}

void
gt_cpu_linear_backward (const float *x, int n, int in_features,
    int out_features, const float *weight, const float *dy, float *dx,
    float *dweight, float *dbias)
{
  int i, o;

  gt_cpu_sgemm (CblasRowMajor, CblasTrans, CblasNoTrans, out_features,
      in_features, n, 1.f, dy, out_features, x, in_features, 0.f, dweight,
      in_features);
  for (o = 0; o < out_features; o++) {
    double sum = 0;

    for (i = 0; i < n; i++)
      sum += dy[(size_t)i * out_features + o];
    dbias[o] = (float)sum;
  }
  gt_cpu_sgemm (CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in_features,
      out_features, 1.f, dy, out_features, weight, in_features, 0.f, dx,
      in_features);
}

double
gt_cpu_cross_entropy (const float *logits, const int32_t *labels, int n,
    int classes, float label_smoothing, float *dlogits, int *correct_top1,
    int *correct_top5)
{
  double total = 0;
  int i, k;

  *correct_top1 = 0;
  *correct_top5 = 0;
  for (i = 0; i < n; i++) {
    const float *row = logits + (size_t)i * classes;
    int label = labels[i];
    double max = row[0], sum = 0, sum_log_p = 0, log_sum;
    int above = 0;

    for (k = 1; k < classes; k++)
      if (row[k] > max)
        max = row[k];
    for (k = 0; k < classes; k++)
      sum += exp ((double)row[k] - max);
    log_sum = max + log (sum);
    for (k = 0; k < classes; k++) {
      sum_log_p += row[k] - log_sum;
      if (row[k] > row[label])
        above++;
    }
    /* loss = (1 - e) * -log p[label] + e * mean_k(-log p[k]) */
    total += (1.0 - label_smoothing) * (log_sum - row[label])
        - label_smoothing * sum_log_p / classes;
    if (above == 0)
      (*correct_top1)++;
    if (above < 5)
      (*correct_top5)++;
    if (dlogits != NULL)
      for (k = 0; k < classes; k++) {
        double target = label_smoothing / classes
            + (k == label ? 1.0 - label_smoothing : 0.0);

        dlogits[(size_t)i * classes + k] =
            (float)((exp ((double)row[k] - log_sum) - target) / n);
      }
  }
  return total;
}

/* ---- input ---- */

typedef struct
{
  const GtBatch *batch;
  const float *mean;
  const float *std;
  float *x;
} InputTask;

GT_CPU_STREAMING static void
normalize_input_task (void *data, int thread, int num_threads)
{
  InputTask *task = data;
  const GtBatch *batch = task->batch;
  size_t channels = batch->channels;
  size_t row_stride =
      batch->row_stride ? batch->row_stride : (size_t)batch->width * channels;
  size_t image_stride =
      batch->image_stride ? batch->image_stride : row_stride * batch->height;
  float scale[3], offset[3];
  size_t begin, end, image;
  int y, x, c;

  /* (u / 255 - mean) / std as one multiply-add per value */
  for (c = 0; c < 3; c++) {
    scale[c] = 1.f / (255.f * task->std[c]);
    offset[c] = -task->mean[c] / task->std[c];
  }
  gt_cpu_split (batch->num_samples, thread, num_threads, &begin, &end);
  for (image = begin; image < end; image++) {
    float *out = task->x + image * batch->height * batch->width * 3;

    for (y = 0; y < batch->height; y++) {
      const uint8_t *in =
          batch->images + image * image_stride + (size_t)y * row_stride;

      for (x = 0; x < batch->width; x++, in += channels, out += 3)
        for (c = 0; c < 3; c++)
          out[c] = in[channels == 3 ? c : 0] * scale[c] + offset[c];
    }
  }
}

void
gt_cpu_normalize_input (GtCpuPool *pool, const GtBatch *batch,
    const float mean[3], const float std[3], float *x)
{
  InputTask task = { batch, mean, std, x };

  gt_cpu_pool_run (pool, normalize_input_task, &task);
}
