/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tb-writer.c: the TensorBoard event files cudatrainsink writes
 * (elements/trainsink/tb-writer.c): CRC-32C against its standard check
 * value, the TFRecord framing and the Event bytes, the file's name, and a
 * write that fails half-way. TensorBoard's own reader reads whole runs'
 * files in tests/integration/tensorboard.sh. */
#include <gst/check/gstcheck.h>

#include "check-main.h"

#include "tb-writer.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The records of the event file at @path, each checked as TensorBoard's
 * reader checks them (length, masked CRC-32C of the length and of the
 * data), with nothing after the last; a GPtrArray of GBytes. */
static GPtrArray *
read_records (const gchar *path)
{
  GPtrArray *records =
      g_ptr_array_new_with_free_func ((GDestroyNotify)g_bytes_unref);
  gchar *contents;
  gsize size, at = 0;

  fail_unless (g_file_get_contents (path, &contents, &size, NULL));
  while (at < size) {
    guint64 length;
    guint32 crc;

    fail_unless (
        at + 12 <= size, "a record header cut short at %" G_GSIZE_FORMAT, at);
    memcpy (&length, contents + at, 8);
    memcpy (&crc, contents + at + 8, 4);
    fail_unless_equals_uint64 (
        GUINT32_FROM_LE (crc), tb_masked_crc32c (contents + at, 8));
    length = GUINT64_FROM_LE (length);
    at += 12;
    fail_unless (
        at + length + 4 <= size, "a record cut short at %" G_GSIZE_FORMAT, at);
    memcpy (&crc, contents + at + length, 4);
    fail_unless_equals_uint64 (
        GUINT32_FROM_LE (crc), tb_masked_crc32c (contents + at, length));
    g_ptr_array_add (records, g_bytes_new (contents + at, length));
    at += length + 4;
  }
  g_free (contents);
  return records;
}

/* The bytes of @record after its wall time (field 1, a double: key 0x09
 * and 8 bytes), which tests cannot know, equal @expected. */
static void
expect_event_after_wall_time (
    GBytes *record, const gchar *expected, gsize expected_length)
{
  gsize length;
  const guint8 *data = g_bytes_get_data (record, &length);
  gdouble wall_time;
  guint64 bits;

  fail_unless (length >= 9);
  fail_unless_equals_int (data[0], 0x09);
  memcpy (&bits, data + 1, 8);
  bits = GUINT64_FROM_LE (bits);
  memcpy (&wall_time, &bits, 8);
  /* seconds since the epoch, now */
  fail_unless (ABS (wall_time - g_get_real_time () / 1e6) < 60);
  fail_unless_equals_uint64 (length - 9, expected_length);
  fail_unless (memcmp (data + 9, expected, expected_length) == 0);
}

static gchar *
make_scratch_dir (void)
{
  gchar *dir = g_dir_make_tmp ("tb-writer-XXXXXX", NULL);

  fail_unless (dir != NULL);
  return dir;
}

static void
remove_scratch_dir (gchar *dir)
{
  GDir *listing = g_dir_open (dir, 0, NULL);
  const gchar *name;

  while ((name = g_dir_read_name (listing)) != NULL) {
    gchar *path = g_build_filename (dir, name, NULL);

    g_unlink (path);
    g_free (path);
  }
  g_dir_close (listing);
  g_rmdir (dir);
  g_free (dir);
}

GST_START_TEST (test_crc32c_check_value)
{
  /* the standard check value of CRC-32C (iSCSI, RFC 3720) */
  fail_unless_equals_uint64 (tb_crc32c ("123456789", 9), 0xe3069283u);
  fail_unless_equals_uint64 (tb_crc32c ("", 0), 0);
  /* RFC 3720 B.4: 32 bytes of zeros */
  {
    guint8 zeros[32] = { 0 };

    fail_unless_equals_uint64 (tb_crc32c (zeros, 32), 0x8a9136aau);
  }
  /* TFRecord's mask: rotate right by 15, add 0xa282ead8 */
  fail_unless_equals_uint64 (tb_masked_crc32c ("", 0), 0xa282ead8u);
  fail_unless_equals_uint64 (tb_masked_crc32c ("123456789", 9),
      ((0xe3069283u >> 15) | (0xe3069283u << 17)) + 0xa282ead8u);
}

GST_END_TEST;

GST_START_TEST (test_events_as_tensorboard_reads_them)
{
  gchar *dir = make_scratch_dir ();
  gchar *logdir = g_build_filename (dir, "run", NULL);
  GError *error = NULL;
  TbWriter *writer = tb_writer_new (logdir, &error);
  GPtrArray *records;
  /* Event { step = 300 (varint ac 02), summary = { value = { tag = "a/b",
   * simple_value = 0.5f (00 00 00 3f) } } } */
  static const gchar scalar[] = "\x10\xac\x02"
                                "\x2a\x0c\x0a\x0a\x0a\x03"
                                "a/b"
                                "\x15\x00\x00\x00\x3f";
  /* Event { step = 7, session_log = { status = START } } */
  static const gchar restart[] = "\x10\x07\x3a\x02\x08\x01";
  /* Event { file_version = "brain.Event:2" } */
  static const gchar version[] = "\x1a\x0d"
                                 "brain.Event:2";

  fail_unless (writer != NULL, "%s", error ? error->message : "");
  /* the file version is in the file from the start */
  records = read_records (tb_writer_get_path (writer));
  fail_unless_equals_int (records->len, 1);
  expect_event_after_wall_time (
      records->pdata[0], version, sizeof (version) - 1);
  g_ptr_array_unref (records);

  tb_writer_add_restart (writer, 7);
  tb_writer_add_scalar (writer, "a/b", 300, 0.5);
  /* queued: not in the file before the flush */
  records = read_records (tb_writer_get_path (writer));
  fail_unless_equals_int (records->len, 1);
  g_ptr_array_unref (records);
  fail_unless (tb_writer_flush (writer, &error));
  records = read_records (tb_writer_get_path (writer));
  fail_unless_equals_int (records->len, 3);
  expect_event_after_wall_time (
      records->pdata[1], restart, sizeof (restart) - 1);
  expect_event_after_wall_time (records->pdata[2], scalar, sizeof (scalar) - 1);
  g_ptr_array_unref (records);
  tb_writer_free (writer);
  remove_scratch_dir (logdir);
  remove_scratch_dir (dir);
}

GST_END_TEST;

GST_START_TEST (test_file_name_sorts_after_the_folder_s_files)
{
  gchar *dir = make_scratch_dir ();
  gint64 later = g_get_real_time () / G_USEC_PER_SEC + 100;
  gchar *name = g_strdup_printf (
      "events.out.tfevents.%010" G_GINT64_FORMAT ".elsewhere.1", later);
  gchar *planted = g_build_filename (dir, name, NULL);
  gchar *expected, *basename;
  TbWriter *older, *newer;

  fail_unless (g_file_set_contents (planted, "", 0, NULL));
  /* events.out.tfevents.TIME.HOST.PID, TIME past the planted file's */
  older = tb_writer_new (dir, NULL);
  fail_unless (older != NULL);
  basename = g_path_get_basename (tb_writer_get_path (older));
  expected =
      g_strdup_printf ("events.out.tfevents.%010" G_GINT64_FORMAT ".%s.%d",
          later + 1, g_get_host_name (), (int)getpid ());
  fail_unless_equals_string (basename, expected);
  g_free (basename);
  g_free (expected);
  /* another writer of this process, in the same second: after it */
  newer = tb_writer_new (dir, NULL);
  fail_unless (newer != NULL);
  fail_unless (
      strcmp (tb_writer_get_path (older), tb_writer_get_path (newer)) < 0);
  tb_writer_free (older);
  tb_writer_free (newer);
  g_free (planted);
  g_free (name);
  remove_scratch_dir (dir);
}

GST_END_TEST;

GST_START_TEST (test_folder_that_cannot_be_made_is_named)
{
  gchar *dir = make_scratch_dir ();
  gchar *file = g_build_filename (dir, "a-file", NULL);
  gchar *logdir = g_build_filename (file, "run", NULL);
  GError *error = NULL;

  fail_unless (g_file_set_contents (file, "", 0, NULL));
  fail_unless (tb_writer_new (logdir, &error) == NULL);
  fail_unless (error != NULL);
  fail_unless (strstr (error->message, logdir) != NULL, "%s", error->message);
  g_error_free (error);
  g_free (logdir);
  g_free (file);
  remove_scratch_dir (dir);
}

GST_END_TEST;

/* A file that stops growing (RLIMIT_FSIZE stands in for a full disk): the
 * flush fails, the file keeps its whole records only, and once it can grow
 * again the next flush adds to it. */
GST_START_TEST (test_failed_write_leaves_whole_records)
{
  gchar *dir = make_scratch_dir ();
  TbWriter *writer = tb_writer_new (dir, NULL);
  struct rlimit saved, limit;
  GError *error = NULL;
  GPtrArray *records;
  GStatBuf stat_buf;
  void (*saved_handler) (int);
  gint i;

  fail_unless (writer != NULL);
  fail_unless (g_stat (tb_writer_get_path (writer), &stat_buf) == 0);
  fail_unless (getrlimit (RLIMIT_FSIZE, &saved) == 0);
  /* room for part of the next records, not all */
  limit = saved;
  limit.rlim_cur = (rlim_t)stat_buf.st_size + 100;
  saved_handler = signal (SIGXFSZ, SIG_IGN);
  fail_unless (setrlimit (RLIMIT_FSIZE, &limit) == 0);
  for (i = 0; i < 10; i++)
    tb_writer_add_scalar (writer, "train/loss", i + 1, i);
  fail_if (tb_writer_flush (writer, &error));
  fail_unless (error != NULL);
  fail_unless (strstr (error->message, tb_writer_get_path (writer)) != NULL);
  g_clear_error (&error);
  fail_unless (setrlimit (RLIMIT_FSIZE, &saved) == 0);
  signal (SIGXFSZ, saved_handler);
  records = read_records (tb_writer_get_path (writer));
  fail_unless_equals_int (records->len, 1);
  g_ptr_array_unref (records);

  /* room again: the failed events are gone, the new ones written */
  tb_writer_add_scalar (writer, "train/loss", 11, 11);
  fail_unless (tb_writer_flush (writer, &error));
  records = read_records (tb_writer_get_path (writer));
  fail_unless_equals_int (records->len, 2);
  g_ptr_array_unref (records);
  tb_writer_free (writer);
  remove_scratch_dir (dir);
}

GST_END_TEST;

#define TB_WRITER_TESTS(test)                                                  \
  test (test_crc32c_check_value);                                              \
  test (test_events_as_tensorboard_reads_them);                                \
  test (test_file_name_sorts_after_the_folder_s_files);                        \
  test (test_folder_that_cannot_be_made_is_named);                             \
  test (test_failed_write_leaves_whole_records);

CHECK_MAIN (tb_writer, "tb-writer", TB_WRITER_TESTS);
