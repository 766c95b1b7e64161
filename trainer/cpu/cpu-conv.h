/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-conv.h: the CPU backend's convolutions (cpu-conv.c), NHWC as
 * cpu-layers.h describes. */
#ifndef GT_CPU_CONV_H
#define GT_CPU_CONV_H

#include "cpu-scratch.h"

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

/* Its backward pass, on the same choice of kernels. */
GtConvBackward gt_cpu_conv_backward;

#endif /* GT_CPU_CONV_H */
