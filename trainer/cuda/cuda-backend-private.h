/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-backend-private.h: the CUDA backend's state, shared by its files:
 * cuda-backend.cu (device, layers, the optimiser's layout, create and
 * destroy, and the one exported symbol, gt_cuda_backend), cuda-step.cu
 * (forward, backward, a step, its graph, eval), cuda-dist.cu
 * (data-parallel steps; its NCCL watchdog in cuda-dist-watchdog.c),
 * cuda-state.cu (device memory, host views of the state, uploads, pinned
 * memory, the update) and cuda-errors.cu. Calls go down that list, never
 * back up.
 * Nothing here leaves the backend: the functions are C++ and hidden. */
#ifndef GT_CUDA_BACKEND_PRIVATE_H
#define GT_CUDA_BACKEND_PRIVATE_H

extern "C" {
#include "backend.h"
#include "gt-error.h"
#include "gt-log.h"
}
#include "cuda-cudnn.h"
#include "cuda-kernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#define GT_CUDA_HIDDEN __attribute__ ((visibility ("hidden")))

#define CUBLAS_WORKSPACE_BYTES (32u << 20)
#define CUDNN_WORKSPACE_MAX ((size_t)1 << 30)
#define MAX_PROFILE_MARKS 2048

typedef enum
{
  PART_CONV,
  PART_NORM, /* batch-norm, ReLU, residual add, pooling */
  PART_CLASSIFIER,
  PART_OPTIMIZER,
  PART_INPUT,
  PART_END,
  NUM_PARTS = PART_END,
} StepPart;

/* cuda-dist.cu's state of a data-parallel trainer */
typedef struct CudaDist CudaDist;

/* backend.h's units and blocks, activations in the working precision */
typedef GtUnit Unit;
typedef GtBlock Block;

typedef struct
{
  const GtModelSpec *spec;
  GtTrainerConfig config;
  GtCudaDtype dtype;
  size_t elem; /* bytes of one activation value */
  int device;
  char why[512];

  cudaStream_t compute;
  cudaStream_t copy;
  cudaEvent_t copied;     /* the batch is on the device */
  cudaEvent_t input_free; /* its staging buffer may be overwritten */
  cudaEvent_t loss_ready; /* the loss is in result_host */
  /* each step's start and end on the compute stream, two pairs used in
   * turn: a step's end reports the device time of the step before it */
  cudaEvent_t step_marks[2][2];
  int64_t steps_begun;
  GtCudnn *cudnn;
  cublasHandle_t cublas;

  void **allocations; /* every cudaMalloc, freed at destroy */
  int num_allocations;

  float *params;
  float *grads;
  float *momentum;
  float *stats;
  float *saved_stats; /* restored when a step's loss is not finite */
  void *params_work;  /* bf16 copy; == params in fp32 */
  void *grads_work;   /* bf16 filter gradients; == grads in fp32 */
  GtCudaSgdChunk *chunks;
  int num_chunks;
  int64_t num_batches_tracked;

  /* host views for sync_to_host */
  float *host_params;
  float *host_grads;
  float *host_momentum;
  float *host_stats;
  int host_valid; /* the host views hold the device state */

  uint8_t *images; /* the batch as copied: packed uint8 NHWC */
  int32_t *labels;
  void *input; /* normalised, 3 channels */
  float input_scale[3];
  float input_offset[3];
  Unit stem;
  void *pooled;
  uint8_t *argmax;
  Block *blocks;
  void *features;
  void *dfeatures;
  float *logits;
  float *dlogits;
  void *dlogits_work; /* dlogits in the working precision */
  void *grad_buffers[4];
  void *dconv;
  float *norm_partials;
  float *norm_coefs;
  double *sample_loss;
  int *sample_hits;
  GtCudaLossResult *result_device;
  GtCudaLossResult *result_host; /* pinned */
  GtCudaStepParams *step_params_device;
  GtCudaStepParams *step_params_host; /* pinned */
  int logits_samples;

  int use_graph;
  char graph_off[256]; /* why use_graph is 0, for the report */
  int require_graph;   /* a failed capture is an error, not a fallback */
  int capturing;
  cudaGraphExec_t graph_exec;
  int graph_channels;
  int64_t full_steps_run;

  int profile;
  cudaEvent_t marks[MAX_PROFILE_MARKS];
  StepPart mark_parts[MAX_PROFILE_MARKS];
  int num_marks;
  cudaEvent_t copy_marks[2];
  double part_ms[NUM_PARTS + 1]; /* + the copy */
  int64_t profiled_steps;

  float pending_lr;
  int pending_samples;

  CudaDist *dist; /* data-parallel (cuda-dist.cu); NULL training alone */
} CudaBackend;

/* ---- cuda-errors.cu: each records its message in cuda->why ---- */

GT_CUDA_HIDDEN int cuda_fail (
    CudaBackend *cuda, cudaError_t err, const char *call);
GT_CUDA_HIDDEN int cublas_fail (
    CudaBackend *cuda, cublasStatus_t status, const char *call);
/* Copies cuda->why to the caller's @why when @status is a failure. */
GT_CUDA_HIDDEN int cuda_report (
    CudaBackend *cuda, int status, char *why, size_t why_size);

/* Records a failure of the backend and returns its status. */
#define backend_fail(cuda, status, ...)                                        \
  gt_error_set ((cuda)->why, sizeof ((cuda)->why), (status), __VA_ARGS__)

#define CUDA_TRY(call)                                                         \
  do {                                                                         \
    cudaError_t err_ = (call);                                                 \
    if (err_ != cudaSuccess)                                                   \
      return cuda_fail (cuda, err_, #call);                                    \
  } while (0)

#define CUBLAS_TRY(call)                                                       \
  do {                                                                         \
    cublasStatus_t status_ = (call);                                           \
    if (status_ != CUBLAS_STATUS_SUCCESS)                                      \
      return cublas_fail (cuda, status_, #call);                               \
  } while (0)

/* For the calls that return a GtStatus and fill cuda->why themselves. */
#define STATUS_TRY(call)                                                       \
  do {                                                                         \
    int status_ = (call);                                                      \
    if (status_ != GT_OK)                                                      \
      return status_;                                                          \
  } while (0)

/* ---- cuda-state.cu: memory ---- */

/* cudaMalloc, remembered for cuda_destroy. */
GT_CUDA_HIDDEN int device_alloc (
    CudaBackend *cuda, void **out, size_t bytes, const char *what);

#define ALLOC(pointer, bytes, what)                                            \
  STATUS_TRY (device_alloc (cuda, (void **)&(pointer), (bytes), (what)))

static inline void *
work_at (const CudaBackend *cuda, void *base, size_t offset)
{
  return (char *)base + offset * cuda->elem;
}

/* ---- cuda-step.cu ---- */

GT_CUDA_HIDDEN GtConvShape unit_shape (const Unit *unit, int n);
GT_CUDA_HIDDEN void profile_print (CudaBackend *cuda);
GT_CUDA_HIDDEN int cuda_step_begin (
    void *data, const GtBatch *batch, float lr, char *why, size_t why_size);
GT_CUDA_HIDDEN int cuda_step_end (
    void *data, GtStepResult *result, char *why, size_t why_size);
GT_CUDA_HIDDEN int cuda_eval (void *data, const GtBatch *batch,
    GtEvalTotals *totals, char *why, size_t why_size);
GT_CUDA_HIDDEN size_t cuda_read_logits (void *data, float *out, size_t count);

/* ---- cuda-state.cu ---- */

/* Pushes the host views to the device (and refreshes the bf16 copy). */
GT_CUDA_HIDDEN int upload_state (CudaBackend *cuda);
GT_CUDA_HIDDEN int cuda_sync_to_host (void *data, GtHostState *state);
GT_CUDA_HIDDEN int cuda_sync_from_host (void *data);
GT_CUDA_HIDDEN void *cuda_host_alloc (void *data, size_t bytes);
GT_CUDA_HIDDEN void cuda_host_free (void *data, void *memory);

/* Whether a chunk table takes (part of) @entry: 0 or 1 for a NULL @chunk;
 * else it fills @chunk's decay and flags for it. */
typedef int (*ChunkFill) (
    const CudaBackend *cuda, const GtTensorEntry *entry, GtCudaSgdChunk *chunk);
/* The entries @fill takes cut into runs of GT_CUDA_SGD_CHUNK values, in
 * entry (so offset) order: a new table in *@table (to free) and its size
 * in *@count. */
GT_CUDA_HIDDEN int cut_into_chunks (
    CudaBackend *cuda, ChunkFill fill, GtCudaSgdChunk **table, int *count);
/* Copies @chunks (freed here) to a new device table in *@table; @what
 * names it in messages. */
GT_CUDA_HIDDEN int upload_chunks (CudaBackend *cuda, GtCudaSgdChunk *chunks,
    int count, GtCudaSgdChunk **table, const char *what);
/* The optimiser and the restore of the statistics, on the compute stream,
 * standing down where @verdict (in device memory: the loss kernel's, or
 * data-parallel every rank's) says the step does not apply. */
GT_CUDA_HIDDEN int apply_update (
    CudaBackend *cuda, const GtCudaLossResult *verdict);

/* ---- cuda-dist.cu: data-parallel steps ---- */

/* After the trainer's own setup ended with @status: the rest of the setup
 * of a data-parallel trainer, which every rank reaches (collectives). */
GT_CUDA_HIDDEN int dist_setup (CudaBackend *cuda, int status);
GT_CUDA_HIDDEN void dist_free (CudaBackend *cuda);
/* Whether the step applies on every rank, in device memory: what the
 * optimiser reads in place of the loss kernel's own flag. */
GT_CUDA_HIDDEN const GtCudaLossResult *dist_verdict (CudaBackend *cuda);
/* 1 when the update belongs to the step's stream work (NCCL), 0 when
 * step_end runs it after the host's reduction (MPI). */
GT_CUDA_HIDDEN int dist_updates_in_step (CudaBackend *cuda);
/* The step's stream work around the backward pass: the trailer after the
 * loss; each parameter tensor as its gradient is complete (@offset in
 * the flat buffer), which launches the buckets it completes; the join
 * (NCCL) or the copy to the host (MPI) after it. */
GT_CUDA_HIDDEN int dist_begin_backward (CudaBackend *cuda, int num_samples);
GT_CUDA_HIDDEN int dist_produced (CudaBackend *cuda, size_t offset);
GT_CUDA_HIDDEN int dist_end_backward (CudaBackend *cuda);
/* step_end's part once the loss is on the host: the global result and
 * the status every rank shares. */
GT_CUDA_HIDDEN int dist_step_end (CudaBackend *cuda, GtStepResult *result);
GT_CUDA_HIDDEN int cuda_leave (void *data, char *why, size_t why_size);

#endif /* GT_CUDA_BACKEND_PRIVATE_H */
