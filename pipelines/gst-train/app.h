/* app.h: the state of one gst-train run, shared by the files that drive
 * it: gst-train.c sets it up and takes it down, bus.c answers the bus and
 * signals.c Ctrl-C. The pieces they call (progress, dot dumps, the sinks)
 * keep their own state and never see this struct.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef GST_TRAIN_APP_APP_H
#define GST_TRAIN_APP_APP_H

#include "dot-dump.h"
#include "progress.h"

#include <gst/gst.h>

typedef struct
{
  GstElement *pipeline;
  GMainLoop *loop;
  /* the cudatrainsinks of the pipeline (refs) */
  GList *sinks;
  Progress progress;
  DotDumps dots;
  gint exit_status;
  /* the first error, the cause (later ones are its consequences) */
  gchar *error;
  /* a rank other than 0 of a data-parallel job: errors and warnings only */
  gboolean follower;
  /* "rank R: " before every line on stderr in a job of more than one rank,
   * else "" */
  gchar rank_prefix[32];

  /* signals.c: Ctrl-C and SIGTERM */
  guint signal_sources[2];
  gint interrupts;
  /* under eos_lock: send_eos has not returned (eos_done when it does) */
  gboolean eos_in_flight;
  GMutex eos_lock;
  GCond eos_done;
} App;

#endif
