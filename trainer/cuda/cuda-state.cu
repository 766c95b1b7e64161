/* cuda-state.cu: the CUDA backend's state seen from the host: the host
 * views that sync_to_host hands trainer.c (downloaded only when a step
 * changed the device's), their upload, and pinned batch memory. */
#include "cuda-backend-private.h"

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
