/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cuda-nccl-probe.c: reports the NCCL that comm-backend nccl would use,
 * which needs no GPU: "nccl: version X.Y.Z from PATH", or "nccl:
 * unavailable: REASON". Exits 0 either way (no-nccl.sh judges the line), 1
 * when the answer is not plausible. */
#include "trainer.h"

#include <stdio.h>

int
main (void)
{
  char path[1024] = "", why[1536] = "";
  int version = gt_cuda_nccl_version (path, sizeof (path), why, sizeof (why));

  if (version == 0) {
    if (why[0] == '\0') {
      fprintf (stderr, "FAIL: no NCCL, and no reason given\n");
      return 1;
    }
    printf ("nccl: unavailable: %s\n", why);
    return 0;
  }
  /* the module refuses anything older than 2.13, which all use this
   * encoding (NCCL_VERSION since 2.9) */
  if (version < 21300 || path[0] == '\0') {
    fprintf (stderr, "FAIL: implausible NCCL: version code %d from \"%s\"\n",
        version, path);
    return 1;
  }
  printf ("nccl: version %d.%d.%d from %s\n", version / 10000,
      version / 100 % 100, version % 100, path);
  return 0;
}
