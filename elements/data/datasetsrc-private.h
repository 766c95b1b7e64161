/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* datasetsrc-private.h: the datasetsrc element's insides, shared by its
 * files.
 *
 * gstdatasetsrc.c owns the element: properties, documentation, state
 * changes, the dataset tags. It hands the reading to the mode that the
 * location asks for: datasetsrc-files.c (an ImageFolder or a list file,
 * one file per sample, read ahead on the shared pool) or
 * datasetsrc-shards.c (WebDataset shards, local or over HTTP). Calls go
 * that way only: gstdatasetsrc.c to the mode files, and they to the pieces
 * below them (datasetsrc-resume.c, the exact resume both take;
 * dataset-index.c, train-pool.c, train-common.c, shard-*.c). */
#ifndef __GST_DATASET_SRC_PRIVATE_H__
#define __GST_DATASET_SRC_PRIVATE_H__

#include "gstdatasetsrc.h"
#include "dataset-index.h"
#include "train-common.h"
#include "train-meta.h"
#include "train-pool.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_dataset_src_debug);
#define GST_CAT_DEFAULT gst_dataset_src_debug

/* One read-ahead slot: a sample handed to a reader thread and its result. */
typedef struct
{
  GstTrainTask task; /* first: the pool hands it back */
  GstDatasetSrc *src;
  guint64 sample;
  gint epoch;
  gboolean done;
  GstBuffer *buffer;
  gchar *error;
} GstDatasetSrcSlot;

/* The properties as they were when the element started; on-error, which
 * may change while it plays, lives in GstTrainBadSamples. */
typedef struct
{
  gchar *location;
  gboolean shuffle;
  guint64 seed;
  gint num_epochs;
  guint shard_index;
  guint num_shards;
  guint64 num_samples;
  guint n_threads;
  guint read_ahead;
  gchar *extensions;
  guint64 start_position;
  /* shard-index or num-shards was set: the launcher's rank is not used */
  gboolean shard_set;
  /* shards only */
  guint num_classes;
  guint shuffle_buffer_size;
  guint fetch_ahead;
  guint retries;
} GstDatasetSrcSettings;

typedef struct _GstDatasetSrcShards GstDatasetSrcShards;

struct _GstDatasetSrc
{
  GstPushSrc parent;

  /* Properties, the skip policy and count, and what start() found, under
   * the object lock. */
  GstDatasetSrcSettings props;
  GstTrainBadSamples bad;
  guint num_classes;
  guint64 dataset_size;

  /* Set in start(), read-only while streaming. */
  GstDatasetSrcSettings settings;
  GstTrainDatasetIndex *index;
  guint64 epoch_samples;

  /* Which sample the next submitted read is for (streaming thread only). */
  gint cursor_epoch;
  guint64 cursor_pos;
  guint64 *cursor_order;
  gboolean cursor_done;
  gboolean positioned; /* the start position is taken (first create) */

  /* Both modes: a resume wants only these positions of the sequence before
   * @keep_end (sorted; NULL: all). Streaming thread only. */
  guint64 *keep;
  guint n_keep, next_keep;
  guint64 keep_end;

  /* The read-ahead ring, under @lock. */
  GMutex lock;
  GCond cond;
  GstDatasetSrcSlot *slots;
  guint n_slots;
  guint64 submitted;
  guint64 emitted;
  gboolean flushing;
  GstTrainPool *pool; /* the data elements' shared threads */

  /* The shard mode's state (datasetsrc-shards.h), NULL in the other. */
  GstDatasetSrcShards *shards;
};

/* The mode of a location that names an ImageFolder or a list file
 * (datasetsrc-files.c). start lists the dataset and prepares the reads
 * from src->settings, posting an error and returning NULL when it cannot,
 * else the dataset tags to send; create hands out the next sample; stop
 * frees what start made (also after a failed start). */
GstTagList *gst_dataset_src_files_start (GstDatasetSrc *src);
GstFlowReturn gst_dataset_src_files_create (
    GstDatasetSrc *src, GstBuffer **buffer);
void gst_dataset_src_files_stop (GstDatasetSrc *src);

/* The mode of a location that names WebDataset shards
 * (datasetsrc-shards.c), the same three, and set_flushing, which ends a
 * wait for shard data at once (a flush, a stop). */
GstTagList *gst_dataset_src_shards_start (GstDatasetSrc *src);
GstFlowReturn gst_dataset_src_shards_create (
    GstDatasetSrc *src, GstBuffer **buffer);
void gst_dataset_src_shards_stop (GstDatasetSrc *src);
void gst_dataset_src_shards_set_flushing (
    GstDatasetSrc *src, gboolean flushing);

/* Both modes, before the first sample (datasetsrc-resume.c): asks downstream
 * where to start (a resuming sink answers with samples to pass over, counted
 * from start-position) and keeps in src->keep which of the samples before
 * its end it still holds; start-position alone when nobody answers.
 * Returns the place in the sequence to start at. */
guint64 gst_dataset_src_ask_resume (GstDatasetSrc *src);

/* Whether the sample at @place of the sequence is read (FALSE: a resume
 * passes over it unread; datasetsrc-resume.c). Called for every place from
 * the start on, in order. */
gboolean gst_dataset_src_wanted (GstDatasetSrc *src, guint64 place);

G_END_DECLS

#endif /* __GST_DATASET_SRC_PRIVATE_H__ */
