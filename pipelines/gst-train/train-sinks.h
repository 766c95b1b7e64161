/* train-sinks.h: the cudatrainsinks of a pipeline, as gst-train sees them.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef GST_TRAIN_APP_TRAIN_SINKS_H
#define GST_TRAIN_APP_TRAIN_SINKS_H

#include <gst/gst.h>

#define TRAIN_SINK_FACTORY "cudatrainsink"

/* Every cudatrainsink in @pipeline, in bins too (refs). */
GList *find_train_sinks (GstElement *pipeline);
/* Whether @sink evaluates (mode=eval) rather than trains. */
gboolean sink_evaluates (GstElement *sink);
/* Asks every sink of @sinks that has the "stop" action signal to finish its
 * step in flight, write its final statistics and checkpoint and end the
 * stream without training on what is still queued. Returns how many did. */
gint stop_train_sinks (GList *sinks);

#endif
