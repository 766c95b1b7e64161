/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-common.c: the types declared in train-common.h. */
#include "train-common.h"
#include "train-meta.h"
#include "gt-launcher.h"
#include "gt-random.h"

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

void
gst_train_bad_samples_reset (GstTrainBadSamples *bad)
{
  bad->skipped = 0;
  if (bad->reported != NULL)
    g_hash_table_remove_all (bad->reported);
}

void
gst_train_bad_samples_clear (GstTrainBadSamples *bad)
{
  g_clear_pointer (&bad->reported, g_hash_table_unref);
}

/* Logs @text (@why) in @category at @level, as from the element's own
 * @file, @function and @line; formats nothing unless the level is on. */
static void
gst_train_log_bad_sample (GstDebugCategory *category, GstDebugLevel level,
    GstElement *element, const gchar *file, const gchar *function, gint line,
    const gchar *text, const gchar *why)
{
#ifndef GST_DISABLE_GST_DEBUG
  if (category != NULL && level <= gst_debug_category_get_threshold (category))
    gst_debug_log (category, level, file, function, line, G_OBJECT (element),
        "%s (%s)", text, why);
#endif
}

GstFlowReturn
gst_train_report_bad_sample_full (GstElement *element, GstTrainBadSamples *bad,
    const gchar *key, GQuark domain, gint code, const gchar *verb,
    gchar *fail_text, gchar *skip_text, GstDebugCategory *category,
    const gchar *file, const gchar *function, gint line)
{
  GstTrainOnError on_error;
  gboolean bounded;
  gint max_errors;
  guint64 skipped = 0;
  gboolean known = FALSE;
  gchar *debug;

  GST_OBJECT_LOCK (element);
  on_error = bad->on_error;
  bounded = bad->bounded;
  max_errors = bad->max_errors;
  if (on_error == GST_TRAIN_ON_ERROR_SKIP) {
    if (key != NULL && bad->reported == NULL)
      bad->reported =
          g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
    if (key != NULL)
      known = !g_hash_table_add (bad->reported, g_strdup (key));
    if (!known)
      skipped = ++bad->skipped;
  }
  GST_OBJECT_UNLOCK (element);

  if (known) {
    /* Warned about on the bus and counted when it first failed. */
    gst_train_log_bad_sample (category, GST_LEVEL_WARNING, element, file,
        function, line, skip_text, "reported and counted before");
    g_free (fail_text);
    g_free (skip_text);
    return GST_FLOW_OK;
  }

  if (on_error == GST_TRAIN_ON_ERROR_FAIL) {
    gst_train_log_bad_sample (category, GST_LEVEL_ERROR, element, file,
        function, line, fail_text, "on-error=fail");
    g_free (skip_text);
    gst_element_message_full (element, GST_MESSAGE_ERROR, domain, code,
        fail_text, g_strdup ("on-error=fail"), file, function, line);
    return GST_FLOW_ERROR;
  }
  g_free (fail_text);
  debug = bounded ? g_strdup_printf (
              "on-error=skip, %" G_GUINT64_FORMAT " skipped so far", skipped)
                  : g_strdup ("on-error=skip");
  gst_train_log_bad_sample (category, GST_LEVEL_WARNING, element, file,
      function, line, skip_text, debug);
  gst_element_message_full (element, GST_MESSAGE_WARNING, domain, code,
      skip_text, debug, file, function, line);
  if (bounded && max_errors >= 0 && skipped > (guint64)max_errors) {
    gst_element_message_full (element, GST_MESSAGE_ERROR, domain, code,
        g_strdup_printf ("Too many samples did not %s: %" G_GUINT64_FORMAT
                         " skipped, max-errors is %d.",
            verb, skipped, max_errors),
        NULL, file, function, line);
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
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
gst_train_sample_key (GstBuffer *buffer)
{
  GstTrainSampleMeta *meta = gst_buffer_get_train_sample_meta (buffer);

  if (meta == NULL)
    return NULL;
  if (meta->location != NULL)
    return g_strdup (meta->location);
  return g_strdup_printf ("#%" G_GUINT64_FORMAT, meta->index);
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

guint64
gst_train_rank_seed (guint64 seed, gint *rank)
{
  GtLauncherPosition position;
  guint64 state;

  if (!gt_launcher_position (&position) || position.size < 2
      || position.rank == 0) {
    *rank = position.rank;
    return seed;
  }
  *rank = position.rank;
  /* a hash of the rank, not seed + rank: neighbouring seeds would give
   * neighbouring splitmix64 states, whose streams overlap */
  state = (guint64)position.rank;
  return seed ^ gt_random_splitmix64 (&state);
}

/* ---- region query and meta ---- */

GstQuery *
gst_train_region_query_new (
    GstPad *origin, GstBuffer *sample, gint width, gint height)
{
  return gst_query_new_custom (GST_QUERY_CUSTOM,
      gst_structure_new (GST_TRAIN_REGION_QUERY, "origin", G_TYPE_POINTER,
          origin, "sample", G_TYPE_POINTER, sample, "width", G_TYPE_INT, width,
          "height", G_TYPE_INT, height, NULL));
}

gboolean
gst_train_region_query_parse (GstQuery *query, GstPad **origin,
    GstBuffer **sample, gint *width, gint *height)
{
  const GstStructure *s;

  if (GST_QUERY_TYPE (query) != GST_QUERY_CUSTOM)
    return FALSE;
  s = gst_query_get_structure (query);
  return s != NULL && gst_structure_has_name (s, GST_TRAIN_REGION_QUERY)
      && gst_structure_get (s, "origin", G_TYPE_POINTER, origin, "sample",
          G_TYPE_POINTER, sample, "width", G_TYPE_INT, width, "height",
          G_TYPE_INT, height, NULL);
}

void
gst_train_region_query_set (GstQuery *query, const GstTrainRegion *region)
{
  gst_structure_set (gst_query_writable_structure (query), "left", G_TYPE_INT,
      region->left, "top", G_TYPE_INT, region->top, "region-width", G_TYPE_INT,
      region->width, "region-height", G_TYPE_INT, region->height, NULL);
}

gboolean
gst_train_region_query_get (GstQuery *query, GstTrainRegion *region)
{
  const GstStructure *s = gst_query_get_structure (query);

  return s != NULL
      && gst_structure_get (s, "left", G_TYPE_INT, &region->left, "top",
          G_TYPE_INT, &region->top, "region-width", G_TYPE_INT, &region->width,
          "region-height", G_TYPE_INT, &region->height, NULL);
}
