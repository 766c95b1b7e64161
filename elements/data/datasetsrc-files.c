/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* datasetsrc-files.c: datasetsrc's mode for an ImageFolder or a list file
 * (see gstdatasetsrc.c's SECTION): the dataset listed once, each epoch's
 * order drawn from the seed, this rank's part of it, a start position
 * (exact resume), and the files read ahead on the data elements' shared
 * pool, handed out in order. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "datasetsrc-private.h"
#include "dataset-index.h"
#include "gt-random.h"
#include "train-pool.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct _GstDatasetSrcFiles GstDatasetSrcFiles;

/* One read-ahead slot: a sample handed to a reader thread and its result. */
typedef struct
{
  GstTrainTask task; /* first: the pool hands it back */
  GstDatasetSrcFiles *files;
  guint64 sample;
  gint epoch;
  gboolean done;
  GstBuffer *buffer;
  gchar *error;
} GstDatasetSrcSlot;

/* What the reads of an epoch came to, so that an epoch of which no sample
 * could be read (every path of a list file wrong, say) is an error rather
 * than a warning per file and an empty stream. Streaming thread only. */
typedef struct
{
  gint epoch;    /* of the samples counted; -1 before the first */
  guint64 tried; /* samples of that epoch handed out or found unreadable */
  guint64 read;
  gchar *first_path; /* the epoch's first sample that could not be read */
  gchar *first_error;
} GstDatasetSrcEpochReads;

/* The mode's state, src->mode_state from start to stop. */
struct _GstDatasetSrcFiles
{
  GstTrainDatasetIndex *index;
  guint64 epoch_samples; /* of this rank */

  /* Which sample the next submitted read is for (streaming thread only). */
  gint cursor_epoch;
  guint64 cursor_pos;
  guint64 *cursor_order;
  gboolean cursor_done;

  /* The read-ahead ring, under @lock. */
  GMutex lock;
  GCond cond;
  GstDatasetSrcSlot *slots;
  guint n_slots;
  guint64 submitted;
  guint64 taken; /* reads taken out of the ring, in order */
  gboolean flushing;
  GstTrainPool *pool; /* the data elements' shared threads */

  GstDatasetSrcEpochReads reads;
};

static void gst_dataset_src_read_sample (
    GstDatasetSrcSlot *slot, GstDatasetSrcFiles *files);
static void gst_dataset_src_read_task (GstTrainTask *task);

/* Ends the count of the epoch counted: FALSE, with an error posted, when
 * none of its samples could be read. The error names the first path tried
 * and, for a list file, the folder its paths are relative to. */
static gboolean
gst_dataset_src_epoch_readable (GstDatasetSrc *src)
{
  GstDatasetSrcFiles *files = src->mode_state;
  GstDatasetSrcEpochReads *reads = &files->reads;
  const gchar *location = src->settings.location;
  gchar *dir, *folder, *where;

  if (reads->epoch < 0 || reads->tried == 0 || reads->read)
    return TRUE;
  if (g_file_test (location, G_FILE_TEST_IS_REGULAR)) {
    dir = g_path_get_dirname (location);
    folder = g_canonicalize_filename (dir, NULL);
    where = g_strdup_printf (" The paths in list file \"%s\" are relative to "
                             "its folder, \"%s\" (absolute paths are taken "
                             "as they are).",
        location, folder);
    g_free (folder);
    g_free (dir);
  } else {
    where = g_strdup ("");
  }
  GST_ELEMENT_ERROR (src, RESOURCE, READ,
      ("None of the %" G_GUINT64_FORMAT " samples of epoch %d could be read; "
       "the first tried, \"%s\": %s.%s",
          reads->tried, reads->epoch, reads->first_path, reads->first_error,
          where),
      (NULL));
  g_free (where);
  reads->tried = 0; /* said once */
  return FALSE;
}

/* Counts a sample of @epoch handed out (@path read) or not (@error); FALSE,
 * with an error posted, when it is the first of an epoch and the epoch
 * before it had no sample that could be read. */
static gboolean
gst_dataset_src_count_read (
    GstDatasetSrc *src, gint epoch, const gchar *path, const gchar *error)
{
  GstDatasetSrcFiles *files = src->mode_state;
  GstDatasetSrcEpochReads *reads = &files->reads;

  if (epoch != reads->epoch) {
    if (!gst_dataset_src_epoch_readable (src))
      return FALSE;
    reads->epoch = epoch;
    reads->tried = reads->read = 0;
    g_clear_pointer (&reads->first_path, g_free);
    g_clear_pointer (&reads->first_error, g_free);
  }
  reads->tried++;
  if (error == NULL) {
    reads->read++;
  } else if (reads->first_path == NULL) {
    reads->first_path = g_strdup (path);
    reads->first_error = g_strdup (error);
  }
  return TRUE;
}

/* Samples that one epoch of this rank emits. */
static guint64
gst_dataset_src_count_epoch_samples (
    guint64 dataset_size, guint rank, guint num_ranks, guint64 num_samples)
{
  guint64 count = 0;

  if (rank < dataset_size)
    count = (dataset_size - rank + num_ranks - 1) / num_ranks;
  if (num_samples > 0 && num_samples < count)
    count = num_samples;
  return count;
}

/* The dataset tags: classes, sizes, the rank's part read. */
static GstTagList *
gst_dataset_src_files_tags (GstDatasetSrc *src)
{
  GstDatasetSrcFiles *files = src->mode_state;
  GstTrainDatasetIndex *index = files->index;
  GstTrainDatasetInfo info;
  GstTagList *tags;

  info.num_classes = index->class_names->len;
  g_ptr_array_add (index->class_names, NULL);
  info.class_names = (gchar **)index->class_names->pdata;
  info.num_samples = index->entries->len;
  info.epoch_samples = files->epoch_samples;
  info.shard_index = src->settings.rank;
  info.num_shards = src->settings.num_ranks;
  tags = gst_train_dataset_info_to_tag_list (&info);
  g_ptr_array_remove_index (index->class_names, index->class_names->len - 1);
  return tags;
}

/* num-samples with shuffle=false takes the same first samples every epoch,
 * in dataset order, which in an ImageFolder is class by class: a warning
 * when they miss classes that the dataset holds. */
static void
gst_dataset_src_warn_class_subset (GstDatasetSrc *src)
{
  const GstDatasetSrcSettings *s = &src->settings;
  GstDatasetSrcFiles *files = src->mode_state;
  const GstTrainDatasetIndex *index = files->index;
  guint num_classes = index->class_names->len, held = 0, taken = 0, i;
  guint8 *in_dataset, *in_subset;
  gboolean list_file = g_file_test (s->location, G_FILE_TEST_IS_REGULAR);
  guint64 n, pos, whole;
  GString *names;

  whole = gst_dataset_src_count_epoch_samples (
      index->entries->len, s->rank, s->num_ranks, 0);
  if (s->shuffle || s->num_samples == 0 || files->epoch_samples >= whole)
    return;
  in_dataset = g_new0 (guint8, num_classes);
  in_subset = g_new0 (guint8, num_classes);
  for (n = 0; n < index->entries->len; n++)
    in_dataset[g_array_index (index->entries, GstTrainDatasetEntry, n).label] =
        1;
  for (n = 0, pos = s->rank; n < files->epoch_samples; n++, pos += s->num_ranks)
    in_subset[g_array_index (index->entries, GstTrainDatasetEntry, pos).label] =
        1;
  names = g_string_new (NULL);
  for (i = 0; i < num_classes; i++) {
    held += in_dataset[i];
    if (!in_subset[i])
      continue;
    if (taken < 6)
      g_string_append_printf (names, "%s%s", taken ? ", " : "",
          (const gchar *)g_ptr_array_index (index->class_names, i));
    else if (taken == 6)
      g_string_append (names, ", ...");
    taken++;
  }
  if (taken < held)
    GST_ELEMENT_WARNING (src, RESOURCE, SETTINGS,
        ("num-samples=%" G_GUINT64_FORMAT " with shuffle=false takes the "
         "first %" G_GUINT64_FORMAT " samples in dataset order, the same every "
         "epoch, and %s: they come from %s%u of the %u classes only (%s). "
         "Set shuffle=true for a random subset of every class, a new one "
         "each epoch.",
            s->num_samples, files->epoch_samples,
            list_file ? "that is the list file's order"
                      : "an ImageFolder's order is class by class",
            list_file ? "" : "the first ", taken, held, names->str),
        (NULL));
  g_string_free (names, TRUE);
  g_free (in_subset);
  g_free (in_dataset);
}

static GstTagList *
gst_dataset_src_files_start (GstDatasetSrc *src)
{
  const GstDatasetSrcSettings *s = &src->settings;
  GstDatasetSrcFiles *files;
  GstTrainDatasetIndex *index;
  GError *error = NULL;
  gchar **extensions;
  guint64 epoch_samples;
  guint i;

  extensions = gst_train_dataset_parse_extensions (s->extensions);
  index = gst_train_dataset_index_load (
      s->location, (const gchar *const *)extensions, &error);
  g_strfreev (extensions);
  if (index == NULL) {
    if (g_error_matches (
            error, GST_TRAIN_DATASET_ERROR, GST_TRAIN_DATASET_ERROR_NOT_FOUND))
      GST_ELEMENT_ERROR (
          src, RESOURCE, NOT_FOUND, ("%s", error->message), (NULL));
    else if (g_error_matches (error, GST_TRAIN_DATASET_ERROR,
                 GST_TRAIN_DATASET_ERROR_UNREADABLE))
      GST_ELEMENT_ERROR (
          src, RESOURCE, OPEN_READ, ("%s", error->message), (NULL));
    else
      GST_ELEMENT_ERROR (src, RESOURCE, FAILED, ("%s", error->message), (NULL));
    g_error_free (error);
    return NULL;
  }

  for (i = 0; i < index->empty_classes->len; i++)
    GST_ELEMENT_WARNING (src, RESOURCE, NOT_FOUND,
        ("Class folder \"%s\" in \"%s\" holds no image; its label stays "
         "reserved.",
            (gchar *)g_ptr_array_index (index->empty_classes, i), s->location),
        (NULL));

  if (s->num_classes != 0 && s->num_classes != index->class_names->len) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS,
        ("num-classes is %u, but \"%s\" holds %u classes.", s->num_classes,
            s->location, index->class_names->len),
        ("set num-classes=0 to take what the dataset holds"));
    gst_train_dataset_index_free (index);
    return NULL;
  }
  epoch_samples = gst_dataset_src_count_epoch_samples (
      index->entries->len, s->rank, s->num_ranks, s->num_samples);
  if (epoch_samples == 0) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS,
        ("Rank %u of %u (rank, num-ranks) gets no sample of the %u "
         "in \"%s\".",
            s->rank, s->num_ranks, index->entries->len, s->location),
        (NULL));
    gst_train_dataset_index_free (index);
    return NULL;
  }

  GST_OBJECT_LOCK (src);
  src->num_classes = index->class_names->len;
  src->dataset_size = index->entries->len;
  gst_train_bad_samples_reset (&src->bad);
  GST_OBJECT_UNLOCK (src);

  files = g_new0 (GstDatasetSrcFiles, 1);
  g_mutex_init (&files->lock);
  g_cond_init (&files->cond);
  src->mode_state = files;
  files->index = index;
  files->epoch_samples = epoch_samples;
  gst_dataset_src_warn_class_subset (src);
  files->reads.epoch = -1;
  GST_INFO_OBJECT (src,
      "%u samples in %u classes from %s, %" G_GUINT64_FORMAT " per epoch",
      index->entries->len, index->class_names->len, s->location,
      files->epoch_samples);

  files->cursor_epoch = -1;
  files->cursor_pos = 0;
  files->cursor_order = NULL;
  files->cursor_done = FALSE;
  files->n_slots = s->n_threads > 0 ? s->read_ahead : 1;
  files->slots = g_new0 (GstDatasetSrcSlot, files->n_slots);
  files->submitted = 0;
  files->taken = 0;
  files->flushing = FALSE;
  for (i = 0; i < files->n_slots; i++) {
    files->slots[i].task.func = gst_dataset_src_read_task;
    files->slots[i].files = files;
  }
  files->pool = s->n_threads == 0 ? NULL : gst_train_pool_get ();

  return gst_dataset_src_files_tags (src);
}

static void
gst_dataset_src_files_stop (GstDatasetSrc *src)
{
  GstDatasetSrcFiles *files = src->mode_state;
  guint i;

  if (files == NULL)
    return; /* a start that failed before it made anything */
  if (files->pool != NULL) {
    /* Reads already running finish; queued ones are dropped. */
    for (i = 0; i < files->n_slots; i++)
      gst_train_pool_cancel (files->pool, &files->slots[i].task);
    g_clear_pointer (&files->pool, gst_train_pool_unref);
  }
  for (i = 0; i < files->n_slots; i++) {
    gst_clear_buffer (&files->slots[i].buffer);
    g_clear_pointer (&files->slots[i].error, g_free);
  }
  g_free (files->slots);
  g_free (files->cursor_order);
  gst_train_dataset_index_free (files->index);
  g_free (files->reads.first_path);
  g_free (files->reads.first_error);
  g_mutex_clear (&files->lock);
  g_cond_clear (&files->cond);
  g_free (files);
  src->mode_state = NULL;
}

static void
gst_dataset_src_files_set_flushing (GstDatasetSrc *src, gboolean flushing)
{
  GstDatasetSrcFiles *files = src->mode_state;

  if (files == NULL)
    return;
  g_mutex_lock (&files->lock);
  files->flushing = flushing;
  g_cond_broadcast (&files->cond);
  g_mutex_unlock (&files->lock);
}

/* Moves the cursor into epoch @epoch: draws that epoch's order and keeps
 * this rank's part of it. */
static void
gst_dataset_src_enter_epoch (GstDatasetSrc *src, gint epoch)
{
  const GstDatasetSrcSettings *s = &src->settings;
  GstDatasetSrcFiles *files = src->mode_state;
  guint64 n = files->index->entries->len, i, pos;
  guint64 *order = g_new (guint64, n);

  for (i = 0; i < n; i++)
    order[i] = i;
  if (s->shuffle) {
    GtRandom rng;

    gt_random_init (&rng, s->seed, (guint64)epoch);
    gt_random_shuffle (&rng, order, n);
  }
  /* Every rank draws the same order; rank k keeps positions k, k + N, ... */
  for (i = 0, pos = s->rank; i < files->epoch_samples; i++, pos += s->num_ranks)
    order[i] = order[pos];

  g_free (files->cursor_order);
  files->cursor_order = order;
  files->cursor_epoch = epoch;
  files->cursor_pos = 0;
  GST_DEBUG_OBJECT (src, "epoch %d: %" G_GUINT64_FORMAT " samples, %s", epoch,
      files->epoch_samples, s->shuffle ? "shuffled" : "in dataset order");
}

/* Before the first read: takes the start (start-position plus the resume
 * query's answer) and moves the cursor there without reading anything
 * before it. Streaming thread, without @lock. */
static GstFlowReturn
gst_dataset_src_files_position (GstDatasetSrc *src)
{
  GstDatasetSrcFiles *files = src->mode_state;
  guint64 start = gst_dataset_src_ask_resume (src), epoch;
  gint num_epochs = src->settings.num_epochs;

  if (start == 0)
    return GST_FLOW_OK;

  epoch = start / files->epoch_samples;
  if (epoch > G_MAXINT || (num_epochs >= 0 && epoch >= (guint64)num_epochs)) {
    GST_INFO_OBJECT (src,
        "start at sample %" G_GUINT64_FORMAT " is past the last epoch: EOS",
        start);
    files->cursor_done = TRUE;
    return GST_FLOW_OK;
  }
  gst_dataset_src_enter_epoch (src, (gint)epoch);
  files->cursor_pos = start % files->epoch_samples;
  GST_INFO_OBJECT (src,
      "starting at sample %" G_GUINT64_FORMAT " of epoch %" G_GUINT64_FORMAT,
      files->cursor_pos, epoch);
  return GST_FLOW_OK;
}

/* Hands reads to the pool until the ring is full or the last epoch is
 * submitted. Called with @lock held, from the streaming thread. */
static void
gst_dataset_src_refill (GstDatasetSrc *src)
{
  GstDatasetSrcFiles *files = src->mode_state;
  gint num_epochs = src->settings.num_epochs;

  while (
      !files->cursor_done && files->submitted - files->taken < files->n_slots) {
    GstDatasetSrcSlot *slot;

    if (files->cursor_epoch < 0 || files->cursor_pos >= files->epoch_samples) {
      gint next_epoch = files->cursor_epoch + 1;

      if ((num_epochs >= 0 && next_epoch >= num_epochs) || next_epoch < 0) {
        files->cursor_done = TRUE;
        break;
      }
      gst_dataset_src_enter_epoch (src, next_epoch);
    }
    if (!gst_dataset_src_wanted (src,
            (guint64)files->cursor_epoch * files->epoch_samples
                + files->cursor_pos)) {
      /* a resume re-reads only what downstream held */
      files->cursor_pos++;
      continue;
    }

    slot = &files->slots[files->submitted % files->n_slots];
    slot->sample = files->cursor_order[files->cursor_pos++];
    slot->epoch = files->cursor_epoch;
    slot->done = FALSE;
    files->submitted++;
    if (files->pool != NULL) {
      gst_train_pool_push (files->pool, &slot->task);
    } else {
      /* Page-cached files on a busy core: a thread hand-off per sample costs
       * more than the read. */
      g_mutex_unlock (&files->lock);
      gst_dataset_src_read_sample (slot, files);
      g_mutex_lock (&files->lock);
    }
  }
}

/* Reads the whole of @path; NULL with @error set (naming the cause). */
static GstBuffer *
gst_dataset_src_read_file (const gchar *path, gchar **error)
{
  struct stat st;
  guint8 *data;
  gsize size, done = 0;
  int fd;

  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = g_strdup (g_strerror (errno));
    return NULL;
  }
  if (fstat (fd, &st) != 0) {
    *error = g_strdup (g_strerror (errno));
    close (fd);
    return NULL;
  }
  if (!S_ISREG (st.st_mode)) {
    *error = g_strdup ("not a regular file");
    close (fd);
    return NULL;
  }
  size = st.st_size;
  data = g_malloc (size > 0 ? size : 1);
  while (done < size) {
    ssize_t got = read (fd, data + done, size - done);

    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      *error = g_strdup (g_strerror (errno));
      g_free (data);
      close (fd);
      return NULL;
    }
    if (got == 0)
      break; /* the file shrank while we read it */
    done += got;
  }
  close (fd);
  return gst_buffer_new_wrapped (data, done);
}

static void
gst_dataset_src_read_task (GstTrainTask *task)
{
  GstDatasetSrcSlot *slot = (GstDatasetSrcSlot *)task;

  gst_dataset_src_read_sample (slot, slot->files);
}

/* A reader thread: fills one slot. */
static void
gst_dataset_src_read_sample (GstDatasetSrcSlot *slot, GstDatasetSrcFiles *files)
{
  const GstTrainDatasetEntry *entry = &g_array_index (
      files->index->entries, GstTrainDatasetEntry, slot->sample);
  gchar *error = NULL;
  GstBuffer *buffer;

  buffer = gst_dataset_src_read_file (entry->path, &error);
  if (buffer != NULL) {
    gst_buffer_add_train_sample_meta (
        buffer, entry->label, slot->sample, slot->epoch, entry->path);
    GST_BUFFER_OFFSET (buffer) = slot->sample;
  }

  g_mutex_lock (&files->lock);
  slot->buffer = buffer;
  slot->error = error;
  slot->done = TRUE;
  g_cond_broadcast (&files->cond);
  g_mutex_unlock (&files->lock);
}

static GstFlowReturn
gst_dataset_src_files_create (GstDatasetSrc *src, GstBuffer **out)
{
  GstDatasetSrcFiles *files = src->mode_state;

  g_mutex_lock (&files->lock);
  for (;;) {
    GstDatasetSrcSlot *slot;
    GstBuffer *buffer;
    gchar *error;
    guint64 sample;
    gint epoch;
    const gchar *path;
    GstFlowReturn ret;

    gst_dataset_src_refill (src);
    if (files->taken == files->submitted) {
      g_mutex_unlock (&files->lock);
      /* the last epoch, too, must have had a sample that could be read */
      if (!gst_dataset_src_epoch_readable (src))
        return GST_FLOW_ERROR;
      GST_DEBUG_OBJECT (src, "all epochs read, EOS");
      return GST_FLOW_EOS;
    }

    slot = &files->slots[files->taken % files->n_slots];
    while (!slot->done && !files->flushing) {
      if (files->pool == NULL) {
        g_cond_wait (&files->cond, &files->lock);
        continue;
      }
      /* Reads (or other elements' work) in this thread while it waits. */
      g_mutex_unlock (&files->lock);
      gst_train_pool_wait (files->pool, &slot->task);
      g_mutex_lock (&files->lock);
    }
    if (files->flushing) {
      g_mutex_unlock (&files->lock);
      return GST_FLOW_FLUSHING;
    }

    buffer = slot->buffer;
    error = slot->error;
    sample = slot->sample;
    epoch = slot->epoch;
    slot->buffer = NULL;
    slot->error = NULL;
    slot->done = FALSE;
    files->taken++;
    src->emitted++;
    path = g_array_index (files->index->entries, GstTrainDatasetEntry, sample)
               .path;

    /* the epoch before this sample's may have had none that could be read */
    if (!gst_dataset_src_count_read (src, epoch, path, error)) {
      g_mutex_unlock (&files->lock);
      gst_clear_buffer (&buffer);
      g_free (error);
      return GST_FLOW_ERROR;
    }
    if (buffer != NULL) {
      gst_dataset_src_refill (src);
      g_mutex_unlock (&files->lock);
      GST_LOG_OBJECT (src,
          "sample %" G_GUINT64_FORMAT " (%s), %" G_GSIZE_FORMAT " bytes",
          sample,
          g_array_index (files->index->entries, GstTrainDatasetEntry, sample)
              .path,
          gst_buffer_get_size (buffer));
      *out = buffer;
      return GST_FLOW_OK;
    }

    g_mutex_unlock (&files->lock);
    ret = gst_train_report_bad_sample (src, &src->bad, path, GST_RESOURCE_ERROR,
        GST_RESOURCE_ERROR_READ, "read",
        g_strdup_printf ("Could not read sample %" G_GUINT64_FORMAT
                         " from \"%s\": %s.",
            sample, path, error),
        g_strdup_printf ("Skipping sample %" G_GUINT64_FORMAT
                         ": could not read \"%s\": %s.",
            sample, path, error));
    g_free (error);
    if (ret != GST_FLOW_OK)
      return ret;
    g_mutex_lock (&files->lock);
  }
}

const GstDatasetSrcModeFuncs gst_dataset_src_files_mode = {
  "files",
  NULL, /* any location that no other mode takes */
  gst_dataset_src_files_start,
  gst_dataset_src_files_stop,
  gst_dataset_src_files_position,
  gst_dataset_src_files_create,
  gst_dataset_src_files_set_flushing,
};
