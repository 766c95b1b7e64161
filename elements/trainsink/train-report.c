/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-report.c: the statistics and JSON declared in train-report.h. */
#include "train-report.h"

#include <math.h>
#include <string.h>

#define USEC_PER_SEC 1e6

void
train_stats_init (TrainStats *stats, gint64 now)
{
  memset (stats, 0, sizeof (*stats));
  stats->run_start = now;
}

void
train_stats_begin_interval (TrainStats *stats, gint64 now)
{
  stats->interval_start = now;
  stats->steps = 0;
  stats->loss_sum = 0;
  stats->interval_images = stats->interval_fresh = 0;
  stats->step_seconds = stats->busy_seconds = stats->wait_seconds = 0;
  stats->comm_seconds = 0;
  stats->sink_memory_steps = stats->pinned_steps = 0;
  stats->correct_top1 = stats->correct_top5 = stats->scored_images = 0;
}

void
train_stats_add_wait (TrainStats *stats, gint64 now)
{
  if (stats->batch_done)
    stats->wait_seconds += (now - stats->batch_done) / USEC_PER_SEC;
}

void
train_stats_batch_done (TrainStats *stats, gint64 now)
{
  stats->batch_done = now;
}

void
train_stats_add_step (TrainStats *stats, const TrainStepStats *step)
{
  stats->images += step->images;
  stats->fresh_images += step->fresh;
  stats->lr = step->lr;
  stats->steps++;
  stats->loss_sum += step->loss;
  stats->interval_images += step->images;
  stats->interval_fresh += step->fresh;
  stats->step_seconds += step->seconds;
  stats->busy_seconds += step->busy;
  stats->comm_seconds += step->comm;
  stats->sink_memory_steps += step->in_sink_memory ? 1 : 0;
  stats->pinned_steps += step->pinned ? 1 : 0;
  stats->correct_top1 += step->correct_top1;
  stats->correct_top5 += step->correct_top5;
  stats->scored_images += step->scored;
}

gdouble
train_stats_epoch (const TrainStats *stats, guint64 epoch_samples)
{
  return epoch_samples
      ? (gdouble)(stats->fresh_before + stats->fresh_images) / epoch_samples
      : 0.0;
}

gdouble
train_stats_elapsed (const TrainStats *stats, gint64 now)
{
  return (now - stats->run_start) / USEC_PER_SEC;
}

void
train_stats_take_report (TrainStats *stats, guint64 epoch_samples, gint64 now,
    TrainStatsReport *report)
{
  gdouble wall = (now - stats->interval_start) / USEC_PER_SEC;
  guint steps = MAX (1, stats->steps);

  /* a clock that did not move still gives finite rates */
  if (wall <= 0)
    wall = 1e-9;
  report->epoch = train_stats_epoch (stats, epoch_samples);
  report->loss = stats->loss_sum / steps;
  report->lr = stats->lr;
  report->top1 = stats->scored_images
      ? (gdouble)stats->correct_top1 / stats->scored_images
      : 0.0;
  report->top5 = stats->scored_images
      ? (gdouble)stats->correct_top5 / stats->scored_images
      : 0.0;
  report->images = stats->images;
  report->fresh_images = stats->fresh_images;
  report->images_per_second = stats->interval_images / wall;
  report->fresh_images_per_second = stats->interval_fresh / wall;
  report->echo_factor =
      stats->fresh_images ? (gdouble)stats->images / stats->fresh_images : 0.0;
  report->step_time = stats->step_seconds / steps;
  report->busy_time = stats->busy_seconds / steps;
  report->sink_memory_fraction = (gdouble)stats->sink_memory_steps / steps;
  report->pinned_fraction = (gdouble)stats->pinned_steps / steps;
  report->data_wait_fraction = MIN (1.0, stats->wait_seconds / wall);
  report->comm_time = stats->comm_seconds;
  report->slowest_rank = stats->slowest_rank;
  report->straggler_wait = stats->straggler_wait_seconds / steps;
  report->time = train_stats_elapsed (stats, now);
  train_stats_begin_interval (stats, now);
}

/* Starts the next member: its separator and "@name": . */
static void
train_json_object_add_name (TrainJsonObject *object, const gchar *name)
{
  if (object->n_members++)
    g_string_append (object->text, ", ");
  train_json_append_string (object->text, name);
  g_string_append (object->text, ": ");
}

void
train_json_object_begin (TrainJsonObject *object, GString *text)
{
  object->text = text;
  object->n_members = 0;
  g_string_append_c (text, '{');
}

void
train_json_object_add_string (
    TrainJsonObject *object, const gchar *name, const gchar *value)
{
  train_json_object_add_name (object, name);
  train_json_append_string (object->text, value);
}

void
train_json_object_add_value (
    TrainJsonObject *object, const gchar *name, const GValue *value)
{
  gchar number[G_ASCII_DTOSTR_BUF_SIZE];

  train_json_object_add_name (object, name);
  if (G_VALUE_HOLDS_DOUBLE (value) && isfinite (g_value_get_double (value)))
    g_string_append (object->text,
        g_ascii_formatd (
            number, sizeof (number), "%.6g", g_value_get_double (value)));
  else if (G_VALUE_HOLDS_UINT64 (value))
    g_string_append_printf (
        object->text, "%" G_GUINT64_FORMAT, g_value_get_uint64 (value));
  else if (G_VALUE_HOLDS_INT (value))
    g_string_append_printf (object->text, "%d", g_value_get_int (value));
  else if (G_VALUE_HOLDS_UINT (value))
    g_string_append_printf (object->text, "%u", g_value_get_uint (value));
  else if (G_VALUE_HOLDS_STRING (value) && g_value_get_string (value))
    train_json_append_string (object->text, g_value_get_string (value));
  else
    g_string_append (object->text, "null");
}

gboolean
train_json_object_add_field (GQuark field, const GValue *value, gpointer object)
{
  train_json_object_add_value (object, g_quark_to_string (field), value);
  return TRUE;
}

void
train_json_object_end (TrainJsonObject *object)
{
  g_string_append_c (object->text, '}');
}

void
train_json_append_string (GString *json, const gchar *text)
{
  const guchar *c;

  g_string_append_c (json, '"');
  for (c = (const guchar *)text; *c; c++) {
    if (*c == '"' || *c == '\\')
      g_string_append_printf (json, "\\%c", *c);
    else if (*c < 0x20)
      g_string_append_printf (json, "\\u%04x", *c);
    else
      g_string_append_c (json, *c);
  }
  g_string_append_c (json, '"');
}
