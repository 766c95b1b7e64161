/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstcudatrainsink-enums.h: the enum property types of cudatrainsink, from
 * which glib-mkenums generates their GTypes (gstcudatrainsink-enumtypes.c
 * and .h, from the templates beside this file). Each value's nick is what
 * launch lines say (model=resnet20): its name with the enum's prefix
 * dropped, lower case. Each value's description, the GEnumValue name that
 * gst-inspect-1.0 shows, is the macro VALUE_DESCRIPTION below its enum.
 *
 * Model, precision, schedule and comm backend are the trainer's own enums
 * (trainer.h), value for value, so that a property's value is the
 * trainer's; they are declared here again because their registered names
 * (GstTrainModel), nicks and descriptions are the sink's, and the order in
 * which gst-inspect-1.0 lists them too. Device, mode and distributed are
 * the sink's alone. */
#ifndef __GST_CUDA_TRAIN_SINK_ENUMS_H__
#define __GST_CUDA_TRAIN_SINK_ENUMS_H__

#include "trainer.h"

#include <glib.h>

G_BEGIN_DECLS

/* The network to train: GtModel. */
typedef enum
{
  GST_TRAIN_MODEL_RESNET18 = GT_MODEL_RESNET18,
  GST_TRAIN_MODEL_RESNET34 = GT_MODEL_RESNET34,
  GST_TRAIN_MODEL_RESNET50 = GT_MODEL_RESNET50,
  GST_TRAIN_MODEL_RESNET101 = GT_MODEL_RESNET101,
  GST_TRAIN_MODEL_RESNET20 = GT_MODEL_RESNET20,
  GST_TRAIN_MODEL_RESNET32 = GT_MODEL_RESNET32,
} GstTrainModel;

#define GST_TRAIN_MODEL_RESNET18_DESCRIPTION "ResNet-18 (torchvision)"
#define GST_TRAIN_MODEL_RESNET34_DESCRIPTION "ResNet-34 (torchvision)"
#define GST_TRAIN_MODEL_RESNET50_DESCRIPTION                                   \
  "ResNet-50 v1.5 (torchvision), for ImageNet-sized images on a GPU"
#define GST_TRAIN_MODEL_RESNET101_DESCRIPTION "ResNet-101 v1.5 (torchvision)"
#define GST_TRAIN_MODEL_RESNET20_DESCRIPTION                                   \
  "ResNet-20, CIFAR layout, for small images"
#define GST_TRAIN_MODEL_RESNET32_DESCRIPTION                                   \
  "ResNet-32, CIFAR layout, for small images"

/* Where the training steps run. */
typedef enum
{
  GST_TRAIN_DEVICE_AUTO,
  GST_TRAIN_DEVICE_CUDA,
  GST_TRAIN_DEVICE_CPU,
} GstTrainDevice;

#define GST_TRAIN_DEVICE_AUTO_DESCRIPTION                                      \
  "CUDA when a GPU is usable, else the CPU (a warning where the NVIDIA "       \
  "driver is, else an info message)"
#define GST_TRAIN_DEVICE_CUDA_DESCRIPTION "CUDA: an error when no GPU is usable"
#define GST_TRAIN_DEVICE_CPU_DESCRIPTION "The fp32 CPU reference backend"

/* Arithmetic of the activations on the GPU: GtPrecision. */
typedef enum
{
  GST_TRAIN_PRECISION_BF16 = GT_PRECISION_BF16,
  GST_TRAIN_PRECISION_FP16 = GT_PRECISION_FP16,
  GST_TRAIN_PRECISION_FP32 = GT_PRECISION_FP32,
} GstTrainPrecision;

#define GST_TRAIN_PRECISION_BF16_DESCRIPTION                                   \
  "bfloat16 activations, fp32 master weights"
#define GST_TRAIN_PRECISION_FP16_DESCRIPTION                                   \
  "float16 activations: not supported yet (the CUDA backend refuses it; "      \
  "use bf16)"
#define GST_TRAIN_PRECISION_FP32_DESCRIPTION "float32 throughout"

/* How the learning rate falls after the warmup: GtLrSchedule. */
typedef enum
{
  GST_TRAIN_LR_SCHEDULE_COSINE = GT_LR_COSINE,
  GST_TRAIN_LR_SCHEDULE_STEP = GT_LR_STEP,
  GST_TRAIN_LR_SCHEDULE_POLY = GT_LR_POLY,
  GST_TRAIN_LR_SCHEDULE_CONSTANT = GT_LR_CONSTANT,
} GstTrainLrSchedule;

#define GST_TRAIN_LR_SCHEDULE_COSINE_DESCRIPTION "Cosine to 0 at total-steps"
#define GST_TRAIN_LR_SCHEDULE_STEP_DESCRIPTION                                 \
  "Times 0.1 at 30%, 60%, 90% of the steps after warmup"
#define GST_TRAIN_LR_SCHEDULE_POLY_DESCRIPTION                                 \
  "(1 - progress)^2 to 0 at total-steps"
#define GST_TRAIN_LR_SCHEDULE_CONSTANT_DESCRIPTION "Constant after the warmup"

/* What the sink does with each batch. */
typedef enum
{
  GST_TRAIN_MODE_TRAIN,
  GST_TRAIN_MODE_EVAL,
} GstTrainMode;

#define GST_TRAIN_MODE_TRAIN_DESCRIPTION "One training step per batch"
#define GST_TRAIN_MODE_EVAL_DESCRIPTION                                        \
  "Forward only; loss, top-1 and top-5 in an eval-result message at EOS"

/* Whether the sink joins a data-parallel job. */
typedef enum
{
  GST_TRAIN_DISTRIBUTED_AUTO,
  GST_TRAIN_DISTRIBUTED_OFF,
  GST_TRAIN_DISTRIBUTED_MPI,
} GstTrainDistributed;

#define GST_TRAIN_DISTRIBUTED_AUTO_DESCRIPTION                                 \
  "Join a data-parallel job when the launcher's environment (mpirun, "         \
  "srun) says there is more than one rank"
#define GST_TRAIN_DISTRIBUTED_OFF_DESCRIPTION "Train in this process alone"
#define GST_TRAIN_DISTRIBUTED_MPI_DESCRIPTION                                  \
  "Always join an MPI job, even of one rank"

/* What averages the gradients of a data-parallel job: GtCommBackend. */
typedef enum
{
  GST_TRAIN_COMM_BACKEND_AUTO = GT_COMM_AUTO,
  GST_TRAIN_COMM_BACKEND_NCCL = GT_COMM_NCCL,
  GST_TRAIN_COMM_BACKEND_MPI = GT_COMM_MPI,
} GstTrainCommBackend;

#define GST_TRAIN_COMM_BACKEND_AUTO_DESCRIPTION                                \
  "NCCL on the GPU, MPI on the CPU"
#define GST_TRAIN_COMM_BACKEND_NCCL_DESCRIPTION "NCCL (GPU only)"
#define GST_TRAIN_COMM_BACKEND_MPI_DESCRIPTION                                 \
  "MPI (on the GPU, through host memory)"

G_END_DECLS

#endif /* __GST_CUDA_TRAIN_SINK_ENUMS_H__ */
