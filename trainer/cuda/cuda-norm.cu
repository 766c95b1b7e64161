/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-norm.cu: the batch-norm kernels of cuda-kernels.h (with ReLU and
 * the residual add), cpu-norm.c's layers on the GPU. The notes at the top
 * of cuda-kernels.cu on four channels per thread and on rounding hold
 * here too. */
#include "cuda-kernels-private.h"

#include <math.h>

/* enough blocks to fill an H200 (132 multiprocessors) a few times over */
#define REDUCTION_BLOCKS 1056

/* ---- batch-norm ----
 *
 * A reduction block covers a tile of channels (tx threads of four channels)
 * and a chunk of rows (ty threads striding through it); its per-channel
 * sums go to partials[2][chunks][channels], which one thread per channel
 * then adds up in chunk order, in double. */

typedef struct
{
  int tx, ty, ctiles, chunks;
  size_t rows_per_chunk;
} NormTiling;

static NormTiling
norm_tiling (size_t rows, int channels)
{
  NormTiling t;
  size_t chunks, max_chunks;

  t.tx = 16;
  while (t.tx > 1 && t.tx * 4 > channels)
    t.tx /= 2;
  t.ty = THREADS / t.tx;
  t.ctiles = (channels + 4 * t.tx - 1) / (4 * t.tx);
  chunks = REDUCTION_BLOCKS / t.ctiles;
  /* at least eight rows per thread */
  max_chunks = (rows + (size_t)t.ty * 8 - 1) / ((size_t)t.ty * 8);
  if (chunks > max_chunks)
    chunks = max_chunks;
  if (chunks < 1)
    chunks = 1;
  t.rows_per_chunk = (rows + chunks - 1) / chunks;
  t.chunks = (int)((rows + t.rows_per_chunk - 1) / t.rows_per_chunk);
  return t;
}

size_t
gt_cuda_norm_partial_floats (size_t rows, int channels)
{
  NormTiling t = norm_tiling (rows, channels);

  return 2 * (size_t)t.chunks * channels;
}

/* Per-block sums. Forward (mean == NULL): of d = x - x[row 0] and of d^2,
 * the first row being a shift that keeps the one-pass variance free of
 * cancellation (it is one sample of the channel, so within a few standard
 * deviations of the mean). Backward: of g and of g * (x - mean), g being
 * dy masked by y > 0 when y is given. */
template <typename T>
static __global__ void
norm_sums_kernel (const T *x, const T *y, const T *dy, const float *mean,
    size_t rows, int channels, size_t rows_per_chunk, int chunks,
    float *partials)
{
  extern __shared__ float shared[];
  int c = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  size_t first = blockIdx.y * rows_per_chunk;
  size_t last = first + rows_per_chunk < rows ? first + rows_per_chunk : rows;
  float s1[4] = { 0, 0, 0, 0 }, s2[4] = { 0, 0, 0, 0 };
  float *mine = shared + (threadIdx.y * blockDim.x + threadIdx.x) * 8;
  int j, stride;

  if (c < channels) {
    float shift[4], v[4];
    size_t r;

    if (mean)
      for (j = 0; j < 4; j++)
        shift[j] = mean[c + j];
    else
      load4 (x + c, shift);
    for (r = first + threadIdx.y; r < last; r += blockDim.y) {
      load4 (x + r * channels + c, v);
      if (mean) {
        float g[4], out[4];

        load4 (dy + r * channels + c, g);
        if (y) {
          load4 (y + r * channels + c, out);
          for (j = 0; j < 4; j++)
            g[j] = out[j] > 0.f ? g[j] : 0.f;
        }
        for (j = 0; j < 4; j++) {
          s1[j] += g[j];
          s2[j] += g[j] * (v[j] - shift[j]);
        }
      } else {
        for (j = 0; j < 4; j++) {
          float d = v[j] - shift[j];

          s1[j] += d;
          s2[j] += d * d;
        }
      }
    }
  }
  for (j = 0; j < 4; j++) {
    mine[j] = s1[j];
    mine[4 + j] = s2[j];
  }
  __syncthreads ();
  for (stride = blockDim.y / 2; stride > 0; stride /= 2) {
    if ((int)threadIdx.y < stride) {
      const float *other = mine + stride * blockDim.x * 8;

      for (j = 0; j < 8; j++)
        mine[j] += other[j];
    }
    __syncthreads ();
  }
  if (threadIdx.y == 0 && c < channels)
    for (j = 0; j < 4; j++) {
      partials[(size_t)blockIdx.y * channels + c + j] = mine[j];
      partials[((size_t)chunks + blockIdx.y) * channels + c + j] = mine[4 + j];
    }
}

template <typename T>
static cudaError_t
norm_sums (const T *x, const T *y, const T *dy, const float *mean, size_t rows,
    int channels, float *partials, NormTiling *t, cudaStream_t stream)
{
  dim3 block (t->tx, t->ty), grid (t->ctiles, t->chunks);

  norm_sums_kernel<T><<<grid, block, THREADS * 8 * sizeof (float), stream>>> (
      x, y, dy, mean, rows, channels, t->rows_per_chunk, t->chunks, partials);
  return cudaGetLastError ();
}

/* One thread per channel: batch statistics, the coefficients of the
 * apply pass, the running statistics, as gt_cpu_norm_forward_train. */
template <typename T>
static __global__ void
norm_forward_finish_kernel (const T *x, size_t rows, int channels, int chunks,
    const float *partials, const float *gamma, const float *beta, float *mean,
    float *invstd, float *running_mean, float *running_var, float *coefs)
{
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  double s1 = 0, s2 = 0, shifted_mean, var, unbiased;
  float mean_f, invstd_f, scale;
  int k;

  if (c >= channels)
    return;
  for (k = 0; k < chunks; k++) {
    s1 += partials[(size_t)k * channels + c];
    s2 += partials[((size_t)chunks + k) * channels + c];
  }
  shifted_mean = s1 / rows;
  var = s2 / rows - shifted_mean * shifted_mean;
  if (var < 0)
    var = 0;
  unbiased = rows > 1 ? var * rows / (rows - 1) : var;
  mean_f = (float)(to_float (x[c]) + shifted_mean);
  invstd_f = (float)(1.0 / sqrt (var + GT_CUDA_NORM_EPS));
  mean[c] = mean_f;
  invstd[c] = invstd_f;
  scale = __fmul_rn (gamma[c], invstd_f);
  coefs[c] = scale;
  coefs[channels + c] = __fsub_rn (beta[c], __fmul_rn (mean_f, scale));
  running_mean[c] = (float)((1.0 - GT_CUDA_NORM_MOMENTUM) * running_mean[c]
      + GT_CUDA_NORM_MOMENTUM * mean_f);
  running_var[c] = (float)((1.0 - GT_CUDA_NORM_MOMENTUM) * running_var[c]
      + GT_CUDA_NORM_MOMENTUM * unbiased);
}

static __global__ void
norm_eval_coefs_kernel (int channels, const float *gamma, const float *beta,
    const float *running_mean, const float *running_var, float *coefs)
{
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  float scale;

  if (c >= channels)
    return;
  scale = (float)(gamma[c] / sqrt ((double)running_var[c] + GT_CUDA_NORM_EPS));
  coefs[c] = scale;
  coefs[channels + c] = __fsub_rn (beta[c], __fmul_rn (running_mean[c], scale));
}

/* y = relu?(x * scale + bias (+ residual)), four channels a thread. */
template <typename T>
static __global__ void
norm_apply_kernel (const T *x, const float *coefs, const T *residual, int relu,
    T *y, size_t quads, int channels)
{
  size_t i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < quads;
       i += (size_t)gridDim.x * blockDim.x) {
    int c = (int)((i * 4) % channels), j;
    float v[4], r[4];

    load4 (x + i * 4, v);
    if (residual)
      load4 (residual + i * 4, r);
    for (j = 0; j < 4; j++) {
      float value =
          __fadd_rn (__fmul_rn (v[j], coefs[c + j]), coefs[channels + c + j]);

      if (residual)
        value = __fadd_rn (value, r[j]);
      if (relu && value < 0.f)
        value = 0.f;
      v[j] = value;
    }
    store4 (y + i * 4, v);
  }
}

template <typename T>
static cudaError_t
norm_apply (const T *x, const float *coefs, const T *residual, int relu, T *y,
    size_t rows, int channels, cudaStream_t stream)
{
  size_t quads = rows * channels / 4;

  norm_apply_kernel<T><<<grid_for (quads, THREADS), THREADS, 0, stream>>> (
      x, coefs, residual, relu, y, quads, channels);
  return cudaGetLastError ();
}

template <typename T>
static cudaError_t
norm_forward_train (size_t rows, int channels, const T *x, const float *gamma,
    const float *beta, const T *residual, int relu, T *y, float *mean,
    float *invstd, float *running_mean, float *running_var, float *partials,
    float *coefs, cudaStream_t stream)
{
  NormTiling t = norm_tiling (rows, channels);
  cudaError_t err;

  if ((err = norm_sums<T> (
           x, NULL, NULL, NULL, rows, channels, partials, &t, stream))
      != cudaSuccess)
    return err;
  norm_forward_finish_kernel<T><<<(channels + 127) / 128, 128, 0, stream>>> (x,
      rows, channels, t.chunks, partials, gamma, beta, mean, invstd,
      running_mean, running_var, coefs);
  if ((err = cudaGetLastError ()) != cudaSuccess)
    return err;
  return norm_apply<T> (x, coefs, residual, relu, y, rows, channels, stream);
}

cudaError_t
gt_cuda_norm_forward_train (GtCudaDtype dtype, size_t rows, int channels,
    const void *x, const float *gamma, const float *beta, const void *residual,
    int relu, void *y, float *mean, float *invstd, float *running_mean,
    float *running_var, float *partials, float *coefs, cudaStream_t stream)
{
  if (dtype == GT_CUDA_F32)
    return norm_forward_train<float> (rows, channels, (const float *)x, gamma,
        beta, (const float *)residual, relu, (float *)y, mean, invstd,
        running_mean, running_var, partials, coefs, stream);
  return norm_forward_train<bf16> (rows, channels, (const bf16 *)x, gamma, beta,
      (const bf16 *)residual, relu, (bf16 *)y, mean, invstd, running_mean,
      running_var, partials, coefs, stream);
}

cudaError_t
gt_cuda_norm_forward_eval (GtCudaDtype dtype, size_t rows, int channels,
    const void *x, const float *gamma, const float *beta,
    const float *running_mean, const float *running_var, const void *residual,
    int relu, void *y, float *coefs, cudaStream_t stream)
{
  cudaError_t err;

  norm_eval_coefs_kernel<<<(channels + 127) / 128, 128, 0, stream>>> (
      channels, gamma, beta, running_mean, running_var, coefs);
  if ((err = cudaGetLastError ()) != cudaSuccess)
    return err;
  if (dtype == GT_CUDA_F32)
    return norm_apply<float> ((const float *)x, coefs, (const float *)residual,
        relu, (float *)y, rows, channels, stream);
  return norm_apply<bf16> ((const bf16 *)x, coefs, (const bf16 *)residual, relu,
      (bf16 *)y, rows, channels, stream);
}

/* One thread per channel: dgamma, dbeta and the coefficients of dx =
 * scale * g + slope * x + offset, as gt_cpu_norm_backward. */
static __global__ void
norm_backward_finish_kernel (size_t rows, int channels, int chunks,
    const float *partials, const float *mean, const float *invstd,
    const float *gamma, float *dgamma, float *dbeta, float *coefs)
{
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  double sum_g = 0, sum_gx = 0, a, mean_g, mean_gxhat;
  int k;

  if (c >= channels)
    return;
  for (k = 0; k < chunks; k++) {
    sum_g += partials[(size_t)k * channels + c];
    sum_gx += partials[((size_t)chunks + k) * channels + c];
  }
  sum_gx *= invstd[c]; /* sum of g * xhat */
  dbeta[c] = (float)sum_g;
  dgamma[c] = (float)sum_gx;
  a = (double)gamma[c] * invstd[c];
  mean_g = sum_g / rows;
  mean_gxhat = sum_gx / rows;
  coefs[c] = (float)a;
  coefs[channels + c] = (float)(-a * invstd[c] * mean_gxhat);
  coefs[2 * channels + c] =
      (float)(a * (mean[c] * (double)invstd[c] * mean_gxhat - mean_g));
}

template <typename T>
static __global__ void
norm_backward_apply_kernel (const T *x, const T *y, const T *dy,
    const float *coefs, T *dx, T *dresidual, size_t quads, int channels)
{
  size_t i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < quads;
       i += (size_t)gridDim.x * blockDim.x) {
    int c = (int)((i * 4) % channels), j;
    float v[4], g[4], out[4];

    load4 (x + i * 4, v);
    load4 (dy + i * 4, g);
    if (y) {
      load4 (y + i * 4, out);
      for (j = 0; j < 4; j++)
        g[j] = out[j] > 0.f ? g[j] : 0.f;
    }
    if (dresidual)
      store4 (dresidual + i * 4, g);
    for (j = 0; j < 4; j++)
      v[j] = __fadd_rn (__fadd_rn (__fmul_rn (coefs[c + j], g[j]),
                            __fmul_rn (coefs[channels + c + j], v[j])),
          coefs[2 * channels + c + j]);
    store4 (dx + i * 4, v);
  }
}

template <typename T>
static cudaError_t
norm_backward (size_t rows, int channels, const T *x, const float *mean,
    const float *invstd, const float *gamma, const T *y, const T *dy, T *dx,
    float *dgamma, float *dbeta, T *dresidual, float *partials, float *coefs,
    cudaStream_t stream)
{
  NormTiling t = norm_tiling (rows, channels);
  size_t quads = rows * channels / 4;
  cudaError_t err;

  if ((err = norm_sums<T> (
           x, y, dy, mean, rows, channels, partials, &t, stream))
      != cudaSuccess)
    return err;
  norm_backward_finish_kernel<<<(channels + 127) / 128, 128, 0, stream>>> (rows,
      channels, t.chunks, partials, mean, invstd, gamma, dgamma, dbeta, coefs);
  if ((err = cudaGetLastError ()) != cudaSuccess)
    return err;
  norm_backward_apply_kernel<T>
      <<<grid_for (quads, THREADS), THREADS, 0, stream>>> (
          x, y, dy, coefs, dx, dresidual, quads, channels);
  return cudaGetLastError ();
}

cudaError_t
gt_cuda_norm_backward (GtCudaDtype dtype, size_t rows, int channels,
    const void *x, const float *mean, const float *invstd, const float *gamma,
    const void *y, const void *dy, void *dx, float *dgamma, float *dbeta,
    void *dresidual, float *partials, float *coefs, cudaStream_t stream)
{
  if (dtype == GT_CUDA_F32)
    return norm_backward<float> (rows, channels, (const float *)x, mean, invstd,
        gamma, (const float *)y, (const float *)dy, (float *)dx, dgamma, dbeta,
        (float *)dresidual, partials, coefs, stream);
  return norm_backward<bf16> (rows, channels, (const bf16 *)x, mean, invstd,
      gamma, (const bf16 *)y, (const bf16 *)dy, (bf16 *)dx, dgamma, dbeta,
      (bf16 *)dresidual, partials, coefs, stream);
}
