/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-direct-conv.h: direct 3x3 convolutions for narrow layers (see the .c
 * for why); gt_cpu_conv_forward and gt_cpu_conv_backward use them where
 * gt_cpu_direct_conv_applies says so. */
#ifndef GT_CPU_DIRECT_CONV_H
#define GT_CPU_DIRECT_CONV_H

#include "cpu-scratch.h"

/* 1 when @conv is 3x3, stride 1, padding 1 with 16, 32 or 64 output
 * channels (input channels too, @for_input_grad). */
int gt_cpu_direct_conv_applies (const GtConvSpec *conv, int for_input_grad);

/* Floats of the per-thread buffer a padded h x w x channels image needs. */
size_t gt_cpu_direct_conv_pad_floats (int h, int w, int channels);

/* The padded-image floats @conv needs for its forward pass on the direct
 * kernels, or 0 when they do not apply to it. */
size_t gt_cpu_direct_conv_needs (const GtConvSpec *conv);

/* The kernels for @isa: the widest the CPU runs for GT_CPU_ISA_AUTO, else
 * the one named when the CPU has it (SSE always), falling back as auto. */
const GtDirectKernels *gt_cpu_direct_conv_kernels (GtCpuIsa isa);
/* "avx512", "avx2" or "sse". */
const char *gt_cpu_direct_conv_kernels_name (const GtDirectKernels *kernels);

/* The contracts of gt_cpu_conv_forward and gt_cpu_conv_backward, on the
 * direct kernels of the scratch. */
GtConvForward gt_cpu_direct_conv_forward;
/* gt_cpu_direct_conv_forward that leaves each thread's moments of y (count,
 * per-channel mean, sum of squared deviations) in scratch->conv_moments. */
GtConvForward gt_cpu_direct_conv_forward_moments;
GtConvBackward gt_cpu_direct_conv_backward;

#endif /* GT_CPU_DIRECT_CONV_H */
