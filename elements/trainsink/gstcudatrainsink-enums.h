/* gstcudatrainsink-enums.h: the enum property types of cudatrainsink, as
 * gst-inspect-1.0 lists them. Model, precision, schedule and comm backend
 * are the trainer's own enums; device, mode and distributed are the
 * sink's. */
#ifndef __GST_CUDA_TRAIN_SINK_ENUMS_H__
#define __GST_CUDA_TRAIN_SINK_ENUMS_H__

#include <glib-object.h>

G_BEGIN_DECLS

/* Where the training steps run. */
typedef enum
{
  GST_TRAIN_DEVICE_AUTO,
  GST_TRAIN_DEVICE_CUDA,
  GST_TRAIN_DEVICE_CPU,
} GstTrainDevice;

/* What the sink does with each batch. */
typedef enum
{
  GST_TRAIN_MODE_TRAIN,
  GST_TRAIN_MODE_EVAL,
} GstTrainMode;

/* Whether the sink joins a data-parallel job. */
typedef enum
{
  GST_TRAIN_DISTRIBUTED_AUTO,
  GST_TRAIN_DISTRIBUTED_OFF,
  GST_TRAIN_DISTRIBUTED_MPI,
} GstTrainDistributed;

/* GtModel */
GType gst_train_model_get_type (void);
#define GST_TYPE_TRAIN_MODEL (gst_train_model_get_type ())
/* GstTrainDevice */
GType gst_train_device_get_type (void);
#define GST_TYPE_TRAIN_DEVICE (gst_train_device_get_type ())
/* GtPrecision */
GType gst_train_precision_get_type (void);
#define GST_TYPE_TRAIN_PRECISION (gst_train_precision_get_type ())
/* GtLrSchedule */
GType gst_train_lr_schedule_get_type (void);
#define GST_TYPE_TRAIN_LR_SCHEDULE (gst_train_lr_schedule_get_type ())
/* GstTrainMode */
GType gst_train_mode_get_type (void);
#define GST_TYPE_TRAIN_MODE (gst_train_mode_get_type ())

/* GstTrainDistributed */
GType gst_train_distributed_get_type (void);
#define GST_TYPE_TRAIN_DISTRIBUTED (gst_train_distributed_get_type ())
/* GtCommBackend */
GType gst_train_comm_backend_get_type (void);
#define GST_TYPE_TRAIN_COMM_BACKEND (gst_train_comm_backend_get_type ())

G_END_DECLS

#endif /* __GST_CUDA_TRAIN_SINK_ENUMS_H__ */
