/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gpu-skip.h: whether a GPU test can run here (cuda-parity.c, cuda-dist.c,
 * parity.c --backend cuda): 77, meson's skip, with the reason printed,
 * where the build has no CUDA backend or the machine no usable device;
 * else 0. Header-only: each test is one program. */
#ifndef GT_TEST_GPU_SKIP_H
#define GT_TEST_GPU_SKIP_H

#include "trainer.h"

#include <stdio.h>

static inline int
gpu_skip (void)
{
  char why[512] = "";

  if (!gt_cuda_built ()) {
    printf ("SKIP: this build has no CUDA backend\n");
    return 77;
  }
  if (gt_cuda_device_count (why, sizeof (why)) <= 0) {
    printf ("SKIP: %s\n", why);
    return 77;
  }
  return 0;
}

#endif /* GT_TEST_GPU_SKIP_H */
