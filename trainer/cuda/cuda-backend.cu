/* cuda-backend.cu: the CUDA backend. Read next to cpu/cpu-backend.c: the
 * same units, blocks and walks, in the same order, with the same names;
 * what differs is where the work runs and how it is ordered.
 *
 * - State: the flat fp32 buffers of model.h (parameters, gradients,
 *   momentum, running statistics) in the CPU backend's exact layout, so
 *   that sync_to_host hands trainer.c the same host views. In bf16 a
 *   working copy of the parameters feeds the convolutions and the
 *   classifier, and cuDNN's filter gradients land in a bf16 gradient
 *   buffer of the same layout; the optimiser (one launch) reads them,
 *   keeps the fp32 gradients, and refreshes the working copy.
 * - A step: the batch goes host to device on a copy stream (from pinned
 *   memory when the caller used gt_trainer_host_alloc) while the compute
 *   stream may still be finishing the previous step's backward pass; the
 *   compute stream waits for the copy, then runs input conversion,
 *   forward, loss, backward and optimiser. step_end waits only for the
 *   loss: the rest of the step overlaps with the caller preparing the
 *   next batch, and everything later on the stream is ordered after it.
 * - A non-finite loss is decided on the device: the optimiser and the
 *   restore of the running statistics read the loss kernel's flag, so the
 *   step needs no round trip to the host before it commits.
 * - Once a full batch has run eagerly, the compute part of the step is
 *   captured as a CUDA graph and replayed (GT_CUDA_NO_GRAPH=1 turns that
 *   off); the learning rate lives in device memory so the graph never
 *   changes. A capture that fails falls back to eager steps for good.
 * - GT_CUDA_PROFILE=1 times each step's parts with events (no graph) and
 *   prints the split to stderr when the trainer is freed. */
extern "C" {
#include "backend.h"
}
#include "cuda-cudnn.h"
#include "cuda-kernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const char *const part_names[NUM_PARTS] = {
  "convolutions",
  "bn_relu_pool",
  "classifier_loss",
  "optimizer",
  "input_conversion",
};

/* A convolution and the batch-norm after it. */
typedef struct
{
  const GtConvSpec *conv;
  const GtNormSpec *norm;
  int in_h, in_w, out_h, out_w;
  void *conv_out; /* before the norm, kept for its backward pass */
  void *out;      /* after the norm (+ residual) (+ ReLU) */
  float *mean;    /* batch statistics of the last training forward */
  float *invstd;
} Unit;

typedef struct
{
  const GtBlockSpec *spec;
  int num_units;
  Unit units[3];
  Unit down;
} Block;

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
  int pooled_h, pooled_w;
  Block *blocks;
  int last_h, last_w;
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
} CudaBackend;

/* ---- errors ---- */

static int
cuda_fail (CudaBackend *cuda, cudaError_t err, const char *call)
{
  int length = (int)strcspn (call, "(");

  snprintf (cuda->why, sizeof (cuda->why), "CUDA: %.*s failed: %s (%s)", length,
      call, cudaGetErrorString (err), cudaGetErrorName (err));
  cudaGetLastError (); /* clear it where it is not sticky */
  return err == cudaErrorMemoryAllocation ? GT_ERROR_NO_MEMORY
                                          : GT_ERROR_DEVICE;
}

static int
cublas_fail (CudaBackend *cuda, cublasStatus_t status, const char *call)
{
  int length = (int)strcspn (call, "(");

  snprintf (cuda->why, sizeof (cuda->why), "cuBLAS: %.*s failed: %s", length,
      call, cublasGetStatusString (status));
  return status == CUBLAS_STATUS_ALLOC_FAILED ? GT_ERROR_NO_MEMORY
                                              : GT_ERROR_DEVICE;
}

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

static int fail (CudaBackend *cuda, int status, const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));

static int
fail (CudaBackend *cuda, int status, const char *format, ...)
{
  va_list args;

  va_start (args, format);
  vsnprintf (cuda->why, sizeof (cuda->why), format, args);
  va_end (args);
  return status;
}

static int
report (CudaBackend *cuda, int status, char *why, size_t why_size)
{
  if (status != GT_OK && why != NULL && why_size > 0)
    snprintf (why, why_size, "%s", cuda->why);
  return status;
}

/* ---- memory ---- */

static int
device_alloc (CudaBackend *cuda, void **out, size_t bytes, const char *what)
{
  void **allocations;
  cudaError_t err;

  *out = NULL;
  allocations = (void **)realloc (
      cuda->allocations, (cuda->num_allocations + 1) * sizeof (void *));
  if (allocations == NULL)
    return fail (cuda, GT_ERROR_NO_MEMORY, "out of host memory");
  cuda->allocations = allocations;
  err = cudaMalloc (out, bytes > 0 ? bytes : 1);
  if (err != cudaSuccess) {
    *out = NULL;
    cudaGetLastError ();
    return fail (cuda,
        err == cudaErrorMemoryAllocation ? GT_ERROR_NO_MEMORY : GT_ERROR_DEVICE,
        "CUDA: cudaMalloc of %.1f MiB for %s on GPU %d failed: %s",
        bytes / 1048576.0, what, cuda->device, cudaGetErrorString (err));
  }
  cuda->allocations[cuda->num_allocations++] = *out;
  return GT_OK;
}

#define ALLOC(pointer, bytes, what)                                            \
  STATUS_TRY (device_alloc (cuda, (void **)&(pointer), (bytes), (what)))

static void *
work_at (const CudaBackend *cuda, void *base, size_t offset)
{
  return (char *)base + offset * cuda->elem;
}

/* ---- profiling ---- */

static int
mark (CudaBackend *cuda, StepPart part)
{
  if (!cuda->profile || cuda->num_marks >= MAX_PROFILE_MARKS)
    return GT_OK;
  if (cuda->num_marks > 0 && part != PART_END
      && cuda->mark_parts[cuda->num_marks - 1] == part)
    return GT_OK;
  CUDA_TRY (cudaEventRecord (cuda->marks[cuda->num_marks], cuda->compute));
  cuda->mark_parts[cuda->num_marks++] = part;
  return GT_OK;
}

/* Adds the last step's intervals (the stream has been synchronised). */
static void
profile_collect (CudaBackend *cuda)
{
  float ms;
  int i;

  if (!cuda->profile)
    return;
  for (i = 0; i + 1 < cuda->num_marks; i++)
    if (cudaEventElapsedTime (&ms, cuda->marks[i], cuda->marks[i + 1])
        == cudaSuccess)
      cuda->part_ms[cuda->mark_parts[i]] += ms;
  if (cudaEventElapsedTime (&ms, cuda->copy_marks[0], cuda->copy_marks[1])
      == cudaSuccess)
    cuda->part_ms[NUM_PARTS] += ms;
  cuda->num_marks = 0;
  cuda->profiled_steps++;
}

static void
profile_print (CudaBackend *cuda)
{
  int i;

  if (!cuda->profile || cuda->profiled_steps == 0)
    return;
  fprintf (stderr, "{\"gst_train_cuda_split_ms_per_step\": {\"steps\": %lld",
      (long long)cuda->profiled_steps);
  for (i = 0; i < NUM_PARTS; i++)
    fprintf (stderr, ", \"%s\": %.3f", part_names[i],
        cuda->part_ms[i] / cuda->profiled_steps);
  fprintf (stderr, ", \"h2d_copy\": %.3f}}\n",
      cuda->part_ms[NUM_PARTS] / cuda->profiled_steps);
}

/* ---- layers ---- */

static size_t
unit_output_values (const Unit *unit, int batch_size)
{
  return (size_t)batch_size * unit->out_h * unit->out_w
      * unit->conv->out_channels;
}

static int
conv_output_size (const GtConvSpec *conv, int size)
{
  return (size + 2 * conv->padding - conv->kernel) / conv->stride + 1;
}

static GtConvShape
unit_shape (const Unit *unit, int n)
{
  GtConvShape shape;

  shape.n = n;
  shape.h = unit->in_h;
  shape.w = unit->in_w;
  shape.in_channels = unit->conv->in_channels;
  shape.out_channels = unit->conv->out_channels;
  shape.kernel = unit->conv->kernel;
  shape.stride = unit->conv->stride;
  shape.padding = unit->conv->padding;
  return shape;
}

static int
unit_setup (CudaBackend *cuda, Unit *unit, const GtConvSpec *conv,
    const GtNormSpec *norm, int in_h, int in_w, size_t *max_activation)
{
  int batch_size = cuda->config.batch_size;
  size_t values;

  unit->conv = conv;
  unit->norm = norm;
  unit->in_h = in_h;
  unit->in_w = in_w;
  unit->out_h = conv_output_size (conv, in_h);
  unit->out_w = conv_output_size (conv, in_w);
  if (unit->out_h < 1 || unit->out_w < 1)
    return fail (cuda, GT_ERROR_INVALID, "%dx%d images are too small for %s",
        cuda->config.width, cuda->config.height,
        gt_model_name (cuda->spec->model));
  if (norm->channels % 4 != 0)
    return fail (cuda, GT_ERROR_INVALID,
        "the CUDA backend needs batch-norm widths that are multiples of 4, "
        "not %d",
        norm->channels);
  values = unit_output_values (unit, batch_size);
  if (values > *max_activation)
    *max_activation = values;
  ALLOC (unit->conv_out, values * cuda->elem, "activations");
  ALLOC (unit->out, values * cuda->elem, "activations");
  ALLOC (unit->mean, conv->out_channels * sizeof (float), "statistics");
  ALLOC (unit->invstd, conv->out_channels * sizeof (float), "statistics");
  return GT_OK;
}

/* Chooses the convolution algorithms of the unit for full batches, timing
 * them on scratch data (the gradient buffers, filled with noise). */
static int
unit_plan (CudaBackend *cuda, const Unit *unit, int with_data_grad)
{
  GtConvShape shape = unit_shape (unit, cuda->config.batch_size);

  return gt_cudnn_plan (cuda->cudnn, &shape, with_data_grad,
      cuda->grad_buffers[0],
      work_at (cuda, cuda->params_work, unit->conv->weight),
      cuda->grad_buffers[1], cuda->grad_buffers[2],
      work_at (cuda, cuda->grads_work, unit->conv->weight), cuda->why,
      sizeof (cuda->why));
}

/* ---- forward ---- */

static int
unit_forward (CudaBackend *cuda, Unit *unit, const void *x, int n,
    const void *residual, int relu, int training)
{
  const GtNormSpec *norm = unit->norm;
  GtConvShape shape = unit_shape (unit, n);
  size_t rows = (size_t)n * unit->out_h * unit->out_w;

  STATUS_TRY (mark (cuda, PART_CONV));
  STATUS_TRY (gt_cudnn_forward (cuda->cudnn, &shape, x,
      work_at (cuda, cuda->params_work, unit->conv->weight), unit->conv_out,
      cuda->why, sizeof (cuda->why)));
  STATUS_TRY (mark (cuda, PART_NORM));
  if (training)
    CUDA_TRY (gt_cuda_norm_forward_train (cuda->dtype, rows, norm->channels,
        unit->conv_out, cuda->params + norm->weight, cuda->params + norm->bias,
        residual, relu, unit->out, unit->mean, unit->invstd,
        cuda->stats + norm->mean, cuda->stats + norm->var, cuda->norm_partials,
        cuda->norm_coefs, cuda->compute));
  else
    CUDA_TRY (gt_cuda_norm_forward_eval (cuda->dtype, rows, norm->channels,
        unit->conv_out, cuda->params + norm->weight, cuda->params + norm->bias,
        cuda->stats + norm->mean, cuda->stats + norm->var, residual, relu,
        unit->out, cuda->norm_coefs, cuda->compute));
  return GT_OK;
}

/* out = relu(main path + shortcut), the shortcut being the input or its
 * 1x1 projection. */
static int
block_forward (
    CudaBackend *cuda, Block *block, const void *x, int n, int training)
{
  const void *in = x;
  const void *shortcut = x;
  int k;

  if (block->spec->has_downsample) {
    STATUS_TRY (unit_forward (cuda, &block->down, x, n, NULL, 0, training));
    shortcut = block->down.out;
  }
  for (k = 0; k < block->num_units; k++) {
    int last = k == block->num_units - 1;

    STATUS_TRY (unit_forward (
        cuda, &block->units[k], in, n, last ? shortcut : NULL, 1, training));
    in = block->units[k].out;
  }
  return GT_OK;
}

/* logits = features weight^T + bias: cuBLAS is column-major, so the
 * row-major [n][classes] logits are its classes x n matrix. */
static int
linear_forward (CudaBackend *cuda, int n)
{
  const GtModelSpec *spec = cuda->spec;
  cudaDataType_t type = cuda->dtype == GT_CUDA_F32 ? CUDA_R_32F : CUDA_R_16BF;
  const float one = 1.f;

  CUDA_TRY (gt_cuda_broadcast_rows (cuda->params + spec->fc_bias, n,
      spec->num_classes, cuda->logits, cuda->compute));
  CUBLAS_TRY (cublasGemmEx (cuda->cublas, CUBLAS_OP_T, CUBLAS_OP_N,
      spec->num_classes, n, spec->features, &one,
      work_at (cuda, cuda->params_work, spec->fc_weight), type, spec->features,
      cuda->features, type, spec->features, &one, cuda->logits, CUDA_R_32F,
      spec->num_classes, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return GT_OK;
}

static int
network_forward (CudaBackend *cuda, int n, int training)
{
  const GtModelSpec *spec = cuda->spec;
  const void *x;
  int i;

  STATUS_TRY (
      unit_forward (cuda, &cuda->stem, cuda->input, n, NULL, 1, training));
  x = cuda->stem.out;
  if (spec->has_maxpool) {
    CUDA_TRY (gt_cuda_maxpool_forward (cuda->dtype, x, n, cuda->stem.out_h,
        cuda->stem.out_w, spec->stem.out_channels, cuda->pooled, cuda->argmax,
        cuda->compute));
    x = cuda->pooled;
  }
  for (i = 0; i < spec->num_blocks; i++) {
    STATUS_TRY (block_forward (cuda, &cuda->blocks[i], x, n, training));
    x = cuda->blocks[i].units[cuda->blocks[i].num_units - 1].out;
  }
  CUDA_TRY (
      gt_cuda_avgpool_forward (cuda->dtype, x, n, cuda->last_h * cuda->last_w,
          spec->features, cuda->features, cuda->compute));
  STATUS_TRY (mark (cuda, PART_CLASSIFIER));
  STATUS_TRY (linear_forward (cuda, n));
  cuda->logits_samples = n;
  return GT_OK;
}

/* ---- backward ---- */

/* Gradients of the unit's weights from @dy; the gradient at its input goes
 * to @dx (plus @beta times what @dx holds) when @dx is not NULL. */
static int
unit_backward (CudaBackend *cuda, Unit *unit, const void *x, int n, int relu,
    const void *dy, void *dx, float beta, void *dresidual)
{
  const GtNormSpec *norm = unit->norm;
  GtConvShape shape = unit_shape (unit, n);
  size_t rows = (size_t)n * unit->out_h * unit->out_w;

  STATUS_TRY (mark (cuda, PART_NORM));
  CUDA_TRY (gt_cuda_norm_backward (cuda->dtype, rows, norm->channels,
      unit->conv_out, unit->mean, unit->invstd, cuda->params + norm->weight,
      relu ? unit->out : NULL, dy, cuda->dconv, cuda->grads + norm->weight,
      cuda->grads + norm->bias, dresidual, cuda->norm_partials,
      cuda->norm_coefs, cuda->compute));
  STATUS_TRY (mark (cuda, PART_CONV));
  STATUS_TRY (gt_cudnn_backward_filter (cuda->cudnn, &shape, x, cuda->dconv,
      work_at (cuda, cuda->grads_work, unit->conv->weight), cuda->why,
      sizeof (cuda->why)));
  if (dx != NULL)
    STATUS_TRY (gt_cudnn_backward_data (cuda->cudnn, &shape, cuda->dconv,
        work_at (cuda, cuda->params_work, unit->conv->weight), beta, dx,
        cuda->why, sizeof (cuda->why)));
  return GT_OK;
}

/* grad_buffers[*at] holds the gradient at the block's output; on return
 * *at names the buffer with the gradient at its input. The shortcut's
 * gradient is never added by a pass of its own: the first unit's
 * backward-data convolution adds onto it (beta 1), onto the projection's
 * input gradient when there is one, else onto the residual gradient that
 * the last unit's batch-norm left. */
static int
block_backward (CudaBackend *cuda, Block *block, const void *x, int n, int *at)
{
  void **grad = cuda->grad_buffers;
  int out = *at, shortcut = (out + 1) % 4, a = (out + 2) % 4, b = (out + 3) % 4;
  int last = block->num_units - 1, current, target, k;

  /* the last unit: its residual input's gradient goes to grad[shortcut] */
  STATUS_TRY (unit_backward (cuda, &block->units[last],
      last > 0 ? block->units[last - 1].out : x, n, 1, grad[out],
      last > 0 ? grad[a] : NULL, 0.f, grad[shortcut]));
  /* the projection reads grad[shortcut] before anything adds onto it;
   * grad[out] is spent and takes its input gradient */
  if (block->spec->has_downsample) {
    STATUS_TRY (unit_backward (
        cuda, &block->down, x, n, 0, grad[shortcut], grad[out], 0.f, NULL));
    target = out;
  } else {
    target = shortcut;
  }
  current = a;
  for (k = last - 1; k >= 0; k--) {
    const void *unit_in = k > 0 ? block->units[k - 1].out : x;
    int next = current == a ? b : a;

    STATUS_TRY (
        unit_backward (cuda, &block->units[k], unit_in, n, 1, grad[current],
            k > 0 ? grad[next] : grad[target], k > 0 ? 0.f : 1.f, NULL));
    current = next;
  }
  *at = target;
  return GT_OK;
}

/* dweight = dlogits^T features (fp32, straight into the gradients), dbias
 * = column sums of dlogits, dfeatures = dlogits weight. */
static int
linear_backward (CudaBackend *cuda, int n)
{
  const GtModelSpec *spec = cuda->spec;
  cudaDataType_t type = cuda->dtype == GT_CUDA_F32 ? CUDA_R_32F : CUDA_R_16BF;
  const float one = 1.f, zero = 0.f;

  CUBLAS_TRY (cublasGemmEx (cuda->cublas, CUBLAS_OP_N, CUBLAS_OP_T,
      spec->features, spec->num_classes, n, &one, cuda->features, type,
      spec->features, cuda->dlogits_work, type, spec->num_classes, &zero,
      cuda->grads + spec->fc_weight, CUDA_R_32F, spec->features,
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CUDA_TRY (gt_cuda_column_sums (cuda->dlogits, n, spec->num_classes,
      cuda->grads + spec->fc_bias, cuda->compute));
  CUBLAS_TRY (cublasGemmEx (cuda->cublas, CUBLAS_OP_N, CUBLAS_OP_N,
      spec->features, n, spec->num_classes, &one,
      work_at (cuda, cuda->params_work, spec->fc_weight), type, spec->features,
      cuda->dlogits_work, type, spec->num_classes, &zero, cuda->dfeatures, type,
      spec->features, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return GT_OK;
}

static int
network_backward (CudaBackend *cuda, int n)
{
  const GtModelSpec *spec = cuda->spec;
  void **grad = cuda->grad_buffers;
  int at = 0, i;

  STATUS_TRY (linear_backward (cuda, n));
  STATUS_TRY (mark (cuda, PART_NORM));
  CUDA_TRY (gt_cuda_avgpool_backward (cuda->dtype, cuda->dfeatures, n,
      cuda->last_h * cuda->last_w, spec->features, grad[at], cuda->compute));
  for (i = spec->num_blocks - 1; i >= 0; i--) {
    const void *x = i > 0
        ? cuda->blocks[i - 1].units[cuda->blocks[i - 1].num_units - 1].out
        : (spec->has_maxpool ? cuda->pooled : cuda->stem.out);

    STATUS_TRY (block_backward (cuda, &cuda->blocks[i], x, n, &at));
  }
  if (spec->has_maxpool) {
    int to = (at + 1) % 4;

    STATUS_TRY (mark (cuda, PART_NORM));
    CUDA_TRY (gt_cuda_maxpool_backward (cuda->dtype, grad[at], n,
        cuda->stem.out_h, cuda->stem.out_w, spec->stem.out_channels,
        cuda->argmax, grad[to], cuda->compute));
    at = to;
  }
  /* the input needs no gradient */
  return unit_backward (
      cuda, &cuda->stem, cuda->input, n, 1, grad[at], NULL, 0.f, NULL);
}

/* ---- a step ---- */

static int
record (CudaBackend *cuda, cudaEvent_t event)
{
  if (cuda->capturing)
    CUDA_TRY (cudaEventRecordWithFlags (
        event, cuda->compute, cudaEventRecordExternal));
  else
    CUDA_TRY (cudaEventRecord (event, cuda->compute));
  return GT_OK;
}

/* Input conversion and forward pass, from the copied batch. */
static int
run_forward (CudaBackend *cuda, int n, int channels, int training)
{
  STATUS_TRY (mark (cuda, PART_INPUT));
  CUDA_TRY (gt_cuda_normalize_input (cuda->dtype, cuda->images,
      (size_t)n * cuda->config.height * cuda->config.width, channels,
      cuda->input_scale, cuda->input_offset, cuda->input, cuda->compute));
  STATUS_TRY (record (cuda, cuda->input_free));
  if (training)
    CUDA_TRY (cudaMemcpyAsync (cuda->saved_stats, cuda->stats,
        cuda->spec->num_stats * sizeof (float), cudaMemcpyDeviceToDevice,
        cuda->compute));
  STATUS_TRY (network_forward (cuda, n, training));
  CUDA_TRY (gt_cuda_cross_entropy (cuda->logits, cuda->labels, n,
      cuda->spec->num_classes, cuda->config.label_smoothing,
      training ? cuda->dlogits : NULL,
      training && cuda->dtype != GT_CUDA_F32 ? cuda->dlogits_work : NULL,
      cuda->dtype, cuda->sample_loss, cuda->sample_hits, cuda->result_device,
      cuda->compute));
  CUDA_TRY (cudaMemcpyAsync (cuda->result_host, cuda->result_device,
      sizeof (GtCudaLossResult), cudaMemcpyDeviceToHost, cuda->compute));
  return record (cuda, cuda->loss_ready);
}

/* Everything of a training step on the compute stream: what a graph
 * captures. */
static int
run_step (CudaBackend *cuda, int n, int channels)
{
  STATUS_TRY (run_forward (cuda, n, channels, 1));
  STATUS_TRY (network_backward (cuda, n));
  STATUS_TRY (mark (cuda, PART_OPTIMIZER));
  CUDA_TRY (gt_cuda_sgd (cuda->chunks, cuda->num_chunks, cuda->params,
      cuda->grads, cuda->grads_work, cuda->momentum, cuda->params_work,
      cuda->dtype, cuda->config.momentum, cuda->config.nesterov,
      cuda->step_params_device, cuda->result_device, cuda->compute));
  CUDA_TRY (gt_cuda_restore_if_nonfinite (cuda->stats, cuda->saved_stats,
      cuda->spec->num_stats, cuda->result_device, cuda->compute));
  return mark (cuda, PART_END);
}

/* Captures run_step as a graph; 0 when that worked, else the capture is
 * abandoned (and graphs with it) and the caller runs the step eagerly. */
static int
capture_step (CudaBackend *cuda, int n, int channels)
{
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  int status;
  cudaError_t err;

  if (cudaStreamBeginCapture (cuda->compute, cudaStreamCaptureModeThreadLocal)
      != cudaSuccess) {
    cudaGetLastError ();
    return -1;
  }
  cuda->capturing = 1;
  status = run_step (cuda, n, channels);
  cuda->capturing = 0;
  err = cudaStreamEndCapture (cuda->compute, &graph);
  if (status == GT_OK && err == cudaSuccess && graph != NULL)
    err = cudaGraphInstantiate (&exec, graph, 0);
  if (graph != NULL)
    cudaGraphDestroy (graph);
  if (status != GT_OK || err != cudaSuccess || exec == NULL) {
    cudaGetLastError ();
    return -1;
  }
  if (cuda->graph_exec)
    cudaGraphExecDestroy (cuda->graph_exec);
  cuda->graph_exec = exec;
  cuda->graph_channels = channels;
  return 0;
}

static int
check_batch (CudaBackend *cuda, const GtBatch *batch, int training)
{
  const GtTrainerConfig *config = &cuda->config;
  int i;

  if (batch == NULL || batch->images == NULL || batch->labels == NULL)
    return fail (cuda, GT_ERROR_INVALID, "no batch");
  if (batch->num_samples < 1 || batch->num_samples > config->batch_size)
    return fail (cuda, GT_ERROR_INVALID,
        "batch of %d samples: expected 1 to %d", batch->num_samples,
        config->batch_size);
  if (batch->height != config->height || batch->width != config->width
      || (batch->channels != 1 && batch->channels != 3))
    return fail (cuda, GT_ERROR_INVALID,
        "batch of %dx%d images with %d channels: the trainer takes %dx%d "
        "with 1 or 3",
        batch->width, batch->height, batch->channels, config->width,
        config->height);
  for (i = 0; i < batch->num_samples; i++)
    if (batch->labels[i] < 0 || batch->labels[i] >= config->num_classes)
      return fail (cuda, GT_ERROR_INVALID,
          "label %d of sample %d is outside the model's %d classes",
          (int)batch->labels[i], i, config->num_classes);
  if (training && (size_t)batch->num_samples * cuda->last_h * cuda->last_w < 2)
    return fail (cuda, GT_ERROR_INVALID,
        "a batch of one %dx%d image leaves batch-norm one value per channel "
        "(PyTorch refuses it too): use a larger batch or larger images",
        config->width, config->height);
  return GT_OK;
}

/* Copies the batch to the device on the copy stream, once the previous
 * batch's staging buffer has been read, and makes the compute stream wait
 * for it. */
static int
upload_batch (CudaBackend *cuda, const GtBatch *batch)
{
  size_t row_bytes = (size_t)batch->width * batch->channels;
  size_t row_stride = batch->row_stride ? batch->row_stride : row_bytes;
  size_t image_stride =
      batch->image_stride ? batch->image_stride : row_stride * batch->height;
  size_t image_bytes = row_bytes * batch->height;
  int n = batch->num_samples, i;

  CUDA_TRY (cudaStreamWaitEvent (cuda->copy, cuda->input_free, 0));
  if (cuda->profile)
    CUDA_TRY (cudaEventRecord (cuda->copy_marks[0], cuda->copy));
  if (row_stride == row_bytes && image_stride == image_bytes)
    CUDA_TRY (cudaMemcpyAsync (cuda->images, batch->images, n * image_bytes,
        cudaMemcpyHostToDevice, cuda->copy));
  else if (image_stride == row_stride * batch->height)
    CUDA_TRY (cudaMemcpy2DAsync (cuda->images, row_bytes, batch->images,
        row_stride, row_bytes, (size_t)n * batch->height,
        cudaMemcpyHostToDevice, cuda->copy));
  else
    for (i = 0; i < n; i++)
      CUDA_TRY (cudaMemcpy2DAsync (cuda->images + i * image_bytes, row_bytes,
          batch->images + i * image_stride, row_stride, row_bytes,
          batch->height, cudaMemcpyHostToDevice, cuda->copy));
  CUDA_TRY (cudaMemcpyAsync (cuda->labels, batch->labels, n * sizeof (int32_t),
      cudaMemcpyHostToDevice, cuda->copy));
  if (cuda->profile)
    CUDA_TRY (cudaEventRecord (cuda->copy_marks[1], cuda->copy));
  CUDA_TRY (cudaEventRecord (cuda->copied, cuda->copy));
  CUDA_TRY (cudaStreamWaitEvent (cuda->compute, cuda->copied, 0));
  return GT_OK;
}

static int
step_begin (CudaBackend *cuda, const GtBatch *batch, float lr)
{
  int n = batch->num_samples, channels = batch->channels;
  int full = n == cuda->config.batch_size;

  CUDA_TRY (cudaSetDevice (cuda->device));
  cuda->host_valid = 0;
  STATUS_TRY (upload_batch (cuda, batch));
  cuda->step_params_host->lr = lr;
  CUDA_TRY (cudaMemcpyAsync (cuda->step_params_device, cuda->step_params_host,
      sizeof (GtCudaStepParams), cudaMemcpyHostToDevice, cuda->compute));
  if (cuda->use_graph && full && cuda->full_steps_run > 0
      && (cuda->graph_exec == NULL || cuda->graph_channels != channels)) {
    if (capture_step (cuda, n, channels) < 0) {
      const char *require = getenv ("GT_CUDA_REQUIRE_GRAPH");

      if (require != NULL && strcmp (require, "0") != 0)
        return fail (cuda, GT_ERROR_DEVICE,
            "CUDA: the step could not be captured as a graph "
            "(GT_CUDA_REQUIRE_GRAPH is set)");
      fprintf (stderr,
          "gst-train: the CUDA step could not be captured as a graph; "
          "running it without graphs from now on\n");
      cuda->use_graph = 0;
    }
  }
  if (cuda->use_graph && full && cuda->graph_exec
      && cuda->graph_channels == channels)
    CUDA_TRY (cudaGraphLaunch (cuda->graph_exec, cuda->compute));
  else
    STATUS_TRY (run_step (cuda, n, channels));
  if (full)
    cuda->full_steps_run++;
  cuda->pending_lr = lr;
  cuda->pending_samples = n;
  return GT_OK;
}

static int
cuda_step_begin (
    void *data, const GtBatch *batch, float lr, char *why, size_t why_size)
{
  CudaBackend *cuda = (CudaBackend *)data;
  int status = check_batch (cuda, batch, 1);

  if (status == GT_OK)
    status = step_begin (cuda, batch, lr);
  return report (cuda, status, why, why_size);
}

static int
step_end (CudaBackend *cuda, GtStepResult *result)
{
  const GtCudaLossResult *loss = cuda->result_host;

  memset (result, 0, sizeof (*result));
  CUDA_TRY (cudaSetDevice (cuda->device));
  if (cuda->profile) {
    CUDA_TRY (cudaStreamSynchronize (cuda->compute));
    profile_collect (cuda);
  }
  CUDA_TRY (cudaEventSynchronize (cuda->loss_ready));
  result->loss = loss->loss;
  result->lr = cuda->pending_lr;
  result->num_samples = cuda->pending_samples;
  result->correct_top1 = loss->correct_top1;
  result->correct_top5 = loss->correct_top5;
  if (!loss->finite)
    return fail (cuda, GT_ERROR_NONFINITE,
        "the loss is %s: the step was not applied",
        isnan (loss->loss) ? "NaN" : "infinite");
  cuda->num_batches_tracked++;
  return GT_OK;
}

static int
cuda_step_end (void *data, GtStepResult *result, char *why, size_t why_size)
{
  CudaBackend *cuda = (CudaBackend *)data;

  return report (cuda, step_end (cuda, result), why, why_size);
}

static int
eval (CudaBackend *cuda, const GtBatch *batch, GtEvalTotals *totals)
{
  const GtCudaLossResult *loss = cuda->result_host;

  CUDA_TRY (cudaSetDevice (cuda->device));
  STATUS_TRY (upload_batch (cuda, batch));
  STATUS_TRY (run_forward (cuda, batch->num_samples, batch->channels, 0));
  CUDA_TRY (cudaStreamSynchronize (cuda->compute));
  cuda->num_marks = 0;
  totals->loss_sum += loss->loss_sum;
  totals->num_samples += batch->num_samples;
  totals->correct_top1 += loss->correct_top1;
  totals->correct_top5 += loss->correct_top5;
  return GT_OK;
}

static int
cuda_eval (void *data, const GtBatch *batch, GtEvalTotals *totals, char *why,
    size_t why_size)
{
  CudaBackend *cuda = (CudaBackend *)data;
  int status = check_batch (cuda, batch, 0);

  if (status == GT_OK)
    status = eval (cuda, batch, totals);
  return report (cuda, status, why, why_size);
}

static size_t
cuda_read_logits (void *data, float *out, size_t count)
{
  CudaBackend *cuda = (CudaBackend *)data;
  size_t available = (size_t)cuda->logits_samples * cuda->spec->num_classes;

  if (count > available)
    count = available;
  if (cudaSetDevice (cuda->device) != cudaSuccess
      || cudaStreamSynchronize (cuda->compute) != cudaSuccess
      || cudaMemcpy (
             out, cuda->logits, count * sizeof (float), cudaMemcpyDeviceToHost)
          != cudaSuccess) {
    cudaGetLastError ();
    return 0;
  }
  return count;
}

/* ---- host state ---- */

static int
download_state (CudaBackend *cuda)
{
  const GtModelSpec *spec = cuda->spec;
  size_t param_bytes = spec->num_params * sizeof (float);

  CUDA_TRY (cudaSetDevice (cuda->device));
  CUDA_TRY (cudaStreamSynchronize (cuda->compute));
  CUDA_TRY (cudaMemcpy (
      cuda->host_params, cuda->params, param_bytes, cudaMemcpyDeviceToHost));
  CUDA_TRY (cudaMemcpy (
      cuda->host_grads, cuda->grads, param_bytes, cudaMemcpyDeviceToHost));
  CUDA_TRY (cudaMemcpy (cuda->host_momentum, cuda->momentum, param_bytes,
      cudaMemcpyDeviceToHost));
  CUDA_TRY (cudaMemcpy (cuda->host_stats, cuda->stats,
      spec->num_stats * sizeof (float), cudaMemcpyDeviceToHost));
  cuda->host_valid = 1;
  return GT_OK;
}

static int
upload_state (CudaBackend *cuda)
{
  const GtModelSpec *spec = cuda->spec;
  size_t param_bytes = spec->num_params * sizeof (float);

  /* until the upload has landed, the host copy is not the device's */
  cuda->host_valid = 0;
  CUDA_TRY (cudaSetDevice (cuda->device));
  /* on the compute stream, which is non-blocking: a plain cudaMemcpy runs
   * on the legacy stream and nothing would order the two */
  CUDA_TRY (cudaMemcpyAsync (cuda->params, cuda->host_params, param_bytes,
      cudaMemcpyHostToDevice, cuda->compute));
  CUDA_TRY (cudaMemcpyAsync (cuda->grads, cuda->host_grads, param_bytes,
      cudaMemcpyHostToDevice, cuda->compute));
  CUDA_TRY (cudaMemcpyAsync (cuda->momentum, cuda->host_momentum, param_bytes,
      cudaMemcpyHostToDevice, cuda->compute));
  CUDA_TRY (cudaMemcpyAsync (cuda->stats, cuda->host_stats,
      spec->num_stats * sizeof (float), cudaMemcpyHostToDevice, cuda->compute));
  if (cuda->dtype != GT_CUDA_F32)
    CUDA_TRY (gt_cuda_convert (cuda->params, cuda->params_work, cuda->dtype,
        spec->num_params, cuda->compute));
  CUDA_TRY (cudaStreamSynchronize (cuda->compute));
  cuda->host_valid = 1;
  return GT_OK;
}

static int
cuda_sync_to_host (void *data, GtHostState *state)
{
  CudaBackend *cuda = (CudaBackend *)data;
  /* the host copy stays good until the next step changes the device's */
  int status = cuda->host_valid ? GT_OK : download_state (cuda);

  state->params = cuda->host_params;
  state->grads = cuda->host_grads;
  state->momentum = cuda->host_momentum;
  state->stats = cuda->host_stats;
  state->num_batches_tracked = &cuda->num_batches_tracked;
  return status;
}

static int
cuda_sync_from_host (void *data)
{
  return upload_state ((CudaBackend *)data);
}

static void *
cuda_host_alloc (void *data, size_t bytes)
{
  CudaBackend *cuda = (CudaBackend *)data;
  void *memory = NULL;

  if (cudaSetDevice (cuda->device) != cudaSuccess
      || cudaHostAlloc (&memory, bytes > 0 ? bytes : 1, cudaHostAllocPortable)
          != cudaSuccess) {
    cudaGetLastError ();
    return NULL;
  }
  return memory;
}

static void
cuda_host_free (void *data, void *memory)
{
  (void)data;
  if (memory != NULL)
    cudaFreeHost (memory);
}

/* ---- creation ---- */

static int
open_device (CudaBackend *cuda)
{
  struct cudaDeviceProp prop;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount (&count);

  if (err != cudaSuccess || count == 0) {
    cudaGetLastError ();
    return fail (cuda, GT_ERROR_DEVICE, "no usable CUDA device: %s",
        err != cudaSuccess ? cudaGetErrorString (err) : "none found");
  }
  if (cuda->device < 0 || cuda->device >= count)
    return fail (cuda, GT_ERROR_DEVICE,
        "gpu-id %d: there %s %d CUDA device%s (0 to %d)", cuda->device,
        count == 1 ? "is" : "are", count, count == 1 ? "" : "s", count - 1);
  CUDA_TRY (cudaGetDeviceProperties (&prop, cuda->device));
  if (prop.major < 9)
    return fail (cuda, GT_ERROR_DEVICE,
        "CUDA device %d (%s) is sm_%d%d: this build of the CUDA backend runs "
        "on sm_90 or newer",
        cuda->device, prop.name, prop.major, prop.minor);
  CUDA_TRY (cudaSetDevice (cuda->device));
  return GT_OK;
}

static int
setup_layers (CudaBackend *cuda, size_t *max_activation)
{
  const GtModelSpec *spec = cuda->spec;
  int h = cuda->config.height, w = cuda->config.width, i, k;
  int batch_size = cuda->config.batch_size;

  cuda->blocks = (Block *)calloc (spec->num_blocks, sizeof (Block));
  if (cuda->blocks == NULL)
    return fail (cuda, GT_ERROR_NO_MEMORY, "out of host memory");
  STATUS_TRY (unit_setup (
      cuda, &cuda->stem, &spec->stem, &spec->stem_norm, h, w, max_activation));
  h = cuda->stem.out_h;
  w = cuda->stem.out_w;
  if (spec->has_maxpool) {
    size_t values;

    cuda->pooled_h = gt_maxpool_output_size (h);
    cuda->pooled_w = gt_maxpool_output_size (w);
    values = (size_t)batch_size * cuda->pooled_h * cuda->pooled_w
        * spec->stem.out_channels;
    if (values > *max_activation)
      *max_activation = values;
    ALLOC (cuda->pooled, values * cuda->elem, "activations");
    ALLOC (cuda->argmax, values, "max-pool indices");
    h = cuda->pooled_h;
    w = cuda->pooled_w;
  }
  for (i = 0; i < spec->num_blocks; i++) {
    const GtBlockSpec *block_spec = &spec->blocks[i];
    Block *block = &cuda->blocks[i];
    const GtConvSpec *convs[3] = { &block_spec->conv1, &block_spec->conv2,
      &block_spec->conv3 };
    const GtNormSpec *norms[3] = { &block_spec->norm1, &block_spec->norm2,
      &block_spec->norm3 };
    int in_h = h, in_w = w;

    block->spec = block_spec;
    block->num_units = block_spec->bottleneck ? 3 : 2;
    for (k = 0; k < block->num_units; k++) {
      STATUS_TRY (unit_setup (
          cuda, &block->units[k], convs[k], norms[k], h, w, max_activation));
      h = block->units[k].out_h;
      w = block->units[k].out_w;
    }
    if (block_spec->has_downsample)
      STATUS_TRY (unit_setup (cuda, &block->down, &block_spec->down_conv,
          &block_spec->down_norm, in_h, in_w, max_activation));
  }
  cuda->last_h = h;
  cuda->last_w = w;
  return GT_OK;
}

/* The optimiser's blocks: every parameter tensor cut into runs of
 * GT_CUDA_SGD_CHUNK values. */
static int
setup_optimizer (CudaBackend *cuda)
{
  const GtModelSpec *spec = cuda->spec;
  const GtTrainerConfig *config = &cuda->config;
  int bf16 = cuda->dtype != GT_CUDA_F32;
  GtCudaSgdChunk *chunks;
  int count = 0, pass, i;

  for (pass = 0; pass < 2; pass++) {
    chunks =
        pass ? (GtCudaSgdChunk *)calloc (count, sizeof (GtCudaSgdChunk)) : NULL;
    if (pass && chunks == NULL)
      return fail (cuda, GT_ERROR_NO_MEMORY, "out of host memory");
    count = 0;
    for (i = 0; i < spec->num_entries; i++) {
      const GtTensorEntry *entry = &spec->entries[i];
      size_t done;

      if (!gt_entry_is_parameter (entry))
        continue;
      for (done = 0; done < entry->numel; done += GT_CUDA_SGD_CHUNK, count++) {
        GtCudaSgdChunk *chunk = pass ? &chunks[count] : NULL;
        size_t left = entry->numel - done;

        if (chunk == NULL)
          continue;
        chunk->offset = (uint32_t)(entry->offset + done);
        chunk->count =
            (uint32_t)(left < GT_CUDA_SGD_CHUNK ? left : GT_CUDA_SGD_CHUNK);
        chunk->decay = gt_entry_decays (entry) || config->decay_norm_and_bias
            ? config->weight_decay
            : 0.f;
        chunk->flags = 0;
        if (bf16 && entry->kind == GT_ENTRY_CONV_WEIGHT)
          chunk->flags |= GT_CUDA_SGD_GRAD_FROM_WORK | GT_CUDA_SGD_WRITE_WORK;
        if (bf16 && entry->kind == GT_ENTRY_FC_WEIGHT)
          chunk->flags |= GT_CUDA_SGD_WRITE_WORK;
      }
    }
  }
  cuda->num_chunks = count;
  if (device_alloc (cuda, (void **)&cuda->chunks,
          count * sizeof (GtCudaSgdChunk), "the optimiser's table")
          != GT_OK
      || cudaMemcpy (cuda->chunks, chunks, count * sizeof (GtCudaSgdChunk),
             cudaMemcpyHostToDevice)
          != cudaSuccess) {
    free (chunks);
    if (cuda->chunks != NULL)
      return fail (cuda, GT_ERROR_DEVICE,
          "CUDA: could not upload the optimiser's table");
    return GT_ERROR_NO_MEMORY;
  }
  free (chunks);
  return GT_OK;
}

static int
all_units (CudaBackend *cuda, int (*func) (CudaBackend *, const Unit *, int))
{
  int i, k;

  STATUS_TRY (func (cuda, &cuda->stem, 0));
  for (i = 0; i < cuda->spec->num_blocks; i++) {
    const Block *block = &cuda->blocks[i];

    for (k = 0; k < block->num_units; k++)
      STATUS_TRY (func (cuda, &block->units[k], 1));
    if (block->spec->has_downsample)
      STATUS_TRY (func (cuda, &block->down, 1));
  }
  return GT_OK;
}

static int
setup (CudaBackend *cuda)
{
  const GtModelSpec *spec = cuda->spec;
  const GtTrainerConfig *config = &cuda->config;
  int batch_size = config->batch_size, max_channels = 0, i;
  size_t max_activation = 0, max_partials = 0, param_bytes, free_bytes,
         total_bytes, workspace, input_values;
  int status;
  void *cublas_workspace;

  STATUS_TRY (open_device (cuda));
  CUDA_TRY (cudaStreamCreateWithFlags (&cuda->compute, cudaStreamNonBlocking));
  CUDA_TRY (cudaStreamCreateWithFlags (&cuda->copy, cudaStreamNonBlocking));
  CUDA_TRY (cudaEventCreateWithFlags (&cuda->copied, cudaEventDisableTiming));
  CUDA_TRY (
      cudaEventCreateWithFlags (&cuda->input_free, cudaEventDisableTiming));
  CUDA_TRY (
      cudaEventCreateWithFlags (&cuda->loss_ready, cudaEventDisableTiming));
  if (cuda->profile) {
    for (i = 0; i < MAX_PROFILE_MARKS; i++)
      CUDA_TRY (cudaEventCreate (&cuda->marks[i]));
    for (i = 0; i < 2; i++)
      CUDA_TRY (cudaEventCreate (&cuda->copy_marks[i]));
  }

  /* the flat state */
  param_bytes = spec->num_params * sizeof (float);
  ALLOC (cuda->params, param_bytes, "parameters");
  ALLOC (cuda->grads, param_bytes, "gradients");
  ALLOC (cuda->momentum, param_bytes, "momentum");
  ALLOC (cuda->stats, spec->num_stats * sizeof (float), "statistics");
  ALLOC (cuda->saved_stats, spec->num_stats * sizeof (float), "statistics");
  if (cuda->dtype == GT_CUDA_F32) {
    cuda->params_work = cuda->params;
    cuda->grads_work = cuda->grads;
  } else {
    ALLOC (cuda->params_work, spec->num_params * cuda->elem, "parameters");
    ALLOC (cuda->grads_work, spec->num_params * cuda->elem, "gradients");
  }
  cuda->host_params = (float *)calloc (spec->num_params, sizeof (float));
  cuda->host_grads = (float *)calloc (spec->num_params, sizeof (float));
  cuda->host_momentum = (float *)calloc (spec->num_params, sizeof (float));
  cuda->host_stats = (float *)calloc (spec->num_stats, sizeof (float));
  if (!cuda->host_params || !cuda->host_grads || !cuda->host_momentum
      || !cuda->host_stats)
    return fail (cuda, GT_ERROR_NO_MEMORY, "out of host memory");

  /* layers and their buffers */
  input_values = (size_t)batch_size * config->height * config->width * 3;
  ALLOC (cuda->images, input_values, "the input batch");
  ALLOC (cuda->labels, batch_size * sizeof (int32_t), "the labels");
  ALLOC (cuda->input, input_values * cuda->elem, "the input");
  STATUS_TRY (setup_layers (cuda, &max_activation));
  if (input_values > max_activation)
    max_activation = input_values;
  for (i = 0; i < 4; i++)
    ALLOC (cuda->grad_buffers[i], max_activation * cuda->elem, "gradients");
  ALLOC (cuda->dconv, max_activation * cuda->elem, "gradients");
  ALLOC (cuda->features, (size_t)batch_size * spec->features * cuda->elem,
      "features");
  ALLOC (cuda->dfeatures, (size_t)batch_size * spec->features * cuda->elem,
      "features");
  ALLOC (cuda->logits, (size_t)batch_size * spec->num_classes * sizeof (float),
      "logits");
  ALLOC (cuda->dlogits, (size_t)batch_size * spec->num_classes * sizeof (float),
      "logits");
  if (cuda->dtype == GT_CUDA_F32)
    cuda->dlogits_work = cuda->dlogits;
  else
    ALLOC (cuda->dlogits_work,
        (size_t)batch_size * spec->num_classes * cuda->elem, "logits");
  ALLOC (cuda->sample_loss, batch_size * sizeof (double), "losses");
  ALLOC (cuda->sample_hits, batch_size * sizeof (int), "losses");
  ALLOC (cuda->result_device, sizeof (GtCudaLossResult), "the loss");
  ALLOC (cuda->step_params_device, sizeof (GtCudaStepParams), "the step");
  CUDA_TRY (cudaHostAlloc ((void **)&cuda->result_host,
      sizeof (GtCudaLossResult), cudaHostAllocDefault));
  CUDA_TRY (cudaHostAlloc ((void **)&cuda->step_params_host,
      sizeof (GtCudaStepParams), cudaHostAllocDefault));
  memset (cuda->result_host, 0, sizeof (GtCudaLossResult));
  memset (cuda->step_params_host, 0, sizeof (GtCudaStepParams));

  /* batch-norm scratch, for the widest and longest norm */
  for (i = 0; i < spec->num_entries; i++) {
    const GtTensorEntry *entry = &spec->entries[i];

    if (entry->kind == GT_ENTRY_NORM_WEIGHT && entry->shape[0] > max_channels)
      max_channels = (int)entry->shape[0];
  }
  max_partials = gt_cuda_norm_partial_floats (
      (size_t)batch_size * cuda->stem.out_h * cuda->stem.out_w,
      cuda->stem.norm->channels);
  for (i = 0; i < spec->num_blocks; i++) {
    const Block *block = &cuda->blocks[i];
    int k;

    for (k = 0; k < 4; k++) {
      const Unit *unit = k < 3 ? &block->units[k] : &block->down;
      size_t p;

      if ((k < 3 && k >= block->num_units)
          || (k == 3 && !block->spec->has_downsample))
        continue;
      p = gt_cuda_norm_partial_floats (
          (size_t)batch_size * unit->out_h * unit->out_w, unit->norm->channels);
      if (p > max_partials)
        max_partials = p;
    }
  }
  ALLOC (cuda->norm_partials, max_partials * sizeof (float), "batch-norm sums");
  ALLOC (cuda->norm_coefs, 3 * (size_t)max_channels * sizeof (float),
      "batch-norm sums");
  STATUS_TRY (setup_optimizer (cuda));

  /* libraries */
  CUBLAS_TRY (cublasCreate (&cuda->cublas));
  CUBLAS_TRY (cublasSetStream (cuda->cublas, cuda->compute));
  ALLOC (cublas_workspace, CUBLAS_WORKSPACE_BYTES, "the cuBLAS workspace");
  CUBLAS_TRY (cublasSetWorkspace (
      cuda->cublas, cublas_workspace, CUBLAS_WORKSPACE_BYTES));
  CUDA_TRY (cudaMemGetInfo (&free_bytes, &total_bytes));
  workspace = free_bytes / 4;
  if (workspace > CUDNN_WORKSPACE_MAX)
    workspace = CUDNN_WORKSPACE_MAX;
  cuda->cudnn = gt_cudnn_new (cuda->compute, cuda->dtype, workspace, &status,
      cuda->why, sizeof (cuda->why));
  if (cuda->cudnn == NULL)
    return status;

  /* initial weights, as the CPU backend draws them */
  gt_model_init_weights (spec, cuda->host_params, cuda->host_stats,
      config->seed, config->zero_init_residual);
  STATUS_TRY (upload_state (cuda));

  /* convolution algorithms for full batches, timed on noise */
  for (i = 0; i < 3; i++)
    CUDA_TRY (gt_cuda_fill_random (cuda->grad_buffers[i], cuda->dtype,
        max_activation, 1234u + i, cuda->compute));
  CUDA_TRY (cudaStreamSynchronize (cuda->compute));
  STATUS_TRY (all_units (cuda, unit_plan));
  /* the search wrote into the gradients */
  CUDA_TRY (cudaMemsetAsync (cuda->grads, 0, param_bytes, cuda->compute));
  if (cuda->grads_work != cuda->grads)
    CUDA_TRY (cudaMemsetAsync (
        cuda->grads_work, 0, spec->num_params * cuda->elem, cuda->compute));
  CUDA_TRY (cudaStreamSynchronize (cuda->compute));
  return GT_OK;
}

static void cuda_destroy (void *data);

static void *
cuda_create (const GtModelSpec *spec, const GtTrainerConfig *config, char *why,
    size_t why_size)
{
  CudaBackend *cuda;
  float scale[3], offset[3];
  int c, status;

  if (config->precision != GT_PRECISION_FP32
      && config->precision != GT_PRECISION_BF16) {
    snprintf (why, why_size,
        "precision fp16 (with loss scaling) is not supported by the CUDA "
        "backend yet: use bf16 or fp32");
    return NULL;
  }
  cuda = (CudaBackend *)calloc (1, sizeof (CudaBackend));
  if (cuda == NULL) {
    snprintf (why, why_size, "out of host memory");
    return NULL;
  }
  cuda->spec = spec;
  cuda->config = *config;
  cuda->device = config->gpu_id;
  cuda->dtype =
      config->precision == GT_PRECISION_FP32 ? GT_CUDA_F32 : GT_CUDA_BF16;
  cuda->elem = gt_cuda_dtype_size (cuda->dtype);
  cuda->profile = getenv ("GT_CUDA_PROFILE") != NULL
      && strcmp (getenv ("GT_CUDA_PROFILE"), "0") != 0;
  cuda->use_graph = !cuda->profile
      && !(getenv ("GT_CUDA_NO_GRAPH") != NULL
          && strcmp (getenv ("GT_CUDA_NO_GRAPH"), "0") != 0);
  /* (u8 / 255 - mean) / std as one multiply-add, as the CPU computes it */
  for (c = 0; c < 3; c++) {
    scale[c] = 1.f / (255.f * config->std[c]);
    offset[c] = -config->mean[c] / config->std[c];
    cuda->input_scale[c] = scale[c];
    cuda->input_offset[c] = offset[c];
  }
  status = setup (cuda);
  if (status != GT_OK) {
    snprintf (why, why_size, "%s", cuda->why);
    cuda_destroy (cuda);
    return NULL;
  }
  return cuda;
}

static void
cuda_destroy (void *data)
{
  CudaBackend *cuda = (CudaBackend *)data;
  int i;

  if (cuda == NULL)
    return;
  profile_print (cuda);
  /* errors are ignored: a dead context must still free the host side */
  cudaSetDevice (cuda->device);
  if (cuda->compute)
    cudaStreamSynchronize (cuda->compute);
  if (cuda->copy)
    cudaStreamSynchronize (cuda->copy);
  if (cuda->graph_exec)
    cudaGraphExecDestroy (cuda->graph_exec);
  gt_cudnn_free (cuda->cudnn);
  if (cuda->cublas)
    cublasDestroy (cuda->cublas);
  for (i = 0; i < cuda->num_allocations; i++)
    cudaFree (cuda->allocations[i]);
  free (cuda->allocations);
  if (cuda->result_host)
    cudaFreeHost (cuda->result_host);
  if (cuda->step_params_host)
    cudaFreeHost (cuda->step_params_host);
  for (i = 0; i < MAX_PROFILE_MARKS; i++)
    if (cuda->marks[i])
      cudaEventDestroy (cuda->marks[i]);
  for (i = 0; i < 2; i++)
    if (cuda->copy_marks[i])
      cudaEventDestroy (cuda->copy_marks[i]);
  if (cuda->copied)
    cudaEventDestroy (cuda->copied);
  if (cuda->input_free)
    cudaEventDestroy (cuda->input_free);
  if (cuda->loss_ready)
    cudaEventDestroy (cuda->loss_ready);
  if (cuda->copy)
    cudaStreamDestroy (cuda->copy);
  if (cuda->compute)
    cudaStreamDestroy (cuda->compute);
  cudaGetLastError ();
  free (cuda->blocks);
  free (cuda->host_params);
  free (cuda->host_grads);
  free (cuda->host_momentum);
  free (cuda->host_stats);
  free (cuda);
}

extern "C" const GtBackendOps gt_cuda_backend = {
  "cuda",
  cuda_create,
  cuda_destroy,
  cuda_step_begin,
  cuda_step_end,
  cuda_eval,
  cuda_read_logits,
  cuda_sync_to_host,
  cuda_sync_from_host,
  cuda_host_alloc,
  cuda_host_free,
};
