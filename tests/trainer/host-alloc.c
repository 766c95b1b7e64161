/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* host-alloc.c: gt_host_alloc, the batch memory that needs no trainer:
 * 64-byte aligned, writable to its last byte, page-locked exactly when the
 * CUDA device asked for is usable (never for gpu_id -1), NULL for a size
 * that cannot be met, and freed by gt_host_free (LeakSanitizer and the
 * ASan build check that). */
#include "trainer.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void
check (int condition, const char *what)
{
  printf ("%s: %s\n", condition ? "ok" : "FAIL", what);
  failures += !condition;
}

int
main (void)
{
  size_t sizes[] = { 0, 1, 63, 64, 1000, 3 * 224 * 224 * 256 };
  char why[512] = "";
  int usable = gt_cuda_device_count (why, sizeof (why)) > 0;
  unsigned i;

  printf ("CUDA device usable: %s\n", usable ? "yes" : why);
  for (i = 0; i < 2 * sizeof (sizes) / sizeof (sizes[0]); i++) {
    /* device 0, then -1 (for the CPU: never page-locked) */
    int gpu_id = i % 2 ? -1 : 0, pinned = -1;
    size_t size = sizes[i / 2];
    unsigned char *memory = gt_host_alloc (size, gpu_id, &pinned);
    char what[128];

    snprintf (
        what, sizeof (what), "%zu bytes, gpu %d: allocated", size, gpu_id);
    check (memory != NULL, what);
    if (memory == NULL)
      continue;
    snprintf (what, sizeof (what), "%zu bytes: 64-byte aligned", size);
    check ((uintptr_t)memory % 64 == 0, what);
    snprintf (what, sizeof (what),
        "%zu bytes, gpu %d: page-locked iff that device is usable", size,
        gpu_id);
    check (pinned == (gpu_id == 0 && usable), what);
    memset (memory, 0xa5, size);
    check (size == 0 || memory[size - 1] == 0xa5, "writable to the end");
    gt_host_free (memory);
  }
  check (gt_host_alloc (SIZE_MAX - 8, 0, NULL) == NULL,
      "an impossible size: NULL");
  gt_host_free (NULL);
  return failures ? 1 : 0;
}
