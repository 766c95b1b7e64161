/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstcudatrainsink-report.c: what cudatrainsink reports: the train-stats
 * and eval-result element messages (their fields are documented in
 * gstcudatrainsink.c); the metrics file, metrics-location, which gets
 * each of them and each snapshot note as a JSON line; and the TensorBoard
 * event file in tensorboard-logdir, which gets their numbers as scalars
 * (the tags below), written at every report. The statistics and the JSON
 * are train-report.c's, the event file's format tb-writer.c's; both files
 * are this writer's alone, from open to close.
 *
 * Its state is the sink's @report (gstcudatrainsink-private.h), which only
 * this file writes. */
#include "gstcudatrainsink-private.h"
#include "tb-writer.h"

#include <errno.h>
#include <stdio.h>

#define GST_CAT_DEFAULT gst_cuda_train_sink_debug

struct _GstTrainMetrics
{
  FILE *file;
};

/* Opens @path to append JSON lines to; NULL with @error set when it cannot
 * be opened. */
static GstTrainMetrics *
gst_train_metrics_open (const gchar *path, GError **error)
{
  FILE *file = fopen (path, "a");
  int saved_errno = errno;
  GstTrainMetrics *metrics;

  if (file == NULL) {
    g_set_error_literal (error, G_FILE_ERROR,
        g_file_error_from_errno (saved_errno), g_strerror (saved_errno));
    return NULL;
  }
  metrics = g_new0 (GstTrainMetrics, 1);
  metrics->file = file;
  return metrics;
}

/* Appends @s as a JSON line, {"type": NAME, fields}, and flushes it, so
 * that a reader sees whole lines while the run goes on; nothing when
 * @metrics is NULL (no metrics-location, or not rank 0). */
static void
gst_train_metrics_write (GstTrainMetrics *metrics, const GstStructure *s)
{
  GString *line;
  TrainJsonObject object;

  if (metrics == NULL)
    return;
  line = g_string_new (NULL);
  train_json_object_begin (&object, line);
  train_json_object_add_string (&object, "type", gst_structure_get_name (s));
  gst_structure_foreach (s, train_json_object_add_field, &object);
  train_json_object_end (&object);
  fwrite (line->str, 1, line->len, metrics->file);
  fputc ('\n', metrics->file);
  fflush (metrics->file);
  g_string_free (line, TRUE);
}

static void
gst_train_metrics_close (GstTrainMetrics *metrics)
{
  fclose (metrics->file);
  g_free (metrics);
}

/* ---- TensorBoard ---- */

/* When a field goes to TensorBoard. */
typedef enum
{
  SCALAR_ALWAYS,
  SCALAR_WITH_ECHO, /* once an echo repeat was trained on: the sink sees
                     * echo only through the repeats it makes */
  SCALAR_IN_JOB,    /* in a data-parallel job of more than one rank */
} ScalarWhen;

typedef struct
{
  const gchar *field; /* of the message */
  const gchar *tag;   /* in TensorBoard */
  ScalarWhen when;
} ScalarField;

/* The train-stats fields TensorBoard shows, by group. */
static const ScalarField train_stats_scalars[] = {
  { "loss", "train/loss", SCALAR_ALWAYS },
  { "lr", "train/lr", SCALAR_ALWAYS },
  { "top1", "train/top1", SCALAR_ALWAYS },
  { "top5", "train/top5", SCALAR_ALWAYS },
  { "epoch", "train/epoch", SCALAR_ALWAYS },
  { "images-per-second", "speed/images_per_second", SCALAR_ALWAYS },
  { "fresh-images-per-second", "speed/fresh_images_per_second", SCALAR_ALWAYS },
  { "step-time", "time/step_time", SCALAR_ALWAYS },
  { "busy-time", "time/busy_time", SCALAR_ALWAYS },
  { "data-wait-fraction", "time/data_wait_fraction", SCALAR_ALWAYS },
  { "echo-factor", "echo/factor", SCALAR_WITH_ECHO },
  { "comm-time", "dist/comm_time", SCALAR_IN_JOB },
  { "slowest-rank", "dist/slowest_rank", SCALAR_IN_JOB },
};

/* The eval-result fields, at the step of the weights evaluated. */
static const ScalarField eval_result_scalars[] = {
  { "loss", "eval/loss", SCALAR_ALWAYS },
  { "top1", "eval/top1", SCALAR_ALWAYS },
  { "top5", "eval/top5", SCALAR_ALWAYS },
};

/* Writes what the event file queued; a failure (a full disk) is one
 * warning in a run, and training goes on: the writer keeps its file
 * whole, and the next report tries again. */
static void
gst_cuda_train_sink_flush_tensorboard (GstCudaTrainSink *sink)
{
  GError *error = NULL;

  if (tb_writer_flush (sink->report.tensorboard, &error))
    return;
  GST_DEBUG_OBJECT (sink, "TensorBoard events not written: %s", error->message);
  if (!sink->report.tensorboard_warned)
    GST_ELEMENT_WARNING (sink, RESOURCE, WRITE,
        ("%s (tensorboard-logdir). Training goes on; TensorBoard misses the "
         "statistics until the disk takes them again.",
            error->message),
        (NULL));
  sink->report.tensorboard_warned = TRUE;
  g_error_free (error);
}

/* Adds the fields of @s that @scalars name, at @step, to the event file
 * and writes it; nothing without one. */
static void
gst_cuda_train_sink_write_scalars (GstCudaTrainSink *sink,
    const GstStructure *s, const ScalarField *scalars, gsize n_scalars,
    gint64 step)
{
  guint64 images = 0, fresh = 0;
  gboolean echo;
  gsize i;

  if (sink->report.tensorboard == NULL)
    return;
  echo = gst_structure_get_uint64 (s, "images", &images)
      && gst_structure_get_uint64 (s, "fresh-images", &fresh) && images > fresh;
  for (i = 0; i < n_scalars; i++) {
    const GValue *value = gst_structure_get_value (s, scalars[i].field);

    if ((scalars[i].when == SCALAR_WITH_ECHO && !echo)
        || (scalars[i].when == SCALAR_IN_JOB && sink->dist.world_size < 2)
        || value == NULL)
      continue;
    tb_writer_add_scalar (sink->report.tensorboard, scalars[i].tag, step,
        G_VALUE_HOLDS_INT (value) ? g_value_get_int (value)
                                  : g_value_get_double (value));
  }
  gst_cuda_train_sink_flush_tensorboard (sink);
}

/* ---- the files ---- */

gboolean
gst_cuda_train_sink_report_start (GstCudaTrainSink *sink)
{
  const GstCudaTrainSinkSettings *s = &sink->settings;
  GError *error = NULL;

  sink->report.tensorboard_warned = FALSE;
  /* data-parallel: rank 0 writes the job's metrics */
  if (sink->dist.rank != 0)
    return TRUE;
  if (s->tensorboard_logdir) {
    sink->report.tensorboard = tb_writer_new (s->tensorboard_logdir, &error);
    if (sink->report.tensorboard == NULL) {
      GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_WRITE,
          ("%s (tensorboard-logdir).", error->message), (NULL));
      g_error_free (error);
      return FALSE;
    }
    GST_INFO_OBJECT (sink, "TensorBoard events go to %s",
        tb_writer_get_path (sink->report.tensorboard));
  }
  if (s->metrics_location) {
    gchar *folder = g_path_get_dirname (s->metrics_location);

    /* made when missing, as tensorboard-logdir's is */
    if (!g_file_test (folder, G_FILE_TEST_EXISTS))
      g_mkdir_with_parents (folder, 0755);
    g_free (folder);
    sink->report.metrics = gst_train_metrics_open (s->metrics_location, &error);
    if (sink->report.metrics == NULL) {
      GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_WRITE,
          ("Could not open metrics file \"%s\": %s.", s->metrics_location,
              error->message),
          (NULL));
      g_error_free (error);
      g_clear_pointer (&sink->report.tensorboard, tb_writer_free);
      return FALSE;
    }
  }
  return TRUE;
}

void
gst_cuda_train_sink_report_run_begins (GstCudaTrainSink *sink)
{
  gint64 step;

  if (sink->report.tensorboard == NULL
      || sink->settings.mode != GST_TRAIN_MODE_TRAIN)
    return;
  /* the steps after the one this run starts from are its own: what an
   * earlier run of this folder wrote from there on (steps trained again
   * after a resume from an older checkpoint) is dropped by TensorBoard */
  step = gt_trainer_global_step (sink->trainer.gt) + 1;
  GST_DEBUG_OBJECT (
      sink, "TensorBoard run (re)starts at step %" G_GINT64_FORMAT, step);
  tb_writer_add_restart (sink->report.tensorboard, step);
  gst_cuda_train_sink_flush_tensorboard (sink);
}

void
gst_cuda_train_sink_report_stop (GstCudaTrainSink *sink)
{
  g_clear_pointer (&sink->report.metrics, gst_train_metrics_close);
  /* every report was flushed as it was written */
  g_clear_pointer (&sink->report.tensorboard, tb_writer_free);
}

void
gst_cuda_train_sink_report_note (GstCudaTrainSink *sink, const GstStructure *s)
{
  gst_train_metrics_write (sink->report.metrics, s);
}

/* ---- the messages ---- */

/* Writes @s as a JSON line and posts it as an element message. */
static void
gst_cuda_train_sink_report (GstCudaTrainSink *sink, GstStructure *s)
{
  gst_train_metrics_write (sink->report.metrics, s);
  gst_element_post_message (
      GST_ELEMENT (sink), gst_message_new_element (GST_OBJECT (sink), s));
}

void
gst_cuda_train_sink_post_stats (
    GstCudaTrainSink *sink, const TrainStatsReport *r)
{
  gint64 step = gt_trainer_global_step (sink->trainer.gt);
  GstStructure *s;

  GST_DEBUG_OBJECT (sink, "train-stats at step %" G_GINT64_FORMAT, step);
  s = gst_structure_new ("train-stats", "step", G_TYPE_UINT64, (guint64)step,
      "epoch", G_TYPE_DOUBLE, r->epoch, "loss", G_TYPE_DOUBLE, r->loss, "lr",
      G_TYPE_DOUBLE, r->lr, "top1", G_TYPE_DOUBLE, r->top1, "top5",
      G_TYPE_DOUBLE, r->top5, "images", G_TYPE_UINT64, r->images,
      "fresh-images", G_TYPE_UINT64, r->fresh_images, "images-per-second",
      G_TYPE_DOUBLE, r->images_per_second, "fresh-images-per-second",
      G_TYPE_DOUBLE, r->fresh_images_per_second, "echo-factor", G_TYPE_DOUBLE,
      r->echo_factor, "step-time", G_TYPE_DOUBLE, r->step_time, "busy-time",
      G_TYPE_DOUBLE, r->busy_time, "data-wait-fraction", G_TYPE_DOUBLE,
      r->data_wait_fraction, "sink-memory-fraction", G_TYPE_DOUBLE,
      r->sink_memory_fraction, "pinned-fraction", G_TYPE_DOUBLE,
      r->pinned_fraction, "comm-time", G_TYPE_DOUBLE, r->comm_time,
      "slowest-rank", G_TYPE_INT, r->slowest_rank, "straggler-wait",
      G_TYPE_DOUBLE, r->straggler_wait, "rank", G_TYPE_INT, sink->dist.rank,
      "world-size", G_TYPE_INT, sink->dist.world_size, "compute", G_TYPE_STRING,
      sink->trainer.compute ? sink->trainer.compute : "", "time", G_TYPE_DOUBLE,
      r->time, NULL);
  gst_cuda_train_sink_write_scalars (
      sink, s, train_stats_scalars, G_N_ELEMENTS (train_stats_scalars), step);
  gst_cuda_train_sink_report (sink, s);
}

void
gst_cuda_train_sink_post_eval_result (
    GstCudaTrainSink *sink, const GtEvalTotals *eval)
{
  gdouble n = MAX (1, eval->num_samples);
  GstStructure *s;

  GST_DEBUG_OBJECT (sink, "eval-result of %" G_GINT64_FORMAT " images",
      (gint64)eval->num_samples);

  s = gst_structure_new ("eval-result", "loss", G_TYPE_DOUBLE,
      eval->loss_sum / n, "top1", G_TYPE_DOUBLE, eval->correct_top1 / n, "top5",
      G_TYPE_DOUBLE, eval->correct_top5 / n, "images", G_TYPE_UINT64,
      (guint64)eval->num_samples, NULL);
  /* at the step of the checkpoint evaluated */
  gst_cuda_train_sink_write_scalars (sink, s, eval_result_scalars,
      G_N_ELEMENTS (eval_result_scalars),
      sink->trainer.gt ? gt_trainer_global_step (sink->trainer.gt) : 0);
  gst_cuda_train_sink_report (sink, s);
}
