/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-norm.h: the CPU backend's batch-norm (cpu-norm.c), over NHWC rows as
 * cpu-layers.h describes, and the per-channel moments it shares with the
 * direct convolutions. */
#ifndef GT_CPU_NORM_H
#define GT_CPU_NORM_H

#include "cpu-scratch.h"

/* The moments of @rows rows of @channels floats at @x (two passes: the
 * mean, then the deviations from it), merged into the running @count,
 * @mean and @m2. */
void gt_cpu_moments_add (double *count, double *mean, double *m2,
    const float *x, size_t rows, int channels);

/* Merges (@count_b, @mean_b, @m2_b) into (@count, @mean, @m2). */
void gt_cpu_moments_merge (double *count, double *mean, double *m2,
    double count_b, const double *mean_b, const double *m2_b, int channels);

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

#endif /* GT_CPU_NORM_H */
