/* gstcudatrainsink.c: one ResNet training step per batch.
 *
 * SECTION:element-cudatrainsink
 * @title: cudatrainsink
 *
 * Takes the batches `batcher` makes (`other/tensors`: uint8 NHWC images and
 * int32 labels) and trains a ResNet on them with gst-train's trainer
 * library: one SGD step per batch, or, with @mode=eval, a forward pass that
 * adds up loss and accuracy. @device=auto trains on the GPU when the CUDA
 * backend is built and a GPU is usable, else on the CPU reference backend
 * (with a warning). The CPU backend computes in fp32 whatever @precision
 * says.
 *
 * Every @stats-interval steps it posts a `train-stats` element message (and
 * appends the same fields as a JSON line to @metrics-location):
 *
 * - `step` (guint64): steps done, counted across resumes
 * - `epoch` (gdouble): fresh images so far / images per epoch (when the
 *   source announced its epoch size, else 0)
 * - `loss` (gdouble): mean training loss over the interval
 * - `lr` (gdouble): the learning rate of the last step
 * - `images`, `fresh-images` (guint64): images trained on so far, and how
 *   many of them were fresh (not echo repeats), in this run
 * - `images-per-second`, `fresh-images-per-second` (gdouble): over the
 *   interval, wall clock
 * - `echo-factor` (gdouble): images / fresh images so far
 * - `step-time` (gdouble): mean seconds per step over the interval
 * - `data-wait-fraction` (gdouble): the share of the interval's wall time
 *   the trainer spent waiting for the next batch
 *
 * With @mode=eval it posts `eval-result` at EOS: `loss` (mean), `top1`,
 * `top5` (fractions) and `images` (guint64).
 *
 * Checkpoints (safetensors, written atomically; see the trainer's docs)
 * go to @checkpoint-location every @checkpoint-interval steps and at EOS.
 * @resume-from takes such a checkpoint (exact resume: weights, momentum,
 * step, schedule, RNG; the first batches, as many as the steps already
 * done, are skipped so that a deterministic pipeline continues where the
 * checkpoint left it) or a weights-only file (a starting point). With
 * @max-steps the sink returns EOS upstream once the global step reaches it,
 * so the pipeline ends by itself, at the same step whether or not it was
 * resumed.
 *
 * For experiments that compare runs at equal amounts of fresh data (echo
 * makes images and fresh images differ), @snapshot-interval saves the
 * weights every that many fresh images into @snapshot-location, each noted
 * as a `snapshot` JSON line (mark: the multiple it passed, which names the
 * file; fresh-images, images, step, time: where training stood) in
 * @metrics-location; evaluate them afterwards with @mode=eval.
 *
 * A non-finite loss is an error naming the step; the step is not applied
 * and the last checkpoint written stays as it is.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 datasetsrc location=data/fashion-mnist/train num-epochs=2 !
 *     imagedec ! augment width=32 height=32 ! batcher batch-size=128 !
 *     cudatrainsink model=resnet20 lr=0.1 max-steps=500
 *     checkpoint-location=run.safetensors
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstcudatrainsink.h"
#include "train-meta.h"
#include "trainer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_cuda_train_sink_debug);
#define GST_CAT_DEFAULT gst_cuda_train_sink_debug

typedef enum
{
  GST_TRAIN_DEVICE_AUTO,
  GST_TRAIN_DEVICE_CUDA,
  GST_TRAIN_DEVICE_CPU,
} GstTrainDevice;

typedef enum
{
  GST_TRAIN_MODE_TRAIN,
  GST_TRAIN_MODE_EVAL,
} GstTrainMode;

#define DEFAULT_MODEL GT_MODEL_RESNET50
#define DEFAULT_NUM_CLASSES 0
#define DEFAULT_DEVICE GST_TRAIN_DEVICE_AUTO
#define DEFAULT_GPU_ID 0
#define DEFAULT_PRECISION GT_PRECISION_BF16
#define DEFAULT_LR 0.1
#define DEFAULT_MOMENTUM 0.9
#define DEFAULT_WEIGHT_DECAY 1e-4
#define DEFAULT_NESTEROV FALSE
#define DEFAULT_WARMUP_STEPS 0
#define DEFAULT_LR_SCHEDULE GT_LR_COSINE
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
  PROP_NUM_THREADS,
  PROP_SNAPSHOT_INTERVAL,
  PROP_SNAPSHOT_LOCATION,
};

/* What one stats interval adds up. */
typedef struct
{
  guint steps;
  gdouble loss_sum;
  guint64 images;
  guint64 fresh;
  gdouble step_seconds;
  gdouble wait_seconds;
  gint64 start; /* monotonic µs */
} GstTrainInterval;

struct _GstCudaTrainSink
{
  GstBaseSink parent;

  /* Properties, under the object lock. */
  GtModel model;
  guint num_classes;
  GstTrainDevice device;
  gint gpu_id;
  GtPrecision precision;
  gdouble lr;
  gdouble momentum;
  gdouble weight_decay;
  gboolean nesterov;
  guint64 warmup_steps;
  GtLrSchedule lr_schedule;
  guint64 total_steps;
  gdouble label_smoothing;
  guint64 seed;
  gchar *mean;
  gchar *std;
  GstTrainMode mode;
  gchar *checkpoint_location;
  guint checkpoint_interval;
  gchar *resume_from;
  guint64 max_steps;
  guint stats_interval;
  gchar *metrics_location;
  gint num_threads;
  guint64 snapshot_interval;
  gchar *snapshot_location;

  /* What the streaming thread uses: copied from the properties at start,
   * under the object lock, so that a property set meanwhile cannot pull a
   * string from under a checkpoint being written. */
  struct
  {
    GstTrainMode mode;
    gchar *checkpoint_location;
    guint checkpoint_interval;
    gchar *resume_from;
    guint64 max_steps;
    guint stats_interval;
    guint64 snapshot_interval;
    gchar *snapshot_location;
  } run;
  guint64 next_snapshot; /* fresh images at which the next one is due */

  /* Streaming state. */
  gint width, height, channels, batch_size; /* from the caps */
  GstTrainDatasetInfo dataset;
  gboolean have_dataset;
  GtTrainer *trainer;
  gboolean on_cpu;
  gint min_train_batch; /* fewest images a training step takes */
  guint64 skip_batches; /* left to skip after an exact resume */
  guint64 last_saved_step;
  gboolean reached_max;
  FILE *metrics;
  GstTrainInterval interval;
  guint64 images;
  guint64 fresh_images;
  gint64 run_start;
  gint64 last_render_end; /* 0 before the first batch */
  /* the step in flight and its batch (mapped until the step ends) */
  GstBuffer *pending;
  GstMapInfo pending_images;
  GstMapInfo pending_labels;
  gint pending_samples;
  gint64 pending_start;
  GtEvalTotals eval;
  float last_lr;
};

#define gst_cuda_train_sink_parent_class parent_class
G_DEFINE_TYPE (GstCudaTrainSink, gst_cuda_train_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (
    cudatrainsink, "cudatrainsink", GST_RANK_NONE, GST_TYPE_CUDA_TRAIN_SINK);

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS ("other/tensors, format = (string) static, "
                         "num_tensors = (int) 2, framerate = (fraction) 0/1"));

static GType
gst_train_model_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GT_MODEL_RESNET18, "ResNet-18 (torchvision)", "resnet18" },
    { GT_MODEL_RESNET34, "ResNet-34 (torchvision)", "resnet34" },
    { GT_MODEL_RESNET50, "ResNet-50 v1.5 (torchvision)", "resnet50" },
    { GT_MODEL_RESNET101, "ResNet-101 v1.5 (torchvision)", "resnet101" },
    { GT_MODEL_RESNET20, "ResNet-20, CIFAR layout, for small images",
        "resnet20" },
    { GT_MODEL_RESNET32, "ResNet-32, CIFAR layout, for small images",
        "resnet32" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstTrainModel", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static GType
gst_train_device_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_TRAIN_DEVICE_AUTO,
        "CUDA when a GPU is usable, else the CPU (with a warning)", "auto" },
    { GST_TRAIN_DEVICE_CUDA, "CUDA: an error when no GPU is usable", "cuda" },
    { GST_TRAIN_DEVICE_CPU, "The fp32 CPU reference backend", "cpu" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstTrainDevice", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static GType
gst_train_precision_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GT_PRECISION_BF16, "bfloat16 activations, fp32 master weights", "bf16" },
    { GT_PRECISION_FP16, "float16 activations with dynamic loss scaling",
        "fp16" },
    { GT_PRECISION_FP32, "float32 throughout", "fp32" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstTrainPrecision", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static GType
gst_train_lr_schedule_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GT_LR_COSINE, "Cosine to 0 at total-steps", "cosine" },
    { GT_LR_STEP, "Times 0.1 at 30%, 60% and 90% of total-steps", "step" },
    { GT_LR_POLY, "(1 - progress)^2 to 0 at total-steps", "poly" },
    { GT_LR_CONSTANT, "Constant after the warmup", "constant" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstTrainLrSchedule", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static GType
gst_train_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_TRAIN_MODE_TRAIN, "One training step per batch", "train" },
    { GST_TRAIN_MODE_EVAL,
        "Forward only; loss, top-1 and top-5 in an eval-result message at "
        "EOS",
        "eval" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstTrainMode", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static void gst_cuda_train_sink_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec);
static void gst_cuda_train_sink_get_property (
    GObject *object, guint prop_id, GValue *value, GParamSpec *pspec);
static void gst_cuda_train_sink_finalize (GObject *object);
static gboolean gst_cuda_train_sink_start (GstBaseSink *sink);
static gboolean gst_cuda_train_sink_stop (GstBaseSink *sink);
static gboolean gst_cuda_train_sink_set_caps (GstBaseSink *sink, GstCaps *caps);
static gboolean gst_cuda_train_sink_event (GstBaseSink *sink, GstEvent *event);
static GstFlowReturn gst_cuda_train_sink_render (
    GstBaseSink *sink, GstBuffer *buffer);
static void gst_cuda_train_sink_release_pending (GstCudaTrainSink *sink);
static GstStateChangeReturn gst_cuda_train_sink_change_state (
    GstElement *element, GstStateChange transition);

static void
gst_cuda_train_sink_class_init (GstCudaTrainSinkClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *base_class = GST_BASE_SINK_CLASS (klass);
  GParamFlags flags =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;

  gobject_class->set_property = gst_cuda_train_sink_set_property;
  gobject_class->get_property = gst_cuda_train_sink_get_property;
  gobject_class->finalize = gst_cuda_train_sink_finalize;

  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_enum ("model", "Model", "The network to train",
          gst_train_model_get_type (), DEFAULT_MODEL, flags));
  g_object_class_install_property (gobject_class, PROP_NUM_CLASSES,
      g_param_spec_uint ("num-classes", "Number of classes",
          "Outputs of the classifier (0: the number the source announces in "
          "its dataset tags)",
          0, 1 << 20, DEFAULT_NUM_CLASSES, flags));
  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_enum ("device", "Device",
          "Where the training steps run: GPU or CPU",
          gst_train_device_get_type (), DEFAULT_DEVICE, flags));
  g_object_class_install_property (gobject_class, PROP_GPU_ID,
      g_param_spec_int ("gpu-id", "GPU id", "CUDA device to train on", 0,
          G_MAXINT, DEFAULT_GPU_ID, flags));
  g_object_class_install_property (gobject_class, PROP_PRECISION,
      g_param_spec_enum ("precision", "Precision",
          "Arithmetic of activations on the GPU (the CPU backend is fp32)",
          gst_train_precision_get_type (), DEFAULT_PRECISION, flags));
  g_object_class_install_property (gobject_class, PROP_LR,
      g_param_spec_double ("lr", "Learning rate",
          "Peak learning rate of SGD (after the warmup)", 0, 1e6, DEFAULT_LR,
          flags));
  g_object_class_install_property (gobject_class, PROP_MOMENTUM,
      g_param_spec_double ("momentum", "Momentum",
          "Momentum of SGD, as torch.optim.SGD's", 0, 0.9999, DEFAULT_MOMENTUM,
          flags));
  g_object_class_install_property (gobject_class, PROP_WEIGHT_DECAY,
      g_param_spec_double ("weight-decay", "Weight decay",
          "L2 weight decay added to the gradients of convolution and "
          "classifier weights (not batch-norm parameters or biases)",
          0, 1, DEFAULT_WEIGHT_DECAY, flags));
  g_object_class_install_property (gobject_class, PROP_NESTEROV,
      g_param_spec_boolean ("nesterov", "Nesterov",
          "Nesterov momentum, as torch.optim.SGD(nesterov=True)",
          DEFAULT_NESTEROV, flags));
  g_object_class_install_property (gobject_class, PROP_WARMUP_STEPS,
      g_param_spec_uint64 ("warmup-steps", "Warmup steps",
          "Steps over which the learning rate rises linearly to lr", 0,
          G_MAXINT64, DEFAULT_WARMUP_STEPS, flags));
  g_object_class_install_property (gobject_class, PROP_LR_SCHEDULE,
      g_param_spec_enum ("lr-schedule", "Learning-rate schedule",
          "Schedule after the warmup", gst_train_lr_schedule_get_type (),
          DEFAULT_LR_SCHEDULE, flags));
  g_object_class_install_property (gobject_class, PROP_TOTAL_STEPS,
      g_param_spec_uint64 ("total-steps", "Total steps",
          "Length of the schedule (0: max-steps, or constant after the "
          "warmup when that is 0 too)",
          0, G_MAXINT64, DEFAULT_TOTAL_STEPS, flags));
  g_object_class_install_property (gobject_class, PROP_LABEL_SMOOTHING,
      g_param_spec_double ("label-smoothing", "Label smoothing",
          "Label smoothing of the cross-entropy loss", 0, 0.999,
          DEFAULT_LABEL_SMOOTHING, flags));
  g_object_class_install_property (gobject_class, PROP_SEED,
      g_param_spec_uint64 ("seed", "Seed", "Seed of the initial weights", 0,
          G_MAXUINT64, DEFAULT_SEED, flags));
  g_object_class_install_property (gobject_class, PROP_MEAN,
      g_param_spec_string ("mean", "Mean",
          "Per-channel mean subtracted from pixels scaled to 0..1, as "
          "\"R,G,B\" (ImageNet's by default)",
          DEFAULT_MEAN, flags));
  g_object_class_install_property (gobject_class, PROP_STD,
      g_param_spec_string ("std", "Standard deviation",
          "Per-channel divisor after the mean, as \"R,G,B\" (ImageNet's by "
          "default)",
          DEFAULT_STD, flags));
  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode",
          "Train on every batch, or only evaluate", gst_train_mode_get_type (),
          DEFAULT_MODE, flags));
  g_object_class_install_property (gobject_class, PROP_CHECKPOINT_LOCATION,
      g_param_spec_string ("checkpoint-location", "Checkpoint location",
          "safetensors file the checkpoints are written to (atomically); "
          "NULL: none",
          NULL, flags));
  g_object_class_install_property (gobject_class, PROP_CHECKPOINT_INTERVAL,
      g_param_spec_uint ("checkpoint-interval", "Checkpoint interval",
          "Write a checkpoint every this many steps (0: only at EOS)", 0,
          G_MAXUINT, DEFAULT_CHECKPOINT_INTERVAL, flags));
  g_object_class_install_property (gobject_class, PROP_RESUME_FROM,
      g_param_spec_string ("resume-from", "Resume from",
          "Checkpoint to resume exactly from, or weights-only safetensors "
          "file (for example torchvision's state_dict) to start from; NULL: "
          "fresh weights",
          NULL, flags));
  g_object_class_install_property (gobject_class, PROP_MAX_STEPS,
      g_param_spec_uint64 ("max-steps", "Maximum steps",
          "Return EOS upstream once the global step reaches this (0: no "
          "limit)",
          0, G_MAXINT64, DEFAULT_MAX_STEPS, flags));
  g_object_class_install_property (gobject_class, PROP_STATS_INTERVAL,
      g_param_spec_uint ("stats-interval", "Statistics interval",
          "Post a train-stats message every this many steps (0: never)", 0,
          G_MAXUINT, DEFAULT_STATS_INTERVAL, flags));
  g_object_class_install_property (gobject_class, PROP_METRICS_LOCATION,
      g_param_spec_string ("metrics-location", "Metrics location",
          "File the train-stats (and eval-result) fields are appended to as "
          "JSON lines; NULL: none",
          NULL, flags));
  g_object_class_install_property (gobject_class, PROP_SNAPSHOT_INTERVAL,
      g_param_spec_uint64 ("snapshot-interval", "Snapshot interval",
          "Save the weights to snapshot-location every this many fresh "
          "images (not echo repeats), for evaluating a run at fixed amounts "
          "of fresh data (0: never)",
          0, G_MAXUINT64, 0, flags));
  g_object_class_install_property (gobject_class, PROP_SNAPSHOT_LOCATION,
      g_param_spec_string ("snapshot-location", "Snapshot location",
          "Folder the snapshots go to, as fresh-NNNNNNNNNNNN.safetensors "
          "(weights only); each is also a \"snapshot\" JSON line in "
          "metrics-location",
          NULL, flags));
  g_object_class_install_property (gobject_class, PROP_NUM_THREADS,
      g_param_spec_int ("num-threads", "Number of threads",
          "CPU backend threads (0: one per online CPU)", 0, 1024,
          DEFAULT_NUM_THREADS, flags));

  gst_element_class_set_static_metadata (element_class, "Train sink",
      "Sink/Tensor/Training",
      "Trains a ResNet on batches of images, one step per batch, on CUDA or "
      "the CPU",
      "gst-train developers");
  gst_element_class_add_static_pad_template (element_class, &sink_template);

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_cuda_train_sink_change_state);
  base_class->start = GST_DEBUG_FUNCPTR (gst_cuda_train_sink_start);
  base_class->stop = GST_DEBUG_FUNCPTR (gst_cuda_train_sink_stop);
  base_class->set_caps = GST_DEBUG_FUNCPTR (gst_cuda_train_sink_set_caps);
  base_class->event = GST_DEBUG_FUNCPTR (gst_cuda_train_sink_event);
  base_class->render = GST_DEBUG_FUNCPTR (gst_cuda_train_sink_render);

  gst_type_mark_as_plugin_api (gst_train_model_get_type (), 0);
  gst_type_mark_as_plugin_api (gst_train_device_get_type (), 0);
  gst_type_mark_as_plugin_api (gst_train_precision_get_type (), 0);
  gst_type_mark_as_plugin_api (gst_train_lr_schedule_get_type (), 0);
  gst_type_mark_as_plugin_api (gst_train_mode_get_type (), 0);
  GST_DEBUG_CATEGORY_INIT (
      gst_cuda_train_sink_debug, "cudatrainsink", 0, "ResNet training sink");
}

static void
gst_cuda_train_sink_init (GstCudaTrainSink *sink)
{
  sink->model = DEFAULT_MODEL;
  sink->num_classes = DEFAULT_NUM_CLASSES;
  sink->device = DEFAULT_DEVICE;
  sink->gpu_id = DEFAULT_GPU_ID;
  sink->precision = DEFAULT_PRECISION;
  sink->lr = DEFAULT_LR;
  sink->momentum = DEFAULT_MOMENTUM;
  sink->weight_decay = DEFAULT_WEIGHT_DECAY;
  sink->nesterov = DEFAULT_NESTEROV;
  sink->warmup_steps = DEFAULT_WARMUP_STEPS;
  sink->lr_schedule = DEFAULT_LR_SCHEDULE;
  sink->total_steps = DEFAULT_TOTAL_STEPS;
  sink->label_smoothing = DEFAULT_LABEL_SMOOTHING;
  sink->seed = DEFAULT_SEED;
  sink->mean = g_strdup (DEFAULT_MEAN);
  sink->std = g_strdup (DEFAULT_STD);
  sink->mode = DEFAULT_MODE;
  sink->checkpoint_interval = DEFAULT_CHECKPOINT_INTERVAL;
  sink->max_steps = DEFAULT_MAX_STEPS;
  sink->stats_interval = DEFAULT_STATS_INTERVAL;
  sink->num_threads = DEFAULT_NUM_THREADS;
  /* Training is as fast as it goes: no clock to wait for. */
  gst_base_sink_set_sync (GST_BASE_SINK (sink), FALSE);
}

static void
gst_cuda_train_sink_finalize (GObject *object)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (object);

  g_free (sink->mean);
  g_free (sink->std);
  g_free (sink->checkpoint_location);
  g_free (sink->resume_from);
  g_free (sink->metrics_location);
  g_free (sink->snapshot_location);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_cuda_train_sink_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (object);

  GST_OBJECT_LOCK (sink);
  switch (prop_id) {
    case PROP_MODEL:
      sink->model = g_value_get_enum (value);
      break;
    case PROP_NUM_CLASSES:
      sink->num_classes = g_value_get_uint (value);
      break;
    case PROP_DEVICE:
      sink->device = g_value_get_enum (value);
      break;
    case PROP_GPU_ID:
      sink->gpu_id = g_value_get_int (value);
      break;
    case PROP_PRECISION:
      sink->precision = g_value_get_enum (value);
      break;
    case PROP_LR:
      sink->lr = g_value_get_double (value);
      break;
    case PROP_MOMENTUM:
      sink->momentum = g_value_get_double (value);
      break;
    case PROP_WEIGHT_DECAY:
      sink->weight_decay = g_value_get_double (value);
      break;
    case PROP_NESTEROV:
      sink->nesterov = g_value_get_boolean (value);
      break;
    case PROP_WARMUP_STEPS:
      sink->warmup_steps = g_value_get_uint64 (value);
      break;
    case PROP_LR_SCHEDULE:
      sink->lr_schedule = g_value_get_enum (value);
      break;
    case PROP_TOTAL_STEPS:
      sink->total_steps = g_value_get_uint64 (value);
      break;
    case PROP_LABEL_SMOOTHING:
      sink->label_smoothing = g_value_get_double (value);
      break;
    case PROP_SEED:
      sink->seed = g_value_get_uint64 (value);
      break;
    case PROP_MEAN:
      g_free (sink->mean);
      sink->mean = g_value_dup_string (value);
      break;
    case PROP_STD:
      g_free (sink->std);
      sink->std = g_value_dup_string (value);
      break;
    case PROP_MODE:
      sink->mode = g_value_get_enum (value);
      break;
    case PROP_CHECKPOINT_LOCATION:
      g_free (sink->checkpoint_location);
      sink->checkpoint_location = g_value_dup_string (value);
      break;
    case PROP_CHECKPOINT_INTERVAL:
      sink->checkpoint_interval = g_value_get_uint (value);
      break;
    case PROP_RESUME_FROM:
      g_free (sink->resume_from);
      sink->resume_from = g_value_dup_string (value);
      break;
    case PROP_MAX_STEPS:
      sink->max_steps = g_value_get_uint64 (value);
      break;
    case PROP_STATS_INTERVAL:
      sink->stats_interval = g_value_get_uint (value);
      break;
    case PROP_METRICS_LOCATION:
      g_free (sink->metrics_location);
      sink->metrics_location = g_value_dup_string (value);
      break;
    case PROP_NUM_THREADS:
      sink->num_threads = g_value_get_int (value);
      break;
    case PROP_SNAPSHOT_INTERVAL:
      sink->snapshot_interval = g_value_get_uint64 (value);
      break;
    case PROP_SNAPSHOT_LOCATION:
      g_free (sink->snapshot_location);
      sink->snapshot_location = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (sink);
}

static void
gst_cuda_train_sink_get_property (
    GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (object);

  GST_OBJECT_LOCK (sink);
  switch (prop_id) {
    case PROP_MODEL:
      g_value_set_enum (value, sink->model);
      break;
    case PROP_NUM_CLASSES:
      g_value_set_uint (value, sink->num_classes);
      break;
    case PROP_DEVICE:
      g_value_set_enum (value, sink->device);
      break;
    case PROP_GPU_ID:
      g_value_set_int (value, sink->gpu_id);
      break;
    case PROP_PRECISION:
      g_value_set_enum (value, sink->precision);
      break;
    case PROP_LR:
      g_value_set_double (value, sink->lr);
      break;
    case PROP_MOMENTUM:
      g_value_set_double (value, sink->momentum);
      break;
    case PROP_WEIGHT_DECAY:
      g_value_set_double (value, sink->weight_decay);
      break;
    case PROP_NESTEROV:
      g_value_set_boolean (value, sink->nesterov);
      break;
    case PROP_WARMUP_STEPS:
      g_value_set_uint64 (value, sink->warmup_steps);
      break;
    case PROP_LR_SCHEDULE:
      g_value_set_enum (value, sink->lr_schedule);
      break;
    case PROP_TOTAL_STEPS:
      g_value_set_uint64 (value, sink->total_steps);
      break;
    case PROP_LABEL_SMOOTHING:
      g_value_set_double (value, sink->label_smoothing);
      break;
    case PROP_SEED:
      g_value_set_uint64 (value, sink->seed);
      break;
    case PROP_MEAN:
      g_value_set_string (value, sink->mean);
      break;
    case PROP_STD:
      g_value_set_string (value, sink->std);
      break;
    case PROP_MODE:
      g_value_set_enum (value, sink->mode);
      break;
    case PROP_CHECKPOINT_LOCATION:
      g_value_set_string (value, sink->checkpoint_location);
      break;
    case PROP_CHECKPOINT_INTERVAL:
      g_value_set_uint (value, sink->checkpoint_interval);
      break;
    case PROP_RESUME_FROM:
      g_value_set_string (value, sink->resume_from);
      break;
    case PROP_MAX_STEPS:
      g_value_set_uint64 (value, sink->max_steps);
      break;
    case PROP_STATS_INTERVAL:
      g_value_set_uint (value, sink->stats_interval);
      break;
    case PROP_METRICS_LOCATION:
      g_value_set_string (value, sink->metrics_location);
      break;
    case PROP_NUM_THREADS:
      g_value_set_int (value, sink->num_threads);
      break;
    case PROP_SNAPSHOT_INTERVAL:
      g_value_set_uint64 (value, sink->snapshot_interval);
      break;
    case PROP_SNAPSHOT_LOCATION:
      g_value_set_string (value, sink->snapshot_location);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (sink);
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

static gboolean
gst_cuda_train_sink_start (GstBaseSink *base)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);

  GST_OBJECT_LOCK (sink);
  sink->run.mode = sink->mode;
  sink->run.checkpoint_location = g_strdup (sink->checkpoint_location);
  sink->run.checkpoint_interval = sink->checkpoint_interval;
  sink->run.resume_from = g_strdup (sink->resume_from);
  sink->run.max_steps = sink->max_steps;
  sink->run.stats_interval = sink->stats_interval;
  sink->run.snapshot_interval = sink->snapshot_interval;
  sink->run.snapshot_location = g_strdup (sink->snapshot_location);
  GST_OBJECT_UNLOCK (sink);
  sink->next_snapshot = sink->run.snapshot_interval;
  if (sink->run.snapshot_interval && sink->run.snapshot_location == NULL) {
    GST_ELEMENT_ERROR (sink, RESOURCE, SETTINGS,
        ("snapshot-interval is set but snapshot-location is not."), (NULL));
    return FALSE;
  }
  if (sink->run.snapshot_location
      && g_mkdir_with_parents (sink->run.snapshot_location, 0755) < 0) {
    GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_WRITE,
        ("Could not create snapshot folder \"%s\": %s.",
            sink->run.snapshot_location, g_strerror (errno)),
        (NULL));
    return FALSE;
  }
  sink->width = sink->height = sink->channels = sink->batch_size = 0;
  sink->skip_batches = 0;
  sink->last_saved_step = 0;
  sink->reached_max = FALSE;
  sink->images = sink->fresh_images = 0;
  sink->run_start = g_get_monotonic_time ();
  sink->last_render_end = 0;
  memset (&sink->interval, 0, sizeof (sink->interval));
  memset (&sink->eval, 0, sizeof (sink->eval));
  if (sink->metrics_location) {
    sink->metrics = fopen (sink->metrics_location, "a");
    if (sink->metrics == NULL) {
      GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_WRITE,
          ("Could not open metrics file \"%s\": %s.", sink->metrics_location,
              g_strerror (errno)),
          (NULL));
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
gst_cuda_train_sink_stop (GstBaseSink *base)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);

  if (sink->pending) {
    gt_trainer_step_end (sink->trainer, NULL);
    gst_cuda_train_sink_release_pending (sink);
  }
  gt_trainer_free (sink->trainer);
  sink->trainer = NULL;
  if (sink->metrics)
    fclose (sink->metrics);
  sink->metrics = NULL;
  g_clear_pointer (&sink->run.checkpoint_location, g_free);
  g_clear_pointer (&sink->run.resume_from, g_free);
  g_clear_pointer (&sink->run.snapshot_location, g_free);
  if (sink->have_dataset)
    gst_train_dataset_info_clear (&sink->dataset);
  sink->have_dataset = FALSE;
  return TRUE;
}

/* After max-steps the sink ended its stream without an EOS event: GstBaseSink
 * neither re-posts EOS when the pipeline plays again after a pause (a bin
 * forgets EOS messages when it pauses) nor lets a pause complete without a
 * buffer to preroll. The sink posts EOS on PAUSED -> PLAYING itself, and
 * stops prerolling once it reached max-steps (async off). */
static GstStateChangeReturn
gst_cuda_train_sink_change_state (
    GstElement *element, GstStateChange transition)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (element);
  GstStateChangeReturn ret;

  /* not from render: the preroll lock is held there */
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    gst_base_sink_set_async_enabled (GST_BASE_SINK (sink), TRUE);
  else if (transition == GST_STATE_CHANGE_PLAYING_TO_PAUSED
      && sink->reached_max)
    gst_base_sink_set_async_enabled (GST_BASE_SINK (sink), FALSE);
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_PLAYING && sink->reached_max
      && ret != GST_STATE_CHANGE_FAILURE)
    gst_element_post_message (element, gst_message_new_eos (GST_OBJECT (sink)));
  return ret;
}

/* Takes "other/tensors" with types "uint8,int32" and dimensions
 * "C:W:H:N,N", C being 1 or 3. */
static gboolean
gst_cuda_train_sink_set_caps (GstBaseSink *base, GstCaps *caps)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);
  GstStructure *s = gst_caps_get_structure (caps, 0);
  const gchar *types = gst_structure_get_string (s, "types");
  const gchar *dims = gst_structure_get_string (s, "dimensions");
  gint c = 0, w = 0, h = 0, n = 0, n_labels = 0;

  if (types == NULL || strcmp (types, "uint8,int32") != 0 || dims == NULL
      || sscanf (dims, "%d:%d:%d:%d,%d", &c, &w, &h, &n, &n_labels) != 5
      || (c != 1 && c != 3) || w < 1 || h < 1 || n < 1 || n != n_labels) {
    GST_ELEMENT_ERROR (sink, CORE, NEGOTIATION,
        ("cudatrainsink takes batches of uint8 images (1 or 3 channels) "
         "with int32 labels, as batcher makes them."),
        ("got %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  if (sink->trainer != NULL
      && (w != sink->width || h != sink->height || n > sink->batch_size)) {
    GST_ELEMENT_ERROR (sink, CORE, NEGOTIATION,
        ("Batches changed from %d images of %dx%d to %d of %dx%d during "
         "training.",
            sink->batch_size, sink->width, sink->height, n, w, h),
        (NULL));
    return FALSE;
  }
  sink->channels = c;
  sink->width = w;
  sink->height = h;
  if (sink->trainer == NULL)
    sink->batch_size = n;
  return TRUE;
}

/* Creates the trainer at the first batch, when caps and dataset facts are
 * known; loads @resume-from. */
static gboolean
gst_cuda_train_sink_setup (GstCudaTrainSink *sink)
{
  GtTrainerConfig config;
  gchar why[512];
  gint resumed = 0, status;

  gt_trainer_config_init (&config);
  GST_OBJECT_LOCK (sink);
  config.model = sink->model;
  config.num_classes = sink->num_classes;
  config.gpu_id = sink->gpu_id;
  config.precision = sink->precision;
  config.lr = (float)sink->lr;
  config.momentum = (float)sink->momentum;
  config.weight_decay = (float)sink->weight_decay;
  config.nesterov = sink->nesterov;
  config.warmup_steps = (int64_t)sink->warmup_steps;
  config.lr_schedule = sink->lr_schedule;
  config.total_steps =
      (int64_t)(sink->total_steps ? sink->total_steps : sink->max_steps);
  config.label_smoothing = (float)sink->label_smoothing;
  config.seed = sink->seed;
  config.num_threads = sink->num_threads;
  if (!parse_triple (sink->mean, config.mean)
      || !parse_triple (sink->std, config.std)) {
    GST_OBJECT_UNLOCK (sink);
    GST_ELEMENT_ERROR (sink, LIBRARY, SETTINGS,
        ("mean and std must be three numbers, \"R,G,B\"."), (NULL));
    return FALSE;
  }
  GST_OBJECT_UNLOCK (sink);
  /* the step schedule: times 0.1 at 30%, 60% and 90% of the run */
  if (config.lr_schedule == GT_LR_STEP) {
    config.lr_step_size = config.total_steps > config.warmup_steps
        ? MAX (1, (config.total_steps - config.warmup_steps) * 3 / 10)
        : G_MAXINT64;
    config.lr_gamma = 0.1f;
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

  sink->on_cpu = TRUE;
  if (sink->device != GST_TRAIN_DEVICE_CPU) {
    if (gt_cuda_device_count (why, sizeof (why)) > 0) {
      config.backend = GT_BACKEND_CUDA;
      sink->trainer = gt_trainer_new (&config, why, sizeof (why));
      sink->on_cpu = sink->trainer == NULL;
    }
    if (sink->trainer == NULL && sink->device == GST_TRAIN_DEVICE_CUDA) {
      GST_ELEMENT_ERROR (sink, RESOURCE, NOT_FOUND,
          ("device=cuda, but CUDA cannot train here: %s.", why), (NULL));
      return FALSE;
    }
    if (sink->trainer == NULL)
      GST_ELEMENT_WARNING (
          sink, RESOURCE, NOT_FOUND, ("Training on the CPU: %s.", why), (NULL));
  }
  if (sink->trainer == NULL) {
    config.backend = GT_BACKEND_CPU;
    config.precision = GT_PRECISION_FP32;
    sink->trainer = gt_trainer_new (&config, why, sizeof (why));
  }
  if (sink->trainer == NULL) {
    GST_ELEMENT_ERROR (sink, LIBRARY, INIT,
        ("Could not set up %s: %s.", gt_model_name (config.model), why),
        (NULL));
    return FALSE;
  }
  sink->min_train_batch = gt_trainer_min_train_batch (sink->trainer);
  GST_INFO_OBJECT (sink, "%s, %d classes, %zu parameters, on the %s",
      gt_model_name (config.model), config.num_classes,
      gt_trainer_num_parameters (sink->trainer), sink->on_cpu ? "CPU" : "GPU");

  if (sink->run.resume_from) {
    status = gt_trainer_load (sink->trainer, sink->run.resume_from, &resumed);
    if (status != GT_OK) {
      if (status == GT_ERROR_IO)
        GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_READ,
            ("Cannot resume from \"%s\": %s.", sink->run.resume_from,
                gt_trainer_error (sink->trainer)),
            (NULL));
      else
        GST_ELEMENT_ERROR (sink, RESOURCE, SETTINGS,
            ("Cannot resume from \"%s\": %s.", sink->run.resume_from,
                gt_trainer_error (sink->trainer)),
            (NULL));
      return FALSE;
    }
    if (resumed && sink->run.mode == GST_TRAIN_MODE_TRAIN)
      sink->skip_batches = (guint64)gt_trainer_global_step (sink->trainer);
    sink->last_saved_step = (guint64)gt_trainer_global_step (sink->trainer);
    GST_INFO_OBJECT (sink, "%s %s at step %" G_GUINT64_FORMAT,
        resumed ? "resumed from" : "started from weights of",
        sink->run.resume_from, sink->last_saved_step);
  }
  return TRUE;
}

static gboolean
gst_cuda_train_sink_save (GstCudaTrainSink *sink)
{
  gchar epoch[32];

  if (sink->run.checkpoint_location == NULL || sink->trainer == NULL
      || sink->run.mode != GST_TRAIN_MODE_TRAIN)
    return TRUE;
  g_snprintf (epoch, sizeof (epoch), "%.6f",
      sink->have_dataset && sink->dataset.epoch_samples
          ? (double)sink->fresh_images / sink->dataset.epoch_samples
          : 0.0);
  gt_trainer_set_metadata (sink->trainer, "epoch", epoch);
  if (gt_trainer_save (sink->trainer, sink->run.checkpoint_location, 0)
      != GT_OK) {
    GST_ELEMENT_ERROR (sink, RESOURCE, WRITE,
        ("Could not write checkpoint \"%s\".", sink->run.checkpoint_location),
        ("%s", gt_trainer_error (sink->trainer)));
    return FALSE;
  }
  sink->last_saved_step = (guint64)gt_trainer_global_step (sink->trainer);
  GST_DEBUG_OBJECT (
      sink, "checkpoint at step %" G_GUINT64_FORMAT, sink->last_saved_step);
  return TRUE;
}

static void
gst_cuda_train_sink_write_json (GstCudaTrainSink *sink, GstStructure *s)
{
  GString *line;
  gint i;

  if (sink->metrics == NULL)
    return;
  line = g_string_new ("{\"type\": \"");
  g_string_append (line, gst_structure_get_name (s));
  g_string_append_c (line, '"');
  for (i = 0; i < gst_structure_n_fields (s); i++) {
    const gchar *name = gst_structure_nth_field_name (s, i);
    const GValue *value = gst_structure_get_value (s, name);

    g_string_append_printf (line, ", \"%s\": ", name);
    if (G_VALUE_HOLDS_DOUBLE (value)) {
      gchar number[G_ASCII_DTOSTR_BUF_SIZE];
      gdouble d = g_value_get_double (value);

      /* JSON has no NaN or infinity */
      if (isfinite (d))
        g_string_append (
            line, g_ascii_formatd (number, sizeof (number), "%.6g", d));
      else
        g_string_append (line, "null");
    } else if (G_VALUE_HOLDS_UINT64 (value))
      g_string_append_printf (
          line, "%" G_GUINT64_FORMAT, g_value_get_uint64 (value));
    else
      g_string_append (line, "null");
  }
  g_string_append (line, "}\n");
  fputs (line->str, sink->metrics);
  fflush (sink->metrics);
  g_string_free (line, TRUE);
}

static void
gst_cuda_train_sink_post_stats (GstCudaTrainSink *sink)
{
  GstTrainInterval *interval = &sink->interval;
  gdouble wall = (g_get_monotonic_time () - interval->start) / 1e6;
  gdouble epoch = sink->have_dataset && sink->dataset.epoch_samples
      ? (gdouble)sink->fresh_images / sink->dataset.epoch_samples
      : 0.0;
  GstStructure *s;

  if (wall <= 0)
    wall = 1e-9;
  s = gst_structure_new ("train-stats", "step", G_TYPE_UINT64,
      (guint64)gt_trainer_global_step (sink->trainer), "epoch", G_TYPE_DOUBLE,
      epoch, "loss", G_TYPE_DOUBLE, interval->loss_sum / interval->steps, "lr",
      G_TYPE_DOUBLE, (gdouble)sink->last_lr, "images", G_TYPE_UINT64,
      sink->images, "fresh-images", G_TYPE_UINT64, sink->fresh_images,
      "images-per-second", G_TYPE_DOUBLE, interval->images / wall,
      "fresh-images-per-second", G_TYPE_DOUBLE, interval->fresh / wall,
      "echo-factor", G_TYPE_DOUBLE,
      sink->fresh_images ? (gdouble)sink->images / sink->fresh_images : 0.0,
      "step-time", G_TYPE_DOUBLE, interval->step_seconds / interval->steps,
      "data-wait-fraction", G_TYPE_DOUBLE,
      MIN (1.0, interval->wait_seconds / wall), "time", G_TYPE_DOUBLE,
      (g_get_monotonic_time () - sink->run_start) / 1e6, NULL);
  gst_cuda_train_sink_write_json (sink, s);
  gst_element_post_message (
      GST_ELEMENT (sink), gst_message_new_element (GST_OBJECT (sink), s));
  memset (interval, 0, sizeof (*interval));
  interval->start = g_get_monotonic_time ();
}

/* Lets go of the batch of the step in flight. */
static void
gst_cuda_train_sink_release_pending (GstCudaTrainSink *sink)
{
  if (sink->pending == NULL)
    return;
  gst_memory_unmap (
      gst_buffer_peek_memory (sink->pending, 0), &sink->pending_images);
  gst_memory_unmap (
      gst_buffer_peek_memory (sink->pending, 1), &sink->pending_labels);
  gst_buffer_unref (sink->pending);
  sink->pending = NULL;
}

/* Saves the weights as fresh-N.safetensors each time the fresh images pass
 * a multiple of snapshot-interval, and notes it in the metrics. */
static gboolean
gst_cuda_train_sink_snapshot (GstCudaTrainSink *sink)
{
  while (sink->run.snapshot_interval
      && sink->fresh_images >= sink->next_snapshot) {
    gchar *name = g_strdup_printf (
        "fresh-%012" G_GUINT64_FORMAT ".safetensors", sink->next_snapshot);
    gchar *path = g_build_filename (sink->run.snapshot_location, name, NULL);
    gboolean ok = gt_trainer_save (sink->trainer, path, 1) == GT_OK;

    if (ok) {
      GstStructure *s = gst_structure_new ("snapshot", "mark", G_TYPE_UINT64,
          sink->next_snapshot, "fresh-images", G_TYPE_UINT64,
          sink->fresh_images, "images", G_TYPE_UINT64, sink->images, "step",
          G_TYPE_UINT64, (guint64)gt_trainer_global_step (sink->trainer),
          "time", G_TYPE_DOUBLE,
          (g_get_monotonic_time () - sink->run_start) / 1e6, NULL);

      gst_cuda_train_sink_write_json (sink, s);
      gst_structure_free (s);
    } else {
      GST_ELEMENT_ERROR (sink, RESOURCE, WRITE,
          ("Could not write snapshot \"%s\".", path),
          ("%s", gt_trainer_error (sink->trainer)));
    }
    g_free (path);
    g_free (name);
    if (!ok)
      return FALSE;
    sink->next_snapshot += sink->run.snapshot_interval;
  }
  return TRUE;
}

/* Ends the step in flight: its statistics, its checkpoint, and max-steps
 * (EOS). */
static GstFlowReturn
gst_cuda_train_sink_finish_step (GstCudaTrainSink *sink)
{
  GtStepResult result;
  gint status, fresh;

  if (sink->pending == NULL)
    return GST_FLOW_OK;
  status = gt_trainer_step_end (sink->trainer, &result);
  fresh = gst_train_buffer_count_fresh (sink->pending);
  if (fresh < 0)
    fresh = sink->pending_samples; /* no metadata: nothing says it repeats */
  gst_cuda_train_sink_release_pending (sink);
  if (status == GT_ERROR_NONFINITE) {
    GST_ELEMENT_ERROR (sink, STREAM, FAILED,
        ("Training diverged: %s.", gt_trainer_error (sink->trainer)),
        ("the last checkpoint written (step %" G_GUINT64_FORMAT
         ") is kept; lower lr or check the data",
            sink->last_saved_step));
    return GST_FLOW_ERROR;
  }
  if (status != GT_OK) {
    GST_ELEMENT_ERROR (sink, STREAM, FAILED,
        ("%s.", gt_trainer_error (sink->trainer)), (NULL));
    return GST_FLOW_ERROR;
  }

  sink->images += sink->pending_samples;
  sink->fresh_images += fresh;
  sink->last_lr = result.lr;
  sink->interval.steps++;
  sink->interval.loss_sum += result.loss;
  sink->interval.images += sink->pending_samples;
  sink->interval.fresh += fresh;
  sink->interval.step_seconds +=
      (g_get_monotonic_time () - sink->pending_start) / 1e6;
  if (sink->run.stats_interval
      && sink->interval.steps >= sink->run.stats_interval)
    gst_cuda_train_sink_post_stats (sink);
  if (sink->run.checkpoint_interval
      && (guint64)result.step % sink->run.checkpoint_interval == 0
      && !gst_cuda_train_sink_save (sink))
    return GST_FLOW_ERROR;
  if (!gst_cuda_train_sink_snapshot (sink))
    return GST_FLOW_ERROR;

  if (sink->run.max_steps && (guint64)result.step >= sink->run.max_steps) {
    GST_INFO_OBJECT (
        sink, "reached max-steps %" G_GUINT64_FORMAT, sink->run.max_steps);
    sink->reached_max = TRUE;
    if (sink->last_saved_step != (guint64)result.step
        && !gst_cuda_train_sink_save (sink))
      return GST_FLOW_ERROR;
    if (sink->interval.steps)
      gst_cuda_train_sink_post_stats (sink);
    /* EOS returned upstream stops the sources, but the EOS event they then
     * send need not come back: a queue between here and them drops events
     * once it got EOS from downstream. The sink is where the stream ends, so
     * it says so itself. */
    gst_element_post_message (
        GST_ELEMENT_CAST (sink), gst_message_new_eos (GST_OBJECT_CAST (sink)));
    return GST_FLOW_EOS;
  }
  return GST_FLOW_OK;
}

/* Maps the two memories of @buffer as a batch; FALSE (with an error
 * posted) when it is not one. */
static gboolean
gst_cuda_train_sink_map_batch (GstCudaTrainSink *sink, GstBuffer *buffer,
    GstMapInfo *images, GstMapInfo *labels, GtBatch *batch)
{
  gsize image_bytes = (gsize)sink->width * sink->height * sink->channels;
  gint n;

  if (gst_buffer_n_memory (buffer) != 2) {
    GST_ELEMENT_ERROR (sink, STREAM, FORMAT,
        ("A batch must hold two memories (images, labels); this one has %u.",
            gst_buffer_n_memory (buffer)),
        (NULL));
    return FALSE;
  }
  if (!gst_memory_map (
          gst_buffer_peek_memory (buffer, 0), images, GST_MAP_READ))
    goto map_failed;
  if (!gst_memory_map (
          gst_buffer_peek_memory (buffer, 1), labels, GST_MAP_READ)) {
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 0), images);
    goto map_failed;
  }
  n = (gint)(labels->size / sizeof (int32_t));
  if (n < 1 || images->size < image_bytes * n || n > sink->batch_size) {
    GST_ELEMENT_ERROR (sink, STREAM, FORMAT,
        ("A batch of %" G_GSIZE_FORMAT " bytes of images and %" G_GSIZE_FORMAT
         " of labels does not match its caps.",
            images->size, labels->size),
        (NULL));
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 0), images);
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 1), labels);
    return FALSE;
  }
  memset (batch, 0, sizeof (*batch));
  batch->num_samples = n;
  batch->images = images->data;
  batch->labels = (const int32_t *)labels->data;
  batch->height = sink->height;
  batch->width = sink->width;
  batch->channels = sink->channels;
  return TRUE;

map_failed:
  GST_ELEMENT_ERROR (sink, STREAM, FAILED, ("Could not read a batch."), (NULL));
  return FALSE;
}

/* A step is begun here and ended when the next batch arrives (or at EOS):
 * a device backend computes while upstream prepares the next batch. */
static GstFlowReturn
gst_cuda_train_sink_render (GstBaseSink *base, GstBuffer *buffer)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);
  gint64 start = g_get_monotonic_time ();
  GstMapInfo images, labels;
  GtBatch batch;
  GstFlowReturn ret;
  gint status;

  if (sink->reached_max)
    return GST_FLOW_EOS;
  if (sink->trainer == NULL) {
    if (!gst_cuda_train_sink_setup (sink))
      return GST_FLOW_ERROR;
    sink->interval.start = start;
  }
  /* resumed from a checkpoint at or past max-steps: nothing to do */
  if (sink->run.mode == GST_TRAIN_MODE_TRAIN && sink->run.max_steps
      && (guint64)gt_trainer_global_step (sink->trainer)
          >= sink->run.max_steps) {
    sink->reached_max = TRUE;
    gst_element_post_message (
        GST_ELEMENT_CAST (sink), gst_message_new_eos (GST_OBJECT_CAST (sink)));
    return GST_FLOW_EOS;
  }
  if (sink->skip_batches > 0) {
    sink->skip_batches--;
    return GST_FLOW_OK;
  }
  if (!gst_cuda_train_sink_map_batch (sink, buffer, &images, &labels, &batch))
    return GST_FLOW_ERROR;
  /* a last, partial batch too small for batch-norm in training (one value
   * per channel) is dropped, as DataLoader(drop_last=True) would */
  if (sink->run.mode == GST_TRAIN_MODE_TRAIN
      && batch.num_samples < sink->min_train_batch) {
    GST_ELEMENT_WARNING (sink, STREAM, FAILED,
        ("Dropped a batch of %d images: batch-norm needs at least %d to "
         "train at this image size.",
            batch.num_samples, sink->min_train_batch),
        (NULL));
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 0), &images);
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 1), &labels);
    return GST_FLOW_OK;
  }

  if (sink->run.mode == GST_TRAIN_MODE_EVAL) {
    status = gt_trainer_eval (sink->trainer, &batch, &sink->eval);
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 0), &images);
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 1), &labels);
    if (status != GT_OK) {
      GST_ELEMENT_ERROR (sink, STREAM, FAILED,
          ("%s.", gt_trainer_error (sink->trainer)), (NULL));
      return GST_FLOW_ERROR;
    }
    return GST_FLOW_OK;
  }

  /* The wait for this batch: from handing back the last one to now. */
  if (sink->last_render_end)
    sink->interval.wait_seconds += (start - sink->last_render_end) / 1e6;
  ret = gst_cuda_train_sink_finish_step (sink);
  if (ret != GST_FLOW_OK) {
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 0), &images);
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 1), &labels);
    return ret;
  }
  status = gt_trainer_step_begin (sink->trainer, &batch);
  if (status != GT_OK) {
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 0), &images);
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 1), &labels);
    GST_ELEMENT_ERROR (sink, STREAM, FAILED,
        ("%s.", gt_trainer_error (sink->trainer)), (NULL));
    return GST_FLOW_ERROR;
  }
  sink->pending = gst_buffer_ref (buffer);
  sink->pending_images = images;
  sink->pending_labels = labels;
  sink->pending_samples = batch.num_samples;
  sink->pending_start = start;
  /* the last step allowed ends now, so that EOS goes out at once */
  if (sink->run.max_steps
      && (guint64)gt_trainer_global_step (sink->trainer) + 1
          >= sink->run.max_steps)
    ret = gst_cuda_train_sink_finish_step (sink);
  sink->last_render_end = g_get_monotonic_time ();
  return ret;
}

static gboolean
gst_cuda_train_sink_event (GstBaseSink *base, GstEvent *event)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_TAG: {
      GstTagList *tags;
      GstTrainDatasetInfo info;

      gst_event_parse_tag (event, &tags);
      if (gst_train_dataset_info_from_tag_list (tags, &info)) {
        if (sink->have_dataset)
          gst_train_dataset_info_clear (&sink->dataset);
        sink->dataset = info;
        sink->have_dataset = TRUE;
      }
      break;
    }
    case GST_EVENT_EOS:
      if (sink->reached_max) {
        /* the EOS message went out when max-steps was reached */
        gst_event_unref (event);
        return TRUE;
      }
      if (sink->trainer && sink->run.mode == GST_TRAIN_MODE_EVAL) {
        gdouble n = MAX (1, sink->eval.num_samples);
        GstStructure *s = gst_structure_new ("eval-result", "loss",
            G_TYPE_DOUBLE, sink->eval.loss_sum / n, "top1", G_TYPE_DOUBLE,
            sink->eval.correct_top1 / n, "top5", G_TYPE_DOUBLE,
            sink->eval.correct_top5 / n, "images", G_TYPE_UINT64,
            (guint64)sink->eval.num_samples, NULL);

        gst_cuda_train_sink_write_json (sink, s);
        gst_element_post_message (
            GST_ELEMENT (sink), gst_message_new_element (GST_OBJECT (sink), s));
      } else if (sink->trainer) {
        GstFlowReturn ret = gst_cuda_train_sink_finish_step (sink);

        if (ret == GST_FLOW_EOS) {
          /* that step was the last one: max-steps posted EOS already */
          gst_event_unref (event);
          return TRUE;
        }
        if (ret != GST_FLOW_OK) {
          /* the error is posted; the last checkpoint stays as it is */
          gst_event_unref (event);
          return FALSE;
        }
        if (sink->interval.steps)
          gst_cuda_train_sink_post_stats (sink);
        if ((guint64)gt_trainer_global_step (sink->trainer)
                != sink->last_saved_step
            || sink->last_saved_step == 0)
          gst_cuda_train_sink_save (sink);
      }
      break;
    case GST_EVENT_FLUSH_STOP:
      /* a flushing seek restarts the stream: end the step in flight, and
       * let max-steps be checked anew */
      if (sink->pending && sink->trainer) {
        gt_trainer_step_end (sink->trainer, NULL);
        gst_cuda_train_sink_release_pending (sink);
      }
      sink->reached_max = FALSE;
      break;
    default:
      break;
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (base, event);
}
