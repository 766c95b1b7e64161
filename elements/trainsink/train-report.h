/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-report.h: what a training run reports, shared by cudatrainsink and
 * the gst-train application.
 *
 * GLib only (no GStreamer): the statistics the sink keeps over a run and
 * over each stats interval, and the JSON it writes them as. A GstStructure
 * is written with gst_structure_foreach (s, train_json_object_add_field,
 * &object): the callback has the GstStructureForeachFunc signature. */
#ifndef __GST_TRAIN_REPORT_H__
#define __GST_TRAIN_REPORT_H__

#include <glib-object.h>
#include <stdio.h>

G_BEGIN_DECLS

/* ---- Statistics ---- */

/* What a run counts: over the whole run, and over the interval since the
 * last report. Times are g_get_monotonic_time() microseconds. */
typedef struct
{
  guint64 images;       /* trained on, echo repeats included */
  guint64 fresh_images; /* of those, the ones no echo repeated */
  /* fresh images of the runs this one resumed, for the epoch only */
  guint64 fresh_before;
  gdouble lr; /* of the last step */
  gint64 run_start;
  gint64 batch_done; /* when the last batch was handed back; 0: none yet */

  gint64 interval_start;
  guint steps;
  gdouble loss_sum;
  guint64 interval_images;
  guint64 interval_fresh;
  gdouble step_seconds;
  gdouble busy_seconds;    /* the trainer computing, as it measures it */
  gdouble wait_seconds;    /* waiting for the next batch */
  gdouble comm_seconds;    /* data-parallel: reducing, or waiting for it */
  guint sink_memory_steps; /* batches whose images were in the sink's pool */
  guint pinned_steps;      /* ... in page-locked memory */
  /* images whose label was the top prediction, or among the top five, and
   * the images they are out of (in a job, every rank's: the trainer adds
   * them up in the step) */
  guint64 correct_top1;
  guint64 correct_top5;
  guint64 scored_images;
  /* data-parallel: the rank the others waited for over the interval, as
   * the last gather found it (gstcudatrainsink-dist.c), and the seconds
   * of the interval the others waited for it, on average; 0 alone */
  gint slowest_rank;
  gdouble straggler_wait_seconds;
} TrainStats;

/* The fields of a train-stats report, as cudatrainsink documents them
 * (the step, which the trainer counts, aside). */
typedef struct
{
  gdouble epoch;
  gdouble loss;
  gdouble lr;
  gdouble top1;
  gdouble top5;
  guint64 images;
  guint64 fresh_images;
  gdouble images_per_second;
  gdouble fresh_images_per_second;
  gdouble echo_factor;
  gdouble step_time;
  gdouble busy_time;
  gdouble sink_memory_fraction;
  gdouble pinned_fraction;
  gdouble data_wait_fraction;
  gdouble comm_time;
  gint slowest_rank;
  gdouble straggler_wait; /* per step */
  gdouble time;
} TrainStatsReport;

/* Zeroes @stats for a run that starts at @now. */
void train_stats_init (TrainStats *stats, gint64 now);
/* Starts the interval the next report covers at @now. */
void train_stats_begin_interval (TrainStats *stats, gint64 now);
/* A batch arrived at @now: the time since the last one was handed back
 * (train_stats_batch_done) was spent waiting for it. */
void train_stats_add_wait (TrainStats *stats, gint64 now);
/* The sink handed a batch back at @now. */
void train_stats_batch_done (TrainStats *stats, gint64 now);
/* A step is done: its @images (@fresh of them not repeats), @loss and
 * @lr, how many of the @scored images (every rank's in a job) had their
 * label first (@correct_top1) or in the top five (@correct_top5), the
 * @seconds from its start to its end, the @busy seconds the trainer says
 * it computed, the @comm seconds it spent on the ranks' reduction, and
 * where its images were. */
typedef struct
{
  guint images;
  guint fresh;
  gdouble loss;
  gdouble lr;
  guint correct_top1;
  guint correct_top5;
  guint64 scored;
  gdouble seconds;
  gdouble busy;
  gdouble comm;
  gboolean in_sink_memory;
  gboolean pinned;
} TrainStepStats;
void train_stats_add_step (TrainStats *stats, const TrainStepStats *step);
/* Fresh images so far, those before a resume included (fresh_before),
 * / @epoch_samples; 0 when the epoch size is unknown (0). */
gdouble train_stats_epoch (const TrainStats *stats, guint64 epoch_samples);
/* Seconds from the start of the run to @now. */
gdouble train_stats_elapsed (const TrainStats *stats, gint64 now);
/* Fills @report for the interval that ends at @now (it must hold a step)
 * and starts the next one. */
void train_stats_take_report (TrainStats *stats, guint64 epoch_samples,
    gint64 now, TrainStatsReport *report);

/* ---- JSON ---- */

/* A JSON object being appended to a GString, member by member, on one
 * line: {"name": value, ...}. */
typedef struct
{
  GString *text;
  guint n_members;
} TrainJsonObject;

/* Opens an object at the end of @text. */
void train_json_object_begin (TrainJsonObject *object, GString *text);
/* Adds "@name": "@value" (escaped). */
void train_json_object_add_string (
    TrainJsonObject *object, const gchar *name, const gchar *value);
/* Adds "@name": @value: a double as %.6g (null when not finite, as JSON
 * has no NaN or infinity), an integer (gint, guint, guint64) as it is, a
 * string as a JSON string, any other type (or a NULL string) as null. */
void train_json_object_add_value (
    TrainJsonObject *object, const gchar *name, const GValue *value);
/* train_json_object_add_value as a GstStructureForeachFunc: @object is the
 * TrainJsonObject. Always TRUE. */
gboolean train_json_object_add_field (
    GQuark field, const GValue *value, gpointer object);
/* Closes the object. */
void train_json_object_end (TrainJsonObject *object);

/* Appends @text as a JSON string: quotes, backslashes and control
 * characters escaped, UTF-8 as it is. */
void train_json_append_string (GString *json, const gchar *text);

G_END_DECLS

#endif /* __GST_TRAIN_REPORT_H__ */
