/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-errors.cu: how the CUDA backend records a failed call: the message
 * in cuda->why, the GtStatus returned (cuda-backend-private.h's CUDA_TRY
 * and CUBLAS_TRY end here). */
#include "cuda-backend-private.h"

#include <stdio.h>
#include <string.h>

int
cuda_fail (CudaBackend *cuda, cudaError_t err, const char *call)
{
  int length = (int)strcspn (call, "(");

  snprintf (cuda->why, sizeof (cuda->why), "CUDA: %.*s failed: %s (%s)", length,
      call, cudaGetErrorString (err), cudaGetErrorName (err));
  cudaGetLastError (); /* clear it where it is not sticky */
  return err == cudaErrorMemoryAllocation ? GT_ERROR_NO_MEMORY
                                          : GT_ERROR_DEVICE;
}

int
cublas_fail (CudaBackend *cuda, cublasStatus_t status, const char *call)
{
  int length = (int)strcspn (call, "(");

  snprintf (cuda->why, sizeof (cuda->why), "cuBLAS: %.*s failed: %s", length,
      call, cublasGetStatusString (status));
  return status == CUBLAS_STATUS_ALLOC_FAILED ? GT_ERROR_NO_MEMORY
                                              : GT_ERROR_DEVICE;
}

int
cuda_report (CudaBackend *cuda, int status, char *why, size_t why_size)
{
  if (status != GT_OK && why != NULL && why_size > 0)
    snprintf (why, why_size, "%s", cuda->why);
  return status;
}
