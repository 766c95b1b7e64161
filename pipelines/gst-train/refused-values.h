/* refused-values.h: property values the launch line sets and an element
 * refuses, reported as errors rather than GLib's warnings; and the launch
 * line's misspellings (a property or element that does not exist, a value
 * of the wrong kind), reported with what comes closest.
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

/* Prints @error of gst_parse_launch on stderr in the user's words, when it
 * is a property the element does not have (with the names it has that
 * come closest: "did you mean max-steps?"), a value the property cannot
 * take (with the values or range it takes) or an element that does not
 * exist (with the closest names); @pipeline is what gst_parse_launch
 * returned, or NULL. Returns 2 (bad usage) for a property or value, 1 for
 * an element or any other error, whose text it prints as it is. Each line
 * starts with @prefix (a rank's). */
gint report_parse_error (
    GstElement *pipeline, const GError *error, const gchar *prefix);

#endif
