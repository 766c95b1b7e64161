/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-backend.cu: the CUDA backend. Read next to cpu/cpu-backend.c: the
 * same units, blocks and walks, in the same order, with the same names;
 * what differs is where the work runs and how it is ordered. This file
 * sets the backend up (device, layers, the optimiser's layout) and tears
 * it down; cuda-step.cu runs steps, cuda-state.cu holds the state (its
 * memory, its host views, the update), cuda-errors.cu reports failures.
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
 *   captured as a CUDA graph and replayed (unless the configuration's
 *   cuda_graphs is 0); the learning rate lives in device memory so the
 *   graph never changes. A capture that fails falls back to eager steps
 *   for good, or fails the step with cuda_require_graph.
 * - cuda_profile times each step's parts with events (no graph) and
 *   prints the split to stderr when the trainer is freed.
 * - Data-parallel (a communicator in the configuration), cuda-dist.cu
 *   reduces the gradients between the backward pass and the optimiser,
 *   over NCCL in buckets that overlap the backward pass, or over MPI
 *   through host memory; every rank's verdict, in device memory, decides
 *   whether the optimiser moves. */
#include "cuda-backend-private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- layers ---- */

static int
unit_setup (CudaBackend *cuda, Unit *unit, const GtConvSpec *conv,
    const GtNormSpec *norm)
{
  size_t values = gt_conv_output_values (conv, cuda->config.batch_size);

  unit->conv = conv;
  unit->norm = norm;
  if (norm->channels % 4 != 0)
    return backend_fail (cuda, GT_ERROR_INVALID,
        "the CUDA backend needs batch-norm widths that are multiples of 4, "
        "not %d",
        norm->channels);
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

/* ---- creation ---- */

static int
open_device (CudaBackend *cuda)
{
  struct cudaDeviceProp prop;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount (&count);

  if (err != cudaSuccess || count == 0) {
    cudaGetLastError ();
    return backend_fail (cuda, GT_ERROR_DEVICE, "no usable CUDA device: %s",
        err != cudaSuccess ? cudaGetErrorString (err) : "none found");
  }
  if (cuda->device < 0 || cuda->device >= count)
    return backend_fail (cuda, GT_ERROR_DEVICE,
        "gpu-id %d: there %s %d CUDA device%s (0 to %d)", cuda->device,
        count == 1 ? "is" : "are", count, count == 1 ? "" : "s", count - 1);
  CUDA_TRY (cudaGetDeviceProperties (&prop, cuda->device));
  if (prop.major < 9)
    return backend_fail (cuda, GT_ERROR_DEVICE,
        "CUDA device %d (%s) is sm_%d%d: this build of the CUDA backend runs "
        "on sm_90 or newer",
        cuda->device, prop.name, prop.major, prop.minor);
  CUDA_TRY (cudaSetDevice (cuda->device));
  return GT_OK;
}

/* The units and their buffers, sized by the model's plan. */
static int
setup_layers (CudaBackend *cuda)
{
  const GtModelSpec *spec = cuda->spec;
  int batch_size = cuda->config.batch_size, i, k;

  cuda->blocks = (Block *)calloc (spec->num_blocks, sizeof (Block));
  if (cuda->blocks == NULL)
    return backend_fail (cuda, GT_ERROR_NO_MEMORY, "out of host memory");
  STATUS_TRY (unit_setup (cuda, &cuda->stem, &spec->stem, &spec->stem_norm));
  if (spec->has_maxpool) {
    size_t values = (size_t)batch_size * spec->pooled_h * spec->pooled_w
        * spec->stem.out_channels;

    ALLOC (cuda->pooled, values * cuda->elem, "activations");
    ALLOC (cuda->argmax, values, "max-pool indices");
  }
  for (i = 0; i < spec->num_blocks; i++) {
    const GtBlockSpec *block_spec = &spec->blocks[i];
    Block *block = &cuda->blocks[i];

    block->spec = block_spec;
    block->num_units = block_spec->num_units;
    for (k = 0; k < block->num_units; k++)
      STATUS_TRY (unit_setup (cuda, &block->units[k], &block_spec->convs[k],
          &block_spec->norms[k]));
    if (block_spec->has_downsample)
      STATUS_TRY (unit_setup (
          cuda, &block->down, &block_spec->down_conv, &block_spec->down_norm));
  }
  return GT_OK;
}

/* The optimiser's chunks: every parameter tensor, decayed as the
 * configuration says; in bf16 the working copies to refresh and where the
 * gradient is. */
static int
optimizer_chunk (
    const CudaBackend *cuda, const GtTensorEntry *entry, GtCudaSgdChunk *chunk)
{
  const GtTrainerConfig *config = &cuda->config;
  int bf16 = cuda->dtype != GT_CUDA_F32;

  if (!gt_entry_is_parameter (entry))
    return 0;
  if (chunk == NULL)
    return 1;
  chunk->decay = gt_entry_decays (entry) || config->decay_norm_and_bias
      ? config->weight_decay
      : 0.f;
  chunk->flags = 0;
  /* data-parallel, cuda-dist.cu widens the bf16 filter gradients into the
   * fp32 ones before reducing them */
  if (bf16 && entry->kind == GT_ENTRY_CONV_WEIGHT)
    chunk->flags |= GT_CUDA_SGD_WRITE_WORK
        | (config->comm == NULL ? GT_CUDA_SGD_GRAD_FROM_WORK : 0u);
  if (bf16 && entry->kind == GT_ENTRY_FC_WEIGHT)
    chunk->flags |= GT_CUDA_SGD_WRITE_WORK;
  return 1;
}

static int
setup_optimizer (CudaBackend *cuda)
{
  GtCudaSgdChunk *chunks;

  STATUS_TRY (
      cut_into_chunks (cuda, optimizer_chunk, &chunks, &cuda->num_chunks));
  return upload_chunks (
      cuda, chunks, cuda->num_chunks, &cuda->chunks, "the optimiser's table");
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
  int batch_size = config->batch_size, max_channels = spec->max_norm_channels;
  int i;
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
  for (i = 0; i < 4; i++)
    CUDA_TRY (cudaEventCreate (&cuda->step_marks[i / 2][i % 2]));
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
    return backend_fail (cuda, GT_ERROR_NO_MEMORY, "out of host memory");

  /* layers and their buffers */
  input_values = (size_t)batch_size * config->height * config->width * 3;
  ALLOC (cuda->images, input_values, "the input batch");
  ALLOC (cuda->labels, batch_size * sizeof (int32_t), "the labels");
  ALLOC (cuda->input, input_values * cuda->elem, "the input");
  STATUS_TRY (setup_layers (cuda));
  max_activation = spec->max_activation * batch_size;
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
  max_partials = gt_cuda_norm_partial_floats (
      (size_t)batch_size * spec->stem.out_h * spec->stem.out_w,
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
          (size_t)batch_size * unit->conv->out_h * unit->conv->out_w,
          unit->norm->channels);
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
  cuda->cudnn = gt_cudnn_new (cuda->compute, cuda->dtype, workspace,
      &cuda->config, &status, cuda->why, sizeof (cuda->why));
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
  /* -1: the rank's place on its machine, one GPU per rank */
  cuda->device =
      config->gpu_id >= 0 ? config->gpu_id : gt_comm_local_rank (config->comm);
  cuda->dtype =
      config->precision == GT_PRECISION_FP32 ? GT_CUDA_F32 : GT_CUDA_BF16;
  cuda->elem = gt_cuda_dtype_size (cuda->dtype);
  cuda->profile = config->cuda_profile;
  cuda->use_graph = config->cuda_graphs && !cuda->profile;
  snprintf (cuda->graph_off, sizeof (cuda->graph_off), "%s",
      !config->cuda_graphs ? "off in the configuration (cuda_graphs 0)"
          : cuda->profile  ? "off: the profile times each part with events"
                           : "");
  cuda->require_graph = config->cuda_require_graph;
  /* (u8 / 255 - mean) / std as one multiply-add, as the CPU computes it */
  for (c = 0; c < 3; c++) {
    scale[c] = 1.f / (255.f * config->std[c]);
    offset[c] = -config->mean[c] / config->std[c];
    cuda->input_scale[c] = scale[c];
    cuda->input_offset[c] = offset[c];
  }
  status = setup (cuda);
  if (config->comm != NULL)
    status = dist_setup (cuda, status);
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
  dist_free (cuda);
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
  for (i = 0; i < 4; i++)
    if (cuda->step_marks[i / 2][i % 2])
      cudaEventDestroy (cuda->step_marks[i / 2][i % 2]);
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

static void
cuda_report (void *data, GtBackendReport *report)
{
  CudaBackend *cuda = (CudaBackend *)data;

  report->graphs = cuda->use_graph;
  snprintf (report->graphs_off, sizeof (report->graphs_off), "%s",
      cuda->use_graph ? "" : cuda->graph_off);
  gt_cudnn_fill_report (cuda->cudnn, report);
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
  cuda_leave,
  cuda_report,
};
