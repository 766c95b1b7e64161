/* gstcudatrainsink-enums.c: the GTypes declared in
 * gstcudatrainsink-enums.h. The nicks are what launch lines say
 * (model=resnet20); the names are the descriptions gst-inspect-1.0 shows. */
#include "gstcudatrainsink-enums.h"
#include "trainer.h"

/* Registers @values as the enum type @name on the first call, thread-safe;
 * returns it. */
static GType
gst_train_enum_type (GType *type, const gchar *name, const GEnumValue *values)
{
  if (g_once_init_enter (type)) {
    GType registered = g_enum_register_static (name, values);

    g_once_init_leave (type, registered);
  }
  return *type;
}

GType
gst_train_model_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GT_MODEL_RESNET18, "ResNet-18 (torchvision)", "resnet18" },
    { GT_MODEL_RESNET34, "ResNet-34 (torchvision)", "resnet34" },
    { GT_MODEL_RESNET50, "ResNet-50 v1.5 (torchvision)", "resnet50" },
    { GT_MODEL_RESNET101, "ResNet-101 v1.5 (torchvision)", "resnet101" },
    { GT_MODEL_RESNET20, "ResNet-20, CIFAR layout, for small images",
        "resnet20" },
    { GT_MODEL_RESNET32, "ResNet-32, CIFAR layout, for small images",
        "resnet32" },
    { 0, NULL, NULL },
  };

  return gst_train_enum_type (&type, "GstTrainModel", values);
}

GType
gst_train_device_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_TRAIN_DEVICE_AUTO,
        "CUDA when a GPU is usable, else the CPU (a warning where the NVIDIA "
        "driver is, else an info message)",
        "auto" },
    { GST_TRAIN_DEVICE_CUDA, "CUDA: an error when no GPU is usable", "cuda" },
    { GST_TRAIN_DEVICE_CPU, "The fp32 CPU reference backend", "cpu" },
    { 0, NULL, NULL },
  };

  return gst_train_enum_type (&type, "GstTrainDevice", values);
}

GType
gst_train_precision_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GT_PRECISION_BF16, "bfloat16 activations, fp32 master weights", "bf16" },
    { GT_PRECISION_FP16, "float16 activations with dynamic loss scaling",
        "fp16" },
    { GT_PRECISION_FP32, "float32 throughout", "fp32" },
    { 0, NULL, NULL },
  };

  return gst_train_enum_type (&type, "GstTrainPrecision", values);
}

GType
gst_train_lr_schedule_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GT_LR_COSINE, "Cosine to 0 at total-steps", "cosine" },
    { GT_LR_STEP, "Times 0.1 at 30%, 60%, 90% of the steps after warmup",
        "step" },
    { GT_LR_POLY, "(1 - progress)^2 to 0 at total-steps", "poly" },
    { GT_LR_CONSTANT, "Constant after the warmup", "constant" },
    { 0, NULL, NULL },
  };

  return gst_train_enum_type (&type, "GstTrainLrSchedule", values);
}

GType
gst_train_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_TRAIN_MODE_TRAIN, "One training step per batch", "train" },
    { GST_TRAIN_MODE_EVAL,
        "Forward only; loss, top-1 and top-5 in an eval-result message at "
        "EOS",
        "eval" },
    { 0, NULL, NULL },
  };

  return gst_train_enum_type (&type, "GstTrainMode", values);
}

GType
gst_train_distributed_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_TRAIN_DISTRIBUTED_AUTO,
        "Join a data-parallel job when the launcher's environment (mpirun, "
        "srun) says there is more than one rank",
        "auto" },
    { GST_TRAIN_DISTRIBUTED_OFF, "Train in this process alone", "off" },
    { GST_TRAIN_DISTRIBUTED_MPI, "Always join an MPI job, even of one rank",
        "mpi" },
    { 0, NULL, NULL },
  };

  return gst_train_enum_type (&type, "GstTrainDistributed", values);
}

GType
gst_train_comm_backend_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GT_COMM_AUTO, "NCCL on the GPU, MPI on the CPU", "auto" },
    { GT_COMM_NCCL, "NCCL (GPU only)", "nccl" },
    { GT_COMM_MPI, "MPI (on the GPU, through host memory)", "mpi" },
    { 0, NULL, NULL },
  };

  return gst_train_enum_type (&type, "GstTrainCommBackend", values);
}
