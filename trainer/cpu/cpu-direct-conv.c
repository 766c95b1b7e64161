/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-direct-conv.c: 3x3, stride 1, padding 1 convolutions with 16, 32 or
 * 64 output channels, computed directly instead of through im2col + sgemm.
 *
 * Narrow layers (resnet20/32 throughout, the first stage of resnet18/34/50)
 * make thin matrix products: sgemm spends as long packing the im2col
 * columns as multiplying them. Here each thread pads one image at a time
 * (a copy of the input, not nine) and runs a register-tiled kernel built
 * for the widest vector unit the CPU has (AVX-512, AVX2 + FMA, or SSE). The
 * backward pass for the input is the same kernel on the padded output
 * gradient with the kernel flipped and its channels swapped. */
#include "cpu-direct-conv.h"
#include "cpu-norm.h"

#include <stdlib.h>
#include <string.h>

/* Up to two regions the next image will read, fetched into the cache a
 * slice at a time while the kernels compute the current one: the copies and
 * reads that start an image then find their data there instead of waiting
 * for memory (the kernels themselves are compute-bound). */
typedef struct
{
  const char *base[2];
  size_t bytes[2];
} Prefetch;

static inline void
prefetch_part (const Prefetch *pf, int part, int parts)
{
  int i;

  if (pf == NULL)
    return;
  for (i = 0; i < 2; i++) {
    size_t lo = pf->bytes[i] * part / parts;
    size_t hi = pf->bytes[i] * (part + 1) / parts, at;

    for (at = lo & ~(size_t)63; at < hi; at += 64)
      __builtin_prefetch (pf->base[i] + at, 0, 2);
  }
}

/* A kernel's pad is padded_w pixels a row; h and w are its output's. */
/* Prefetching pays while the next image fits in the core's cache beside
 * the padded one: a 56x56x64 input (800 KB, resnet50's first stage) would
 * push the padded image out of a 1 MB L2 and slow the kernels down. */
#define PREFETCH_MAX_BYTES (192 * 1024)

static inline const Prefetch *
prefetch_if_small (const Prefetch *pf, int more_images)
{
  return more_images && pf->bytes[0] + pf->bytes[1] <= PREFETCH_MAX_BYTES
      ? pf
      : NULL;
}

typedef void (*ForwardKernel) (const float *pad, int padded_w, int stride,
    int h, int w, int c_in, const float *weights, float *y, const Prefetch *pf);
typedef void (*WeightGradKernel) (const float *pad, int padded_w, int stride,
    int h, int w, int c_in, const float *dy, float *grads, const Prefetch *pf);

struct GtDirectKernels
{
  ForwardKernel forward[3]; /* 16, 32, 64 output channels */
  WeightGradKernel weight_grad[3];
};

#define SUFFIX avx512
#define TARGET __attribute__ ((target ("avx512f,fma")))
#define VW 16
#define TILE_FLOATS 256
#include "cpu-direct-conv-body.h"
#undef SUFFIX
#undef TARGET
#undef VW
#undef TILE_FLOATS

#define SUFFIX avx2
#define TARGET __attribute__ ((target ("avx2,fma")))
#define VW 8
#define TILE_FLOATS 64
#include "cpu-direct-conv-body.h"
#undef SUFFIX
#undef TARGET
#undef VW
#undef TILE_FLOATS

#define SUFFIX sse
#define TARGET
#define VW 4
#define TILE_FLOATS 32
#include "cpu-direct-conv-body.h"
#undef SUFFIX
#undef TARGET
#undef VW
#undef TILE_FLOATS

/* The widest kernels the CPU runs, or narrower ones that the configuration
 * names (so that the tests check every variant on any machine). */
const GtDirectKernels *
gt_cpu_direct_conv_kernels (GtCpuIsa isa)
{
  int avx2 = 0;

  __builtin_cpu_init ();
  avx2 = __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma");
  if (isa == GT_CPU_ISA_SSE)
    return &kernels_sse;
  if (isa == GT_CPU_ISA_AVX2 && avx2)
    return &kernels_avx2;
  if (__builtin_cpu_supports ("avx512f"))
    return &kernels_avx512;
  return avx2 ? &kernels_avx2 : &kernels_sse;
}

const char *
gt_cpu_direct_conv_kernels_name (const GtDirectKernels *kernels)
{
  return kernels == &kernels_avx512 ? "avx512"
      : kernels == &kernels_avx2    ? "avx2"
                                    : "sse";
}

static int
width_index (int channels)
{
  return channels == 16 ? 0 : channels == 32 ? 1 : channels == 64 ? 2 : -1;
}

/* The widest tile (pixels, or channels in the weight-gradient kernel) any
 * variant reads past a row's end, at stride 2 twice as many pixels; the
 * slack below covers it. */
#define MAX_TILE 16
_Static_assert(256 / 16 <= MAX_TILE, "AVX-512 tiles outgrow the pad slack");

size_t
gt_cpu_direct_conv_pad_floats (int h, int w, int channels)
{
  /* the kernels read a tile past a row's end: slack for the last row */
  return (size_t)(h + 2) * (w + 2) * channels + 2 * MAX_TILE * (size_t)channels
      + 64;
}

int
gt_cpu_direct_conv_applies (const GtConvSpec *conv, int for_input_grad)
{
  /* the reordered weights and gradients hold 3x3 x 64 x 64 at most; the
   * input gradient runs the forward kernel on the output gradient, which
   * takes stride 1 */
  if (conv->kernel != 3 || conv->padding != 1 || conv->in_channels > 64
      || conv->stride < 1 || conv->stride > (for_input_grad ? 1 : 2))
    return 0;
  return width_index (for_input_grad ? conv->in_channels : conv->out_channels)
      >= 0;
}

size_t
gt_cpu_direct_conv_needs (const GtConvSpec *conv)
{
  int widest = conv->in_channels > conv->out_channels ? conv->in_channels
                                                      : conv->out_channels;

  if (!gt_cpu_direct_conv_applies (conv, 0))
    return 0;
  return gt_cpu_direct_conv_pad_floats (conv->in_h, conv->in_w, widest);
}

/* Copies image @x (h x w x c) into the middle of a zeroed (h+2) x (w+2). */
static void
pad_image (const float *x, int h, int w, int c, float *pad)
{
  size_t padded_row = (size_t)(w + 2) * c;
  int y;

  memset (pad, 0, padded_row * sizeof (float));
  for (y = 0; y < h; y++) {
    float *row = pad + (y + 1) * padded_row;

    memset (row, 0, c * sizeof (float));
    memcpy (row + c, x + (size_t)y * w * c, (size_t)w * c * sizeof (float));
    memset (row + (size_t)(w + 1) * c, 0, c * sizeof (float));
  }
  memset (pad + (h + 1) * padded_row, 0,
      (gt_cpu_direct_conv_pad_floats (h, w, c) - (h + 1) * padded_row)
          * sizeof (float));
}

typedef struct
{
  GtCpuScratch *scratch;
  const float *in; /* x (forward, weight gradient) or dy (input gradient) */
  int n, h, w, c_in, c_out; /* h x w: of in */
  int stride, out_h, out_w;
  const float *weights; /* [tap][c_in][c_out] */
  const float *dy;
  float *out;
  ForwardKernel forward;
  WeightGradKernel weight_grad;
  int moments; /* each thread's moments of out into scratch->conv_moments */
} DirectTask;

static void
direct_forward_task (void *data, int thread, int num_threads)
{
  DirectTask *task = data;
  float *pad = task->scratch->pads[thread];
  size_t in_size = (size_t)task->h * task->w * task->c_in;
  size_t out_size = (size_t)task->out_h * task->out_w * task->c_out;
  size_t begin, end, image;
  double *moments = task->scratch->conv_moments
      + (size_t)thread * (2 * task->scratch->max_channels + 1);

  if (task->moments)
    memset (moments, 0, (2 * (size_t)task->c_out + 1) * sizeof (double));
  gt_cpu_split (task->n, thread, num_threads, &begin, &end);
  for (image = begin; image < end; image++) {
    float *out = task->out + image * out_size;
    Prefetch next = { { (const char *)(task->in + (image + 1) * in_size) },
      { in_size * sizeof (float) } };

    pad_image (task->in + image * in_size, task->h, task->w, task->c_in, pad);
    task->forward (pad, task->w + 2, task->stride, task->out_h, task->out_w,
        task->c_in, task->weights, out,
        prefetch_if_small (&next, image + 1 < end));
    /* while the image is still in the cache */
    if (task->moments)
      gt_cpu_moments_add (moments, moments + 1, moments + 1 + task->c_out, out,
          (size_t)task->out_h * task->out_w, task->c_out);
  }
}

static void
direct_weight_grad_task (void *data, int thread, int num_threads)
{
  DirectTask *task = data;
  float *pad = task->scratch->pads[thread];
  float *grads = task->scratch->direct_grads[thread];
  size_t in_size = (size_t)task->h * task->w * task->c_in;
  size_t out_size = (size_t)task->out_h * task->out_w * task->c_out;
  size_t begin, end, image;

  memset (grads, 0, 9 * (size_t)task->c_in * task->c_out * sizeof (float));
  gt_cpu_split (task->n, thread, num_threads, &begin, &end);
  for (image = begin; image < end; image++) {
    Prefetch next = { { (const char *)(task->in + (image + 1) * in_size),
                          (const char *)(task->dy + (image + 1) * out_size) },
      { in_size * sizeof (float), out_size * sizeof (float) } };

    pad_image (task->in + image * in_size, task->h, task->w, task->c_in, pad);
    task->weight_grad (pad, task->w + 2, task->stride, task->out_h, task->out_w,
        task->c_in, task->dy + image * out_size, grads,
        prefetch_if_small (&next, image + 1 < end));
  }
}

static void
direct_forward (GtCpuPool *pool, GtCpuScratch *scratch, const GtConvSpec *conv,
    const float *x, int n, const float *weight, float *y, int moments)
{
  int in_c = conv->in_channels, out_c = conv->out_channels, k, c;
  float *weights = scratch->direct_weights;
  DirectTask task = { scratch, x, n, conv->in_h, conv->in_w, in_c, out_c,
    conv->stride, conv->out_h, conv->out_w, weights, NULL, y,
    scratch->direct_kernels->forward[width_index (out_c)], NULL, moments };

  /* OHWI -> HWIO: the output channels of a tap and input channel are the
   * vector the kernel loads */
  for (k = 0; k < out_c; k++)
    for (c = 0; c < 9 * in_c; c++)
      weights[(size_t)c * out_c + k] = weight[(size_t)k * 9 * in_c + c];
  gt_cpu_pool_run (pool, direct_forward_task, &task);
}

void
gt_cpu_direct_conv_forward (GtCpuPool *pool, GtCpuScratch *scratch,
    const GtConvSpec *conv, const float *x, int n, const float *weight,
    float *y)
{
  direct_forward (pool, scratch, conv, x, n, weight, y, 0);
}

void
gt_cpu_direct_conv_forward_moments (GtCpuPool *pool, GtCpuScratch *scratch,
    const GtConvSpec *conv, const float *x, int n, const float *weight,
    float *y)
{
  direct_forward (pool, scratch, conv, x, n, weight, y, 1);
}

void
gt_cpu_direct_conv_backward (GtCpuPool *pool, GtCpuScratch *scratch,
    const GtConvSpec *conv, const float *x, int n, const float *weight,
    const float *dy, float *dx, float *dweight)
{
  int in_c = conv->in_channels, out_c = conv->out_channels;
  int num_threads = gt_cpu_pool_size (pool), t, k, c, tap;
  size_t count = 9 * (size_t)in_c * out_c, i;
  float *weights = scratch->direct_weights;
  DirectTask task = { scratch, x, n, conv->in_h, conv->in_w, in_c, out_c,
    conv->stride, conv->out_h, conv->out_w, NULL, dy, NULL, NULL,
    scratch->direct_kernels->weight_grad[width_index (out_c)], 0 };

  /* weight gradient: per-thread sums in [tap][c][k], then added up and
   * turned back into OHWI */
  gt_cpu_pool_run (pool, direct_weight_grad_task, &task);
  for (t = 1; t < num_threads; t++)
    for (i = 0; i < count; i++)
      scratch->direct_grads[0][i] += scratch->direct_grads[t][i];
  for (k = 0; k < out_c; k++)
    for (c = 0; c < 9 * in_c; c++)
      dweight[(size_t)k * 9 * in_c + c] =
          scratch->direct_grads[0][(size_t)c * out_c + k];

  if (dx == NULL)
    return;
  /* input gradient: the forward kernel on dy with the kernel turned by 180
   * degrees and in/out channels swapped, weights[8 - tap][k][c] */
  for (tap = 0; tap < 9; tap++)
    for (k = 0; k < out_c; k++)
      for (c = 0; c < in_c; c++)
        weights[((size_t)(8 - tap) * out_c + k) * in_c + c] =
            weight[((size_t)k * 9 + tap) * in_c + c];
  /* (at stride 1 only: gt_cpu_direct_conv_applies) */
  task.in = dy;
  task.c_in = out_c;
  task.c_out = in_c;
  task.weights = weights;
  task.out = dx;
  task.forward = scratch->direct_kernels->forward[width_index (in_c)];
  gt_cpu_pool_run (pool, direct_forward_task, &task);
}
