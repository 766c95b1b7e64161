/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstcudatrainsink-settings.c: the properties declared in
 * gstcudatrainsink-settings.h. */
#include "gstcudatrainsink-settings.h"
#include "gstcudatrainsink-enumtypes.h"
#include "train-props.h"

#include <gst/gst.h>

#define DEFAULT_MODEL GST_TRAIN_MODEL_RESNET50
#define DEFAULT_NUM_CLASSES 0
#define DEFAULT_DEVICE GST_TRAIN_DEVICE_AUTO
#define DEFAULT_GPU_ID (-1)
#define DEFAULT_PRECISION GST_TRAIN_PRECISION_BF16
#define DEFAULT_LR 0.1
#define DEFAULT_MOMENTUM 0.9
#define DEFAULT_WEIGHT_DECAY 1e-4
#define DEFAULT_NESTEROV FALSE
#define DEFAULT_WARMUP_STEPS 0
#define DEFAULT_LR_SCHEDULE GST_TRAIN_LR_SCHEDULE_COSINE
#define DEFAULT_TOTAL_STEPS 0
#define DEFAULT_LABEL_SMOOTHING 0.1
#define DEFAULT_SEED 0
#define DEFAULT_MEAN "0.485,0.456,0.406"
#define DEFAULT_STD "0.229,0.224,0.225"
#define DEFAULT_MODE GST_TRAIN_MODE_TRAIN
#define DEFAULT_CHECKPOINT_INTERVAL 0
#define DEFAULT_MAX_STEPS 0
#define DEFAULT_STATS_INTERVAL 10
#define DEFAULT_NUM_THREADS 0
#define DEFAULT_SNAPSHOT_INTERVAL 0
#define DEFAULT_DISTRIBUTED GST_TRAIN_DISTRIBUTED_AUTO
#define DEFAULT_COMM_BACKEND GST_TRAIN_COMM_BACKEND_AUTO
#define DEFAULT_BUCKET_SIZE_MB 25
#define DEFAULT_ERROR_TIMEOUT 30
/* PyTorch's process-group timeout for NCCL */
#define DEFAULT_COLLECTIVE_TIMEOUT 600

enum
{
  PROP_0,
  PROP_MODEL,
  PROP_NUM_CLASSES,
  PROP_DEVICE,
  PROP_GPU_ID,
  PROP_PRECISION,
  PROP_LR,
  PROP_MOMENTUM,
  PROP_WEIGHT_DECAY,
  PROP_NESTEROV,
  PROP_WARMUP_STEPS,
  PROP_LR_SCHEDULE,
  PROP_TOTAL_STEPS,
  PROP_LABEL_SMOOTHING,
  PROP_SEED,
  PROP_MEAN,
  PROP_STD,
  PROP_MODE,
  PROP_CHECKPOINT_LOCATION,
  PROP_CHECKPOINT_INTERVAL,
  PROP_RESUME_FROM,
  PROP_MAX_STEPS,
  PROP_STATS_INTERVAL,
  PROP_METRICS_LOCATION,
  PROP_TENSORBOARD_LOGDIR,
  PROP_NUM_THREADS,
  PROP_SNAPSHOT_INTERVAL,
  PROP_SNAPSHOT_LOCATION,
  PROP_DISTRIBUTED,
  PROP_COMM_BACKEND,
  PROP_BUCKET_SIZE_MB,
  PROP_ERROR_TIMEOUT,
  PROP_COLLECTIVE_TIMEOUT,
  N_PROPERTIES
};

/* Where each property is kept in GstCudaTrainSinkSettings (train-props.h):
 * a property is a field, a row here and its GParamSpec. */
#define FIELD(name) .offset = G_STRUCT_OFFSET (GstCudaTrainSinkSettings, name)
static const GstTrainProp settings_table[N_PROPERTIES] = {
  [PROP_MODEL] = { FIELD (model) },
  [PROP_NUM_CLASSES] = { FIELD (num_classes) },
  [PROP_DEVICE] = { FIELD (device) },
  [PROP_GPU_ID] = { FIELD (gpu_id) },
  [PROP_PRECISION] = { FIELD (precision) },
  [PROP_LR] = { FIELD (lr) },
  [PROP_MOMENTUM] = { FIELD (momentum) },
  [PROP_WEIGHT_DECAY] = { FIELD (weight_decay) },
  [PROP_NESTEROV] = { FIELD (nesterov) },
  [PROP_WARMUP_STEPS] = { FIELD (warmup_steps) },
  [PROP_LR_SCHEDULE] = { FIELD (lr_schedule) },
  [PROP_TOTAL_STEPS] = { FIELD (total_steps) },
  [PROP_LABEL_SMOOTHING] = { FIELD (label_smoothing) },
  [PROP_SEED] = { FIELD (seed) },
  [PROP_MEAN] = { FIELD (mean) },
  [PROP_STD] = { FIELD (std) },
  [PROP_MODE] = { FIELD (mode) },
  [PROP_CHECKPOINT_LOCATION] = { FIELD (checkpoint_location) },
  [PROP_CHECKPOINT_INTERVAL] = { FIELD (checkpoint_interval) },
  [PROP_RESUME_FROM] = { FIELD (resume_from) },
  [PROP_MAX_STEPS] = { FIELD (max_steps) },
  [PROP_STATS_INTERVAL] = { FIELD (stats_interval) },
  [PROP_METRICS_LOCATION] = { FIELD (metrics_location) },
  [PROP_TENSORBOARD_LOGDIR] = { FIELD (tensorboard_logdir) },
  [PROP_NUM_THREADS] = { FIELD (num_threads) },
  [PROP_SNAPSHOT_INTERVAL] = { FIELD (snapshot_interval) },
  [PROP_SNAPSHOT_LOCATION] = { FIELD (snapshot_location) },
  [PROP_DISTRIBUTED] = { FIELD (distributed) },
  [PROP_COMM_BACKEND] = { FIELD (comm_backend) },
  [PROP_BUCKET_SIZE_MB] = { FIELD (bucket_size_mb) },
  [PROP_ERROR_TIMEOUT] = { FIELD (error_timeout) },
  [PROP_COLLECTIVE_TIMEOUT] = { FIELD (collective_timeout) },
};

#undef FIELD

/* An enum property is kept in its C enum type and read and written as a
 * gint, as GEnumValue holds it: the sizes must agree. */
G_STATIC_ASSERT (sizeof (GstTrainModel) == sizeof (gint));
G_STATIC_ASSERT (sizeof (GstTrainDevice) == sizeof (gint));
G_STATIC_ASSERT (sizeof (GstTrainPrecision) == sizeof (gint));
G_STATIC_ASSERT (sizeof (GstTrainLrSchedule) == sizeof (gint));
G_STATIC_ASSERT (sizeof (GstTrainMode) == sizeof (gint));
G_STATIC_ASSERT (sizeof (GstTrainDistributed) == sizeof (gint));
G_STATIC_ASSERT (sizeof (GstTrainCommBackend) == sizeof (gint));

static GParamSpec *properties[N_PROPERTIES];

guint
gst_cuda_train_sink_install_properties (GObjectClass *klass)
{
  /* read at start: a change takes effect when the element starts again */
  GParamFlags flags =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;

  properties[PROP_MODEL] = g_param_spec_enum ("model", "Model",
      "The network to train. The default, resnet50, is ImageNet's, for a "
      "GPU; on the CPU or for small images (32x32) take resnet20 or "
      "resnet32",
      GST_TYPE_TRAIN_MODEL, DEFAULT_MODEL, flags);
  properties[PROP_NUM_CLASSES] =
      g_param_spec_uint ("num-classes", "Number of classes",
          "Outputs of the classifier (0: the number the source announces in "
          "its dataset tags)",
          0, 1 << 20, DEFAULT_NUM_CLASSES, flags);
  properties[PROP_DEVICE] = g_param_spec_enum ("device", "Device",
      "Where the training steps run: GPU or CPU", GST_TYPE_TRAIN_DEVICE,
      DEFAULT_DEVICE, flags);
  properties[PROP_GPU_ID] = g_param_spec_int ("gpu-id", "GPU id",
      "CUDA device to train on (-1: the rank of this process among those of "
      "its machine in a data-parallel job, 0 alone)",
      -1, G_MAXINT, DEFAULT_GPU_ID, flags);
  properties[PROP_PRECISION] = g_param_spec_enum ("precision", "Precision",
      "Arithmetic of activations on the GPU. The CPU backend computes in "
      "fp32 whatever this says, so the default, bf16, is the GPU's alone",
      GST_TYPE_TRAIN_PRECISION, DEFAULT_PRECISION, flags);
  properties[PROP_LR] = g_param_spec_double ("lr", "Learning rate",
      "Peak learning rate of SGD (after the warmup)", 0, 1e6, DEFAULT_LR,
      flags);
  properties[PROP_MOMENTUM] = g_param_spec_double ("momentum", "Momentum",
      "Momentum of SGD, as torch.optim.SGD's", 0, 0.9999, DEFAULT_MOMENTUM,
      flags);
  properties[PROP_WEIGHT_DECAY] =
      g_param_spec_double ("weight-decay", "Weight decay",
          "L2 weight decay added to the gradients of convolution and "
          "classifier weights (not batch-norm parameters or biases)",
          0, 1, DEFAULT_WEIGHT_DECAY, flags);
  properties[PROP_NESTEROV] = g_param_spec_boolean ("nesterov", "Nesterov",
      "Nesterov momentum, as torch.optim.SGD(nesterov=True)", DEFAULT_NESTEROV,
      flags);
  properties[PROP_WARMUP_STEPS] = g_param_spec_uint64 ("warmup-steps",
      "Warmup steps", "Steps over which the learning rate rises linearly to lr",
      0, G_MAXINT64, DEFAULT_WARMUP_STEPS, flags);
  properties[PROP_LR_SCHEDULE] =
      g_param_spec_enum ("lr-schedule", "Learning-rate schedule",
          "How the learning rate falls from lr after the warmup",
          GST_TYPE_TRAIN_LR_SCHEDULE, DEFAULT_LR_SCHEDULE, flags);
  properties[PROP_TOTAL_STEPS] =
      g_param_spec_uint64 ("total-steps", "Total steps",
          "Length of the schedule, warmup included (0: max-steps, or constant "
          "after the warmup when that is 0 too)",
          0, G_MAXINT64, DEFAULT_TOTAL_STEPS, flags);
  properties[PROP_LABEL_SMOOTHING] = g_param_spec_double ("label-smoothing",
      "Label smoothing", "Label smoothing of the cross-entropy loss", 0, 0.999,
      DEFAULT_LABEL_SMOOTHING, flags);
  properties[PROP_SEED] = g_param_spec_uint64 ("seed", "Seed",
      "Seed of the initial weights", 0, G_MAXUINT64, DEFAULT_SEED, flags);
  properties[PROP_MEAN] = g_param_spec_string ("mean", "Mean",
      "Per-channel mean subtracted from pixels scaled to 0..1, as "
      "\"R,G,B\" (ImageNet's by default)",
      DEFAULT_MEAN, flags);
  properties[PROP_STD] = g_param_spec_string ("std", "Standard deviation",
      "Per-channel divisor after the mean, as \"R,G,B\" (ImageNet's by "
      "default)",
      DEFAULT_STD, flags);
  properties[PROP_MODE] = g_param_spec_enum ("mode", "Mode",
      "Train on every batch, or only evaluate", GST_TYPE_TRAIN_MODE,
      DEFAULT_MODE, flags);
  properties[PROP_CHECKPOINT_LOCATION] =
      g_param_spec_string ("checkpoint-location", "Checkpoint location",
          "safetensors file the checkpoints are written to (atomically; "
          "its folder is made when missing); NULL: none",
          NULL, flags);
  properties[PROP_CHECKPOINT_INTERVAL] =
      g_param_spec_uint ("checkpoint-interval", "Checkpoint interval",
          "Write a checkpoint every this many steps (0: only at EOS)", 0,
          G_MAXUINT, DEFAULT_CHECKPOINT_INTERVAL, flags);
  properties[PROP_RESUME_FROM] =
      g_param_spec_string ("resume-from", "Resume from",
          "Checkpoint to resume exactly from, or weights-only safetensors "
          "file (for example torchvision's state_dict) to start from; NULL: "
          "fresh weights",
          NULL, flags);
  properties[PROP_MAX_STEPS] =
      g_param_spec_uint64 ("max-steps", "Maximum steps",
          "Return EOS upstream once the global step reaches this (0: no "
          "limit)",
          0, G_MAXINT64, DEFAULT_MAX_STEPS, flags);
  properties[PROP_STATS_INTERVAL] =
      g_param_spec_uint ("stats-interval", "Statistics interval",
          "Post a train-stats message at every step that is a multiple of "
          "this, resumed runs included, and at the end (0: never)",
          0, G_MAXUINT, DEFAULT_STATS_INTERVAL, flags);
  properties[PROP_METRICS_LOCATION] =
      g_param_spec_string ("metrics-location", "Metrics location",
          "File the train-stats (and eval-result) fields are appended to as "
          "JSON lines (its folder is made when missing); NULL: none",
          NULL, flags);
  properties[PROP_TENSORBOARD_LOGDIR] =
      g_param_spec_string ("tensorboard-logdir", "TensorBoard log folder",
          "Folder (made if missing) where a TensorBoard event file "
          "(events.out.tfevents.TIME.HOST.PID) gets the train-stats and "
          "eval-result numbers as scalars, the step as x, written at every "
          "stats interval; a resumed run adds a file there and TensorBoard "
          "shows one series (tensorboard --logdir on this folder or its "
          "parent); rank 0 writes; NULL: none",
          NULL, flags);
  properties[PROP_NUM_THREADS] =
      g_param_spec_int ("num-threads", "Number of threads",
          "CPU backend threads (0: the CPUs this process may run on, its "
          "affinity mask, divided by the ranks of a data-parallel job on this "
          "machine)",
          0, 1024, DEFAULT_NUM_THREADS, flags);
  properties[PROP_SNAPSHOT_INTERVAL] =
      g_param_spec_uint64 ("snapshot-interval", "Snapshot interval",
          "Save the weights to snapshot-location every this many fresh "
          "images (not echo repeats), for evaluating a run at fixed amounts "
          "of fresh data (0: never)",
          0, G_MAXUINT64, DEFAULT_SNAPSHOT_INTERVAL, flags);
  properties[PROP_SNAPSHOT_LOCATION] =
      g_param_spec_string ("snapshot-location", "Snapshot location",
          "Folder the snapshots go to, as fresh-NNNNNNNNNNNN.safetensors "
          "(weights only); each is also a \"snapshot\" JSON line in "
          "metrics-location",
          NULL, flags);
  properties[PROP_DISTRIBUTED] = g_param_spec_enum ("distributed",
      "Distributed",
      "Data-parallel training, as PyTorch DistributedDataParallel, one "
      "process per rank (mpirun -np N gst-launch-1.0 ..., srun): auto joins "
      "the job when the launcher's environment says there is more than one "
      "rank, mpi joins even alone, off trains in this process alone",
      GST_TYPE_TRAIN_DISTRIBUTED, DEFAULT_DISTRIBUTED, flags);
  properties[PROP_COMM_BACKEND] =
      g_param_spec_enum ("comm-backend", "Communication backend",
          "Library that averages the gradients of a data-parallel job (the "
          "CPU backend always uses MPI)",
          GST_TYPE_TRAIN_COMM_BACKEND, DEFAULT_COMM_BACKEND, flags);
  properties[PROP_BUCKET_SIZE_MB] = g_param_spec_uint ("bucket-size-mb",
      "Bucket size (MiB)",
      "Data-parallel on the GPU with NCCL: gradients are reduced in buckets "
      "of this many MiB while the backward pass goes on, as DDP's "
      "bucket_cap_mb",
      1, 4096, DEFAULT_BUCKET_SIZE_MB, flags);
  properties[PROP_ERROR_TIMEOUT] = g_param_spec_uint ("error-timeout",
      "Error timeout (s)",
      "Data-parallel: seconds the application has to stop the pipeline after "
      "this sink posts an error; past them the sink ends the whole job "
      "(MPI_Abort, naming the rank), so that no rank waits for ever on one "
      "whose application missed the error (gst-launch-1.0 misses an error "
      "posted before its main loop runs); 0 = never",
      0, 3600, DEFAULT_ERROR_TIMEOUT, flags);
  properties[PROP_COLLECTIVE_TIMEOUT] = g_param_spec_uint ("collective-timeout",
      "Collective timeout (s)",
      "Data-parallel: seconds a rank waits in a collective (the agreement "
      "to start, the broadcast of the weights or of a resumed checkpoint, "
      "each step's gradient all-reduce, the statistics, leaving) for a rank "
      "that does not arrive (stopped, hung, cut off) before it gives up with "
      "an error naming the collective, the step and that rank, and the job "
      "ends (MPI_Abort) with the last checkpoint kept, as PyTorch's process "
      "group timeout; a rank that comes back sooner loses nothing. The same "
      "on every rank; 0 = wait for ever",
      0, 86400, DEFAULT_COLLECTIVE_TIMEOUT, flags);
  g_object_class_install_properties (klass, N_PROPERTIES, properties);
  return N_PROPERTIES;
}

void
gst_cuda_train_sink_settings_init (GstCudaTrainSinkSettings *settings)
{
  gst_train_props_init (settings, settings_table, properties, N_PROPERTIES);
}

gboolean
gst_cuda_train_sink_settings_set (
    GstCudaTrainSinkSettings *settings, guint prop_id, const GValue *value)
{
  if (prop_id == PROP_0 || prop_id >= N_PROPERTIES)
    return FALSE;
  gst_train_prop_set (&settings_table[prop_id], settings, value);
  return TRUE;
}

gboolean
gst_cuda_train_sink_settings_get (
    const GstCudaTrainSinkSettings *settings, guint prop_id, GValue *value)
{
  if (prop_id == PROP_0 || prop_id >= N_PROPERTIES)
    return FALSE;
  gst_train_prop_get (&settings_table[prop_id], settings, value);
  return TRUE;
}

gchar *
gst_cuda_train_sink_settings_describe (const GstCudaTrainSinkSettings *settings)
{
  GString *text = g_string_new (NULL);
  guint prop_id;

  for (prop_id = PROP_0 + 1; prop_id < N_PROPERTIES; prop_id++) {
    GValue value = G_VALUE_INIT;
    gchar *serialized;

    g_value_init (&value, G_PARAM_SPEC_VALUE_TYPE (properties[prop_id]));
    gst_train_prop_get (&settings_table[prop_id], settings, &value);
    if (G_VALUE_HOLDS_DOUBLE (&value)) {
      serialized = g_malloc (G_ASCII_DTOSTR_BUF_SIZE);
      g_ascii_formatd (serialized, G_ASCII_DTOSTR_BUF_SIZE, "%g",
          g_value_get_double (&value));
    } else {
      serialized = gst_value_serialize (&value);
    }
    g_string_append_printf (text, "%s%s=%s", text->len ? " " : "",
        g_param_spec_get_name (properties[prop_id]), serialized);
    g_free (serialized);
    g_value_unset (&value);
  }
  return g_string_free (text, FALSE);
}

/* Copies @src into @dst, which owns copies of the strings. */
void
gst_cuda_train_sink_settings_copy (
    GstCudaTrainSinkSettings *dst, const GstCudaTrainSinkSettings *src)
{
  *dst = *src;
  dst->mean = g_strdup (src->mean);
  dst->std = g_strdup (src->std);
  dst->checkpoint_location = g_strdup (src->checkpoint_location);
  dst->resume_from = g_strdup (src->resume_from);
  dst->metrics_location = g_strdup (src->metrics_location);
  dst->tensorboard_logdir = g_strdup (src->tensorboard_logdir);
  dst->snapshot_location = g_strdup (src->snapshot_location);
}

void
gst_cuda_train_sink_settings_clear (GstCudaTrainSinkSettings *settings)
{
  g_clear_pointer (&settings->mean, g_free);
  g_clear_pointer (&settings->std, g_free);
  g_clear_pointer (&settings->checkpoint_location, g_free);
  g_clear_pointer (&settings->resume_from, g_free);
  g_clear_pointer (&settings->metrics_location, g_free);
  g_clear_pointer (&settings->tensorboard_logdir, g_free);
  g_clear_pointer (&settings->snapshot_location, g_free);
}

/* Parses "a,b,c" into three floats; FALSE when it is not that. */
static gboolean
parse_triple (const gchar *text, float out[3])
{
  gchar **parts;
  gboolean ok;
  gint i;

  if (text == NULL)
    return FALSE;
  parts = g_strsplit (text, ",", -1);
  ok = g_strv_length (parts) == 3;
  for (i = 0; ok && i < 3; i++) {
    gchar *end;

    out[i] = (float)g_ascii_strtod (parts[i], &end);
    ok = end != parts[i] && *end == '\0';
  }
  g_strfreev (parts);
  return ok;
}

gboolean
gst_cuda_train_sink_settings_to_config (
    const GstCudaTrainSinkSettings *settings, GtTrainerConfig *config)
{
  const GstCudaTrainSinkSettings *s = settings;

  /* the sink's enums hold the trainer's values (gstcudatrainsink-enums.h) */
  config->model = (GtModel)s->model;
  config->num_classes = (int)s->num_classes;
  config->gpu_id = s->gpu_id;
  config->precision = (GtPrecision)s->precision;
  config->momentum = (float)s->momentum;
  config->weight_decay = (float)s->weight_decay;
  config->nesterov = s->nesterov;
  config->label_smoothing = (float)s->label_smoothing;
  config->seed = s->seed;
  config->num_threads = s->num_threads;
  config->comm_backend = (GtCommBackend)s->comm_backend;
  config->bucket_bytes = (size_t)s->bucket_size_mb << 20;
  gt_trainer_config_set_lr_policy (config, (float)s->lr,
      (GtLrSchedule)s->lr_schedule, (int64_t)s->warmup_steps,
      (int64_t)s->total_steps, (int64_t)s->max_steps);
  return parse_triple (s->mean, config->mean)
      && parse_triple (s->std, config->std);
}
