/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-pattern.h: which datasetsrc locations name WebDataset shards, and
 * the list of shards they name.
 *
 * A shard location is one or more items separated by white space, each a
 * local path or an http:// or https:// URL, with WebDataset's brace
 * patterns (those of Python's braceexpand): "{000000..000146}" counts
 * (zero-padded to the wider bound when either bound has a leading zero, an
 * optional third part is the step: "{0..10..2}"), "{a..e}" letters, and
 * "{train,val}" lists; several groups in one item give every combination,
 * groups may nest. GLib only, so that tests and tools use it alone. */
#ifndef __GST_TRAIN_SHARD_PATTERN_H__
#define __GST_TRAIN_SHARD_PATTERN_H__

#include <glib.h>

G_BEGIN_DECLS

/* Errors of the shard pieces (shard-pattern.c, shard-reader.c,
 * shard-fetch.c). */
#define GST_TRAIN_SHARD_ERROR (gst_train_shard_error_quark ())

typedef enum
{
  GST_TRAIN_SHARD_ERROR_LOCATION,    /* a location that names no shard */
  GST_TRAIN_SHARD_ERROR_NOT_FOUND,   /* a missing file, an HTTP 404 */
  GST_TRAIN_SHARD_ERROR_READ,        /* a read or a transfer that failed */
  GST_TRAIN_SHARD_ERROR_DAMAGED,     /* a truncated or garbled tar file */
  GST_TRAIN_SHARD_ERROR_UNSUPPORTED, /* HTTP in a build without libcurl */
  GST_TRAIN_SHARD_ERROR_CANCELLED,   /* a wait ended by a flush */
} GstTrainShardError;

GQuark gst_train_shard_error_quark (void);

/* Most shards one location may name: a mistyped range fails instead of
 * filling the memory. */
#define GST_TRAIN_SHARD_PATTERN_MAX (1 << 22)

/* Whether @location names shards rather than an ImageFolder or a list file:
 * some item of it is a URL, holds a brace pattern, or ends in ".tar". */
gboolean gst_train_shard_location_is_shards (const gchar *location);

/* Whether @shard is an http:// or https:// URL. */
gboolean gst_train_shard_is_url (const gchar *shard);

/* The shards @location names, in the order written (NULL-terminated; free
 * with g_strfreev()); NULL with @error set (GST_TRAIN_SHARD_ERROR_LOCATION)
 * on an unbalanced brace, a range whose bounds are not two numbers or two
 * letters, a zero step, or more than GST_TRAIN_SHARD_PATTERN_MAX names. */
gchar **gst_train_shard_pattern_expand (const gchar *location, GError **error);

/* The same with a limit of @max_names names of one's own (the fuzz
 * target's, so that an input stays cheap). */
gchar **gst_train_shard_pattern_expand_full (
    const gchar *location, guint max_names, GError **error);

G_END_DECLS

#endif /* __GST_TRAIN_SHARD_PATTERN_H__ */
