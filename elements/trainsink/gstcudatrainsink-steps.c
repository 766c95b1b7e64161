/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstcudatrainsink-steps.c: the run of cudatrainsink, from its first batch
 * to its end, in one function: gst_cuda_train_sink_advance. The element
 * (gstcudatrainsink.c) hands it what arrives: a batch, EOS, a flush, or
 * the sink stopping. It makes the trainer at the first batch
 * (gstcudatrainsink-trainer.c), begins a step on each batch, which runs
 * while upstream prepares the next one, finishes the step in flight
 * (statistics, checkpoints, snapshots), and decides where the run ends:
 * max-steps, the "stop" action signal, a peer that left the data-parallel
 * job (gstcudatrainsink-dist.c), EOS, or the pipeline stopping without
 * EOS. The helpers above it each do one part and call nothing back.
 *
 * Its state is the sink's @run (gstcudatrainsink-private.h), which only
 * this file writes. */
#include "gstcudatrainsink-private.h"
#include "gsttrainhostallocator.h"

#include <string.h>

#define GST_CAT_DEFAULT gst_cuda_train_sink_debug

void
gst_cuda_train_sink_steps_reset (GstCudaTrainSink *sink)
{
  sink->run.failed = sink->run.ended = FALSE;
  sink->run.reached_max = FALSE;
  train_stats_init (&sink->run.stats, g_get_monotonic_time ());
  memset (&sink->run.eval, 0, sizeof (sink->run.eval));
  gst_cuda_train_sink_trainer_reset (sink);
  gst_cuda_train_sink_dist_reset_stats (sink);
}

void
gst_cuda_train_sink_fail_run (GstCudaTrainSink *sink)
{
  sink->run.failed = TRUE;
}

/* ---- batches ---- */

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

/* ---- the parts of a run ---- */

/* Posts the error of the trainer's last failure. */
static GstFlowReturn
gst_cuda_train_sink_trainer_failed (GstCudaTrainSink *sink)
{
  sink->run.failed = TRUE;
  GST_ELEMENT_ERROR (sink, STREAM, FAILED,
      ("%s.", gt_trainer_error (sink->trainer.gt)), (NULL));
  return GST_FLOW_ERROR;
}

/* Abandons the step in flight, unread, and lets go of its batch. */
static void
gst_cuda_train_sink_drop_pending (GstCudaTrainSink *sink)
{
  if (sink->run.pending.buffer && sink->trainer.gt)
    gt_trainer_step_end (sink->trainer.gt, NULL);
  gst_train_mapped_batch_unmap (&sink->run.pending);
}

/* Writes a checkpoint (gst_cuda_train_sink_save); one that fails is an
 * error posted, after which the last checkpoint stays. */
static gboolean
gst_cuda_train_sink_checkpoint (GstCudaTrainSink *sink)
{
  if (gst_cuda_train_sink_save (sink))
    return TRUE;
  sink->run.failed = TRUE;
  return FALSE;
}

/* Posts the train-stats of the interval that ends now, from the counts of
 * every rank as the caller just gathered them, and starts the next
 * interval, of those counts and of this rank's. */
static void
gst_cuda_train_sink_end_interval (GstCudaTrainSink *sink)
{
  gint64 now = g_get_monotonic_time ();
  TrainStatsReport r;

  gst_cuda_train_sink_take_report (sink, now, &r);
  train_stats_begin_interval (&sink->run.stats, now);
  gst_cuda_train_sink_post_stats (sink, &r);
}

/* Ends the step in flight, when there is one: its statistics, checkpoint
 * and snapshots. The statistics of every rank are gathered (a collective)
 * at the steps that need them, which every rank reaches together: none
 * after a step that stopped. */
static GstFlowReturn
gst_cuda_train_sink_finish_step (GstCudaTrainSink *sink)
{
  const GstCudaTrainSinkSettings *s = &sink->settings;
  GtStepResult result;
  TrainStepStats step;
  GstMemory *images;
  gint status, fresh, samples = sink->run.pending.batch.num_samples;
  gboolean stats_due, checkpoint_due;

  if (sink->run.pending.buffer == NULL)
    return GST_FLOW_OK;
  status = gt_trainer_step_end (sink->trainer.gt, &result);
  fresh = gst_train_buffer_count_fresh (sink->run.pending.buffer);
  if (fresh < 0)
    fresh = samples; /* no metadata: nothing says it repeats */
  images = gst_buffer_peek_memory (sink->run.pending.buffer, 0);
  step.in_sink_memory = gst_train_host_memory_is_ours (images);
  step.pinned = gst_train_host_memory_is_pinned (images);
  gst_train_mapped_batch_unmap (&sink->run.pending);
  if (status == GT_ERROR_STOPPED) {
    gst_cuda_train_sink_dist_peer_left (sink);
    return GST_FLOW_OK;
  }
  if (status == GT_ERROR_NONFINITE) {
    sink->run.failed = TRUE;
    GST_ELEMENT_ERROR (sink, STREAM, FAILED,
        ("Training diverged: %s.", gt_trainer_error (sink->trainer.gt)),
        ("the last checkpoint written (step %" G_GUINT64_FORMAT
         ") is kept; lower lr or check the data",
            sink->trainer.last_saved_step));
    return GST_FLOW_ERROR;
  }
  if (status != GT_OK)
    return gst_cuda_train_sink_trainer_failed (sink);

  step.images = samples;
  step.fresh = fresh;
  step.loss = result.loss;
  step.lr = result.lr;
  step.correct_top1 = (guint)MAX (0, result.correct_top1);
  step.correct_top5 = (guint)MAX (0, result.correct_top5);
  step.scored = (guint64)MAX (0, result.global_samples);
  step.seconds = (g_get_monotonic_time () - sink->run.pending_start) / 1e6;
  step.busy = result.busy_seconds;
  step.comm = result.comm_seconds;
  GST_LOG_OBJECT (sink,
      "step %" G_GINT64_FORMAT " done: loss %g, %d images (%d fresh)",
      result.step, result.loss, samples, fresh);
  train_stats_add_step (&sink->run.stats, &step);
  /* at the multiples of stats-interval, as checkpoint-interval: a run
   * resumed at step 109 reports at 125, 150, ... (its first interval is
   * shorter) */
  stats_due =
      s->stats_interval && (guint64)result.step % s->stats_interval == 0;
  checkpoint_due = s->checkpoint_interval
      && (guint64)result.step % s->checkpoint_interval == 0;
  /* snapshots follow the fresh images of every rank: a gather each step */
  if ((stats_due || checkpoint_due || s->snapshot_interval)
      && !gst_cuda_train_sink_gather_stats (sink))
    return GST_FLOW_ERROR;
  if (stats_due)
    gst_cuda_train_sink_end_interval (sink);
  if (checkpoint_due && !gst_cuda_train_sink_checkpoint (sink))
    return GST_FLOW_ERROR;
  if (!gst_cuda_train_sink_snapshot (sink))
    return GST_FLOW_ERROR;
  return GST_FLOW_OK;
}

/* The run reached EOS alone (no data-parallel job, not stopped) without
 * a step, or in eval mode without a batch: nothing was trained, which is
 * an error, so that neither gst-train nor gst-launch-1.0 ends as if a run
 * had been done; no checkpoint is written. The error says why, as far as
 * the sink can tell: the batches it skipped after a resume, a resume that
 * left the source nothing, an epoch smaller than one batch. (A first batch
 * too small to train on is an error of its own, at setup: a run that made
 * its trainer trains its first batch, unless it skips it.) */
static GstFlowReturn
gst_cuda_train_sink_nothing_trained (GstCudaTrainSink *sink)
{
  gboolean eval = sink->settings.mode == GST_TRAIN_MODE_EVAL;
  guint64 epoch = gst_cuda_train_sink_epoch_samples (sink);
  GString *text = g_string_new (NULL);

  if (sink->trainer.gt == NULL)
    g_string_append (
        text, "End of stream before the first batch: nothing was ");
  else
    g_string_append (
        text, "End of stream before a training step: nothing was ");
  g_string_append (text, eval ? "evaluated" : "trained");
  if (!eval && sink->settings.checkpoint_location != NULL)
    g_string_append (text, ", and no checkpoint was written");
  g_string_append_c (text, '.');
  if (sink->trainer.batches_skipped)
    g_string_append_printf (text,
        " The %" G_GUINT64_FORMAT " batch(es) that arrived were skipped as "
        "trained on before the resume (no source asked where to start): "
        "raise the source's num-epochs to train on.",
        sink->trainer.batches_skipped);
  if (sink->trainer.gt == NULL
      && g_atomic_int_get (&sink->trainer.upstream_resumes))
    g_string_append_printf (text,
        " The source resumed after the %" G_GUINT64_FORMAT " samples that "
        "resume-from's checkpoint trained on, and what was left of its "
        "epochs made no batch: raise its num-epochs to train on.",
        sink->trainer.resume_samples);
  else if (sink->trainer.gt == NULL && epoch && sink->batch_size
      && epoch < (guint64)sink->batch_size)
    g_string_append_printf (text,
        " The source's epoch holds %" G_GUINT64_FORMAT " images, fewer than "
        "one batch of %d, and batcher drops a last partial batch unless "
        "drop-remainder=false: set that, or batch-size=%" G_GUINT64_FORMAT
        " or less.",
        epoch, sink->batch_size, epoch);
  else if (sink->trainer.gt == NULL)
    g_string_append (text,
        " No batch arrived: the source sent no sample (num-epochs=0, every "
        "sample skipped, or an error upstream), or fewer than one batch.");
  sink->run.failed = TRUE;
  GST_ELEMENT_ERROR (sink, STREAM, FAILED, ("%s", text->str), (NULL));
  g_string_free (text, TRUE);
  return GST_FLOW_ERROR;
}

/* Ends the run when it ends here: once the global step reaches max-steps
 * or stop is requested (the step in flight, when it is the last one
 * allowed, ends at once so that EOS goes out now), or at EOS (@eos), the
 * last statistics and the final checkpoint are written. At max-steps and
 * at stop the sink also posts EOS and returns GST_FLOW_EOS from then on:
 * EOS returned upstream stops the sources, but the EOS event they then
 * send need not come back (a queue drops events once it got EOS from
 * downstream), so the sink, where the stream ends, says so itself. With
 * mode=eval it posts the eval-result at EOS, and at stop that and EOS.
 * GST_FLOW_OK when the run goes on (or, at EOS, when the event goes on
 * downstream). */
static GstFlowReturn
gst_cuda_train_sink_end_if_due (GstCudaTrainSink *sink, gboolean eos)
{
  guint64 max_steps = sink->settings.max_steps, step;
  gboolean at_max, saved = TRUE, stop;
  GstFlowReturn ret;

  stop = g_atomic_int_get (&sink->stop_requested) != 0;
  if (sink->settings.mode == GST_TRAIN_MODE_EVAL) {
    /* an evaluation ends with its result, at EOS or cut short by stop; in
     * a data-parallel job that of every rank */
    if ((eos || stop) && !gst_cuda_train_sink_leave_job (sink, &sink->run.eval))
      return GST_FLOW_ERROR;
    if (eos || stop)
      gst_cuda_train_sink_post_eval_result (sink, &sink->run.eval);
    if (!stop)
      return GST_FLOW_OK;
    sink->run.reached_max = TRUE;
    gst_element_post_message (
        GST_ELEMENT_CAST (sink), gst_message_new_eos (GST_OBJECT_CAST (sink)));
    return GST_FLOW_EOS;
  }
  step = (guint64)gt_trainer_global_step (sink->trainer.gt);
  if (sink->run.pending.buffer
      && (eos || stop || (max_steps && step + 1 >= max_steps))) {
    ret = gst_cuda_train_sink_finish_step (sink);
    if (ret != GST_FLOW_OK)
      return ret;
    step = (guint64)gt_trainer_global_step (sink->trainer.gt);
  }
  /* the "stop" signal, and a peer that left the job, end the run as
   * max-steps does */
  at_max = stop || sink->dist.peer_left || (max_steps && step >= max_steps);
  if (!at_max && !eos)
    return GST_FLOW_OK;
  if (!at_max)
    GST_INFO_OBJECT (sink, "end of stream at step %" G_GUINT64_FORMAT, step);
  /* alone, a run that ends with its data before a step trained nothing */
  if (!at_max && sink->dist.comm == NULL && sink->run.stats.images == 0)
    return gst_cuda_train_sink_nothing_trained (sink);
  sink->run.ended = TRUE;
  if (at_max) {
    GST_INFO_OBJECT (sink, "%s at step %" G_GUINT64_FORMAT,
        stop                       ? "stopped"
            : sink->dist.peer_left ? "a peer left"
                                   : "reached max-steps",
        step);
    sink->run.reached_max = TRUE;
  }
  /* data-parallel: peers still training stop at this step; then the last
   * gather */
  if (!gst_cuda_train_sink_leave_job (sink, NULL))
    return GST_FLOW_ERROR;
  if (sink->dist.global.steps)
    gst_cuda_train_sink_end_interval (sink);
  /* a run stopped (or ended by a peer) before its first step leaves a
   * checkpoint all the same, of the untrained model */
  if (step != sink->trainer.last_saved_step || step == 0)
    saved = gst_cuda_train_sink_checkpoint (sink);
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

/* The pipeline left PAUSED for READY in the middle of training, with no
 * EOS (gst-launch-1.0 without -e, Ctrl-C): the streaming thread has
 * stopped, the step in flight, its batch still mapped, can be finished
 * here, and the steps not yet checkpointed are written. */
static void
gst_cuda_train_sink_save_on_halt (GstCudaTrainSink *sink)
{
  const gchar *path = sink->settings.checkpoint_location;
  guint64 step;

  if (path == NULL || sink->trainer.gt == NULL
      || sink->settings.mode != GST_TRAIN_MODE_TRAIN || sink->run.failed
      || sink->run.ended)
    return;
  GST_DEBUG_OBJECT (sink, "stopped in the middle of the run: finishing it");
  if (gst_cuda_train_sink_finish_step (sink) != GST_FLOW_OK)
    return; /* the error is posted */
  /* data-parallel: the peers stop at this step too; the counts of every
   * rank go into rank 0's checkpoint */
  if (!gst_cuda_train_sink_leave_job (sink, NULL))
    return;
  step = (guint64)gt_trainer_global_step (sink->trainer.gt);
  if (step == sink->trainer.last_saved_step || sink->dist.rank != 0)
    return;
  GST_WARNING_OBJECT (sink,
      "stopped without EOS at step %" G_GUINT64_FORMAT ": writing %s", step,
      path);
  if (gst_cuda_train_sink_checkpoint (sink))
    GST_ELEMENT_WARNING (sink, RESOURCE, WRITE,
        ("Stopped without end-of-stream at step %" G_GUINT64_FORMAT
         ": checkpoint written to %s (use gst-launch-1.0 -e to stop at a "
         "step boundary).",
            step, path),
        (NULL));
}

/* The first batch: the trainer is made (in a data-parallel job, once every
 * rank agreed to start), and the first interval begins once it is ready:
 * the agreement may have waited for a rank that started late, which is
 * neither this rank's step nor its data wait. */
static GstFlowReturn
gst_cuda_train_sink_start_run (GstCudaTrainSink *sink)
{
  switch (gst_cuda_train_sink_setup (sink)) {
    case GST_TRAIN_SETUP_OK:
      break;
    case GST_TRAIN_SETUP_FAILED:
      sink->run.failed = TRUE;
      return GST_FLOW_ERROR;
    case GST_TRAIN_SETUP_NO_JOB:
      /* another rank cannot train: this one ends as at max-steps */
      GST_INFO_OBJECT (sink, "another rank cannot train: ending untrained");
      sink->run.reached_max = sink->run.ended = TRUE;
      gst_element_post_message (GST_ELEMENT_CAST (sink),
          gst_message_new_eos (GST_OBJECT_CAST (sink)));
      return GST_FLOW_EOS;
  }
  /* the epoch counts on from the checkpoint's fresh images */
  sink->run.stats.fresh_before = sink->trainer.fresh_before;
  gst_cuda_train_sink_report_run_begins (sink);
  train_stats_begin_interval (&sink->run.stats, g_get_monotonic_time ());
  return GST_FLOW_OK;
}

/* ---- the run ---- */

GstFlowReturn
gst_cuda_train_sink_advance (
    GstCudaTrainSink *sink, GstTrainInput input, GstBuffer *buffer)
{
  gint64 arrival = g_get_monotonic_time ();
  GstTrainMappedBatch batch;
  gboolean began = FALSE;
  GstFlowReturn ret;
  gint status;

  switch (input) {
    case GST_TRAIN_INPUT_FLUSH:
      /* a flushing seek restarts the stream: drop the step in flight, and
       * let max-steps be checked anew */
      GST_DEBUG_OBJECT (sink, "flushed: %s",
          sink->run.pending.buffer ? "the step in flight is dropped"
                                   : "no step in flight");
      gst_cuda_train_sink_drop_pending (sink);
      sink->run.reached_max = sink->run.ended = FALSE;
      return GST_FLOW_OK;
    case GST_TRAIN_INPUT_HALT:
      /* the step in flight is finished and checkpointed, or abandoned */
      gst_cuda_train_sink_save_on_halt (sink);
      gst_cuda_train_sink_drop_pending (sink);
      return GST_FLOW_OK;
    case GST_TRAIN_INPUT_EOS:
      /* data-parallel: no batch at all; peers waiting to start stop too */
      if (sink->trainer.gt == NULL && sink->dist.comm != NULL
          && !sink->dist.agreed)
        gst_cuda_train_sink_dist_agree (sink,
            sink->run.failed ? GST_TRAIN_RANK_FAILED : GST_TRAIN_RANK_NO_DATA,
            NULL, NULL, NULL);
      break;
    case GST_TRAIN_INPUT_BATCH:
      /* an error posted at an event (a shard that is not this rank's) */
      if (sink->run.failed) {
        GST_DEBUG_OBJECT (sink, "refused a batch: an error was posted");
        return GST_FLOW_ERROR;
      }
      if (sink->trainer.gt == NULL && !sink->run.reached_max) {
        ret = gst_cuda_train_sink_start_run (sink);
        if (ret != GST_FLOW_OK)
          return ret;
        /* the first step is timed from when the trainer is ready */
        arrival = sink->run.stats.interval_start;
      }
      break;
  }

  if (sink->run.reached_max) {
    GST_DEBUG_OBJECT (sink, "%s after the end of the run",
        input == GST_TRAIN_INPUT_EOS ? "EOS" : "refused a batch");
    return GST_FLOW_EOS;
  }
  /* after an error the last checkpoint stays as it is, whatever comes
   * next (a source sends EOS after its error) */
  if (sink->run.failed) {
    GST_DEBUG_OBJECT (sink, "%s after an error",
        input == GST_TRAIN_INPUT_EOS ? "EOS" : "refused a batch");
    return GST_FLOW_ERROR;
  }
  /* alone, EOS before a batch (and before a stop) trains nothing; in a
   * job the ranks agreed on that above */
  if (sink->trainer.gt == NULL && input == GST_TRAIN_INPUT_EOS
      && sink->dist.comm == NULL && !g_atomic_int_get (&sink->stop_requested))
    return gst_cuda_train_sink_nothing_trained (sink);
  if (sink->trainer.gt == NULL)
    return GST_FLOW_OK;
  /* the run ends at EOS, or before this batch: stopped, past max-steps, or
   * resumed from a checkpoint at or past it */
  ret = gst_cuda_train_sink_end_if_due (sink, input == GST_TRAIN_INPUT_EOS);
  if (input == GST_TRAIN_INPUT_EOS || ret != GST_FLOW_OK)
    return ret;

  /* the batch */
  if (gst_cuda_train_sink_skip_batch (sink))
    return GST_FLOW_OK;
  if (!gst_cuda_train_sink_map_batch (sink, buffer, &batch))
    return GST_FLOW_ERROR;
  if (sink->settings.mode == GST_TRAIN_MODE_EVAL) {
    GST_LOG_OBJECT (sink, "evaluating %d images", batch.batch.num_samples);
    ret = gt_trainer_eval (sink->trainer.gt, &batch.batch, &sink->run.eval)
            == GT_OK
        ? GST_FLOW_OK
        : gst_cuda_train_sink_trainer_failed (sink);
  } else if (batch.batch.num_samples < sink->trainer.min_train_batch) {
    /* a last, partial batch too small for batch-norm in training (one
     * value per channel) is dropped, as DataLoader(drop_last=True) would */
    GST_ELEMENT_WARNING (sink, STREAM, FAILED,
        ("Dropped a batch of %d images: batch-norm needs at least %d to "
         "train at this image size.",
            batch.batch.num_samples, sink->trainer.min_train_batch),
        (NULL));
  } else {
    /* the step in flight ends, and one begins on this batch; it runs while
     * upstream prepares the next one */
    train_stats_add_wait (&sink->run.stats, arrival);
    ret = gst_cuda_train_sink_finish_step (sink);
    if (ret == GST_FLOW_OK && !sink->dist.peer_left) {
      status = gt_trainer_step_begin (sink->trainer.gt, &batch.batch);
      if (status == GT_ERROR_STOPPED)
        gst_cuda_train_sink_dist_peer_left (sink);
      else if (status != GT_OK)
        ret = gst_cuda_train_sink_trainer_failed (sink);
      else
        began = TRUE;
    }
    if (began) {
      GST_LOG_OBJECT (sink, "step %" G_GINT64_FORMAT " begun on %d images",
          gt_trainer_global_step (sink->trainer.gt) + 1,
          batch.batch.num_samples);
      sink->run.pending = batch;
      memset (&batch, 0, sizeof (batch));
      sink->run.pending_start = arrival;
    }
    /* the run ends with a peer that left, or with this step when it is the
     * last one allowed or stop is requested */
    if (ret == GST_FLOW_OK)
      ret = gst_cuda_train_sink_end_if_due (sink, FALSE);
    if (began)
      train_stats_batch_done (&sink->run.stats, g_get_monotonic_time ());
  }
  /* nothing left to unmap when the batch became the step in flight */
  gst_train_mapped_batch_unmap (&batch);
  if (ret == GST_FLOW_ERROR)
    sink->run.failed = TRUE;
  return ret;
}
