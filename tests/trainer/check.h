/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* check.h: the CHECK macro of the trainer's C tests (trainer-test.c,
 * safetensors-test.c, cuda-parity.c). A failed check prints where and what
 * failed and counts in `failures`; the test goes on, and main returns
 * non-zero when any check failed. */
#ifndef GT_TEST_CHECK_H
#define GT_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(condition, ...)                                                  \
  do {                                                                         \
    if (!(condition)) {                                                        \
      fprintf (stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #condition);    \
      fprintf (stderr, __VA_ARGS__);                                           \
      fputc ('\n', stderr);                                                    \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#endif /* GT_TEST_CHECK_H */
