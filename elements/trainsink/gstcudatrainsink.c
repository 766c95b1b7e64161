/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstcudatrainsink.c: one ResNet training step per batch.
 *
 * SECTION:element-cudatrainsink
 * @title: cudatrainsink
 *
 * Takes the batches `batcher` makes and trains a ResNet on them with
 * gst-train's trainer library: one SGD step per batch, or, with @mode=eval,
 * a forward pass that adds up loss and accuracy. A batch is
 * `other/tensors` with `types="uint8,int32"` and
 * `dimensions="C:W:H:N,N"`: N images of WxH pixels with C channels (1 or 3),
 * uint8, NHWC, in the first memory, and their N int32 labels in the second
 * (the pad template can fix the types, not the sizes); a one-channel batch
 * is trained on as grey (R = G = B). Batches that change image size, or
 * grow beyond the first batch's N, during training are an error.
 * @device=auto trains
 * on the GPU when the CUDA backend is built and a GPU is usable, else on the
 * CPU reference backend: with a warning when the machine has the NVIDIA
 * driver (the GPU was to be expected), with an info message when it does
 * not ("Training on the CPU: REASON.", "Evaluating on the CPU: REASON."
 * with @mode=eval). The CPU backend computes in fp32 whatever @precision
 * says.
 *
 * The trainer is made at the first batch, once the caps and the dataset
 * facts are known. An info message then says what runs: the model, the
 * classes (their count and names from the dataset tags, or num-classes),
 * the images of an epoch and the batches, and on the CPU the fp32 it
 * computes in whatever @precision says (rank 0's in a job); in a job of
 * more than one rank every rank also says what it joined: the world size,
 * the global batch and how many images its shard holds. Classes that are
 * all named as a dataset's splits (train, test, val, ...) are a warning:
 * datasetsrc's location is then the folder above the splits. A step begins
 * when a batch arrives and ends when the next one arrives (or at EOS), so
 * that a GPU computes while upstream prepares the next batch.
 *
 * At every step that is a multiple of @stats-interval (on the same steps
 * after a resume), and once more at the end, it posts a
 * `train-stats` element message (and appends the same fields as a JSON
 * line, `{"type": "train-stats", ...}`, to @metrics-location):
 *
 * - `step` (guint64): steps done, counted across resumes
 * - `epoch` (gdouble): fresh images so far, those before a resume
 *   included, / images per epoch (when the source announced its epoch
 *   size, else 0)
 * - `loss` (gdouble): mean training loss over the interval
 * - `lr` (gdouble): the learning rate of the last step
 * - `top1`, `top5` (gdouble): the share of the interval's images whose
 *   label was the model's first guess, or among its first five, in the
 *   training step (before the step's update, augmented, as trained on)
 * - `images`, `fresh-images` (guint64): images trained on so far, and how
 *   many of them were fresh (not echo repeats), in this run
 * - `images-per-second`, `fresh-images-per-second` (gdouble): over the
 *   interval, wall clock
 * - `echo-factor` (gdouble): images / fresh images so far
 * - `step-time` (gdouble): mean seconds per step over the interval, from
 *   the step's start to its end (on a GPU this can include waiting)
 * - `busy-time` (gdouble): mean seconds the trainer computed per step,
 *   without any wait: on the CPU the step's computation, on the GPU the
 *   device time between its first and last kernel (CUDA events; a step
 *   reports the one before it)
 * - `data-wait-fraction` (gdouble): the share of the interval's wall time
 *   the trainer spent waiting for the next batch
 * - `comm-time` (gdouble): seconds of the interval the steps spent
 *   averaging the gradients over the ranks, waiting there for the slowest
 *   rank included (on the GPU: waiting for the reduction), 0 alone
 * - `slowest-rank` (gint): the rank the others waited for over the
 *   interval: the one that spent the most time outside the reduction
 *   (waiting for data and computing); 0 alone
 * - `straggler-wait` (gdouble): mean seconds per step the other ranks
 *   waited for `slowest-rank` over the interval (its time outside the
 *   reduction less theirs, averaged over them): a rank that lags before
 *   it stalls; 0 alone
 * - `rank`, `world-size` (gint): the rank that posted the message, and how
 *   many there are (0 and 1 alone)
 * - `compute` (gchararray): what the trainer runs on: on the CPU the BLAS,
 *   the kernels it runs and the vector unit of the direct convolutions
 *   and of the streaming passes ("CPU: OpenBLAS 0.3.21, Cooperlake
 *   kernels; direct 3x3 convolutions: avx512; streaming passes: avx512"),
 *   on a GPU its number, name, cuDNN version and precision
 * - `sink-memory-fraction`, `pinned-fraction` (gdouble): the share of the
 *   interval's batches whose images were in the pool the sink offers
 *   (the trainer's batch memory, taken by batcher from the ALLOCATION
 *   query), and in page-locked memory (that pool where a GPU is usable)
 * - `time` (gdouble): seconds since the sink started
 *
 * In a data-parallel job the statistics are the job's: `images` and
 * `fresh-images` (and the per-second rates) summed over the ranks, `epoch`
 * over all the shards, `loss`, `top1` and `top5` over every rank's
 * batches, and
 * `data-wait-fraction`, `comm-time`, `step-time` and `busy-time` the
 * slowest rank's; the memory fractions are the posting rank's own.
 *
 * With @mode=eval it posts an `eval-result` element message at EOS (and
 * writes it as a JSON line): `loss` (gdouble, mean), `top1`, `top5`
 * (gdouble, fractions) and `images` (guint64).
 *
 * @metrics-location is opened (to append to) at start, on rank 0: a file
 * that cannot be opened is an error then, with the OS reason. In its JSON
 * lines a number that is not finite is written as null (JSON has no NaN).
 *
 * ## TensorBoard
 *
 * With @tensorboard-logdir the same numbers go to a TensorBoard event file
 * in that folder (made if missing), `events.out.tfevents.TIME.HOST.PID`,
 * as scalars (float32, TensorBoard's simple_value) with the step as x,
 * written at each train-stats (so that a
 * running `tensorboard --logdir` shows the run live) and at the
 * eval-result: `train/loss`, `train/lr`, `train/top1`, `train/top5`,
 * `train/epoch`, `speed/images_per_second`,
 * `speed/fresh_images_per_second`, `time/step_time`, `time/busy_time`,
 * `time/data_wait_fraction`; `echo/factor` once an echo repeat was
 * trained on (the sink sees echo only through its repeats); in a
 * data-parallel job `dist/comm_time` and `dist/slowest_rank` (rank 0
 * writes); and from an evaluation `eval/loss`, `eval/top1`, `eval/top5`
 * at the step of the checkpoint evaluated. Point an evaluation at its
 * training run's folder and TensorBoard shows both together. Each run
 * writes a new file, which starts by saying at which step the run
 * (re)starts (a SessionLog START event, as PyTorch's
 * `SummaryWriter(purge_step=)` writes it): a run resumed from a checkpoint
 * continues the curves of the runs before it in the same folder, and
 * TensorBoard drops what an earlier run wrote after that checkpoint, so
 * that each step shows once. A fresh run (step 0) in a folder that holds
 * another replaces it. A folder that cannot be made or written is an
 * error at start; a write that fails later (a full disk) is one warning,
 * training goes on, the file keeps its whole records, and later reports
 * are written again once there is room.
 *
 * Checkpoints (safetensors, written atomically; see the trainer's docs)
 * go to @checkpoint-location every @checkpoint-interval steps and at the
 * end; its folder must exist and be writable when the sink starts.
 * @resume-from takes such a checkpoint (exact resume: weights, momentum,
 * step, schedule, RNG, and the fresh images seen, so that `epoch` goes on
 * from where it was) or a weights-only file (a starting point); an info
 * message after the one that says what runs says which ("Resumed from
 * step S of FILE: the source goes on after the N samples it trained on.",
 * or "...: no source asked where to start, so the first S batches, trained
 * on before, are skipped.", or "Started from the weights of FILE (weights
 * only: step 0, momentum zero)."). A file that holds another model or
 * class count is an error that says so, rather than the tensors that
 * differ ("Cannot resume from "FILE": it holds a resnet20, not a resnet50.
 * Set model=resnet20 to use it."): the model its metadata names, or, in a
 * file saved from PyTorch, the one whose state_dict names and shapes it
 * has. On an
 * exact resume a deterministic pipeline continues where the checkpoint
 * left it without reading again what was trained on: datasetsrc asks
 * downstream where to start before its first buffer (the custom query
 * GST_TRAIN_RESUME_QUERY of train-meta.h), the sink answers from the
 * checkpoint's header (samples_seen over world_size: this rank's samples),
 * echo turns that into the window its shuffle buffer needs, and the source
 * starts there. When no source asks (another source, or a checkpoint from
 * another world size), the sink skips, as before, as many batches as the
 * steps already done. At EOS in train mode the final checkpoint is written
 * unless one was just written at that step; mode=eval writes none, and an
 * EOS that follows an error writes nothing (the last checkpoint stays).
 * The read-only @checkpoint-step says at which step this run last wrote
 * one (-1: it wrote none), after the run too: gst-train's closing line
 * reads it.
 *
 * A run that reaches EOS having trained nothing is an error, not a run
 * that ended (outside a data-parallel job, where the ranks agree on it;
 * see below), and writes no checkpoint: "End of stream before the first
 * batch: nothing was trained, and no checkpoint was written." (with
 * @mode=eval: "nothing was evaluated."), or "End of stream before a
 * training step: ..." when the batches that came were all skipped after a
 * resume. The error goes on to say why, as far as the sink can tell: the
 * source's epoch holds fewer images than one batch, and batcher's
 * drop-remainder drops a last partial batch (batcher warns that it
 * dropped them); the source resumed after the samples the checkpoint
 * trained on and what was left made no batch; the batches were skipped.
 * A stop (the signal below) before the first batch is not an error.
 * With
 * @max-steps the sink returns EOS upstream once the global step reaches it,
 * so the pipeline ends by itself, at the same step whether or not it was
 * resumed; a checkpoint already at max-steps is a warning, trains nothing
 * and is left as it is.
 *
 * The action signal `stop` ends a run in the same way from the
 * application; it may be emitted from any thread (gst-train emits it on
 * Ctrl-C and on SIGTERM): the step in flight is
 * finished, the last train-stats and the final checkpoint are written and
 * EOS is posted, without training on the batches queued upstream (with
 * @mode=eval: the eval-result of the batches so far, and EOS). A
 * pipeline stopped without EOS (gst-launch-1.0 without -e, Ctrl-C) writes
 * the steps not yet checkpointed when the sink goes from PAUSED to READY,
 * with a warning that says so.
 *
 * ## Data-parallel training
 *
 * Run one pipeline per rank under a launcher (`mpirun -np N gst-launch-1.0
 * -e ...`, or srun): with @distributed=auto the sink joins the job when the
 * launcher's environment says there is more than one rank, and trains one
 * model with PyTorch DistributedDataParallel's semantics: rank 0's initial
 * (or resumed) weights on every rank, the gradients averaged over the ranks
 * at every step, batch-norm statistics per rank (rank 0's are the ones
 * saved), @lr and the schedule as set (the global batch is @rank count
 * times the batch: scale @lr with it). Only rank 0 writes checkpoints,
 * snapshots and @metrics-location; every rank posts the same train-stats.
 * datasetsrc reads the shard of its rank by itself; a source whose shard
 * is not the sink's rank is an error that names both. Every rank needs the
 * same model, classes, batch shape, mode and intervals (checked before the
 * first step). When a rank's data ends first (or it is stopped, or fails),
 * every rank stops at the same step: the others say "rank R left at step
 * S: stopping with it." (a warning: the batches they still had are not
 * trained on) and end as at EOS, rank 0 with the final statistics and
 * checkpoint. A rank that cannot start (an error before its first step, or
 * no data) ends its peers before their first step, with a warning that
 * names it. @resume-from is read by rank 0 and its state sent to the
 * others; a resume whose checkpoint was trained with another global batch
 * is a warning that gives the learning rate the linear scaling rule
 * suggests. A non-finite loss on any rank stops
 * every rank at the same step with the error below, naming the rank. A
 * rank that dies ends the job through the launcher. Messages of the sink
 * start with "rank R: " in a job of more than one rank. See
 * docs/distributed.md.
 *
 * For experiments that compare runs at equal amounts of fresh data (echo
 * makes images and fresh images differ), @snapshot-interval saves the
 * weights every that many fresh images into @snapshot-location, each noted
 * as a `snapshot` JSON line in @metrics-location (not a message): `mark`
 * (guint64: the multiple it passed, which names the file), `fresh-images`,
 * `images`, `step` (guint64) and `time` (gdouble): where training stood;
 * evaluate them afterwards with @mode=eval. @snapshot-interval without
 * @snapshot-location is an error at start; the folder is made when
 * missing.
 *
 * Other messages: a warning for a one-class dataset (nothing to learn), for
 * a last batch too small to train on (dropped), and for the cases above;
 * info messages for what runs, where it runs and where it resumed from
 * (above); errors for caps it cannot take, labels outside the classes,
 * files it cannot read or write (with the OS reason), a run that trained
 * nothing (above), and a non-finite loss, which names the step; that step
 * is not applied and the last checkpoint written stays as it is.
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

#include "element-util.h"
#include "gstcudatrainsink-enumtypes.h"
#include "gstcudatrainsink-private.h"
#include "gsttrainhostallocator.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

GST_DEBUG_CATEGORY (gst_cuda_train_sink_debug);
#define GST_CAT_DEFAULT gst_cuda_train_sink_debug

#define gst_cuda_train_sink_parent_class parent_class
G_DEFINE_TYPE (GstCudaTrainSink, gst_cuda_train_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (
    cudatrainsink, "cudatrainsink", GST_RANK_NONE, GST_TYPE_CUDA_TRAIN_SINK);

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink", GST_PAD_SINK, GST_PAD_ALWAYS,
        GST_STATIC_CAPS ("other/tensors, format = (string) static, "
                         "num_tensors = (int) 2, types = (string) "
                         "\"uint8,int32\", framerate = (fraction) 0/1"));

enum
{
  SIGNAL_STOP,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

/* Read-only properties, after the settings' own (settings.c). */
enum
{
  PROP_RANK,
  PROP_WORLD_SIZE,
  PROP_GLOBAL_BATCH_SIZE,
  PROP_CHECKPOINT_STEP,
  N_STATUS_PROPERTIES
};

static guint first_status_prop;

static void gst_cuda_train_sink_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec);
static void gst_cuda_train_sink_get_property (
    GObject *object, guint prop_id, GValue *value, GParamSpec *pspec);
static void gst_cuda_train_sink_dispose (GObject *object);
static void gst_cuda_train_sink_finalize (GObject *object);
static GstStateChangeReturn gst_cuda_train_sink_change_state (
    GstElement *element, GstStateChange transition);
static gboolean gst_cuda_train_sink_start (GstBaseSink *sink);
static gboolean gst_cuda_train_sink_stop (GstBaseSink *sink);
static gboolean gst_cuda_train_sink_set_caps (GstBaseSink *sink, GstCaps *caps);
static gboolean gst_cuda_train_sink_propose_allocation (
    GstBaseSink *sink, GstQuery *query);
static gboolean gst_cuda_train_sink_event (GstBaseSink *sink, GstEvent *event);
static gboolean gst_cuda_train_sink_query (GstBaseSink *sink, GstQuery *query);
static GstFlowReturn gst_cuda_train_sink_render (
    GstBaseSink *sink, GstBuffer *buffer);
static void gst_cuda_train_sink_request_stop (GstCudaTrainSink *sink);
static gboolean gst_cuda_train_sink_post_message (
    GstElement *element, GstMessage *message);

static void
gst_cuda_train_sink_class_init (GstCudaTrainSinkClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *base_class = GST_BASE_SINK_CLASS (klass);

  gobject_class->set_property = gst_cuda_train_sink_set_property;
  gobject_class->get_property = gst_cuda_train_sink_get_property;
  gobject_class->dispose = gst_cuda_train_sink_dispose;
  gobject_class->finalize = gst_cuda_train_sink_finalize;

  first_status_prop = gst_cuda_train_sink_install_properties (gobject_class);
  g_object_class_install_property (gobject_class, first_status_prop + PROP_RANK,
      g_param_spec_int ("rank", "Rank",
          "This process's rank in its data-parallel job (0 alone); known once "
          "the element is PAUSED",
          0, G_MAXINT, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class,
      first_status_prop + PROP_WORLD_SIZE,
      g_param_spec_int ("world-size", "World size",
          "Ranks in the data-parallel job (1 alone); known once the element "
          "is PAUSED",
          1, G_MAXINT, 1, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class,
      first_status_prop + PROP_GLOBAL_BATCH_SIZE,
      g_param_spec_int ("global-batch-size", "Global batch size",
          "Images per step over the whole job: the batch times world-size "
          "(0 until the first batch caps arrive). The sink does not scale lr "
          "with it: set lr for this global batch (by the linear scaling "
          "rule, lr times global / reference batch)",
          0, G_MAXINT, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class,
      first_status_prop + PROP_CHECKPOINT_STEP,
      g_param_spec_int64 ("checkpoint-step", "Checkpoint step",
          "The step of the last checkpoint this run wrote to "
          "checkpoint-location, -1 while it wrote none (rank 0 writes them); "
          "kept after the run ends, until the next one starts",
          -1, G_MAXINT64, -1, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /**
   * GstCudaTrainSink::stop:
   * @sink: the sink
   *
   * Ends training at the next step boundary, as max-steps does: the step
   * in flight is finished, the last train-stats posted, the final
   * checkpoint written and EOS posted; the batches still queued upstream
   * are not trained on. With mode=eval it posts the eval-result of the
   * batches evaluated so far, and EOS. Safe to emit from any thread (the
   * application's Ctrl-C handler, a bus watch): it only sets a flag, which
   * the streaming thread acts on when the next batch or EOS arrives.
   */
  signals[SIGNAL_STOP] = g_signal_new_class_handler ("stop",
      G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST | G_SIGNAL_ACTION,
      G_CALLBACK (gst_cuda_train_sink_request_stop), NULL, NULL, NULL,
      G_TYPE_NONE, 0);

  gst_element_class_set_static_metadata (element_class, "Train sink",
      "Sink/Tensor/Training",
      "Trains a ResNet on batches of images, one step per batch, on CUDA or "
      "the CPU. Takes other/tensors of types uint8,int32 and dimensions "
      "C:W:H:N,N (N uint8 NHWC images, C 1 or 3, and N int32 labels), as "
      "batcher makes them. Posts element messages: train-stats every "
      "stats-interval steps and at the end (step, epoch, loss, lr, top1, "
      "top5, images, fresh-images, images-per-second, "
      "fresh-images-per-second, echo-factor, step-time, busy-time, "
      "data-wait-fraction, sink-memory-fraction, pinned-fraction, comm-time, "
      "slowest-rank, straggler-wait, rank, world-size, compute, time), "
      "and with "
      "mode=eval eval-result at EOS (loss, top1, top5, images); both are "
      "also appended to metrics-location as JSON lines, with a snapshot "
      "line for each snapshot (mark, fresh-images, images, step, time), "
      "and written as TensorBoard scalars to tensorboard-logdir. "
      "Action signal stop: finish the step in flight, write the final "
      "statistics and checkpoint, and post EOS. Data-parallel under mpirun "
      "or srun (distributed): one model over the ranks, gradients averaged "
      "every step, checkpoints and metrics written by rank 0 alone.",
      "gst-train developers");
  gst_element_class_add_static_pad_template (element_class, &sink_template);

  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_cuda_train_sink_change_state);
  element_class->post_message =
      GST_DEBUG_FUNCPTR (gst_cuda_train_sink_post_message);
  base_class->start = GST_DEBUG_FUNCPTR (gst_cuda_train_sink_start);
  base_class->stop = GST_DEBUG_FUNCPTR (gst_cuda_train_sink_stop);
  base_class->set_caps = GST_DEBUG_FUNCPTR (gst_cuda_train_sink_set_caps);
  base_class->propose_allocation =
      GST_DEBUG_FUNCPTR (gst_cuda_train_sink_propose_allocation);
  base_class->event = GST_DEBUG_FUNCPTR (gst_cuda_train_sink_event);
  base_class->query = GST_DEBUG_FUNCPTR (gst_cuda_train_sink_query);
  base_class->render = GST_DEBUG_FUNCPTR (gst_cuda_train_sink_render);

  gst_type_mark_as_plugin_api (GST_TYPE_TRAIN_MODEL, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_TRAIN_DEVICE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_TRAIN_PRECISION, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_TRAIN_LR_SCHEDULE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_TRAIN_MODE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_TRAIN_DISTRIBUTED, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_TRAIN_COMM_BACKEND, 0);
  GST_DEBUG_CATEGORY_INIT (
      gst_cuda_train_sink_debug, "cudatrainsink", 0, "ResNet training sink");
}

/* ---- properties ---- */

static void
gst_cuda_train_sink_init (GstCudaTrainSink *sink)
{
  gst_cuda_train_sink_settings_init (&sink->props);
  gst_cuda_train_sink_trainer_init (sink);
  gst_cuda_train_sink_dist_init (sink);
  /* Training is as fast as it goes: no clock to wait for. */
  gst_base_sink_set_sync (GST_BASE_SINK (sink), FALSE);
}

static void
gst_cuda_train_sink_dispose (GObject *object)
{
  if (!gst_train_element_stop_before_dispose (GST_ELEMENT (object)))
    return; /* resurrected until another thread stops it */
  G_OBJECT_CLASS (parent_class)->dispose (object);
}

static void
gst_cuda_train_sink_finalize (GObject *object)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (object);

  gst_cuda_train_sink_dist_clear (sink);
  gst_cuda_train_sink_settings_clear (&sink->props);
  gst_cuda_train_sink_settings_clear (&sink->settings);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_cuda_train_sink_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (object);

  GST_OBJECT_LOCK (sink);
  if (!gst_cuda_train_sink_settings_set (&sink->props, prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (sink);
}

static void
gst_cuda_train_sink_get_property (
    GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (object);
  gint world_size = g_atomic_int_get (&sink->dist.world_size_prop);

  if (prop_id == first_status_prop + PROP_RANK) {
    g_value_set_int (value, g_atomic_int_get (&sink->dist.rank_prop));
    return;
  }
  if (prop_id == first_status_prop + PROP_WORLD_SIZE) {
    g_value_set_int (value, world_size);
    return;
  }
  if (prop_id == first_status_prop + PROP_GLOBAL_BATCH_SIZE) {
    g_value_set_int (value, g_atomic_int_get (&sink->global_batch_prop));
    return;
  }
  if (prop_id == first_status_prop + PROP_CHECKPOINT_STEP) {
    GST_OBJECT_LOCK (sink);
    g_value_set_int64 (value, sink->trainer.checkpoint_step_prop);
    GST_OBJECT_UNLOCK (sink);
    return;
  }
  GST_OBJECT_LOCK (sink);
  if (!gst_cuda_train_sink_settings_get (&sink->props, prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (sink);
}

/* In a job of more than one rank, the text of an error, warning or info
 * message of the sink (its own or its base class's), and its details
 * (which gst-launch-1.0 prints alone for an info message), start with
 * "rank R: ", so that a user who reads the messages of every rank in one
 * stream (mpirun's output) knows whose it is. */
static GstMessage *
gst_cuda_train_sink_name_rank (GstMessage *message, gint rank)
{
  GError *error = NULL, *named;
  gchar *debug = NULL;
  const GstStructure *details = NULL;
  GstStructure *copy;
  GstMessage *renamed;

  switch (GST_MESSAGE_TYPE (message)) {
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (message, &error, &debug);
      gst_message_parse_error_details (message, &details);
      break;
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (message, &error, &debug);
      gst_message_parse_warning_details (message, &details);
      break;
    case GST_MESSAGE_INFO:
      gst_message_parse_info (message, &error, &debug);
      gst_message_parse_info_details (message, &details);
      break;
    default:
      return message;
  }
  named = g_error_new (
      error->domain, error->code, "rank %d: %s", rank, error->message);
  if (debug != NULL) {
    gchar *text = g_strdup_printf ("rank %d: %s", rank, debug);

    g_free (debug);
    debug = text;
  }
  copy = details ? gst_structure_copy (details) : NULL;
  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR)
    renamed = gst_message_new_error_with_details (
        GST_MESSAGE_SRC (message), named, debug, copy);
  else if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_WARNING)
    renamed = gst_message_new_warning_with_details (
        GST_MESSAGE_SRC (message), named, debug, copy);
  else
    renamed = gst_message_new_info_with_details (
        GST_MESSAGE_SRC (message), named, debug, copy);
  gst_message_set_seqnum (renamed, gst_message_get_seqnum (message));
  g_error_free (named);
  g_error_free (error);
  g_free (debug);
  gst_message_unref (message);
  return renamed;
}

static gboolean
gst_cuda_train_sink_post_message (GstElement *element, GstMessage *message)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (element);
  gint rank = g_atomic_int_get (&sink->dist.message_rank);

  /* a start that failed posted its reason: GstBaseSink's own error after
   * it ("failed to post a proper error message") would contradict it */
  if (!gst_train_element_keep_message (element, message)) {
    gst_message_unref (message);
    return TRUE;
  }
  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR
      && GST_MESSAGE_SRC (message) == GST_OBJECT_CAST (element))
    gst_cuda_train_sink_watchdog_arm (sink);
  if (rank >= 0 && GST_MESSAGE_SRC (message) == GST_OBJECT_CAST (element))
    message = gst_cuda_train_sink_name_rank (message, rank);
  return GST_ELEMENT_CLASS (parent_class)->post_message (element, message);
}

/* ---- state ---- */

/* The "stop" action signal: the streaming thread ends the run at its next
 * batch or EOS (gst_cuda_train_sink_advance). */
static void
gst_cuda_train_sink_request_stop (GstCudaTrainSink *sink)
{
  GST_INFO_OBJECT (sink, "stop requested");
  g_atomic_int_set (&sink->stop_requested, 1);
}

/* Checks at start that the folder checkpoints will be written in is there
 * (made when missing, as tensorboard-logdir's is) and writable, rather
 * than after training every step; FALSE with an error posted. */
static gboolean
gst_cuda_train_sink_check_folder (GstCudaTrainSink *sink, const gchar *path)
{
  gchar *folder = g_path_get_dirname (path);
  gboolean ok;
  int saved_errno;

  if (!g_file_test (folder, G_FILE_TEST_EXISTS))
    g_mkdir_with_parents (folder, 0755);
  ok = g_access (folder, W_OK | X_OK) == 0;
  saved_errno = errno;

  if (ok && !g_file_test (folder, G_FILE_TEST_IS_DIR)) {
    ok = FALSE;
    saved_errno = ENOTDIR;
  }
  if (!ok)
    GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_WRITE,
        ("Cannot write checkpoint-location \"%s\" in folder \"%s\": %s.", path,
            folder, g_strerror (saved_errno)),
        (NULL));
  g_free (folder);
  return ok;
}

static gboolean
gst_cuda_train_sink_start (GstBaseSink *base)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);
  const GstCudaTrainSinkSettings *s = &sink->settings;

  /* a start that failed left its copy behind: stop was not called */
  gst_cuda_train_sink_settings_clear (&sink->settings);
  gst_cuda_train_sink_watchdog_allow (sink);
  GST_OBJECT_LOCK (sink);
  gst_cuda_train_sink_settings_copy (&sink->settings, &sink->props);
  GST_OBJECT_UNLOCK (sink);

  gst_cuda_train_sink_dist_name_rank (sink);
  if (s->snapshot_interval && s->snapshot_location == NULL) {
    GST_ELEMENT_ERROR (sink, RESOURCE, SETTINGS,
        ("snapshot-interval is set but snapshot-location is not."), (NULL));
    return FALSE;
  }
  if (s->snapshot_location
      && g_mkdir_with_parents (s->snapshot_location, 0755) < 0) {
    GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_WRITE,
        ("Could not create snapshot folder \"%s\": %s.", s->snapshot_location,
            g_strerror (errno)),
        (NULL));
    return FALSE;
  }
  if (s->checkpoint_location && s->mode == GST_TRAIN_MODE_TRAIN
      && !gst_cuda_train_sink_check_folder (sink, s->checkpoint_location))
    return FALSE;
  /* last: a rank that fails a check above never joins, and its launcher
   * ends the job; one that fails below has joined and must tell its peers
   * (gst_cuda_train_sink_dist_stop) */
  if (!gst_cuda_train_sink_dist_start (sink))
    return FALSE;
  g_atomic_int_set (&sink->global_batch_prop, 0);
  sink->width = sink->height = sink->channels = sink->batch_size = 0;
  gst_cuda_train_sink_steps_reset (sink);
  /* the metrics and TensorBoard files (rank 0's) */
  if (!gst_cuda_train_sink_report_start (sink)) {
    gst_cuda_train_sink_dist_stop (sink);
    gst_cuda_train_sink_watchdog_disarm (sink);
    gst_cuda_train_sink_dist_close (sink);
    return FALSE;
  }
  if (gst_debug_category_get_threshold (GST_CAT_DEFAULT) >= GST_LEVEL_INFO) {
    gchar *text = gst_cuda_train_sink_settings_describe (s);

    GST_INFO_OBJECT (sink, "started, rank %d of %d: %s", sink->dist.rank,
        sink->dist.world_size, text);
    g_free (text);
  }
  return TRUE;
}

static gboolean
gst_cuda_train_sink_stop (GstBaseSink *base)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);

  if (sink->trainer.gt != NULL)
    GST_INFO_OBJECT (sink, "stopping at step %" G_GINT64_FORMAT,
        gt_trainer_global_step (sink->trainer.gt));
  else
    GST_INFO_OBJECT (sink, "stopping before a step");
  /* the step in flight, and the steps not yet checkpointed when the
   * pipeline stops without EOS */
  gst_cuda_train_sink_advance (sink, GST_TRAIN_INPUT_HALT, NULL);
  g_atomic_int_set (&sink->stop_requested, 0);
  /* whatever ended this rank's run, its peers must not wait for it */
  gst_cuda_train_sink_dist_stop (sink);
  /* after the last collective: a peer that never comes still ends it */
  gst_cuda_train_sink_watchdog_disarm (sink);
  gst_cuda_train_sink_trainer_stop (sink);
  gst_cuda_train_sink_dist_close (sink);
  gst_cuda_train_sink_report_stop (sink);
  gst_cuda_train_sink_settings_clear (&sink->settings);
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

  GST_DEBUG_OBJECT (sink, "%s", gst_state_change_get_name (transition));
  /* not from render: the preroll lock is held there */
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    gst_base_sink_set_async_enabled (GST_BASE_SINK (sink), TRUE);
  else if (transition == GST_STATE_CHANGE_PLAYING_TO_PAUSED
      && sink->run.reached_max)
    gst_base_sink_set_async_enabled (GST_BASE_SINK (sink), FALSE);
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_PLAYING && sink->run.reached_max
      && ret != GST_STATE_CHANGE_FAILURE)
    gst_element_post_message (element, gst_message_new_eos (GST_OBJECT (sink)));
  return ret;
}

/* Reads batch caps: "other/tensors" with types "uint8,int32" and
 * dimensions "C:W:H:N,N", C being 1 or 3; FALSE for other caps. */
static gboolean
gst_cuda_train_sink_parse_caps (
    GstCaps *caps, gint *c, gint *w, gint *h, gint *n)
{
  GstStructure *s;
  const gchar *types, *dims;
  gint n_labels = 0;

  if (caps == NULL || gst_caps_get_size (caps) < 1)
    return FALSE;
  s = gst_caps_get_structure (caps, 0);
  types = gst_structure_get_string (s, "types");
  dims = gst_structure_get_string (s, "dimensions");
  *c = *w = *h = *n = 0;
  return types != NULL && strcmp (types, "uint8,int32") == 0 && dims != NULL
      && sscanf (dims, "%d:%d:%d:%d,%d", c, w, h, n, &n_labels) == 5
      && (*c == 1 || *c == 3) && *w >= 1 && *h >= 1 && *n >= 1
      && *n == n_labels;
}

/* Offers a pool of buffers of one batch's images in the trainer's batch
 * memory, so that batcher writes batches where the trainer copies from
 * fastest. */
static gboolean
gst_cuda_train_sink_propose_allocation (GstBaseSink *base, GstQuery *query)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);
  /* page-locked only where the batches go to a GPU */
  gint gpu_id =
      sink->settings.device == GST_TRAIN_DEVICE_CPU ? -1 : sink->dist.gpu_id;
  GstCaps *caps = NULL;
  gint c, w, h, n;

  gst_query_parse_allocation (query, &caps, NULL);
  if (!gst_cuda_train_sink_parse_caps (caps, &c, &w, &h, &n)) {
    GST_DEBUG_OBJECT (sink, "no pool for %" GST_PTR_FORMAT, caps);
    return TRUE; /* set_caps will say what is wrong */
  }
  GST_DEBUG_OBJECT (sink, "offering a pool of %d-image batches (%s)", n,
      gpu_id >= 0 ? "page-locked where a GPU is usable" : "host memory");
  gst_train_host_allocator_propose_pool (
      query, caps, (guint64)c * w * h * n, gpu_id);
  return TRUE;
}

/* The dimensions of planar batches that gst_cuda_train_sink_parse_caps
 * refused (batcher layout=nchw: "W:H:C:N,N", C being 1 or 3), else NULL.
 * Images 1 or 3 pixels wide cannot be told from NHWC ones by their caps. */
static const gchar *
gst_cuda_train_sink_planar_dims (GstCaps *caps)
{
  const gchar *dims;
  gint w, h, c, n, n_labels;

  if (caps == NULL || gst_caps_get_size (caps) < 1)
    return NULL;
  dims =
      gst_structure_get_string (gst_caps_get_structure (caps, 0), "dimensions");
  if (dims != NULL
      && sscanf (dims, "%d:%d:%d:%d,%d", &w, &h, &c, &n, &n_labels) == 5
      && (c == 1 || c == 3) && w >= 1 && h >= 1 && n >= 1 && n == n_labels)
    return dims;
  return NULL;
}

/* Takes "other/tensors" with types "uint8,int32" and dimensions
 * "C:W:H:N,N", C being 1 or 3. */
static gboolean
gst_cuda_train_sink_set_caps (GstBaseSink *base, GstCaps *caps)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);
  gint c = 0, w = 0, h = 0, n = 0;

  if (!gst_cuda_train_sink_parse_caps (caps, &c, &w, &h, &n)) {
    const gchar *planar = gst_cuda_train_sink_planar_dims (caps);

    if (planar != NULL)
      GST_ELEMENT_ERROR (sink, CORE, NEGOTIATION,
          ("cudatrainsink takes NHWC batches (batcher layout=nhwc); got "
           "dimensions %s, planar images (NCHW, W:H:C:N).",
              planar),
          ("got %" GST_PTR_FORMAT, caps));
    else
      GST_ELEMENT_ERROR (sink, CORE, NEGOTIATION,
          ("cudatrainsink takes batches of uint8 images (1 or 3 channels) "
           "with int32 labels, as batcher makes them."),
          ("got %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  if (sink->trainer.gt != NULL
      && (w != sink->width || h != sink->height || n > sink->batch_size)) {
    GST_ELEMENT_ERROR (sink, CORE, NEGOTIATION,
        ("Batches changed from %d images of %dx%d to %d of %dx%d during "
         "training.",
            sink->batch_size, sink->width, sink->height, n, w, h),
        (NULL));
    return FALSE;
  }
  GST_INFO_OBJECT (
      sink, "batches of %d images of %dx%d, %d channel(s)", n, w, h, c);
  sink->channels = c;
  sink->width = w;
  sink->height = h;
  if (sink->trainer.gt == NULL) {
    sink->batch_size = n;
    g_atomic_int_set (&sink->global_batch_prop, n * sink->dist.world_size);
  }
  return TRUE;
}

/* Each batch is a step of the run (gstcudatrainsink-steps.c). */
static GstFlowReturn
gst_cuda_train_sink_render (GstBaseSink *base, GstBuffer *buffer)
{
  return gst_cuda_train_sink_advance (
      GST_CUDA_TRAIN_SINK (base), GST_TRAIN_INPUT_BATCH, buffer);
}

/* The resume query of datasetsrc (answered from the checkpoint), else
 * what GstBaseSink answers. */
static gboolean
gst_cuda_train_sink_query (GstBaseSink *base, GstQuery *query)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);

  if (gst_train_is_resume_query (query))
    return gst_cuda_train_sink_answer_resume (sink, query);
  return GST_BASE_SINK_CLASS (parent_class)->query (base, query);
}

static gboolean
gst_cuda_train_sink_event (GstBaseSink *base, GstEvent *event)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);
  GstFlowReturn ret;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_TAG: {
      GstTagList *tags;
      GstTrainDatasetInfo info;

      gst_event_parse_tag (event, &tags);
      if (!gst_train_dataset_info_from_tag_list (tags, &info))
        break;
      if (!gst_cuda_train_sink_check_rank_split (sink, &info)) {
        gst_train_dataset_info_clear (&info);
        gst_cuda_train_sink_fail_run (sink);
        gst_event_unref (event);
        return FALSE;
      }
      GST_DEBUG_OBJECT (sink,
          "dataset: %u classes, %" G_GUINT64_FORMAT " samples per epoch, "
          "shard %u of %u",
          info.num_classes, info.epoch_samples, info.shard_index,
          info.num_shards);
      if (sink->have_dataset)
        gst_train_dataset_info_clear (&sink->dataset);
      sink->dataset = info;
      sink->have_dataset = TRUE;
      break;
    }
    case GST_EVENT_EOS:
      /* the run ends here, unless it ended before */
      ret = gst_cuda_train_sink_advance (sink, GST_TRAIN_INPUT_EOS, NULL);
      if (ret != GST_FLOW_OK) {
        /* EOS: max-steps posted the EOS message already; an error is
         * posted, and the last checkpoint stays as it is */
        gst_event_unref (event);
        return ret == GST_FLOW_EOS;
      }
      break;
    case GST_EVENT_FLUSH_STOP:
      gst_cuda_train_sink_advance (sink, GST_TRAIN_INPUT_FLUSH, NULL);
      break;
    default:
      break;
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (base, event);
}
