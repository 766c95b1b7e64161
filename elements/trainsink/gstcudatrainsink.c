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
 * (the pad template can fix the types, not the sizes). @device=auto trains
 * on the GPU when the CUDA backend is built and a GPU is usable, else on the
 * CPU reference backend: with a warning when the machine has the NVIDIA
 * driver (the GPU was to be expected), with an info message when it does
 * not. The CPU backend computes in fp32 whatever @precision says.
 *
 * Every @stats-interval steps, and once more at the end, it posts a
 * `train-stats` element message (and appends the same fields as a JSON
 * line, `{"type": "train-stats", ...}`, to @metrics-location):
 *
 * - `step` (guint64): steps done, counted across resumes
 * - `epoch` (gdouble): fresh images so far, those before a resume
 *   included, / images per epoch (when the source announced its epoch
 *   size, else 0)
 * - `loss` (gdouble): mean training loss over the interval
 * - `lr` (gdouble): the learning rate of the last step
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
 * over all the shards, `loss` over every rank's batches, and
 * `data-wait-fraction`, `comm-time`, `step-time` and `busy-time` the
 * slowest rank's; the memory fractions are the posting rank's own.
 *
 * With @mode=eval it posts an `eval-result` element message at EOS (and
 * writes it as a JSON line): `loss` (gdouble, mean), `top1`, `top5`
 * (gdouble, fractions) and `images` (guint64).
 *
 * Checkpoints (safetensors, written atomically; see the trainer's docs)
 * go to @checkpoint-location every @checkpoint-interval steps and at the
 * end; its folder must exist and be writable when the sink starts.
 * @resume-from takes such a checkpoint (exact resume: weights, momentum,
 * step, schedule, RNG, and the fresh images seen, so that `epoch` goes on
 * from where it was) or a weights-only file (a starting point). On an
 * exact resume a deterministic pipeline continues where the checkpoint
 * left it without reading again what was trained on: datasetsrc asks
 * downstream where to start before its first buffer (the custom query
 * GST_TRAIN_RESUME_QUERY of train-meta.h), the sink answers from the
 * checkpoint's header (samples_seen over world_size: this rank's samples),
 * echo turns that into the window its shuffle buffer needs, and the source
 * starts there. When no source asks (another source, or a checkpoint from
 * another world size), the sink skips, as before, as many batches as the
 * steps already done. With
 * @max-steps the sink returns EOS upstream once the global step reaches it,
 * so the pipeline ends by itself, at the same step whether or not it was
 * resumed; a checkpoint already at max-steps is a warning, trains nothing
 * and is left as it is.
 *
 * The action signal `stop` ends a run in the same way from the
 * application (gst-train emits it on Ctrl-C): the step in flight is
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
 * S: stopping with it" (an info message) and end as at EOS, rank 0 with the
 * final statistics and checkpoint. A non-finite loss on any rank stops
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
 * evaluate them afterwards with @mode=eval.
 *
 * Other messages: a warning for a one-class dataset (nothing to learn), for
 * a last batch too small to train on (dropped), and for the cases above;
 * errors for caps it cannot take, labels outside the classes, files it
 * cannot read or write (with the OS reason), and a non-finite loss, which
 * names the step; that step is not applied and the last checkpoint written
 * stays as it is.
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
  N_STATUS_PROPERTIES
};

static guint first_status_prop;

static void gst_cuda_train_sink_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec);
static void gst_cuda_train_sink_get_property (
    GObject *object, guint prop_id, GValue *value, GParamSpec *pspec);
static void gst_cuda_train_sink_finalize (GObject *object);
static void gst_cuda_train_sink_disarm_watchdog (GstCudaTrainSink *sink);
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
          "(0 until the first batch caps arrive); the learning rate goes "
          "with it (linear scaling rule)",
          0, G_MAXINT, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

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
      "stats-interval steps and at the end (step, epoch, loss, lr, images, "
      "fresh-images, images-per-second, fresh-images-per-second, "
      "echo-factor, step-time, busy-time, data-wait-fraction, "
      "sink-memory-fraction, pinned-fraction, comm-time, rank, world-size, "
      "compute, time), and with "
      "mode=eval eval-result at EOS (loss, top1, top5, images); both are "
      "also appended to metrics-location as JSON lines, with a snapshot "
      "line for each snapshot (mark, fresh-images, images, step, time). "
      "Action signal stop: finish the step in flight, write the final "
      "statistics and checkpoint, and post EOS. Data-parallel under mpirun "
      "or srun (distributed): one model over the ranks, gradients averaged "
      "every step, rank 0 writes",
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
  sink->message_rank = -1;
  sink->world_size_prop = 1;
  g_mutex_init (&sink->watchdog_lock);
  g_cond_init (&sink->watchdog_cond);
  /* Training is as fast as it goes: no clock to wait for. */
  gst_base_sink_set_sync (GST_BASE_SINK (sink), FALSE);
}

static void
gst_cuda_train_sink_finalize (GObject *object)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (object);

  /* an application that drops the element without stopping it */
  gst_cuda_train_sink_disarm_watchdog (sink);
  gst_cuda_train_sink_settings_clear (&sink->props);
  gst_cuda_train_sink_settings_clear (&sink->settings);
  g_mutex_clear (&sink->watchdog_lock);
  g_cond_clear (&sink->watchdog_cond);
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
  gint world_size = g_atomic_int_get (&sink->world_size_prop);

  if (prop_id == first_status_prop + PROP_RANK) {
    g_value_set_int (value, g_atomic_int_get (&sink->rank_prop));
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

/* The watchdog thread: ends the job unless the sink stops before the
 * deadline. @comm stays valid until gst_cuda_train_sink_disarm_watchdog()
 * has joined this thread. It may abort while the streaming or the
 * stopping thread waits in a collective for a peer that never comes: that
 * wait is what it ends (MPI_Abort from a second thread, which Open MPI's
 * runtime handles at any thread level). */
static gpointer
gst_cuda_train_sink_watchdog (gpointer data)
{
  GstCudaTrainSink *sink = data;
  guint timeout = sink->settings.error_timeout;
  gint64 deadline = g_get_monotonic_time () + timeout * G_TIME_SPAN_SECOND;
  gboolean fire;

  g_mutex_lock (&sink->watchdog_lock);
  while (!sink->watchdog_cancel
      && g_cond_wait_until (
          &sink->watchdog_cond, &sink->watchdog_lock, deadline))
    ;
  fire = !sink->watchdog_cancel;
  g_mutex_unlock (&sink->watchdog_lock);
  if (fire) {
    gchar *message = g_strdup_printf (
        "the pipeline was not stopped within error-timeout=%u s of the "
        "sink's error (an application that missed it): ending the job, so "
        "that the other ranks do not wait for ever",
        timeout);

    gt_comm_abort (sink->comm, 1, message);
    g_free (message);
  }
  return NULL;
}

/* In a data-parallel job, an error of this sink starts the watchdog
 * (error-timeout): a rank whose application never stops the pipeline
 * would otherwise keep every peer waiting in its next collective, or in
 * MPI_Finalize, for ever. Any thread. */
static void
gst_cuda_train_sink_arm_watchdog (GstCudaTrainSink *sink)
{
  g_mutex_lock (&sink->watchdog_lock);
  if (sink->comm != NULL && sink->watchdog == NULL && !sink->watchdog_cancel
      && sink->settings.error_timeout > 0)
    sink->watchdog =
        g_thread_new ("train-watchdog", gst_cuda_train_sink_watchdog, sink);
  g_mutex_unlock (&sink->watchdog_lock);
}

/* The pipeline stopped the sink: no watchdog fires from now on. */
static void
gst_cuda_train_sink_disarm_watchdog (GstCudaTrainSink *sink)
{
  GThread *watchdog;

  g_mutex_lock (&sink->watchdog_lock);
  sink->watchdog_cancel = TRUE;
  watchdog = sink->watchdog;
  sink->watchdog = NULL;
  g_cond_signal (&sink->watchdog_cond);
  g_mutex_unlock (&sink->watchdog_lock);
  if (watchdog != NULL)
    g_thread_join (watchdog);
}

static gboolean
gst_cuda_train_sink_post_message (GstElement *element, GstMessage *message)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (element);
  gint rank = g_atomic_int_get (&sink->message_rank);

  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR
      && GST_MESSAGE_SRC (message) == GST_OBJECT_CAST (element))
    gst_cuda_train_sink_arm_watchdog (sink);
  if (rank >= 0 && GST_MESSAGE_SRC (message) == GST_OBJECT_CAST (element))
    message = gst_cuda_train_sink_name_rank (message, rank);
  return GST_ELEMENT_CLASS (parent_class)->post_message (element, message);
}

/* ---- state ---- */

/* The "stop" action signal: the streaming thread ends the run at its next
 * batch (gst_cuda_train_sink_check_end). */
static void
gst_cuda_train_sink_request_stop (GstCudaTrainSink *sink)
{
  GST_INFO_OBJECT (sink, "stop requested");
  g_atomic_int_set (&sink->stop_requested, 1);
}

/* Checks at start that the folder checkpoints will be written in is there
 * and writable, rather than after training every step; FALSE with an
 * error posted. */
static gboolean
gst_cuda_train_sink_check_folder (GstCudaTrainSink *sink, const gchar *path)
{
  gchar *folder = g_path_get_dirname (path);
  gboolean ok = g_access (folder, W_OK | X_OK) == 0;
  int saved_errno = errno;

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
  GError *error = NULL;

  /* a start that failed left its copy behind: stop was not called */
  gst_cuda_train_sink_settings_clear (&sink->settings);
  g_mutex_lock (&sink->watchdog_lock);
  sink->watchdog_cancel = FALSE;
  g_mutex_unlock (&sink->watchdog_lock);
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
  sink->width = sink->height = sink->channels = sink->batch_size = 0;
  sink->failed = sink->ended = FALSE;
  sink->skip_batches = 0;
  g_atomic_int_set (&sink->upstream_resumes, FALSE);
  sink->last_saved_step = 0;
  sink->next_snapshot = s->snapshot_interval;
  sink->reached_max = FALSE;
  train_stats_init (&sink->stats, g_get_monotonic_time ());
  sink->global = sink->stats;
  sink->global_epoch_samples = 0;
  memset (&sink->eval, 0, sizeof (sink->eval));
  /* data-parallel: rank 0 writes the job's metrics */
  if (s->metrics_location && sink->rank == 0) {
    sink->metrics = train_json_lines_open (s->metrics_location, &error);
    if (sink->metrics == NULL) {
      GST_ELEMENT_ERROR (sink, RESOURCE, OPEN_WRITE,
          ("Could not open metrics file \"%s\": %s.", s->metrics_location,
              error->message),
          (NULL));
      g_error_free (error);
      gst_cuda_train_sink_dist_stop (sink);
      gst_cuda_train_sink_disarm_watchdog (sink);
      g_clear_pointer (&sink->comm, gt_comm_free);
      return FALSE;
    }
  }
  return TRUE;
}

/* Unmaps both memories of @mapped and drops its ref; nothing when nothing
 * is mapped. Every mapped batch is let go of here. */
static void
gst_train_mapped_batch_unmap (GstTrainMappedBatch *mapped)
{
  /* gst_memory_map() leaves the info zeroed when it fails */
  if (mapped->images.memory)
    gst_memory_unmap (mapped->images.memory, &mapped->images);
  if (mapped->labels.memory)
    gst_memory_unmap (mapped->labels.memory, &mapped->labels);
  gst_clear_buffer (&mapped->buffer);
  memset (mapped, 0, sizeof (*mapped));
}

/* Abandons the step in flight, unread, and lets go of its batch. */
static void
gst_cuda_train_sink_drop_pending (GstCudaTrainSink *sink)
{
  if (sink->pending.buffer && sink->trainer)
    gt_trainer_step_end (sink->trainer, NULL);
  gst_train_mapped_batch_unmap (&sink->pending);
}

static GstFlowReturn gst_cuda_train_sink_finish_step (GstCudaTrainSink *sink);

/* The pipeline left PAUSED for READY in the middle of training, with no
 * EOS (gst-launch-1.0 without -e, Ctrl-C): the streaming thread has
 * stopped, the step in flight, its batch still mapped, can be finished
 * here, and the steps not yet checkpointed are written. */
static void
gst_cuda_train_sink_save_on_stop (GstCudaTrainSink *sink)
{
  const gchar *path = sink->settings.checkpoint_location;
  guint64 step;

  if (path == NULL || sink->trainer == NULL
      || sink->settings.mode != GST_TRAIN_MODE_TRAIN || sink->failed
      || sink->ended)
    return;
  if (gst_cuda_train_sink_finish_step (sink) != GST_FLOW_OK)
    return; /* the error is posted */
  /* data-parallel: the peers stop at this step too; the counts of every
   * rank go into rank 0's checkpoint */
  if (!gst_cuda_train_sink_leave_job (sink))
    return;
  step = (guint64)gt_trainer_global_step (sink->trainer);
  if (step == sink->last_saved_step || sink->rank != 0)
    return;
  GST_WARNING_OBJECT (sink,
      "stopped without EOS at step %" G_GUINT64_FORMAT ": writing %s", step,
      path);
  if (gst_cuda_train_sink_save (sink))
    GST_ELEMENT_WARNING (sink, RESOURCE, WRITE,
        ("Stopped without end-of-stream at step %" G_GUINT64_FORMAT
         ": checkpoint written to %s (use gst-launch-1.0 -e to stop at a "
         "step boundary).",
            step, path),
        (NULL));
}

static gboolean
gst_cuda_train_sink_stop (GstBaseSink *base)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);

  gst_cuda_train_sink_save_on_stop (sink);
  g_atomic_int_set (&sink->stop_requested, 0);
  gst_cuda_train_sink_drop_pending (sink);
  /* whatever ended this rank's run, its peers must not wait for it */
  gst_cuda_train_sink_dist_stop (sink);
  /* after the last collective: a peer that never comes still ends it */
  gst_cuda_train_sink_disarm_watchdog (sink);
  g_clear_pointer (&sink->trainer, gt_trainer_free);
  g_clear_pointer (&sink->comm, gt_comm_free);
  g_clear_pointer (&sink->compute, g_free);
  if (sink->metrics)
    fclose (sink->metrics);
  sink->metrics = NULL;
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
      sink->settings.device == GST_TRAIN_DEVICE_CPU ? -1 : sink->gpu_id;
  GstCaps *caps = NULL;
  gint c, w, h, n;

  gst_query_parse_allocation (query, &caps, NULL);
  if (gst_cuda_train_sink_parse_caps (caps, &c, &w, &h, &n))
    gst_train_host_allocator_propose_pool (
        query, caps, (guint64)c * w * h * n, gpu_id);
  return TRUE; /* for other caps, set_caps will say what is wrong */
}

/* Takes "other/tensors" with types "uint8,int32" and dimensions
 * "C:W:H:N,N", C being 1 or 3. */
static gboolean
gst_cuda_train_sink_set_caps (GstBaseSink *base, GstCaps *caps)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);
  gint c = 0, w = 0, h = 0, n = 0;

  if (!gst_cuda_train_sink_parse_caps (caps, &c, &w, &h, &n)) {
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
  if (sink->trainer == NULL) {
    sink->batch_size = n;
    g_atomic_int_set (&sink->global_batch_prop, n * sink->world_size);
  }
  return TRUE;
}

/* Posts the error of the trainer's last failure. */
static GstFlowReturn
gst_cuda_train_sink_trainer_failed (GstCudaTrainSink *sink)
{
  sink->failed = TRUE;
  GST_ELEMENT_ERROR (
      sink, STREAM, FAILED, ("%s.", gt_trainer_error (sink->trainer)), (NULL));
  return GST_FLOW_ERROR;
}

/* ---- what the sink writes and posts ---- */

/* Appends @s to metrics-location as a JSON line: {"type": NAME, fields}. */
void
gst_cuda_train_sink_write_json (GstCudaTrainSink *sink, const GstStructure *s)
{
  GString *line;
  TrainJsonObject object;

  if (sink->metrics == NULL)
    return;
  line = g_string_new (NULL);
  train_json_object_begin (&object, line);
  train_json_object_add_string (&object, "type", gst_structure_get_name (s));
  gst_structure_foreach (s, train_json_object_add_field, &object);
  train_json_object_end (&object);
  train_json_lines_write (sink->metrics, line);
  g_string_free (line, TRUE);
}

/* Writes @s as a JSON line and posts it as an element message. */
static void
gst_cuda_train_sink_report (GstCudaTrainSink *sink, GstStructure *s)
{
  gst_cuda_train_sink_write_json (sink, s);
  gst_element_post_message (
      GST_ELEMENT (sink), gst_message_new_element (GST_OBJECT (sink), s));
}

/* The train-stats message of the interval that ends now, from the counts
 * of every rank as the caller just gathered them. */
static void
gst_cuda_train_sink_post_stats (GstCudaTrainSink *sink)
{
  gint64 now = g_get_monotonic_time ();
  TrainStatsReport r;

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

/* The eval-result message of an eval run, at EOS. */
static void
gst_cuda_train_sink_post_eval_result (GstCudaTrainSink *sink)
{
  const GtEvalTotals *eval = &sink->eval;
  gdouble n = MAX (1, eval->num_samples);

  gst_cuda_train_sink_report (sink,
      gst_structure_new ("eval-result", "loss", G_TYPE_DOUBLE,
          eval->loss_sum / n, "top1", G_TYPE_DOUBLE, eval->correct_top1 / n,
          "top5", G_TYPE_DOUBLE, eval->correct_top5 / n, "images",
          G_TYPE_UINT64, (guint64)eval->num_samples, NULL));
}

/* ---- steps ---- */

/* The rank named in the trainer's GT_ERROR_STOPPED message ("rank R left
 * the job"), or -1. */
static gint
gst_cuda_train_sink_rank_that_left (GstCudaTrainSink *sink)
{
  const gchar *text = strstr (gt_trainer_error (sink->trainer), "rank ");
  gint rank;

  if (text == NULL || sscanf (text, "rank %d left", &rank) != 1)
    return -1;
  return rank;
}

/* A step ended with GT_ERROR_STOPPED: a peer left the job (its data ended,
 * it was stopped, or it failed) and every rank stops at this step, as at
 * EOS (gst_cuda_train_sink_check_end), never with an error. */
static void
gst_cuda_train_sink_peer_left (GstCudaTrainSink *sink)
{
  guint64 step = (guint64)gt_trainer_global_step (sink->trainer);
  gint rank = gst_cuda_train_sink_rank_that_left (sink);
  gchar *who =
      rank >= 0 ? g_strdup_printf ("rank %d", rank) : g_strdup ("a rank");

  sink->peer_left = TRUE;
  /* a warning: the batches this rank still had are not trained on */
  GST_ELEMENT_WARNING (sink, RESOURCE, FAILED,
      ("%s left at step %" G_GUINT64_FORMAT ": stopping with it.", who, step),
      ("%s left at step %" G_GUINT64_FORMAT ": stopping with it (%s)", who,
          step, gt_trainer_error (sink->trainer)));
  g_free (who);
}

/* Ends the step in flight: its statistics, checkpoint and snapshots. The
 * statistics of every rank are gathered (a collective) at the steps that
 * need them, which every rank reaches together: none after a step that
 * stopped. */
static GstFlowReturn
gst_cuda_train_sink_finish_step (GstCudaTrainSink *sink)
{
  const GstCudaTrainSinkSettings *s = &sink->settings;
  GtStepResult result;
  TrainStepStats step;
  GstMemory *images;
  gint status, fresh, samples = sink->pending.batch.num_samples;
  gboolean stats_due, checkpoint_due;

  if (sink->pending.buffer == NULL)
    return GST_FLOW_OK;
  status = gt_trainer_step_end (sink->trainer, &result);
  fresh = gst_train_buffer_count_fresh (sink->pending.buffer);
  if (fresh < 0)
    fresh = samples; /* no metadata: nothing says it repeats */
  images = gst_buffer_peek_memory (sink->pending.buffer, 0);
  step.in_sink_memory = gst_train_host_memory_is_ours (images);
  step.pinned = gst_train_host_memory_is_pinned (images);
  gst_train_mapped_batch_unmap (&sink->pending);
  if (status == GT_ERROR_STOPPED) {
    gst_cuda_train_sink_peer_left (sink);
    return GST_FLOW_OK;
  }
  if (status == GT_ERROR_NONFINITE) {
    sink->failed = TRUE;
    GST_ELEMENT_ERROR (sink, STREAM, FAILED,
        ("Training diverged: %s.", gt_trainer_error (sink->trainer)),
        ("the last checkpoint written (step %" G_GUINT64_FORMAT
         ") is kept; lower lr or check the data",
            sink->last_saved_step));
    return GST_FLOW_ERROR;
  }
  if (status != GT_OK)
    return gst_cuda_train_sink_trainer_failed (sink);

  step.images = samples;
  step.fresh = fresh;
  step.loss = result.loss;
  step.lr = result.lr;
  step.seconds = (g_get_monotonic_time () - sink->pending_start) / 1e6;
  step.busy = result.busy_seconds;
  step.comm = result.comm_seconds;
  train_stats_add_step (&sink->stats, &step);
  stats_due = s->stats_interval && sink->stats.steps >= s->stats_interval;
  checkpoint_due = s->checkpoint_interval
      && (guint64)result.step % s->checkpoint_interval == 0;
  /* snapshots follow the fresh images of every rank: a gather each step */
  if ((stats_due || checkpoint_due || s->snapshot_interval)
      && !gst_cuda_train_sink_gather_stats (sink))
    return GST_FLOW_ERROR;
  if (stats_due)
    gst_cuda_train_sink_post_stats (sink);
  if (checkpoint_due && !gst_cuda_train_sink_save (sink))
    return GST_FLOW_ERROR;
  if (!gst_cuda_train_sink_snapshot (sink))
    return GST_FLOW_ERROR;
  return GST_FLOW_OK;
}

/* Where training ends, by max-steps, the "stop" signal or at an EOS event
 * (@eos), in one place; after every batch and at EOS. Once the global step
 * reaches max-steps or stop is requested (the step in flight, when it is
 * the last one allowed, ends at once so that EOS goes out now), or at EOS,
 * the last statistics and the final checkpoint are written. At max-steps
 * and at stop the sink also posts EOS and returns GST_FLOW_EOS from then
 * on: EOS returned upstream stops the sources, but the EOS event they then
 * send need not come back (a queue drops events once it got EOS from
 * downstream), so the sink, where the stream ends, says so itself. With
 * mode=eval it posts the eval-result at EOS, and at stop that and EOS. */
static GstFlowReturn
gst_cuda_train_sink_check_end (GstCudaTrainSink *sink, gboolean eos)
{
  guint64 max_steps = sink->settings.max_steps, step;
  gboolean at_max, saved = TRUE, stop;
  GstFlowReturn ret;

  if (sink->reached_max)
    return GST_FLOW_EOS;
  /* after an error the last checkpoint stays as it is, whatever comes
   * next (a source sends EOS after its error) */
  if (sink->failed)
    return GST_FLOW_ERROR;
  if (sink->trainer == NULL)
    return GST_FLOW_OK;
  stop = g_atomic_int_get (&sink->stop_requested) != 0;
  if (sink->settings.mode == GST_TRAIN_MODE_EVAL) {
    /* an evaluation ends with its result, at EOS or cut short by stop; in
     * a data-parallel job that of every rank */
    if ((eos || stop) && !gst_cuda_train_sink_leave_job (sink))
      return GST_FLOW_ERROR;
    if (eos || stop)
      gst_cuda_train_sink_post_eval_result (sink);
    if (!stop)
      return GST_FLOW_OK;
    sink->reached_max = TRUE;
    gst_element_post_message (
        GST_ELEMENT_CAST (sink), gst_message_new_eos (GST_OBJECT_CAST (sink)));
    return GST_FLOW_EOS;
  }
  step = (guint64)gt_trainer_global_step (sink->trainer);
  if (sink->pending.buffer
      && (eos || stop || (max_steps && step + 1 >= max_steps))) {
    ret = gst_cuda_train_sink_finish_step (sink);
    if (ret != GST_FLOW_OK)
      return ret;
    step = (guint64)gt_trainer_global_step (sink->trainer);
  }
  /* the "stop" signal, and a peer that left the job, end the run as
   * max-steps does */
  at_max = stop || sink->peer_left || (max_steps && step >= max_steps);
  if (!at_max && !eos)
    return GST_FLOW_OK;
  sink->ended = TRUE;
  if (at_max) {
    GST_INFO_OBJECT (sink, "%s at step %" G_GUINT64_FORMAT,
        stop                  ? "stopped"
            : sink->peer_left ? "a peer left"
                              : "reached max-steps",
        step);
    sink->reached_max = TRUE;
  }
  /* data-parallel: peers still training stop at this step; then the last
   * gather */
  if (!gst_cuda_train_sink_leave_job (sink))
    return GST_FLOW_ERROR;
  if (sink->global.steps)
    gst_cuda_train_sink_post_stats (sink);
  /* EOS always leaves a checkpoint, even of an untrained model */
  if (step != sink->last_saved_step || step == 0)
    saved = gst_cuda_train_sink_save (sink);
  /* at an EOS event a failed checkpoint is an error message, and EOS goes
   * on downstream */
  if (!at_max)
    return GST_FLOW_OK;
  if (!saved)
    return GST_FLOW_ERROR;
  gst_element_post_message (
      GST_ELEMENT_CAST (sink), gst_message_new_eos (GST_OBJECT_CAST (sink)));
  return GST_FLOW_EOS;
}

/* Maps the two memories of @buffer as a batch into @mapped (with a ref on
 * @buffer); FALSE, with an error posted and nothing left mapped, when it
 * is not one. */
static gboolean
gst_cuda_train_sink_map_batch (
    GstCudaTrainSink *sink, GstBuffer *buffer, GstTrainMappedBatch *mapped)
{
  gsize image_bytes = (gsize)sink->width * sink->height * sink->channels;
  gint n;

  memset (mapped, 0, sizeof (*mapped));
  if (gst_buffer_n_memory (buffer) != 2) {
    GST_ELEMENT_ERROR (sink, STREAM, FORMAT,
        ("A batch must hold two memories (images, labels); this one has %u.",
            gst_buffer_n_memory (buffer)),
        (NULL));
    return FALSE;
  }
  mapped->buffer = gst_buffer_ref (buffer);
  if (!gst_memory_map (
          gst_buffer_peek_memory (buffer, 0), &mapped->images, GST_MAP_READ)
      || !gst_memory_map (
          gst_buffer_peek_memory (buffer, 1), &mapped->labels, GST_MAP_READ)) {
    gst_train_mapped_batch_unmap (mapped);
    GST_ELEMENT_ERROR (
        sink, STREAM, FAILED, ("Could not read a batch."), (NULL));
    return FALSE;
  }
  n = (gint)(mapped->labels.size / sizeof (int32_t));
  if (n < 1 || mapped->images.size < image_bytes * n || n > sink->batch_size) {
    GST_ELEMENT_ERROR (sink, STREAM, FORMAT,
        ("A batch of %" G_GSIZE_FORMAT " bytes of images and %" G_GSIZE_FORMAT
         " of labels does not match its caps.",
            mapped->images.size, mapped->labels.size),
        (NULL));
    gst_train_mapped_batch_unmap (mapped);
    return FALSE;
  }
  mapped->batch.num_samples = n;
  mapped->batch.images = mapped->images.data;
  mapped->batch.labels = (const int32_t *)mapped->labels.data;
  mapped->batch.height = sink->height;
  mapped->batch.width = sink->width;
  mapped->batch.channels = sink->channels;
  return TRUE;
}

/* Ends the step in flight and begins one on @mapped, which it takes over
 * until it ends. The step runs while upstream prepares the next batch. */
static GstFlowReturn
gst_cuda_train_sink_train_batch (
    GstCudaTrainSink *sink, GstTrainMappedBatch *mapped, gint64 arrival)
{
  GstFlowReturn ret;
  gint status;

  /* a last, partial batch too small for batch-norm in training (one value
   * per channel) is dropped, as DataLoader(drop_last=True) would */
  if (mapped->batch.num_samples < sink->min_train_batch) {
    GST_ELEMENT_WARNING (sink, STREAM, FAILED,
        ("Dropped a batch of %d images: batch-norm needs at least %d to "
         "train at this image size.",
            mapped->batch.num_samples, sink->min_train_batch),
        (NULL));
    return GST_FLOW_OK;
  }
  train_stats_add_wait (&sink->stats, arrival);
  ret = gst_cuda_train_sink_finish_step (sink);
  if (ret != GST_FLOW_OK)
    return ret;
  if (sink->peer_left)
    return gst_cuda_train_sink_check_end (sink, FALSE);
  status = gt_trainer_step_begin (sink->trainer, &mapped->batch);
  if (status == GT_ERROR_STOPPED) {
    gst_cuda_train_sink_peer_left (sink);
    return gst_cuda_train_sink_check_end (sink, FALSE);
  }
  if (status != GT_OK)
    return gst_cuda_train_sink_trainer_failed (sink);
  sink->pending = *mapped;
  memset (mapped, 0, sizeof (*mapped));
  sink->pending_start = arrival;
  ret = gst_cuda_train_sink_check_end (sink, FALSE);
  train_stats_batch_done (&sink->stats, g_get_monotonic_time ());
  return ret;
}

static GstFlowReturn
gst_cuda_train_sink_render (GstBaseSink *base, GstBuffer *buffer)
{
  GstCudaTrainSink *sink = GST_CUDA_TRAIN_SINK (base);
  gint64 arrival = g_get_monotonic_time ();
  GstTrainMappedBatch mapped;
  GstFlowReturn ret;

  /* an error posted at an event (a shard that is not this rank's) */
  if (sink->failed)
    return GST_FLOW_ERROR;
  if (sink->trainer == NULL && !sink->reached_max) {
    switch (gst_cuda_train_sink_setup (sink)) {
      case GST_TRAIN_SETUP_OK:
        break;
      case GST_TRAIN_SETUP_FAILED:
        sink->failed = TRUE;
        return GST_FLOW_ERROR;
      case GST_TRAIN_SETUP_NO_JOB:
        /* another rank cannot train: this one ends as at max-steps */
        sink->reached_max = sink->ended = TRUE;
        gst_element_post_message (GST_ELEMENT_CAST (sink),
            gst_message_new_eos (GST_OBJECT_CAST (sink)));
        return GST_FLOW_EOS;
    }
    train_stats_begin_interval (&sink->stats, arrival);
  }
  /* past max-steps, or resumed from a checkpoint at or past it */
  ret = gst_cuda_train_sink_check_end (sink, FALSE);
  if (ret != GST_FLOW_OK)
    return ret;
  if (sink->skip_batches > 0) {
    sink->skip_batches--;
    return GST_FLOW_OK;
  }
  if (!gst_cuda_train_sink_map_batch (sink, buffer, &mapped))
    return GST_FLOW_ERROR;
  if (sink->settings.mode == GST_TRAIN_MODE_EVAL)
    ret = gt_trainer_eval (sink->trainer, &mapped.batch, &sink->eval) == GT_OK
        ? GST_FLOW_OK
        : gst_cuda_train_sink_trainer_failed (sink);
  else
    ret = gst_cuda_train_sink_train_batch (sink, &mapped, arrival);
  /* nothing left to unmap when the batch became the step in flight */
  gst_train_mapped_batch_unmap (&mapped);
  if (ret == GST_FLOW_ERROR)
    sink->failed = TRUE;
  return ret;
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
      if (!gst_cuda_train_sink_check_shard (sink, &info)) {
        gst_train_dataset_info_clear (&info);
        sink->failed = TRUE;
        gst_event_unref (event);
        return FALSE;
      }
      if (sink->have_dataset)
        gst_train_dataset_info_clear (&sink->dataset);
      sink->dataset = info;
      sink->have_dataset = TRUE;
      break;
    }
    case GST_EVENT_EOS:
      /* data-parallel: no batch at all; peers waiting to start stop too */
      if (sink->trainer == NULL && sink->comm != NULL && !sink->agreed)
        gst_cuda_train_sink_dist_agree (sink,
            sink->failed ? GST_TRAIN_RANK_FAILED : GST_TRAIN_RANK_NO_DATA, NULL,
            NULL, NULL);
      ret = gst_cuda_train_sink_check_end (sink, TRUE);
      if (ret != GST_FLOW_OK) {
        /* EOS: max-steps posted the EOS message already; an error is
         * posted, and the last checkpoint stays as it is */
        gst_event_unref (event);
        return ret == GST_FLOW_EOS;
      }
      break;
    case GST_EVENT_FLUSH_STOP:
      /* a flushing seek restarts the stream: drop the step in flight, and
       * let max-steps be checked anew */
      gst_cuda_train_sink_drop_pending (sink);
      sink->reached_max = sink->ended = FALSE;
      break;
    default:
      break;
  }
  return GST_BASE_SINK_CLASS (parent_class)->event (base, event);
}
