/* cpu-layers.h: the fp32 layers of the CPU reference backend.
 *
 * Activations are NHWC, so a tensor is a row-major matrix of N*H*W rows and
 * C columns: a 1x1 convolution is one matrix product, batch-norm reduces
 * over rows, and im2col copies whole rows of channels. Each layer runs on
 * the pool's threads, every thread on its own rows (or images, where the
 * writes of neighbouring rows would overlap). */
#ifndef GT_CPU_LAYERS_H
#define GT_CPU_LAYERS_H

#include "cpu-pool.h"
#include "model.h"

/* The streaming passes (batch-norm, residual adds, pooling, SGD) are plain
 * loops left to the compiler's vectoriser. With GCC on x86-64 each is built
 * three times, for AVX-512 (x86-64-v4), AVX2 + FMA (x86-64-v3) and the
 * baseline (SSE2), and the CPU's features pick one when the library loads;
 * gt_cpu_streaming_isa_name says which. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GT_CPU_STREAMING                                                       \
  __attribute__ ((                                                             \
      target_clones ("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GT_CPU_STREAMING
#endif

/* "avx512", "avx2" or "sse" (the baseline; also on compilers that build one
 * version only): the streaming passes' instruction set on this CPU. */
const char *gt_cpu_streaming_isa_name (void);

/* The direct 3x3 kernels for one instruction set (cpu-direct-conv.c). */
typedef struct GtDirectKernels GtDirectKernels;

/* Per-thread scratch the layers share: im2col columns, partial weight
 * gradients, partial per-channel sums. */
typedef struct
{
  int num_threads;
  size_t column_floats; /* of each columns[t] */
  float **columns;
  size_t partial_floats; /* of each weight_partials[t], t >= 1 */
  float **weight_partials;
  int max_channels;
  double *channel_sums; /* 2 * max_channels per thread */
  /* per thread: count, mean[max_channels], m2[max_channels] of the
   * convolution outputs it computed (gt_cpu_conv_forward_moments) */
  double *conv_moments;
  /* for cpu-direct-conv.c: a padded image per thread, the reordered
   * weights, and per-thread weight gradients (3x3, up to 64 x 64) */
  size_t pad_floats;
  float **pads;
  float *direct_weights;
  float **direct_grads;
  /* NULL in the reference configuration: im2col + sgemm only */
  const GtDirectKernels *direct_kernels;
} GtCpuScratch;

int gt_cpu_scratch_init (GtCpuScratch *scratch, int num_threads,
    size_t column_floats, size_t partial_floats, int max_channels,
    size_t pad_floats);
void gt_cpu_scratch_clear (GtCpuScratch *scratch);

/* y[n, oh, ow, out] = conv(x[n, h, w, in], weight OHWI), no bias, the
 * sizes being @conv's plan. */
typedef void GtConvForward (GtCpuPool *pool, GtCpuScratch *scratch,
    const GtConvSpec *conv, const float *x, int n, const float *weight,
    float *y);

/* dweight (overwritten) and, when @dx is not NULL, dx (overwritten) from
 * dy and the forward input x. */
typedef void GtConvBackward (GtCpuPool *pool, GtCpuScratch *scratch,
    const GtConvSpec *conv, const float *x, int n, const float *weight,
    const float *dy, float *dx, float *dweight);

/* The convolution: the direct kernels where the scratch has them and they
 * apply, im2col + sgemm (the reference) everywhere else. */
GtConvForward gt_cpu_conv_forward;

/* gt_cpu_conv_forward that also returns, where the direct kernels compute
 * @y, the per-channel mean and sum of squared deviations (@m2) of y over
 * its rows: each image's moments are taken while the image is still in
 * the cache and merged (Chan et al.'s pairwise rule), which spares the
 * batch-norm that follows its two passes over y. 1 when @mean and @m2 are
 * filled, 0 when only y was computed. */
int gt_cpu_conv_forward_moments (GtCpuPool *pool, GtCpuScratch *scratch,
    const GtConvSpec *conv, const float *x, int n, const float *weight,
    float *y, double *mean, double *m2);

/* The moments of @rows rows of @channels floats at @x (two passes: the
 * mean, then the deviations from it), merged into the running @count,
 * @mean and @m2. */
void gt_cpu_moments_add (double *count, double *mean, double *m2,
    const float *x, size_t rows, int channels);

/* Merges (@count_b, @mean_b, @m2_b) into (@count, @mean, @m2). */
void gt_cpu_moments_merge (double *count, double *mean, double *m2,
    double count_b, const double *mean_b, const double *m2_b, int channels);
GtConvBackward gt_cpu_conv_backward;

/* Training batch-norm over @rows rows of @channels: y = relu?(gamma * xhat +
 * beta (+ residual)) with batch statistics, saved as mean and invstd for
 * the backward pass; the running statistics move by momentum 0.1 (variance
 * unbiased), as torch.nn.BatchNorm2d. */
void gt_cpu_norm_forward_train (GtCpuPool *pool, GtCpuScratch *scratch,
    size_t rows, int channels, const float *x, const float *gamma,
    const float *beta, const float *residual, int relu, float *y, float *mean,
    float *invstd, float *running_mean, float *running_var);

/* The same with x's per-channel mean and sum of squared deviations already
 * known (gt_cpu_conv_forward_moments): one pass over x instead of three. */
void gt_cpu_norm_forward_train_moments (GtCpuPool *pool, size_t rows,
    int channels, const float *x, const double *x_mean, const double *x_m2,
    const float *gamma, const float *beta, const float *residual, int relu,
    float *y, float *mean, float *invstd, float *running_mean,
    float *running_var);

/* Eval batch-norm with the running statistics. */
void gt_cpu_norm_forward_eval (GtCpuPool *pool, size_t rows, int channels,
    const float *x, const float *gamma, const float *beta,
    const float *running_mean, const float *running_var, const float *residual,
    int relu, float *y);

/* Backward of gt_cpu_norm_forward_train. @y is the forward output (for the
 * ReLU mask, NULL without ReLU); dx must not overlap dy; @dresidual (when not NULL)
 * gets the gradient that flows to the residual input. */
void gt_cpu_norm_backward (GtCpuPool *pool, GtCpuScratch *scratch, size_t rows,
    int channels, const float *x, const float *mean, const float *invstd,
    const float *gamma, const float *y, const float *dy, float *dx,
    float *dgamma, float *dbeta, float *dresidual);

/* 3x3 max-pool, stride 2, padding 1; @argmax keeps the winning input
 * offset within each image for the backward pass. */
void gt_cpu_maxpool_forward (GtCpuPool *pool, const float *x, int n, int h,
    int w, int channels, float *y, int *argmax);
void gt_cpu_maxpool_backward (GtCpuPool *pool, const float *dy, int n, int h,
    int w, int channels, const int *argmax, float *dx);

/* Global average pool: [n, hw, c] -> [n, c], and back. */
void gt_cpu_avgpool_forward (
    const float *x, int n, int hw, int channels, float *y);
void gt_cpu_avgpool_backward (
    GtCpuPool *pool, const float *dy, int n, int hw, int channels, float *dx);

/* logits[n, classes] = features[n, f] weight^T + bias, and back. */
void gt_cpu_linear_forward (const float *x, int n, int in_features,
    int out_features, const float *weight, const float *bias, float *y);
void gt_cpu_linear_backward (const float *x, int n, int in_features,
    int out_features, const float *weight, const float *dy, float *dx,
    float *dweight, float *dbias);

/* Mean softmax cross-entropy with label smoothing; writes dlogits (of the
 * mean) when not NULL and counts top-1 and top-5 hits. Returns the sum of
 * the per-sample losses. */
double gt_cpu_cross_entropy (const float *logits, const int32_t *labels, int n,
    int classes, float label_smoothing, float *dlogits, int *correct_top1,
    int *correct_top5);

/* uint8 NHWC (1 or 3 channels) to normalised float NHWC with 3 channels. */
void gt_cpu_normalize_input (GtCpuPool *pool, const GtBatch *batch,
    const float mean[3], const float std[3], float *x);

#endif /* GT_CPU_LAYERS_H */
