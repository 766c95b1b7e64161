/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstcudatrainsink-private.h: the state of cudatrainsink, shared by its
 * files, each of which calls only those below it:
 *
 *   gstcudatrainsink.c          the element, the GStreamer side: properties,
 *                               caps, the pool it offers, events, state
 *   gstcudatrainsink-steps.c    the run: each batch a step, the step in
 *                               flight finished, the end decided (max-steps,
 *                               stop, a peer that left, EOS), in one function
 *   gstcudatrainsink-trainer.c  the trainer created, resumed, checkpointed
 *                               and snapshotted
 *   gstcudatrainsink-dist.c     its part in a data-parallel job: joining,
 *                               agreeing to start, gathering, leaving, the
 *                               error watchdog
 *   gstcudatrainsink-report.c   the messages it posts, the metrics file
 *                               and the TensorBoard event file (through
 *                               tb-writer.c)
 *
 * The element calls steps, trainer (the resume query), dist and report;
 * steps calls trainer, dist and report; trainer calls dist and report;
 * dist and report call none of them. */
#ifndef __GST_CUDA_TRAIN_SINK_PRIVATE_H__
#define __GST_CUDA_TRAIN_SINK_PRIVATE_H__

#include "gstcudatrainsink.h"
#include "gstcudatrainsink-settings.h"
#include "train-meta.h"
#include "train-report.h"
#include "trainer.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_cuda_train_sink_debug);

/* The metrics file: JSON lines appended (gstcudatrainsink-report.c). */
typedef struct _GstTrainMetrics GstTrainMetrics;
/* A TensorBoard event file (tb-writer.h). */
typedef struct _TbWriter TbWriter;

/* A batch buffer (a ref) with its two memories mapped, and the GtBatch
 * that points into them; all zero when nothing is mapped. */
typedef struct
{
  GstBuffer *buffer;
  GstMapInfo images;
  GstMapInfo labels;
  GtBatch batch;
} GstTrainMappedBatch;

struct _GstCudaTrainSink
{
  GstBaseSink parent;

  /* Properties, under the object lock. */
  GstCudaTrainSinkSettings props;

  /* Streaming state, set at start and then touched by the streaming thread
   * only. @settings is @props as they were at start: a property set
   * meanwhile can neither change a run half-way nor pull a string from
   * under a checkpoint being written. */
  GstCudaTrainSinkSettings settings;
  gint width, height, channels, batch_size; /* from the caps */
  GstTrainDatasetInfo dataset;
  gboolean have_dataset;
  GtTrainer *trainer;
  gint min_train_batch; /* fewest images a training step takes */
  guint64 skip_batches; /* left to skip after an exact resume */
  /* the source starts where the checkpoint stopped (it asked, the sink
   * answered; g_atomic_int: asked from the source's streaming thread) */
  gint upstream_resumes;
  /* the samples the source resumes after (its answer) */
  guint64 resume_samples;
  guint64 batches_skipped; /* this run, as trained on before the resume */
  guint64 last_saved_step;
  guint64 next_snapshot; /* fresh images at which the next one is due */
  gboolean reached_max;  /* change_state reads it too */
  gboolean failed;       /* an error was posted: the last checkpoint stays */
  gboolean ended;        /* the run ended (max-steps, stop or EOS) and saved */
  /* set by the "stop" action signal, from any thread; read by the
   * streaming thread (g_atomic_int) */
  gint stop_requested;
  GstTrainMetrics *metrics;    /* metrics-location, open from start to stop */
  TbWriter *tensorboard;       /* tensorboard-logdir's file, the same */
  gboolean tensorboard_warned; /* a write failed this run, and said so */
  TrainStats stats;
  /* @stats of every rank as the last gather made them (summed, or the
   * slowest rank's), and the samples in an epoch of all the ranks' shards:
   * what the reports, checkpoints and snapshots say. Alone: a copy. */
  TrainStats global;
  guint64 global_epoch_samples;
  GtEvalTotals eval;
  /* the step in flight and its batch, mapped until the step ends */
  GstTrainMappedBatch pending;
  gint64 pending_start;

  /* Data-parallel training, set at start. @comm is NULL in a process
   * that trains alone; @rank and @world_size are then 0 and 1. */
  GtComm *comm;
  gint rank;
  gint world_size;
  gint gpu_id;        /* gpu-id, with -1 made the local rank */
  gboolean agreed;    /* took part in the ranks' agreement to start */
  gboolean left_job;  /* left the job and took part in the last gather */
  gboolean peer_left; /* a step ended with GT_ERROR_STOPPED */
  /* what the rank-prefixed messages say (-1: no prefix) and the
   * read-only properties, for other threads (g_atomic_int) */
  gint message_rank;
  /* Data-parallel: armed when the sink posts an error, it ends the job if
   * the sink has not stopped @settings.error_timeout seconds later
   * (gst_cuda_train_sink_watchdog_arm); under @watchdog_lock. */
  GMutex watchdog_lock;
  GCond watchdog_cond;
  GThread *watchdog;
  gboolean watchdog_cancel;
  /* what the trainer runs on, for train-stats ("cpu: OpenBLAS ...") */
  gchar *compute;
  gint rank_prop;
  gint world_size_prop;
  gint global_batch_prop;
  /* the step of the last checkpoint this run wrote to checkpoint-location,
   * -1 while none (the read-only property checkpoint-step, which keeps it
   * after the run, until the next start); under the object lock */
  gint64 checkpoint_step_prop;
};

/* ---- gstcudatrainsink-steps.c ---- */

/* What the element hands the run. */
typedef enum
{
  GST_TRAIN_INPUT_BATCH, /* a buffer to render */
  GST_TRAIN_INPUT_EOS,   /* an EOS event */
  GST_TRAIN_INPUT_FLUSH, /* a FLUSH_STOP event: the stream restarts */
  GST_TRAIN_INPUT_HALT,  /* the sink stops (PAUSED to READY), maybe without
                          * EOS */
} GstTrainInput;

/* At start: the state of a run that has not begun. */
void gst_cuda_train_sink_steps_reset (GstCudaTrainSink *sink);
/* Everything that happens to the run: the trainer made at the first
 * batch, a step begun on each batch (@buffer), the step in flight
 * finished, and the end decided and carried out. Returns what render
 * returns for a batch; for EOS, GST_FLOW_OK when the event goes on
 * downstream, GST_FLOW_EOS when the sink posted EOS already and
 * GST_FLOW_ERROR after an error message. Streaming thread, or the
 * stopping thread for HALT. */
GstFlowReturn gst_cuda_train_sink_advance (
    GstCudaTrainSink *sink, GstTrainInput input, GstBuffer *buffer);

/* ---- gstcudatrainsink-trainer.c ---- */

/* How the first batch went (gst_cuda_train_sink_setup). */
typedef enum
{
  GST_TRAIN_SETUP_OK,     /* the trainer is ready */
  GST_TRAIN_SETUP_FAILED, /* an error was posted */
  GST_TRAIN_SETUP_NO_JOB, /* another rank cannot train: no rank does */
} GstTrainSetupResult;

/* Creates the trainer at the first batch, when caps and dataset facts are
 * known, and loads resume-from; in a data-parallel job after every rank
 * agreed to start. */
GstTrainSetupResult gst_cuda_train_sink_setup (GstCudaTrainSink *sink);
/* Writes a checkpoint to checkpoint-location, when training and set;
 * FALSE with an error posted. */
gboolean gst_cuda_train_sink_save (GstCudaTrainSink *sink);
/* Writes the snapshots that the fresh images so far make due; FALSE with
 * an error posted. */
gboolean gst_cuda_train_sink_snapshot (GstCudaTrainSink *sink);
/* Answers the resume query of a source (train-meta.h) from resume-from's
 * header: this rank's samples trained on, so that the source starts there
 * and the sink need not skip. FALSE (unanswered) when not resuming a
 * checkpoint in train mode, or when the checkpoint's world size is not
 * this job's (the shards changed). Any thread. */
gboolean gst_cuda_train_sink_answer_resume (
    GstCudaTrainSink *sink, GstQuery *query);

/* Samples in an epoch, as the source announced them; 0 when unknown. */
static inline guint64
gst_cuda_train_sink_epoch_samples (GstCudaTrainSink *sink)
{
  return sink->have_dataset ? sink->dataset.epoch_samples : 0;
}

/* ---- gstcudatrainsink-dist.c ---- */

/* At start, before its checks: messages start with the launcher's rank
 * when the sink is to join a job of more than one rank (before it joined:
 * a check that fails ends the job through the launcher, with the rank
 * named). */
void gst_cuda_train_sink_dist_name_rank (GstCudaTrainSink *sink);
/* At start: joins the data-parallel job when distributed says so, and
 * sets rank, world size and the GPU; FALSE with an error posted. */
gboolean gst_cuda_train_sink_dist_start (GstCudaTrainSink *sink);
/* At stop, or when start fails after joining: takes this rank's part in
 * what its peers wait for (the agreement to start, leaving the job and the
 * last gather), then lets go of the communicator. Nothing alone. */
void gst_cuda_train_sink_dist_stop (GstCudaTrainSink *sink);

/* What a rank says at the agreement to start. */
typedef enum
{
  GST_TRAIN_RANK_FAILED = -1, /* an error, or stopped before a batch */
  GST_TRAIN_RANK_NO_DATA = 0, /* end of stream before a batch */
  GST_TRAIN_RANK_READY = 1,   /* has a batch and @config */
} GstTrainRankStatus;

/* The agreement to start, once per run, collective: every rank says
 * @status and, when ready, its @config (the fields that must agree: model,
 * classes, batch shape, mode, the intervals). TRUE when every rank is
 * ready and agrees; *@use_cuda is then whether every rank can train on a
 * GPU (it says whether it can), and *@resume whether rank 0 resumes (it
 * says whether it does). FALSE otherwise, with an error posted on a
 * disagreement, or a warning naming the rank that is not ready (nothing
 * on that rank). Alone: TRUE, and the values as they are. */
gboolean gst_cuda_train_sink_dist_agree (GstCudaTrainSink *sink,
    GstTrainRankStatus status, const GtTrainerConfig *config,
    gboolean *use_cuda, gboolean *resume);

/* Refreshes @global and @global_epoch_samples from every rank's counts;
 * collective, at points that every rank reaches at the same step. Alone:
 * copies @stats. FALSE with an error posted when the job failed. */
gboolean gst_cuda_train_sink_gather_stats (GstCudaTrainSink *sink);
/* At the end of a run (max-steps, stop, EOS, a peer that left, or an
 * error): leaves the job, so that peers still training stop at this step,
 * and takes part in the last gather (eval: of the eval totals, into
 * @eval). Once per run; alone it only gathers. FALSE with an error
 * posted. */
gboolean gst_cuda_train_sink_leave_job (GstCudaTrainSink *sink);
/* A step ended with GT_ERROR_STOPPED: a peer left the job. Notes it
 * (@peer_left) and posts the warning that names the rank. */
void gst_cuda_train_sink_dist_peer_left (GstCudaTrainSink *sink);

/* Checks that the shard the source announced in @info is this rank's
 * (in a data-parallel job); FALSE with an error posted when it is not. */
gboolean gst_cuda_train_sink_check_rank_split (
    GstCudaTrainSink *sink, const GstTrainDatasetInfo *info);

/* The error watchdog (error-timeout). _init and _clear go with the
 * element's life; _allow at start lets an error arm it again; _arm, at an
 * error of the sink (any thread), starts it in a data-parallel job;
 * _disarm, when the pipeline stops the sink, ends it unfired. */
void gst_cuda_train_sink_watchdog_init (GstCudaTrainSink *sink);
void gst_cuda_train_sink_watchdog_clear (GstCudaTrainSink *sink);
void gst_cuda_train_sink_watchdog_allow (GstCudaTrainSink *sink);
void gst_cuda_train_sink_watchdog_arm (GstCudaTrainSink *sink);
void gst_cuda_train_sink_watchdog_disarm (GstCudaTrainSink *sink);

/* ---- gstcudatrainsink-report.c ---- */

/* At start, on rank 0: opens metrics-location, and makes tensorboard-logdir
 * and a new event file in it; FALSE with an error posted (naming the path)
 * when either cannot be written, and neither left open. */
gboolean gst_cuda_train_sink_report_start (GstCudaTrainSink *sink);
/* The trainer is made (and resumed): in train mode, the event file says
 * that the run goes on from the trainer's step, so that TensorBoard shows
 * one series across resumes. */
void gst_cuda_train_sink_report_run_begins (GstCudaTrainSink *sink);
/* At stop: closes both files. */
void gst_cuda_train_sink_report_stop (GstCudaTrainSink *sink);
/* Appends @s as a JSON line, {"type": NAME, fields}, and flushes it, so
 * that a reader sees whole lines while the run goes on; nothing when
 * @metrics is NULL (no metrics-location, or not rank 0). */
void gst_train_metrics_write (GstTrainMetrics *metrics, const GstStructure *s);

/* Posts the train-stats message of the interval that ends now, from the
 * counts of every rank as the caller just gathered them, and writes it to
 * the metrics and the event file; starts the next interval. */
void gst_cuda_train_sink_post_stats (GstCudaTrainSink *sink);
/* Posts the eval-result message of an eval run and writes it to the
 * metrics and the event file. */
void gst_cuda_train_sink_post_eval_result (GstCudaTrainSink *sink);

G_END_DECLS

#endif /* __GST_CUDA_TRAIN_SINK_PRIVATE_H__ */
