/* cuda-cudnn.cu: convolutions through cuDNN's legacy API (cuda-cudnn.h). */
#include "cuda-cudnn.h"
#include "trainer.h"

#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
} ConvPlan;

struct GtCudnn
{
  cudnnHandle_t handle;
  GtCudaDtype dtype;
  void *workspace;
  size_t workspace_bytes;
  ConvPlan **plans;
  int num_plans;
  int capacity;
  double choose_seconds; /* spent choosing algorithms, for the log */
};

static double
seconds_now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

/* Evaluates a cuDNN call; on failure, names it, the error and the shape. */
#define CUDNN_TRY(call)                                                        \
  do {                                                                         \
    cudnnStatus_t status_ = (call);                                            \
    if (status_ != CUDNN_STATUS_SUCCESS) {                                     \
      char shape_[128];                                                        \
      describe_shape (shape, shape_, sizeof (shape_));                         \
      snprintf (why, why_size, "cuDNN: %s failed (%s) for a %s", #call,        \
          cudnnGetErrorString (status_), shape_);                              \
      return cudnn_status (status_);                                           \
    }                                                                          \
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

/* Picks the first (fastest, measured or predicted) result that ran, fits
 * the workspace and, in fp32, is deterministic and without TF32. The three
 * directions have different result types with the same fields. */
template <typename Perf>
static int
pick (const GtCudnn *cudnn, const Perf *results, int count)
{
  int i;

  for (i = 0; i < count; i++)
    if (results[i].status == CUDNN_STATUS_SUCCESS
        && results[i].memory <= cudnn->workspace_bytes
        && math_acceptable (cudnn, results[i].mathType)
        && (cudnn->dtype != GT_CUDA_F32
            || results[i].determinism == CUDNN_DETERMINISTIC))
      return i;
  return -1;
}

#define NO_ALGORITHM(direction)                                                \
  do {                                                                         \
    char shape_[128];                                                          \
    describe_shape (shape, shape_, sizeof (shape_));                           \
    snprintf (why, why_size,                                                   \
        "cuDNN has no %s algorithm for a %s within a %zu MiB workspace%s",     \
        direction, shape_, cudnn->workspace_bytes >> 20,                       \
        cudnn->dtype == GT_CUDA_F32 ? " (deterministic, without TF32)" : "");  \
    return GT_ERROR_DEVICE;                                                    \
  } while (0)

/* When neither search nor heuristics offer an algorithm that fits: the
 * algorithms cuDNN documents as deterministic, the first one that takes
 * the shape (its workspace query succeeds) and fits the workspace. */
static int
fallback_forward (GtCudnn *cudnn, ConvPlan *plan)
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
        && bytes <= cudnn->workspace_bytes) {
      plan->forward_algo = algos[i];
      return 0;
    }
  return -1;
}

static int
fallback_data (GtCudnn *cudnn, ConvPlan *plan)
{
  size_t bytes;

  if (cudnnGetConvolutionBackwardDataWorkspaceSize (cudnn->handle, plan->w_desc,
          plan->y_desc, plan->data_desc, plan->x_desc,
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, &bytes)
          != CUDNN_STATUS_SUCCESS
      || bytes > cudnn->workspace_bytes)
    return -1;
  plan->data_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  return 0;
}

static int
fallback_filter (GtCudnn *cudnn, ConvPlan *plan)
{
  size_t bytes;

  if (cudnnGetConvolutionBackwardFilterWorkspaceSize (cudnn->handle,
          plan->x_desc, plan->y_desc, plan->filter_desc, plan->w_desc,
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, &bytes)
          != CUDNN_STATUS_SUCCESS
      || bytes > cudnn->workspace_bytes)
    return -1;
  plan->filter_algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  return 0;
}

/* The steps every direction takes: @find measures (in bf16, when
 * @measure), @heuristics predicts, @fallback takes the documented
 * deterministic algorithm; the chosen one goes to *@algo and its math type
 * to @desc. The three directions differ only in their cuDNN calls and
 * result types. */
template <typename Perf, int Count, typename Algo, typename Find,
    typename Heuristics, typename Fallback>
static int
choose_algo (GtCudnn *cudnn, cudnnConvolutionDescriptor_t desc, int measure,
    Find find, Heuristics heuristics, Fallback fallback, Algo *algo)
{
  Perf results[Count];
  int count = 0, chosen = -1;

  if (measure && find (Count, &count, results) == CUDNN_STATUS_SUCCESS)
    chosen = pick (cudnn, results, count);
  if (chosen < 0 && heuristics (Count, &count, results) == CUDNN_STATUS_SUCCESS)
    chosen = pick (cudnn, results, count);
  if (chosen < 0)
    return fallback ();
  *algo = results[chosen].algo;
  return cudnnSetConvolutionMathType (
             desc, math_to_use (cudnn, results[chosen].mathType))
          == CUDNN_STATUS_SUCCESS
      ? 0
      : -1;
}

/* Each direction's algorithm: the fastest measured one when the scratch
 * buffers are given (bf16), else the heuristics' first choice, else (or
 * when neither offers one that fits, or a search fails) the first of
 * cuDNN's documented deterministic algorithms that takes the shape. */
static int
choose_forward (GtCudnn *cudnn, ConvPlan *plan, const void *x, const void *w,
    void *y, int measure)
{
  typedef cudnnConvolutionFwdAlgoPerf_t Perf;

  return choose_algo<Perf, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> (
      cudnn, plan->forward_desc, measure,
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
      [&] () { return fallback_forward (cudnn, plan); }, &plan->forward_algo);
}

static int
choose_data (GtCudnn *cudnn, ConvPlan *plan, const void *w, const void *dy,
    void *dx, int measure)
{
  typedef cudnnConvolutionBwdDataAlgoPerf_t Perf;

  return choose_algo<Perf, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> (
      cudnn, plan->data_desc, measure,
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
      [&] () { return fallback_data (cudnn, plan); }, &plan->data_algo);
}

static int
choose_filter (GtCudnn *cudnn, ConvPlan *plan, const void *x, const void *dy,
    void *dw, int measure)
{
  typedef cudnnConvolutionBwdFilterAlgoPerf_t Perf;

  return choose_algo<Perf, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> (
      cudnn, plan->filter_desc, measure,
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
      [&] () { return fallback_filter (cudnn, plan); }, &plan->filter_algo);
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
  start = seconds_now ();
  status = plan_describe (cudnn, plan, why, why_size);
  if (status == GT_OK)
    status = plan_choose (cudnn, plan, x, w, y, dx, dw, why, why_size);
  cudnn->choose_seconds += seconds_now () - start;
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
    int *status, char *why, size_t why_size)
{
  GtCudnn *cudnn = (GtCudnn *)calloc (1, sizeof (GtCudnn));
  cudnnStatus_t cs;
  cudaError_t err;

  if (cudnn == NULL) {
    snprintf (why, why_size, "out of host memory");
    *status = GT_ERROR_NO_MEMORY;
    return NULL;
  }
  cudnn->dtype = dtype;
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
        "\"planning_seconds\": %.3f}}\n",
        cudnnGetVersion (), cudnn->num_plans, cudnn->choose_seconds);
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

int
gt_cudnn_backward_data (GtCudnn *cudnn, const GtConvShape *shape,
    const void *dy, const void *w, float beta, void *dx, char *why,
    size_t why_size)
{
  const float one = 1.f;
  ConvPlan *plan;
  int status = get_plan (
      cudnn, shape, 1, NULL, NULL, NULL, NULL, NULL, &plan, why, why_size);

  if (status != GT_OK)
    return status;
  CUDNN_TRY (cudnnConvolutionBackwardData (cudnn->handle, &one, plan->w_desc, w,
      plan->y_desc, dy, plan->data_desc, plan->data_algo, cudnn->workspace,
      cudnn->workspace_bytes, &beta, plan->x_desc, dx));
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
