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
 * The element calls steps, trainer (the resume query, and at init and
 * stop), dist and report; steps calls trainer, dist and report; trainer
 * calls dist and report; dist and report call none of them.
 *
 * Each file owns a part of the state, below with its functions: the
 * element the fields of GstCudaTrainSink itself (the properties, and what
 * the caps and the dataset tags said), steps @run, trainer @trainer, dist
 * @dist and report @report. Only the owner writes a part; the others read
 * it, and change it by calling the owner's functions, so that what ends a
 * run, or a fault, is decided where its state is. */
#ifndef __GST_CUDA_TRAIN_SINK_PRIVATE_H__
#define __GST_CUDA_TRAIN_SINK_PRIVATE_H__

#include "gstcudatrainsink.h"
#include "gstcudatrainsink-settings.h"
#include "train-meta.h"
#include "train-report.h"
#include "trainer.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_cuda_train_sink_debug);

/* ---- gstcudatrainsink-steps.c ---- */

/* A batch buffer (a ref) with its two memories mapped, and the GtBatch
 * that points into them; all zero when nothing is mapped. */
typedef struct
{
  GstBuffer *buffer;
  GstMapInfo images;
  GstMapInfo labels;
  GtBatch batch;
} GstTrainMappedBatch;

/* The run, from start to stop: the streaming thread's, and the stopping
 * thread's at GST_TRAIN_INPUT_HALT. */
typedef struct
{
  gboolean reached_max; /* the sink ended the stream: change_state reads it */
  gboolean failed;      /* an error was posted: the last checkpoint stays */
  gboolean ended;       /* the run ended (max-steps, stop or EOS) and saved */
  TrainStats stats;     /* this rank's counts */
  /* mode=eval: this rank's totals; at the end of the run every rank's,
   * which gst_cuda_train_sink_leave_job adds up in place */
  GtEvalTotals eval;
  /* the step in flight and its batch, mapped until the step ends */
  GstTrainMappedBatch pending;
  gint64 pending_start;
} GstTrainSinkRun;

/* What the element hands the run. */
typedef enum
{
  GST_TRAIN_INPUT_BATCH, /* a buffer to render */
  GST_TRAIN_INPUT_EOS,   /* an EOS event */
  GST_TRAIN_INPUT_FLUSH, /* a FLUSH_STOP event: the stream restarts */
  GST_TRAIN_INPUT_HALT,  /* the sink stops (PAUSED to READY), maybe without
                          * EOS */
} GstTrainInput;

/* At start: the state of a run that has not begun (with the trainer's
 * and the gathered counts'). */
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
/* The element posted an error outside the run (a shard that is not this
 * rank's): the run refuses what comes next, and the last checkpoint
 * stays. Streaming thread. */
void gst_cuda_train_sink_fail_run (GstCudaTrainSink *sink);

/* ---- gstcudatrainsink-trainer.c ---- */

/* The trainer and what it was resumed from and saved to; the streaming
 * thread's, but for the resume query and the property noted. */
typedef struct
{
  GtTrainer *gt; /* made at the first batch, freed at stop */
  /* what it runs on, for train-stats ("CPU: OpenBLAS ...") */
  gchar *compute;
  gint min_train_batch; /* fewest images a training step takes */
  /* the source starts where the checkpoint stopped (it asked, the sink
   * answered; g_atomic_int: asked from the source's streaming thread) */
  gint upstream_resumes;
  /* the samples the source resumes after (its answer) */
  guint64 resume_samples;
  /* after an exact resume that no source asked about: the batches left
   * to skip, and those skipped this run, as trained on before */
  guint64 skip_batches;
  guint64 batches_skipped;
  /* fresh images of the runs before an exact resume, for the epoch */
  guint64 fresh_before;
  guint64 last_saved_step;
  guint64 next_snapshot; /* fresh images at which the next one is due */
  /* the step of the last checkpoint this run wrote to checkpoint-location,
   * -1 while none (the read-only property checkpoint-step, which keeps it
   * after the run, until the next start); under the object lock */
  gint64 checkpoint_step_prop;
} GstTrainSinkTrainer;

/* How the first batch went (gst_cuda_train_sink_setup). */
typedef enum
{
  GST_TRAIN_SETUP_OK,     /* the trainer is ready */
  GST_TRAIN_SETUP_FAILED, /* an error was posted */
  GST_TRAIN_SETUP_NO_JOB, /* another rank cannot train: no rank does */
} GstTrainSetupResult;

/* At the element's init: no checkpoint written yet. */
void gst_cuda_train_sink_trainer_init (GstCudaTrainSink *sink);
/* At start: nothing resumed, saved or snapshotted yet. */
void gst_cuda_train_sink_trainer_reset (GstCudaTrainSink *sink);
/* At stop: frees the trainer, before the communicator it uses. */
void gst_cuda_train_sink_trainer_stop (GstCudaTrainSink *sink);
/* Creates the trainer at the first batch, when caps and dataset facts are
 * known, and loads resume-from; in a data-parallel job after every rank
 * agreed to start. */
GstTrainSetupResult gst_cuda_train_sink_setup (GstCudaTrainSink *sink);
/* TRUE when the batch that arrived is to be skipped, as trained on before
 * an exact resume that no source asked about; counts it. */
gboolean gst_cuda_train_sink_skip_batch (GstCudaTrainSink *sink);
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

/* ---- gstcudatrainsink-dist.c ---- */

/* This rank's part in a data-parallel job. */
typedef struct
{
  /* Set at start. @comm is NULL in a process that trains alone; @rank
   * and @world_size are then 0 and 1. */
  GtComm *comm;
  gint rank;
  gint world_size;
  gint gpu_id;        /* gpu-id, with -1 made the local rank */
  gboolean agreed;    /* took part in the ranks' agreement to start */
  gboolean left_job;  /* left the job and took part in the last gather */
  gboolean peer_left; /* a step ended with GT_ERROR_STOPPED */
  /* @run.stats of every rank as the last gather made them (summed, or
   * the slowest rank's), and the samples in an epoch of all the ranks'
   * shards: what the reports, checkpoints and snapshots say. Alone: a
   * copy. */
  TrainStats global;
  guint64 global_epoch_samples;
  /* what the rank-prefixed messages say (-1: no prefix) and the
   * read-only properties rank and world-size, for other threads
   * (g_atomic_int) */
  gint message_rank;
  gint rank_prop;
  gint world_size_prop;
  /* Armed when the sink posts an error, it ends the job if the sink has
   * not stopped @settings.error_timeout seconds later
   * (gst_cuda_train_sink_watchdog_arm); under @watchdog_lock. */
  GMutex watchdog_lock;
  GCond watchdog_cond;
  GThread *watchdog;
  gboolean watchdog_cancel;
} GstTrainSinkDist;

/* _init and _clear go with the element's life: no job, and the
 * watchdog's lock. */
void gst_cuda_train_sink_dist_init (GstCudaTrainSink *sink);
void gst_cuda_train_sink_dist_clear (GstCudaTrainSink *sink);
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
 * last gather). Nothing alone. */
void gst_cuda_train_sink_dist_stop (GstCudaTrainSink *sink);
/* Last, once the watchdog is disarmed and the trainer freed: lets go of
 * the communicator. */
void gst_cuda_train_sink_dist_close (GstCudaTrainSink *sink);

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

/* At start, once @run.stats is zeroed: @global is a copy of it. */
void gst_cuda_train_sink_dist_reset_stats (GstCudaTrainSink *sink);
/* Refreshes @global and @global_epoch_samples from every rank's counts;
 * collective, at points that every rank reaches at the same step. Alone:
 * copies @run.stats. FALSE with an error posted when the job failed. */
gboolean gst_cuda_train_sink_gather_stats (GstCudaTrainSink *sink);
/* Fills @report for the interval of @global that ends at @now, as the
 * caller just gathered it, and starts the next one there. */
void gst_cuda_train_sink_take_report (
    GstCudaTrainSink *sink, gint64 now, TrainStatsReport *report);
/* At the end of a run (max-steps, stop, EOS, a peer that left, or an
 * error): leaves the job, so that peers still training stop at this step,
 * and takes part in the last gather (eval: of the totals @eval, which it
 * adds up over the ranks in place; NULL in train mode). Once per run;
 * alone it only gathers. FALSE with an error posted. */
gboolean gst_cuda_train_sink_leave_job (
    GstCudaTrainSink *sink, GtEvalTotals *eval);
/* A step ended with GT_ERROR_STOPPED: a peer left the job. Notes it
 * (@peer_left) and posts the warning that names the rank. */
void gst_cuda_train_sink_dist_peer_left (GstCudaTrainSink *sink);

/* Checks that the shard the source announced in @info is this rank's
 * (in a data-parallel job); FALSE with an error posted when it is not. */
gboolean gst_cuda_train_sink_check_rank_split (
    GstCudaTrainSink *sink, const GstTrainDatasetInfo *info);

/* The error watchdog (error-timeout). _allow at start lets an error arm
 * it again; _arm, at an error of the sink (any thread), starts it in a
 * data-parallel job; _disarm, when the pipeline stops the sink, ends it
 * unfired. */
void gst_cuda_train_sink_watchdog_allow (GstCudaTrainSink *sink);
void gst_cuda_train_sink_watchdog_arm (GstCudaTrainSink *sink);
void gst_cuda_train_sink_watchdog_disarm (GstCudaTrainSink *sink);

/* ---- gstcudatrainsink-report.c ---- */

/* The metrics file: JSON lines appended (gstcudatrainsink-report.c). */
typedef struct _GstTrainMetrics GstTrainMetrics;
/* A TensorBoard event file (tb-writer.h). */
typedef struct _TbWriter TbWriter;

/* The files it writes, rank 0's. */
typedef struct
{
  GstTrainMetrics *metrics;    /* metrics-location, open from start to stop */
  TbWriter *tensorboard;       /* tensorboard-logdir's file, the same */
  gboolean tensorboard_warned; /* a write failed this run, and said so */
} GstTrainSinkReport;

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
/* Appends @s to the metrics file as a JSON line, {"type": NAME, fields},
 * without a message (a snapshot's note); nothing without the file. */
void gst_cuda_train_sink_report_note (
    GstCudaTrainSink *sink, const GstStructure *s);

/* Posts the train-stats message of the interval in @r, the counts of
 * every rank as the caller just took them, and writes it to the metrics
 * and the event file. */
void gst_cuda_train_sink_post_stats (
    GstCudaTrainSink *sink, const TrainStatsReport *r);
/* Posts the eval-result message of an eval run's totals @eval and writes
 * it to the metrics and the event file. */
void gst_cuda_train_sink_post_eval_result (
    GstCudaTrainSink *sink, const GtEvalTotals *eval);

/* ---- the sink ---- */

struct _GstCudaTrainSink
{
  GstBaseSink parent;

  /* The element's (gstcudatrainsink.c). The properties, under the object
   * lock. */
  GstCudaTrainSinkSettings props;
  /* Streaming state, set at start and then touched by the streaming thread
   * only. @settings is @props as they were at start: a property set
   * meanwhile can neither change a run half-way nor pull a string from
   * under a checkpoint being written. */
  GstCudaTrainSinkSettings settings;
  gint width, height, channels, batch_size; /* from the caps */
  GstTrainDatasetInfo dataset;              /* from the dataset tags */
  gboolean have_dataset;
  /* set by the "stop" action signal, from any thread; read by the
   * streaming thread (g_atomic_int) */
  gint stop_requested;
  /* the read-only property global-batch-size (g_atomic_int) */
  gint global_batch_prop;

  GstTrainSinkRun run;         /* gstcudatrainsink-steps.c's */
  GstTrainSinkTrainer trainer; /* gstcudatrainsink-trainer.c's */
  GstTrainSinkDist dist;       /* gstcudatrainsink-dist.c's */
  GstTrainSinkReport report;   /* gstcudatrainsink-report.c's */
};

/* Samples in an epoch, as the source announced them; 0 when unknown. */
static inline guint64
gst_cuda_train_sink_epoch_samples (GstCudaTrainSink *sink)
{
  return sink->have_dataset ? sink->dataset.epoch_samples : 0;
}

G_END_DECLS

#endif /* __GST_CUDA_TRAIN_SINK_PRIVATE_H__ */
