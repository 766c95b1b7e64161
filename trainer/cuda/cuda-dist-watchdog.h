/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-dist-watchdog.h: the NCCL communicator of a data-parallel CUDA
 * trainer (cuda-dist.cu) and its watchdog (collective-timeout,
 * gt_comm_timeout): a thread that watches @done, recorded for the host
 * after the step's last reduction, from the time a step's end first waited
 * for it; past the timeout, or when NCCL reports an error, it aborts the
 * communicator, which ends NCCL's kernels wherever the host waits on them.
 *
 * cuda-dist.cu calls in, never the other way: what went wrong is left in
 * the struct for it to read (gt_dist_watchdog_failed) and report, or
 * written to the why it passes. Host code only, C with C++ linkage
 * guards. */
#ifndef GT_CUDA_DIST_WATCHDOG_H
#define GT_CUDA_DIST_WATCHDOG_H

#ifdef GT_HAVE_NCCL
#include "cuda-nccl.h"
#include "trainer.h"

#include <cuda_runtime_api.h>
#include <pthread.h>

typedef struct
{
  const GtNccl *lib; /* NCCL's functions */
  ncclComm_t nccl;   /* under lock once the thread runs; NULL once aborted */
  GtComm *comm;      /* whose timeout bounds the reductions */
  int device;        /* the thread's */
  int broken;        /* NCCL failed: abort the communicator, do not wait */
  cudaEvent_t done;  /* the step's reductions are done */
  pthread_t thread;
  int running;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int quit;
  double deadline; /* 0: nothing watched */
  int timed_out;   /* the watchdog aborted the communicator */
  char why[256];   /* why it did */
} GtDistWatchdog;

#ifdef __cplusplus
extern "C" {
#endif

#define GT_DIST_WATCHDOG_HIDDEN __attribute__ ((visibility ("hidden")))

/* Before anything else: the lock and @done (a CUDA error when the event
 * cannot be created). */
GT_DIST_WATCHDOG_HIDDEN cudaError_t gt_dist_watchdog_init (
    GtDistWatchdog *watchdog, GtComm *comm);
/* Opens the communicator of rank @rank of @size on GPU @device: rank 0's
 * id over the job's GtComm, then ncclCommInitRank on every rank (a
 * collective). GT_OK, or the GtStatus with the reason in @why. */
GT_DIST_WATCHDOG_HIDDEN int gt_dist_watchdog_open (GtDistWatchdog *watchdog,
    int rank, int size, int device, char *why, size_t why_size);
/* Once the communicator is open: the thread, on @device, when @comm has a
 * timeout. */
GT_DIST_WATCHDOG_HIDDEN void gt_dist_watchdog_start (
    GtDistWatchdog *watchdog, int device);
/* The step's reductions are queued: the watchdog watches @done, from now
 * when it watched nothing (else from the oldest work not done). */
GT_DIST_WATCHDOG_HIDDEN void gt_dist_watchdog_arm (GtDistWatchdog *watchdog);
/* 1 when the watchdog or a poll found a failure, its reason in @why and
 * *@timed_out 1 when it was the timeout; else 0. */
GT_DIST_WATCHDOG_HIDDEN int gt_dist_watchdog_failed (
    GtDistWatchdog *watchdog, int *timed_out, char *why, size_t why_size);
/* Asks NCCL whether the communicator failed (a peer that died) while the
 * host waits for @what; if so, the reason is kept for
 * gt_dist_watchdog_failed and the communicator aborted. */
GT_DIST_WATCHDOG_HIDDEN void gt_dist_watchdog_poll (
    GtDistWatchdog *watchdog, const char *what);
/* Stops the thread and aborts a broken communicator: then the streams can
 * drain. */
GT_DIST_WATCHDOG_HIDDEN void gt_dist_watchdog_stop (GtDistWatchdog *watchdog);
/* After gt_dist_watchdog_stop and the drain: destroys what is left. */
GT_DIST_WATCHDOG_HIDDEN void gt_dist_watchdog_clear (GtDistWatchdog *watchdog);

#ifdef __cplusplus
}
#endif
#endif /* GT_HAVE_NCCL */

#endif /* GT_CUDA_DIST_WATCHDOG_H */
