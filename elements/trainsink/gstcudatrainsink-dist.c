/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstcudatrainsink-dist.c: cudatrainsink in a data-parallel job, as
 * PyTorch's DistributedDataParallel: one process (one pipeline) per rank,
 * the trainer library averaging the gradients (trainer.h, dist.c).
 *
 * What the trainer does not do, the sink does here with the library's own
 * collectives (gt_comm_allreduce), so that no rank ever waits for a peer
 * that will not come. Every rank makes the same collective calls in the
 * same order:
 *
 *   join (start)  ->  agree (first batch, or EOS, stop or an error before
 *   it)  ->  [trainer made and resumed, collective]  ->  per step: the
 *   step, and a gather of the statistics at the step-counted points (stats
 *   interval, checkpoint interval, every step with snapshots)  ->  leave
 *   and the last gather (max-steps, stop, EOS, a peer that left, or an
 *   error: from stop())
 *
 * The agreement comes before the trainer because making the trainer is a
 * collective: a rank that fails before its first batch (a missing folder,
 * a shard that is not its own) says so there, and its peers end with it
 * instead of waiting in the trainer's first broadcast. A rank that leaves
 * (gt_trainer_leave) takes part in the step its peers are in, which ends
 * on all of them with GT_ERROR_STOPPED at the same step; then every rank
 * gathers once more, and rank 0 writes the final statistics and checkpoint.
 *
 * A rank that posts an error and is never stopped (an application that
 * missed the error) would keep its peers waiting in their next collective
 * for ever: the watchdog at the end of this file ends the job then.
 *
 * Its state is the sink's @dist (gstcudatrainsink-private.h), which only
 * this file writes.
 */
#include "gstcudatrainsink-private.h"
#include "gt-launcher.h"

#include <stdio.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_cuda_train_sink_debug

/* ---- joining and leaving ---- */

void
gst_cuda_train_sink_dist_init (GstCudaTrainSink *sink)
{
  sink->dist.message_rank = -1;
  sink->dist.world_size_prop = 1;
  g_mutex_init (&sink->dist.watchdog_lock);
  g_cond_init (&sink->dist.watchdog_cond);
}

void
gst_cuda_train_sink_dist_clear (GstCudaTrainSink *sink)
{
  /* an application that drops the element without stopping it */
  gst_cuda_train_sink_watchdog_disarm (sink);
  g_mutex_clear (&sink->dist.watchdog_lock);
  g_cond_clear (&sink->dist.watchdog_cond);
}

void
gst_cuda_train_sink_dist_name_rank (GstCudaTrainSink *sink)
{
  GtLauncherPosition position;
  gboolean launched = gt_launcher_position (&position) && position.size > 1;

  g_atomic_int_set (&sink->dist.message_rank,
      launched && sink->settings.distributed != GST_TRAIN_DISTRIBUTED_OFF
          ? position.rank
          : -1);
}

gboolean
gst_cuda_train_sink_dist_start (GstCudaTrainSink *sink)
{
  const GstCudaTrainSinkSettings *s = &sink->settings;
  GtLauncherPosition position;
  gboolean launched = gt_launcher_position (&position) && position.size > 1;
  gchar why[512];

  sink->dist.comm = NULL;
  sink->dist.rank = 0;
  sink->dist.world_size = 1;
  sink->dist.agreed = sink->dist.left_job = sink->dist.peer_left = FALSE;
  if (s->distributed != GST_TRAIN_DISTRIBUTED_OFF
      && gt_launcher_slurm_without_pmi (&position)) {
    /* MPI would start each task alone: N copies of one job, training the
     * same data */
    GST_ELEMENT_ERROR (sink, LIBRARY, INIT,
        ("srun started this process as task %d of %d (SLURM_PROCID, "
         "SLURM_NTASKS) without the rank information MPI needs: no "
         "PMIX_RANK or PMI_RANK in its environment. Launch with srun "
         "--mpi=pmix (or --mpi=pmi2), or set MpiDefault=pmix in "
         "slurm.conf.",
            position.rank, position.size),
        ("without it every task would train alone, on the same data; "
         "distributed=off trains each task alone on purpose"));
    return FALSE;
  }
  if (s->distributed == GST_TRAIN_DISTRIBUTED_MPI
      || (s->distributed == GST_TRAIN_DISTRIBUTED_AUTO && launched)) {
    sink->dist.comm = gt_comm_new (why, sizeof (why));
    if (sink->dist.comm == NULL) {
      GST_ELEMENT_ERROR (sink, LIBRARY, INIT,
          ("Cannot join the data-parallel job: %s.", why),
          ("distributed=%s; the launcher's environment (%s) says rank %d of "
           "%d; set distributed=off to train each process alone",
              s->distributed == GST_TRAIN_DISTRIBUTED_MPI ? "mpi" : "auto",
              position.source, position.rank, position.size));
      return FALSE;
    }
    sink->dist.rank = gt_comm_rank (sink->dist.comm);
    sink->dist.world_size = gt_comm_size (sink->dist.comm);
    if (launched && sink->dist.world_size != position.size) {
      GST_ELEMENT_ERROR (sink, LIBRARY, INIT,
          ("The launcher's environment (%s) says rank %d of %d, but MPI "
           "started this process in a job of %d: the launcher and this "
           "MPI do not agree on the ranks.",
              position.source, position.rank, position.size,
              sink->dist.world_size),
          ("with srun, pass --mpi=pmix (or pmi2); with mpirun, use the "
           "mpirun of the Open MPI gst-train was built with"));
      g_clear_pointer (&sink->dist.comm, gt_comm_free);
      return FALSE;
    }
    gt_comm_set_timeout (sink->dist.comm, s->collective_timeout);
    GST_INFO_OBJECT (sink, "rank %d of %d (%d on this machine)",
        sink->dist.rank, sink->dist.world_size,
        gt_comm_local_rank (sink->dist.comm));
  }
  /* gpu-id -1: one GPU per process of this machine, as torchrun's
   * LOCAL_RANK */
  sink->dist.gpu_id = s->gpu_id >= 0 ? s->gpu_id
      : sink->dist.comm              ? gt_comm_local_rank (sink->dist.comm)
                                     : 0;
  g_atomic_int_set (&sink->dist.message_rank,
      sink->dist.world_size > 1 ? sink->dist.rank : -1);
  g_atomic_int_set (&sink->dist.rank_prop, sink->dist.rank);
  g_atomic_int_set (&sink->dist.world_size_prop, sink->dist.world_size);
  return TRUE;
}

void
gst_cuda_train_sink_dist_stop (GstCudaTrainSink *sink)
{
  /* after a timeout the job is ending: nobody waits for this rank */
  if (sink->dist.comm == NULL || gt_comm_timed_out (sink->dist.comm))
    return;
  if (!sink->dist.agreed)
    gst_cuda_train_sink_dist_agree (
        sink, GST_TRAIN_RANK_FAILED, NULL, NULL, NULL);
  else if (sink->trainer.gt != NULL) {
    /* the run is over and its totals stay as they are: the sum is for the
     * peers */
    GtEvalTotals eval = sink->run.eval;

    gst_cuda_train_sink_leave_job (sink, &eval);
  }
}

void
gst_cuda_train_sink_dist_close (GstCudaTrainSink *sink)
{
  g_clear_pointer (&sink->dist.comm, gt_comm_free);
}

/* ---- the agreement to start ---- */

/* Fields of the agreement: a MAX reduction over int64 values. */
enum
{
  AGREE_STATUS,       /* -status: the lowest status */
  AGREE_FIRST_FAILED, /* size - rank of failed ranks: the lowest one */
  AGREE_FIRST_NO_DATA,
  AGREE_RESUME,  /* rank 0's */
  AGREE_NO_CUDA, /* 1 where a rank cannot use a GPU */
  AGREE_CHECKED, /* then value and -value of each checked field */
};

/* The configuration fields every rank must share, for the trainer (the
 * shapes of rank 0's broadcast state) and for the sink (the step-counted
 * points of gathers). */
typedef struct
{
  const gchar *name;
  gint64 value;
} AgreedField;

static guint
agreed_fields (
    GstCudaTrainSink *sink, const GtTrainerConfig *config, AgreedField *fields)
{
  const GstCudaTrainSinkSettings *s = &sink->settings;
  guint n = 0;

#define FIELD(label, expression)                                               \
  fields[n].name = label;                                                      \
  fields[n++].value = config ? (gint64)(expression) : 0;
  FIELD ("model", config->model);
  FIELD ("num-classes", config->num_classes);
  FIELD ("image width", config->width);
  FIELD ("image height", config->height);
  FIELD ("images per batch", config->batch_size);
  FIELD ("mode", s->mode);
  FIELD ("stats-interval", s->stats_interval);
  FIELD ("checkpoint-interval", s->checkpoint_interval);
  FIELD ("snapshot-interval", s->snapshot_interval);
  FIELD ("collective-timeout", s->collective_timeout);
#undef FIELD
  return n;
}

#define MAX_AGREED_FIELDS 16

gboolean
gst_cuda_train_sink_dist_agree (GstCudaTrainSink *sink,
    GstTrainRankStatus status, const GtTrainerConfig *config,
    gboolean *use_cuda, gboolean *resume)
{
  AgreedField fields[MAX_AGREED_FIELDS];
  gint64 values[AGREE_CHECKED + 2 * MAX_AGREED_FIELDS];
  guint n_fields, i, n_values;
  gint size = sink->dist.world_size, lowest;
  gchar why[768];

  if (sink->dist.comm == NULL)
    return status == GST_TRAIN_RANK_READY;
  g_return_val_if_fail (!sink->dist.agreed, FALSE);
  sink->dist.agreed = TRUE;
  n_fields = agreed_fields (
      sink, status == GST_TRAIN_RANK_READY ? config : NULL, fields);
  n_values = AGREE_CHECKED + 2 * n_fields;
  memset (values, 0, sizeof (values));
  values[AGREE_STATUS] = -(gint64)status;
  if (status == GST_TRAIN_RANK_FAILED)
    values[AGREE_FIRST_FAILED] = size - sink->dist.rank;
  if (status == GST_TRAIN_RANK_NO_DATA)
    values[AGREE_FIRST_NO_DATA] = size - sink->dist.rank;
  if (sink->dist.rank == 0 && resume)
    values[AGREE_RESUME] = *resume;
  values[AGREE_NO_CUDA] = use_cuda ? !*use_cuda : 1;
  for (i = 0; i < n_fields; i++) {
    values[AGREE_CHECKED + 2 * i] = fields[i].value;
    values[AGREE_CHECKED + 2 * i + 1] = -fields[i].value;
  }
  GST_DEBUG_OBJECT (sink, "agreement: this rank is %s",
      status == GST_TRAIN_RANK_READY         ? "ready"
          : status == GST_TRAIN_RANK_NO_DATA ? "without data"
                                             : "not training");
  gt_comm_set_activity (sink->dist.comm, "agreement before training", -1);
  if (gt_comm_allreduce (sink->dist.comm, values, n_values, GT_COMM_INT64,
          GT_COMM_MAX, why, sizeof (why))
      < 0) {
    GST_ELEMENT_ERROR (sink, LIBRARY, FAILED,
        ("The ranks could not agree to start: %s.", why), (NULL));
    return FALSE;
  }
  if (values[AGREE_STATUS] != -(gint64)GST_TRAIN_RANK_READY) {
    /* the rank that is not ready knows why; its peers end with it */
    if (status == GST_TRAIN_RANK_READY) {
      gboolean failed = values[AGREE_FIRST_FAILED] > 0;

      lowest = size
          - (gint)values[failed ? AGREE_FIRST_FAILED : AGREE_FIRST_NO_DATA];
      GST_ELEMENT_WARNING (sink, RESOURCE, FAILED,
          ("rank %d %s before the first step: every rank stops with it, "
           "nothing trained.",
              lowest,
              failed ? "stopped (an error there, or a stop)"
                     : "had no data to train on"),
          ("rank %d %s before the first step: stopping with it", lowest,
              failed ? "stopped" : "had no data"));
    }
    return FALSE;
  }
  for (i = 0; i < n_fields; i++) {
    gint64 highest = values[AGREE_CHECKED + 2 * i],
           least = -values[AGREE_CHECKED + 2 * i + 1];

    if (highest != least) {
      GST_ELEMENT_ERROR (sink, LIBRARY, SETTINGS,
          ("The ranks disagree on the %s (from %" G_GINT64_FORMAT
           " to %" G_GINT64_FORMAT
           "): every rank must train the same model on batches of the same "
           "shape, with the same mode, intervals and collective-timeout.",
              fields[i].name, least, highest),
          (NULL));
      return FALSE;
    }
  }
  if (use_cuda)
    *use_cuda = values[AGREE_NO_CUDA] == 0;
  if (resume)
    *resume = values[AGREE_RESUME] != 0;
  return TRUE;
}

/* ---- statistics over the ranks ---- */

/* One rank's row of the gather. */
enum
{
  ROW_IMAGES,
  ROW_FRESH,
  ROW_INTERVAL_IMAGES,
  ROW_INTERVAL_FRESH,
  ROW_WAIT,
  ROW_COMM,
  ROW_STEP,
  ROW_BUSY,
  ROW_EPOCH_SAMPLES,
  ROW_FIELDS
};

/* The seconds of the interval a rank spent outside the gradients'
 * reduction: in its steps, less the reduction. A step is timed from its
 * batch's arrival to the next batch's (gstcudatrainsink-steps.c), so its
 * seconds hold the wait for that batch already. */
static gdouble
own_time (const gdouble *row)
{
  return row[ROW_STEP] - row[ROW_COMM];
}

void
gst_cuda_train_sink_dist_reset_stats (GstCudaTrainSink *sink)
{
  sink->dist.global = sink->run.stats;
  sink->dist.global_epoch_samples = 0;
}

gboolean
gst_cuda_train_sink_gather_stats (GstCudaTrainSink *sink)
{
  const TrainStats *mine = &sink->run.stats;
  TrainStats *global = &sink->dist.global;
  gint size = sink->dist.world_size, r;
  gdouble *rows, *row;
  gchar why[768];

  *global = *mine;
  sink->dist.global_epoch_samples = gst_cuda_train_sink_epoch_samples (sink);
  if (sink->dist.comm == NULL)
    return TRUE;
  /* every rank fills its own row of a zeroed table and a sum fills in the
   * others' (adding zeros is exact): sums and maxima from one call */
  rows = g_new0 (gdouble, (gsize)size * ROW_FIELDS);
  row = rows + (gsize)sink->dist.rank * ROW_FIELDS;
  row[ROW_IMAGES] = (gdouble)mine->images;
  row[ROW_FRESH] = (gdouble)mine->fresh_images;
  row[ROW_INTERVAL_IMAGES] = (gdouble)mine->interval_images;
  row[ROW_INTERVAL_FRESH] = (gdouble)mine->interval_fresh;
  row[ROW_WAIT] = mine->wait_seconds;
  row[ROW_COMM] = mine->comm_seconds;
  row[ROW_STEP] = mine->step_seconds;
  row[ROW_BUSY] = mine->busy_seconds;
  row[ROW_EPOCH_SAMPLES] = (gdouble)sink->dist.global_epoch_samples;
  gt_comm_set_activity (sink->dist.comm, "statistics gather",
      sink->trainer.gt ? gt_trainer_global_step (sink->trainer.gt) : -1);
  if (gt_comm_allreduce (sink->dist.comm, rows, (gsize)size * ROW_FIELDS,
          GT_COMM_DOUBLE, GT_COMM_SUM, why, sizeof (why))
      < 0) {
    g_free (rows);
    GST_ELEMENT_ERROR (sink, LIBRARY, FAILED,
        ("Could not gather the statistics of the ranks: %s.", why), (NULL));
    return FALSE;
  }
  global->images = global->fresh_images = 0;
  global->interval_images = global->interval_fresh = 0;
  global->wait_seconds = global->comm_seconds = 0;
  global->step_seconds = global->busy_seconds = 0;
  sink->dist.global_epoch_samples = 0;
  global->slowest_rank = 0;
  global->straggler_wait_seconds = 0;
  for (r = 0; r < size; r++) {
    row = rows + (gsize)r * ROW_FIELDS;
    /* the rank the others waited for in the reduction spent the most time
     * outside it, waiting for data or computing */
    if (r > 0
        && own_time (row)
            > own_time (rows + (gsize)global->slowest_rank * ROW_FIELDS))
      global->slowest_rank = r;
    global->images += (guint64)row[ROW_IMAGES];
    global->fresh_images += (guint64)row[ROW_FRESH];
    global->interval_images += (guint64)row[ROW_INTERVAL_IMAGES];
    global->interval_fresh += (guint64)row[ROW_INTERVAL_FRESH];
    sink->dist.global_epoch_samples += (guint64)row[ROW_EPOCH_SAMPLES];
    /* the job goes at the pace of its slowest rank */
    global->wait_seconds = MAX (global->wait_seconds, row[ROW_WAIT]);
    global->comm_seconds = MAX (global->comm_seconds, row[ROW_COMM]);
    global->step_seconds = MAX (global->step_seconds, row[ROW_STEP]);
    global->busy_seconds = MAX (global->busy_seconds, row[ROW_BUSY]);
  }
  /* how long the others waited for it: its time outside the reduction
   * less each one's, on average */
  for (r = 0; r < size; r++)
    if (r != global->slowest_rank)
      global->straggler_wait_seconds +=
          MAX (0,
              own_time (rows + (gsize)global->slowest_rank * ROW_FIELDS)
                  - own_time (rows + (gsize)r * ROW_FIELDS))
          / (size - 1);
  g_free (rows);
  return TRUE;
}

void
gst_cuda_train_sink_take_report (
    GstCudaTrainSink *sink, gint64 now, TrainStatsReport *report)
{
  train_stats_take_report (
      &sink->dist.global, sink->dist.global_epoch_samples, now, report);
}

/* Adds up @totals over the ranks (collective); FALSE with an error
 * posted. */
static gboolean
gst_cuda_train_sink_gather_eval (GstCudaTrainSink *sink, GtEvalTotals *totals)
{
  gdouble sums[4];
  gchar why[768];

  if (sink->dist.comm == NULL)
    return TRUE;
  sums[0] = totals->loss_sum;
  sums[1] = (gdouble)totals->num_samples;
  sums[2] = (gdouble)totals->correct_top1;
  sums[3] = (gdouble)totals->correct_top5;
  gt_comm_set_activity (sink->dist.comm, "evaluation sum", -1);
  if (gt_comm_allreduce (sink->dist.comm, sums, 4, GT_COMM_DOUBLE, GT_COMM_SUM,
          why, sizeof (why))
      < 0) {
    GST_ELEMENT_ERROR (sink, LIBRARY, FAILED,
        ("Could not add up the evaluation of the ranks: %s.", why), (NULL));
    return FALSE;
  }
  totals->loss_sum = sums[0];
  totals->num_samples = (int64_t)sums[1];
  totals->correct_top1 = (int64_t)sums[2];
  totals->correct_top5 = (int64_t)sums[3];
  return TRUE;
}

gboolean
gst_cuda_train_sink_leave_job (GstCudaTrainSink *sink, GtEvalTotals *eval)
{
  gboolean ok = TRUE;

  if (sink->dist.comm == NULL)
    return sink->settings.mode == GST_TRAIN_MODE_EVAL
        || gst_cuda_train_sink_gather_stats (sink);
  if (sink->dist.left_job)
    return TRUE;
  sink->dist.left_job = TRUE;
  /* peers still in a step stop at it; a rank whose step stopped has left
   * already, and this does nothing */
  if (gt_trainer_leave (sink->trainer.gt) != GT_OK) {
    GST_ELEMENT_ERROR (sink, LIBRARY, FAILED,
        ("Could not leave the data-parallel job: %s.",
            gt_trainer_error (sink->trainer.gt)),
        (NULL));
    ok = FALSE;
  }
  /* after a timeout nobody gathers any more */
  if (gt_comm_timed_out (sink->dist.comm))
    return FALSE;
  GST_DEBUG_OBJECT (sink, "left the job at step %" G_GINT64_FORMAT,
      gt_trainer_global_step (sink->trainer.gt));
  /* the peers gather once more whatever happened here */
  if (sink->settings.mode == GST_TRAIN_MODE_EVAL)
    ok &= gst_cuda_train_sink_gather_eval (sink, eval);
  else
    ok &= gst_cuda_train_sink_gather_stats (sink);
  return ok;
}

/* The rank named in the trainer's GT_ERROR_STOPPED message ("rank R left
 * the job"), or -1. */
static gint
gst_cuda_train_sink_rank_that_left (GstCudaTrainSink *sink)
{
  const gchar *text = strstr (gt_trainer_error (sink->trainer.gt), "rank ");
  gint rank;

  if (text == NULL || sscanf (text, "rank %d left", &rank) != 1)
    return -1;
  return rank;
}

/* Every rank stops at this step, as at EOS, never with an error. */
void
gst_cuda_train_sink_dist_peer_left (GstCudaTrainSink *sink)
{
  guint64 step = (guint64)gt_trainer_global_step (sink->trainer.gt);
  gint rank = gst_cuda_train_sink_rank_that_left (sink);
  gchar *who =
      rank >= 0 ? g_strdup_printf ("rank %d", rank) : g_strdup ("a rank");

  sink->dist.peer_left = TRUE;
  /* a warning: the batches this rank still had are not trained on */
  GST_ELEMENT_WARNING (sink, RESOURCE, FAILED,
      ("%s left at step %" G_GUINT64_FORMAT ": stopping with it.", who, step),
      ("%s left at step %" G_GUINT64_FORMAT ": stopping with it (%s)", who,
          step, gt_trainer_error (sink->trainer.gt)));
  g_free (who);
}

/* ---- the rank split ---- */

gboolean
gst_cuda_train_sink_check_rank_split (
    GstCudaTrainSink *sink, const GstTrainDatasetInfo *info)
{
  if (sink->dist.comm == NULL || info->num_shards == 0)
    return TRUE;
  if (info->num_shards == (guint)sink->dist.world_size
      && info->shard_index == (guint)sink->dist.rank)
    return TRUE;
  GST_ELEMENT_ERROR (sink, STREAM, FAILED,
      ("The source reads shard %u of %u, but this sink is rank %d of a job "
       "of %d: each rank must read its own shard of the data.",
          info->shard_index, info->num_shards, sink->dist.rank,
          sink->dist.world_size),
      ("leave datasetsrc's rank and num-ranks unset in a data-parallel "
       "job: it then reads the shard of its rank"));
  return FALSE;
}

/* ---- the error watchdog ---- */

void
gst_cuda_train_sink_watchdog_allow (GstCudaTrainSink *sink)
{
  g_mutex_lock (&sink->dist.watchdog_lock);
  sink->dist.watchdog_cancel = FALSE;
  g_mutex_unlock (&sink->dist.watchdog_lock);
}

/* The watchdog thread: ends the job unless the sink stops before the
 * deadline. @comm stays valid until gst_cuda_train_sink_watchdog_disarm()
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

  g_mutex_lock (&sink->dist.watchdog_lock);
  while (!sink->dist.watchdog_cancel
      && g_cond_wait_until (
          &sink->dist.watchdog_cond, &sink->dist.watchdog_lock, deadline))
    ;
  fire = !sink->dist.watchdog_cancel;
  g_mutex_unlock (&sink->dist.watchdog_lock);
  if (fire) {
    gchar *message = g_strdup_printf (
        "the pipeline was not stopped within error-timeout=%u s of the "
        "sink's error (an application that missed it): ending the job, so "
        "that the other ranks do not wait for ever",
        timeout);

    gt_comm_abort (sink->dist.comm, 1, message);
    g_free (message);
  }
  return NULL;
}

/* In a data-parallel job, an error of this sink starts the watchdog
 * (error-timeout): a rank whose application never stops the pipeline
 * would otherwise keep every peer waiting in its next collective, or in
 * MPI_Finalize, for ever. */
void
gst_cuda_train_sink_watchdog_arm (GstCudaTrainSink *sink)
{
  g_mutex_lock (&sink->dist.watchdog_lock);
  if (sink->dist.comm != NULL && sink->dist.watchdog == NULL
      && !sink->dist.watchdog_cancel && sink->settings.error_timeout > 0) {
    GST_INFO_OBJECT (sink,
        "error: the job ends in %u s unless the pipeline stops (error-timeout)",
        sink->settings.error_timeout);
    sink->dist.watchdog =
        g_thread_new ("train-watchdog", gst_cuda_train_sink_watchdog, sink);
  }
  g_mutex_unlock (&sink->dist.watchdog_lock);
}

void
gst_cuda_train_sink_watchdog_disarm (GstCudaTrainSink *sink)
{
  GThread *watchdog;

  g_mutex_lock (&sink->dist.watchdog_lock);
  sink->dist.watchdog_cancel = TRUE;
  watchdog = sink->dist.watchdog;
  sink->dist.watchdog = NULL;
  g_cond_signal (&sink->dist.watchdog_cond);
  g_mutex_unlock (&sink->dist.watchdog_lock);
  if (watchdog != NULL)
    g_thread_join (watchdog);
}
