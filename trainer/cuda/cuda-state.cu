/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-state.cu: the CUDA backend's state: its device memory, the host
 * views that sync_to_host hands trainer.c (downloaded only when a step
 * changed the device's) and their upload, pinned batch memory, and the
 * update that moves it (the optimiser's chunk tables and its launch), which
 * cuda-step.cu and cuda-dist.cu both run. */
#include "cuda-backend-private.h"

#include <stdlib.h>
#include <string.h>

/* ---- memory ---- */

int
device_alloc (CudaBackend *cuda, void **out, size_t bytes, const char *what)
{
  void **allocations;
  cudaError_t err;

  *out = NULL;
  allocations = (void **)realloc (
      cuda->allocations, (cuda->num_allocations + 1) * sizeof (void *));
  if (allocations == NULL)
    return backend_fail (cuda, GT_ERROR_NO_MEMORY, "out of host memory");
  cuda->allocations = allocations;
  err = cudaMalloc (out, bytes > 0 ? bytes : 1);
  if (err != cudaSuccess) {
    *out = NULL;
    cudaGetLastError ();
    return backend_fail (cuda,
        err == cudaErrorMemoryAllocation ? GT_ERROR_NO_MEMORY : GT_ERROR_DEVICE,
        "CUDA: cudaMalloc of %.1f MiB for %s on GPU %d failed: %s",
        bytes / 1048576.0, what, cuda->device, cudaGetErrorString (err));
  }
  cuda->allocations[cuda->num_allocations++] = *out;
  return GT_OK;
}

/* ---- the update ---- */

int
cut_into_chunks (
    CudaBackend *cuda, ChunkFill fill, GtCudaSgdChunk **table, int *count)
{
  const GtModelSpec *spec = cuda->spec;
  GtCudaSgdChunk *chunks = NULL;
  int pass, i;

  for (pass = 0; pass < 2; pass++) {
    chunks = pass ? (GtCudaSgdChunk *)calloc (
                 *count ? *count : 1, sizeof (GtCudaSgdChunk))
                  : NULL;
    if (pass && chunks == NULL)
      return backend_fail (cuda, GT_ERROR_NO_MEMORY, "out of host memory");
    *count = 0;
    /* entries are in offset order, so the chunks are too */
    for (i = 0; i < spec->num_entries; i++) {
      const GtTensorEntry *entry = &spec->entries[i];
      size_t done;

      if (!fill (cuda, entry, NULL))
        continue;
      for (done = 0; done < entry->numel;
           done += GT_CUDA_SGD_CHUNK, (*count)++) {
        GtCudaSgdChunk *chunk = pass ? &chunks[*count] : NULL;
        size_t left = entry->numel - done;

        if (chunk == NULL)
          continue;
        chunk->offset = (uint32_t)(entry->offset + done);
        chunk->count =
            (uint32_t)(left < GT_CUDA_SGD_CHUNK ? left : GT_CUDA_SGD_CHUNK);
        fill (cuda, entry, chunk);
      }
    }
  }
  *table = chunks;
  return GT_OK;
}

int
upload_chunks (CudaBackend *cuda, GtCudaSgdChunk *chunks, int count,
    GtCudaSgdChunk **table, const char *what)
{
  if (device_alloc (cuda, (void **)table, count * sizeof (GtCudaSgdChunk), what)
          != GT_OK
      || cudaMemcpy (*table, chunks, count * sizeof (GtCudaSgdChunk),
             cudaMemcpyHostToDevice)
          != cudaSuccess) {
    free (chunks);
    cudaGetLastError ();
    if (*table != NULL)
      return backend_fail (
          cuda, GT_ERROR_DEVICE, "CUDA: could not upload %s", what);
    return GT_ERROR_NO_MEMORY;
  }
  free (chunks);
  return GT_OK;
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

int
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

int
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

int
cuda_sync_from_host (void *data)
{
  return upload_state ((CudaBackend *)data);
}

void *
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

void
cuda_host_free (void *data, void *memory)
{
  (void)data;
  if (memory != NULL)
    cudaFreeHost (memory);
}

int
apply_update (CudaBackend *cuda, const GtCudaLossResult *verdict)
{
  CUDA_TRY (gt_cuda_sgd (cuda->chunks, cuda->num_chunks, cuda->params,
      cuda->grads, cuda->grads_work, cuda->momentum, cuda->params_work,
      cuda->dtype, cuda->config.momentum, cuda->config.nesterov,
      cuda->step_params_device, verdict, cuda->compute));
  CUDA_TRY (gt_cuda_restore_if_nonfinite (cuda->stats, cuda->saved_stats,
      cuda->spec->num_stats, verdict, cuda->compute));
  return GT_OK;
}
