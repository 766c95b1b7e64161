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

/* A member of the plan: a descriptor, or where an algorithm goes. */
template <typename T> using PlanField = T ConvPlan::*;

static const PlanField<cudnnConvolutionDescriptor_t> conv_descs[] = {
  &ConvPlan::forward_desc, &ConvPlan::data_desc, &ConvPlan::filter_desc
};
#define NUM_DIRECTIONS 3

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
  int i;

  if (plan == NULL)
    return;
  if (plan->x_desc)
    cudnnDestroyTensorDescriptor (plan->x_desc);
  if (plan->y_desc)
    cudnnDestroyTensorDescriptor (plan->y_desc);
  if (plan->w_desc)
    cudnnDestroyFilterDescriptor (plan->w_desc);
  for (i = 0; i < NUM_DIRECTIONS; i++)
    if (plan->*conv_descs[i])
      cudnnDestroyConvolutionDescriptor (plan->*conv_descs[i]);
  free (plan);
}

static int
plan_describe (GtCudnn *cudnn, ConvPlan *plan, char *why, size_t why_size)
{
  const GtConvShape *shape = &plan->shape;
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
  for (i = 0; i < NUM_DIRECTIONS; i++) {
    cudnnConvolutionDescriptor_t *desc = &(plan->*conv_descs[i]);

    CUDNN_TRY (cudnnCreateConvolutionDescriptor (desc));
    CUDNN_TRY (cudnnSetConvolution2dDescriptor (*desc, shape->padding,
        shape->padding, shape->stride, shape->stride, 1, 1,
        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_TRY (cudnnSetConvolutionMathType (*desc, requested_math (cudnn)));
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

/* One direction of a convolution as cuDNN's legacy API has it: its result
 * and algorithm types, its search, heuristics and workspace query, and the
 * convolution itself (@run), which all take the plan's descriptors in the
 * same order: two operands (@a, @b), the convolution, the result (@c); the
 * algorithm chosen goes to @algo. @documented: the algorithms cuDNN
 * documents as deterministic, the first that takes the shape (its
 * workspace query succeeds) and fits the workspace being the direction's.
 * The three directions differ only in these: one piece of code chooses
 * and runs each. */
template <typename PerfT, typename AlgoT, int CountV, typename ADesc,
    typename BDesc, typename CDesc>
struct Direction
{
  typedef PerfT Perf;
  typedef AlgoT Algo;
  static const int count = CountV;

  const char *name;
  PlanField<ADesc> a;
  PlanField<BDesc> b;
  PlanField<cudnnConvolutionDescriptor_t> conv;
  PlanField<CDesc> c;
  PlanField<AlgoT> algo;
  cudnnStatus_t (*find) (cudnnHandle_t, ADesc, const void *, BDesc,
      const void *, cudnnConvolutionDescriptor_t, CDesc, void *, int, int *,
      Perf *, void *, size_t);
  cudnnStatus_t (*heuristics) (cudnnHandle_t, ADesc, BDesc,
      cudnnConvolutionDescriptor_t, CDesc, int, int *, Perf *);
  cudnnStatus_t (*workspace) (cudnnHandle_t, ADesc, BDesc,
      cudnnConvolutionDescriptor_t, CDesc, AlgoT, size_t *);
  /* c = alpha * the direction of (a, b) + beta * c */
  cudnnStatus_t (*run) (cudnnHandle_t, const void *, ADesc, const void *, BDesc,
      const void *, cudnnConvolutionDescriptor_t, AlgoT, void *, size_t,
      const void *, CDesc, void *);
  const char *run_name;
  AlgoT documented[3];
  int num_documented;
};

typedef cudnnTensorDescriptor_t TensorDesc;
typedef cudnnFilterDescriptor_t FilterDesc;

/* cuDNN names each direction's types after @Short (Fwd, BwdData,
 * BwdFilter), its count after @SHORT, and its calls after @Long (Forward,
 * BackwardData, BackwardFilter). */
#define DIRECTION(Short, SHORT, A, B, C)                                       \
  Direction<cudnnConvolution##Short##AlgoPerf_t,                               \
      cudnnConvolution##Short##Algo_t, CUDNN_CONVOLUTION_##SHORT##_ALGO_COUNT, \
      A, B, C>
#define DIRECTION_CALLS(Long)                                                  \
  cudnnFindConvolution##Long##AlgorithmEx,                                     \
      cudnnGetConvolution##Long##Algorithm_v7,                                 \
      cudnnGetConvolution##Long##WorkspaceSize, cudnnConvolution##Long,        \
      "cudnnConvolution" #Long

/* y = conv (x, w) */
static const DIRECTION (
    Fwd, FWD, TensorDesc, FilterDesc, TensorDesc) forward = { "forward",
  &ConvPlan::x_desc, &ConvPlan::w_desc, &ConvPlan::forward_desc,
  &ConvPlan::y_desc, &ConvPlan::forward_algo, DIRECTION_CALLS (Forward),
  { CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
      CUDNN_CONVOLUTION_FWD_ALGO_GEMM },
  3 };
/* dx from w and dy */
static const DIRECTION (BwdData, BWD_DATA, FilterDesc, TensorDesc,
    TensorDesc) backward_data = { "backward-data", &ConvPlan::w_desc,
  &ConvPlan::y_desc, &ConvPlan::data_desc, &ConvPlan::x_desc,
  &ConvPlan::data_algo, DIRECTION_CALLS (BackwardData),
  { CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 }, 1 };
/* dw from x and dy */
static const DIRECTION (BwdFilter, BWD_FILTER, TensorDesc, TensorDesc,
    FilterDesc) backward_filter = { "backward-filter", &ConvPlan::x_desc,
  &ConvPlan::y_desc, &ConvPlan::filter_desc, &ConvPlan::w_desc,
  &ConvPlan::filter_algo, DIRECTION_CALLS (BackwardFilter),
  { CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 }, 1 };

/* The documented deterministic algorithm of direction @d for @plan, or -1
 * when none takes the shape within the workspace. */
template <typename D>
static int
documented_algo (GtCudnn *cudnn, const ConvPlan *plan, const D &d)
{
  size_t bytes;
  int i;

  for (i = 0; i < d.num_documented; i++)
    if (d.workspace (cudnn->handle, plan->*d.a, plan->*d.b, plan->*d.conv,
            plan->*d.c, d.documented[i], &bytes)
            == CUDNN_STATUS_SUCCESS
        && bytes <= cudnn->workspace_bytes)
      return (int)d.documented[i];
  return -1;
}

/* Direction @d's algorithm, as cuda-algo-choice.h rules: measured on the
 * scratch buffers @a, @b and @c (its operands and result) when @measure
 * (bf16), predicted by the heuristics, or the documented deterministic
 * one; gt_algo_choose decides among them, the chosen algorithm goes to
 * the plan and its math type to the direction's descriptor. -1 when
 * nothing fits. */
template <typename D>
static int
choose_algo (GtCudnn *cudnn, ConvPlan *plan, const D &d, const void *a,
    const void *b, void *c, int measure)
{
  typename D::Perf measured[D::count], predicted[D::count];
  GtAlgoCandidate measured_candidates[D::count], predicted_candidates[D::count];
  int num_measured = 0, num_predicted = 0,
      documented = documented_algo (cudnn, plan, d);
  cudnnMathType_t math = requested_math (cudnn);
  GtAlgoChoice choice;

  if (measure
      && d.find (cudnn->handle, plan->*d.a, a, plan->*d.b, b, plan->*d.conv,
             plan->*d.c, c, D::count, &num_measured, measured, cudnn->workspace,
             cudnn->workspace_bytes)
          != CUDNN_STATUS_SUCCESS)
    num_measured = 0;
  if (d.heuristics (cudnn->handle, plan->*d.a, plan->*d.b, plan->*d.conv,
          plan->*d.c, D::count, &num_predicted, predicted)
      != CUDNN_STATUS_SUCCESS)
    num_predicted = 0;
  to_candidates (cudnn, measured, num_measured, measured_candidates);
  to_candidates (cudnn, predicted, num_predicted, predicted_candidates);
  choice = gt_algo_choose (measured_candidates, num_measured,
      predicted_candidates, num_predicted, documented >= 0,
      cudnn->workspace_bytes, cudnn->dtype == GT_CUDA_F32);
  switch (choice.source) {
    case GT_ALGO_MEASURED:
      plan->*d.algo = measured[choice.index].algo;
      math = measured[choice.index].mathType;
      break;
    case GT_ALGO_PREDICTED:
      plan->*d.algo = predicted[choice.index].algo;
      math = predicted[choice.index].mathType;
      break;
    case GT_ALGO_DOCUMENTED:
      plan->*d.algo = (typename D::Algo)documented;
      break;
    default:
      return -1;
  }
  if (choice.gave_up_determinism)
    note_nondeterministic (cudnn, &plan->shape, d.name, (int)(plan->*d.algo));
  return cudnnSetConvolutionMathType (plan->*d.conv, math_to_use (cudnn, math))
          == CUDNN_STATUS_SUCCESS
      ? 0
      : -1;
}

/* Direction @d on @plan: @c = the direction of (@a, @b) + @beta * @c. */
template <typename D>
static cudnnStatus_t
run (GtCudnn *cudnn, const ConvPlan *plan, const D &d, const void *a,
    const void *b, float beta, void *c)
{
  const float one = 1.f;

  return d.run (cudnn->handle, &one, plan->*d.a, a, plan->*d.b, b,
      plan->*d.conv, plan->*d.algo, cudnn->workspace, cudnn->workspace_bytes,
      &beta, plan->*d.c, c);
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
  cudnnStatus_t status = run (cudnn, plan, backward_data, w, dy, 1.f, dx);

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

  /* dy is measured in y's buffer */
  if (choose_algo (cudnn, plan, forward, x, w, y, measure) < 0)
    NO_ALGORITHM (forward.name);
  if (plan->with_data_grad
      && choose_algo (cudnn, plan, backward_data, w, y, dx, measure) < 0)
    NO_ALGORITHM (backward_data.name);
  if (choose_algo (cudnn, plan, backward_filter, x, y, dw, measure) < 0)
    NO_ALGORITHM (backward_filter.name);
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
  cudaFree (cudnn->scratch); /* NULL: nothing */
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

/* The plan of @shape for a pass (from the heuristics when it has none);
 * NULL with *@status. */
static ConvPlan *
pass_plan (GtCudnn *cudnn, const GtConvShape *shape, int with_data_grad,
    int *status, char *why, size_t why_size)
{
  ConvPlan *plan = NULL;

  *status = get_plan (cudnn, shape, with_data_grad, NULL, NULL, NULL, NULL,
      NULL, &plan, why, why_size);
  return *status == GT_OK ? plan : NULL;
}

/* Direction @d over the whole of @c (beta 0): forward or backward-filter. */
template <typename D>
static int
run_pass (GtCudnn *cudnn, const GtConvShape *shape, const D &d, const void *a,
    const void *b, void *c, char *why, size_t why_size)
{
  int status;
  ConvPlan *plan = pass_plan (cudnn, shape, 0, &status, why, why_size);
  cudnnStatus_t cs;

  if (plan == NULL)
    return status;
  cs = run (cudnn, plan, d, a, b, 0.f, c);
  if (cs != CUDNN_STATUS_SUCCESS)
    return cudnn_failed (cs, d.run_name, shape, why, why_size);
  return GT_OK;
}

int
gt_cudnn_forward (GtCudnn *cudnn, const GtConvShape *shape, const void *x,
    const void *w, void *y, char *why, size_t why_size)
{
  return run_pass (cudnn, shape, forward, x, w, y, why, why_size);
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
  int status;
  ConvPlan *plan = pass_plan (cudnn, shape, 1, &status, why, why_size);
  cudnnStatus_t cs;
  cudaError_t err;

  if (plan == NULL)
    return status;
  if (beta == 0.f || !plan->accumulate_refused) {
    cs = run (cudnn, plan, backward_data, w, dy, beta, dx);
    if (cs == CUDNN_STATUS_SUCCESS)
      return GT_OK;
    if (beta == 0.f || !refuses_accumulate (cs))
      return cudnn_failed (cs, backward_data.run_name, shape, why, why_size);
    status = refuse_accumulate (cudnn, plan, why, why_size);
    if (status != GT_OK)
      return status;
  }
  cs = run (cudnn, plan, backward_data, w, dy, 0.f, cudnn->scratch);
  if (cs != CUDNN_STATUS_SUCCESS)
    return cudnn_failed (cs, backward_data.run_name, shape, why, why_size);
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
  return run_pass (cudnn, shape, backward_filter, x, dy, dw, why, why_size);
}
