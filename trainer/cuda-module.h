/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-module.h: the contract between the training library and its CUDA
 * backend, which is a separate module (libgsttrain-cuda.so) opened at run
 * time, as gst-plugins-bad's nvcodec opens CUDA. A build made with the CUDA
 * toolkit thus still trains on the CPU on a machine without the CUDA
 * libraries: only the module needs cuDNN, cuBLAS and the CUDA runtime.
 *
 * The module exports one symbol, gt_cuda_module; cuda-loader.c finds the
 * module, opens it and checks that it was built from the same headers. */
#ifndef GT_CUDA_MODULE_H
#define GT_CUDA_MODULE_H

#include "backend.h"

/* Raise when GtCudaModule or what it points to changes meaning, or a
 * function of the library the module calls does (8: module-loader.h's
 * take a GtEnvVar). */
#define GT_CUDA_MODULE_ABI 8
#define GT_CUDA_MODULE_SYMBOL "gt_cuda_module"

typedef struct
{
  int abi;                 /* GT_CUDA_MODULE_ABI */
  size_t ops_size;         /* sizeof (GtBackendOps) */
  size_t config_size;      /* sizeof (GtTrainerConfig) */
  size_t spec_size;        /* sizeof (GtModelSpec) */
  size_t device_info_size; /* sizeof (GtCudaDeviceInfo) */
  const GtBackendOps *backend;
  int (*device_count) (char *why, size_t why_size);
  int (*device_info) (
      int device_id, GtCudaDeviceInfo *info, char *why, size_t why_size);
  /* Page-locked host memory usable by every device, allocated with
   * @device current, or NULL. */
  void *(*host_alloc) (size_t size, int device);
  void (*host_free) (void *memory);
  /* How many fp32 convolution directions, over every trainer of the
   * process so far, took a non-deterministic algorithm because cuDNN had
   * no deterministic one that fits (fp32 is then no longer bit-exact from
   * run to run); the last one described in @last. For the tests: the
   * library does not ask. */
  int (*nondeterministic_choices) (char *last, size_t last_size);
  /* gt_cuda_nccl_version: opens NCCL (cuda/cuda-nccl.h), no GPU needed */
  int (*nccl_version) (
      char *path, size_t path_size, char *why, size_t why_size);
} GtCudaModule;

/* The CUDA backend's operations, opening the module on first use; NULL
 * with the reason in @why (the module or one of its libraries missing,
 * a module from another build). */
const GtBackendOps *gt_cuda_backend_ops (char *why, size_t why_size);

#endif /* GT_CUDA_MODULE_H */
