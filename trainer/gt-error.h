/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gt-error.h: the one way the training library records a failure: a
 * printf-style message written into a fixed buffer (a trainer's, or a
 * backend's), and the GtStatus handed back to return. trainer.c
 * (gt_trainer_fail) and the CUDA backend (fail) both go through it. */
#ifndef GT_ERROR_H
#define GT_ERROR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline int gt_error_set (char *buffer, size_t size, int status,
    const char *format, ...) __attribute__ ((format (printf, 4, 5)));

/* Writes the message to @buffer (of @size bytes) and returns @status. */
static inline int
gt_error_set (char *buffer, size_t size, int status, const char *format, ...)
{
  va_list args;

  va_start (args, format);
  vsnprintf (buffer, size, format, args);
  va_end (args);
  return status;
}

#endif /* GT_ERROR_H */
