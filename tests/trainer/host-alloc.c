/* host-alloc.c: gt_host_alloc, the batch memory that needs no trainer:
 * 64-byte aligned, writable to its last byte, page-locked exactly when a
 * CUDA device is usable, NULL for a size that cannot be met, and freed by
 * gt_host_free (LeakSanitizer and the ASan build check that). */
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
  for (i = 0; i < sizeof (sizes) / sizeof (sizes[0]); i++) {
    int pinned = -1;
    unsigned char *memory = gt_host_alloc (sizes[i], &pinned);
    char what[128];

    snprintf (what, sizeof (what), "%zu bytes: allocated", sizes[i]);
    check (memory != NULL, what);
    if (memory == NULL)
      continue;
    snprintf (what, sizeof (what), "%zu bytes: 64-byte aligned", sizes[i]);
    check ((uintptr_t)memory % 64 == 0, what);
    snprintf (what, sizeof (what),
        "%zu bytes: page-locked iff a device is usable", sizes[i]);
    check (pinned == usable, what);
    memset (memory, 0xa5, sizes[i]);
    check (
        sizes[i] == 0 || memory[sizes[i] - 1] == 0xa5, "writable to the end");
    gt_host_free (memory);
  }
  check (
      gt_host_alloc (SIZE_MAX - 8, NULL) == NULL, "an impossible size: NULL");
  gt_host_free (NULL);
  return failures ? 1 : 0;
}
