/* cuda-device.c: finds out whether a CUDA device is usable, and which. */
#include "trainer.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

int
gt_cuda_built (void)
{
#ifdef GT_HAVE_CUDA_BACKEND
  return 1;
#else
  return 0; /* the device probe alone: nvcc, cuDNN or cuBLAS was missing */
#endif
}

int
gt_cuda_device_count (char *why, size_t why_size)
{
  int count = 0;
  cudaError_t err = cudaGetDeviceCount (&count);

  if (err != cudaSuccess) {
    if (why != NULL && why_size > 0)
      snprintf (
          why, why_size, "no usable CUDA device: %s", cudaGetErrorString (err));
    return 0;
  }
  if (count == 0 && why != NULL && why_size > 0)
    snprintf (why, why_size, "no CUDA device found");
  return count;
}

int
gt_cuda_device_info (
    int device_id, GtCudaDeviceInfo *info, char *why, size_t why_size)
{
  struct cudaDeviceProp prop;
  cudaError_t err = cudaGetDeviceProperties (&prop, device_id);

  if (err != cudaSuccess) {
    if (why != NULL && why_size > 0)
      snprintf (why, why_size, "CUDA device %d: %s", device_id,
          cudaGetErrorString (err));
    return -1;
  }
  memset (info, 0, sizeof (*info));
  snprintf (info->name, sizeof (info->name), "%s", prop.name);
  info->major = prop.major;
  info->minor = prop.minor;
  info->total_memory = prop.totalGlobalMem;
  return 0;
}
