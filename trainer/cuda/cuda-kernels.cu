/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-kernels.cu: the kernels of cuda-kernels.h but batch-norm
 * (cuda-norm.cu): input, pooling, classifier and loss, optimiser,
 * conversions.
 *
 * Element-wise passes move four channels per thread (16 bytes in fp32, 8 in
 * bf16): every batch-norm width is a multiple of four, which the backend
 * checks when it builds the layers. Arithmetic that decides fp32 parity
 * with the CPU reference is written with __fmul_rn / __fadd_rn, which the
 * compiler may not contract into FMAs, because the CPU reference (built for
 * baseline x86-64) rounds after each operation too. */
#include "cuda-kernels-private.h"

#include <float.h>
#include <math.h>

/* ---- input ---- */

template <typename T>
static __global__ void
normalize_input_kernel (const uint8_t *images, size_t pixels, int channels,
    float3 scale, float3 offset, T *x)
{
  size_t i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < pixels;
       i += (size_t)gridDim.x * blockDim.x) {
    const uint8_t *in = images + i * channels;
    float r = in[0], g = in[channels == 3 ? 1 : 0],
          b = in[channels == 3 ? 2 : 0];

    x[i * 3 + 0] = from_float<T> (__fadd_rn (__fmul_rn (r, scale.x), offset.x));
    x[i * 3 + 1] = from_float<T> (__fadd_rn (__fmul_rn (g, scale.y), offset.y));
    x[i * 3 + 2] = from_float<T> (__fadd_rn (__fmul_rn (b, scale.z), offset.z));
  }
}

cudaError_t
gt_cuda_normalize_input (GtCudaDtype dtype, const uint8_t *images,
    size_t pixels, int channels, const float scale[3], const float offset[3],
    void *x, cudaStream_t stream)
{
  float3 s = make_float3 (scale[0], scale[1], scale[2]);
  float3 o = make_float3 (offset[0], offset[1], offset[2]);
  unsigned grid = grid_for (pixels, THREADS);

  if (dtype == GT_CUDA_F32)
    normalize_input_kernel<float><<<grid, THREADS, 0, stream>>> (
        images, pixels, channels, s, o, (float *)x);
  else
    normalize_input_kernel<bf16><<<grid, THREADS, 0, stream>>> (
        images, pixels, channels, s, o, (bf16 *)x);
  return cudaGetLastError ();
}

/* ---- pooling ---- */

static __host__ __device__ int
pool_output_size (int size)
{
  return (size + 2 - 3) / 2 + 1;
}

/* The first maximum wins and a NaN is never replaced, as in PyTorch and
 * gt_cpu_maxpool_forward. */
template <typename T>
static __global__ void
maxpool_forward_kernel (
    const T *x, int n, int h, int w, int channels, T *y, uint8_t *argmax)
{
  int out_h = pool_output_size (h), out_w = pool_output_size (w);
  size_t total = (size_t)n * out_h * out_w * channels, i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    int c = (int)(i % channels);
    size_t pixel = i / channels;
    int ox = (int)(pixel % out_w), oy = (int)(pixel / out_w % out_h);
    size_t image = pixel / ((size_t)out_w * out_h);
    const T *in = x + image * h * w * channels + c;
    float best = -FLT_MAX;
    int arg = -1, ky, kx;

    for (ky = 0; ky < 3; ky++) {
      int iy = oy * 2 - 1 + ky;

      if (iy < 0 || iy >= h)
        continue;
      for (kx = 0; kx < 3; kx++) {
        int ix = ox * 2 - 1 + kx;
        float v;

        if (ix < 0 || ix >= w)
          continue;
        v = to_float (in[((size_t)iy * w + ix) * channels]);
        if (v > best || isnan (v)) {
          if (arg >= 0 && isnan (best))
            continue;
          best = v;
          arg = ky * 3 + kx;
        }
        if (arg < 0) /* -inf everywhere so far: still a winner */
          arg = ky * 3 + kx, best = v;
      }
    }
    y[i] = from_float<T> (best);
    argmax[i] = (uint8_t)arg;
  }
}

/* Each input gathers the gradients of the (at most 2 x 2) outputs whose
 * window chose it, in output order, as the CPU's scatter adds them. */
template <typename T>
static __global__ void
maxpool_backward_kernel (const T *dy, int n, int h, int w, int channels,
    const uint8_t *argmax, T *dx)
{
  int out_h = pool_output_size (h), out_w = pool_output_size (w);
  size_t total = (size_t)n * h * w * channels, i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    int c = (int)(i % channels);
    size_t pixel = i / channels;
    int ix = (int)(pixel % w), iy = (int)(pixel / w % h);
    size_t image = pixel / ((size_t)w * h);
    size_t base = image * out_h * out_w;
    int oy_first = iy / 2, oy_last = (iy + 1) / 2;
    int ox_first = ix / 2, ox_last = (ix + 1) / 2;
    float sum = 0.f;
    int oy, ox;

    /* output oy covers rows 2 oy - 1 .. 2 oy + 1 */
    if (oy_last >= out_h)
      oy_last = out_h - 1;
    if (ox_last >= out_w)
      ox_last = out_w - 1;
    for (oy = oy_first; oy <= oy_last; oy++)
      for (ox = ox_first; ox <= ox_last; ox++) {
        size_t o = ((base + (size_t)oy * out_w + ox) * channels) + c;
        int tap = (iy - (oy * 2 - 1)) * 3 + (ix - (ox * 2 - 1));

        if (argmax[o] == tap)
          sum += to_float (dy[o]);
      }
    dx[i] = from_float<T> (sum);
  }
}

cudaError_t
gt_cuda_maxpool_forward (GtCudaDtype dtype, const void *x, int n, int h, int w,
    int channels, void *y, uint8_t *argmax, cudaStream_t stream)
{
  size_t total =
      (size_t)n * pool_output_size (h) * pool_output_size (w) * channels;
  unsigned grid = grid_for (total, THREADS);

  if (dtype == GT_CUDA_F32)
    maxpool_forward_kernel<float><<<grid, THREADS, 0, stream>>> (
        (const float *)x, n, h, w, channels, (float *)y, argmax);
  else
    maxpool_forward_kernel<bf16><<<grid, THREADS, 0, stream>>> (
        (const bf16 *)x, n, h, w, channels, (bf16 *)y, argmax);
  return cudaGetLastError ();
}

cudaError_t
gt_cuda_maxpool_backward (GtCudaDtype dtype, const void *dy, int n, int h,
    int w, int channels, const uint8_t *argmax, void *dx, cudaStream_t stream)
{
  unsigned grid = grid_for ((size_t)n * h * w * channels, THREADS);

  if (dtype == GT_CUDA_F32)
    maxpool_backward_kernel<float><<<grid, THREADS, 0, stream>>> (
        (const float *)dy, n, h, w, channels, argmax, (float *)dx);
  else
    maxpool_backward_kernel<bf16><<<grid, THREADS, 0, stream>>> (
        (const bf16 *)dy, n, h, w, channels, argmax, (bf16 *)dx);
  return cudaGetLastError ();
}

template <typename T>
static __global__ void
avgpool_forward_kernel (const T *x, int n, int hw, int channels, T *y)
{
  size_t total = (size_t)n * channels, i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    size_t image = i / channels;
    int c = (int)(i % channels), p;
    float sum = 0.f;

    for (p = 0; p < hw; p++)
      sum += to_float (x[(image * hw + p) * channels + c]);
    y[i] = from_float<T> (sum / hw);
  }
}

template <typename T>
static __global__ void
avgpool_backward_kernel (const T *dy, int n, int hw, int channels, T *dx)
{
  size_t total = (size_t)n * hw * channels, i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    size_t image = i / ((size_t)hw * channels);
    int c = (int)(i % channels);

    dx[i] = from_float<T> (to_float (dy[image * channels + c]) / hw);
  }
}

cudaError_t
gt_cuda_avgpool_forward (GtCudaDtype dtype, const void *x, int n, int hw,
    int channels, void *y, cudaStream_t stream)
{
  unsigned grid = grid_for ((size_t)n * channels, THREADS);

  if (dtype == GT_CUDA_F32)
    avgpool_forward_kernel<float><<<grid, THREADS, 0, stream>>> (
        (const float *)x, n, hw, channels, (float *)y);
  else
    avgpool_forward_kernel<bf16><<<grid, THREADS, 0, stream>>> (
        (const bf16 *)x, n, hw, channels, (bf16 *)y);
  return cudaGetLastError ();
}

cudaError_t
gt_cuda_avgpool_backward (GtCudaDtype dtype, const void *dy, int n, int hw,
    int channels, void *dx, cudaStream_t stream)
{
  unsigned grid = grid_for ((size_t)n * hw * channels, THREADS);

  if (dtype == GT_CUDA_F32)
    avgpool_backward_kernel<float><<<grid, THREADS, 0, stream>>> (
        (const float *)dy, n, hw, channels, (float *)dx);
  else
    avgpool_backward_kernel<bf16><<<grid, THREADS, 0, stream>>> (
        (const bf16 *)dy, n, hw, channels, (bf16 *)dx);
  return cudaGetLastError ();
}

/* ---- classifier and loss ---- */

static __global__ void
broadcast_rows_kernel (const float *bias, int n, int columns, float *y)
{
  size_t total = (size_t)n * columns, i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x)
    y[i] = bias[i % columns];
}

cudaError_t
gt_cuda_broadcast_rows (
    const float *bias, int n, int columns, float *y, cudaStream_t stream)
{
  broadcast_rows_kernel<<<grid_for ((size_t)n * columns, THREADS), THREADS, 0,
      stream>>> (bias, n, columns, y);
  return cudaGetLastError ();
}

static __global__ void
column_sums_kernel (const float *dy, int n, int columns, float *sums)
{
  int o = blockIdx.x * blockDim.x + threadIdx.x, i;
  double sum = 0;

  if (o >= columns)
    return;
  for (i = 0; i < n; i++)
    sum += dy[(size_t)i * columns + o];
  sums[o] = (float)sum;
}

cudaError_t
gt_cuda_column_sums (
    const float *dy, int n, int columns, float *sums, cudaStream_t stream)
{
  column_sums_kernel<<<(columns + 127) / 128, 128, 0, stream>>> (
      dy, n, columns, sums);
  return cudaGetLastError ();
}

/* A fixed-order tree over the block: every thread gets the result. */
template <typename V, typename Op>
static __device__ V
block_reduce (V value, V *shared, Op op)
{
  int stride;

  shared[threadIdx.x] = value;
  __syncthreads ();
  for (stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if ((int)threadIdx.x < stride)
      shared[threadIdx.x] =
          op (shared[threadIdx.x], shared[threadIdx.x + stride]);
    __syncthreads ();
  }
  value = shared[0];
  __syncthreads ();
  return value;
}

struct MaxOp
{
  __device__ float operator() (float a, float b) const
  {
    return b > a ? b : a;
  }
};

struct AddOp
{
  template <typename V> __device__ V operator() (V a, V b) const
  {
    return a + b;
  }
};

/* One block per sample, in double as gt_cpu_cross_entropy: loss = (1 - e) *
 * (log_sum - x[label]) - e * mean_k (x[k] - log_sum). */
template <typename T>
static __global__ void
cross_entropy_kernel (const float *logits, const int32_t *labels, int n,
    int classes, float label_smoothing, float *dlogits, T *dlogits_work,
    double *sample_loss, int *sample_hits)
{
  __shared__ double shared_double[THREADS];
  __shared__ float shared_float[THREADS];
  __shared__ int shared_int[THREADS];
  int i = blockIdx.x, k, label = labels[i], above = 0;
  const float *row = logits + (size_t)i * classes;
  float max = -INFINITY, label_value = row[label];
  double sum = 0, sum_x = 0, log_sum;

  for (k = threadIdx.x; k < classes; k += blockDim.x)
    max = row[k] > max ? row[k] : max;
  max = block_reduce (max, shared_float, MaxOp ());
  for (k = threadIdx.x; k < classes; k += blockDim.x) {
    sum += exp ((double)row[k] - max);
    sum_x += row[k];
    if (row[k] > label_value)
      above++;
  }
  sum = block_reduce (sum, shared_double, AddOp ());
  sum_x = block_reduce (sum_x, shared_double, AddOp ());
  above = block_reduce (above, shared_int, AddOp ());
  log_sum = max + log (sum);
  if (threadIdx.x == 0) {
    double sum_log_p = sum_x - classes * log_sum;

    sample_loss[i] = (1.0 - label_smoothing) * (log_sum - label_value)
        - label_smoothing * sum_log_p / classes;
    sample_hits[i] = (above == 0 ? 1 : 0) | (above < 5 ? 2 : 0);
  }
  if (dlogits == NULL)
    return;
  for (k = threadIdx.x; k < classes; k += blockDim.x) {
    double target = (double)label_smoothing / classes
        + (k == label ? 1.0 - label_smoothing : 0.0);
    float g = (float)((exp ((double)row[k] - log_sum) - target) / n);

    dlogits[(size_t)i * classes + k] = g;
    if (dlogits_work)
      dlogits_work[(size_t)i * classes + k] = from_float<T> (g);
  }
}

static __global__ void
loss_sum_kernel (const double *sample_loss, const int *sample_hits, int n,
    GtCudaLossResult *result)
{
  __shared__ double shared_double[THREADS];
  __shared__ int shared_int[THREADS];
  double loss = 0;
  int top1 = 0, top5 = 0, i;

  /* each thread a contiguous run, then the tree: a fixed order */
  for (i = threadIdx.x; i < n; i += blockDim.x) {
    loss += sample_loss[i];
    top1 += sample_hits[i] & 1;
    top5 += (sample_hits[i] >> 1) & 1;
  }
  loss = block_reduce (loss, shared_double, AddOp ());
  top1 = block_reduce (top1, shared_int, AddOp ());
  top5 = block_reduce (top5, shared_int, AddOp ());
  if (threadIdx.x == 0) {
    float mean = (float)(loss / n);

    result->loss_sum = loss;
    result->loss = mean;
    result->correct_top1 = top1;
    result->correct_top5 = top5;
    result->finite = isfinite (mean) ? 1 : 0;
  }
}

cudaError_t
gt_cuda_cross_entropy (const float *logits, const int32_t *labels, int n,
    int classes, float label_smoothing, float *dlogits, void *dlogits_work,
    GtCudaDtype dtype, double *sample_loss, int *sample_hits,
    GtCudaLossResult *result, cudaStream_t stream)
{
  cudaError_t err;

  if (dtype == GT_CUDA_F32)
    cross_entropy_kernel<float><<<n, THREADS, 0, stream>>> (logits, labels, n,
        classes, label_smoothing, dlogits, (float *)dlogits_work, sample_loss,
        sample_hits);
  else
    cross_entropy_kernel<bf16><<<n, THREADS, 0, stream>>> (logits, labels, n,
        classes, label_smoothing, dlogits, (bf16 *)dlogits_work, sample_loss,
        sample_hits);
  if ((err = cudaGetLastError ()) != cudaSuccess)
    return err;
  loss_sum_kernel<<<1, THREADS, 0, stream>>> (
      sample_loss, sample_hits, n, result);
  return cudaGetLastError ();
}

/* ---- optimiser ---- */

template <typename T>
static __global__ void
sgd_kernel (const GtCudaSgdChunk *chunks, float *params, float *grads,
    const T *grads_work, float *momentum, T *params_work, float momentum_factor,
    int nesterov, const GtCudaStepParams *step, const GtCudaLossResult *result)
{
  GtCudaSgdChunk chunk = chunks[blockIdx.x];
  float lr = step->lr;
  uint32_t j;

  if (!result->finite)
    return;
  for (j = threadIdx.x; j < chunk.count; j += blockDim.x) {
    size_t i = (size_t)chunk.offset + j;
    float w = params[i], g, buf, update;

    if (chunk.flags & GT_CUDA_SGD_GRAD_FROM_WORK) {
      g = to_float (grads_work[i]);
      grads[i] = g;
    } else {
      g = grads[i];
    }
    g = __fadd_rn (g, __fmul_rn (chunk.decay, w));
    buf = __fadd_rn (__fmul_rn (momentum_factor, momentum[i]), g);
    momentum[i] = buf;
    update = nesterov ? __fadd_rn (g, __fmul_rn (momentum_factor, buf)) : buf;
    w = __fsub_rn (w, __fmul_rn (lr, update));
    params[i] = w;
    if (chunk.flags & GT_CUDA_SGD_WRITE_WORK)
      params_work[i] = from_float<T> (w);
  }
}

cudaError_t
gt_cuda_sgd (const GtCudaSgdChunk *chunks, int num_chunks, float *params,
    float *grads, const void *grads_work, float *momentum, void *params_work,
    GtCudaDtype dtype, float momentum_factor, int nesterov,
    const GtCudaStepParams *params_device, const GtCudaLossResult *result,
    cudaStream_t stream)
{
  if (dtype == GT_CUDA_F32)
    sgd_kernel<float><<<num_chunks, THREADS, 0, stream>>> (chunks, params,
        grads, (const float *)grads_work, momentum, (float *)params_work,
        momentum_factor, nesterov, params_device, result);
  else
    sgd_kernel<bf16><<<num_chunks, THREADS, 0, stream>>> (chunks, params, grads,
        (const bf16 *)grads_work, momentum, (bf16 *)params_work,
        momentum_factor, nesterov, params_device, result);
  return cudaGetLastError ();
}

static __global__ void
restore_if_nonfinite_kernel (float *stats, const float *saved, size_t count,
    const GtCudaLossResult *result)
{
  size_t i;

  if (result->finite)
    return;
  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x)
    stats[i] = saved[i];
}

cudaError_t
gt_cuda_restore_if_nonfinite (float *stats, const float *saved, size_t count,
    const GtCudaLossResult *result, cudaStream_t stream)
{
  restore_if_nonfinite_kernel<<<grid_for (count, THREADS), THREADS, 0,
      stream>>> (stats, saved, count, result);
  return cudaGetLastError ();
}

/* ---- conversions ---- */

template <typename T>
static __global__ void
convert_kernel (const float *src, T *dst, size_t count)
{
  size_t i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = from_float<T> (src[i]);
}

cudaError_t
gt_cuda_convert (const float *src, void *dst, GtCudaDtype dtype, size_t count,
    cudaStream_t stream)
{
  unsigned grid = grid_for (count, THREADS);

  if (dtype == GT_CUDA_F32)
    convert_kernel<float>
        <<<grid, THREADS, 0, stream>>> (src, (float *)dst, count);
  else
    convert_kernel<bf16>
        <<<grid, THREADS, 0, stream>>> (src, (bf16 *)dst, count);
  return cudaGetLastError ();
}

template <typename T>
static __global__ void
accumulate_kernel (T *dst, const T *src, size_t count)
{
  size_t i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = from_float<T> (__fadd_rn (to_float (dst[i]), to_float (src[i])));
}

cudaError_t
gt_cuda_accumulate (GtCudaDtype dtype, void *dst, const void *src, size_t count,
    cudaStream_t stream)
{
  unsigned grid = grid_for (count, THREADS);

  if (dtype == GT_CUDA_F32)
    accumulate_kernel<float><<<grid, THREADS, 0, stream>>> (
        (float *)dst, (const float *)src, count);
  else
    accumulate_kernel<bf16>
        <<<grid, THREADS, 0, stream>>> ((bf16 *)dst, (const bf16 *)src, count);
  return cudaGetLastError ();
}

template <typename T>
static __global__ void
fill_random_kernel (T *dst, size_t count, uint32_t seed)
{
  size_t i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x) {
    /* a 32-bit integer hash of (i, seed) */
    uint32_t h = (uint32_t)i * 0x9e3779b9u ^ seed;

    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    dst[i] = from_float<T> ((float)h * (2.0f / 4294967296.0f) - 1.0f);
  }
}

cudaError_t
gt_cuda_fill_random (void *dst, GtCudaDtype dtype, size_t count, uint32_t seed,
    cudaStream_t stream)
{
  unsigned grid = grid_for (count, THREADS);

  if (dtype == GT_CUDA_F32)
    fill_random_kernel<float>
        <<<grid, THREADS, 0, stream>>> ((float *)dst, count, seed);
  else
    fill_random_kernel<bf16>
        <<<grid, THREADS, 0, stream>>> ((bf16 *)dst, count, seed);
  return cudaGetLastError ();
}
