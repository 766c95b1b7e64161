/* gstcudatrainsink-trainer.c: the trainer of cudatrainsink: created at the
 * first batch on the device the settings ask for, resumed from
 * resume-from, checkpointed to checkpoint-location and snapshotted to
 * snapshot-location. Failures are error messages of the element. */
#include "gstcudatrainsink-private.h"

#define GST_CAT_DEFAULT gst_cuda_train_sink_debug

/* Creates the trainer for @config where device says: on the GPU when asked
 * for (an error when it cannot be had) or when it can be had (auto); else
 * on the CPU reference backend, in fp32. */
static gboolean
gst_cuda_train_sink_create_trainer (
    GstCudaTrainSink *sink, GtTrainerConfig *config)
{
  GstTrainDevice device = sink->settings.device;
  gboolean on_cpu = TRUE;
  gchar why[512];

  if (device != GST_TRAIN_DEVICE_CPU) {
    if (gt_cuda_device_count (why, sizeof (why)) > 0) {
      config->backend = GT_BACKEND_CUDA;
      sink->trainer = gt_trainer_new (config, why, sizeof (why));
      on_cpu = sink->trainer == NULL;
    }
    if (sink->trainer == NULL && device == GST_TRAIN_DEVICE_CUDA) {
      GST_ELEMENT_ERROR (sink, RESOURCE, NOT_FOUND,
          ("device=cuda, but CUDA cannot train here: %s.", why), (NULL));
      return FALSE;
    }
    if (sink->trainer == NULL)
      GST_ELEMENT_WARNING (
          sink, RESOURCE, NOT_FOUND, ("Training on the CPU: %s.", why), (NULL));
  }
  if (sink->trainer == NULL) {
    config->backend = GT_BACKEND_CPU;
    config->precision = GT_PRECISION_FP32;
    sink->trainer = gt_trainer_new (config, why, sizeof (why));
  }
  if (sink->trainer == NULL) {
    GST_ELEMENT_ERROR (sink, LIBRARY, INIT,
        ("Could not set up %s: %s.", gt_model_name (config->model), why),
        (NULL));
    return FALSE;
  }
  GST_INFO_OBJECT (sink, "%s, %d classes, %zu parameters, on the %s",
      gt_model_name (config->model), config->num_classes,
      gt_trainer_num_parameters (sink->trainer), on_cpu ? "CPU" : "GPU");
  return TRUE;
}

/* Loads resume-from, when set: an exact resume skips as many batches as
 * the checkpoint has steps, so that a deterministic pipeline continues
 * where it left off. */
static gboolean
gst_cuda_train_sink_resume (GstCudaTrainSink *sink)
{
  const gchar *path = sink->settings.resume_from;
  gint resumed = 0, status;
  gchar *text;

  if (path == NULL)
    return TRUE;
  status = gt_trainer_load (sink->trainer, path, &resumed);
  if (status != GT_OK) {
    text = g_strdup_printf ("Cannot resume from \"%s\": %s.", path,
        gt_trainer_error (sink->trainer));
    if (status == GT_ERROR_IO)
      GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_READ, ("%s", text), (NULL));
    else
      GST_ELEMENT_ERROR (sink, RESOURCE, SETTINGS, ("%s", text), (NULL));
    g_free (text);
    return FALSE;
  }
  if (resumed && sink->settings.mode == GST_TRAIN_MODE_TRAIN)
    sink->skip_batches = (guint64)gt_trainer_global_step (sink->trainer);
  sink->last_saved_step = (guint64)gt_trainer_global_step (sink->trainer);
  GST_INFO_OBJECT (sink, "%s %s at step %" G_GUINT64_FORMAT,
      resumed ? "resumed from" : "started from weights of", path,
      sink->last_saved_step);
  return TRUE;
}

gboolean
gst_cuda_train_sink_setup (GstCudaTrainSink *sink)
{
  GtTrainerConfig config;

  gt_trainer_config_init (&config);
  if (!gst_cuda_train_sink_settings_to_config (&sink->settings, &config)) {
    GST_ELEMENT_ERROR (sink, LIBRARY, SETTINGS,
        ("mean and std must be three numbers, \"R,G,B\"."), (NULL));
    return FALSE;
  }
  config.height = sink->height;
  config.width = sink->width;
  config.batch_size = sink->batch_size;
  if (config.num_classes == 0) {
    if (!sink->have_dataset || sink->dataset.num_classes == 0) {
      GST_ELEMENT_ERROR (sink, LIBRARY, SETTINGS,
          ("num-classes is 0 and no dataset tags said how many classes "
           "there are: set num-classes."),
          (NULL));
      return FALSE;
    }
    config.num_classes = (int)sink->dataset.num_classes;
  }
  if (!gst_cuda_train_sink_create_trainer (sink, &config))
    return FALSE;
  sink->min_train_batch = gt_trainer_min_train_batch (sink->trainer);
  return gst_cuda_train_sink_resume (sink);
}

guint64
gst_cuda_train_sink_epoch_samples (GstCudaTrainSink *sink)
{
  return sink->have_dataset ? sink->dataset.epoch_samples : 0;
}

gboolean
gst_cuda_train_sink_save (GstCudaTrainSink *sink)
{
  const gchar *path = sink->settings.checkpoint_location;
  gchar epoch[32];

  if (path == NULL || sink->trainer == NULL
      || sink->settings.mode != GST_TRAIN_MODE_TRAIN)
    return TRUE;
  g_snprintf (epoch, sizeof (epoch), "%.6f",
      train_stats_epoch (
          &sink->stats, gst_cuda_train_sink_epoch_samples (sink)));
  gt_trainer_set_metadata (sink->trainer, "epoch", epoch);
  if (gt_trainer_save (sink->trainer, path, 0) != GT_OK) {
    GST_ELEMENT_ERROR (sink, RESOURCE, WRITE,
        ("Could not write checkpoint \"%s\".", path),
        ("%s", gt_trainer_error (sink->trainer)));
    return FALSE;
  }
  sink->last_saved_step = (guint64)gt_trainer_global_step (sink->trainer);
  GST_DEBUG_OBJECT (
      sink, "checkpoint at step %" G_GUINT64_FORMAT, sink->last_saved_step);
  return TRUE;
}

/* Saves the weights as fresh-N.safetensors each time the fresh images pass
 * a multiple of snapshot-interval, and notes it in the metrics. */
gboolean
gst_cuda_train_sink_snapshot (GstCudaTrainSink *sink)
{
  const GstCudaTrainSinkSettings *s = &sink->settings;
  const TrainStats *stats = &sink->stats;

  while (s->snapshot_interval && stats->fresh_images >= sink->next_snapshot) {
    gchar *name = g_strdup_printf (
        "fresh-%012" G_GUINT64_FORMAT ".safetensors", sink->next_snapshot);
    gchar *path = g_build_filename (s->snapshot_location, name, NULL);
    gboolean ok = gt_trainer_save (sink->trainer, path, 1) == GT_OK;

    if (ok) {
      GstStructure *note = gst_structure_new ("snapshot", "mark", G_TYPE_UINT64,
          sink->next_snapshot, "fresh-images", G_TYPE_UINT64,
          stats->fresh_images, "images", G_TYPE_UINT64, stats->images, "step",
          G_TYPE_UINT64, (guint64)gt_trainer_global_step (sink->trainer),
          "time", G_TYPE_DOUBLE,
          train_stats_elapsed (stats, g_get_monotonic_time ()), NULL);

      gst_cuda_train_sink_write_json (sink, note);
      gst_structure_free (note);
    } else {
      GST_ELEMENT_ERROR (sink, RESOURCE, WRITE,
          ("Could not write snapshot \"%s\".", path),
          ("%s", gt_trainer_error (sink->trainer)));
    }
    g_free (path);
    g_free (name);
    if (!ok)
      return FALSE;
    sink->next_snapshot += s->snapshot_interval;
  }
  return TRUE;
}
