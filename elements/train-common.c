/* train-common.c: the types declared in train-common.h. */
#include "train-common.h"

GType
gst_train_on_error_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_TRAIN_ON_ERROR_SKIP, "Post a warning, count the sample and drop it",
        "skip" },
    { GST_TRAIN_ON_ERROR_FAIL, "Post an error and stop the pipeline", "fail" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstTrainOnError", values);
    g_once_init_leave (&type, t);
  }
  return type;
}
