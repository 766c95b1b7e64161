/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-fetch.c: shard bytes from files, or over HTTP with libcurl (see
 * shard-fetch.h). */
#include "shard-fetch.h"
#include "shard-pattern.h"

#include <gst/gst.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef GST_TRAIN_HAVE_CURL
#include <curl/curl.h>
#endif

/* Every request with its URL and byte range, what it came to, and every
 * retry with its cause and the pause before it: without them a transfer
 * that fails and recovers is silent until the error at the end of its
 * retries. Registered with the first fetcher. */
GST_DEBUG_CATEGORY_STATIC (shard_fetch_debug);
#define GST_CAT_DEFAULT shard_fetch_debug

/* What one transfer may hold that its stream has not taken yet: bounded,
 * so that shards fetched ahead cost memory in proportion to their number,
 * not their size (a transfer that waits for room pauses the connection). */
#define MAX_QUEUED (32 * 1024 * 1024)

/* A local shard's reads: large enough that a disk or a network file system
 * streams (hundreds of KiB per request), small against MAX_QUEUED so that
 * the stream gets its first bytes early. */
#define FILE_CHUNK (512 * 1024)

/* The pause before the n-th retry in a row is the first pause times 2^n,
 * with n at most this: with a first pause of 0.2 s that is a wait of 3.6
 * hours, past any use, and the shift cannot overflow however many retries
 * are asked for. */
#define MAX_BACKOFF_DOUBLINGS 16

/* A connection that is not up after this long is a failed attempt, retried:
 * far above a round trip to any real server, short enough that a host that
 * drops packets costs seconds, not curl's default of five minutes. */
#define CONNECT_TIMEOUT_S 10L

/* A server that sends nothing for this long is a broken connection. Not
 * less: while a transfer waits for room in its queue (its reader is slower
 * than the network) nothing is received either, and that is no stall. */
#define STALL_TIMEOUT_S 60L

/* One HTTP transfer of a shard, from @offset to @end (exclusive;
 * G_MAXUINT64: the end of the shard), on a thread of its own. Everything
 * but the thread's own curl handle is under the fetcher's lock. */
typedef struct
{
  GstTrainShardFetcher *fetcher;
  gchar *url;
  guint64 offset, end;
  GQueue chunks; /* GBytes, not yet taken */
  gsize head_taken;
  guint64 queued;
  guint64 received; /* bytes queued since @offset */
  gboolean finished;
  GError *error;
  gboolean dropped; /* nobody wants it any more: stop */
  gboolean claimed; /* a stream reads it */
  gboolean local;   /* a file, read on the thread with read() */
  GThread *thread;
  /* the thread's own, per attempt */
  void *curl;
  gboolean answer_checked;
  guint64 discard;
} Transfer;

struct _GstTrainShardFetcher
{
  GstTrainShardFetchOptions options;
  GMutex lock;
  GCond cond;
  gboolean flushing;
  GList *transfers; /* Transfer, fetched ahead or claimed */
};

struct _GstTrainShardStream
{
  GstTrainShardFetcher *fetcher;
  int fd;             /* a local shard, or -1 */
  Transfer *transfer; /* an HTTP shard, or NULL */
};

gboolean
gst_train_shard_fetch_has_http (void)
{
#ifdef GST_TRAIN_HAVE_CURL
  return TRUE;
#else
  return FALSE;
#endif
}

GstTrainShardFetcher *
gst_train_shard_fetcher_new (const GstTrainShardFetchOptions *options)
{
  GstTrainShardFetcher *fetcher = g_new0 (GstTrainShardFetcher, 1);
  static gsize debug_ready = 0;

#ifdef GST_TRAIN_HAVE_CURL
  static gsize curl_ready = 0;

  /* not thread-safe, and needed once before any handle */
  if (g_once_init_enter (&curl_ready))
    g_once_init_leave (&curl_ready, curl_global_init (CURL_GLOBAL_ALL) + 1);
#endif
  if (g_once_init_enter (&debug_ready)) {
    GST_DEBUG_CATEGORY_INIT (shard_fetch_debug, "datasetsrc-fetch", 0,
        "datasetsrc's shard transfers: requests, retries, back-off");
    g_once_init_leave (&debug_ready, 1);
  }
  fetcher->options = *options;
  g_mutex_init (&fetcher->lock);
  g_cond_init (&fetcher->cond);
  return fetcher;
}

static void transfer_drop (Transfer *transfer);

void
gst_train_shard_fetcher_free (GstTrainShardFetcher *fetcher)
{
  if (fetcher == NULL)
    return;
  while (fetcher->transfers != NULL)
    transfer_drop (fetcher->transfers->data);
  g_mutex_clear (&fetcher->lock);
  g_cond_clear (&fetcher->cond);
  g_free (fetcher);
}

void
gst_train_shard_fetcher_set_flushing (
    GstTrainShardFetcher *fetcher, gboolean flushing)
{
  g_mutex_lock (&fetcher->lock);
  fetcher->flushing = flushing;
  g_cond_broadcast (&fetcher->cond);
  g_mutex_unlock (&fetcher->lock);
}

static void
set_errno_error (GError **error, const gchar *shard)
{
  int code = errno;

  g_set_error (error, GST_TRAIN_SHARD_ERROR,
      code == ENOENT ? GST_TRAIN_SHARD_ERROR_NOT_FOUND
                     : GST_TRAIN_SHARD_ERROR_READ,
      "could not read \"%s\": %s", shard, g_strerror (code));
}

static int
open_local (const gchar *shard, GError **error)
{
  struct stat st;
  int fd = open (shard, O_RDONLY | O_CLOEXEC);

  if (fd < 0) {
    set_errno_error (error, shard);
    return -1;
  }
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode)) {
    if (errno == 0 || S_ISDIR (st.st_mode))
      g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_READ,
          "could not read \"%s\": not a regular file", shard);
    else
      set_errno_error (error, shard);
    close (fd);
    return -1;
  }
  return fd;
}

gboolean
gst_train_shard_fetcher_check (
    GstTrainShardFetcher *fetcher, const gchar *shard, GError **error)
{
  int fd;

  if (gst_train_shard_is_url (shard)) {
    if (gst_train_shard_fetch_has_http ())
      return TRUE;
    g_set_error (error, GST_TRAIN_SHARD_ERROR,
        GST_TRAIN_SHARD_ERROR_UNSUPPORTED,
        "cannot fetch \"%s\": this build of gst-train has no HTTP client "
        "(libcurl was not found when it was built)",
        shard);
    return FALSE;
  }
  errno = 0;
  fd = open_local (shard, error);
  if (fd < 0)
    return FALSE;
  close (fd);
  return TRUE;
}

/* Queues @size bytes of @data once there is room; FALSE when nobody wants
 * the transfer any more. */
static gboolean
transfer_queue (Transfer *t, const guint8 *data, gsize size)
{
  GstTrainShardFetcher *f = t->fetcher;

  g_mutex_lock (&f->lock);
  while (t->queued >= MAX_QUEUED && !t->dropped)
    g_cond_wait (&f->cond, &f->lock);
  if (t->dropped) {
    g_mutex_unlock (&f->lock);
    return FALSE;
  }
  if (size > 0) {
    g_queue_push_tail (&t->chunks, g_bytes_new (data, size));
    t->queued += size;
    t->received += size;
    g_cond_broadcast (&f->cond);
  }
  g_mutex_unlock (&f->lock);
  return TRUE;
}

/* A local shard's thread: reads the file ahead of its stream, in large
 * sequential reads, as a transfer does over HTTP. */
static gpointer
transfer_run_file (gpointer data)
{
  Transfer *t = data;
  GstTrainShardFetcher *f = t->fetcher;
  gsize chunk = FILE_CHUNK;
  guint8 *buffer = g_malloc (chunk);
  GError *error = NULL;
  int fd = open_local (t->url, &error);

  if (fd >= 0 && t->offset > 0 && lseek (fd, (off_t)t->offset, SEEK_SET) < 0)
    set_errno_error (&error, t->url);
  if (fd >= 0 && error == NULL) {
    GST_DEBUG ("read %s from byte %" G_GUINT64_FORMAT, t->url, t->offset);
    posix_fadvise (fd, (off_t)t->offset, 0, POSIX_FADV_SEQUENTIAL);
    for (;;) {
      gssize got = read (fd, buffer, chunk);

      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0) {
        set_errno_error (&error, t->url);
        break;
      }
      if (got == 0 || !transfer_queue (t, buffer, got))
        break;
    }
  }
  if (fd >= 0)
    close (fd);
  g_free (buffer);
  if (error != NULL)
    GST_DEBUG ("read %s: %s", t->url, error->message);
  g_mutex_lock (&f->lock);
  t->error = error;
  t->finished = TRUE;
  g_cond_broadcast (&f->cond);
  g_mutex_unlock (&f->lock);
  return NULL;
}

/* ---- HTTP ---- */

#ifdef GST_TRAIN_HAVE_CURL

/* Queues what the server sent, once there is room (curl's write
 * callback). */
static size_t
transfer_write (char *data, size_t size, size_t count, void *user_data)
{
  Transfer *t = user_data;
  gsize n = size * count, skip = 0, take;

  if (!t->answer_checked) {
    long code = 0;

    /* a server that ignores Range sends the shard from its start */
    curl_easy_getinfo (t->curl, CURLINFO_RESPONSE_CODE, &code);
    t->discard = code == 200 ? t->offset + t->received : 0;
    t->answer_checked = TRUE;
  }
  if (t->discard > 0) {
    skip = MIN (n, t->discard);
    t->discard -= skip;
  }
  take = n - skip;
  if (t->end != G_MAXUINT64)
    take = MIN (take, t->end - t->offset - t->received);
  if (!transfer_queue (t, (const guint8 *)data + skip, take))
    return 0; /* ends the transfer */
  /* a range that is complete ends the transfer too */
  return t->end != G_MAXUINT64 && t->offset + t->received >= t->end ? 0 : n;
}

/* Ends a transfer nobody wants promptly (curl's progress callback). */
static int
transfer_progress (void *user_data, curl_off_t dltotal, curl_off_t dlnow,
    curl_off_t ultotal, curl_off_t ulnow)
{
  Transfer *t = user_data;

  return g_atomic_int_get (&t->dropped);
}

/* Whether a failed attempt may be tried again: the connection failed, or
 * the server did (5xx). */
static gboolean
transfer_retryable (CURLcode code, long http)
{
  switch (code) {
    case CURLE_HTTP_RETURNED_ERROR:
      return http >= 500;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return TRUE;
    default:
      return FALSE;
  }
}

/* One attempt from where the transfer stands: curl's result, the HTTP
 * status in *@http, the cause in @why. */
static CURLcode
transfer_attempt (Transfer *t, long *http, gchar *why)
{
  CURL *curl = curl_easy_init ();
  guint64 from = t->offset + t->received;
  gchar range[64];
  const gchar *outcome;
  CURLcode code;

  if (curl == NULL) {
    g_strlcpy (why, "libcurl could not make a handle", CURL_ERROR_SIZE);
    return CURLE_FAILED_INIT;
  }
  t->curl = curl;
  t->answer_checked = FALSE;
  t->discard = 0;
  why[0] = '\0';
  curl_easy_setopt (curl, CURLOPT_URL, t->url);
  curl_easy_setopt (curl, CURLOPT_ERRORBUFFER, why);
  curl_easy_setopt (curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (curl, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt (curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt (curl, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
  /* below one byte a second for STALL_TIMEOUT_S: nothing at all */
  curl_easy_setopt (curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt (curl, CURLOPT_LOW_SPEED_TIME, STALL_TIMEOUT_S);
  curl_easy_setopt (curl, CURLOPT_WRITEFUNCTION, transfer_write);
  curl_easy_setopt (curl, CURLOPT_WRITEDATA, t);
  curl_easy_setopt (curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt (curl, CURLOPT_XFERINFOFUNCTION, transfer_progress);
  curl_easy_setopt (curl, CURLOPT_XFERINFODATA, t);
  curl_easy_setopt (curl, CURLOPT_USERAGENT, "gst-train datasetsrc");
  if (t->end != G_MAXUINT64)
    g_snprintf (range, sizeof (range),
        "%" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT, from, t->end - 1);
  else
    g_snprintf (range, sizeof (range), "%" G_GUINT64_FORMAT "-", from);
  if (from > 0 || t->end != G_MAXUINT64) {
    curl_easy_setopt (curl, CURLOPT_RANGE, range);
    GST_DEBUG ("GET %s, bytes %s", t->url, range);
  } else {
    GST_DEBUG ("GET %s, the whole file", t->url);
  }
  code = curl_easy_perform (curl);
  *http = 0;
  curl_easy_getinfo (curl, CURLINFO_RESPONSE_CODE, http);
  if (why[0] == '\0')
    g_strlcpy (why, curl_easy_strerror (code), CURL_ERROR_SIZE);
  /* transfer_write() ends a range that is in, and a transfer dropped, with
   * a write error: not curl's cause, then */
  if (code == CURLE_OK
      || (t->end != G_MAXUINT64 && t->offset + t->received >= t->end))
    outcome = "done";
  else if (g_atomic_int_get (&t->dropped))
    outcome = "dropped";
  else
    outcome = why;
  GST_DEBUG ("GET %s: HTTP %ld, %s, %" G_GUINT64_FORMAT " bytes from byte "
             "%" G_GUINT64_FORMAT,
      t->url, *http, outcome, t->offset + t->received - from, from);
  t->curl = NULL;
  curl_easy_cleanup (curl);
  return code;
}

/* The transfer's thread: attempts until the shard is in, a failure that
 * is final, or nobody wants it. */
static gpointer
transfer_run (gpointer data)
{
  Transfer *t = data;
  GstTrainShardFetcher *f = t->fetcher;
  const GstTrainShardFetchOptions *o = &f->options;
  guint failures = 0;
  guint64 reached = 0;
  gchar why[CURL_ERROR_SIZE];

  for (;;) {
    long http;
    CURLcode code = transfer_attempt (t, &http, why);
    gboolean complete;

    g_mutex_lock (&f->lock);
    complete = t->end != G_MAXUINT64 && t->offset + t->received >= t->end;
    if (t->dropped || code == CURLE_OK || complete) {
      if (code == CURLE_OK && t->end != G_MAXUINT64 && !complete)
        g_set_error (&t->error, GST_TRAIN_SHARD_ERROR,
            GST_TRAIN_SHARD_ERROR_DAMAGED,
            "\"%s\" ends at byte %" G_GUINT64_FORMAT
            ", before byte %" G_GUINT64_FORMAT,
            t->url, t->offset + t->received, t->end);
      break;
    }
    if (t->received > reached) {
      /* it moved on: only failures in a row count */
      reached = t->received;
      failures = 0;
    }
    if (!transfer_retryable (code, http) || failures >= o->retries) {
      GST_DEBUG ("%s: no retry after %u attempt%s in a row (%s): %s", t->url,
          failures + 1, failures > 0 ? "s" : "",
          transfer_retryable (code, http) ? "retries spent" : "not retryable",
          why);
      if (http == 404)
        g_set_error (&t->error, GST_TRAIN_SHARD_ERROR,
            GST_TRAIN_SHARD_ERROR_NOT_FOUND,
            "could not fetch \"%s\": not found (HTTP 404)", t->url);
      else if (code == CURLE_HTTP_RETURNED_ERROR)
        g_set_error (&t->error, GST_TRAIN_SHARD_ERROR,
            GST_TRAIN_SHARD_ERROR_READ,
            "could not fetch \"%s\": the server answered HTTP %ld (%u "
            "attempt%s)",
            t->url, http, failures + 1, failures > 0 ? "s" : "");
      else
        g_set_error (&t->error, GST_TRAIN_SHARD_ERROR,
            GST_TRAIN_SHARD_ERROR_READ,
            "could not fetch \"%s\" at byte %" G_GUINT64_FORMAT
            ": %s (%u attempt%s)",
            t->url, t->offset + t->received, why, failures + 1,
            failures > 0 ? "s" : "");
      break;
    }
    {
      /* a pause that doubles with each failure in a row */
      gint64 pause_us = (gint64)o->backoff_ms * 1000
          * ((gint64)1 << MIN (failures, MAX_BACKOFF_DOUBLINGS));
      gint64 until = g_get_monotonic_time () + pause_us;
      gchar status[32];

      failures++;
      if (http > 0)
        g_snprintf (status, sizeof (status), " (HTTP %ld)", http);
      else
        status[0] = '\0';
      GST_INFO ("%s: retry %u of %u in %" G_GINT64_FORMAT " ms, from byte "
                "%" G_GUINT64_FORMAT ": %s%s",
          t->url, failures, o->retries, pause_us / 1000,
          t->offset + t->received, why, status);
      while (!t->dropped && g_get_monotonic_time () < until)
        g_cond_wait_until (&f->cond, &f->lock, until);
    }
    g_mutex_unlock (&f->lock);
  }
  t->finished = TRUE;
  g_cond_broadcast (&f->cond);
  g_mutex_unlock (&f->lock);
  return NULL;
}

#endif /* GST_TRAIN_HAVE_CURL */

/* A new transfer of @url from @offset to @end in the fetcher's list; call
 * with the lock held. */
static Transfer *
transfer_start (GstTrainShardFetcher *f, const gchar *url, guint64 offset,
    guint64 end, GError **error)
{
  Transfer *t = g_new0 (Transfer, 1);

  t->fetcher = f;
  t->url = g_strdup (url);
  t->offset = offset;
  t->end = end;
  t->local = !gst_train_shard_is_url (url);
  g_queue_init (&t->chunks);
  if (t->local)
    t->thread = g_thread_try_new ("shard-read", transfer_run_file, t, error);
#ifdef GST_TRAIN_HAVE_CURL
  else
    t->thread = g_thread_try_new ("shard-fetch", transfer_run, t, error);
#else
  else
    g_set_error (error, GST_TRAIN_SHARD_ERROR,
        GST_TRAIN_SHARD_ERROR_UNSUPPORTED,
        "cannot fetch \"%s\": this build of gst-train has no HTTP client", url);
#endif
  if (t->thread == NULL) {
    g_free (t->url);
    g_free (t);
    return NULL;
  }
  f->transfers = g_list_prepend (f->transfers, t);
  return t;
}

/* Stops @transfer, waits for its thread and frees it; without the lock. */
static void
transfer_drop (Transfer *t)
{
  GstTrainShardFetcher *f = t->fetcher;

  GST_LOG ("drop the transfer of %s from byte %" G_GUINT64_FORMAT, t->url,
      t->offset);
  g_mutex_lock (&f->lock);
  g_atomic_int_set (&t->dropped, TRUE);
  f->transfers = g_list_remove (f->transfers, t);
  g_cond_broadcast (&f->cond);
  g_mutex_unlock (&f->lock);
  g_thread_join (t->thread);
  g_queue_clear_full (&t->chunks, (GDestroyNotify)g_bytes_unref);
  g_clear_error (&t->error);
  g_free (t->url);
  g_free (t);
}

/* Starts the transfers of the first fetch_ahead shards of @next that are
 * not under way, and moves the transfers that nobody reads and @next does
 * not name into *@unwanted, to be dropped without the lock. With the lock
 * held. */
static void
fetch_ahead_locked (
    GstTrainShardFetcher *f, const gchar *const *next, GList **unwanted)
{
  GList *l;
  guint i, n = 0;

  while (next != NULL && next[n] != NULL && n < f->options.fetch_ahead)
    n++;
  for (l = f->transfers; l != NULL; l = l->next) {
    Transfer *t = l->data;
    gboolean wanted = FALSE;

    if (t->claimed)
      continue;
    for (i = 0; i < n; i++)
      wanted |= t->offset == 0 && strcmp (t->url, next[i]) == 0;
    if (!wanted)
      *unwanted = g_list_prepend (*unwanted, t);
  }
  for (i = 0; i < n; i++) {
    gboolean under_way = FALSE;

    for (l = f->transfers; l != NULL; l = l->next) {
      Transfer *t = l->data;

      under_way |= !t->claimed && t->offset == 0 && t->end == G_MAXUINT64
          && strcmp (t->url, next[i]) == 0;
    }
    if (!under_way) {
      GST_DEBUG ("fetch %s ahead", next[i]);
      transfer_start (f, next[i], 0, G_MAXUINT64, NULL);
    }
  }
}

void
gst_train_shard_fetcher_fetch_ahead (
    GstTrainShardFetcher *f, const gchar *const *next)
{
  GList *unwanted = NULL;

  g_mutex_lock (&f->lock);
  fetch_ahead_locked (f, next, &unwanted);
  g_mutex_unlock (&f->lock);
  g_list_free_full (unwanted, (GDestroyNotify)transfer_drop);
}

GstTrainShardStream *
gst_train_shard_fetcher_open (GstTrainShardFetcher *f, const gchar *shard,
    guint64 offset, const gchar *const *next, gboolean skimming, GError **error)
{
  GstTrainShardStream *stream;
  Transfer *found = NULL;
  GList *l, *unwanted = NULL;

  if (skimming && !gst_train_shard_is_url (shard)) {
    int fd = open_local (shard, error);

    if (fd < 0)
      return NULL;
    if (offset > 0 && lseek (fd, (off_t)offset, SEEK_SET) < 0) {
      set_errno_error (error, shard);
      close (fd);
      return NULL;
    }
    posix_fadvise (fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    stream = g_new0 (GstTrainShardStream, 1);
    stream->fetcher = f;
    stream->fd = fd;
    return stream;
  }

  g_mutex_lock (&f->lock);
  for (l = f->transfers; l != NULL && found == NULL; l = l->next) {
    Transfer *t = l->data;

    if (!t->claimed && t->offset == offset && t->end == G_MAXUINT64
        && strcmp (t->url, shard) == 0)
      found = t;
  }
  if (found == NULL)
    found = transfer_start (f, shard, offset, G_MAXUINT64, error);
  else
    GST_DEBUG ("open %s from byte %" G_GUINT64_FORMAT ": fetched ahead", shard,
        offset);
  if (found != NULL) {
    found->claimed = TRUE;
    fetch_ahead_locked (f, next, &unwanted);
  }
  g_mutex_unlock (&f->lock);
  g_list_free_full (unwanted, (GDestroyNotify)transfer_drop);
  if (found == NULL)
    return NULL;
  stream = g_new0 (GstTrainShardStream, 1);
  stream->fetcher = f;
  stream->fd = -1;
  stream->transfer = found;
  return stream;
}

void
gst_train_shard_stream_close (GstTrainShardStream *stream)
{
  if (stream == NULL)
    return;
  if (stream->fd >= 0)
    close (stream->fd);
  if (stream->transfer != NULL)
    transfer_drop (stream->transfer);
  g_free (stream);
}

/* Takes up to @size queued bytes of @t: how many, 0 at its end, -1 with
 * @error set. */
static gssize
transfer_read (Transfer *t, guint8 *data, gsize size, GError **error)
{
  GstTrainShardFetcher *f = t->fetcher;
  gssize done = 0;

  g_mutex_lock (&f->lock);
  while (g_queue_is_empty (&t->chunks) && !t->finished && !f->flushing)
    g_cond_wait (&f->cond, &f->lock);
  if (f->flushing) {
    g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_CANCELLED,
        "flushing");
    done = -1;
  } else if (!g_queue_is_empty (&t->chunks)) {
    while (done < (gssize)size && !g_queue_is_empty (&t->chunks)) {
      GBytes *head = g_queue_peek_head (&t->chunks);
      gsize length, n;
      const guint8 *bytes = g_bytes_get_data (head, &length);

      n = MIN (length - t->head_taken, size - done);
      memcpy (data + done, bytes + t->head_taken, n);
      done += n;
      t->head_taken += n;
      if (t->head_taken == length) {
        g_bytes_unref (g_queue_pop_head (&t->chunks));
        t->head_taken = 0;
      }
    }
    t->queued -= done;
    g_cond_broadcast (&f->cond);
  } else if (t->error != NULL) {
    g_propagate_error (error, g_error_copy (t->error));
    done = -1;
  }
  g_mutex_unlock (&f->lock);
  return done;
}

static gssize
stream_read (gpointer source, guint8 *data, gsize size, GError **error)
{
  GstTrainShardStream *stream = source;

  if (stream->fd >= 0)
    return gst_train_shard_fd_funcs.read (
        GINT_TO_POINTER (stream->fd), data, size, error);
  return transfer_read (stream->transfer, data, size, error);
}

static gint64
stream_skip (gpointer source, guint64 size, GError **error)
{
  GstTrainShardStream *stream = source;

  if (stream->fd >= 0)
    return gst_train_shard_fd_funcs.skip (
        GINT_TO_POINTER (stream->fd), size, error);
  /* over HTTP what is passed over is fetched all the same */
  return gst_train_shard_read_over (
      &gst_train_shard_stream_funcs, source, size, error);
}

const GstTrainShardSourceFuncs gst_train_shard_stream_funcs = {
  stream_read,
  stream_skip,
};

guint8 *
gst_train_shard_fetcher_read_range (GstTrainShardFetcher *f, const gchar *shard,
    guint64 offset, gsize size, GError **error)
{
  guint8 *data = g_malloc (MAX (size, 1));
  gsize done = 0;

  if (!gst_train_shard_is_url (shard)) {
    int fd = open_local (shard, error);

    if (fd < 0) {
      g_free (data);
      return NULL;
    }
    GST_LOG ("read %s, bytes %" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT, shard,
        offset, offset + size - 1);
    while (done < size) {
      gssize got = pread (fd, data + done, size - done, (off_t)(offset + done));

      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0) {
        if (got < 0)
          set_errno_error (error, shard);
        else
          g_set_error (error, GST_TRAIN_SHARD_ERROR,
              GST_TRAIN_SHARD_ERROR_DAMAGED,
              "\"%s\" ends at byte %" G_GUINT64_FORMAT
              ", before byte %" G_GUINT64_FORMAT,
              shard, offset + done, offset + size);
        close (fd);
        g_free (data);
        return NULL;
      }
      done += got;
    }
    close (fd);
    return data;
  } else {
    Transfer *t;

    g_mutex_lock (&f->lock);
    t = transfer_start (f, shard, offset, offset + size, error);
    if (t != NULL)
      t->claimed = TRUE;
    g_mutex_unlock (&f->lock);
    if (t == NULL) {
      g_free (data);
      return NULL;
    }
    while (done < size) {
      gssize got = transfer_read (t, data + done, size - done, error);

      if (got <= 0) {
        if (got == 0)
          g_set_error (error, GST_TRAIN_SHARD_ERROR,
              GST_TRAIN_SHARD_ERROR_DAMAGED,
              "\"%s\" ends before byte %" G_GUINT64_FORMAT, shard,
              offset + size);
        transfer_drop (t);
        g_free (data);
        return NULL;
      }
      done += got;
    }
    transfer_drop (t);
    return data;
  }
}
