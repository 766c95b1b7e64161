/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* log.c: gt_log (gt-log.h): a trainer's messages to its GtLogFunc, or to
 * stderr. */
#include "gt-log.h"

#include <stdarg.h>
#include <stdio.h>

/* What a trainer without a log_func, or the library outside any trainer,
 * does with a message: the text it always printed. */
static void
log_to_stderr (GtLogLevel level, const char *message, void *user_data)
{
  if (level > GT_LOG_WARNING)
    return;
  fprintf (stderr, "gst-train: %s\n", message);
  fflush (stderr);
}

void
gt_log (
    const GtTrainerConfig *config, GtLogLevel level, const char *format, ...)
{
  GtLogFunc log_func = log_to_stderr;
  void *log_data = NULL;
  char message[4096]; /* the longest: a fallback quoting NCCL's reason */
  va_list args;

  if (config != NULL && config->log_func != NULL) {
    log_func = config->log_func;
    log_data = config->log_data;
  }
  va_start (args, format);
  vsnprintf (message, sizeof (message), format, args);
  va_end (args);
  log_func (level, message, log_data);
}
