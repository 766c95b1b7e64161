/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-loader.c: opens the CUDA backend module when it is first needed and
 * answers gt_cuda_* and gt_host_alloc through it.
 *
 * The module is found as module-loader.h says (GT_CUDA_MODULE names it
 * elsewhere). A module that is found but does not load (libcudnn.so.9 or
 * another of its libraries missing) is reported with the dynamic linker's
 * message, which names the missing library. */
#include "cuda-module.h"
#include "module-loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The module was built from these headers. */
static int
module_fits (const void *table)
{
  const GtCudaModule *module = table;

  return module->ops_size == sizeof (GtBackendOps)
      && module->config_size == sizeof (GtTrainerConfig)
      && module->spec_size == sizeof (GtModelSpec)
      && module->device_info_size == sizeof (GtCudaDeviceInfo);
}

/* GT_CUDA_MODULE_FILE is NULL in a build without the module (meson.build) */
static GtModule backend_module = GT_MODULE_INIT (GT_ENV_CUDA_MODULE,
    GT_CUDA_MODULE_FILE, "the CUDA backend", "the CUDA backend module",
    GT_CUDA_MODULE_SYMBOL, GT_CUDA_MODULE_ABI, module_fits,
    "gst-train was built without the CUDA backend (no CUDA toolkit, cuDNN "
    "or cuBLAS at build time)");

/* The module, loaded by the first call. */
static const GtCudaModule *
cuda_module (char *why, size_t why_size)
{
  return gt_module_get (&backend_module, why, why_size);
}

/* The module, which a pinned block or a usable device says is loaded. */
static const GtCudaModule *
loaded_module (void)
{
  return backend_module.table;
}

const GtBackendOps *
gt_cuda_backend_ops (char *why, size_t why_size)
{
  const GtCudaModule *module = cuda_module (why, why_size);

  return module ? module->backend : NULL;
}

int
gt_cuda_built (void)
{
#ifdef GT_HAVE_CUDA_MODULE
  return 1;
#else
  return 0;
#endif
}

/* Batch memory is first allocated from a streaming thread. Loading the
 * module there loads cuBLAS, whose constructors raced with an interpreter's
 * exit handlers when a Python script ended just after PLAYING (SIGSEGV in
 * libcublas's constructor, issue 43): without the NVIDIA driver no device
 * can be usable, so the module is not loaded for that answer. */
static int
driver_present (void)
{
  void *driver = dlopen ("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);

  if (driver == NULL)
    return 0;
  dlclose (driver);
  return 1;
}

int
gt_cuda_device_count (char *why, size_t why_size)
{
  const GtCudaModule *module;

  /* Without the driver no device is usable: the module (and with it
   * cuBLAS and cuDNN) is not loaded just to say so (driver_present). */
  if (gt_cuda_built () && !driver_present ()) {
    snprintf (why, why_size,
        "no NVIDIA driver on this machine (libcuda.so.1 cannot be loaded)");
    return 0;
  }
  module = cuda_module (why, why_size);
  return module ? module->device_count (why, why_size) : 0;
}

int
gt_cuda_device_info (
    int device_id, GtCudaDeviceInfo *info, char *why, size_t why_size)
{
  const GtCudaModule *module = cuda_module (why, why_size);

  return module ? module->device_info (device_id, info, why, why_size) : -1;
}

int
gt_cuda_nccl_version (char *path, size_t path_size, char *why, size_t why_size)
{
  const GtCudaModule *module = cuda_module (why, why_size);

  return module ? module->nccl_version (path, path_size, why, why_size) : 0;
}

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int usable_devices;

static void
count_devices (void)
{
  char why[256];

  usable_devices = gt_cuda_device_count (why, sizeof (why));
}

/* The usable CUDA devices, asked once: batch memory is allocated often. */
static int
host_device_count (void)
{
  pthread_once (&count_once, count_devices);
  return usable_devices;
}

/* gt_host_alloc's blocks start with this header, one alignment unit long,
 * so that gt_host_free knows how to give each back. */
#define HOST_ALIGN 64
#define HOST_MAGIC_PINNED 0x67747069u /* "gtpi" */
#define HOST_MAGIC_PLAIN 0x6774706cu  /* "gtpl" */

void *
gt_host_alloc (size_t size, int gpu_id, int *pinned)
{
  unsigned char *block = NULL;

  if (size > SIZE_MAX - HOST_ALIGN)
    return NULL;
  if (gpu_id >= 0 && gpu_id < host_device_count ()
      && (block = loaded_module ()->host_alloc (size + HOST_ALIGN, gpu_id))) {
    *(uint32_t *)block = HOST_MAGIC_PINNED;
  } else if (posix_memalign ((void **)&block, HOST_ALIGN, size + HOST_ALIGN)
      == 0) {
    *(uint32_t *)block = HOST_MAGIC_PLAIN;
  } else {
    return NULL;
  }
  if (pinned != NULL)
    *pinned = *(uint32_t *)block == HOST_MAGIC_PINNED;
  return block + HOST_ALIGN;
}

void
gt_host_free (void *memory)
{
  unsigned char *block;

  if (memory == NULL)
    return;
  block = (unsigned char *)memory - HOST_ALIGN;
  if (*(uint32_t *)block == HOST_MAGIC_PINNED && loaded_module () != NULL)
    loaded_module ()->host_free (block);
  else
    free (block);
}
