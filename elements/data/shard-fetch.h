/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-fetch.h: the bytes of shards, from local files or over HTTP.
 *
 * A fetcher opens shards as streams that shard readers (shard-reader.h)
 * read front to back, several at once if the caller likes, and reads
 * single byte ranges (the samples an exact resume brings back). Each
 * shard is read by a transfer on a thread of its own into a bounded queue
 * of chunks that its stream takes from, and the shards the caller names
 * as the next ones (@fetch_ahead of them at most) are read while the open
 * ones are: local shards with large sequential read()s, http:// and
 * https:// shards through libcurl, where a transfer that breaks (a
 * connection refused, reset or cut short, a time-out, an HTTP 5xx) starts
 * again after a pause that doubles each time, from the byte it had reached
 * (a Range request), @retries times in a row before the stream fails with
 * an error that names the URL and the cause. A 4xx answer fails at once
 * (404: GST_TRAIN_SHARD_ERROR_NOT_FOUND).
 *
 * The transfer threads are not the data elements' pool (train-pool.h) and
 * do not count in its thread budget: they wait on a socket or a disk, not
 * the CPU, for a whole shard each, which would hold a pool worker idle.
 *
 * GLib and libcurl, and of GStreamer only its debug log: the category
 * datasetsrc-fetch at level 5 (DEBUG; the retries are at INFO) shows every
 * request (URL, byte range) and what it came to, every retry with its
 * cause and the pause before it, and the end of the retries. */
#ifndef __GST_TRAIN_SHARD_FETCH_H__
#define __GST_TRAIN_SHARD_FETCH_H__

#include <glib.h>

#include "shard-reader.h"

G_BEGIN_DECLS

typedef struct
{
  guint fetch_ahead; /* shards fetched while the current one is read */
  guint retries;     /* new attempts of a broken transfer, in a row */
  guint backoff_ms;  /* the first pause before one, doubled each time */
} GstTrainShardFetchOptions;

typedef struct _GstTrainShardFetcher GstTrainShardFetcher;
typedef struct _GstTrainShardStream GstTrainShardStream;

/* Whether this build can fetch over HTTP (built with libcurl). */
gboolean gst_train_shard_fetch_has_http (void);

GstTrainShardFetcher *gst_train_shard_fetcher_new (
    const GstTrainShardFetchOptions *options);

/* Stops every transfer and frees the fetcher; streams must be closed. */
void gst_train_shard_fetcher_free (GstTrainShardFetcher *fetcher);

/* Checks, before reading, that a local @shard is a readable regular file
 * (a URL is checked when it is fetched). */
gboolean gst_train_shard_fetcher_check (
    GstTrainShardFetcher *fetcher, const gchar *shard, GError **error);

/* Opens @shard at byte @offset; @next (NULL-terminated, or NULL) are the
 * shards that will be opened after the open ones, in order: the first
 * fetch_ahead of them are fetched now, other transfers that no open stream
 * reads are dropped. With @skimming (the caller passes over most bytes: a
 * count of the samples) a local shard is read in place, with seeks,
 * instead of ahead. */
GstTrainShardStream *gst_train_shard_fetcher_open (
    GstTrainShardFetcher *fetcher, const gchar *shard, guint64 offset,
    const gchar *const *next, gboolean skimming, GError **error);

/* Fetches the first fetch_ahead shards of @next (NULL-terminated, or
 * NULL) ahead, as gst_train_shard_fetcher_open() does, without opening
 * one: for the shards that follow once the open ones end. Transfers that
 * no stream reads and @next does not name are dropped. */
void gst_train_shard_fetcher_fetch_ahead (
    GstTrainShardFetcher *fetcher, const gchar *const *next);

/* The source funcs of a stream (a shard reader's source is the stream). */
extern const GstTrainShardSourceFuncs gst_train_shard_stream_funcs;

void gst_train_shard_stream_close (GstTrainShardStream *stream);

/* The @size bytes at @offset of @shard, g_malloc()ed; NULL with @error
 * set, GST_TRAIN_SHARD_ERROR_DAMAGED when the shard is shorter. */
guint8 *gst_train_shard_fetcher_read_range (GstTrainShardFetcher *fetcher,
    const gchar *shard, guint64 offset, gsize size, GError **error);

/* With @flushing TRUE every wait for data ends at once with
 * GST_TRAIN_SHARD_ERROR_CANCELLED, until it is set FALSE again (a flush,
 * a stop). Any thread. */
void gst_train_shard_fetcher_set_flushing (
    GstTrainShardFetcher *fetcher, gboolean flushing);

G_END_DECLS

#endif /* __GST_TRAIN_SHARD_FETCH_H__ */
