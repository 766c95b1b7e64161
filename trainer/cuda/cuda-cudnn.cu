/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-cudnn.cu: convolutions through cuDNN's legacy API (cuda-cudnn.h).
 * Which algorithm each direction takes is cuda-algo-choice.h's decision;
 * this file turns cuDNN's answers into its candidates and carries the
 * choice out. */
#include "cuda-algo-choice.h"
#include "cuda-cudnn.h"
#include "gt-clock.h"
#include "gt-log.h"
#include "trainer.h"

#include <cudnn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct
{
  GtConvShape shape;
  int with_data_grad;
  cudnnTensorDescriptor_t x_desc, y_desc;
  cudnnFilterDescriptor_t w_desc;
  /* one per direction: each carries the math type of its algorithm */
  cudnnConvolutionDescriptor_t forward_desc, data_desc, filter_desc;
  cudnnConvolutionFwdAlgo_t forward_algo;
  cudnnConvolutionBwdDataAlgo_t data_algo;
  cudnnConvolutionBwdFilterAlgo_t filter_algo;
  /* backward-data refused beta 1: it runs into the scratch buffer and a
   * kernel adds that onto dx */
  int accumulate_refused;
} ConvPlan;

struct GtCudnn
{
  const GtTrainerConfig *config; /* its log_func hears the warnings */
  cudnnHandle_t handle;
  cudaStream_t stream;
  GtCudaDtype dtype;
  void *workspace;
  size_t workspace_bytes;
  ConvPlan **plans;
  int num_plans;
  int capacity;
  double choose_seconds; /* spent choosing algorithms, for the log */
  /* fp32 directions that had to take a non-deterministic algorithm (the
   * first one is warned about) */
  int nondeterministic;
  /* shapes whose backward-data refused beta 1 */
  int accumulate_fallbacks;
  /* the backward-data result of those, before it is added to dx; buffers
   * outgrown stay allocated until gt_cudnn_free, as a captured graph may
   * still name them */
  void *scratch;
  size_t scratch_bytes;
  void **retired;
  int num_retired;
};

/* Every fp32 direction of this process that gave up determinism: what
 * gt_cudnn_nondeterministic_choices answers. */
static pthread_mutex_t nondeterministic_lock = PTHREAD_MUTEX_INITIALIZER;
static int nondeterministic_total;
static char nondeterministic_last[256];

static int
cudnn_status (cudnnStatus_t status)
{
  return status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED
          || status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
      ? GT_ERROR_NO_MEMORY
      : GT_ERROR_DEVICE;
}

static void
describe_shape (const GtConvShape *s, char *text, size_t size)
{
  snprintf (text, size, "%dx%d conv %d->%d stride %d on %dx%dx%d x%d",
      s->kernel, s->kernel, s->in_channels, s->out_channels, s->stride, s->h,
      s->w, s->in_channels, s->n);
}

/* Names the failed cuDNN @call, its error and the shape in @why. */
static int
cudnn_failed (cudnnStatus_t status, const char *call, const GtConvShape *shape,
    char *why, size_t why_size)
{
  char text[128];

  describe_shape (shape, text, sizeof (text));
  snprintf (why, why_size, "cuDNN: %s failed (%s) for a %s", call,
      cudnnGetErrorString (status), text);
  return cudnn_status (status);
}

/* Evaluates a cuDNN call; on failure, names it, the error and the shape. */
#define CUDNN_TRY(call)                                                        \
  do {                                                                         \
    cudnnStatus_t status_ = (call);                                            \
    if (status_ != CUDNN_STATUS_SUCCESS)                                       \
      return cudnn_failed (status_, #call, shape, why, why_size);              \
  } while (0)

static int
same_shape (const GtConvShape *a, const GtConvShape *b)
{
  return a->n == b->n && a->h == b->h && a->w == b->w
      && a->in_channels == b->in_channels && a->out_channels == b->out_channels
      && a->kernel == b->kernel && a->stride == b->stride
      && a->padding == b->padding;
}

static cudnnDataType_t
data_type (const GtCudnn *cudnn)
{
  return cudnn->dtype == GT_CUDA_F32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_BFLOAT16;
}

/* fp32 must stay fp32: no TF32 tensor cores (their 10-bit mantissa would
 * break parity with the CPU); bf16 wants the tensor cores. */
static cudnnMathType_t
requested_math (const GtCudnn *cudnn)
{
  return cudnn->dtype == GT_CUDA_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

static int
math_acceptable (const GtCudnn *cudnn, cudnnMathType_t math)
{
  if (cudnn->dtype != GT_CUDA_F32)
    return 1;
  return math == CUDNN_FMA_MATH || math == CUDNN_DEFAULT_MATH;
}

static cudnnMathType_t
math_to_use (const GtCudnn *cudnn, cudnnMathType_t found)
{
  return cudnn->dtype == GT_CUDA_F32 ? CUDNN_FMA_MATH : found;
}

static void
plan_free (ConvPlan *plan)
{
  if (plan == NULL)
    return;
  if (plan->x_desc)
    cudnnDestroyTensorDescriptor (plan->x_desc);
  if (plan->y_desc)
    cudnnDestroyTensorDescriptor (plan->y_desc);
  if (plan->w_desc)
    cudnnDestroyFilterDescriptor (plan->w_desc);
  if (plan->forward_desc)
    cudnnDestroyConvolutionDescriptor (plan->forward_desc);
  if (plan->data_desc)
    cudnnDestroyConvolutionDescriptor (plan->data_desc);
  if (plan->filter_desc)
    cudnnDestroyConvolutionDescriptor (plan->filter_desc);
  free (plan);
}

static int
plan_describe (GtCudnn *cudnn, ConvPlan *plan, char *why, size_t why_size)
{
  const GtConvShape *shape = &plan->shape;
  cudnnConvolutionDescriptor_t *descs[3] = { &plan->forward_desc,
    &plan->data_desc, &plan->filter_desc };
  int out_h = shape->out_h, out_w = shape->out_w;
  int dims[4], i;

  CUDNN_TRY (cudnnCreateTensorDescriptor (&plan->x_desc));
  CUDNN_TRY (cudnnCreateTensorDescriptor (&plan->y_desc));
  CUDNN_TRY (cudnnCreateFilterDescriptor (&plan->w_desc));
  CUDNN_TRY (cudnnSetTensor4dDescriptor (plan->x_desc, CUDNN_TENSOR_NHWC,
      data_type (cudnn), shape->n, shape->in_channels, shape->h, shape->w));
  CUDNN_TRY (cudnnSetTensor4dDescriptor (plan->y_desc, CUDNN_TENSOR_NHWC,
      data_type (cudnn), shape->n, shape->out_channels, out_h, out_w));
  CUDNN_TRY (cudnnSetFilter4dDescriptor (plan->w_desc, data_type (cudnn),
      CUDNN_TENSOR_NHWC, shape->out_channels, shape->in_channels, shape->kernel,
      shape->kernel));
  for (i = 0; i < 3; i++) {
    CUDNN_TRY (cudnnCreateConvolutionDescriptor (descs[i]));
    CUDNN_TRY (cudnnSetConvolution2dDescriptor (*descs[i], shape->padding,
        shape->padding, shape->stride, shape->stride, 1, 1,
        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_TRY (cudnnSetConvolutionMathType (*descs[i], requested_math (cudnn)));
  }
  CUDNN_TRY (cudnnGetConvolution2dForwardOutputDim (plan->forward_desc,
      plan->x_desc, plan->w_desc, &dims[0], &dims[1], &dims[2], &dims[3]));
  if (dims[0] != shape->n || dims[1] != shape->out_channels || dims[2] != out_h
      || dims[3] != out_w) {
    char text[128];

    describe_shape (shape, text, sizeof (text));
    snprintf (why, why_size,
        "cuDNN: the output of a %s is %dx%dx%d, the model expects %dx%dx%d",
        text, dims[2], dims[3], dims[1], out_h, out_w, shape->out_channels);
    return GT_ERROR_DEVICE;
  }
  return GT_OK;
}

/* cuDNN's results as cuda-algo-choice.h's candidates. The three directions
 * have different result types with the same fields. */
template <typename Perf>
static void
to_candidates (const GtCudnn *cudnn, const Perf *results, int count,
    GtAlgoCandidate *candidates)
{
  int i;

  for (i = 0; i < count; i++) {
    candidates[i].algo = (int)results[i].algo;
    candidates[i].ran = results[i].status == CUDNN_STATUS_SUCCESS;
    candidates[i].memory = results[i].memory;
    candidates[i].deterministic = results[i].determinism == CUDNN_DETERMINISTIC;
    candidates[i].math_ok = math_acceptable (cudnn, results[i].mathType);
  }
}

#define NO_ALGORITHM(direction)                                                \
  do {                                                                         \
    char shape_[128];                                                          \
    describe_shape (shape, shape_, sizeof (shape_));                           \
    snprintf (why, why_size,                                                   \
        "cuDNN has no %s algorithm for a %s within a %zu MiB workspace%s",     \
        direction, shape_, cudnn->workspace_bytes >> 20,                       \
        cudnn->dtype == GT_CUDA_F32 ? " (without TF32)" : "");                 \
    return GT_ERROR_DEVICE;                                                    \
  } while (0)

/* An fp32 direction took a non-deterministic algorithm: the first time per
 * handle a warning (two runs may now differ in their last bits), every
 * time a count, here and process-wide. */
static void
note_nondeterministic (
    GtCudnn *cudnn, const GtConvShape *shape, const char *direction, int algo)
{
  char text[128];

  describe_shape (shape, text, sizeof (text));
  if (cudnn->nondeterministic++ == 0)
    gt_log (cudnn->config, GT_LOG_WARNING,
        "warning: cuDNN has no deterministic fp32 %s algorithm for a %s "
        "(without TF32, within a %zu MiB workspace); using the fastest "
        "non-deterministic one (algorithm %d): fp32 training is no longer "
        "bit-reproducible",
        direction, text, cudnn->workspace_bytes >> 20, algo);
  pthread_mutex_lock (&nondeterministic_lock);
  nondeterministic_total++;
  snprintf (nondeterministic_last, sizeof (nondeterministic_last),
      "%s of a %s, algorithm %d", direction, text, algo);
  pthread_mutex_unlock (&nondeterministic_lock);
}

/* The algorithm cuDNN documents as deterministic for each direction, when
 * it takes the shape (its workspace query succeeds) and fits the
 * workspace; else -1. */
static int
documented_forward (GtCudnn *cudnn, ConvPlan *plan)
{
  static const cudnnConvolutionFwdAlgo_t algos[] = {
    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
    CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
  };
  size_t i, bytes;

  for (i = 0; i < sizeof (algos) / sizeof (algos[0]); i++)
    if (cudnnGetConvolutionForwardWorkspaceSize (cudnn->handle, plan->x_desc,
            plan->w_desc, plan->forward_desc, plan->y_desc, algos[i], &bytes)
            == CUDNN_STATUS_SUCCESS
        && bytes <= cudnn->workspace_bytes)
      return (int)algos[i];
  return -1;
}

static int
documented_data (GtCudnn *cudnn, ConvPlan *plan)
{
  size_t bytes;

  if (cudnnGetConvolutionBackwardDataWorkspaceSize (cudnn->handle, plan->w_desc,
          plan->y_desc, plan->data_desc, plan->x_desc,
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, &bytes)
          != CUDNN_STATUS_SUCCESS
      || bytes > cudnn->workspace_bytes)
    return -1;
  return (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
}

static int
documented_filter (GtCudnn *cudnn, ConvPlan *plan)
{
  size_t bytes;

  if (cudnnGetConvolutionBackwardFilterWorkspaceSize (cudnn->handle,
          plan->x_desc, plan->y_desc, plan->filter_desc, plan->w_desc,
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, &bytes)
          != CUDNN_STATUS_SUCCESS
      || bytes > cudnn->workspace_bytes)
    return -1;
  return (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
}

/* The steps every direction takes: @find measures (in bf16, when
 * @measure), @heuristics predicts, @documented names cuDNN's documented
 * deterministic algorithm; gt_algo_choose decides among them, the chosen
 * algorithm goes to *@algo and its math type to @desc. -1 when nothing
 * fits. The three directions differ only in their cuDNN calls and result
 * types. */
template <typename Perf, int Count, typename Algo, typename Find,
    typename Heuristics, typename Documented>
static int
choose_algo (GtCudnn *cudnn, const ConvPlan *plan, const char *direction,
    cudnnConvolutionDescriptor_t desc, int measure, Find find,
    Heuristics heuristics, Documented documented, Algo *algo)
{
  Perf measured[Count], predicted[Count];
  GtAlgoCandidate measured_candidates[Count], predicted_candidates[Count];
  int num_measured = 0, num_predicted = 0, documented_algo = documented ();
  cudnnMathType_t math = requested_math (cudnn);
  GtAlgoChoice choice;

  if (measure && find (Count, &num_measured, measured) != CUDNN_STATUS_SUCCESS)
    num_measured = 0;
  if (heuristics (Count, &num_predicted, predicted) != CUDNN_STATUS_SUCCESS)
    num_predicted = 0;
  to_candidates (cudnn, measured, num_measured, measured_candidates);
  to_candidates (cudnn, predicted, num_predicted, predicted_candidates);
  choice = gt_algo_choose (measured_candidates, num_measured,
      predicted_candidates, num_predicted, documented_algo >= 0,
      cudnn->workspace_bytes, cudnn->dtype == GT_CUDA_F32);
  switch (choice.source) {
    case GT_ALGO_MEASURED:
      *algo = measured[choice.index].algo;
      math = measured[choice.index].mathType;
      break;
    case GT_ALGO_PREDICTED:
      *algo = predicted[choice.index].algo;
      math = predicted[choice.index].mathType;
      break;
    case GT_ALGO_DOCUMENTED:
      *algo = (Algo)documented_algo;
      break;
    default:
      return -1;
  }
  if (choice.gave_up_determinism)
    note_nondeterministic (cudnn, &plan->shape, direction, (int)*algo);
  return cudnnSetConvolutionMathType (desc, math_to_use (cudnn, math))
          == CUDNN_STATUS_SUCCESS
      ? 0
      : -1;
}

/* Each direction's algorithm, as cuda-algo-choice.h rules: measured when
 * the scratch buffers are given (bf16), predicted by the heuristics, or
 * the documented deterministic one. */
static int
choose_forward (GtCudnn *cudnn, ConvPlan *plan, const void *x, const void *w,
    void *y, int measure)
{
  typedef cudnnConvolutionFwdAlgoPerf_t Perf;

  return choose_algo<Perf, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> (
      cudnn, plan, "forward", plan->forward_desc, measure,
      [&] (int capacity, int *count, Perf *results) {
        return cudnnFindConvolutionForwardAlgorithmEx (cudnn->handle,
            plan->x_desc, x, plan->w_desc, w, plan->forward_desc, plan->y_desc,
            y, capacity, count, results, cudnn->workspace,
            cudnn->workspace_bytes);
      },
      [&] (int capacity, int *count, Perf *results) {
        return cudnnGetConvolutionForwardAlgorithm_v7 (cudnn->handle,
            plan->x_desc, plan->w_desc, plan->forward_desc, plan->y_desc,
            capacity, count, results);
      },
      [&] () { return documented_forward (cudnn, plan); }, &plan->forward_algo);
}

static int
choose_data (GtCudnn *cudnn, ConvPlan *plan, const void *w, const void *dy,
    void *dx, int measure)
{
  typedef cudnnConvolutionBwdDataAlgoPerf_t Perf;

  return choose_algo<Perf, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> (
      cudnn, plan, "backward-data", plan->data_desc, measure,
      [&] (int capacity, int *count, Perf *results) {
        return cudnnFindConvolutionBackwardDataAlgorithmEx (cudnn->handle,
            plan->w_desc, w, plan->y_desc, dy, plan->data_desc, plan->x_desc,
            dx, capacity, count, results, cudnn->workspace,
            cudnn->workspace_bytes);
      },
      [&] (int capacity, int *count, Perf *results) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7 (cudnn->handle,
            plan->w_desc, plan->y_desc, plan->data_desc, plan->x_desc, capacity,
            count, results);
      },
      [&] () { return documented_data (cudnn, plan); }, &plan->data_algo);
}

static int
choose_filter (GtCudnn *cudnn, ConvPlan *plan, const void *x, const void *dy,
    void *dw, int measure)
{
  typedef cudnnConvolutionBwdFilterAlgoPerf_t Perf;

  return choose_algo<Perf, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> (
      cudnn, plan, "backward-filter", plan->filter_desc, measure,
      [&] (int capacity, int *count, Perf *results) {
        return cudnnFindConvolutionBackwardFilterAlgorithmEx (cudnn->handle,
            plan->x_desc, x, plan->y_desc, dy, plan->filter_desc, plan->w_desc,
            dw, capacity, count, results, cudnn->workspace,
            cudnn->workspace_bytes);
      },
      [&] (int capacity, int *count, Perf *results) {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7 (cudnn->handle,
            plan->x_desc, plan->y_desc, plan->filter_desc, plan->w_desc,
            capacity, count, results);
      },
      [&] () { return documented_filter (cudnn, plan); }, &plan->filter_algo);
}

/* cuDNN's ways of saying that an algorithm does not take beta 1 (adding
 * onto dx) for backward-data. */
static int
refuses_accumulate (cudnnStatus_t status)
{
  return status == CUDNN_STATUS_NOT_SUPPORTED
      || status == CUDNN_STATUS_BAD_PARAM;
}

/* Scratch of at least @bytes for a backward-data result that a kernel
 * adds onto dx. Never allocates inside a graph capture (the first step of
 * a shape runs eagerly: its refusal is found there, or at planning). */
static int
ensure_scratch (GtCudnn *cudnn, const GtConvShape *shape, size_t bytes,
    char *why, size_t why_size)
{
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  char text[128];
  void *memory = NULL, **retired;
  cudaError_t err;

  if (bytes <= cudnn->scratch_bytes)
    return GT_OK;
  describe_shape (shape, text, sizeof (text));
  if (cudaStreamIsCapturing (cudnn->stream, &capture) == cudaSuccess
      && capture != cudaStreamCaptureStatusNone) {
    snprintf (why, why_size,
        "cuDNN: backward-data refused to add onto dx for a %s, and its "
        "scratch buffer cannot be allocated during a graph capture",
        text);
    return GT_ERROR_DEVICE;
  }
  if (cudnn->scratch != NULL) {
    retired = (void **)realloc (
        cudnn->retired, (cudnn->num_retired + 1) * sizeof (void *));
    if (retired == NULL) {
      snprintf (why, why_size, "out of host memory");
      return GT_ERROR_NO_MEMORY;
    }
    cudnn->retired = retired;
    cudnn->retired[cudnn->num_retired++] = cudnn->scratch;
    cudnn->scratch = NULL;
    cudnn->scratch_bytes = 0;
  }
  err = cudaMalloc (&memory, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError ();
    snprintf (why, why_size,
        "cudaMalloc of %.1f MiB of backward-data scratch for a %s failed: %s",
        bytes / 1048576.0, text, cudaGetErrorString (err));
    return err == cudaErrorMemoryAllocation ? GT_ERROR_NO_MEMORY
                                            : GT_ERROR_DEVICE;
  }
  cudnn->scratch = memory;
  cudnn->scratch_bytes = bytes;
  return GT_OK;
}

static size_t
input_values (const GtConvShape *shape)
{
  return (size_t)shape->n * shape->h * shape->w * shape->in_channels;
}

/* Backward-data refused beta 1 for @plan: from now on it runs with beta 0
 * into the scratch buffer, which a kernel adds onto dx. */
static int
refuse_accumulate (GtCudnn *cudnn, ConvPlan *plan, char *why, size_t why_size)
{
  if (!plan->accumulate_refused) {
    plan->accumulate_refused = 1;
    cudnn->accumulate_fallbacks++;
  }
  return ensure_scratch (cudnn, &plan->shape,
      input_values (&plan->shape) * gt_cuda_dtype_size (cudnn->dtype), why,
      why_size);
}

/* Whether backward-data takes beta 1 with the chosen algorithm, tried on
 * the scratch buffers (@dx is overwritten), so that a refusal is known,
 * and its scratch allocated, before any step runs or is captured. */
static int
probe_accumulate (GtCudnn *cudnn, ConvPlan *plan, const void *w, const void *dy,
    void *dx, char *why, size_t why_size)
{
  const GtConvShape *shape = &plan->shape;
  const float one = 1.f;
  cudnnStatus_t status = cudnnConvolutionBackwardData (cudnn->handle, &one,
      plan->w_desc, w, plan->y_desc, dy, plan->data_desc, plan->data_algo,
      cudnn->workspace, cudnn->workspace_bytes, &one, plan->x_desc, dx);

  if (status == CUDNN_STATUS_SUCCESS)
    return GT_OK;
  if (!refuses_accumulate (status))
    return cudnn_failed (
        status, "cudnnConvolutionBackwardData (beta 1)", shape, why, why_size);
  return refuse_accumulate (cudnn, plan, why, why_size);
}

static int
plan_choose (GtCudnn *cudnn, ConvPlan *plan, void *x, void *w, void *y,
    void *dx, void *dw, char *why, size_t why_size)
{
  const GtConvShape *shape = &plan->shape;
  int measure = x != NULL && cudnn->dtype != GT_CUDA_F32;

  if (choose_forward (cudnn, plan, x, w, y, measure) < 0)
    NO_ALGORITHM ("forward");
  if (plan->with_data_grad && choose_data (cudnn, plan, w, y, dx, measure) < 0)
    NO_ALGORITHM ("backward-data");
  if (choose_filter (cudnn, plan, x, y, dw, measure) < 0)
    NO_ALGORITHM ("backward-filter");
  if (plan->with_data_grad && dx != NULL)
    return probe_accumulate (cudnn, plan, w, y, dx, why, why_size);
  return GT_OK;
}

static ConvPlan *
find_plan (GtCudnn *cudnn, const GtConvShape *shape)
{
  int i;

  for (i = 0; i < cudnn->num_plans; i++)
    if (same_shape (&cudnn->plans[i]->shape, shape))
      return cudnn->plans[i];
  return NULL;
}

static int
add_plan (GtCudnn *cudnn, const GtConvShape *shape, int with_data_grad, void *x,
    void *w, void *y, void *dx, void *dw, ConvPlan **out, char *why,
    size_t why_size)
{
  ConvPlan *plan;
  int status;
  double start;

  if (cudnn->num_plans == cudnn->capacity) {
    int capacity = cudnn->capacity ? 2 * cudnn->capacity : 32;
    ConvPlan **plans =
        (ConvPlan **)realloc (cudnn->plans, capacity * sizeof (ConvPlan *));

    if (plans == NULL) {
      snprintf (why, why_size, "out of host memory planning convolutions");
      return GT_ERROR_NO_MEMORY;
    }
    cudnn->plans = plans;
    cudnn->capacity = capacity;
  }
  plan = (ConvPlan *)calloc (1, sizeof (ConvPlan));
  if (plan == NULL) {
    snprintf (why, why_size, "out of host memory planning convolutions");
    return GT_ERROR_NO_MEMORY;
  }
  plan->shape = *shape;
  plan->with_data_grad = with_data_grad;
  start = gt_seconds_now ();
  status = plan_describe (cudnn, plan, why, why_size);
  if (status == GT_OK)
    status = plan_choose (cudnn, plan, x, w, y, dx, dw, why, why_size);
  cudnn->choose_seconds += gt_seconds_now () - start;
  if (status != GT_OK) {
    plan_free (plan);
    return status;
  }
  cudnn->plans[cudnn->num_plans++] = plan;
  *out = plan;
  return GT_OK;
}

/* The plan of @shape: measured with the scratch buffers when they are
 * given, else from the heuristics (a batch of another size than the one
 * planned at start-up). A plan made without the data gradient is made
 * again when one is needed. */
static int
get_plan (GtCudnn *cudnn, const GtConvShape *shape, int with_data_grad, void *x,
    void *w, void *y, void *dx, void *dw, ConvPlan **out, char *why,
    size_t why_size)
{
  ConvPlan *plan = find_plan (cudnn, shape);
  int i;

  if (plan != NULL && (plan->with_data_grad || !with_data_grad)) {
    *out = plan;
    return GT_OK;
  }
  for (i = 0; plan != NULL && i < cudnn->num_plans; i++)
    if (cudnn->plans[i] == plan)
      cudnn->plans[i] = cudnn->plans[--cudnn->num_plans];
  plan_free (plan);
  return add_plan (
      cudnn, shape, with_data_grad, x, w, y, dx, dw, out, why, why_size);
}

GtCudnn *
gt_cudnn_new (cudaStream_t stream, GtCudaDtype dtype, size_t workspace_bytes,
    const GtTrainerConfig *config, int *status, char *why, size_t why_size)
{
  GtCudnn *cudnn = (GtCudnn *)calloc (1, sizeof (GtCudnn));
  cudnnStatus_t cs;
  cudaError_t err;

  if (cudnn == NULL) {
    snprintf (why, why_size, "out of host memory");
    *status = GT_ERROR_NO_MEMORY;
    return NULL;
  }
  cudnn->config = config;
  cudnn->dtype = dtype;
  cudnn->stream = stream;
  if ((cs = cudnnCreate (&cudnn->handle)) != CUDNN_STATUS_SUCCESS
      || (cs = cudnnSetStream (cudnn->handle, stream))
          != CUDNN_STATUS_SUCCESS) {
    snprintf (why, why_size, "cuDNN: cudnnCreate failed: %s",
        cudnnGetErrorString (cs));
    *status = cudnn_status (cs);
    gt_cudnn_free (cudnn);
    return NULL;
  }
  if (workspace_bytes > 0) {
    err = cudaMalloc (&cudnn->workspace, workspace_bytes);
    if (err != cudaSuccess) {
      snprintf (why, why_size,
          "cudaMalloc of the %zu MiB cuDNN workspace failed: %s",
          workspace_bytes >> 20, cudaGetErrorString (err));
      *status = err == cudaErrorMemoryAllocation ? GT_ERROR_NO_MEMORY
                                                 : GT_ERROR_DEVICE;
      cudnn->workspace = NULL;
      gt_cudnn_free (cudnn);
      return NULL;
    }
  }
  cudnn->workspace_bytes = workspace_bytes;
  *status = GT_OK;
  return cudnn;
}

void
gt_cudnn_report (const GtCudnn *cudnn, FILE *out)
{
  if (cudnn != NULL && cudnn->num_plans > 0)
    fprintf (out,
        "{\"gst_train_cudnn\": {\"version\": %zu, \"shapes\": %d, "
        "\"planning_seconds\": %.3f, \"nondeterministic\": %d, "
        "\"accumulate_fallbacks\": %d}}\n",
        cudnnGetVersion (), cudnn->num_plans, cudnn->choose_seconds,
        cudnn->nondeterministic, cudnn->accumulate_fallbacks);
}

void
gt_cudnn_fill_report (const GtCudnn *cudnn, GtBackendReport *report)
{
  if (cudnn == NULL)
    return;
  report->conv_shapes = cudnn->num_plans;
  report->planning_seconds = cudnn->choose_seconds;
  report->nondeterministic = cudnn->nondeterministic;
  report->accumulate_fallbacks = cudnn->accumulate_fallbacks;
}

int
gt_cudnn_nondeterministic_choices (char *last, size_t last_size)
{
  int total;

  pthread_mutex_lock (&nondeterministic_lock);
  total = nondeterministic_total;
  if (last != NULL && last_size > 0)
    snprintf (last, last_size, "%s", nondeterministic_last);
  pthread_mutex_unlock (&nondeterministic_lock);
  return total;
}

void
gt_cudnn_free (GtCudnn *cudnn)
{
  int i;

  if (cudnn == NULL)
    return;
  for (i = 0; i < cudnn->num_plans; i++)
    plan_free (cudnn->plans[i]);
  free (cudnn->plans);
  for (i = 0; i < cudnn->num_retired; i++)
    cudaFree (cudnn->retired[i]);
  free (cudnn->retired);
  if (cudnn->scratch)
    cudaFree (cudnn->scratch);
  if (cudnn->workspace)
    cudaFree (cudnn->workspace);
  if (cudnn->handle)
    cudnnDestroy (cudnn->handle);
  free (cudnn);
}

int
gt_cudnn_plan (GtCudnn *cudnn, const GtConvShape *shape, int with_data_grad,
    void *x, void *w, void *y, void *dx, void *dw, char *why, size_t why_size)
{
  ConvPlan *plan;

  return get_plan (
      cudnn, shape, with_data_grad, x, w, y, dx, dw, &plan, why, why_size);
}

int
gt_cudnn_forward (GtCudnn *cudnn, const GtConvShape *shape, const void *x,
    const void *w, void *y, char *why, size_t why_size)
{
  const float one = 1.f, zero = 0.f;
  ConvPlan *plan;
  int status = get_plan (
      cudnn, shape, 0, NULL, NULL, NULL, NULL, NULL, &plan, why, why_size);

  if (status != GT_OK)
    return status;
  CUDNN_TRY (cudnnConvolutionForward (cudnn->handle, &one, plan->x_desc, x,
      plan->w_desc, w, plan->forward_desc, plan->forward_algo, cudnn->workspace,
      cudnn->workspace_bytes, &zero, plan->y_desc, y));
  return GT_OK;
}

/* With beta 1 where the algorithm takes it; else (cuDNN says it does not,
 * now or at planning) dx += the result computed with beta 0 into the
 * scratch buffer. In fp32 both add the same fp32 values once; in bf16 the
 * scratch path rounds the result to bf16 before adding, one more rounding
 * than cuDNN's own blend. */
int
gt_cudnn_backward_data (GtCudnn *cudnn, const GtConvShape *shape,
    const void *dy, const void *w, float beta, void *dx, char *why,
    size_t why_size)
{
  const float one = 1.f, zero = 0.f;
  ConvPlan *plan;
  cudaError_t err;
  int status = get_plan (
      cudnn, shape, 1, NULL, NULL, NULL, NULL, NULL, &plan, why, why_size);

  if (status != GT_OK)
    return status;
  if (beta == 0.f || !plan->accumulate_refused) {
    cudnnStatus_t cs = cudnnConvolutionBackwardData (cudnn->handle, &one,
        plan->w_desc, w, plan->y_desc, dy, plan->data_desc, plan->data_algo,
        cudnn->workspace, cudnn->workspace_bytes, &beta, plan->x_desc, dx);

    if (cs == CUDNN_STATUS_SUCCESS)
      return GT_OK;
    if (beta == 0.f || !refuses_accumulate (cs))
      return cudnn_failed (
          cs, "cudnnConvolutionBackwardData", shape, why, why_size);
    status = refuse_accumulate (cudnn, plan, why, why_size);
    if (status != GT_OK)
      return status;
  }
  CUDNN_TRY (cudnnConvolutionBackwardData (cudnn->handle, &one, plan->w_desc, w,
      plan->y_desc, dy, plan->data_desc, plan->data_algo, cudnn->workspace,
      cudnn->workspace_bytes, &zero, plan->x_desc, cudnn->scratch));
  err = gt_cuda_accumulate (
      cudnn->dtype, dx, cudnn->scratch, input_values (shape), cudnn->stream);
  if (err != cudaSuccess) {
    snprintf (why, why_size, "CUDA: adding the backward-data result: %s",
        cudaGetErrorString (err));
    return err == cudaErrorMemoryAllocation ? GT_ERROR_NO_MEMORY
                                            : GT_ERROR_DEVICE;
  }
  return GT_OK;
}

int
gt_cudnn_backward_filter (GtCudnn *cudnn, const GtConvShape *shape,
    const void *x, const void *dy, void *dw, char *why, size_t why_size)
{
  const float one = 1.f, zero = 0.f;
  ConvPlan *plan;
  int status = get_plan (
      cudnn, shape, 0, NULL, NULL, NULL, NULL, NULL, &plan, why, why_size);

  if (status != GT_OK)
    return status;
  CUDNN_TRY (cudnnConvolutionBackwardFilter (cudnn->handle, &one, plan->x_desc,
      x, plan->y_desc, dy, plan->filter_desc, plan->filter_algo,
      cudnn->workspace, cudnn->workspace_bytes, &zero, plan->w_desc, dw));
  return GT_OK;
}
