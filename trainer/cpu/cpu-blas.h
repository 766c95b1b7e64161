/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-blas.h: the BLAS of the CPU backend, opened at run time so that its
 * kernels follow the CPU's features, not a table of CPU models.
 *
 * OpenBLAS (DYNAMIC_ARCH, as Debian builds it) picks its kernels at load
 * from a table of CPU models; a model newer than the table falls back to
 * its SSE3 "Prescott" kernels, about three times slower on an AVX-512
 * Xeon, silently. The backend therefore opens libopenblas itself, asks
 * which kernels it chose, and when they use less of the CPU than it has
 * (pre-AVX2 kernels on an AVX2 CPU, or non-AVX-512 ones on an AVX-512
 * CPU) opens it again with OPENBLAS_CORETYPE naming the kernels the
 * features call for: SkylakeX (Cooperlake with AVX512_BF16) or Haswell.
 * GT_BLAS_KEEP_CORETYPE=1 keeps OpenBLAS's own choice. */
#ifndef GT_CPU_BLAS_H
#define GT_CPU_BLAS_H

#include <cblas.h>
#include <stddef.h>

/* Opens the BLAS once per process; 0, or -1 with the reason in @why. */
int gt_cpu_blas_init (char *why, size_t why_size);

/* cblas_sgemm of the BLAS gt_cpu_blas_init opened. */
void gt_cpu_sgemm (CBLAS_ORDER order, CBLAS_TRANSPOSE trans_a,
    CBLAS_TRANSPOSE trans_b, int m, int n, int k, float alpha, const float *a,
    int lda, const float *b, int ldb, float beta, float *c, int ldc);

void gt_cpu_blas_set_num_threads (int num_threads);

/* The kernels in use, e.g. "OpenBLAS 0.3.21 Haswell kernels (reloaded:
 * it chose Prescott on a CPU with AVX2)"; "" before gt_cpu_blas_init. */
const char *gt_cpu_blas_describe (void);

/* The kernel family OpenBLAS runs, as openblas_get_corename says. */
const char *gt_cpu_blas_core (void);

/* What the CPU's features call for (SkylakeX, Cooperlake, Haswell), or
 * NULL when OpenBLAS's own choice for a pre-AVX2 CPU stands; and whether
 * the kernels @core use at least that much of the CPU. */
const char *gt_cpu_blas_wanted_core (void);
int gt_cpu_blas_core_is_enough (const char *core, const char *wanted);

#endif /* GT_CPU_BLAS_H */
