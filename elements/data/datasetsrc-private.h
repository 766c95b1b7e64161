/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* datasetsrc-private.h: the datasetsrc element's insides, shared by its
 * files.
 *
 * gstdatasetsrc.c owns the element: properties, documentation, state
 * changes, the dataset tags. It hands the reading to the mode that the
 * location asks for, through a GstDatasetSrcModeFuncs table:
 * datasetsrc-files.c (an ImageFolder or a list file, one file per sample,
 * read ahead on the shared pool) or datasetsrc-shards.c (WebDataset shards,
 * local or over HTTP). Each mode keeps its state in a struct of its own,
 * out of the element's, so that another kind of location is another table
 * and another file, not another branch in each of the element's functions.
 * Calls go that way only: gstdatasetsrc.c to the mode files, and they to
 * the pieces below them (datasetsrc-resume.c, the exact resume both take;
 * dataset-index.c, train-pool.c, train-common.c, shard-*.c). */
#ifndef __GST_DATASET_SRC_PRIVATE_H__
#define __GST_DATASET_SRC_PRIVATE_H__

#include "gstdatasetsrc.h"
#include "train-common.h"
#include "train-meta.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_dataset_src_debug);
#define GST_CAT_DEFAULT gst_dataset_src_debug

/* The properties as they were when the element started; on-error, which
 * may change while it plays, lives in GstTrainBadSamples. */
typedef struct
{
  gchar *location;
  gboolean shuffle;
  guint64 seed;
  gint num_epochs;
  guint rank;
  guint num_ranks;
  guint64 num_samples;
  guint n_threads;
  guint read_ahead;
  gchar *extensions;
  guint64 start_position;
  /* rank or num-ranks (or an alias) was set: the launcher's rank is not
   * used */
  gboolean rank_set;
  /* shards only */
  guint num_classes;
  guint shuffle_buffer_size;
  guint fetch_ahead;
  gboolean interleave;
  guint retries;
} GstDatasetSrcSettings;

/* What a mode does with the reading. gstdatasetsrc.c calls these and
 * nothing else of a mode; every hook is set. */
typedef struct
{
  const gchar *name; /* in the log */
  /* Whether @location is this mode's; NULL: any location (the last mode
   * gstdatasetsrc.c tries). */
  gboolean (*takes) (const gchar *location);
  /* Lists the dataset and prepares the reads from src->settings, keeping
   * what it makes in src->mode_state; posts an error and returns NULL when
   * it cannot, else the dataset tags to send. */
  GstTagList *(*start) (GstDatasetSrc *src);
  /* Frees what start made, also after a failed start, and sets
   * src->mode_state to NULL. */
  void (*stop) (GstDatasetSrc *src);
  /* Before the first sample (once): where to start, from
   * gst_dataset_src_ask_resume(), and there without reading what comes
   * before it. */
  GstFlowReturn (*position) (GstDatasetSrc *src);
  /* The next sample, GST_FLOW_EOS after the last. */
  GstFlowReturn (*create) (GstDatasetSrc *src, GstBuffer **buffer);
  /* With @flushing TRUE, a wait of create for data ends at once (a flush,
   * a stop) until it is called with FALSE. Any thread, from start to stop,
   * so also while src->mode_state is still NULL. */
  void (*set_flushing) (GstDatasetSrc *src, gboolean flushing);
} GstDatasetSrcModeFuncs;

/* datasetsrc-files.c: a folder or a list file, whatever no other mode
 * takes. */
extern const GstDatasetSrcModeFuncs gst_dataset_src_files_mode;
/* datasetsrc-shards.c: WebDataset shards (shard-pattern.h says which
 * locations are). */
extern const GstDatasetSrcModeFuncs gst_dataset_src_shards_mode;

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
  const GstDatasetSrcModeFuncs *mode; /* NULL while stopped */
  gpointer mode_state;                /* the mode's own, from its start */

  /* Streaming thread only. */
  gboolean positioned; /* the start position is taken (first create) */
  guint64 emitted;     /* samples handed out or skipped, both modes */

  /* Every mode: a resume wants only these positions of the sequence before
   * @keep_end (sorted; NULL: all). Streaming thread only. */
  guint64 *keep;
  guint n_keep, next_keep;
  guint64 keep_end;
};

/* Every mode, before the first sample (datasetsrc-resume.c): asks downstream
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
