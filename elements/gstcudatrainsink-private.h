/* gstcudatrainsink-private.h: the state of cudatrainsink, shared by the
 * element (gstcudatrainsink.c, the GStreamer side: properties, caps,
 * events, one step per batch, max-steps and EOS, messages) and its trainer
 * (gstcudatrainsink-trainer.c: the trainer created, resumed, checkpointed
 * and snapshotted). */
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
  GtEvalTotals eval;
  /* the step in flight and its batch, mapped until the step ends */
  GstTrainMappedBatch pending;
  gint64 pending_start;
};

/* ---- gstcudatrainsink-trainer.c ---- */

/* Creates the trainer at the first batch, when caps and dataset facts are
 * known, and loads resume-from; FALSE with an error posted. */
gboolean gst_cuda_train_sink_setup (GstCudaTrainSink *sink);
/* Writes a checkpoint to checkpoint-location, when training and set;
 * FALSE with an error posted. */
gboolean gst_cuda_train_sink_save (GstCudaTrainSink *sink);
/* Writes the snapshots that the fresh images so far make due; FALSE with
 * an error posted. */
gboolean gst_cuda_train_sink_snapshot (GstCudaTrainSink *sink);
/* Samples in an epoch, as the source announced them; 0 when unknown. */
guint64 gst_cuda_train_sink_epoch_samples (GstCudaTrainSink *sink);

/* ---- gstcudatrainsink.c ---- */

/* Appends @s to metrics-location, when set, as a JSON line. */
void gst_cuda_train_sink_write_json (
    GstCudaTrainSink *sink, const GstStructure *s);

G_END_DECLS

#endif /* __GST_CUDA_TRAIN_SINK_PRIVATE_H__ */
