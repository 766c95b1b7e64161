/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-dist-watchdog.c: the NCCL communicator's watchdog
 * (cuda-dist-watchdog.h). */
#include "cuda-dist-watchdog.h"

#ifdef GT_HAVE_NCCL
#include "gt-clock.h"
#include "gt-error.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Aborts the communicator once, from whichever thread sees the failure
 * first; under the lock. */
static void
abort_locked (GtDistWatchdog *watchdog)
{
  if (watchdog->nccl != NULL) {
    watchdog->lib->ncclCommAbort (watchdog->nccl);
    watchdog->nccl = NULL;
  }
  watchdog->broken = 1;
}

/* 1 when NCCL says the communicator failed, with its error in *@error;
 * under the lock, with a communicator. */
static int
nccl_failed_locked (GtDistWatchdog *watchdog, ncclResult_t *error)
{
  ncclResult_t state = ncclSuccess,
               call = watchdog->lib->ncclCommGetAsyncError (
                   watchdog->nccl, &state);

  *error = call != ncclSuccess ? call : state;
  return call != ncclSuccess
      || (state != ncclSuccess && state != ncclInProgress);
}

/* The thread: see the header. */
static void *
watchdog_main (void *data)
{
  GtDistWatchdog *watchdog = data;
  double timeout = gt_comm_timeout (watchdog->comm);

  cudaSetDevice (watchdog->device);
  pthread_mutex_lock (&watchdog->lock);
  while (!watchdog->quit) {
    struct timespec until;
    double now = gt_seconds_now ();
    ncclResult_t error;

    if (watchdog->deadline > 0 && watchdog->nccl != NULL) {
      if (cudaEventQuery (watchdog->done) == cudaSuccess) {
        watchdog->deadline = 0;
      } else if (nccl_failed_locked (watchdog, &error)) {
        snprintf (watchdog->why, sizeof (watchdog->why),
            "NCCL failed in the step's reductions: %s (%s)",
            watchdog->lib->ncclGetErrorString (error),
            watchdog->lib->ncclGetLastError (NULL));
        abort_locked (watchdog);
      } else if (now >= watchdog->deadline) {
        watchdog->timed_out = 1;
        snprintf (watchdog->why, sizeof (watchdog->why),
            "the reductions did not complete within collective-timeout=%g s",
            timeout);
        abort_locked (watchdog);
      }
    }
    /* a tenth of a second: the timeout is seconds or minutes */
    clock_gettime (CLOCK_REALTIME, &until);
    until.tv_nsec += 100000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait (&watchdog->cond, &watchdog->lock, &until);
  }
  pthread_mutex_unlock (&watchdog->lock);
  return NULL;
}

cudaError_t
gt_dist_watchdog_init (GtDistWatchdog *watchdog, GtComm *comm)
{
  watchdog->comm = comm;
  pthread_mutex_init (&watchdog->lock, NULL);
  pthread_cond_init (&watchdog->cond, NULL);
  return cudaEventCreateWithFlags (&watchdog->done, cudaEventDisableTiming);
}

int
gt_dist_watchdog_open (GtDistWatchdog *watchdog, int rank, int size, int device,
    char *why, size_t why_size)
{
  struct
  {
    int64_t ok;
    ncclUniqueId id;
  } offer;
  char reason[256];
  ncclResult_t result;
  cudaError_t err;
  const GtNccl *lib;

  /* opened when the ranks agreed on NCCL: this only fetches the functions */
  lib = watchdog->lib = gt_nccl_open (why, why_size);
  if (lib == NULL)
    return GT_ERROR_DEVICE;
  memset (&offer, 0, sizeof (offer));
  if (rank == 0)
    offer.ok = lib->ncclGetUniqueId (&offer.id) == ncclSuccess;
  if (gt_comm_broadcast (
          watchdog->comm, &offer, sizeof (offer), 0, reason, sizeof (reason))
      < 0)
    return gt_error_set (
        why, why_size, GT_ERROR_DEVICE, "sending rank 0's NCCL id: %s", reason);
  if (!offer.ok)
    return gt_error_set (why, why_size, GT_ERROR_DEVICE,
        "rank 0 could not make an NCCL id: %s", lib->ncclGetLastError (NULL));
  if ((err = cudaSetDevice (device)) != cudaSuccess) {
    cudaGetLastError ();
    return gt_error_set (why, why_size,
        err == cudaErrorMemoryAllocation ? GT_ERROR_NO_MEMORY : GT_ERROR_DEVICE,
        "CUDA: cudaSetDevice failed: %s (%s)", cudaGetErrorString (err),
        cudaGetErrorName (err));
  }
  result = lib->ncclCommInitRank (&watchdog->nccl, size, offer.id, rank);
  if (result != ncclSuccess) {
    watchdog->nccl = NULL;
    return gt_error_set (why, why_size, GT_ERROR_DEVICE,
        "NCCL: ncclCommInitRank (rank %d of %d on GPU %d) failed: %s (%s)%s",
        rank, size, device, lib->ncclGetErrorString (result),
        lib->ncclGetLastError (NULL),
        size > 1 ? "; NCCL takes one GPU per rank: ranks that share a GPU "
                   "need comm-backend mpi"
                 : "");
  }
  return GT_OK;
}

void
gt_dist_watchdog_start (GtDistWatchdog *watchdog, int device)
{
  if (gt_comm_timeout (watchdog->comm) <= 0)
    return;
  watchdog->device = device;
  watchdog->running =
      pthread_create (&watchdog->thread, NULL, watchdog_main, watchdog) == 0;
}

void
gt_dist_watchdog_arm (GtDistWatchdog *watchdog)
{
  double timeout = gt_comm_timeout (watchdog->comm);

  if (!watchdog->running || timeout <= 0)
    return;
  pthread_mutex_lock (&watchdog->lock);
  if (watchdog->deadline == 0)
    watchdog->deadline = gt_seconds_now () + timeout;
  pthread_mutex_unlock (&watchdog->lock);
}

int
gt_dist_watchdog_failed (
    GtDistWatchdog *watchdog, int *timed_out, char *why, size_t why_size)
{
  pthread_mutex_lock (&watchdog->lock);
  *timed_out = watchdog->timed_out;
  snprintf (why, why_size, "%s", watchdog->why);
  pthread_mutex_unlock (&watchdog->lock);
  return *timed_out || why[0] != '\0';
}

void
gt_dist_watchdog_poll (GtDistWatchdog *watchdog, const char *what)
{
  ncclResult_t error;

  pthread_mutex_lock (&watchdog->lock);
  if (watchdog->nccl != NULL && nccl_failed_locked (watchdog, &error)) {
    snprintf (watchdog->why, sizeof (watchdog->why),
        "NCCL failed while %s: %s (%s)", what,
        watchdog->lib->ncclGetErrorString (error),
        watchdog->lib->ncclGetLastError (NULL));
    abort_locked (watchdog);
  }
  pthread_mutex_unlock (&watchdog->lock);
}

void
gt_dist_watchdog_stop (GtDistWatchdog *watchdog)
{
  if (watchdog->running) {
    pthread_mutex_lock (&watchdog->lock);
    watchdog->quit = 1;
    pthread_cond_signal (&watchdog->cond);
    pthread_mutex_unlock (&watchdog->lock);
    pthread_join (watchdog->thread, NULL);
    watchdog->running = 0;
  }
  if (watchdog->nccl != NULL && watchdog->broken)
    watchdog->lib->ncclCommAbort (watchdog->nccl);
}

void
gt_dist_watchdog_clear (GtDistWatchdog *watchdog)
{
  if (watchdog->nccl != NULL && !watchdog->broken)
    watchdog->lib->ncclCommDestroy (watchdog->nccl);
  if (watchdog->done)
    cudaEventDestroy (watchdog->done);
  pthread_mutex_destroy (&watchdog->lock);
  pthread_cond_destroy (&watchdog->cond);
}
#endif /* GT_HAVE_NCCL */
