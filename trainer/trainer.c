/* trainer.c: backend-independent entry points of the training library. */
#include "trainer.h"

#include <stdio.h>

#ifndef GT_HAVE_CUDA
int
gt_cuda_built (void)
{
  return 0;
}

int
gt_cuda_device_count (char *why, size_t why_size)
{
  if (why != NULL && why_size > 0)
    snprintf (why, why_size, "gst-train was built without CUDA");
  return 0;
}

int
gt_cuda_device_info (
    int device_id, GtCudaDeviceInfo *info, char *why, size_t why_size)
{
  (void)device_id;
  (void)info;
  if (why != NULL && why_size > 0)
    snprintf (why, why_size, "gst-train was built without CUDA");
  return -1;
}
#endif
