/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstcudatrainsink-settings.h: the properties of cudatrainsink: their
 * GParamSpecs (what gst-inspect-1.0 shows), the struct that keeps them, and
 * the trainer configuration they make. The element keeps one copy under its
 * object lock and gives its streaming thread another, taken at start. */
#ifndef __GST_CUDA_TRAIN_SINK_SETTINGS_H__
#define __GST_CUDA_TRAIN_SINK_SETTINGS_H__

#include "gstcudatrainsink-enums.h"
#include "trainer.h"

#include <glib-object.h>

G_BEGIN_DECLS

/* The properties, one field each. */
typedef struct
{
  GstTrainModel model;
  guint num_classes;
  GstTrainDevice device;
  gint gpu_id;
  GstTrainPrecision precision;
  gdouble lr;
  gdouble momentum;
  gdouble weight_decay;
  gboolean nesterov;
  guint64 warmup_steps;
  GstTrainLrSchedule lr_schedule;
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
  gchar *tensorboard_logdir;
  gint num_threads;
  guint64 snapshot_interval;
  gchar *snapshot_location;
  GstTrainDistributed distributed;
  GstTrainCommBackend comm_backend;
  guint bucket_size_mb;
  guint error_timeout;
  guint collective_timeout;
} GstCudaTrainSinkSettings;

/* Installs the properties on the element's @klass; returns the first
 * property id they leave free, for the element's read-only ones. */
guint gst_cuda_train_sink_install_properties (GObjectClass *klass);

/* Sets every field of @settings (zeroed memory) to its property's
 * default; after gst_cuda_train_sink_install_properties. */
void gst_cuda_train_sink_settings_init (GstCudaTrainSinkSettings *settings);

/* Property @prop_id of @settings to and from @value, as set_property and
 * get_property want them; FALSE when @prop_id is not one of the sink's. */
gboolean gst_cuda_train_sink_settings_set (
    GstCudaTrainSinkSettings *settings, guint prop_id, const GValue *value);
gboolean gst_cuda_train_sink_settings_get (
    const GstCudaTrainSinkSettings *settings, guint prop_id, GValue *value);

/* Copies @src into @dst, which owns copies of the strings. */
void gst_cuda_train_sink_settings_copy (
    GstCudaTrainSinkSettings *dst, const GstCudaTrainSinkSettings *src);
/* Frees the strings of @settings. */
void gst_cuda_train_sink_settings_clear (GstCudaTrainSinkSettings *settings);

/* "name=value ..." for every property in @settings, for the log; free it
 * with g_free(). */
gchar *gst_cuda_train_sink_settings_describe (
    const GstCudaTrainSinkSettings *settings);

/* Fills the model, optimiser, schedule, normalisation, backend and
 * communication fields of @config from @settings (the caller sets the
 * sizes, the backend, the GPU when gpu-id is -1, and the communicator);
 * FALSE when mean or std is not three numbers. */
gboolean gst_cuda_train_sink_settings_to_config (
    const GstCudaTrainSinkSettings *settings, GtTrainerConfig *config);

G_END_DECLS

#endif /* __GST_CUDA_TRAIN_SINK_SETTINGS_H__ */
