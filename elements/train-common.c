/* train-common.c: the types declared in train-common.h. */
#include "train-common.h"
#include "train-meta.h"

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

gchar *
gst_train_describe_sample (GstBuffer *buffer)
{
  GstTrainSampleMeta *meta = gst_buffer_get_train_sample_meta (buffer);

  if (meta == NULL)
    return g_strdup_printf (
        "at offset %" G_GUINT64_FORMAT, GST_BUFFER_OFFSET (buffer));
  if (meta->location != NULL)
    return g_strdup_printf (
        "%" G_GUINT64_FORMAT " (\"%s\")", meta->index, meta->location);
  return g_strdup_printf ("%" G_GUINT64_FORMAT, meta->index);
}
