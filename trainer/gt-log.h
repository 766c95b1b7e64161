/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gt-log.h: the one way the training library reports what it did not fail
 * on (a fallback it took, a choice that costs determinism) or what it dies
 * of: a printf-style message handed to the trainer's GtLogFunc
 * (trainer.h), or, without one, printed as the library always has. The
 * CUDA and MPI modules report through it too. */
#ifndef GT_LOG_H
#define GT_LOG_H

#include "trainer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Formats the message and hands it to @config's log_func, or, when
 * @config or its log_func is NULL (a process-wide message, one made
 * without a trainer at hand), prints an error or warning to stderr as
 * "gst-train: MESSAGE" and drops the rest. */
void gt_log (const GtTrainerConfig *config, GtLogLevel level,
    const char *format, ...) __attribute__ ((format (printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif /* GT_LOG_H */
