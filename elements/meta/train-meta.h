/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-meta.h: the sample metadata that gst-train's elements and the
 * applications built on them share.
 *
 * GstTrainSampleMeta rides on every per-sample buffer, from datasetsrc to the
 * batcher: it says which dataset sample the buffer holds, its label, the
 * epoch it was read in, and how often this very item was emitted before (0 =
 * fresh, > 0 = an echo repeat). It carries no tags, so every transform keeps
 * it.
 *
 * The dataset facts (class count, class names in label order, sample counts)
 * travel downstream as a stream tag list that datasetsrc sends once per
 * stream, read back with gst_train_dataset_info_from_tag_list().
 *
 * Bindings (Python's gi) read all of it through the typelib GstTrain-1.0:
 * the gtk-doc comments below carry its annotations, and
 * gst_train_buffer_get_sample_meta() and gst_train_buffer_get_batch_meta()
 * stand in for the two macros that cast a #GstMeta, which gi cannot.
 */
#ifndef __GST_TRAIN_META_H__
#define __GST_TRAIN_META_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#ifndef GST_TRAIN_META_API
#define GST_TRAIN_META_API __attribute__ ((visibility ("default"))) extern
#endif

typedef struct _GstTrainSampleMeta GstTrainSampleMeta;

/**
 * GstTrainSampleMeta:
 * @label: class index, or -1 for an unlabelled sample
 * @index: the sample's index in the whole dataset (ImageFolder order)
 * @epoch: the epoch (from 0) in which the source read it
 * @emissions: how many times this item was emitted before this buffer
 *     (0 = fresh)
 * @location: the file the sample was read from, or %NULL; a read-only
 *     GRefString shared by the copies of the meta (do not free or modify)
 */
struct _GstTrainSampleMeta
{
  GstMeta meta;

  gint label;
  guint64 index;
  gint epoch;
  guint emissions;
  gchar *location;
};

/* The registered API type of GstTrainSampleMeta (no tags). */
GST_TRAIN_META_API GType gst_train_sample_meta_api_get_type (void);
#define GST_TRAIN_SAMPLE_META_API_TYPE (gst_train_sample_meta_api_get_type ())

/* The meta's implementation info; copies every field on any transform. */
GST_TRAIN_META_API const GstMetaInfo *gst_train_sample_meta_get_info (void);
#define GST_TRAIN_SAMPLE_META_INFO (gst_train_sample_meta_get_info ())

/* The sample meta of @buffer, or NULL when it has none. */
#define gst_buffer_get_train_sample_meta(buffer)                               \
  ((GstTrainSampleMeta *)gst_buffer_get_meta (                                 \
      (buffer), GST_TRAIN_SAMPLE_META_API_TYPE))

/**
 * gst_train_buffer_get_sample_meta:
 * @buffer: a buffer
 *
 * The sample meta of @buffer, as gst_buffer_get_train_sample_meta() gives
 * it in C: for bindings, which cannot turn a #GstMeta into it.
 *
 * Returns: (transfer none) (nullable): the meta, or %NULL when @buffer has
 *     none; it lives as long as @buffer
 */
GST_TRAIN_META_API GstTrainSampleMeta *gst_train_buffer_get_sample_meta (
    GstBuffer *buffer);

/**
 * gst_buffer_add_train_sample_meta:
 * @buffer: a writable buffer
 * @label: class index, or -1
 * @index: the sample's index in the dataset
 * @epoch: the epoch in which it was read
 * @location: (nullable): the file it was read from
 *
 * Attaches a fresh (emissions = 0) sample meta to @buffer; @location is
 * copied.
 *
 * Returns: (transfer none): the new meta
 */
GST_TRAIN_META_API GstTrainSampleMeta *gst_buffer_add_train_sample_meta (
    GstBuffer *buffer, gint label, guint64 index, gint epoch,
    const gchar *location);

typedef struct _GstTrainBatchMeta GstTrainBatchMeta;

/**
 * GstTrainBatchMeta:
 * @num_samples: samples in the batch
 * @num_fresh: samples that were fresh (emissions 0) when the batch was made
 * @emissions: how many times this batch was emitted before this buffer
 *     (0 = fresh; > 0 = a batch-echo repeat, whose samples all count as
 *     repeats)
 * @indices: (array length=num_samples): the dataset index of each sample
 *     (#GstTrainSampleMeta index), in batch order: @num_samples entries
 *     (%NULL when @num_samples is 0), G_MAXUINT64 for a sample that had no
 *     sample meta. Owned by the meta; copies of the batch (batch echo) get
 *     copies of it. Bindings read it with gst_train_batch_meta_get_indices().
 *
 * Rides on every batch the batcher makes, so that a sink can count fresh
 * and repeated images wherever the echo sits, and an application can tell
 * which samples a batch holds.
 */
struct _GstTrainBatchMeta
{
  GstMeta meta;

  guint num_samples;
  guint num_fresh;
  guint emissions;
  guint64 *indices;
};

/* The registered API type of GstTrainBatchMeta (no tags). */
GST_TRAIN_META_API GType gst_train_batch_meta_api_get_type (void);
#define GST_TRAIN_BATCH_META_API_TYPE (gst_train_batch_meta_api_get_type ())

/* The batch meta's implementation info; copies every field on transforms. */
GST_TRAIN_META_API const GstMetaInfo *gst_train_batch_meta_get_info (void);
#define GST_TRAIN_BATCH_META_INFO (gst_train_batch_meta_get_info ())

/* The batch meta of @buffer, or NULL when it has none. */
#define gst_buffer_get_train_batch_meta(buffer)                                \
  ((GstTrainBatchMeta *)gst_buffer_get_meta (                                  \
      (buffer), GST_TRAIN_BATCH_META_API_TYPE))

/**
 * gst_train_buffer_get_batch_meta:
 * @buffer: a buffer
 *
 * The batch meta of @buffer, as gst_buffer_get_train_batch_meta() gives it
 * in C: for bindings.
 *
 * Returns: (transfer none) (nullable): the meta, or %NULL when @buffer has
 *     none; it lives as long as @buffer
 */
GST_TRAIN_META_API GstTrainBatchMeta *gst_train_buffer_get_batch_meta (
    GstBuffer *buffer);

/**
 * gst_train_batch_meta_get_indices:
 * @meta: a batch meta
 * @n_indices: (out): the number of entries, @meta's num_samples
 *
 * The dataset index of each sample of the batch, in batch order: the
 * indices field, as bindings can read it.
 *
 * Returns: (array length=n_indices) (transfer none) (nullable): the
 *     indices, owned by @meta; %NULL for an empty batch
 */
GST_TRAIN_META_API const guint64 *gst_train_batch_meta_get_indices (
    const GstTrainBatchMeta *meta, guint *n_indices);

/**
 * gst_buffer_add_train_batch_meta:
 * @buffer: a writable buffer
 * @num_samples: images in the batch
 * @num_fresh: those that are fresh
 *
 * Attaches a batch meta (emissions = 0) to @buffer, its indices all
 * G_MAXUINT64 until the caller fills them in.
 *
 * Returns: (transfer none): the new meta
 */
GST_TRAIN_META_API GstTrainBatchMeta *gst_buffer_add_train_batch_meta (
    GstBuffer *buffer, guint num_samples, guint num_fresh);

/* Records on the writable @buffer that it is emitted for the (@emissions +
 * 1)-th time: sets the emission count of its sample meta and of its batch
 * meta, whichever it has. Returns FALSE when it has neither. */
GST_TRAIN_META_API gboolean gst_train_buffer_set_emissions (
    GstBuffer *buffer, guint emissions);

/* How many of the images in @buffer are fresh: for a sample, 1 or 0; for a
 * batch, its fresh samples, or 0 when the batch itself is a repeat. Returns
 * -1 when @buffer carries neither meta. */
GST_TRAIN_META_API gint gst_train_buffer_count_fresh (GstBuffer *buffer);

/* Stream tags that carry the dataset facts. */
#define GST_TRAIN_TAG_NUM_CLASSES "train-num-classes" /* guint */
#define GST_TRAIN_TAG_CLASS_NAME                                               \
  "train-class-name" /* string, one per
                                                           * class, in label
                                                           * order */
#define GST_TRAIN_TAG_NUM_SAMPLES                                              \
  "train-num-samples" /* guint64: whole
                                                           * dataset */
#define GST_TRAIN_TAG_EPOCH_SAMPLES                                            \
  "train-epoch-samples" /* guint64: samples
                                                           * one epoch of this
                                                           * source emits
                                                           * (after sharding
                                                           * and num-samples) */
/* guint: which part of the dataset this stream is (from 0), and how many
 * parts it was split into, one per rank (datasetsrc's rank and num-ranks;
 * the tag names are older than those); both absent when the source does
 * not split */
#define GST_TRAIN_TAG_SHARD_INDEX "train-shard-index"
#define GST_TRAIN_TAG_NUM_SHARDS "train-num-shards"

/**
 * GstTrainDatasetInfo:
 * @num_classes: number of classes (labels are 0 .. num_classes - 1)
 * @class_names: (array zero-terminated=1): %NULL-terminated names in label
 *     order (num_classes entries)
 * @num_samples: samples in the whole dataset
 * @epoch_samples: samples one epoch of the source emits
 * @shard_index: the part of the dataset the source reads (from 0):
 *     datasetsrc's rank
 * @num_shards: how many parts the dataset is split into, one per rank
 *     (datasetsrc's num-ranks), 1 when it is not; 0 when the tags do not
 *     say (a source that does not split)
 *
 * A data-parallel job runs one source per rank, each on its own part:
 * cudatrainsink checks the part against its rank and world size.
 */
typedef struct
{
  guint num_classes;
  gchar **class_names;
  guint64 num_samples;
  guint64 epoch_samples;
  guint shard_index;
  guint num_shards;
} GstTrainDatasetInfo;

/* Registers the GST_TRAIN_TAG_* tags; safe to call any number of times. */
GST_TRAIN_META_API void gst_train_tags_register (void);

/**
 * gst_train_dataset_info_to_tag_list:
 * @info: the dataset facts
 *
 * A new stream-scoped tag list that describes @info.
 *
 * Returns: (transfer full): the tags
 */
GST_TRAIN_META_API GstTagList *gst_train_dataset_info_to_tag_list (
    const GstTrainDatasetInfo *info);

/**
 * gst_train_dataset_info_from_tag_list:
 * @tags: (nullable): a tag list
 * @info: (out caller-allocates): the dataset facts
 *
 * Fills @info from @tags. Free what it holds with
 * gst_train_dataset_info_clear().
 *
 * Returns: FALSE (and @info zeroed) when @tags holds no dataset facts
 */
GST_TRAIN_META_API gboolean gst_train_dataset_info_from_tag_list (
    const GstTagList *tags, GstTrainDatasetInfo *info);

/* Frees what @info owns and zeroes it. */
GST_TRAIN_META_API void gst_train_dataset_info_clear (
    GstTrainDatasetInfo *info);

/* ---- exact resume: where the source starts ----
 *
 * Before its first buffer, datasetsrc sends this custom query downstream
 * (not serialized: it overtakes nothing, and no data flows yet). A sink
 * that resumes from a checkpoint answers it with how many samples of this
 * stream it already trained on (@samples), the fresh ones among them
 * (@fresh) and the images per batch (@batch_size). On its way back every
 * element between them turns the answer into its own input: elements that
 * emit one output per input leave it as it is; echo, which repeats and
 * reorders, replaces it with where its input must start for it to restore
 * its shuffle buffer, and keeps what it needs to do so. The source then
 * starts that many samples after its own start (datasetsrc's
 * start-position, 0 by default) in its per-epoch order, without reading
 * what comes before. A sink that answers relies on it: it no longer skips
 * batches itself. An answer may be narrowed to a set of items (see
 * gst_train_resume_query_set_keep): an element that maps its output to
 * its input one to one keeps the set as it is. */
#define GST_TRAIN_RESUME_QUERY "gst-train-resume"

/**
 * gst_train_resume_query_new:
 *
 * A new resume query, unanswered.
 *
 * Returns: (transfer full): the query
 */
GST_TRAIN_META_API GstQuery *gst_train_resume_query_new (void);

/* Whether @query is a resume query. */
GST_TRAIN_META_API gboolean gst_train_is_resume_query (GstQuery *query);

/* Answers the writable resume @query: @samples items of this stream to
 * pass over (in the unit of the items at this point: samples, or batches
 * after batcher, see @batch_size), @fresh of them fresh (first
 * emissions), @batch_size images per batch (0: unknown). */
GST_TRAIN_META_API void gst_train_resume_query_set (
    GstQuery *query, guint64 samples, guint64 fresh, guint batch_size);

/**
 * gst_train_resume_query_parse:
 * @query: a resume query
 * @samples: (out) (optional): items to pass over
 * @fresh: (out) (optional): fresh ones among them
 * @batch_size: (out) (optional): images per batch, 0 when unknown
 *
 * The answer of a resume @query.
 *
 * Returns: FALSE when nobody answered it
 */
GST_TRAIN_META_API gboolean gst_train_resume_query_parse (
    GstQuery *query, guint64 *samples, guint64 *fresh, guint *batch_size);

/**
 * gst_train_resume_query_set_keep:
 * @query: a writable resume query
 * @keep: (array length=n_keep): the wanted positions
 * @n_keep: their number
 * @end: where the narrowed span ends
 *
 * Narrows the answer of the writable resume @query: of the items from
 * @samples (the answer) up to @end, only the @n_keep at @keep (sorted,
 * each in [samples, end)) are wanted; the source passes over the others
 * unread, then goes on from @end. The positions count as @samples does,
 * from the source's start. Echo sets it for the items its shuffle buffer
 * held.
 */
GST_TRAIN_META_API void gst_train_resume_query_set_keep (
    GstQuery *query, const guint64 *keep, guint n_keep, guint64 end);

/**
 * gst_train_resume_query_get_keep:
 * @query: a resume query
 * @n_keep: (out): the number of wanted positions
 * @end: (out): where the narrowed span ends
 *
 * The narrowed answer.
 *
 * Returns: (array length=n_keep) (transfer full) (nullable): a new array of
 *     the wanted positions (free with g_free); %NULL when every item from
 *     the answer on is wanted
 */
GST_TRAIN_META_API guint64 *gst_train_resume_query_get_keep (
    GstQuery *query, guint *n_keep, guint64 *end);

/* ---- a decoded image that is a part of the image ----
 *
 * imagedec decodes only the rectangle of an image that augment crops when
 * augment asks for it (see GST_TRAIN_REGION_QUERY in the elements'
 * train-common.h); the buffer then holds that rectangle and says so. */

/* A rectangle of an image, in the pixels of its decoded size. */
typedef struct
{
  gint left;
  gint top;
  gint width;
  gint height;
} GstTrainRegion;

/* On a decoded image that is the rectangle @region of a @full_width x
 * @full_height image. Tagged (video, size), so that elements that change
 * the picture drop it and gst_train_copy_untagged_metas() does not copy
 * it. */
typedef struct
{
  GstMeta meta;
  gint full_width;
  gint full_height;
  GstTrainRegion region;
} GstTrainRegionMeta;

GST_TRAIN_META_API GType gst_train_region_meta_api_get_type (void);
#define GST_TRAIN_REGION_META_API_TYPE (gst_train_region_meta_api_get_type ())
#define gst_buffer_get_train_region_meta(buffer)                               \
  ((GstTrainRegionMeta *)gst_buffer_get_meta (                                 \
      (buffer), GST_TRAIN_REGION_META_API_TYPE))

/**
 * gst_buffer_add_train_region_meta:
 * @buffer: a writable buffer
 * @full_width: the decoded image's width
 * @full_height: its height
 * @region: the rectangle @buffer holds
 *
 * Says on @buffer that it holds @region of a larger image.
 *
 * Returns: (transfer none): the new meta
 */
GST_TRAIN_META_API GstTrainRegionMeta *gst_buffer_add_train_region_meta (
    GstBuffer *buffer, gint full_width, gint full_height,
    const GstTrainRegion *region);

G_END_DECLS

#endif /* __GST_TRAIN_META_H__ */
