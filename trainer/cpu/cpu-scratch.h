/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-scratch.h: the per-thread scratch the CPU layers share, and the
 * contract of a convolution that works in it, which both implementations
 * keep: im2col + sgemm (cpu-conv.c, the reference) and the direct 3x3
 * kernels (cpu-direct-conv.c). Below both, so that calls go one way:
 * cpu-conv.c hands layers to cpu-direct-conv.c, which takes its moments
 * from cpu-norm.c. */
#ifndef GT_CPU_SCRATCH_H
#define GT_CPU_SCRATCH_H

#include "cpu-pool.h"
#include "model.h"

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

#endif /* GT_CPU_SCRATCH_H */
