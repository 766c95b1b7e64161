/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-device-probe.c: reports the CUDA devices the trainer can use; exits
 * 77 (meson's "skipped") where there is none, so that CI without a GPU stays
 * green and a GPU machine shows what it found. */
#include "trainer.h"

#include <stdio.h>
#include <string.h>

int
main (void)
{
  char why[512] = "";
  int count = gt_cuda_device_count (why, sizeof (why));
  int i;

  if (count <= 0) {
    printf ("SKIP: %s\n", why);
    return 77;
  }
  for (i = 0; i < count; i++) {
    GtCudaDeviceInfo info;

    if (gt_cuda_device_info (i, &info, why, sizeof (why)) != 0) {
      fprintf (stderr, "FAIL: %s\n", why);
      return 1;
    }
    if (info.name[0] == '\0' || info.major < 1 || info.total_memory == 0) {
      fprintf (stderr, "FAIL: implausible device %d: \"%s\" sm_%d%d\n", i,
          info.name, info.major, info.minor);
      return 1;
    }
    printf ("device %d: %s, sm_%d%d, %zu MiB; driver supports CUDA %d.%d, "
            "runtime %d.%d, cuDNN %d\n",
        i, info.name, info.major, info.minor, info.total_memory >> 20,
        info.driver_version / 1000, info.driver_version % 1000 / 10,
        info.runtime_version / 1000, info.runtime_version % 1000 / 10,
        info.cudnn_version);
  }
  return 0;
}
