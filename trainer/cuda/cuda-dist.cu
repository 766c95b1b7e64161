/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-dist.cu: data-parallel steps of the CUDA backend, PyTorch DDP's
 * semantics (trainer.h): the gradients averaged over the ranks between the
 * backward pass and the update, batch-norm statistics per rank, and a
 * trailer (backend.h: loss, counts, non-finite flag, active flag) summed
 * with them, from which every rank decides alike whether the step applies.
 *
 * Two ways to reduce, chosen by the configuration's comm_backend:
 *
 * - NCCL (auto, when every rank can open it): one communicator per
 *   trainer, its id made on rank 0 and sent over MPI. The flat gradients
 *   are cut into buckets (dist-buckets.h) from the end, and each bucket is
 *   reduced on a communication stream as soon as the backward pass has
 *   produced it: an event on the compute stream after the layer that
 *   completes it, which the communication stream waits for, so that the
 *   reductions overlap the rest of the backward pass. The trailer goes
 *   first, right after the loss; a one-thread kernel turns the summed
 *   trailer into the step's verdict in device memory, which the optimiser
 *   and the restore of the running statistics read in place of the loss
 *   kernel's own flag (cuda-kernels.h): a non-finite loss on any rank, or
 *   a rank that left, leaves every rank's weights, momentum and
 *   statistics as they were, with no round trip to the host. The compute
 *   stream waits for the last bucket before the update. All of it is
 *   stream work, so the step is still captured as one CUDA graph (NCCL
 *   calls can be captured since NCCL 2.9).
 *   Gradients travel as fp32, or as a bf16 copy with comm_bf16. They are
 *   averaged by ncclAvg rather than summed and scaled: NCCL pre-multiplies
 *   floating-point values by 1 / ranks before it sums them (as DDP's own
 *   hook divides before its sum), which costs no pass of our own over the
 *   gradients, keeps bf16 sums away from overflow, and for two ranks (any
 *   power of two) is exact, so that it gives the MPI path's sum-then-scale
 *   bit for bit. The trailer is summed (ncclSum): it holds counts.
 * - MPI through host memory (comm_backend mpi): after the backward pass
 *   the gradients go to pinned memory, step_end reduces them with the
 *   trailer in one gt_dist_reduce_step, copies them back and runs the
 *   update with the verdict uploaded. The reduction runs on the host
 *   between the backward pass and the update, so there is no graph in
 *   this mode. It lets two ranks share one GPU, which NCCL refuses.
 *
 * NCCL is not linked: cuda-nccl.c opens it when a trainer first joins a job
 * with comm-backend nccl or auto (never with mpi, never training alone), so
 * that a missing or too old libnccl costs the NCCL path, not the module.
 * Each rank opens it, then the ranks agree over MPI whether all of them
 * can, so that all reduce the same way. Where one cannot, comm-backend
 * nccl fails to set up, each rank saying why (the one without NCCL names
 * the library and the linker's message); auto reduces through host memory
 * over MPI, with one warning on rank 0, as a PyTorch job without NCCL falls
 * back to Gloo: slower, but the job runs.
 *
 * In bf16, cuDNN leaves the convolutions' filter gradients in the bf16
 * gradient buffer, which the optimiser reads when training alone. Data-
 * parallel, they are widened into the fp32 gradients first (per bucket,
 * on the communication stream) and the optimiser reads those: the values
 * are the same, and one fp32 buffer is reduced.
 *
 * The NCCL communicator and the watchdog that bounds its reductions
 * (collective-timeout) are cuda-dist-watchdog.c's, which this file calls
 * and which calls nothing here. */
#include "cuda-backend-private.h"
extern "C" {
#include "dist-buckets.h"
}

#include <cuda_bf16.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cuda-dist-watchdog.h"
#include "cuda-nccl.h" /* nccl.h with GT_HAVE_NCCL */

#define THREADS 256
/* PyTorch DDP's default bucket */
#define DEFAULT_BUCKET_BYTES ((size_t)25 << 20)

typedef enum
{
  DIST_NCCL,
  DIST_MPI,
} DistMode;

struct CudaDist
{
  GtComm *comm;
  int rank;
  int size;
  DistMode mode;
  GtDistBucketPlan plan;     /* NCCL */
  cudaStream_t stream;       /* NCCL: the communication stream */
  cudaEvent_t fork;          /* on the compute stream: the comm stream may go */
  cudaEvent_t join;          /* on the comm stream: every bucket is reduced */
  cudaEvent_t trailer_ready; /* the summed trailer is in trailer_host */
  cudaEvent_t staged;        /* MPI: the gradients are in staging */

  /* bf16: the filter gradients to widen, as the optimiser's chunks (by
   * offset), and each bucket's share of them */
  GtCudaSgdChunk *widen_chunks; /* device */
  int num_widen_chunks;
  int *bucket_widen_first;
  int *bucket_widen_count;

  float *trailer;                 /* device */
  float *trailer_host;            /* pinned (MPI: the end of staging) */
  GtCudaLossResult *verdict;      /* device: finite = apply the step */
  GtCudaLossResult *verdict_host; /* pinned, MPI */
  void *comm_bf16;                /* NCCL with comm_bf16: the bf16 copy */
  float *staging;                 /* MPI: pinned gradients + trailer */
  /* the compute stream's wait for the reduction: when it began, and how
   * many steps have waited (device); each step's wait in turn in two
   * slots of mapped host memory */
  unsigned long long *clock;
  unsigned long long *wait_ns_host;
  unsigned long long *wait_ns;
#ifdef GT_HAVE_NCCL
  /* the communicator, its failure and its watchdog; its done event is
   * recorded for the host after the step's last reduction */
  GtDistWatchdog watchdog;
#endif
};

/* ---- kernels ---- */

/* grads = the bf16 filter gradients, over whole optimiser chunks. */
static __global__ void
widen_kernel (
    const GtCudaSgdChunk *chunks, const __nv_bfloat16 *work, float *grads)
{
  GtCudaSgdChunk chunk = chunks[blockIdx.x];
  uint32_t j;

  for (j = threadIdx.x; j < chunk.count; j += blockDim.x)
    grads[chunk.offset + j] = __bfloat162float (work[chunk.offset + j]);
}

#ifdef GT_HAVE_NCCL
static unsigned
blocks_for (size_t count)
{
  size_t blocks = (count + THREADS - 1) / THREADS;

  return (unsigned)(blocks > 4096 ? 4096 : blocks > 0 ? blocks : 1);
}

/* The trailer of backend.h from the loss kernel's result, as
 * gt_dist_trailer_fill writes it on the host (which cannot run here: the
 * result is in device memory, and a graph replays this). */
static __global__ void
trailer_kernel (const GtCudaLossResult *result, int num_samples, float *trailer)
{
  int finite = result->finite;

  trailer[GT_DIST_LOSS_SUM] = finite ? (float)result->loss_sum : 0.f;
  trailer[GT_DIST_TOP1] = (float)result->correct_top1;
  trailer[GT_DIST_TOP5] = (float)result->correct_top5;
  trailer[GT_DIST_SAMPLES] = (float)num_samples;
  trailer[GT_DIST_NONFINITE] = finite ? 0.f : 1.f;
  trailer[GT_DIST_ACTIVE] = 1.f;
}

/* The step applies when every rank was active and none saw a non-finite
 * loss: gt_dist_trailer_read's test, made where the optimiser reads it. */
static __global__ void
verdict_kernel (const float *summed, int size, GtCudaLossResult *verdict)
{
  verdict->finite = summed[GT_DIST_ACTIVE] >= (float)size - 0.5f
      && summed[GT_DIST_NONFINITE] < 0.5f;
}

static __global__ void
from_bf16_kernel (const __nv_bfloat16 *src, float *dst, size_t count)
{
  size_t i;

  for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = __bfloat162float (src[i]);
}

static __device__ __forceinline__ unsigned long long
global_nanoseconds (void)
{
  unsigned long long now;

  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

/* The wait is timed on the device because a captured graph records the
 * same events at every replay: a pair of events per step in turn, as
 * step_marks are, cannot be had inside a graph. */
static __global__ void
wait_begins_kernel (unsigned long long *clock)
{
  clock[0] = global_nanoseconds ();
}

static __global__ void
wait_ends_kernel (unsigned long long *clock, unsigned long long *wait_ns)
{
  unsigned long long step = clock[1]++;

  wait_ns[step & 1] = global_nanoseconds () - clock[0];
}

/* ---- errors and waits ---- */

static int
nccl_fail (CudaBackend *cuda, ncclResult_t result, const char *function)
{
  const GtNccl *lib = cuda->dist->watchdog.lib;

  if (!cuda->capturing)
    cuda->dist->watchdog.broken = 1;
  return backend_fail (cuda, GT_ERROR_DEVICE, "NCCL: %s failed: %s (%s)",
      function, lib->ncclGetErrorString (result), lib->ncclGetLastError (NULL));
}

/* Calls NCCL's @function (an nccl.h name) with @args, through the opened
 * library. */
#define NCCL_TRY(function, args)                                               \
  do {                                                                         \
    ncclResult_t result_ = cuda->dist->watchdog.lib->function args;            \
    if (result_ != ncclSuccess)                                                \
      return nccl_fail (cuda, result_, #function);                             \
  } while (0)

/* Records @event on @stream; in a capture, as a node the host can wait on. */
static int
record_for_host (CudaBackend *cuda, cudaEvent_t event, cudaStream_t stream)
{
  if (cuda->capturing)
    CUDA_TRY (
        cudaEventRecordWithFlags (event, stream, cudaEventRecordExternal));
  else
    CUDA_TRY (cudaEventRecord (event, stream));
  return GT_OK;
}

/* What the watchdog found, as this trainer's error: a timeout names the
 * collective, its step and the ranks that did not arrive (asking the
 * peers over MPI, as a timeout there would); GT_OK while nothing failed. */
static int
watchdog_verdict (CudaBackend *cuda)
{
  char why[768];
  int timed_out, status;

  if (!gt_dist_watchdog_failed (
          &cuda->dist->watchdog, &timed_out, why, sizeof (why)))
    return GT_OK;
  if (!timed_out)
    return backend_fail (cuda, GT_ERROR_DEVICE, "%s", why);
  status = gt_comm_gave_up (cuda->dist->comm, why, sizeof (why));
  return backend_fail (cuda, status, "NCCL: %s", why);
}

/* Waits for @event, watching the communicator: a peer that died makes
 * NCCL report an error here rather than leave this rank waiting for ever,
 * and one that stopped answering is the watchdog's, past the timeout. On
 * an error the communicator is aborted, which ends its kernels, so that
 * the streams can still drain. */
static int
wait_event (CudaBackend *cuda, cudaEvent_t event, const char *what)
{
  for (;;) {
    struct timespec pause = { 0, 20000 };
    cudaError_t err = cudaEventQuery (event);
    int status;

    if (err == cudaSuccess)
      return GT_OK;
    if (err != cudaErrorNotReady)
      return cuda_fail (cuda, err, "cudaEventQuery (waiting for the step)");
    if ((status = watchdog_verdict (cuda)) != GT_OK)
      return status;
    gt_dist_watchdog_poll (&cuda->dist->watchdog, what);
    nanosleep (&pause, NULL);
  }
}
#endif /* GT_HAVE_NCCL */

/* ---- setting up ---- */

/* The mode of comm_backend, NCCL when @nccl_everywhere (agree_on_nccl);
 * with auto and no NCCL on some rank, *@fallback says why (@nccl_why: this
 * rank's reason, empty when this rank has NCCL). */
static int
choose_mode (CudaBackend *cuda, int nccl_everywhere, const char *nccl_why,
    DistMode *mode, const char **fallback)
{
  const char *reason = nccl_why[0] ? nccl_why : "another rank cannot open NCCL";

  *fallback = NULL;
  switch (cuda->config.comm_backend) {
    case GT_COMM_MPI:
      *mode = DIST_MPI;
      return GT_OK;
    case GT_COMM_NCCL:
      if (!nccl_everywhere)
        return backend_fail (cuda, GT_ERROR_INVALID,
            "comm-backend nccl: %s%s; comm-backend mpi reduces through host "
            "memory instead",
            reason, nccl_why[0] ? "" : " (its own message says why)");
      *mode = DIST_NCCL;
      return GT_OK;
    case GT_COMM_AUTO:
      *mode = nccl_everywhere ? DIST_NCCL : DIST_MPI;
      if (!nccl_everywhere)
        *fallback = reason;
      return GT_OK;
  }
  return backend_fail (cuda, GT_ERROR_INVALID, "unknown comm-backend %d",
      (int)cuda->config.comm_backend);
}

/* The bf16 filter gradients are widened into the fp32 ones before they
 * are reduced: the convolutions' weights. */
static int
widen_chunk (
    const CudaBackend *cuda, const GtTensorEntry *entry, GtCudaSgdChunk *chunk)
{
  return entry->kind == GT_ENTRY_CONV_WEIGHT;
}

/* The bf16 filter gradients to widen, and which of them each bucket
 * holds. */
static int
plan_widening (CudaBackend *cuda)
{
  CudaDist *dist = cuda->dist;
  GtCudaSgdChunk *chunks;
  int count, i, b;

  STATUS_TRY (cut_into_chunks (cuda, widen_chunk, &chunks, &count));
  dist->num_widen_chunks = count;
  if (dist->mode == DIST_NCCL) {
    int buckets = dist->plan.num_buckets;

    dist->bucket_widen_first = (int *)calloc (buckets, sizeof (int));
    dist->bucket_widen_count = (int *)calloc (buckets, sizeof (int));
    if (!dist->bucket_widen_first || !dist->bucket_widen_count) {
      free (chunks);
      return backend_fail (cuda, GT_ERROR_NO_MEMORY, "out of host memory");
    }
    for (b = 0; b < buckets; b++) {
      const GtDistBucket *bucket = &dist->plan.buckets[b];

      for (i = 0; i < count; i++)
        if (chunks[i].offset >= bucket->offset
            && chunks[i].offset < bucket->offset + bucket->count) {
          if (dist->bucket_widen_count[b]++ == 0)
            dist->bucket_widen_first[b] = i;
        }
    }
  }
  return upload_chunks (cuda, chunks, count, &dist->widen_chunks,
      "the table of gradients to widen");
}

static int
pinned_alloc (CudaBackend *cuda, void **out, size_t bytes, unsigned flags)
{
  cudaError_t err = cudaHostAlloc (out, bytes, flags);

  if (err != cudaSuccess) {
    *out = NULL;
    cudaGetLastError ();
    return backend_fail (cuda, GT_ERROR_NO_MEMORY,
        "CUDA: cudaHostAlloc of %.1f MiB of pinned memory failed: %s",
        bytes / 1048576.0, cudaGetErrorString (err));
  }
  memset (*out, 0, bytes);
  return GT_OK;
}

/* What this rank sets up alone, between the collectives of dist_setup;
 * @nccl_everywhere and @nccl_why as agree_on_nccl gives them. */
static int
prepare (CudaBackend *cuda, int nccl_everywhere, const char *nccl_why)
{
  const GtModelSpec *spec = cuda->spec;
  const GtTrainerConfig *config = &cuda->config;
  CudaDist *dist;
  int least, greatest;
  size_t bucket_bytes =
      config->bucket_bytes ? config->bucket_bytes : DEFAULT_BUCKET_BYTES;
  const char *fallback, *named;
  void *mapped;

  dist = cuda->dist = (CudaDist *)calloc (1, sizeof (CudaDist));
  if (dist == NULL)
    return backend_fail (cuda, GT_ERROR_NO_MEMORY, "out of host memory");
  dist->comm = config->comm;
  dist->rank = gt_comm_rank (config->comm);
  dist->size = gt_comm_size (config->comm);
  STATUS_TRY (
      choose_mode (cuda, nccl_everywhere, nccl_why, &dist->mode, &fallback));
  named = fallback != NULL ? "auto" : "mpi";
  if (dist->mode == DIST_MPI && cuda->use_graph && cuda->require_graph)
    return backend_fail (cuda, GT_ERROR_INVALID,
        "cuda_require_graph: comm-backend %s reduces on the host between "
        "the backward pass and the update, which a graph cannot hold%s%s",
        named, fallback ? "; NCCL cannot be used: " : "",
        fallback ? fallback : "");
  /* one line for both: the fallback and the graphs it turns off */
  if (dist->mode == DIST_MPI && (cuda->use_graph || fallback != NULL)
      && dist->rank == 0)
    gt_log (config, GT_LOG_WARNING,
        "comm-backend %s reduces through host memory%s%s%s", named,
        cuda->use_graph ? ": CUDA graphs are off for this trainer" : "",
        fallback ? "; NCCL cannot be used: " : "", fallback ? fallback : "");
  if (dist->mode == DIST_MPI && cuda->use_graph) {
    cuda->use_graph = 0;
    snprintf (cuda->graph_off, sizeof (cuda->graph_off),
        "off: comm-backend %s reduces through host memory mid-step", named);
  }

  CUDA_TRY (cudaSetDevice (cuda->device));
  /* the reductions go first when both streams have work: they are what
   * the update waits for */
  CUDA_TRY (cudaDeviceGetStreamPriorityRange (&least, &greatest));
  CUDA_TRY (cudaStreamCreateWithPriority (
      &dist->stream, cudaStreamNonBlocking, greatest));
  CUDA_TRY (cudaEventCreateWithFlags (&dist->fork, cudaEventDisableTiming));
  CUDA_TRY (cudaEventCreateWithFlags (&dist->join, cudaEventDisableTiming));
  CUDA_TRY (
      cudaEventCreateWithFlags (&dist->trailer_ready, cudaEventDisableTiming));
  CUDA_TRY (cudaEventCreateWithFlags (&dist->staged, cudaEventDisableTiming));
#ifdef GT_HAVE_NCCL
  CUDA_TRY (gt_dist_watchdog_init (&dist->watchdog, dist->comm));
#endif

  if (dist->mode == DIST_NCCL
      && gt_dist_bucket_plan_init_model (&dist->plan, spec,
             config->comm_bf16 ? 2 : sizeof (float), bucket_bytes, cuda->why,
             sizeof (cuda->why))
          < 0)
    return GT_ERROR_INVALID;
  if (cuda->dtype != GT_CUDA_F32)
    STATUS_TRY (plan_widening (cuda));

  ALLOC (dist->trailer, GT_DIST_TRAILER * sizeof (float), "the trailer");
  ALLOC (dist->verdict, sizeof (GtCudaLossResult), "the verdict");
  ALLOC (dist->clock, 2 * sizeof (unsigned long long), "the wait clock");
  CUDA_TRY (cudaMemset (dist->verdict, 0, sizeof (GtCudaLossResult)));
  CUDA_TRY (cudaMemset (dist->clock, 0, 2 * sizeof (unsigned long long)));
  STATUS_TRY (pinned_alloc (cuda, (void **)&dist->verdict_host,
      sizeof (GtCudaLossResult), cudaHostAllocDefault));
  STATUS_TRY (pinned_alloc (
      cuda, &mapped, 2 * sizeof (unsigned long long), cudaHostAllocMapped));
  dist->wait_ns_host = (unsigned long long *)mapped;
  CUDA_TRY (cudaHostGetDevicePointer ((void **)&dist->wait_ns, mapped, 0));
  if (dist->mode == DIST_MPI) {
    STATUS_TRY (pinned_alloc (cuda, (void **)&dist->staging,
        (spec->num_params + GT_DIST_TRAILER) * sizeof (float),
        cudaHostAllocDefault));
    dist->trailer_host = dist->staging + spec->num_params;
  } else {
    STATUS_TRY (pinned_alloc (cuda, (void **)&dist->trailer_host,
        GT_DIST_TRAILER * sizeof (float), cudaHostAllocDefault));
    if (config->comm_bf16)
      ALLOC (dist->comm_bf16, spec->num_params * sizeof (__nv_bfloat16),
          "the bf16 gradients");
  }
  return GT_OK;
}

/* The least of @value over the ranks, or -1 when the collective fails (the
 * reason recorded). Every rank calls it at the same point, whatever
 * happened to it, so that none is left waiting in the next collective. */
static int64_t
least_over_ranks (CudaBackend *cuda, int64_t value, const char *what)
{
  char reason[256];

  if (gt_comm_allreduce (cuda->config.comm, &value, 1, GT_COMM_INT64,
          GT_COMM_MIN, reason, sizeof (reason))
      < 0) {
    backend_fail (cuda, GT_ERROR_DEVICE, "%s: %s", what, reason);
    return -1;
  }
  return value;
}

/* 1 when every rank's @status is GT_OK (a collective). */
static int
all_ranks_ready (CudaBackend *cuda, int status, const char *what)
{
  int64_t ready = least_over_ranks (cuda, status == GT_OK, what);

  if (status == GT_OK && ready == 0)
    backend_fail (cuda, GT_ERROR_DEVICE,
        "%s: another rank failed (its own message says why)", what);
  return ready == 1;
}

/* Whether every rank can reduce with NCCL (*@everywhere), each rank opening
 * it when the configuration may want it: a collective, as all_ranks_ready,
 * which fails when @status or another rank's did. @why: this rank's reason
 * when it cannot, else empty. */
static int
agree_on_nccl (
    CudaBackend *cuda, int status, int *everywhere, char *why, size_t why_size)
{
  char path[1024];
  int here = 0;
  int64_t least;

  why[0] = '\0';
  if (status == GT_OK && cuda->config.comm_backend != GT_COMM_MPI)
    here = gt_nccl_version (path, sizeof (path), why, why_size) > 0;
  least = least_over_ranks (
      cuda, status == GT_OK ? 1 + here : 0, "setting up the CUDA backend");
  if (status != GT_OK)
    return status;
  if (least < 0)
    return GT_ERROR_DEVICE;
  if (least == 0)
    return backend_fail (cuda, GT_ERROR_DEVICE,
        "setting up the CUDA backend: another rank failed (its own message "
        "says why)");
  *everywhere = least == 2;
  return GT_OK;
}

int
dist_setup (CudaBackend *cuda, int status)
{
  char nccl_why[1536];
  int nccl_everywhere = 0;

  /* every rank comes to each collective here, set up or not: one that
   * returned early would leave the others waiting in the next one, in
   * ncclCommInitRank or in trainer.c's first broadcast */
  status = agree_on_nccl (
      cuda, status, &nccl_everywhere, nccl_why, sizeof (nccl_why));
  if (status == GT_OK)
    status = prepare (cuda, nccl_everywhere, nccl_why);
  if (!all_ranks_ready (cuda, status, "setting up the CUDA backend"))
    return status != GT_OK ? status : GT_ERROR_DEVICE;
#ifdef GT_HAVE_NCCL
  if (cuda->dist->mode == DIST_NCCL) {
    status = gt_dist_watchdog_open (&cuda->dist->watchdog, cuda->dist->rank,
        cuda->dist->size, cuda->device, cuda->why, sizeof (cuda->why));
    if (!all_ranks_ready (cuda, status, "opening the NCCL communicator"))
      return status != GT_OK ? status : GT_ERROR_DEVICE;
    gt_dist_watchdog_start (&cuda->dist->watchdog, cuda->device);
  }
#endif
  return GT_OK;
}

void
dist_free (CudaBackend *cuda)
{
  CudaDist *dist = cuda->dist;

  if (dist == NULL)
    return;
    /* a communicator that failed may never finish its kernels: abort it
   * first; else let the stream drain, then free it */
#ifdef GT_HAVE_NCCL
  gt_dist_watchdog_stop (&dist->watchdog);
#endif
  if (dist->stream)
    cudaStreamSynchronize (dist->stream);
#ifdef GT_HAVE_NCCL
  gt_dist_watchdog_clear (&dist->watchdog);
#endif
  if (dist->fork)
    cudaEventDestroy (dist->fork);
  if (dist->join)
    cudaEventDestroy (dist->join);
  if (dist->trailer_ready)
    cudaEventDestroy (dist->trailer_ready);
  if (dist->staged)
    cudaEventDestroy (dist->staged);
  if (dist->stream)
    cudaStreamDestroy (dist->stream);
  if (dist->mode == DIST_MPI) {
    if (dist->staging)
      cudaFreeHost (dist->staging);
  } else if (dist->trailer_host) {
    cudaFreeHost (dist->trailer_host);
  }
  if (dist->verdict_host)
    cudaFreeHost (dist->verdict_host);
  if (dist->wait_ns_host)
    cudaFreeHost (dist->wait_ns_host);
  cudaGetLastError ();
  gt_dist_bucket_plan_clear (&dist->plan);
  free (dist->bucket_widen_first);
  free (dist->bucket_widen_count);
  free (dist);
  cuda->dist = NULL;
}

/* ---- a step ---- */

const GtCudaLossResult *
dist_verdict (CudaBackend *cuda)
{
  return cuda->dist->verdict;
}

int
dist_updates_in_step (CudaBackend *cuda)
{
  return cuda->dist->mode == DIST_NCCL;
}

#ifdef GT_HAVE_NCCL
/* The communication stream goes on once the compute stream has come this
 * far. */
static int
fork_to_comm (CudaBackend *cuda)
{
  CUDA_TRY (cudaEventRecord (cuda->dist->fork, cuda->compute));
  CUDA_TRY (cudaStreamWaitEvent (cuda->dist->stream, cuda->dist->fork, 0));
  return GT_OK;
}

/* Averages bucket @index over the ranks, on the communication stream;
 * with @widen, the bf16 filter gradients in it are widened first. */
static int
reduce_bucket (CudaBackend *cuda, int index, int widen)
{
  CudaDist *dist = cuda->dist;
  const GtDistBucket *bucket = &dist->plan.buckets[index];
  float *grads = cuda->grads + bucket->offset;

  if (widen && dist->bucket_widen_first != NULL
      && dist->bucket_widen_count[index] > 0) {
    widen_kernel<<<dist->bucket_widen_count[index], THREADS, 0,
        dist->stream>>> (dist->widen_chunks + dist->bucket_widen_first[index],
        (const __nv_bfloat16 *)cuda->grads_work, cuda->grads);
    CUDA_TRY (cudaGetLastError ());
  }
  if (dist->comm_bf16 != NULL) {
    __nv_bfloat16 *copy = (__nv_bfloat16 *)dist->comm_bf16 + bucket->offset;

    CUDA_TRY (gt_cuda_convert (
        grads, copy, GT_CUDA_BF16, bucket->count, dist->stream));
    NCCL_TRY (ncclAllReduce,
        (copy, copy, bucket->count, ncclBfloat16, ncclAvg, dist->watchdog.nccl,
            dist->stream));
    from_bf16_kernel<<<blocks_for (bucket->count), THREADS, 0, dist->stream>>> (
        copy, grads, bucket->count);
    CUDA_TRY (cudaGetLastError ());
  } else {
    NCCL_TRY (ncclAllReduce,
        (grads, grads, bucket->count, ncclFloat, ncclAvg, dist->watchdog.nccl,
            dist->stream));
  }
  return GT_OK;
}

/* Sums the trailer over the ranks (summed, not averaged: it holds counts),
 * then copies it to the host. */
static int
reduce_trailer (CudaBackend *cuda)
{
  CudaDist *dist = cuda->dist;

  NCCL_TRY (ncclAllReduce,
      (dist->trailer, dist->trailer, GT_DIST_TRAILER, ncclFloat, ncclSum,
          dist->watchdog.nccl, dist->stream));
  CUDA_TRY (cudaMemcpyAsync (dist->trailer_host, dist->trailer,
      GT_DIST_TRAILER * sizeof (float), cudaMemcpyDeviceToHost, dist->stream));
  return GT_OK;
}

/* The trailer first: a rank learns whether the step applies as soon as
 * every rank has its loss, and the update reads the verdict in place. */
static int
begin_backward (CudaBackend *cuda, int num_samples)
{
  CudaDist *dist = cuda->dist;

  STATUS_TRY (watchdog_verdict (cuda));
  if (dist->watchdog.broken)
    return backend_fail (cuda, GT_ERROR_DEVICE,
        "the NCCL communicator failed earlier: this rank cannot step");
  gt_dist_bucket_plan_restart (&dist->plan);
  trailer_kernel<<<1, 1, 0, cuda->compute>>> (
      cuda->result_device, num_samples, dist->trailer);
  CUDA_TRY (cudaGetLastError ());
  STATUS_TRY (fork_to_comm (cuda));
  STATUS_TRY (reduce_trailer (cuda));
  verdict_kernel<<<1, 1, 0, dist->stream>>> (
      dist->trailer, dist->size, dist->verdict);
  CUDA_TRY (cudaGetLastError ());
  return record_for_host (cuda, dist->trailer_ready, dist->stream);
}

/* Launches the buckets that the gradient at @offset completed. */
static int
produced (CudaBackend *cuda, size_t offset)
{
  CudaDist *dist = cuda->dist;
  int ready = gt_dist_bucket_plan_produced (&dist->plan, offset), index;

  if (ready < 0)
    return backend_fail (cuda, GT_ERROR_DEVICE,
        "internal error: the gradient at %zu is not in the bucket plan, or "
        "came twice",
        offset);
  if (ready == 0)
    return GT_OK;
  STATUS_TRY (fork_to_comm (cuda));
  for (index = dist->plan.next_ready - ready; index < dist->plan.next_ready;
       index++)
    STATUS_TRY (reduce_bucket (cuda, index, 1));
  return GT_OK;
}

/* The compute stream waits for the last bucket, timing the wait. */
static int
end_backward (CudaBackend *cuda)
{
  CudaDist *dist = cuda->dist;

  if (dist->plan.next_ready != dist->plan.num_buckets)
    return backend_fail (cuda, GT_ERROR_DEVICE,
        "internal error: the backward pass produced %d of %d gradient "
        "buckets",
        dist->plan.next_ready, dist->plan.num_buckets);
  wait_begins_kernel<<<1, 1, 0, cuda->compute>>> (dist->clock);
  CUDA_TRY (cudaGetLastError ());
  STATUS_TRY (record_for_host (cuda, dist->watchdog.done, dist->stream));
  CUDA_TRY (cudaEventRecord (dist->join, dist->stream));
  CUDA_TRY (cudaStreamWaitEvent (cuda->compute, dist->join, 0));
  wait_ends_kernel<<<1, 1, 0, cuda->compute>>> (dist->clock, dist->wait_ns);
  CUDA_TRY (cudaGetLastError ());
  return GT_OK;
}

static int
step_end_nccl (CudaBackend *cuda, GtStepResult *result, int nonfinite)
{
  CudaDist *dist = cuda->dist;
  int status;

  /* the step's reductions are queued (the graph, or the eager step, was
   * launched): the watchdog bounds them from here */
  STATUS_TRY (watchdog_verdict (cuda));
  gt_dist_watchdog_arm (&dist->watchdog);
  STATUS_TRY (
      wait_event (cuda, dist->trailer_ready, "reducing the step's trailer"));
  status = gt_dist_trailer_read (dist->comm, dist->trailer_host, nonfinite, 1,
      result, cuda->why, sizeof (cuda->why));
  /* the step before this one has waited for its reduction; this one may
   * still be in its backward pass, which overlaps the caller */
  if (cuda->steps_begun >= 2)
    result->comm_seconds =
        ((volatile unsigned long long *)
                dist->wait_ns_host)[(cuda->steps_begun - 2) & 1]
        * 1e-9;
  return status;
}

/* The peers' step, with nothing in it: the trailer, then every bucket, in
 * the order they reduce them. */
static int
leave_nccl (CudaBackend *cuda)
{
  CudaDist *dist = cuda->dist;
  GtStepResult ignored;
  int index;

  STATUS_TRY (watchdog_verdict (cuda));
  if (dist->watchdog.broken)
    return backend_fail (cuda, GT_ERROR_DEVICE,
        "the NCCL communicator failed earlier: this rank leaves without "
        "its peers' last reduction");
  memset (&ignored, 0, sizeof (ignored));
  cuda->host_valid = 0;
  STATUS_TRY (fork_to_comm (cuda));
  CUDA_TRY (cudaMemsetAsync (
      cuda->grads, 0, cuda->spec->num_params * sizeof (float), dist->stream));
  gt_dist_trailer_fill (dist->trailer_host, 0, 0, 0, 0, 0, 0);
  CUDA_TRY (cudaMemcpyAsync (dist->trailer, dist->trailer_host,
      GT_DIST_TRAILER * sizeof (float), cudaMemcpyHostToDevice, dist->stream));
  STATUS_TRY (reduce_trailer (cuda));
  for (index = 0; index < dist->plan.num_buckets; index++)
    STATUS_TRY (reduce_bucket (cuda, index, 0));
  CUDA_TRY (cudaEventRecord (dist->watchdog.done, dist->stream));
  CUDA_TRY (cudaEventRecord (dist->trailer_ready, dist->stream));
  gt_dist_watchdog_arm (&dist->watchdog);
  STATUS_TRY (wait_event (cuda, dist->trailer_ready, "leaving the job"));
  return gt_dist_trailer_read (dist->comm, dist->trailer_host, 0, 0, &ignored,
      cuda->why, sizeof (cuda->why));
}
#endif /* GT_HAVE_NCCL */

/* @call where the trainer reduces over NCCL; over MPI the step's stream
 * has nothing to do at that point (the host reduces after the step). */
#ifdef GT_HAVE_NCCL
#define OVER_NCCL(cuda, call) ((cuda)->dist->mode == DIST_NCCL ? (call) : GT_OK)
#else
#define OVER_NCCL(cuda, call) GT_OK
#endif

int
dist_begin_backward (CudaBackend *cuda, int num_samples)
{
  return OVER_NCCL (cuda, begin_backward (cuda, num_samples));
}

int
dist_produced (CudaBackend *cuda, size_t offset)
{
  return OVER_NCCL (cuda, produced (cuda, offset));
}

int
dist_end_backward (CudaBackend *cuda)
{
  CudaDist *dist = cuda->dist;

#ifdef GT_HAVE_NCCL
  if (dist->mode == DIST_NCCL)
    return end_backward (cuda);
#endif
  /* MPI: the gradients to the host, whole and in fp32 */
  if (dist->num_widen_chunks > 0) {
    widen_kernel<<<dist->num_widen_chunks, THREADS, 0, cuda->compute>>> (
        dist->widen_chunks, (const __nv_bfloat16 *)cuda->grads_work,
        cuda->grads);
    CUDA_TRY (cudaGetLastError ());
  }
  CUDA_TRY (cudaMemcpyAsync (dist->staging, cuda->grads,
      cuda->spec->num_params * sizeof (float), cudaMemcpyDeviceToHost,
      cuda->compute));
  CUDA_TRY (cudaEventRecord (dist->staged, cuda->compute));
  return GT_OK;
}

int
dist_step_end (CudaBackend *cuda, GtStepResult *result)
{
  CudaDist *dist = cuda->dist;
  const GtCudaLossResult *loss = cuda->result_host;
  int nonfinite = !loss->finite, status;

#ifdef GT_HAVE_NCCL
  if (dist->mode == DIST_NCCL)
    return step_end_nccl (cuda, result, nonfinite);
#endif
  /* MPI: the reduction on the host, then the update */
  CUDA_TRY (cudaEventSynchronize (dist->staged));
  gt_dist_trailer_fill (dist->trailer_host, loss->loss_sum, loss->correct_top1,
      loss->correct_top5, result->num_samples, nonfinite, 1);
  status =
      gt_dist_reduce_step (dist->comm, dist->staging, cuda->spec->num_params,
          nonfinite, 1, result, cuda->why, sizeof (cuda->why));
  dist->verdict_host->finite = status == GT_OK;
  if (status == GT_OK)
    CUDA_TRY (cudaMemcpyAsync (cuda->grads, dist->staging,
        cuda->spec->num_params * sizeof (float), cudaMemcpyHostToDevice,
        cuda->compute));
  CUDA_TRY (cudaMemcpyAsync (dist->verdict, dist->verdict_host,
      sizeof (GtCudaLossResult), cudaMemcpyHostToDevice, cuda->compute));
  STATUS_TRY (apply_update (cuda, dist->verdict));
  return status;
}

/* ---- leaving ---- */

/* MPI: the peers' reduction with zeros and the active flag 0, as the CPU
 * backend's leave. */
static int
leave_mpi (CudaBackend *cuda)
{
  CudaDist *dist = cuda->dist;
  GtStepResult ignored;
  size_t num_params = cuda->spec->num_params;

  memset (&ignored, 0, sizeof (ignored));
  /* the last update may still be reading the staging buffer */
  CUDA_TRY (cudaStreamSynchronize (cuda->compute));
  memset (dist->staging, 0, num_params * sizeof (float));
  gt_dist_trailer_fill (dist->trailer_host, 0, 0, 0, 0, 0, 0);
  return gt_dist_reduce_step (dist->comm, dist->staging, num_params, 0, 0,
      &ignored, cuda->why, sizeof (cuda->why));
}

int
cuda_leave (void *data, char *why, size_t why_size)
{
  CudaBackend *cuda = (CudaBackend *)data;
  int status;

  if (cuda->dist == NULL)
    return GT_OK;
  if (cudaSetDevice (cuda->device) != cudaSuccess) {
    cudaGetLastError ();
    status = backend_fail (
        cuda, GT_ERROR_DEVICE, "CUDA: cudaSetDevice failed while leaving");
  } else if (cuda->dist->mode == DIST_MPI) {
    status = leave_mpi (cuda);
  } else {
#ifdef GT_HAVE_NCCL
    status = leave_nccl (cuda);
#else
    status = backend_fail (cuda, GT_ERROR_DEVICE, "internal error: no NCCL");
#endif
  }
  /* GT_ERROR_STOPPED is the expected outcome: its message goes too */
  return cuda_report (cuda, status, why, why_size);
}
