/* cpu-layers.c: convolution (im2col + sgemm), batch-norm, pooling, the
 * classifier and the loss, in fp32 on the CPU. */
#include "cpu-layers.h"
#include "cpu-blas.h"
#include "cpu-direct-conv.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NORM_EPS 1e-5
#define NORM_MOMENTUM 0.1

const char *
gt_cpu_streaming_isa_name (void)
{
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
  /* the order GCC's resolver tries the versions in */
  __builtin_cpu_init ();
  if (__builtin_cpu_supports ("x86-64-v4"))
    return "avx512";
  if (__builtin_cpu_supports ("x86-64-v3"))
    return "avx2";
#endif
  return "sse";
}

int
gt_cpu_scratch_init (GtCpuScratch *scratch, int num_threads,
    size_t column_floats, size_t partial_floats, int max_channels,
    size_t pad_floats)
{
  size_t direct_floats = 9 * 64 * 64;
  int t;

  memset (scratch, 0, sizeof (*scratch));
  scratch->num_threads = num_threads;
  scratch->column_floats = column_floats;
  scratch->partial_floats = partial_floats;
  scratch->max_channels = max_channels;
  scratch->columns = calloc (num_threads, sizeof (float *));
  scratch->weight_partials = calloc (num_threads, sizeof (float *));
  scratch->channel_sums =
      calloc ((size_t)num_threads * 2 * max_channels, sizeof (double));
  scratch->conv_moments =
      calloc ((size_t)num_threads * (2 * max_channels + 1), sizeof (double));
  scratch->pad_floats = pad_floats;
  scratch->pads = calloc (num_threads, sizeof (float *));
  scratch->direct_grads = calloc (num_threads, sizeof (float *));
  scratch->direct_weights = malloc (direct_floats * sizeof (float));
  if (!scratch->columns || !scratch->weight_partials || !scratch->channel_sums
      || !scratch->conv_moments || !scratch->pads || !scratch->direct_grads
      || !scratch->direct_weights)
    return -1;
  for (t = 0; t < num_threads; t++) {
    scratch->columns[t] = malloc (column_floats * sizeof (float));
    scratch->direct_grads[t] = malloc (direct_floats * sizeof (float));
    if (pad_floats > 0)
      scratch->pads[t] = malloc (pad_floats * sizeof (float));
    if (!scratch->columns[t] || !scratch->direct_grads[t]
        || (pad_floats > 0 && !scratch->pads[t]))
      return -1;
    if (t > 0) {
      scratch->weight_partials[t] = malloc (partial_floats * sizeof (float));
      if (scratch->weight_partials[t] == NULL)
        return -1;
    }
  }
  return 0;
}

void
gt_cpu_scratch_clear (GtCpuScratch *scratch)
{
  int t;

  for (t = 0; t < scratch->num_threads; t++) {
    if (scratch->columns)
      free (scratch->columns[t]);
    if (scratch->weight_partials)
      free (scratch->weight_partials[t]);
    if (scratch->pads)
      free (scratch->pads[t]);
    if (scratch->direct_grads)
      free (scratch->direct_grads[t]);
  }
  free (scratch->pads);
  free (scratch->direct_grads);
  free (scratch->direct_weights);
  free (scratch->columns);
  free (scratch->weight_partials);
  free (scratch->channel_sums);
  free (scratch->conv_moments);
  memset (scratch, 0, sizeof (*scratch));
}

/* ---- convolution ---- */

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
  ConvTask task = { 0 };

  task.scratch = scratch;
  task.conv = conv;
  task.x = x;
  task.n = n;
  task.h = conv->in_h;
  task.w = conv->in_w;
  task.out_h = conv->out_h;
  task.out_w = conv->out_w;
  task.weight = weight;
  task.rows = (size_t)n * conv->out_h * conv->out_w;
  task.width = conv_column_width (conv);
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

/* ---- batch-norm ---- */

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

/* Calls @body with the channel count as a constant for the narrow layers
 * (16, 32, 64), where a per-row loop of one to four vectors would spend
 * more on its own overhead than on the data, else with @channels. */
#define WITH_CHANNELS(channels, body)                                          \
  switch (channels) {                                                          \
    case 16:                                                                   \
      body (16);                                                               \
      break;                                                                   \
    case 32:                                                                   \
      body (32);                                                               \
      break;                                                                   \
    case 64:                                                                   \
      body (64);                                                               \
      break;                                                                   \
    default:                                                                   \
      body (channels);                                                         \
  }

/* Rows summed in float before the sum moves into the double total: short
 * enough that float loses nothing that matters, long enough that the inner
 * loop over channels runs vectorised without the double conversion. */
#define NORM_BLOCK_ROWS 32

/* Sums of x (@shift NULL), or of x - shift and its square, over @rows rows,
 * in float blocks of NORM_BLOCK_ROWS rows added up in double. */
static inline __attribute__ ((always_inline)) void
block_sums_rows (const float *x, size_t rows, int channels, const float *shift,
    double *sums, double *squares)
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
#define BODY(c) block_sums_rows (x, rows, c, shift, sums, squares)
  WITH_CHANNELS (channels, BODY);
#undef BODY
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

GT_CPU_STREAMING static void
norm_apply_task (void *data, int thread, int num_threads)
{
  NormTask *task = data;

#define BODY(c) norm_apply_rows (task, thread, num_threads, c)
  WITH_CHANNELS (task->channels, BODY);
#undef BODY
}

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
  NormTask task = { 0 };
  double sums[channels], x_mean[channels];
  int c;

  task.scratch = scratch;
  task.rows = rows;
  task.channels = channels;
  task.x = x;

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
  NormTask task = { 0 };
  float scale[channels], bias[channels];
  int c;

  task.rows = rows;
  task.channels = channels;
  task.x = x;
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
  NormTask task = { 0 };
  float scale[channels], bias[channels];
  int c;

  for (c = 0; c < channels; c++) {
    scale[c] = (float)(gamma[c] / sqrt ((double)running_var[c] + NORM_EPS));
    bias[c] = beta[c] - running_mean[c] * scale[c];
  }
  task.rows = rows;
  task.channels = channels;
  task.x = x;
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

GT_CPU_STREAMING static void
norm_grad_sum_task (void *data, int thread, int num_threads)
{
  NormTask *task = data;

#define BODY(c) norm_grad_sum_rows (task, thread, num_threads, c)
  WITH_CHANNELS (task->channels, BODY);
#undef BODY
}

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

GT_CPU_STREAMING static void
norm_grad_apply_task (void *data, int thread, int num_threads)
{
  NormTask *task = data;

#define BODY(c) norm_grad_apply_rows (task, thread, num_threads, c)
  WITH_CHANNELS (task->channels, BODY);
#undef BODY
}

void
gt_cpu_norm_backward (GtCpuPool *pool, GtCpuScratch *scratch, size_t rows,
    int channels, const float *x, const float *mean, const float *invstd,
    const float *gamma, const float *y, const float *dy, float *dx,
    float *dgamma, float *dbeta, float *dresidual)
{
  NormTask task = { 0 };
  int num_threads = gt_cpu_pool_size (pool);
  float scale[channels], slope[channels], offset[channels];
  int t, c;

  task.scratch = scratch;
  task.rows = rows;
  task.channels = channels;
  task.x = x;
  task.mean = mean;
  task.invstd = invstd;
  task.gamma = gamma;
  task.out = y;
  task.dy = dy;
  task.dx = dx;
  task.dresidual = dresidual;
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
  PoolTask task = { 0 };

  task.n = n;
  task.h = h;
  task.w = w;
  task.channels = channels;
  task.out_h = gt_maxpool_output_size (h);
  task.out_w = gt_maxpool_output_size (w);
  return task;
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
  PoolTask task = { 0 };

  task.dy = dy;
  task.n = n;
  task.hw = hw;
  task.channels = channels;
  task.dx = dx;
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
