/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-norm.c: batch-norm, forward and backward, in fp32 on the CPU, and
 * the per-channel moments it and the direct convolutions take. */
#include "cpu-norm.h"
#include "cpu-streaming.h"

#include <math.h>
#include <string.h>

#define NORM_EPS 1e-5
#define NORM_MOMENTUM 0.1

typedef struct
{
  GtCpuScratch *scratch;
  size_t rows;
  int channels;
  const float *x;
  const float *gamma;
  const float *beta;
  const float *residual;
  int relu;
  float *y;
  const float *shift; /* the mean while summing squares, else NULL */
  const float *scale; /* y = x * scale + bias (forward), and */
  const float *bias;  /* dx = g * scale + x * slope + offset (backward) */
  const float *slope;
  const float *offset;
  /* backward */
  const float *mean;
  const float *invstd;
  const float *out;
  const float *dy;
  float *dx;
  float *dresidual;
} NormTask;

/* Before a loop over the channels of a row: with the channel count a
 * constant (WITH_CHANNELS), GCC would otherwise unroll the loop completely
 * before its vectoriser sees it and leave scalar code. */
#define VECTOR_LOOP _Pragma ("GCC unroll 1")

/* Calls @function (..., channels) with the channel count as a constant for
 * the narrow layers (16, 32, 64), where a per-row loop of one to four
 * vectors would spend more on its own overhead than on the data, else with
 * @channels. */
#define WITH_CHANNELS(channels, function, ...)                                 \
  switch (channels) {                                                          \
    case 16:                                                                   \
      function (__VA_ARGS__, 16);                                              \
      break;                                                                   \
    case 32:                                                                   \
      function (__VA_ARGS__, 32);                                              \
      break;                                                                   \
    case 64:                                                                   \
      function (__VA_ARGS__, 64);                                              \
      break;                                                                   \
    default:                                                                   \
      function (__VA_ARGS__, channels);                                        \
  }

/* A pool task over a NormTask that runs @rows (task, thread, num_threads,
 * channels) with the channel count a constant where WITH_CHANNELS makes it
 * one, built for each instruction set (GT_CPU_STREAMING). */
#define DEFINE_NORM_TASK(name, rows)                                           \
  GT_CPU_STREAMING static void name (void *data, int thread, int num_threads)  \
  {                                                                            \
    NormTask *task = data;                                                     \
                                                                               \
    WITH_CHANNELS (task->channels, rows, task, thread, num_threads);           \
  }

/* Rows summed in float before the sum moves into the double total: short
 * enough that float loses nothing that matters, long enough that the inner
 * loop over channels runs vectorised without the double conversion. */
#define NORM_BLOCK_ROWS 32

/* Sums of x (@shift NULL), or of x - shift and its square, over @rows rows,
 * in float blocks of NORM_BLOCK_ROWS rows added up in double. */
static inline __attribute__ ((always_inline)) void
block_sums_rows (const float *x, size_t rows, const float *shift, double *sums,
    double *squares, int channels)
{
  float block[channels], block_sq[channels];
  size_t r, block_end;
  int c;

  VECTOR_LOOP for (c = 0; c < channels; c++) sums[c] = squares[c] = 0;
  for (r = 0; r < rows; r = block_end) {
    block_end = r + NORM_BLOCK_ROWS < rows ? r + NORM_BLOCK_ROWS : rows;
    memset (block, 0, sizeof (block));
    memset (block_sq, 0, sizeof (block_sq));
    for (; r < block_end; r++) {
      const float *restrict row = x + r * channels;

      if (shift)
        VECTOR_LOOP for (c = 0; c < channels; c++)
        {
          float d = row[c] - shift[c];

          block[c] += d;
          block_sq[c] += d * d;
        }
      else
        VECTOR_LOOP for (c = 0; c < channels; c++) block[c] += row[c];
    }
    VECTOR_LOOP for (c = 0; c < channels; c++)
    {
      sums[c] += block[c];
      squares[c] += block_sq[c];
    }
  }
}

GT_CPU_STREAMING static void
block_sums (const float *x, size_t rows, int channels, const float *shift,
    double *sums, double *squares)
{
  WITH_CHANNELS (channels, block_sums_rows, x, rows, shift, sums, squares);
}

/* Per-channel sums of x (@shift NULL) over this thread's rows, or of
 * x - shift and (x - shift)^2: the first half of the thread's two slots
 * holds the sums, the second the squares. */
static void
norm_sum_task (void *data, int thread, int num_threads)
{
  NormTask *task = data;
  double *sums =
      task->scratch->channel_sums + (size_t)thread * 2 * task->channels;
  size_t begin, end;

  gt_cpu_split (task->rows, thread, num_threads, &begin, &end);
  block_sums (task->x + begin * task->channels, end - begin, task->channels,
      task->shift, sums, sums + task->channels);
}

/* Per-channel sums of x, or with task->shift set of (x - shift)^2, over
 * every row. */
static void
norm_channel_sums (GtCpuPool *pool, NormTask *task, double *out)
{
  int num_threads = gt_cpu_pool_size (pool);
  size_t half = task->shift ? (size_t)task->channels : 0;
  int t, c;

  gt_cpu_pool_run (pool, norm_sum_task, task);
  for (c = 0; c < task->channels; c++) {
    out[c] = 0;
    for (t = 0; t < num_threads; t++)
      out[c] += task->scratch
                    ->channel_sums[(size_t)t * 2 * task->channels + half + c];
  }
}

void
gt_cpu_moments_merge (double *count, double *mean, double *m2, double count_b,
    const double *mean_b, const double *m2_b, int channels)
{
  double total = *count + count_b;
  int c;

  if (count_b == 0)
    return;
  for (c = 0; c < channels; c++) {
    double delta = mean_b[c] - mean[c];

    mean[c] += delta * (count_b / total);
    m2[c] += m2_b[c] + delta * delta * (*count * count_b / total);
  }
  *count = total;
}

void
gt_cpu_moments_add (double *count, double *mean, double *m2, const float *x,
    size_t rows, int channels)
{
  double sums[channels], squares[channels], x_mean[channels], x_m2[channels];
  float shift[channels];
  int c;

  if (rows == 0)
    return;
  block_sums (x, rows, channels, NULL, sums, squares);
  for (c = 0; c < channels; c++)
    shift[c] = (float)(sums[c] / rows);
  /* deviations from the float mean, corrected to the exact one */
  block_sums (x, rows, channels, shift, sums, squares);
  for (c = 0; c < channels; c++) {
    x_mean[c] = shift[c] + sums[c] / rows;
    x_m2[c] = squares[c] - sums[c] * sums[c] / rows;
    if (x_m2[c] < 0)
      x_m2[c] = 0;
  }
  gt_cpu_moments_merge (count, mean, m2, (double)rows, x_mean, x_m2, channels);
}

/* y = relu?(x * scale + bias (+ residual)) per channel. */
static inline __attribute__ ((always_inline)) void
norm_apply_rows (NormTask *task, int thread, int num_threads, int channels)
{
  size_t begin, end, r;
  int c;

  gt_cpu_split (task->rows, thread, num_threads, &begin, &end);
  for (r = begin; r < end; r++) {
    const float *in = task->x + r * channels;
    const float *res = task->residual ? task->residual + r * channels : NULL;
    float *out = task->y + r * channels;

    VECTOR_LOOP for (c = 0; c < channels; c++)
    {
      float value = in[c] * task->scale[c] + task->bias[c];

      if (res)
        value += res[c];
      if (task->relu && value < 0.f)
        value = 0.f;
      out[c] = value;
    }
  }
}

DEFINE_NORM_TASK (norm_apply_task, norm_apply_rows)

/* y = relu?(x * scale + bias (+ residual)) over the task's rows: the last
 * pass of both forward batch-norms. */
static void
norm_apply (GtCpuPool *pool, NormTask *task, const float *scale,
    const float *bias, const float *residual, int relu, float *y)
{
  task->shift = NULL;
  task->scale = scale;
  task->bias = bias;
  task->residual = residual;
  task->relu = relu;
  task->y = y;
  gt_cpu_pool_run (pool, norm_apply_task, task);
}

void
gt_cpu_norm_forward_train (GtCpuPool *pool, GtCpuScratch *scratch, size_t rows,
    int channels, const float *x, const float *gamma, const float *beta,
    const float *residual, int relu, float *y, float *mean, float *invstd,
    float *running_mean, float *running_var)
{
  NormTask task = {
    .scratch = scratch, .rows = rows, .channels = channels, .x = x
  };
  double sums[channels], x_mean[channels];
  int c;

  /* Two passes (mean, then squared deviations) rather than E[x^2] - E[x]^2,
   * which cancels badly when the mean is large. */
  norm_channel_sums (pool, &task, sums);
  for (c = 0; c < channels; c++) {
    mean[c] = (float)(sums[c] / rows);
    x_mean[c] = mean[c];
  }
  task.shift = mean;
  norm_channel_sums (pool, &task, sums);
  gt_cpu_norm_forward_train_moments (pool, rows, channels, x, x_mean, sums,
      gamma, beta, residual, relu, y, mean, invstd, running_mean, running_var);
}

void
gt_cpu_norm_forward_train_moments (GtCpuPool *pool, size_t rows, int channels,
    const float *x, const double *x_mean, const double *x_m2,
    const float *gamma, const float *beta, const float *residual, int relu,
    float *y, float *mean, float *invstd, float *running_mean,
    float *running_var)
{
  NormTask task = { .rows = rows, .channels = channels, .x = x };
  float scale[channels], bias[channels];
  int c;

  for (c = 0; c < channels; c++) {
    double var = x_m2[c] / rows;
    double unbiased = rows > 1 ? x_m2[c] / (rows - 1) : var;

    mean[c] = (float)x_mean[c];
    invstd[c] = (float)(1.0 / sqrt (var + NORM_EPS));
    scale[c] = gamma[c] * invstd[c];
    bias[c] = beta[c] - mean[c] * scale[c];
    running_mean[c] = (float)((1.0 - NORM_MOMENTUM) * running_mean[c]
        + NORM_MOMENTUM * mean[c]);
    running_var[c] = (float)((1.0 - NORM_MOMENTUM) * running_var[c]
        + NORM_MOMENTUM * unbiased);
  }
  norm_apply (pool, &task, scale, bias, residual, relu, y);
}

void
gt_cpu_norm_forward_eval (GtCpuPool *pool, size_t rows, int channels,
    const float *x, const float *gamma, const float *beta,
    const float *running_mean, const float *running_var, const float *residual,
    int relu, float *y)
{
  NormTask task = { .rows = rows, .channels = channels, .x = x };
  float scale[channels], bias[channels];
  int c;

  for (c = 0; c < channels; c++) {
    scale[c] = (float)(gamma[c] / sqrt ((double)running_var[c] + NORM_EPS));
    bias[c] = beta[c] - running_mean[c] * scale[c];
  }
  norm_apply (pool, &task, scale, bias, residual, relu, y);
}

/* Per-channel sums of g and of g * xhat over this thread's rows, g being
 * dy masked where the ReLU was off. */
static inline __attribute__ ((always_inline)) void
norm_grad_sum_rows (NormTask *task, int thread, int num_threads, int channels)
{
  double *sums = task->scratch->channel_sums + (size_t)thread * 2 * channels;
  float sum_g[channels], sum_gx[channels];
  size_t begin, end, r, block_end;
  int c;

  gt_cpu_split (task->rows, thread, num_threads, &begin, &end);
  memset (sums, 0, 2 * channels * sizeof (double));
  for (r = begin; r < end; r = block_end) {
    block_end = r + NORM_BLOCK_ROWS < end ? r + NORM_BLOCK_ROWS : end;
    memset (sum_g, 0, sizeof (sum_g));
    memset (sum_gx, 0, sizeof (sum_gx));
    for (; r < block_end; r++) {
      const float *restrict x = task->x + r * channels;
      const float *restrict dy = task->dy + r * channels;
      const float *restrict y = task->out ? task->out + r * channels : NULL;
      const float *restrict mean = task->mean;
      float *restrict block_g = sum_g, *restrict block_gx = sum_gx;

      /* the two loops differ only in the mask: separate, both vectorise */
      if (y)
        VECTOR_LOOP for (c = 0; c < channels; c++)
        {
          float d = dy[c], g = y[c] > 0.f ? d : 0.f;

          block_g[c] += g;
          block_gx[c] += g * (x[c] - mean[c]);
        }
      else
        VECTOR_LOOP for (c = 0; c < channels; c++)
        {
          block_g[c] += dy[c];
          block_gx[c] += dy[c] * (x[c] - mean[c]);
        }
    }
    VECTOR_LOOP for (c = 0; c < channels; c++)
    {
      sums[c] += sum_g[c];
      sums[channels + c] += (double)sum_gx[c] * task->invstd[c];
    }
  }
}

DEFINE_NORM_TASK (norm_grad_sum_task, norm_grad_sum_rows)

/* dx = gamma * invstd * (g - mean(g) - xhat * mean(g * xhat)), rewritten
 * per channel as dx = scale * g + slope * x + offset. */
static inline __attribute__ ((always_inline)) void
norm_grad_apply_rows (NormTask *task, int thread, int num_threads, int channels)
{
  const float *restrict scale = task->scale;
  const float *restrict slope = task->slope;
  const float *restrict offset = task->offset;
  size_t begin, end, r;
  int c;

  gt_cpu_split (task->rows, thread, num_threads, &begin, &end);
  for (r = begin; r < end; r++) {
    const float *restrict x = task->x + r * channels;
    const float *restrict dy = task->dy + r * channels;
    const float *restrict y = task->out ? task->out + r * channels : NULL;
    float *restrict dx = task->dx + r * channels;
    float *restrict dresidual =
        task->dresidual ? task->dresidual + r * channels : NULL;

    if (y && dresidual)
      VECTOR_LOOP for (c = 0; c < channels; c++)
      {
        float d = dy[c], g = y[c] > 0.f ? d : 0.f;

        dresidual[c] = g;
        dx[c] = scale[c] * g + slope[c] * x[c] + offset[c];
      }
    else if (y)
      VECTOR_LOOP for (c = 0; c < channels; c++)
      {
        float d = dy[c], g = y[c] > 0.f ? d : 0.f;

        dx[c] = scale[c] * g + slope[c] * x[c] + offset[c];
      }
    else
      VECTOR_LOOP for (c = 0; c < channels; c++) dx[c] =
          scale[c] * dy[c] + slope[c] * x[c] + offset[c];
  }
}

DEFINE_NORM_TASK (norm_grad_apply_task, norm_grad_apply_rows)

void
gt_cpu_norm_backward (GtCpuPool *pool, GtCpuScratch *scratch, size_t rows,
    int channels, const float *x, const float *mean, const float *invstd,
    const float *gamma, const float *y, const float *dy, float *dx,
    float *dgamma, float *dbeta, float *dresidual)
{
  NormTask task = {
    .scratch = scratch,
    .rows = rows,
    .channels = channels,
    .x = x,
    .mean = mean,
    .invstd = invstd,
    .gamma = gamma,
    .out = y,
    .dy = dy,
    .dx = dx,
    .dresidual = dresidual,
  };
  int num_threads = gt_cpu_pool_size (pool);
  float scale[channels], slope[channels], offset[channels];
  int t, c;

  gt_cpu_pool_run (pool, norm_grad_sum_task, &task);
  for (c = 0; c < channels; c++) {
    double sum_dy = 0, sum_dy_xhat = 0;

    for (t = 0; t < num_threads; t++) {
      const double *sums = scratch->channel_sums + (size_t)t * 2 * channels;

      sum_dy += sums[c];
      sum_dy_xhat += sums[channels + c];
    }
    dbeta[c] = (float)sum_dy;
    dgamma[c] = (float)sum_dy_xhat;
    {
      double a = (double)gamma[c] * invstd[c];
      double mean_g = sum_dy / rows, mean_gxhat = sum_dy_xhat / rows;

      scale[c] = (float)a;
      slope[c] = (float)(-a * invstd[c] * mean_gxhat);
      offset[c] = (float)(a * (mean[c] * invstd[c] * mean_gxhat - mean_g));
    }
  }
  task.scale = scale;
  task.slope = slope;
  task.offset = offset;
  gt_cpu_pool_run (pool, norm_grad_apply_task, &task);
}
