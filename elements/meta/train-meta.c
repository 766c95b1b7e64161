/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-meta.c: GstTrainSampleMeta and the dataset-info tags, the resume
 * query and the region meta. */
#include "train-meta.h"

#include <string.h>

/* Registers the meta API @name with @tags once, in *@type. */
static GType
register_api_once (GType *type, const gchar *name, const gchar **tags)
{
  if (g_once_init_enter (type)) {
    GType api = gst_meta_api_type_register (name, tags);
    g_once_init_leave (type, api);
  }
  return *type;
}

/* Registers a meta implementation of @api once, in *@info. */
static const GstMetaInfo *
register_meta_once (const GstMetaInfo **info, GType api, const gchar *name,
    gsize size, GstMetaInitFunction init, GstMetaFreeFunction free_func,
    GstMetaTransformFunction transform)
{
  if (g_once_init_enter ((GstMetaInfo **)info)) {
    const GstMetaInfo *registered =
        gst_meta_register (api, name, size, init, free_func, transform);
    g_once_init_leave ((GstMetaInfo **)info, (GstMetaInfo *)registered);
  }
  return *info;
}

GType
gst_train_sample_meta_api_get_type (void)
{
  static GType type = 0;
  /* No tags: the meta describes the sample's identity, which no transform
   * (crop, scale, colour conversion, copy) changes. */
  static const gchar *tags[] = { NULL };

  return register_api_once (&type, "GstTrainSampleMetaAPI", tags);
}

static gboolean
gst_train_sample_meta_init (GstMeta *meta, gpointer params, GstBuffer *buffer)
{
  GstTrainSampleMeta *smeta = (GstTrainSampleMeta *)meta;

  smeta->label = -1;
  smeta->index = 0;
  smeta->epoch = 0;
  smeta->emissions = 0;
  smeta->location = NULL;
  return TRUE;
}

static void
gst_train_sample_meta_free (GstMeta *meta, GstBuffer *buffer)
{
  GstTrainSampleMeta *smeta = (GstTrainSampleMeta *)meta;

  g_clear_pointer (&smeta->location, g_ref_string_release);
}

static gboolean
gst_train_sample_meta_transform (GstBuffer *dest, GstMeta *meta,
    GstBuffer *buffer, GQuark type, gpointer data)
{
  GstTrainSampleMeta *src = (GstTrainSampleMeta *)meta;
  GstTrainSampleMeta *dst;

  /* Echo copies metas for every repeat: share the location string rather
   * than duplicating it. */
  dst = gst_buffer_add_train_sample_meta (
      dest, src->label, src->index, src->epoch, NULL);
  if (dst == NULL)
    return FALSE;
  if (src->location != NULL)
    dst->location = g_ref_string_acquire (src->location);
  dst->emissions = src->emissions;
  return TRUE;
}

const GstMetaInfo *
gst_train_sample_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  return register_meta_once (&info, GST_TRAIN_SAMPLE_META_API_TYPE,
      "GstTrainSampleMeta", sizeof (GstTrainSampleMeta),
      gst_train_sample_meta_init, gst_train_sample_meta_free,
      gst_train_sample_meta_transform);
}

GstTrainSampleMeta *
gst_buffer_add_train_sample_meta (GstBuffer *buffer, gint label, guint64 index,
    gint epoch, const gchar *location)
{
  GstTrainSampleMeta *meta;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);

  meta = (GstTrainSampleMeta *)gst_buffer_add_meta (
      buffer, GST_TRAIN_SAMPLE_META_INFO, NULL);
  if (meta == NULL)
    return NULL;
  meta->label = label;
  meta->index = index;
  meta->epoch = epoch;
  meta->emissions = 0;
  meta->location = location ? g_ref_string_new (location) : NULL;
  return meta;
}

GstTrainSampleMeta *
gst_train_buffer_get_sample_meta (GstBuffer *buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  return gst_buffer_get_train_sample_meta (buffer);
}

GType
gst_train_batch_meta_api_get_type (void)
{
  static GType type = 0;
  static const gchar *tags[] = { NULL };

  return register_api_once (&type, "GstTrainBatchMetaAPI", tags);
}

static gboolean
gst_train_batch_meta_init (GstMeta *meta, gpointer params, GstBuffer *buffer)
{
  GstTrainBatchMeta *bmeta = (GstTrainBatchMeta *)meta;

  bmeta->num_samples = 0;
  bmeta->num_fresh = 0;
  bmeta->emissions = 0;
  bmeta->indices = NULL;
  return TRUE;
}

static void
gst_train_batch_meta_free (GstMeta *meta, GstBuffer *buffer)
{
  GstTrainBatchMeta *bmeta = (GstTrainBatchMeta *)meta;

  g_clear_pointer (&bmeta->indices, g_free);
}

static gboolean
gst_train_batch_meta_transform (GstBuffer *dest, GstMeta *meta,
    GstBuffer *buffer, GQuark type, gpointer data)
{
  GstTrainBatchMeta *src = (GstTrainBatchMeta *)meta;
  GstTrainBatchMeta *dst =
      gst_buffer_add_train_batch_meta (dest, src->num_samples, src->num_fresh);

  if (dst == NULL)
    return FALSE;
  dst->emissions = src->emissions;
  if (src->indices != NULL && dst->indices != NULL)
    memcpy (dst->indices, src->indices, src->num_samples * sizeof (guint64));
  return TRUE;
}

const GstMetaInfo *
gst_train_batch_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  return register_meta_once (&info, GST_TRAIN_BATCH_META_API_TYPE,
      "GstTrainBatchMeta", sizeof (GstTrainBatchMeta),
      gst_train_batch_meta_init, gst_train_batch_meta_free,
      gst_train_batch_meta_transform);
}

GstTrainBatchMeta *
gst_buffer_add_train_batch_meta (
    GstBuffer *buffer, guint num_samples, guint num_fresh)
{
  GstTrainBatchMeta *meta;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);

  meta = (GstTrainBatchMeta *)gst_buffer_add_meta (
      buffer, GST_TRAIN_BATCH_META_INFO, NULL);
  if (meta == NULL)
    return NULL;
  meta->num_samples = num_samples;
  meta->num_fresh = num_fresh;
  if (num_samples > 0) {
    guint i;

    meta->indices = g_new (guint64, num_samples);
    for (i = 0; i < num_samples; i++)
      meta->indices[i] = G_MAXUINT64;
  }
  return meta;
}

GstTrainBatchMeta *
gst_train_buffer_get_batch_meta (GstBuffer *buffer)
{
  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  return gst_buffer_get_train_batch_meta (buffer);
}

const guint64 *
gst_train_batch_meta_get_indices (
    const GstTrainBatchMeta *meta, guint *n_indices)
{
  g_return_val_if_fail (meta != NULL, NULL);
  if (n_indices != NULL)
    *n_indices = meta->indices != NULL ? meta->num_samples : 0;
  return meta->indices;
}

gboolean
gst_train_buffer_set_emissions (GstBuffer *buffer, guint emissions)
{
  GstTrainSampleMeta *smeta = gst_buffer_get_train_sample_meta (buffer);
  GstTrainBatchMeta *bmeta = gst_buffer_get_train_batch_meta (buffer);

  g_return_val_if_fail (gst_buffer_is_writable (buffer), FALSE);
  if (smeta != NULL)
    smeta->emissions = emissions;
  if (bmeta != NULL)
    bmeta->emissions = emissions;
  return smeta != NULL || bmeta != NULL;
}

gint
gst_train_buffer_count_fresh (GstBuffer *buffer)
{
  GstTrainBatchMeta *bmeta = gst_buffer_get_train_batch_meta (buffer);
  GstTrainSampleMeta *smeta;

  if (bmeta != NULL)
    return bmeta->emissions == 0 ? (gint)bmeta->num_fresh : 0;
  smeta = gst_buffer_get_train_sample_meta (buffer);
  if (smeta != NULL)
    return smeta->emissions == 0 ? 1 : 0;
  return -1;
}

void
gst_train_tags_register (void)
{
  static gsize registered = 0;

  if (g_once_init_enter (&registered)) {
    gst_tag_register (GST_TRAIN_TAG_NUM_CLASSES, GST_TAG_FLAG_META, G_TYPE_UINT,
        "number of classes", "number of classes in the training dataset", NULL);
    /* A merge function makes the tag hold a list: one name per class. */
    gst_tag_register (GST_TRAIN_TAG_CLASS_NAME, GST_TAG_FLAG_META,
        G_TYPE_STRING, "class name",
        "names of the dataset's classes, in label order",
        gst_tag_merge_strings_with_comma);
    gst_tag_register (GST_TRAIN_TAG_NUM_SAMPLES, GST_TAG_FLAG_META,
        G_TYPE_UINT64, "number of samples",
        "number of samples in the whole dataset", NULL);
    gst_tag_register (GST_TRAIN_TAG_EPOCH_SAMPLES, GST_TAG_FLAG_META,
        G_TYPE_UINT64, "samples per epoch",
        "number of samples one epoch of this source emits", NULL);
    gst_tag_register (GST_TRAIN_TAG_SHARD_INDEX, GST_TAG_FLAG_META, G_TYPE_UINT,
        "shard index", "the shard of the dataset this stream is, from 0", NULL);
    gst_tag_register (GST_TRAIN_TAG_NUM_SHARDS, GST_TAG_FLAG_META, G_TYPE_UINT,
        "number of shards", "how many shards the dataset is split into", NULL);
    g_once_init_leave (&registered, 1);
  }
}

GstTagList *
gst_train_dataset_info_to_tag_list (const GstTrainDatasetInfo *info)
{
  GstTagList *tags;
  guint i;

  g_return_val_if_fail (info != NULL, NULL);

  gst_train_tags_register ();
  tags = gst_tag_list_new_empty ();
  gst_tag_list_set_scope (tags, GST_TAG_SCOPE_STREAM);
  gst_tag_list_add (tags, GST_TAG_MERGE_REPLACE, GST_TRAIN_TAG_NUM_CLASSES,
      info->num_classes, GST_TRAIN_TAG_NUM_SAMPLES, info->num_samples,
      GST_TRAIN_TAG_EPOCH_SAMPLES, info->epoch_samples, NULL);
  if (info->num_shards > 0)
    gst_tag_list_add (tags, GST_TAG_MERGE_REPLACE, GST_TRAIN_TAG_SHARD_INDEX,
        info->shard_index, GST_TRAIN_TAG_NUM_SHARDS, info->num_shards, NULL);
  for (i = 0; i < info->num_classes && info->class_names != NULL
       && info->class_names[i] != NULL;
       i++)
    gst_tag_list_add (tags, GST_TAG_MERGE_APPEND, GST_TRAIN_TAG_CLASS_NAME,
        info->class_names[i], NULL);
  return tags;
}

gboolean
gst_train_dataset_info_from_tag_list (
    const GstTagList *tags, GstTrainDatasetInfo *info)
{
  guint i, n_names;

  g_return_val_if_fail (info != NULL, FALSE);
  memset (info, 0, sizeof (*info));
  if (tags == NULL)
    return FALSE;

  gst_train_tags_register ();
  if (!gst_tag_list_get_uint (
          tags, GST_TRAIN_TAG_NUM_CLASSES, &info->num_classes))
    return FALSE;
  gst_tag_list_get_uint64 (tags, GST_TRAIN_TAG_NUM_SAMPLES, &info->num_samples);
  gst_tag_list_get_uint64 (
      tags, GST_TRAIN_TAG_EPOCH_SAMPLES, &info->epoch_samples);
  if (!gst_tag_list_get_uint (tags, GST_TRAIN_TAG_NUM_SHARDS, &info->num_shards)
      || !gst_tag_list_get_uint (
          tags, GST_TRAIN_TAG_SHARD_INDEX, &info->shard_index))
    info->num_shards = info->shard_index = 0;

  n_names = gst_tag_list_get_tag_size (tags, GST_TRAIN_TAG_CLASS_NAME);
  info->class_names = g_new0 (gchar *, info->num_classes + 1);
  for (i = 0; i < info->num_classes; i++) {
    const gchar *name = NULL;

    if (i < n_names)
      gst_tag_list_peek_string_index (tags, GST_TRAIN_TAG_CLASS_NAME, i, &name);
    /* A class without a name gets its label, as list-file datasets do. */
    info->class_names[i] = name ? g_strdup (name) : g_strdup_printf ("%u", i);
  }
  return TRUE;
}

void
gst_train_dataset_info_clear (GstTrainDatasetInfo *info)
{
  g_return_if_fail (info != NULL);
  g_strfreev (info->class_names);
  memset (info, 0, sizeof (*info));
}

GstQuery *
gst_train_resume_query_new (void)
{
  return gst_query_new_custom (
      GST_QUERY_CUSTOM, gst_structure_new_empty (GST_TRAIN_RESUME_QUERY));
}

gboolean
gst_train_is_resume_query (GstQuery *query)
{
  const GstStructure *s;

  if (GST_QUERY_TYPE (query) != GST_QUERY_CUSTOM)
    return FALSE;
  s = gst_query_get_structure (query);
  return s != NULL && gst_structure_has_name (s, GST_TRAIN_RESUME_QUERY);
}

void
gst_train_resume_query_set (
    GstQuery *query, guint64 samples, guint64 fresh, guint batch_size)
{
  GstStructure *s;

  g_return_if_fail (gst_train_is_resume_query (query));
  s = gst_query_writable_structure (query);
  gst_structure_set (s, "samples", G_TYPE_UINT64, samples, "fresh",
      G_TYPE_UINT64, fresh, "batch-size", G_TYPE_UINT, batch_size, NULL);
}

gboolean
gst_train_resume_query_parse (
    GstQuery *query, guint64 *samples, guint64 *fresh, guint *batch_size)
{
  const GstStructure *s;
  guint64 n = 0, f = 0;
  guint b = 0;

  g_return_val_if_fail (gst_train_is_resume_query (query), FALSE);
  s = gst_query_get_structure (query);
  if (!gst_structure_get_uint64 (s, "samples", &n))
    return FALSE;
  gst_structure_get_uint64 (s, "fresh", &f);
  gst_structure_get_uint (s, "batch-size", &b);
  if (samples)
    *samples = n;
  if (fresh)
    *fresh = f;
  if (batch_size)
    *batch_size = b;
  return TRUE;
}

void
gst_train_resume_query_set_keep (
    GstQuery *query, const guint64 *keep, guint n_keep, guint64 end)
{
  GstStructure *s;
  GBytes *bytes;

  g_return_if_fail (gst_train_is_resume_query (query));
  s = gst_query_writable_structure (query);
  bytes = g_bytes_new (keep, (gsize)n_keep * sizeof (guint64));
  gst_structure_set (
      s, "keep", G_TYPE_BYTES, bytes, "keep-end", G_TYPE_UINT64, end, NULL);
  g_bytes_unref (bytes);
}

guint64 *
gst_train_resume_query_get_keep (GstQuery *query, guint *n_keep, guint64 *end)
{
  const GstStructure *s;
  GBytes *bytes = NULL;
  guint64 *keep;
  gsize size;

  g_return_val_if_fail (gst_train_is_resume_query (query), NULL);
  s = gst_query_get_structure (query);
  if (!gst_structure_has_field_typed (s, "keep", G_TYPE_BYTES)
      || !gst_structure_get (s, "keep", G_TYPE_BYTES, &bytes, "keep-end",
          G_TYPE_UINT64, end, NULL))
    return NULL;
  keep = g_malloc (MAX (g_bytes_get_size (bytes), 1));
  memcpy (keep, g_bytes_get_data (bytes, &size), g_bytes_get_size (bytes));
  *n_keep = (guint)(size / sizeof (guint64));
  g_bytes_unref (bytes);
  return keep;
}

/* ---- region meta ---- */

GType
gst_train_region_meta_api_get_type (void)
{
  static GType type = 0;
  /* GST_META_TAG_VIDEO_STR and GST_META_TAG_VIDEO_SIZE_STR, without
   * linking gst-video for two strings. */
  static const gchar *tags[] = { "video", "size", NULL };

  return register_api_once (&type, "GstTrainRegionMetaAPI", tags);
}

static gboolean
gst_train_region_meta_init (GstMeta *meta, gpointer params, GstBuffer *buffer)
{
  GstTrainRegionMeta *rmeta = (GstTrainRegionMeta *)meta;

  rmeta->full_width = rmeta->full_height = 0;
  memset (&rmeta->region, 0, sizeof (rmeta->region));
  return TRUE;
}

/* Copies along with the whole buffer only: a part of the pixels, or other
 * pixels, are no longer that rectangle. */
static gboolean
gst_train_region_meta_transform (GstBuffer *dest, GstMeta *meta,
    GstBuffer *buffer, GQuark type, gpointer data)
{
  GstTrainRegionMeta *rmeta = (GstTrainRegionMeta *)meta;

  if (GST_META_TRANSFORM_IS_COPY (type)
      && !((GstMetaTransformCopy *)data)->region)
    return gst_buffer_add_train_region_meta (
               dest, rmeta->full_width, rmeta->full_height, &rmeta->region)
        != NULL;
  return FALSE;
}

static const GstMetaInfo *
gst_train_region_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  return register_meta_once (&info, GST_TRAIN_REGION_META_API_TYPE,
      "GstTrainRegionMeta", sizeof (GstTrainRegionMeta),
      gst_train_region_meta_init, NULL, gst_train_region_meta_transform);
}

GstTrainRegionMeta *
gst_buffer_add_train_region_meta (GstBuffer *buffer, gint full_width,
    gint full_height, const GstTrainRegion *region)
{
  GstTrainRegionMeta *meta = (GstTrainRegionMeta *)gst_buffer_add_meta (
      buffer, gst_train_region_meta_get_info (), NULL);

  meta->full_width = full_width;
  meta->full_height = full_height;
  meta->region = *region;
  return meta;
}
