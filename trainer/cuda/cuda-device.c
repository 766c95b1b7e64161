/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-device.c: the entry point of the CUDA backend module
 * (libgsttrain-cuda.so, see cuda-module.h): whether a CUDA device is usable
 * and which, which NCCL there is, and the backend's operations. */
#include "cuda-module.h"
#include "cuda-nccl.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int
device_count (char *why, size_t why_size)
{
  cudaError_t err;
  void *driver;
  int count = 0;

  /* Without a driver the runtime's own answer ("CUDA driver version is
   * insufficient for CUDA runtime version") misleads: say what is missing. */
  driver = dlopen ("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == NULL) {
    snprintf (why, why_size,
        "no NVIDIA driver on this machine (libcuda.so.1 cannot be loaded)");
    return 0;
  }
  dlclose (driver);
  err = cudaGetDeviceCount (&count);
  if (err == cudaErrorInsufficientDriver) {
    int supported = 0, runtime = 0;

    cudaDriverGetVersion (&supported);
    cudaRuntimeGetVersion (&runtime);
    snprintf (why, why_size,
        "the NVIDIA driver is too old for this build: it supports CUDA "
        "%d.%d, gst-train's CUDA runtime is %d.%d",
        supported / 1000, supported % 1000 / 10, runtime / 1000,
        runtime % 1000 / 10);
    return 0;
  }
  if (err != cudaSuccess) {
    snprintf (
        why, why_size, "no usable CUDA device: %s", cudaGetErrorString (err));
    return 0;
  }
  if (count == 0)
    snprintf (why, why_size, "no CUDA device found");
  return count;
}

static int
device_info (int device_id, GtCudaDeviceInfo *info, char *why, size_t why_size)
{
  struct cudaDeviceProp prop;
  cudaError_t err = cudaGetDeviceProperties (&prop, device_id);

  if (err != cudaSuccess) {
    snprintf (why, why_size, "CUDA device %d: %s", device_id,
        cudaGetErrorString (err));
    return -1;
  }
  memset (info, 0, sizeof (*info));
  snprintf (info->name, sizeof (info->name), "%s", prop.name);
  info->major = prop.major;
  info->minor = prop.minor;
  info->total_memory = prop.totalGlobalMem;
  cudaDriverGetVersion (&info->driver_version);
  cudaRuntimeGetVersion (&info->runtime_version);
  info->cudnn_version = (int)cudnnGetVersion ();
  return 0;
}

static void *
host_alloc (size_t size, int device)
{
  void *memory = NULL;

  if (cudaSetDevice (device) != cudaSuccess
      || cudaHostAlloc (&memory, size, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError (); /* clear it: the caller falls back to malloc */
    return NULL;
  }
  return memory;
}

static void
host_free (void *memory)
{
  cudaFreeHost (memory);
}

extern const GtBackendOps gt_cuda_backend;
/* cuda-cudnn.cu (declared in cuda-cudnn.h, which is C++) */
extern int gt_cudnn_nondeterministic_choices (char *last, size_t last_size);

__attribute__ ((visibility ("default"))) const GtCudaModule gt_cuda_module = {
  .abi = GT_CUDA_MODULE_ABI,
  .ops_size = sizeof (GtBackendOps),
  .config_size = sizeof (GtTrainerConfig),
  .spec_size = sizeof (GtModelSpec),
  .device_info_size = sizeof (GtCudaDeviceInfo),
  .backend = &gt_cuda_backend,
  .device_count = device_count,
  .device_info = device_info,
  .host_alloc = host_alloc,
  .host_free = host_free,
  .nondeterministic_choices = gt_cudnn_nondeterministic_choices,
  .nccl_version = gt_nccl_version,
};
