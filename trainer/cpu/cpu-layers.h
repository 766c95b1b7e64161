/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-layers.h: the fp32 layers of the CPU reference backend: here
 * pooling, the classifier, the loss and the input (cpu-layers.c); the
 * convolutions in cpu-conv.h, batch-norm in cpu-norm.h.
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
