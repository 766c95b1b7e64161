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

static gboolean
gst_train_copy_untagged_meta (GstBuffer *input, GstMeta **meta, gpointer data)
{
  GstBuffer *output = data;
  const GstMetaInfo *info = (*meta)->info;
  const gchar *const *tags = gst_meta_api_type_get_tags (info->api);
  GstMetaTransformCopy copy = { FALSE, 0, -1 };

  if ((tags == NULL || tags[0] == NULL) && info->transform_func != NULL)
    info->transform_func (
        output, *meta, input, _gst_meta_transform_copy, &copy);
  return TRUE;
}

void
gst_train_copy_untagged_metas (GstBuffer *input, GstBuffer *output)
{
  gst_buffer_foreach_meta (input, gst_train_copy_untagged_meta, output);
}
