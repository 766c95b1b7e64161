/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gt-clock.h: the monotonic clock in seconds, which the library, its
 * modules (CUDA, MPI) and the tests time and bound their waits with.
 * Header-only, for C and CUDA alike. */
#ifndef GT_CLOCK_H
#define GT_CLOCK_H

#include <time.h>

static inline double
gt_seconds_now (void)
{
  struct timespec now;

  clock_gettime (CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

#endif /* GT_CLOCK_H */
