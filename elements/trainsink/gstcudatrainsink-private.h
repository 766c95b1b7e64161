/* gstcudatrainsink-private.h: the state of cudatrainsink, shared by the
 * element (gstcudatrainsink.c, the GStreamer side: properties, caps,
 * events, one step per batch, max-steps and EOS, messages), its trainer
 * (gstcudatrainsink-trainer.c: the trainer created, resumed, checkpointed
 * and snapshotted) and its part in a data-parallel job
 * (gstcudatrainsink-dist.c: joining, the ranks' agreement to start, the
 * statistics gathered over the ranks, leaving). */
#ifndef __GST_CUDA_TRAIN_SINK_PRIVATE_H__
#define __GST_CUDA_TRAIN_SINK_PRIVATE_H__

#include "gstcudatrainsink.h"
#include "gstcudatrainsink-settings.h"
#include "train-meta.h"
#include "train-report.h"
#include "trainer.h"

#include <stdio.h>

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_cuda_train_sink_debug);

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
  guint64 last_saved_step;
  guint64 next_snapshot; /* fresh images at which the next one is due */
  gboolean reached_max;  /* change_state reads it too */
  gboolean failed;       /* an error was posted: the last checkpoint stays */
  gboolean ended;        /* the run ended (max-steps, stop or EOS) and saved */
  /* set by the "stop" action signal, from any thread; read by the
   * streaming thread (g_atomic_int) */
  gint stop_requested;
  FILE *metrics;
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
   * (gst_cuda_train_sink_arm_watchdog); under @watchdog_lock. */
  GMutex watchdog_lock;
  GCond watchdog_cond;
  GThread *watchdog;
  gboolean watchdog_cancel;
  /* what the trainer runs on, for train-stats ("cpu: OpenBLAS ...") */
  gchar *compute;
  gint rank_prop;
  gint world_size_prop;
  gint global_batch_prop;
};

/* How the first batch went (gst_cuda_train_sink_setup). */
typedef enum
{
  GST_TRAIN_SETUP_OK,     /* the trainer is ready */
  GST_TRAIN_SETUP_FAILED, /* an error was posted */
  GST_TRAIN_SETUP_NO_JOB, /* another rank cannot train: no rank does */
} GstTrainSetupResult;

/* ---- gstcudatrainsink-trainer.c ---- */

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
guint64 gst_cuda_train_sink_epoch_samples (GstCudaTrainSink *sink);

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
/* Adds up @eval over the ranks (collective); FALSE with an error posted. */
gboolean gst_cuda_train_sink_gather_eval (
    GstCudaTrainSink *sink, GtEvalTotals *totals);
/* At the end of a run (max-steps, stop, EOS, a peer that left, or an
 * error): leaves the job, so that peers still training stop at this step,
 * and takes part in the last gather (eval: of the eval totals, into
 * @eval). Once per run; alone it only gathers. FALSE with an error
 * posted. */
gboolean gst_cuda_train_sink_leave_job (GstCudaTrainSink *sink);

/* Checks that the shard the source announced in @info is this rank's
 * (in a data-parallel job); FALSE with an error posted when it is not. */
gboolean gst_cuda_train_sink_check_shard (
    GstCudaTrainSink *sink, const GstTrainDatasetInfo *info);

/* ---- gstcudatrainsink.c ---- */

/* Appends @s to metrics-location, when set, as a JSON line. */
void gst_cuda_train_sink_write_json (
    GstCudaTrainSink *sink, const GstStructure *s);

G_END_DECLS

#endif /* __GST_CUDA_TRAIN_SINK_PRIVATE_H__ */
