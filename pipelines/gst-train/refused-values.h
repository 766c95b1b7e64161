/* refused-values.h: property values the launch line sets and an element
 * refuses, reported as errors rather than GLib's warnings.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef GST_TRAIN_APP_REFUSED_VALUES_H
#define GST_TRAIN_APP_REFUSED_VALUES_H

#include <gst/gst.h>

/* GLib warns about a property value out of range, sets nothing and goes on:
 * while the launch line is parsed, such warnings (and criticals) are
 * collected instead, to be reported as errors. */
typedef struct
{
  GPtrArray *messages;
  guint handlers[2];
} ParseLog;

/* Collects GLib-GObject's and GStreamer's warnings and criticals into
 * @log->messages (a new array, the caller's to unref) from now on. */
void parse_log_begin (ParseLog *log);
/* Removes the handlers: the default handler is back. */
void parse_log_end (ParseLog *log);

/* Prints one collected @message on stderr as an error: which element of
 * @pipeline, which property, the value as written in @launch and the range
 * the property takes. */
void report_refused_value (
    GstElement *pipeline, const gchar *launch, const gchar *message);

#endif
