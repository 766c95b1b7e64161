/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstcudatrainsink-trainer.c: the trainer of cudatrainsink: created at the
 * first batch on the device the settings ask for, resumed from
 * resume-from, checkpointed to checkpoint-location and snapshotted to
 * snapshot-location. Failures are error messages of the element; the
 * trainer's own messages go to the sink's debug category and its warnings
 * to the bus too (gst_cuda_train_sink_trainer_log). In a data-parallel job
 * the trainer is made after the ranks agreed to start
 * (gstcudatrainsink-dist.c), resumed from rank 0's checkpoint on every
 * rank, and only rank 0 writes checkpoints and snapshots.
 *
 * Its state is the sink's @trainer (gstcudatrainsink-private.h), which only
 * this file writes. */
#include "gstcudatrainsink-private.h"

#include <string.h>

#define GST_CAT_DEFAULT gst_cuda_train_sink_debug

/* Checkpoint metadata: the fresh images trained on up to it, resumes
 * included. */
#define FRESH_IMAGES_KEY "fresh-images"

void
gst_cuda_train_sink_trainer_init (GstCudaTrainSink *sink)
{
  sink->trainer.checkpoint_step_prop = -1;
}

void
gst_cuda_train_sink_trainer_reset (GstCudaTrainSink *sink)
{
  sink->trainer.skip_batches = 0;
  sink->trainer.batches_skipped = 0;
  sink->trainer.resume_samples = 0;
  sink->trainer.fresh_before = 0;
  g_atomic_int_set (&sink->trainer.upstream_resumes, FALSE);
  GST_OBJECT_LOCK (sink);
  sink->trainer.checkpoint_step_prop = -1;
  GST_OBJECT_UNLOCK (sink);
  sink->trainer.last_saved_step = 0;
  sink->trainer.next_snapshot = sink->settings.snapshot_interval;
}

void
gst_cuda_train_sink_trainer_stop (GstCudaTrainSink *sink)
{
  g_clear_pointer (&sink->trainer.gt, gt_trainer_free);
  g_clear_pointer (&sink->trainer.compute, g_free);
}

/* TRUE when this machine has the NVIDIA kernel driver: its user has reason
 * to expect training on the GPU, whatever keeps CUDA from being used. */
static gboolean
gst_cuda_train_sink_have_nvidia_driver (void)
{
  return g_file_test ("/proc/driver/nvidia/version", G_FILE_TEST_EXISTS)
      || g_file_test ("/dev/nvidiactl", G_FILE_TEST_EXISTS);
}

/* Whether this rank can train on a GPU (gpu-id usable): FALSE with the
 * reason in @why. */
static gboolean
gst_cuda_train_sink_can_use_cuda (
    GstCudaTrainSink *sink, gchar *why, gsize why_size)
{
  gint count;

  if (sink->settings.device == GST_TRAIN_DEVICE_CPU) {
    g_snprintf (why, why_size, "device=cpu");
    return FALSE;
  }
  count = gt_cuda_device_count (why, why_size);
  if (count > 0 && sink->dist.gpu_id >= count) {
    g_snprintf (why, why_size, "GPU %d asked for, and this machine has %d",
        sink->dist.gpu_id, count);
    return FALSE;
  }
  return count > 0;
}

/* Creates the trainer for @config where device says: on the GPU when asked
 * for (an error when it cannot be had) or when it can be had (auto; in a
 * data-parallel job, when every rank can: @use_cuda); else on the CPU
 * reference backend, in fp32. With device=auto, falling back to the CPU is
 * a warning when the user has reason to expect the GPU (a CUDA device is
 * usable but the trainer could not be made on it, or the NVIDIA driver is
 * there but CUDA cannot use it: the backend module or one of its libraries
 * missing); on a machine without the NVIDIA driver it is just what happens
 * there, an info message. gst-launch-1.0 prints only the details of an info
 * message, so they say it too.
 *
 * In a data-parallel job gt_trainer_new is a collective: a rank that cannot
 * make its trainer may leave its peers waiting in it, so that ends the job
 * (gt_comm_abort), with the reason. */
static gboolean
gst_cuda_train_sink_create_trainer (GstCudaTrainSink *sink,
    GtTrainerConfig *config, gboolean use_cuda, const gchar *cuda_why)
{
  GstTrainDevice device = sink->settings.device;
  gboolean on_cpu = TRUE, expect_gpu = use_cuda;
  const gchar *doing =
      sink->settings.mode == GST_TRAIN_MODE_EVAL ? "Evaluating" : "Training";
  gchar why[512];

  g_strlcpy (why, cuda_why, sizeof (why));
  if (device != GST_TRAIN_DEVICE_CPU) {
    if (use_cuda) {
      config->backend = GT_BACKEND_CUDA;
      sink->trainer.gt = gt_trainer_new (config, why, sizeof (why));
      on_cpu = sink->trainer.gt == NULL;
    } else {
      expect_gpu = gst_cuda_train_sink_have_nvidia_driver ();
    }
    if (sink->trainer.gt == NULL && use_cuda && sink->dist.comm != NULL) {
      gchar *message = g_strdup_printf (
          "could not set up %s on GPU %d: %s; its peers cannot go on "
          "without it: ending the job",
          gt_model_name (config->model), sink->dist.gpu_id, why);

      gt_comm_abort (sink->dist.comm, 1, message);
      g_free (message);
    }
    if (sink->trainer.gt == NULL && device == GST_TRAIN_DEVICE_CUDA) {
      GST_ELEMENT_ERROR (sink, RESOURCE, NOT_FOUND,
          ("device=cuda, but CUDA cannot train here: %s.", why), (NULL));
      return FALSE;
    }
    if (sink->trainer.gt == NULL && expect_gpu)
      GST_ELEMENT_WARNING (sink, RESOURCE, NOT_FOUND,
          ("%s on the CPU: %s.", doing, why), (NULL));
    else if (sink->trainer.gt == NULL && sink->dist.rank == 0)
      GST_ELEMENT_INFO (sink, RESOURCE, NOT_FOUND,
          ("%s on the CPU: %s.", doing, why),
          ("%s on the CPU: %s.", doing, why));
  }
  if (sink->trainer.gt == NULL) {
    config->backend = GT_BACKEND_CPU;
    config->precision = GT_PRECISION_FP32;
    sink->trainer.gt = gt_trainer_new (config, why, sizeof (why));
  }
  /* a collective that timed out ends the job already, once this error is
   * posted */
  if (sink->trainer.gt == NULL && gt_comm_timed_out (sink->dist.comm)) {
    GST_ELEMENT_ERROR (sink, LIBRARY, INIT,
        ("Could not set up %s: %s.", gt_model_name (config->model), why),
        (NULL));
    return FALSE;
  }
  if (sink->trainer.gt == NULL && sink->dist.comm != NULL) {
    gchar *message = g_strdup_printf ("could not set up %s: %s; its peers "
                                      "cannot go on without it: ending the job",
        gt_model_name (config->model), why);

    gt_comm_abort (sink->dist.comm, 1, message);
    g_free (message);
  }
  if (sink->trainer.gt == NULL) {
    GST_ELEMENT_ERROR (sink, LIBRARY, INIT,
        ("Could not set up %s: %s.", gt_model_name (config->model), why),
        (NULL));
    return FALSE;
  }
  g_free (sink->trainer.compute);
  if (on_cpu) {
    gt_cpu_describe (config->cpu_kernels, config->cpu_isa, why, sizeof (why));
    sink->trainer.compute = g_strdup_printf ("CPU: %s", why);
  } else {
    GtCudaDeviceInfo info;

    if (gt_cuda_device_info (sink->dist.gpu_id, &info, why, sizeof (why)) == 0)
      sink->trainer.compute = g_strdup_printf ("GPU %d: %s, cuDNN %d, %s",
          sink->dist.gpu_id, info.name, info.cudnn_version,
          config->precision == GT_PRECISION_BF16 ? "bf16" : "fp32");
    else
      sink->trainer.compute = g_strdup_printf ("GPU %d", sink->dist.gpu_id);
  }
  GST_INFO_OBJECT (sink, "%s, %d classes, %zu parameters, on %s",
      gt_model_name (config->model), config->num_classes,
      gt_trainer_num_parameters (sink->trainer.gt), sink->trainer.compute);
  return TRUE;
}

/* The fresh images trained on before the checkpoint being resumed, as the
 * sink noted them: for the epoch to count on from there. A checkpoint
 * from before that note has its epoch, which the epoch size turns back
 * into images. */
static guint64
gst_cuda_train_sink_resumed_fresh (GstCudaTrainSink *sink)
{
  const gchar *text =
      gt_trainer_get_metadata (sink->trainer.gt, FRESH_IMAGES_KEY);
  guint64 epoch_samples = gst_cuda_train_sink_epoch_samples (sink);

  if (text != NULL)
    return g_ascii_strtoull (text, NULL, 10);
  text = gt_trainer_get_metadata (sink->trainer.gt, "epoch");
  if (text != NULL && epoch_samples)
    return (guint64)(g_ascii_strtod (text, NULL) * epoch_samples + 0.5);
  return 0;
}

/* After an exact resume: warns when the checkpoint was trained with
 * another global batch (another world size, or batch), for the learning
 * rate that goes with it. Checkpoints from before world sizes say
 * nothing. */
static void
gst_cuda_train_sink_check_global_batch (GstCudaTrainSink *sink)
{
  const gchar *text =
      gt_trainer_get_metadata (sink->trainer.gt, "global_batch");
  const gchar *ranks = gt_trainer_get_metadata (sink->trainer.gt, "world_size");
  guint64 theirs, ours = (guint64)sink->batch_size * sink->dist.world_size;

  if (text == NULL || sink->dist.rank != 0)
    return;
  theirs = g_ascii_strtoull (text, NULL, 10);
  if (theirs == 0 || theirs == ours)
    return;
  GST_ELEMENT_WARNING (sink, RESOURCE, SETTINGS,
      ("Resumed from a checkpoint trained with a global batch of "
       "%" G_GUINT64_FORMAT " (%s rank(s)); this run's is %" G_GUINT64_FORMAT
       " (%d per rank, %d rank(s)). By the linear scaling rule lr goes with "
       "the global batch, times %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
       ": if lr=%g suited the checkpoint's run, lr=%g suits this one.",
          theirs, ranks ? ranks : "?", ours, sink->batch_size,
          sink->dist.world_size, ours, theirs, sink->settings.lr,
          sink->settings.lr * (gdouble)ours / (gdouble)theirs),
      ("the weights, momentum and step are restored; where each rank is in "
       "the data is not, when the shards changed"));
}

/* Metadata @key of resume-from as a number; FALSE when absent. */
static gboolean
gst_cuda_train_sink_peek_number (
    GstCudaTrainSink *sink, const gchar *key, guint64 *number)
{
  gchar value[64], why[512];

  if (gt_checkpoint_read_metadata (sink->settings.resume_from, key, value,
          sizeof (value), why, sizeof (why))
      != GT_OK) {
    GST_DEBUG_OBJECT (sink, "%s", why);
    return FALSE;
  }
  *number = g_ascii_strtoull (value, NULL, 10);
  return TRUE;
}

gboolean
gst_cuda_train_sink_answer_resume (GstCudaTrainSink *sink, GstQuery *query)
{
  const GstCudaTrainSinkSettings *s = &sink->settings;
  guint64 step, samples, fresh = 0, ranks = 1, global_batch = 0, batch;
  gchar kind[32], why[512];

  if (s->resume_from == NULL || s->mode != GST_TRAIN_MODE_TRAIN)
    return FALSE;
  /* the header only: the trainer is made, and loads the file, at the first
   * batch */
  if (gt_checkpoint_read_metadata (s->resume_from, "gst_train.kind", kind,
          sizeof (kind), why, sizeof (why))
          != GT_OK
      || strcmp (kind, "checkpoint") != 0
      || !gst_cuda_train_sink_peek_number (sink, "gst_train.step", &step)) {
    GST_DEBUG_OBJECT (sink, "not an exact checkpoint: the source starts at 0");
    return FALSE;
  }
  gst_cuda_train_sink_peek_number (sink, "world_size", &ranks);
  gst_cuda_train_sink_peek_number (sink, "global_batch", &global_batch);
  if (ranks != (guint64)sink->dist.world_size) {
    GST_INFO_OBJECT (sink,
        "checkpoint of %" G_GUINT64_FORMAT " rank(s), this job has %d: the "
        "data position is not restored",
        ranks, sink->dist.world_size);
    return FALSE;
  }
  batch = global_batch / ranks;
  /* every rank trained on as many samples: samples_seen counts them all */
  if (gst_cuda_train_sink_peek_number (sink, "samples_seen", &samples))
    samples /= ranks;
  else
    samples = step * batch;
  if (gst_cuda_train_sink_peek_number (sink, FRESH_IMAGES_KEY, &fresh))
    fresh /= ranks;
  else
    fresh = samples;
  gst_train_resume_query_set (query, samples, fresh, (guint)batch);
  /* before the flag: the streaming thread reads it after the flag */
  sink->trainer.resume_samples = samples;
  g_atomic_int_set (&sink->trainer.upstream_resumes, TRUE);
  GST_INFO_OBJECT (sink,
      "the source resumes after %" G_GUINT64_FORMAT
      " samples (%" G_GUINT64_FORMAT " fresh, %" G_GUINT64_FORMAT
      " per batch): step %" G_GUINT64_FORMAT,
      samples, fresh, batch, step);
  return TRUE;
}

/* Loads resume-from, when set (in a data-parallel job: when @load, rank
 * 0's decision, and rank 0's file). On an exact resume the source started
 * where the checkpoint stopped when it asked (answer_resume); when it did
 * not, the sink skips as many batches as the checkpoint has steps, so
 * that a deterministic pipeline continues where it left off. */
static gboolean
gst_cuda_train_sink_resume (GstCudaTrainSink *sink, gboolean load,
    GtModel model, gint num_classes, gint *resumed_out)
{
  const gchar *path = sink->settings.resume_from;
  gint resumed = 0, status;
  gchar *text;

  *resumed_out = 0;
  if (!load)
    return TRUE;
  /* only rank 0 reads the file; the others name it in messages */
  if (path == NULL)
    path = "(rank 0's resume-from)";
  status = gt_trainer_load (sink->trainer.gt, path, &resumed);
  if (status != GT_OK) {
    GtModel held;
    gint held_classes;
    gchar why[512];

    text = g_strdup_printf ("Cannot resume from \"%s\": %s.", path,
        gt_trainer_error (sink->trainer.gt));
    /* another model or class count: that alone, and what to set, rather
     * than the tensors that differ */
    if (status == GT_ERROR_MISMATCH && sink->settings.resume_from != NULL
        && gt_checkpoint_identify (
               path, &held, &held_classes, why, sizeof (why))
            == GT_OK
        && (held != model || held_classes != num_classes)) {
      g_free (text);
      if (held == model)
        text = g_strdup_printf ("Cannot resume from \"%s\": it holds a %s "
                                "with %d classes, not %d (this run's classes: "
                                "num-classes, else the dataset's).",
            path, gt_model_name (held), held_classes, num_classes);
      else if (held_classes == num_classes)
        text = g_strdup_printf ("Cannot resume from \"%s\": it holds a %s, "
                                "not a %s. Set model=%s to use it.",
            path, gt_model_name (held), gt_model_name (model),
            gt_model_name (held));
      else
        text = g_strdup_printf ("Cannot resume from \"%s\": it holds a %s "
                                "with %d classes, not a %s with %d. Set "
                                "model=%s to use it.",
            path, gt_model_name (held), held_classes, gt_model_name (model),
            num_classes, gt_model_name (held));
    }
    if (status == GT_ERROR_IO)
      GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_READ, ("%s", text), (NULL));
    else
      GST_ELEMENT_ERROR (sink, RESOURCE, SETTINGS, ("%s", text), (NULL));
    g_free (text);
    return FALSE;
  }
  if (resumed && sink->settings.mode == GST_TRAIN_MODE_TRAIN
      && !g_atomic_int_get (&sink->trainer.upstream_resumes)) {
    sink->trainer.skip_batches =
        (guint64)gt_trainer_global_step (sink->trainer.gt);
    GST_INFO_OBJECT (sink,
        "no source asked where to start: skipping the %" G_GUINT64_FORMAT
        " batches trained on before",
        sink->trainer.skip_batches);
  }
  sink->trainer.last_saved_step =
      (guint64)gt_trainer_global_step (sink->trainer.gt);
  if (resumed)
    sink->trainer.fresh_before = gst_cuda_train_sink_resumed_fresh (sink);
  if (resumed && sink->settings.mode == GST_TRAIN_MODE_TRAIN)
    gst_cuda_train_sink_check_global_batch (sink);
  if (sink->settings.mode == GST_TRAIN_MODE_TRAIN && sink->settings.max_steps
      && sink->trainer.last_saved_step >= sink->settings.max_steps
      && sink->dist.rank == 0)
    GST_ELEMENT_WARNING (sink, RESOURCE, SETTINGS,
        ("Resumed at step %" G_GUINT64_FORMAT
         ", which is already max-steps %" G_GUINT64_FORMAT
         ": nothing to train; raise max-steps to train on.",
            sink->trainer.last_saved_step, sink->settings.max_steps),
        ("\"%s\" is left as it is", path));
  GST_INFO_OBJECT (sink, "%s %s at step %" G_GUINT64_FORMAT,
      resumed ? "resumed from" : "started from weights of", path,
      sink->trainer.last_saved_step);
  *resumed_out = resumed;
  return TRUE;
}

/* Says, after what runs (rank 0's, in train mode), where the run starts
 * from: the step of resume-from's checkpoint and how the source gets
 * there, or the weights of a weights-only file. Nothing when the
 * checkpoint is at max-steps already: the warning says that. */
static void
gst_cuda_train_sink_say_resumed (GstCudaTrainSink *sink, gboolean resumed)
{
  const gchar *path = sink->settings.resume_from;
  guint64 step = sink->trainer.last_saved_step, max = sink->settings.max_steps;
  gchar *text;

  if (path == NULL || sink->dist.rank != 0
      || sink->settings.mode != GST_TRAIN_MODE_TRAIN || (max && step >= max))
    return;
  if (!resumed)
    text = g_strdup_printf ("Started from the weights of %s (weights only: "
                            "step 0, momentum zero).",
        path);
  else if (g_atomic_int_get (&sink->trainer.upstream_resumes))
    text = g_strdup_printf ("Resumed from step %" G_GUINT64_FORMAT " of %s: "
                            "the source goes on after the %" G_GUINT64_FORMAT
                            " samples it trained on%s.",
        step, path, sink->trainer.resume_samples,
        sink->dist.world_size > 1 ? " (each rank's)" : "");
  else
    text = g_strdup_printf ("Resumed from step %" G_GUINT64_FORMAT " of %s: "
                            "no source asked where to start, so the first "
                            "%" G_GUINT64_FORMAT " batches, trained on "
                            "before, are skipped.",
        step, path, sink->trainer.skip_batches);
  GST_ELEMENT_INFO (sink, RESOURCE, SETTINGS, ("%s", text), ("%s", text));
  g_free (text);
}

/* The trainer's messages (GtLogFunc), in the sink's debug category, from
 * the thread that called the trainer: its warnings (a fallback it took, a
 * choice that costs determinism) are warning messages on the bus too, so
 * that a gst-launch-1.0 user sees them where the trainer alone printed
 * them to stderr; GST_ELEMENT_WARNING logs them with GST_WARNING_OBJECT.
 * Its errors are only logged: the call that failed returns them, and the
 * sink posts that error. */
static void
gst_cuda_train_sink_trainer_log (
    GtLogLevel level, const char *message, void *user_data)
{
  GstCudaTrainSink *sink = user_data;

  switch (level) {
    case GT_LOG_ERROR:
      GST_ERROR_OBJECT (sink, "%s", message);
      break;
    case GT_LOG_WARNING:
      GST_ELEMENT_WARNING (sink, LIBRARY, FAILED, ("%s", message), (NULL));
      break;
    case GT_LOG_INFO:
      GST_INFO_OBJECT (sink, "%s", message);
      break;
    case GT_LOG_DEBUG:
    default:
      GST_DEBUG_OBJECT (sink, "%s", message);
      break;
  }
}

/* The trainer's configuration from the settings, the caps and the dataset
 * facts; FALSE with an error posted. */
static gboolean
gst_cuda_train_sink_make_config (
    GstCudaTrainSink *sink, GtTrainerConfig *config)
{
  gt_trainer_config_init (config);
  if (!gst_cuda_train_sink_settings_to_config (&sink->settings, config)) {
    GST_ELEMENT_ERROR (sink, LIBRARY, SETTINGS,
        ("mean and std must be three numbers, \"R,G,B\"."), (NULL));
    return FALSE;
  }
  config->height = sink->height;
  config->width = sink->width;
  config->batch_size = sink->batch_size;
  config->gpu_id = sink->dist.gpu_id;
  config->comm = sink->dist.comm;
  config->log_func = gst_cuda_train_sink_trainer_log;
  config->log_data = sink;
  if (config->num_classes == 0) {
    if (!sink->have_dataset || sink->dataset.num_classes == 0) {
      GST_ELEMENT_ERROR (sink, LIBRARY, SETTINGS,
          ("num-classes is 0 and no dataset tags said how many classes "
           "there are: set num-classes."),
          (NULL));
      return FALSE;
    }
    config->num_classes = (int)sink->dataset.num_classes;
  }
  return TRUE;
}

/* Whether @name is that of a dataset's split rather than of a class. */
static gboolean
gst_cuda_train_sink_is_split_name (const gchar *name)
{
  static const gchar *const splits[] = { "train", "training", "test", "testing",
    "val", "valid", "validation", "eval", "dev", NULL };

  return name != NULL && g_strv_contains (splits, name);
}

/* "10 classes (from the dataset: A, B, ...)", "10 classes (num-classes)". */
static gchar *
gst_cuda_train_sink_describe_classes (GstCudaTrainSink *sink, gint num_classes)
{
  const GstTrainDatasetInfo *info = &sink->dataset;
  GString *text = g_string_new (NULL);
  guint i, shown;

  g_string_append_printf (
      text, "%d class%s", num_classes, num_classes == 1 ? "" : "es");
  if (sink->settings.num_classes != 0) {
    g_string_append (text, " (num-classes)");
  } else if (sink->have_dataset && info->class_names != NULL) {
    shown = MIN (info->num_classes, 12);
    g_string_append (text, " (from the dataset: ");
    for (i = 0; i < shown && info->class_names[i]; i++)
      g_string_append_printf (
          text, "%s%s", i ? ", " : "", info->class_names[i]);
    if (info->num_classes > shown)
      g_string_append_printf (text, " and %u more", info->num_classes - shown);
    g_string_append_c (text, ')');
  }
  return g_string_free (text, FALSE);
}

/* Says, once the trainer is made, what runs (an info message, which
 * gst-train and gst-launch-1.0 print, rank 0's in a job): the model, the
 * classes and where their count came from, the images per epoch and the
 * batches, and on the CPU the arithmetic it does whatever precision says.
 * In a job of more than one rank every rank says what it joined: the
 * world size, the global batch and its shard. A warning when the classes
 * are named as a dataset's splits: datasetsrc's location is then the
 * folder above them. */
static void
gst_cuda_train_sink_announce (
    GstCudaTrainSink *sink, const GtTrainerConfig *config)
{
  const GstCudaTrainSinkSettings *s = &sink->settings;
  const GstTrainDatasetInfo *info = &sink->dataset;
  gboolean train = s->mode == GST_TRAIN_MODE_TRAIN;
  gchar *classes, *text;
  GString *what;
  guint i, splits = 0;

  if (sink->dist.world_size > 1) {
    text = g_strdup_printf ("Joined a data-parallel job as rank %d of %d: "
                            "global batch %d (%d per rank); this rank's shard "
                            "holds %" G_GUINT64_FORMAT " of the "
                            "%" G_GUINT64_FORMAT " images of an epoch.",
        sink->dist.rank, sink->dist.world_size,
        sink->batch_size * sink->dist.world_size, sink->batch_size,
        sink->have_dataset ? info->epoch_samples : 0,
        sink->have_dataset ? info->num_samples : 0);
    GST_ELEMENT_INFO (sink, RESOURCE, SETTINGS, ("%s", text), ("%s", text));
    g_free (text);
  }
  if (sink->dist.rank != 0)
    return;
  classes = gst_cuda_train_sink_describe_classes (sink, config->num_classes);
  what = g_string_new (NULL);
  g_string_append_printf (what, "%s %s on %s",
      train ? "Training" : "Evaluating", gt_model_name (config->model),
      classes);
  if (sink->have_dataset && info->epoch_samples && sink->dist.world_size == 1)
    g_string_append_printf (
        what, ", %" G_GUINT64_FORMAT " images an epoch", info->epoch_samples);
  g_string_append_printf (what, ", batches of %d images of %dx%d",
      sink->batch_size * sink->dist.world_size, sink->width, sink->height);
  if (config->backend == GT_BACKEND_CPU
      && s->precision != GST_TRAIN_PRECISION_FP32)
    g_string_append_printf (what,
        "; on the CPU in fp32 (precision=%s is for "
        "a GPU)",
        s->precision == GST_TRAIN_PRECISION_BF16 ? "bf16" : "fp16");
  if (config->backend == GT_BACKEND_CPU && config->model == GT_MODEL_RESNET50)
    g_string_append (what,
        "; resnet50 (the default model) is slow on a "
        "CPU: resnet20 or resnet32 suit small images");
  g_string_append_c (what, '.');
  GST_ELEMENT_INFO (
      sink, RESOURCE, SETTINGS, ("%s", what->str), ("%s", what->str));
  g_string_free (what, TRUE);
  for (i = 0; sink->have_dataset && info->class_names && i < info->num_classes
       && info->class_names[i];
       i++)
    splits += gst_cuda_train_sink_is_split_name (info->class_names[i]);
  if (splits >= 2 && splits == info->num_classes && train) {
    text = g_strjoinv (", ", info->class_names);
    GST_ELEMENT_WARNING (sink, STREAM, FAILED,
        ("The dataset's classes are named %s, as a dataset's splits: "
         "datasetsrc's location is probably the folder above them. Point it "
         "at one split (location=.../train), whose sub-folders are the "
         "classes.",
            text),
        (NULL));
    g_free (text);
  }
  g_free (classes);
}

GstTrainSetupResult
gst_cuda_train_sink_setup (GstCudaTrainSink *sink)
{
  GtTrainerConfig config;
  gboolean ok, use_cuda, resume = sink->settings.resume_from != NULL;
  gint resumed;
  gchar cuda_why[512] = "";

  ok = gst_cuda_train_sink_make_config (sink, &config);
  use_cuda = ok
      && gst_cuda_train_sink_can_use_cuda (sink, cuda_why, sizeof (cuda_why));
  if (ok && !use_cuda && sink->settings.device == GST_TRAIN_DEVICE_CUDA) {
    GST_ELEMENT_ERROR (sink, RESOURCE, NOT_FOUND,
        ("device=cuda, but CUDA cannot train here: %s.", cuda_why), (NULL));
    ok = FALSE;
  }
  /* every rank makes its trainer, or none does */
  if (!gst_cuda_train_sink_dist_agree (sink,
          ok ? GST_TRAIN_RANK_READY : GST_TRAIN_RANK_FAILED, &config, &use_cuda,
          &resume))
    return ok ? GST_TRAIN_SETUP_NO_JOB : GST_TRAIN_SETUP_FAILED;
  if (!use_cuda && sink->dist.comm != NULL && cuda_why[0] == '\0')
    g_snprintf (
        cuda_why, sizeof (cuda_why), "not every rank of the job can use a GPU");
  if (config.num_classes == 1 && sink->settings.mode == GST_TRAIN_MODE_TRAIN
      && sink->dist.rank == 0)
    GST_ELEMENT_WARNING (sink, STREAM, FAILED,
        ("The dataset has one class: there is nothing to learn (the loss is "
         "0 from the first step). Point datasetsrc at the folder that holds "
         "the class folders, or set num-classes."),
        (NULL));
  if (!gst_cuda_train_sink_create_trainer (sink, &config, use_cuda, cuda_why))
    return GST_TRAIN_SETUP_FAILED;
  sink->trainer.min_train_batch = gt_trainer_min_train_batch (sink->trainer.gt);
  if (!gst_cuda_train_sink_resume (
          sink, resume, config.model, config.num_classes, &resumed))
    return GST_TRAIN_SETUP_FAILED;
  gst_cuda_train_sink_announce (sink, &config);
  gst_cuda_train_sink_say_resumed (sink, resumed);
  return GST_TRAIN_SETUP_OK;
}

gboolean
gst_cuda_train_sink_skip_batch (GstCudaTrainSink *sink)
{
  if (sink->trainer.skip_batches == 0)
    return FALSE;
  sink->trainer.skip_batches--;
  sink->trainer.batches_skipped++;
  GST_DEBUG_OBJECT (sink,
      "skipped a batch trained on before the resume (%" G_GUINT64_FORMAT
      " more)",
      sink->trainer.skip_batches);
  return TRUE;
}

gboolean
gst_cuda_train_sink_save (GstCudaTrainSink *sink)
{
  const gchar *path = sink->settings.checkpoint_location;
  gchar epoch[32], fresh[32];

  /* data-parallel: rank 0's checkpoint is the job's */
  if (path == NULL || sink->trainer.gt == NULL
      || sink->settings.mode != GST_TRAIN_MODE_TRAIN || sink->dist.rank != 0)
    return TRUE;
  /* the counts of every rank, as the caller just gathered them */
  g_snprintf (epoch, sizeof (epoch), "%.6f",
      train_stats_epoch (&sink->dist.global, sink->dist.global_epoch_samples));
  gt_trainer_set_metadata (sink->trainer.gt, "epoch", epoch);
  g_snprintf (fresh, sizeof (fresh), "%" G_GUINT64_FORMAT,
      sink->dist.global.fresh_before + sink->dist.global.fresh_images);
  gt_trainer_set_metadata (sink->trainer.gt, FRESH_IMAGES_KEY, fresh);
  if (gt_trainer_save (sink->trainer.gt, path, 0) != GT_OK) {
    /* the trainer's message names the file, what failed and the OS
     * reason */
    GST_ELEMENT_ERROR (sink, RESOURCE, WRITE,
        ("Could not write checkpoint: %s.",
            gt_trainer_error (sink->trainer.gt)),
        (NULL));
    return FALSE;
  }
  sink->trainer.last_saved_step =
      (guint64)gt_trainer_global_step (sink->trainer.gt);
  GST_OBJECT_LOCK (sink);
  sink->trainer.checkpoint_step_prop = (gint64)sink->trainer.last_saved_step;
  GST_OBJECT_UNLOCK (sink);
  GST_INFO_OBJECT (sink,
      "checkpoint at step %" G_GUINT64_FORMAT " written to %s",
      sink->trainer.last_saved_step, path);
  return TRUE;
}

/* Saves the weights as fresh-N.safetensors each time the fresh images (of
 * every rank, as the caller just gathered them) pass a multiple of
 * snapshot-interval, and notes it in the metrics; rank 0 only. */
gboolean
gst_cuda_train_sink_snapshot (GstCudaTrainSink *sink)
{
  const GstCudaTrainSinkSettings *s = &sink->settings;
  const TrainStats *stats = &sink->dist.global;

  if (sink->dist.rank != 0)
    return TRUE;
  while (s->snapshot_interval
      && stats->fresh_images >= sink->trainer.next_snapshot) {
    gchar *name = g_strdup_printf ("fresh-%012" G_GUINT64_FORMAT ".safetensors",
        sink->trainer.next_snapshot);
    gchar *path = g_build_filename (s->snapshot_location, name, NULL);
    gboolean ok = gt_trainer_save (sink->trainer.gt, path, 1) == GT_OK;

    if (ok) {
      GstStructure *note = gst_structure_new ("snapshot", "mark", G_TYPE_UINT64,
          sink->trainer.next_snapshot, "fresh-images", G_TYPE_UINT64,
          stats->fresh_images, "images", G_TYPE_UINT64, stats->images, "step",
          G_TYPE_UINT64, (guint64)gt_trainer_global_step (sink->trainer.gt),
          "time", G_TYPE_DOUBLE,
          train_stats_elapsed (stats, g_get_monotonic_time ()), NULL);

      GST_INFO_OBJECT (sink,
          "snapshot at %" G_GUINT64_FORMAT " fresh images written to %s",
          sink->trainer.next_snapshot, path);
      gst_cuda_train_sink_report_note (sink, note);
      gst_structure_free (note);
    } else {
      GST_ELEMENT_ERROR (sink, RESOURCE, WRITE,
          ("Could not write snapshot: %s.",
              gt_trainer_error (sink->trainer.gt)),
          (NULL));
    }
    g_free (path);
    g_free (name);
    if (!ok)
      return FALSE;
    sink->trainer.next_snapshot += s->snapshot_interval;
  }
  return TRUE;
}
