/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tb-writer.c: the TensorBoard event files declared in tb-writer.h.
 *
 * The format. A TFRecord stream: each record is its length (uint64,
 * little-endian), the masked CRC-32C of those 8 bytes (uint32), the data,
 * and the masked CRC-32C of the data (tensorflow/core/lib/io/record_writer
 * and crc32c.h: mask (crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8). Each
 * record's data is an Event protocol buffer. Of the messages in
 * tensorflow/core/util/event.proto and framework/summary.proto this writer
 * needs four, and of them these fields:
 *
 *   message Event { double wall_time = 1; int64 step = 2;
 *                   oneof what { string file_version = 3;
 *                                Summary summary = 5;
 *                                SessionLog session_log = 7; } }
 *   message Summary { message Value { string tag = 1;
 *                                     oneof value { float simple_value = 2; } }
 *                     repeated Value value = 1; }
 *   message SessionLog { enum SessionStatus { STATUS_UNSPECIFIED = 0;
 *                                             START = 1; ... }
 *                        SessionStatus status = 1; }
 *
 * Why our own encoder and not protobuf-c. Writing those fields is the
 * protocol buffer wire format's simplest part: a key (field number << 3 |
 * wire type), then a varint, 8 or 4 little-endian bytes, or a length and
 * the bytes; a nested message is the last kind. That is the functions
 * below, some forty lines, and the event file never has to be read back
 * here. protobuf-c would bring a build tool (protoc-c, run by meson) and a
 * run-time library to the training plugin for those lines, and the .proto
 * files could not be upstream's as they are: summary.proto imports
 * tensor.proto, which imports tensor_shape.proto, types.proto and
 * resource_handle.proto, so the tree would keep either six files of
 * TensorFlow's or cut-down copies that no longer match them, the same
 * transcription as the comment above with more moving parts. What decides
 * whether the bytes are right is TensorBoard's own reader, and the tests
 * read every file the sink writes with it (tests/integration/
 * tensorboard.sh); the CRC-32C has its own test against the standard check
 * value (tests/check/tb-writer.c). No dependency of the sink computes
 * CRC-32C (zlib's crc32 is the other polynomial), so the table is ours. */
#include "tb-writer.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define EVENT_FILE_PREFIX "events.out.tfevents."
#define FILE_VERSION "brain.Event:2"

/* protocol buffer wire types */
#define WIRE_VARINT 0
#define WIRE_FIXED64 1
#define WIRE_LENGTH 2
#define WIRE_FIXED32 5

/* field numbers (above) */
#define EVENT_WALL_TIME 1
#define EVENT_STEP 2
#define EVENT_FILE_VERSION 3
#define EVENT_SUMMARY 5
#define EVENT_SESSION_LOG 7
#define SUMMARY_VALUE 1
#define VALUE_TAG 1
#define VALUE_SIMPLE_VALUE 2
#define SESSION_LOG_STATUS 1
#define SESSION_LOG_START 1

struct _TbWriter
{
  gchar *path;
  int fd;
  gsize size;         /* bytes of whole records in the file */
  GByteArray *queued; /* framed records not written yet */
  gboolean broken;    /* a failed write could not be cut back: no more */
};

/* ---- CRC-32C ---- */

/* Castagnoli's polynomial, bit-reversed: the CRC is computed LSB first. */
#define CRC32C_POLY 0x82f63b78u

static guint32 crc32c_table[256];

static void
crc32c_fill_table (void)
{
  guint32 i, bit, crc;

  for (i = 0; i < 256; i++) {
    crc = i;
    for (bit = 0; bit < 8; bit++)
      crc = (crc >> 1) ^ (crc & 1 ? CRC32C_POLY : 0);
    crc32c_table[i] = crc;
  }
}

guint32
tb_crc32c (gconstpointer data, gsize length)
{
  static gsize table_ready = 0;
  const guint8 *byte = data;
  guint32 crc = 0xffffffffu;
  gsize i;

  if (g_once_init_enter (&table_ready)) {
    crc32c_fill_table ();
    g_once_init_leave (&table_ready, 1);
  }
  for (i = 0; i < length; i++)
    crc = crc32c_table[(crc ^ byte[i]) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

guint32
tb_masked_crc32c (gconstpointer data, gsize length)
{
  guint32 crc = tb_crc32c (data, length);

  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* ---- protocol buffer encoding ---- */

static void
put_varint (GByteArray *out, guint64 value)
{
  guint8 byte;

  do {
    byte = value & 0x7f;
    value >>= 7;
    if (value)
      byte |= 0x80;
    g_byte_array_append (out, &byte, 1);
  } while (value);
}

static void
put_key (GByteArray *out, guint field, guint wire_type)
{
  put_varint (out, (guint64)field << 3 | wire_type);
}

static void
put_bytes (GByteArray *out, guint field, gconstpointer data, gsize length)
{
  put_key (out, field, WIRE_LENGTH);
  put_varint (out, length);
  g_byte_array_append (out, data, (guint)length);
}

/* A fixed-width field: the low @size bytes of @bits (8: a double's, 4: a
 * float's), least significant first. */
static void
put_fixed (GByteArray *out, guint field, guint64 bits, guint size)
{
  guint8 bytes[8];
  guint i;

  for (i = 0; i < size; i++)
    bytes[i] = (guint8)(bits >> (8 * i));
  put_key (out, field, size == 8 ? WIRE_FIXED64 : WIRE_FIXED32);
  g_byte_array_append (out, bytes, size);
}

/* An Event's wall time (now) and @step (left out at 0, proto3's default),
 * then whatever the caller adds. */
static GByteArray *
event_begin (gint64 step)
{
  GByteArray *event = g_byte_array_new ();
  union
  {
    gdouble seconds;
    guint64 bits;
  } now = { g_get_real_time () / 1e6 };

  put_fixed (event, EVENT_WALL_TIME, now.bits, sizeof (now.bits));
  if (step != 0) {
    put_key (event, EVENT_STEP, WIRE_VARINT);
    put_varint (event, (guint64)step);
  }
  return event;
}

/* Queues @event as one TFRecord and frees it. */
static void
queue_record (TbWriter *writer, GByteArray *event)
{
  guint64 length = GUINT64_TO_LE ((guint64)event->len);
  guint32 length_crc = GUINT32_TO_LE (tb_masked_crc32c (&length, 8));
  guint32 data_crc = GUINT32_TO_LE (tb_masked_crc32c (event->data, event->len));

  g_byte_array_append (writer->queued, (const guint8 *)&length, 8);
  g_byte_array_append (writer->queued, (const guint8 *)&length_crc, 4);
  g_byte_array_append (writer->queued, event->data, event->len);
  g_byte_array_append (writer->queued, (const guint8 *)&data_crc, 4);
  g_byte_array_unref (event);
}

/* ---- the file ---- */

/* The largest TIME of the events.out.tfevents.TIME.* files in @logdir; 0
 * when there is none. */
static gint64
newest_event_file_time (const gchar *logdir)
{
  GDir *dir = g_dir_open (logdir, 0, NULL);
  const gchar *name;
  gint64 newest = 0;

  if (dir == NULL)
    return 0;
  while ((name = g_dir_read_name (dir)) != NULL) {
    if (g_str_has_prefix (name, EVENT_FILE_PREFIX))
      newest = MAX (newest,
          (gint64)g_ascii_strtoll (
              name + strlen (EVENT_FILE_PREFIX), NULL, 10));
  }
  g_dir_close (dir);
  return newest;
}

/* Creates a new event file in @logdir (a file of the same name, another
 * writer of this process in the same second, gets a number after it, as
 * TensorBoard's own writer adds one); the fd, or -1 with errno set. */
static int
create_event_file (const gchar *logdir, gchar **path)
{
  gint64 now = g_get_real_time () / G_USEC_PER_SEC;
  gint64 newest = newest_event_file_time (logdir);
  gint64 time = now > newest ? now : newest + 1;
  gchar *name;
  guint n;
  int fd = -1;

  for (n = 0; n < 1000 && fd < 0; n++) {
    if (n == 0)
      name = g_strdup_printf (EVENT_FILE_PREFIX "%010" G_GINT64_FORMAT ".%s.%d",
          time, g_get_host_name (), (int)getpid ());
    else
      name =
          g_strdup_printf (EVENT_FILE_PREFIX "%010" G_GINT64_FORMAT ".%s.%d.%u",
              time, g_get_host_name (), (int)getpid (), n);
    *path = g_build_filename (logdir, name, NULL);
    g_free (name);
    fd = g_open (
        *path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST)
      g_clear_pointer (path, g_free);
    else if (fd < 0)
      break;
  }
  return fd;
}

TbWriter *
tb_writer_new (const gchar *logdir, GError **error)
{
  TbWriter *writer;
  GByteArray *event;
  gchar *path = NULL;
  int fd, saved_errno;

  if (g_mkdir_with_parents (logdir, 0755) < 0) {
    saved_errno = errno;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
        "Could not create the folder \"%s\": %s", logdir,
        g_strerror (saved_errno));
    return NULL;
  }
  fd = create_event_file (logdir, &path);
  if (fd < 0) {
    saved_errno = errno;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
        "Could not create an event file in \"%s\": %s", logdir,
        g_strerror (saved_errno));
    g_free (path);
    return NULL;
  }
  writer = g_new0 (TbWriter, 1);
  writer->path = path;
  writer->fd = fd;
  writer->queued = g_byte_array_new ();
  event = event_begin (0);
  put_bytes (event, EVENT_FILE_VERSION, FILE_VERSION, strlen (FILE_VERSION));
  queue_record (writer, event);
  /* a folder that takes no data is found now, not at the first interval */
  if (!tb_writer_flush (writer, error)) {
    g_unlink (writer->path);
    tb_writer_free (writer);
    return NULL;
  }
  return writer;
}

const gchar *
tb_writer_get_path (const TbWriter *writer)
{
  return writer->path;
}

void
tb_writer_add_restart (TbWriter *writer, gint64 step)
{
  GByteArray *event = event_begin (step);
  GByteArray *session_log = g_byte_array_new ();

  put_key (session_log, SESSION_LOG_STATUS, WIRE_VARINT);
  put_varint (session_log, SESSION_LOG_START);
  put_bytes (event, EVENT_SESSION_LOG, session_log->data, session_log->len);
  g_byte_array_unref (session_log);
  queue_record (writer, event);
}

void
tb_writer_add_scalar (
    TbWriter *writer, const gchar *tag, gint64 step, gdouble value)
{
  GByteArray *event = event_begin (step);
  GByteArray *summary = g_byte_array_new ();
  GByteArray *summary_value = g_byte_array_new ();
  union
  {
    gfloat scalar;
    guint32 bits;
  } simple = { (gfloat)value };

  put_bytes (summary_value, VALUE_TAG, tag, strlen (tag));
  put_fixed (
      summary_value, VALUE_SIMPLE_VALUE, simple.bits, sizeof (simple.bits));
  put_bytes (summary, SUMMARY_VALUE, summary_value->data, summary_value->len);
  put_bytes (event, EVENT_SUMMARY, summary->data, summary->len);
  g_byte_array_unref (summary_value);
  g_byte_array_unref (summary);
  queue_record (writer, event);
}

gboolean
tb_writer_flush (TbWriter *writer, GError **error)
{
  gsize length = writer->queued->len, done = 0;
  int saved_errno = 0;

  if (writer->broken) {
    g_byte_array_set_size (writer->queued, 0);
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_IO,
        "Could not write \"%s\": an earlier write left it cut short",
        writer->path);
    return FALSE;
  }
  while (done < length) {
    gssize n = write (writer->fd, writer->queued->data + done, length - done);

    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      saved_errno = n < 0 ? errno : ENOSPC;
      break;
    }
    done += (gsize)n;
  }
  g_byte_array_set_size (writer->queued, 0);
  if (done == length) {
    writer->size += length;
    return TRUE;
  }
  /* a record cut in the middle would end what TensorBoard reads: the file
   * goes back to its last whole record (O_APPEND: the next write goes to
   * the new end) */
  if (done > 0 && ftruncate (writer->fd, (off_t)writer->size) < 0)
    writer->broken = TRUE;
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (saved_errno),
      "Could not write \"%s\": %s", writer->path, g_strerror (saved_errno));
  return FALSE;
}

void
tb_writer_free (TbWriter *writer)
{
  close (writer->fd);
  g_byte_array_unref (writer->queued);
  g_free (writer->path);
  g_free (writer);
}
