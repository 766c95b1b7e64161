/* progress.c: what gst-train prints while the pipeline runs and what it
 * leaves when it ends: a line when it plays (and when the first progress
 * line will come), the compute the trainer runs on, a progress line per
 * train-stats message, the eval result, the line that closes the run (the
 * step it stopped at, the checkpoint) and the JSON summary (--summary).
 * It reads the cudatrainsinks' messages and properties; it sends them
 * nothing.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "progress.h"

#include "train-report.h"
#include "train-sinks.h"

static gdouble
field_double (const GstStructure *s, const gchar *name)
{
  gdouble value = 0;

  gst_structure_get_double (s, name, &value);
  return value;
}

static void
print_progress (Progress *progress, const GstStructure *s)
{
  gdouble straggler = field_double (s, "straggler-wait");
  gint slowest = 0, world_size = 1;
  guint64 step = 0;
  GString *line;

  if (progress->quiet)
    return;
  gst_structure_get_uint64 (s, "step", &step);
  line = g_string_new (NULL);
  g_string_printf (line,
      "step %" G_GUINT64_FORMAT " | epoch %.2f | loss %.4f | lr %.4g | "
      "%.1f img/s | fresh %.1f img/s | echo x%.2f | data wait %.0f%%",
      step, field_double (s, "epoch"), field_double (s, "loss"),
      field_double (s, "lr"), field_double (s, "images-per-second"),
      field_double (s, "fresh-images-per-second"),
      field_double (s, "echo-factor"),
      100.0 * field_double (s, "data-wait-fraction"));
  /* a straggler, once the others wait for it more than a tenth of a step:
   * the rank to look at before it stalls the job */
  gst_structure_get_int (s, "slowest-rank", &slowest);
  gst_structure_get_int (s, "world-size", &world_size);
  if (world_size > 1 && straggler > 0.1 * field_double (s, "step-time"))
    g_string_append_printf (line,
        " | slowest rank %d: the others wait %.0f ms a step", slowest,
        straggler * 1e3);
  g_print ("%s\n", line->str);
  g_string_free (line, TRUE);
}

/* "gst-train: ", or "gst-train: NAME: " when there are several sinks. */
static gchar *
sink_prefix (Progress *progress, GstElement *sink)
{
  if (progress->sinks && progress->sinks->next)
    return g_strdup_printf ("gst-train: %s: ", GST_OBJECT_NAME (sink));
  return g_strdup ("gst-train: ");
}

/* Once PLAYING, before the first progress line (which can take minutes on
 * the CPU): says that it runs and when the first line will come. */
void
progress_on_playing (Progress *progress)
{
  GList *l;

  if (progress->played)
    return;
  progress->played = TRUE;
  if (progress->quiet || progress->last_stats)
    return;
  for (l = progress->sinks; l; l = l->next) {
    gchar *prefix = sink_prefix (progress, l->data);
    guint interval = 0;

    if (sink_evaluates (l->data)) {
      g_print ("%splaying; evaluating, the result comes at the end of the "
               "data\n",
          prefix);
    } else {
      g_object_get (l->data, "stats-interval", &interval, NULL);
      if (interval == 0)
        g_print (
            "%splaying; progress only at the end (stats-interval=0)\n", prefix);
      else
        g_print ("%splaying; the first progress line comes after "
                 "stats-interval steps (%u)\n",
            prefix, interval);
    }
    g_free (prefix);
  }
}

/* Before the first progress line: what the trainer runs on (the BLAS and
 * its kernels on the CPU, the GPU and cuDNN), from train-stats. */
static void
announce_compute (
    Progress *progress, GstMessage *message, const GstStructure *stats)
{
  const gchar *compute = gst_structure_get_string (stats, "compute");
  gchar *prefix;

  if (progress->quiet || compute == NULL || *compute == '\0')
    return;
  prefix = sink_prefix (progress, GST_ELEMENT (GST_MESSAGE_SRC (message)));
  g_print ("%straining on %s\n", prefix, compute);
  g_free (prefix);
}

void
progress_init (Progress *progress, GList *sinks, gboolean quiet, gint64 start)
{
  progress->sinks = sinks;
  progress->quiet = quiet;
  progress->start = start;
  progress->last_steps =
      g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
}

void
progress_clear (Progress *progress)
{
  if (progress->last_stats)
    gst_structure_free (progress->last_stats);
  if (progress->eval_result)
    gst_structure_free (progress->eval_result);
  g_hash_table_unref (progress->last_steps);
}

void
progress_on_train_stats (
    Progress *progress, GstMessage *message, const GstStructure *s)
{
  guint64 *step = g_new0 (guint64, 1);

  gst_structure_get_uint64 (s, "step", step);
  g_hash_table_replace (progress->last_steps,
      g_strdup (GST_OBJECT_NAME (GST_MESSAGE_SRC (message))), step);
  if (progress->last_stats)
    gst_structure_free (progress->last_stats);
  else
    announce_compute (progress, message, s);
  progress->last_stats = gst_structure_copy (s);
  print_progress (progress, s);
}

void
progress_on_eval_result (Progress *progress, const GstStructure *s)
{
  guint64 images = 0;

  if (progress->eval_result)
    gst_structure_free (progress->eval_result);
  progress->eval_result = gst_structure_copy (s);
  gst_structure_get_uint64 (s, "images", &images);
  g_print ("eval: %" G_GUINT64_FORMAT " images, loss %.4f, top-1 "
           "%.2f%%, top-5 %.2f%%\n",
      images, field_double (s, "loss"), 100 * field_double (s, "top1"),
      100 * field_double (s, "top5"));
}

/* Whether @sink wrote a checkpoint in the run that just ended: its
 * checkpoint-step, when it has that property (an older sink, which does
 * not, wrote one at every end). */
static gboolean
wrote_checkpoint (GstElement *sink)
{
  GParamSpec *pspec = g_object_class_find_property (
      G_OBJECT_GET_CLASS (sink), "checkpoint-step");
  gint64 step = -1;

  if (pspec == NULL || pspec->value_type != G_TYPE_INT64)
    return TRUE;
  g_object_get (sink, "checkpoint-step", &step, NULL);
  return step >= 0;
}

/* The line that closes a training run: the step it stopped at and where the
 * final checkpoint is, or that none was written (a run that trained no step
 * and had none to write, such as one resumed at max-steps). An eval run has
 * its result line instead, a failed run its error. */
void
progress_print_closing (Progress *progress, gint exit_status)
{
  GList *l;

  if (exit_status == 1)
    return;
  for (l = progress->sinks; l; l = l->next) {
    const guint64 *step =
        g_hash_table_lookup (progress->last_steps, GST_OBJECT_NAME (l->data));
    gchar *prefix, *location = NULL, *where;

    if (sink_evaluates (l->data))
      continue;
    prefix = sink_prefix (progress, l->data);
    g_object_get (l->data, "checkpoint-location", &location, NULL);
    where = step ? g_strdup_printf ("at step %" G_GUINT64_FORMAT, *step)
                 : g_strdup ("before training a step");
    /* aborted: the step is the last one reported, and whatever the sink
     * was writing was not waited for */
    if (exit_status == 130 && step)
      g_print ("%saborted; the last step reported was %" G_GUINT64_FORMAT
               "; the final checkpoint was not waited for\n",
          prefix, *step);
    else if (exit_status == 130)
      g_print ("%saborted before a step was reported\n", prefix);
    else if (location && !wrote_checkpoint (l->data))
      g_print ("%sstopped %s; no checkpoint written to %s\n", prefix, where,
          location);
    else if (location)
      g_print (
          "%sstopped %s; checkpoint written to %s\n", prefix, where, location);
    else
      g_print ("%sstopped %s; no checkpoint-location set\n", prefix, where);
    g_free (where);
    g_free (location);
    g_free (prefix);
  }
}

/* Appends ,\n  "@key": {fields of @s} to the summary. */
static void
append_fields (GString *json, const gchar *key, const GstStructure *s)
{
  TrainJsonObject object;

  g_string_append (json, ",\n  ");
  train_json_append_string (json, key);
  g_string_append (json, ": ");
  train_json_object_begin (&object, json);
  gst_structure_foreach (s, train_json_object_add_field, &object);
  train_json_object_end (&object);
}

gboolean
progress_write_summary (Progress *progress, gint exit_status,
    const gchar *error_text, const gchar *path)
{
  GString *json = g_string_new ("{\n");
  GError *error = NULL;
  gboolean ok;

  g_string_append_printf (json,
      "  \"exit-status\": %d,\n  \"seconds\": %.3f,\n", exit_status,
      (g_get_monotonic_time () - progress->start) / 1e6);
  g_string_append (json, "  \"error\": ");
  if (error_text)
    train_json_append_string (json, error_text);
  else
    g_string_append (json, "null");
  if (progress->last_stats)
    append_fields (json, "last-train-stats", progress->last_stats);
  if (progress->eval_result)
    append_fields (json, "eval-result", progress->eval_result);
  g_string_append (json, "\n}\n");
  ok = g_file_set_contents (path, json->str, -1, &error);
  if (!ok) {
    g_printerr ("could not write the summary: %s\n", error->message);
    g_error_free (error);
  }
  g_string_free (json, TRUE);
  return ok;
}
