/* gstcudatrainsink-trainer.c: the trainer of cudatrainsink: created at the
 * first batch on the device the settings ask for, resumed from
 * resume-from, checkpointed to checkpoint-location and snapshotted to
 * snapshot-location. Failures are error messages of the element. */
#include "gstcudatrainsink-private.h"

#define GST_CAT_DEFAULT gst_cuda_train_sink_debug

/* Checkpoint metadata: the fresh images trained on up to it, resumes
 * included. */
#define FRESH_IMAGES_KEY "fresh-images"

/* TRUE when this machine has the NVIDIA kernel driver: its user has reason
 * to expect training on the GPU, whatever keeps CUDA from being used. */
static gboolean
gst_cuda_train_sink_have_nvidia_driver (void)
{
  return g_file_test ("/proc/driver/nvidia/version", G_FILE_TEST_EXISTS)
      || g_file_test ("/dev/nvidiactl", G_FILE_TEST_EXISTS);
}

/* Creates the trainer for @config where device says: on the GPU when asked
 * for (an error when it cannot be had) or when it can be had (auto); else
 * on the CPU reference backend, in fp32. With device=auto, falling back to
 * the CPU is a warning when the user has reason to expect the GPU (a CUDA
 * device is usable but the trainer could not be made on it, or the NVIDIA
 * driver is there but CUDA cannot use it: the backend module or one of
 * its libraries missing); on a machine without the NVIDIA driver it is
 * just what happens there, an info message. gst-launch-1.0 prints only the
 * details of an info message, so they say it too. */
static gboolean
gst_cuda_train_sink_create_trainer (
    GstCudaTrainSink *sink, GtTrainerConfig *config)
{
  GstTrainDevice device = sink->settings.device;
  gboolean on_cpu = TRUE, expect_gpu;
  gchar why[512];

  if (device != GST_TRAIN_DEVICE_CPU) {
    expect_gpu = gt_cuda_device_count (why, sizeof (why)) > 0;
    if (expect_gpu) {
      config->backend = GT_BACKEND_CUDA;
      sink->trainer = gt_trainer_new (config, why, sizeof (why));
      on_cpu = sink->trainer == NULL;
    } else {
      expect_gpu = gst_cuda_train_sink_have_nvidia_driver ();
    }
    if (sink->trainer == NULL && device == GST_TRAIN_DEVICE_CUDA) {
      GST_ELEMENT_ERROR (sink, RESOURCE, NOT_FOUND,
          ("device=cuda, but CUDA cannot train here: %s.", why), (NULL));
      return FALSE;
    }
    if (sink->trainer == NULL && expect_gpu)
      GST_ELEMENT_WARNING (
          sink, RESOURCE, NOT_FOUND, ("Training on the CPU: %s.", why), (NULL));
    else if (sink->trainer == NULL)
      GST_ELEMENT_INFO (sink, RESOURCE, NOT_FOUND,
          ("Training on the CPU: %s.", why), ("Training on the CPU: %s.", why));
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

/* The fresh images trained on before the checkpoint being resumed, as the
 * sink noted them: for the epoch to count on from there. A checkpoint
 * from before that note has its epoch, which the epoch size turns back
 * into images. */
static guint64
gst_cuda_train_sink_resumed_fresh (GstCudaTrainSink *sink)
{
  const gchar *text = gt_trainer_get_metadata (sink->trainer, FRESH_IMAGES_KEY);
  guint64 epoch_samples = gst_cuda_train_sink_epoch_samples (sink);

  if (text != NULL)
    return g_ascii_strtoull (text, NULL, 10);
  text = gt_trainer_get_metadata (sink->trainer, "epoch");
  if (text != NULL && epoch_samples)
    return (guint64)(g_ascii_strtod (text, NULL) * epoch_samples + 0.5);
  return 0;
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
  if (resumed)
    sink->stats.fresh_before = gst_cuda_train_sink_resumed_fresh (sink);
  if (sink->settings.mode == GST_TRAIN_MODE_TRAIN && sink->settings.max_steps
      && sink->last_saved_step >= sink->settings.max_steps)
    GST_ELEMENT_WARNING (sink, RESOURCE, SETTINGS,
        ("Resumed at step %" G_GUINT64_FORMAT
         ", which is already max-steps %" G_GUINT64_FORMAT
         ": nothing to train; raise max-steps to train on.",
            sink->last_saved_step, sink->settings.max_steps),
        ("\"%s\" is left as it is", path));
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
  if (config.num_classes == 1 && sink->settings.mode == GST_TRAIN_MODE_TRAIN)
    GST_ELEMENT_WARNING (sink, STREAM, FAILED,
        ("The dataset has one class: there is nothing to learn (the loss is "
         "0 from the first step). Point datasetsrc at the folder that holds "
         "the class folders, or set num-classes."),
        (NULL));
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
  gchar epoch[32], fresh[32];

  if (path == NULL || sink->trainer == NULL
      || sink->settings.mode != GST_TRAIN_MODE_TRAIN)
    return TRUE;
  g_snprintf (epoch, sizeof (epoch), "%.6f",
      train_stats_epoch (
          &sink->stats, gst_cuda_train_sink_epoch_samples (sink)));
  gt_trainer_set_metadata (sink->trainer, "epoch", epoch);
  g_snprintf (fresh, sizeof (fresh), "%" G_GUINT64_FORMAT,
      sink->stats.fresh_before + sink->stats.fresh_images);
  gt_trainer_set_metadata (sink->trainer, FRESH_IMAGES_KEY, fresh);
  if (gt_trainer_save (sink->trainer, path, 0) != GT_OK) {
    /* the trainer's message names the file, what failed and the OS
     * reason */
    GST_ELEMENT_ERROR (sink, RESOURCE, WRITE,
        ("Could not write checkpoint: %s.", gt_trainer_error (sink->trainer)),
        (NULL));
    sink->failed = TRUE;
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
          ("Could not write snapshot: %s.", gt_trainer_error (sink->trainer)),
          (NULL));
    }
    g_free (path);
    g_free (name);
    if (!ok)
      return FALSE;
    sink->next_snapshot += s->snapshot_interval;
  }
  return TRUE;
}
