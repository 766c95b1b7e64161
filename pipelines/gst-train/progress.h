/* progress.h: gst-train's progress lines, closing line and JSON summary,
 * from the cudatrainsinks' messages.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef GST_TRAIN_APP_PROGRESS_H
#define GST_TRAIN_APP_PROGRESS_H

#include <gst/gst.h>

typedef struct
{
  /* the cudatrainsinks of the pipeline (not owned) */
  GList *sinks;
  /* no progress lines (--quiet, or a rank other than 0) */
  gboolean quiet;
  /* when the run started (g_get_monotonic_time), for the summary */
  gint64 start;
  /* the last step each sink reported (sink name -> guint64 *) */
  GHashTable *last_steps;
  GstStructure *last_stats;
  GstStructure *eval_result;
  gboolean played;
} Progress;

void progress_init (
    Progress *progress, GList *sinks, gboolean quiet, gint64 start);
void progress_clear (Progress *progress);

/* The pipeline reached PLAYING: the first time, before any progress line,
 * says that it runs and when the first line will come. */
void progress_on_playing (Progress *progress);
/* A train-stats @message (structure @s): remembers it and its step, prints
 * the progress line (and before the first, what the trainer runs on). */
void progress_on_train_stats (
    Progress *progress, GstMessage *message, const GstStructure *s);
/* An eval-result structure: remembers it and prints the result line. */
void progress_on_eval_result (Progress *progress, const GstStructure *s);

/* The line that closes each sink's run for a run that ended with
 * @exit_status (0, or 130 when aborted; nothing after an error, 1). */
void progress_print_closing (Progress *progress, gint exit_status);
/* Writes the JSON summary to @path: @exit_status, the seconds since start,
 * @error_text (or null), the last train-stats and the eval result. FALSE
 * (said on stderr) when it could not be written. */
gboolean progress_write_summary (Progress *progress, gint exit_status,
    const gchar *error_text, const gchar *path);

#endif
