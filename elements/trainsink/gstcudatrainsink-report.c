/* gstcudatrainsink-report.c: what cudatrainsink reports: the train-stats
 * and eval-result element messages (their fields are documented in
 * gstcudatrainsink.c), and the metrics file, metrics-location, which gets
 * each of them and each snapshot note as a JSON line. The statistics and
 * the JSON are train-report.c's; the file is this writer's alone, from
 * open to close. */
#include "gstcudatrainsink-private.h"

#include <errno.h>
#include <stdio.h>

#define GST_CAT_DEFAULT gst_cuda_train_sink_debug

struct _GstTrainMetrics
{
  FILE *file;
};

GstTrainMetrics *
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

void
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

void
gst_train_metrics_close (GstTrainMetrics *metrics)
{
  fclose (metrics->file);
  g_free (metrics);
}

/* Writes @s as a JSON line and posts it as an element message. */
static void
gst_cuda_train_sink_report (GstCudaTrainSink *sink, GstStructure *s)
{
  gst_train_metrics_write (sink->metrics, s);
  gst_element_post_message (
      GST_ELEMENT (sink), gst_message_new_element (GST_OBJECT (sink), s));
}

void
gst_cuda_train_sink_post_stats (GstCudaTrainSink *sink)
{
  gint64 now = g_get_monotonic_time ();
  TrainStatsReport r;

  GST_DEBUG_OBJECT (sink, "train-stats at step %" G_GINT64_FORMAT,
      gt_trainer_global_step (sink->trainer));
  train_stats_take_report (&sink->global, sink->global_epoch_samples, now, &r);
  train_stats_begin_interval (&sink->stats, now);
  gst_cuda_train_sink_report (sink,
      gst_structure_new ("train-stats", "step", G_TYPE_UINT64,
          (guint64)gt_trainer_global_step (sink->trainer), "epoch",
          G_TYPE_DOUBLE, r.epoch, "loss", G_TYPE_DOUBLE, r.loss, "lr",
          G_TYPE_DOUBLE, r.lr, "images", G_TYPE_UINT64, r.images,
          "fresh-images", G_TYPE_UINT64, r.fresh_images, "images-per-second",
          G_TYPE_DOUBLE, r.images_per_second, "fresh-images-per-second",
          G_TYPE_DOUBLE, r.fresh_images_per_second, "echo-factor",
          G_TYPE_DOUBLE, r.echo_factor, "step-time", G_TYPE_DOUBLE, r.step_time,
          "busy-time", G_TYPE_DOUBLE, r.busy_time, "data-wait-fraction",
          G_TYPE_DOUBLE, r.data_wait_fraction, "sink-memory-fraction",
          G_TYPE_DOUBLE, r.sink_memory_fraction, "pinned-fraction",
          G_TYPE_DOUBLE, r.pinned_fraction, "comm-time", G_TYPE_DOUBLE,
          r.comm_time, "rank", G_TYPE_INT, sink->rank, "world-size", G_TYPE_INT,
          sink->world_size, "compute", G_TYPE_STRING,
          sink->compute ? sink->compute : "", "time", G_TYPE_DOUBLE, r.time,
          NULL));
}

void
gst_cuda_train_sink_post_eval_result (GstCudaTrainSink *sink)
{
  const GtEvalTotals *eval = &sink->eval;
  gdouble n = MAX (1, eval->num_samples);

  GST_DEBUG_OBJECT (sink, "eval-result of %" G_GINT64_FORMAT " images",
      (gint64)eval->num_samples);

  gst_cuda_train_sink_report (sink,
      gst_structure_new ("eval-result", "loss", G_TYPE_DOUBLE,
          eval->loss_sum / n, "top1", G_TYPE_DOUBLE, eval->correct_top1 / n,
          "top5", G_TYPE_DOUBLE, eval->correct_top5 / n, "images",
          G_TYPE_UINT64, (guint64)eval->num_samples, NULL));
}
