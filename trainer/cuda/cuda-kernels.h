/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-kernels.h: the CUDA backend's own kernels, everything of a step that
 * is not a convolution (cuda-cudnn.h) or the classifier's products (cuBLAS):
 * input conversion, batch-norm with ReLU and residual add, pooling, the
 * loss, the optimiser (cuda-kernels.cu; batch-norm in cuda-norm.cu). The
 * layers are the CPU backend's (cpu-norm.c, cpu-layers.c), with the same
 * names and the same arithmetic where that arithmetic fixes the result.
 *
 * Activations are NHWC in GtCudaDtype (fp32 for parity, bf16 otherwise);
 * statistics, parameters, gradients of parameters and the loss are fp32.
 * Every reduction runs in a fixed order (per-block partial sums, then one
 * thread per channel over the blocks in order): no atomics, so that two
 * runs give the same bits. Each launcher returns cudaGetLastError (). */
#ifndef GT_CUDA_KERNELS_H
#define GT_CUDA_KERNELS_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

typedef enum
{
  GT_CUDA_F32,
  GT_CUDA_BF16,
} GtCudaDtype;

static inline size_t
gt_cuda_dtype_size (GtCudaDtype dtype)
{
  return dtype == GT_CUDA_F32 ? 4 : 2;
}

/* What the step reads from device memory rather than from its launch
 * arguments, so that a captured graph replays with the current values. */
typedef struct
{
  float lr;
} GtCudaStepParams;

/* What the loss kernels leave for the host (copied back each step). */
typedef struct
{
  double loss_sum;
  float loss; /* mean over the batch */
  int correct_top1;
  int correct_top5;
  int finite; /* 0: the optimiser and the statistics update stand down */
} GtCudaLossResult;

/* One optimiser block's share of the flat parameter buffer: a run of one
 * tensor, so that the decay and the gradient's source are per block. */
typedef struct
{
  uint32_t offset;
  uint32_t count;
  float decay;
  uint32_t flags;
} GtCudaSgdChunk;

#define GT_CUDA_SGD_CHUNK 4096
/* the gradient is in the working-precision buffer (cuDNN's filter grads) */
#define GT_CUDA_SGD_GRAD_FROM_WORK 1u
/* the parameter has a working-precision copy to refresh */
#define GT_CUDA_SGD_WRITE_WORK 2u

#define GT_CUDA_NORM_EPS 1e-5
#define GT_CUDA_NORM_MOMENTUM 0.1

/* Floats of scratch the batch-norm reductions need for @rows x @channels. */
size_t gt_cuda_norm_partial_floats (size_t rows, int channels);

/* uint8 NHWC (packed, 1 or 3 channels) to x = u8 * scale[c] + offset[c],
 * NHWC with 3 channels; a one-channel image is used as grey. */
cudaError_t gt_cuda_normalize_input (GtCudaDtype dtype, const uint8_t *images,
    size_t pixels, int channels, const float scale[3], const float offset[3],
    void *x, cudaStream_t stream);

/* Training batch-norm with batch statistics: y = relu?(x * scale + bias (+
 * residual)), scale = gamma * invstd, bias = beta - mean * scale; saves
 * mean and invstd, moves the running statistics (momentum 0.1, unbiased
 * variance). @partials holds gt_cuda_norm_partial_floats, @coefs 2 *
 * channels floats. */
cudaError_t gt_cuda_norm_forward_train (GtCudaDtype dtype, size_t rows,
    int channels, const void *x, const float *gamma, const float *beta,
    const void *residual, int relu, void *y, float *mean, float *invstd,
    float *running_mean, float *running_var, float *partials, float *coefs,
    cudaStream_t stream);

/* Eval batch-norm with the running statistics. */
cudaError_t gt_cuda_norm_forward_eval (GtCudaDtype dtype, size_t rows,
    int channels, const void *x, const float *gamma, const float *beta,
    const float *running_mean, const float *running_var, const void *residual,
    int relu, void *y, float *coefs, cudaStream_t stream);

/* Backward of gt_cuda_norm_forward_train: g = dy masked where y <= 0 (when
 * @y is not NULL), dgamma and dbeta (overwritten, fp32), dx = scale * g +
 * slope * x + offset, and g to @dresidual when not NULL. @coefs holds 3 *
 * channels floats. */
cudaError_t gt_cuda_norm_backward (GtCudaDtype dtype, size_t rows, int channels,
    const void *x, const float *mean, const float *invstd, const float *gamma,
    const void *y, const void *dy, void *dx, float *dgamma, float *dbeta,
    void *dresidual, float *partials, float *coefs, cudaStream_t stream);

/* 3x3 max-pool, stride 2, padding 1; @argmax keeps the winning tap (0-8)
 * of each output for the backward pass, which gathers (no atomics). */
cudaError_t gt_cuda_maxpool_forward (GtCudaDtype dtype, const void *x, int n,
    int h, int w, int channels, void *y, uint8_t *argmax, cudaStream_t stream);
cudaError_t gt_cuda_maxpool_backward (GtCudaDtype dtype, const void *dy, int n,
    int h, int w, int channels, const uint8_t *argmax, void *dx,
    cudaStream_t stream);

/* Global average pool: [n, hw, c] -> [n, c], and back. */
cudaError_t gt_cuda_avgpool_forward (GtCudaDtype dtype, const void *x, int n,
    int hw, int channels, void *y, cudaStream_t stream);
cudaError_t gt_cuda_avgpool_backward (GtCudaDtype dtype, const void *dy, int n,
    int hw, int channels, void *dx, cudaStream_t stream);

/* y[i, :] = bias for every row (the classifier's product adds onto it). */
cudaError_t gt_cuda_broadcast_rows (
    const float *bias, int n, int columns, float *y, cudaStream_t stream);

/* dbias[o] = sum_i dy[i, o], in order. */
cudaError_t gt_cuda_column_sums (
    const float *dy, int n, int columns, float *sums, cudaStream_t stream);

/* Softmax cross-entropy with label smoothing over @n rows: per-sample losses into @sample_loss, top-1/top-5 hits
 * into @sample_hits, then their sums and the finite flag into @result.
 * With @dlogits, the gradient of the mean loss (fp32), and a copy in
 * @dtype to @dlogits_work when that is not NULL. */
cudaError_t gt_cuda_cross_entropy (const float *logits, const int32_t *labels,
    int n, int classes, float label_smoothing, float *dlogits,
    void *dlogits_work, GtCudaDtype dtype, double *sample_loss,
    int *sample_hits, GtCudaLossResult *result, cudaStream_t stream);

/* torch.optim.SGD over the flat buffer, one launch: per chunk, g = grad +
 * decay * w, buf = momentum * buf + g, w -= lr * (nesterov ? g + momentum *
 * buf : buf); the working copy follows. Nothing moves unless
 * @result->finite. */
cudaError_t gt_cuda_sgd (const GtCudaSgdChunk *chunks, int num_chunks,
    float *params, float *grads, const void *grads_work, float *momentum,
    void *params_work, GtCudaDtype dtype, float momentum_factor, int nesterov,
    const GtCudaStepParams *params_device, const GtCudaLossResult *result,
    cudaStream_t stream);

/* stats = saved where the loss was not finite (the step is not applied). */
cudaError_t gt_cuda_restore_if_nonfinite (float *stats, const float *saved,
    size_t count, const GtCudaLossResult *result, cudaStream_t stream);

/* dst (in @dtype) = src (fp32), @count values. */
cudaError_t gt_cuda_convert (const float *src, void *dst, GtCudaDtype dtype,
    size_t count, cudaStream_t stream);

/* dst += src, @count values in @dtype, added in fp32 and rounded once
 * (a backward-data result that cuDNN would not add onto dx itself). */
cudaError_t gt_cuda_accumulate (GtCudaDtype dtype, void *dst, const void *src,
    size_t count, cudaStream_t stream);

/* Deterministic pseudo-random values in [-1, 1] (scratch data for timing
 * convolution algorithms: never time zeros). */
cudaError_t gt_cuda_fill_random (void *dst, GtCudaDtype dtype, size_t count,
    uint32_t seed, cudaStream_t stream);

#endif /* GT_CUDA_KERNELS_H */
