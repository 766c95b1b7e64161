/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-cudnn.h: every cuDNN call of the CUDA backend, behind a handful of
 * functions, so that the legacy convolution API used here can give way to
 * the graph API without the backend noticing.
 *
 * Convolutions are NHWC with OHWI (cuDNN's KRSC) filters, in fp32 or bf16
 * with fp32 accumulation. Each shape gets a plan once: descriptors and one
 * algorithm per direction. In bf16 the algorithms are chosen by measuring
 * them (cudnnFind*AlgorithmEx) on scratch data; in fp32 they come from
 * cuDNN's heuristics, restricted to deterministic, non-TF32 kernels, so
 * that two runs (and two processes) compute the same bits
 * (cuda-algo-choice.h has the rules, and what happens when no
 * deterministic algorithm exists: the fastest other one, a warning, and a
 * count that gt_cudnn_nondeterministic_choices reads). One workspace,
 * owned here, serves every call. */
#ifndef GT_CUDA_CUDNN_H
#define GT_CUDA_CUDNN_H

#include <stdio.h>
#include "cuda-kernels.h"
#include "trainer.h"

#include <cuda_runtime.h>
#include <stddef.h>

typedef struct
{
  int n, h, w;
  int in_channels, out_channels;
  int kernel, stride, padding;
  int out_h, out_w; /* the model's plan, which cuDNN must agree with */
} GtConvShape;

typedef struct GtCudnn GtCudnn;

/* A cuDNN handle on @stream for @dtype with a workspace of
 * @workspace_bytes, which warns through @config's log_func (gt-log.h;
 * @config must outlive it); NULL with the reason in @why. *@status says
 * which GtStatus the failure is. */
GtCudnn *gt_cudnn_new (cudaStream_t stream, GtCudaDtype dtype,
    size_t workspace_bytes, const GtTrainerConfig *config, int *status,
    char *why, size_t why_size);
void gt_cudnn_free (GtCudnn *cudnn);
/* One JSON line on @out: cuDNN's version, the convolution shapes planned,
 * the seconds spent choosing their algorithms (the profile prints it, so
 * that a benchmark's first step can be read), the fp32 directions that had
 * to take a non-deterministic algorithm and the shapes whose backward-data
 * refused to add onto dx. */
void gt_cudnn_report (const GtCudnn *cudnn, FILE *out);
/* The same figures into @report's conv_shapes, planning_seconds,
 * nondeterministic and accumulate_fallbacks (NULL @cudnn: left as they
 * are). */
void gt_cudnn_fill_report (const GtCudnn *cudnn, GtBackendReport *report);

/* How many fp32 convolution directions, over every handle of the process
 * so far, took a non-deterministic algorithm because no deterministic one
 * fits; the last of them described in @last. C, for cuda-device.c, which
 * offers it in the module's interface (cuda-module.h). */
extern "C" int gt_cudnn_nondeterministic_choices (char *last, size_t last_size);

/* Chooses the algorithms of @shape (measuring them in bf16, with the
 * scratch buffers given: x, w, y as large as the forward pass's, dx as x,
 * dw as w; their contents are overwritten) unless it has a plan already.
 * @with_data_grad: the backward pass needs the input's gradient. */
int gt_cudnn_plan (GtCudnn *cudnn, const GtConvShape *shape, int with_data_grad,
    void *x, void *w, void *y, void *dx, void *dw, char *why, size_t why_size);

/* y = conv(x, w). A shape without a plan gets one from the heuristics. */
int gt_cudnn_forward (GtCudnn *cudnn, const GtConvShape *shape, const void *x,
    const void *w, void *y, char *why, size_t why_size);

/* dx = conv_transpose(dy, w) + beta * dx (beta 0 or 1: the residual
 * branch's gradient can be added in place; where cuDNN refuses beta 1 the
 * result goes through a scratch buffer and a kernel adds it). */
int gt_cudnn_backward_data (GtCudnn *cudnn, const GtConvShape *shape,
    const void *dy, const void *w, float beta, void *dx, char *why,
    size_t why_size);

/* dw = the filter gradient from x and dy (overwritten). */
int gt_cudnn_backward_filter (GtCudnn *cudnn, const GtConvShape *shape,
    const void *x, const void *dy, void *dw, char *why, size_t why_size);

#endif /* GT_CUDA_CUDNN_H */
