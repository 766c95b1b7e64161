/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-reader.h: the samples of one WebDataset shard, a tar file read
 * front to back.
 *
 * A sample is the run of consecutive members that share a key: the member's
 * path up to the first dot of its file name ("train/000012.jpg" and
 * "train/000012.cls" are the sample "train/000012"), as WebDataset's
 * group_by_keys cuts them; the extension, after that dot, is compared in
 * lower case. The image is the "jpg" or "jpeg" member, the label the "cls"
 * member (a decimal number); other members are passed over unread, and so
 * are directories, links, members whose name has no dot, and the PAX and
 * GNU headers that carry long names (whose names they apply). Reads are
 * sequential, through a source that the caller provides (a file, an HTTP
 * transfer, a buffer), so that a shard is never held whole in memory.
 *
 * Damage (a header whose checksum is wrong, a file that ends inside a
 * header or a member) ends the shard: the samples before it come out, then
 * one error that names the byte offset. GLib only: the fuzz target
 * (tests/fuzz/fuzz-shard.c) runs this very code. */
#ifndef __GST_TRAIN_SHARD_READER_H__
#define __GST_TRAIN_SHARD_READER_H__

#include <glib.h>

#include "shard-pattern.h"

G_BEGIN_DECLS

/* Where a reader's bytes come from. */
typedef struct
{
  /* Reads up to @size bytes into @data: how many, 0 at the end of the
   * shard, -1 with @error set. */
  gssize (*read) (gpointer source, guint8 *data, gsize size, GError **error);
  /* Passes over @size bytes without reading them: how many (fewer at the
   * end of the shard), -1 with @error set. NULL: they are read and
   * dropped. */
  gint64 (*skip) (gpointer source, guint64 size, GError **error);
} GstTrainShardSourceFuncs;

typedef enum
{
  GST_TRAIN_SHARD_LABEL_OK,
  GST_TRAIN_SHARD_LABEL_MISSING,      /* no "cls" member */
  GST_TRAIN_SHARD_LABEL_NOT_A_NUMBER, /* a "cls" that is not a decimal */
} GstTrainShardLabelStatus;

/* Labels longer than this are not numbers. */
#define GST_TRAIN_SHARD_MAX_LABEL_TEXT 64

/* One sample of a shard, filled by gst_train_shard_reader_next(). */
typedef struct
{
  gchar *key;
  /* its place among the shard's samples (from 0, every key counted, bad
   * ones too), and the offset of its first member's header (of the PAX or
   * GNU header before it, if any): a reader started there reads it */
  guint64 ordinal;
  guint64 offset;
  /* the image member ("jpg" or "jpeg"): its name (NULL when the sample
   * has none), the offset and size of its data, and the data itself
   * (g_malloc()ed; NULL when the reader passes over images) */
  gchar *image_member;
  guint64 image_offset;
  guint64 image_size;
  guint8 *image;
  GstTrainShardLabelStatus label_status;
  gint64 label;                                         /* when OK */
  gchar label_text[GST_TRAIN_SHARD_MAX_LABEL_TEXT + 1]; /* for messages */
} GstTrainShardSample;

typedef struct _GstTrainShardReader GstTrainShardReader;

/* A reader of the shard that @funcs read from @source, which stands at
 * byte @offset of the shard, a header where sample @ordinal begins (0, 0:
 * the start). With @read_images FALSE the image members are passed over
 * (their offset and size still given): for counting the samples. */
GstTrainShardReader *gst_train_shard_reader_new (
    const GstTrainShardSourceFuncs *funcs, gpointer source, guint64 offset,
    guint64 ordinal, gboolean read_images);

void gst_train_shard_reader_free (GstTrainShardReader *reader);

/* The next sample into @sample (cleared first): 1 when there is one, 0 at
 * the end of the shard, -1 with @error set: GST_TRAIN_SHARD_ERROR_DAMAGED
 * (the message says what is wrong and at which byte), or the source's
 * error. After 0 or -1 every call returns the same. */
gint gst_train_shard_reader_next (
    GstTrainShardReader *reader, GstTrainShardSample *sample, GError **error);

/* Frees what @sample holds and zeroes it. */
void gst_train_shard_sample_clear (GstTrainShardSample *sample);

/* Passes over @size bytes of a source that cannot seek (a pipe, HTTP) by
 * reading them through @funcs->read and dropping them: how many, fewer at
 * the end of the shard, -1 with @error set. For a skip function. */
gint64 gst_train_shard_read_over (const GstTrainShardSourceFuncs *funcs,
    gpointer source, guint64 size, GError **error);

/* The source funcs of a file descriptor (@source: GINT_TO_POINTER (fd)):
 * read() and, for a regular file, lseek() within its size. */
extern const GstTrainShardSourceFuncs gst_train_shard_fd_funcs;

G_END_DECLS

#endif /* __GST_TRAIN_SHARD_READER_H__ */
