/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-streaming.h: how the CPU backend builds its streaming passes
 * (batch-norm, residual adds, pooling, SGD, im2col's transpose): plain
 * loops left to the compiler's vectoriser. With GCC on x86-64 each is built
 * three times, for AVX-512 (x86-64-v4), AVX2 + FMA (x86-64-v3) and the
 * baseline (SSE2), and the CPU's features pick one when the library loads;
 * gt_cpu_streaming_isa_name says which. */
#ifndef GT_CPU_STREAMING_H
#define GT_CPU_STREAMING_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GT_CPU_STREAMING                                                       \
  __attribute__ ((                                                             \
      target_clones ("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GT_CPU_STREAMING
#endif

/* "avx512", "avx2" or "sse" (the baseline; also on compilers that build one
 * version only): the streaming passes' instruction set on this CPU. */
static inline const char *
gt_cpu_streaming_isa_name (void)
{
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
  /* the order GCC's resolver tries the versions in */
  __builtin_cpu_init ();
  if (__builtin_cpu_supports ("x86-64-v4"))
    return "avx512";
  if (__builtin_cpu_supports ("x86-64-v3"))
    return "avx2";
#endif
  return "sse";
}

#endif /* GT_CPU_STREAMING_H */
