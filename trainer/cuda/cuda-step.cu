/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-step.cu: a step of the CUDA backend (cuda-backend.cu says how it
 * is ordered): the forward and backward passes unit by unit as in
 * cpu/cpu-backend.c, the batch upload, the step's capture as a CUDA graph,
 * eval, and the optional per-part profile. Batches arrive checked by
 * trainer.c. */
#include "cuda-backend-private.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const part_names[NUM_PARTS] = {
  "convolutions",
  "bn_relu_pool",
  "classifier_loss",
  "optimizer",
  "input_conversion",
};

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

void
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
  gt_cudnn_report (cuda->cudnn, stderr);
}

/* ---- layers ---- */

GtConvShape
unit_shape (const Unit *unit, int n)
{
  GtConvShape shape;

  shape.n = n;
  shape.h = unit->conv->in_h;
  shape.w = unit->conv->in_w;
  shape.in_channels = unit->conv->in_channels;
  shape.out_channels = unit->conv->out_channels;
  shape.kernel = unit->conv->kernel;
  shape.stride = unit->conv->stride;
  shape.padding = unit->conv->padding;
  shape.out_h = unit->conv->out_h;
  shape.out_w = unit->conv->out_w;
  return shape;
}

/* ---- forward ---- */

static int
unit_forward (CudaBackend *cuda, Unit *unit, const void *x, int n,
    const void *residual, int relu, int training)
{
  const GtNormSpec *norm = unit->norm;
  GtConvShape shape = unit_shape (unit, n);
  size_t rows = (size_t)n * unit->conv->out_h * unit->conv->out_w;

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

/* C = A B + beta C for the classifier, column-major as cuBLAS wants it,
 * accumulating in fp32: @op_a and @op_b say whether A and B are
 * transposed, A and B are in @type and C in @c_type. */
static int
classifier_gemm (CudaBackend *cuda, cublasOperation_t op_a,
    cublasOperation_t op_b, int m, int n, int k, const void *a, int lda,
    const void *b, int ldb, float beta, void *c, cudaDataType_t c_type, int ldc)
{
  cudaDataType_t type = cuda->dtype == GT_CUDA_F32 ? CUDA_R_32F : CUDA_R_16BF;
  const float one = 1.f;

  CUBLAS_TRY (cublasGemmEx (cuda->cublas, op_a, op_b, m, n, k, &one, a, type,
      lda, b, type, ldb, &beta, c, c_type, ldc, CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT));
  return GT_OK;
}

/* logits = features weight^T + bias: cuBLAS is column-major, so the
 * row-major [n][classes] logits are its classes x n matrix. */
static int
linear_forward (CudaBackend *cuda, int n)
{
  const GtModelSpec *spec = cuda->spec;

  CUDA_TRY (gt_cuda_broadcast_rows (cuda->params + spec->fc_bias, n,
      spec->num_classes, cuda->logits, cuda->compute));
  return classifier_gemm (cuda, CUBLAS_OP_T, CUBLAS_OP_N, spec->num_classes, n,
      spec->features, work_at (cuda, cuda->params_work, spec->fc_weight),
      spec->features, cuda->features, spec->features, 1.f, cuda->logits,
      CUDA_R_32F, spec->num_classes);
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
    CUDA_TRY (gt_cuda_maxpool_forward (cuda->dtype, x, n, spec->stem.out_h,
        spec->stem.out_w, spec->stem.out_channels, cuda->pooled, cuda->argmax,
        cuda->compute));
    x = cuda->pooled;
  }
  for (i = 0; i < spec->num_blocks; i++) {
    STATUS_TRY (block_forward (cuda, &cuda->blocks[i], x, n, training));
    x = cuda->blocks[i].units[cuda->blocks[i].num_units - 1].out;
  }
  CUDA_TRY (
      gt_cuda_avgpool_forward (cuda->dtype, x, n, spec->last_h * spec->last_w,
          spec->features, cuda->features, cuda->compute));
  STATUS_TRY (mark (cuda, PART_CLASSIFIER));
  STATUS_TRY (linear_forward (cuda, n));
  cuda->logits_samples = n;
  return GT_OK;
}

/* ---- backward ---- */

/* Data-parallel: the unit's parameter gradients are complete, which may
 * complete a bucket whose reduction can start (cuda-dist.cu). */
static int
unit_produced (CudaBackend *cuda, const Unit *unit)
{
  if (cuda->dist == NULL)
    return GT_OK;
  STATUS_TRY (dist_produced (cuda, unit->norm->weight));
  STATUS_TRY (dist_produced (cuda, unit->norm->bias));
  return dist_produced (cuda, unit->conv->weight);
}

/* Gradients of the unit's weights from @dy; the gradient at its input goes
 * to @dx (plus @beta times what @dx holds) when @dx is not NULL. */
static int
unit_backward (CudaBackend *cuda, Unit *unit, const void *x, int n, int relu,
    const void *dy, void *dx, float beta, void *dresidual)
{
  const GtNormSpec *norm = unit->norm;
  GtConvShape shape = unit_shape (unit, n);
  size_t rows = (size_t)n * unit->conv->out_h * unit->conv->out_w;

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
  /* before the input's gradient, so that a reduction overlaps it too */
  STATUS_TRY (unit_produced (cuda, unit));
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

  STATUS_TRY (classifier_gemm (cuda, CUBLAS_OP_N, CUBLAS_OP_T, spec->features,
      spec->num_classes, n, cuda->features, spec->features, cuda->dlogits_work,
      spec->num_classes, 0.f, cuda->grads + spec->fc_weight, CUDA_R_32F,
      spec->features));
  CUDA_TRY (gt_cuda_column_sums (cuda->dlogits, n, spec->num_classes,
      cuda->grads + spec->fc_bias, cuda->compute));
  if (cuda->dist != NULL) {
    STATUS_TRY (dist_produced (cuda, spec->fc_weight));
    STATUS_TRY (dist_produced (cuda, spec->fc_bias));
  }
  return classifier_gemm (cuda, CUBLAS_OP_N, CUBLAS_OP_N, spec->features, n,
      spec->num_classes, work_at (cuda, cuda->params_work, spec->fc_weight),
      spec->features, cuda->dlogits_work, spec->num_classes, 0.f,
      cuda->dfeatures, type, spec->features);
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
      spec->last_h * spec->last_w, spec->features, grad[at], cuda->compute));
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
        spec->stem.out_h, spec->stem.out_w, spec->stem.out_channels,
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

/* Everything of a training step on the device: what a graph captures.
 * Data-parallel, the reductions fork from the compute stream and join it
 * again before the update (NCCL), or the update waits for step_end's
 * reduction on the host (MPI). */
static int
run_step (CudaBackend *cuda, int n, int channels)
{
  STATUS_TRY (run_forward (cuda, n, channels, 1));
  if (cuda->dist != NULL)
    STATUS_TRY (dist_begin_backward (cuda, n));
  STATUS_TRY (network_backward (cuda, n));
  if (cuda->dist != NULL)
    STATUS_TRY (dist_end_backward (cuda));
  STATUS_TRY (mark (cuda, PART_OPTIMIZER));
  /* data-parallel, every rank's verdict; alone, this loss's */
  if (cuda->dist == NULL)
    STATUS_TRY (apply_update (cuda, cuda->result_device));
  else if (dist_updates_in_step (cuda))
    STATUS_TRY (apply_update (cuda, dist_verdict (cuda)));
  return mark (cuda, PART_END);
}

/* Captures run_step as a graph; 0 when that worked, else the capture is
 * abandoned (and graphs with it), the reason goes to cuda->graph_off and
 * the caller runs the step eagerly. */
static int
capture_step (CudaBackend *cuda, int n, int channels)
{
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  int status;
  cudaError_t err;

  err =
      cudaStreamBeginCapture (cuda->compute, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    snprintf (cuda->graph_off, sizeof (cuda->graph_off),
        "off: cudaStreamBeginCapture failed: %s", cudaGetErrorString (err));
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
    if (status != GT_OK)
      snprintf (cuda->graph_off, sizeof (cuda->graph_off),
          "off: the step failed while captured: %.200s", cuda->why);
    else
      snprintf (cuda->graph_off, sizeof (cuda->graph_off),
          "off: capture or instantiation failed: %s",
          err != cudaSuccess ? cudaGetErrorString (err) : "no graph");
    cudaGetLastError ();
    return -1;
  }
  if (cuda->graph_exec)
    cudaGraphExecDestroy (cuda->graph_exec);
  cuda->graph_exec = exec;
  cuda->graph_channels = channels;
  return 0;
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
  cudaEvent_t *marks;

  CUDA_TRY (cudaSetDevice (cuda->device));
  cuda->host_valid = 0;
  STATUS_TRY (upload_batch (cuda, batch));
  cuda->step_params_host->lr = lr;
  CUDA_TRY (cudaMemcpyAsync (cuda->step_params_device, cuda->step_params_host,
      sizeof (GtCudaStepParams), cudaMemcpyHostToDevice, cuda->compute));
  if (cuda->use_graph && full && cuda->full_steps_run > 0
      && (cuda->graph_exec == NULL || cuda->graph_channels != channels)) {
    if (capture_step (cuda, n, channels) < 0) {
      if (cuda->require_graph)
        return backend_fail (cuda, GT_ERROR_DEVICE,
            "CUDA: the step could not be captured as a graph "
            "(cuda_require_graph is set)");
      gt_log (&cuda->config, GT_LOG_WARNING,
          "the CUDA step could not be captured as a graph (%s); running it "
          "without graphs from now on",
          cuda->graph_off);
      cuda->use_graph = 0;
    }
  }
  marks = cuda->step_marks[cuda->steps_begun % 2];
  CUDA_TRY (cudaEventRecord (marks[0], cuda->compute));
  if (cuda->use_graph && full && cuda->graph_exec
      && cuda->graph_channels == channels)
    CUDA_TRY (cudaGraphLaunch (cuda->graph_exec, cuda->compute));
  else
    STATUS_TRY (run_step (cuda, n, channels));
  CUDA_TRY (cudaEventRecord (marks[1], cuda->compute));
  cuda->steps_begun++;
  if (full)
    cuda->full_steps_run++;
  cuda->pending_lr = lr;
  cuda->pending_samples = n;
  return GT_OK;
}

int
cuda_step_begin (
    void *data, const GtBatch *batch, float lr, char *why, size_t why_size)
{
  CudaBackend *cuda = (CudaBackend *)data;

  return cuda_report (cuda, step_begin (cuda, batch, lr), why, why_size);
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
  /* the step before this one is done: it ran before this one's loss */
  if (cuda->steps_begun >= 2) {
    cudaEvent_t *marks = cuda->step_marks[cuda->steps_begun % 2];
    float ms = 0;

    CUDA_TRY (cudaEventElapsedTime (&ms, marks[0], marks[1]));
    result->busy_seconds = ms * 1e-3;
  }
  result->loss = loss->loss;
  result->lr = cuda->pending_lr;
  result->num_samples = cuda->pending_samples;
  result->correct_top1 = loss->correct_top1;
  result->correct_top5 = loss->correct_top5;
  if (cuda->dist != NULL) {
    int status = dist_step_end (cuda, result);

    if (status == GT_OK)
      cuda->num_batches_tracked++;
    return status;
  }
  if (!loss->finite)
    return backend_fail (cuda, GT_ERROR_NONFINITE,
        "the loss is %s: the step was not applied",
        isnan (loss->loss) ? "NaN" : "infinite");
  cuda->num_batches_tracked++;
  return GT_OK;
}

int
cuda_step_end (void *data, GtStepResult *result, char *why, size_t why_size)
{
  CudaBackend *cuda = (CudaBackend *)data;

  return cuda_report (cuda, step_end (cuda, result), why, why_size);
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

int
cuda_eval (void *data, const GtBatch *batch, GtEvalTotals *totals, char *why,
    size_t why_size)
{
  CudaBackend *cuda = (CudaBackend *)data;

  return cuda_report (cuda, eval (cuda, batch, totals), why, why_size);
}

size_t
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
