/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-pool.h: a fixed set of worker threads for the CPU backend's loops.
 *
 * OpenBLAS runs single-threaded inside each worker: the backend splits its
 * matrix products by rows itself, so that im2col, the product and the
 * batch-norm passes share one set of threads and never oversubscribe the
 * cores (OpenBLAS's own threads spin after each call and would compete). */
#ifndef GT_CPU_POOL_H
#define GT_CPU_POOL_H

#include <stddef.h>

typedef struct GtCpuPool GtCpuPool;

/* Runs for worker @thread (0..num_threads-1) of @num_threads. */
typedef void (*GtCpuTask) (void *context, int thread, int num_threads);

/* A pool of @num_threads (>= 1) threads, the caller's included; NULL when
 * threads cannot be started. */
GtCpuPool *gt_cpu_pool_new (int num_threads);
void gt_cpu_pool_free (GtCpuPool *pool);
int gt_cpu_pool_size (const GtCpuPool *pool);

/* Calls @task once on every thread and returns when all have finished. */
void gt_cpu_pool_run (GtCpuPool *pool, GtCpuTask task, void *context);

/* The share [*begin, *end) of @count items that @thread of @num_threads
 * takes. */
static inline void
gt_cpu_split (
    size_t count, int thread, int num_threads, size_t *begin, size_t *end)
{
  *begin = count * (size_t)thread / (size_t)num_threads;
  *end = count * (size_t)(thread + 1) / (size_t)num_threads;
}

#endif /* GT_CPU_POOL_H */
