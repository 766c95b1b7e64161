/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* datasetsrc-shards.c: datasetsrc on WebDataset shards that the tests
 * write (tar files made here, member by member), and the GLib-only pieces
 * under it: brace patterns (shard-pattern.c), the tar reader
 * (shard-reader.c), the shard split and shuffle (shard-shuffle.c). */
#include <gst/check/gstcheck.h>
#include <glib/gstdio.h>
#include <string.h>

#include "check-main.h"
#include "fixtures.h"
#include "shard-memory.h"
#include "shard-pattern.h"
#include "shard-reader.h"
#include "shard-shuffle.h"
#include "train-meta.h"

#define NUM_CLASSES 10

/* ---- tar files, written by hand ---- */

static void
tar_header (GByteArray *tar, const gchar *name, gsize size, gchar type)
{
  guint8 h[512] = { 0 };
  guint sum = 0, i;

  g_assert (strlen (name) < 100);
  memcpy (h, name, strlen (name));
  g_snprintf ((gchar *)h + 100, 8, "%07o", 0644);
  g_snprintf ((gchar *)h + 108, 8, "%07o", 0);
  g_snprintf ((gchar *)h + 116, 8, "%07o", 0);
  g_snprintf ((gchar *)h + 124, 12, "%011lo", (unsigned long)size);
  g_snprintf ((gchar *)h + 136, 12, "%011o", 0);
  h[156] = type;
  memcpy (h + 257, "ustar", 6);
  memcpy (h + 263, "00", 2);
  memset (h + 148, ' ', 8);
  for (i = 0; i < 512; i++)
    sum += h[i];
  g_snprintf ((gchar *)h + 148, 8, "%06o", sum);
  g_byte_array_append (tar, h, 512);
}

static void
tar_data (GByteArray *tar, const void *data, gsize size)
{
  static const guint8 zeros[512] = { 0 };

  g_byte_array_append (tar, data, size);
  g_byte_array_append (tar, zeros, (512 - size % 512) % 512);
}

static void
tar_member (GByteArray *tar, const gchar *name, const void *data, gsize size)
{
  tar_header (tar, name, size, '0');
  tar_data (tar, data, size);
}

/* A PAX header that names the next member @path (longer than 100). */
static void
tar_pax_path (GByteArray *tar, const gchar *path)
{
  gchar *record = NULL;
  gsize length = strlen (path) + 8, i;

  /* the record's length counts its own digits */
  for (i = 0; i < 3; i++) {
    g_free (record);
    record = g_strdup_printf ("%" G_GSIZE_FORMAT " path=%s\n", length, path);
    length = strlen (record);
  }
  tar_header (tar, "PaxHeaders/x", strlen (record), 'x');
  tar_data (tar, record, strlen (record));
  g_free (record);
}

static void
tar_finish (GByteArray *tar)
{
  static const guint8 zeros[1024] = { 0 };

  g_byte_array_append (tar, zeros, sizeof (zeros));
}

/* Adds sample @key: an 8x8 JPEG (pattern @seed) and the label text. */
static void
tar_sample (GByteArray *tar, const gchar *key, guint seed, const gchar *label)
{
  FixtureJpeg how = { FIXTURE_YCC_420, FALSE, FALSE, 0, 90 };
  gsize size;
  guint8 *jpeg = fixture_jpeg_encode (8, 8, seed, &how, &size);
  gchar *name = g_strdup_printf ("%s.jpg", key);

  tar_member (tar, name, jpeg, size);
  g_free (name);
  if (label != NULL) {
    name = g_strdup_printf ("%s.cls", key);
    tar_member (tar, name, label, strlen (label));
    g_free (name);
  }
  g_free (jpeg);
}

/* Writes @n_shards shards "shard-000.tar", ... of @per_shard samples into
 * the scratch folder: sample i of shard s has key "s<s>_<i>" and label (s *
 * per_shard + i) % NUM_CLASSES. */
static void
write_shards (guint n_shards, guint per_shard)
{
  guint s, i;

  for (s = 0; s < n_shards; s++) {
    GByteArray *tar = g_byte_array_new ();
    gchar *path = g_strdup_printf ("%s/shard-%03u.tar", fixture_scratch (), s);

    for (i = 0; i < per_shard; i++) {
      gchar *key = g_strdup_printf ("s%u_%04u", s, i);
      gchar *label = g_strdup_printf ("%u", (s * per_shard + i) % NUM_CLASSES);

      tar_sample (tar, key, s * 100 + i, label);
      /* a member datasetsrc passes over */
      g_free (key);
      key = g_strdup_printf ("s%u_%04u.json", s, i);
      tar_member (tar, key, "{}", 2);
      g_free (key);
      g_free (label);
    }
    tar_finish (tar);
    fixture_write_file (path, tar->data, tar->len);
    g_byte_array_unref (tar);
    g_free (path);
  }
}

/* The shards' location in the scratch folder: "DIR/shard-{000..N-1}.tar". */
static const gchar *
shard_pattern (guint n_shards)
{
  return fixture_scratch_own (g_strdup_printf (
      "%s/shard-{000..%03u}.tar", fixture_scratch (), n_shards - 1));
}

/* ---- the GLib-only pieces ---- */

static void
expect_expansion (const gchar *location, const gchar *joined)
{
  GError *error = NULL;
  gchar **names = gst_train_shard_pattern_expand (location, &error);
  gchar *got;

  fail_unless (names != NULL, "%s: %s", location, error->message);
  got = g_strjoinv (" ", names);
  fail_unless_equals_string (got, joined);
  g_free (got);
  g_strfreev (names);
}

static void
expect_bad_pattern (const gchar *location, const gchar *part)
{
  GError *error = NULL;

  fail_unless (gst_train_shard_pattern_expand (location, &error) == NULL);
  fail_unless (strstr (error->message, part) != NULL, "%s", error->message);
  g_error_free (error);
}

GST_START_TEST (test_patterns)
{
  expect_expansion ("a-{000..002}.tar", "a-000.tar a-001.tar a-002.tar");
  expect_expansion ("d/{8..10}.tar  e.tar", "d/8.tar d/9.tar d/10.tar e.tar");
  expect_expansion ("{0..10..5}", "0 5 10");
  expect_expansion ("{3..1}", "3 2 1");
  expect_expansion ("{a..c}", "a b c");
  expect_expansion ("{train,val}-{0..1}", "train-0 train-1 val-0 val-1");
  expect_expansion ("x{a,b{1..2}}y", "xay xb1y xb2y");
  expect_expansion (
      "http://h/s-{01..02}.tar", "http://h/s-01.tar http://h/s-02.tar");
  expect_bad_pattern ("a{1..}.tar", "not two numbers");
  expect_bad_pattern ("a{1..3.tar", "without its");
  expect_bad_pattern ("a1}.tar", "without its");
  expect_bad_pattern ("{1..5..0}", "step");
  expect_bad_pattern ("{0..99999999}", "more than");
  expect_bad_pattern ("  ", "no shard");

  fail_unless (gst_train_shard_location_is_shards ("/d/a.tar"));
  fail_unless (gst_train_shard_location_is_shards ("/d/a-{0..3}"));
  fail_unless (gst_train_shard_location_is_shards ("https://h/x"));
  fail_unless (gst_train_shard_location_is_shards ("/d/list.txt /d/b.tar"));
  fail_if (gst_train_shard_location_is_shards ("/data/train"));
  fail_if (gst_train_shard_location_is_shards ("/data/list.txt"));
}

GST_END_TEST;

/* Reads in odd steps, so that members straddle the reader's buffer; with
 * no skip, so that the reader reads what it passes over. */
static const GstTrainShardSourceFuncs memory_funcs = { shard_memory_read,
  NULL };

/* Long names (PAX and ustar prefix-less GNU "L"), folders, members without
 * a key, upper-case extensions, other members: the samples are what
 * WebDataset makes of them. */
GST_START_TEST (test_reader_formats)
{
  GByteArray *tar = g_byte_array_new ();
  gchar *long_dir = g_strnfill (120, 'd');
  gchar *long_key = g_strdup_printf ("%s/sample", long_dir);
  gchar *long_jpg = g_strdup_printf ("%s.jpg", long_key);
  GstTrainShardSample sample = { 0 };
  GstTrainShardReader *reader;
  ShardMemory m;
  guint step;

  tar_header (tar, "dir/", 0, '5');
  tar_member (tar, "README", "x", 1);
  tar_pax_path (tar, long_jpg);
  tar_member (tar, "ignored-name.jpg", "JPEGDATA", 8);
  {
    gchar *cls = g_strdup_printf ("%s.cls", long_key);

    tar_pax_path (tar, cls);
    g_free (cls);
  }
  tar_member (tar, "x.cls", " 3\n", 3);
  tar_member (tar, "b/k.JPEG", "IMG", 3);
  tar_member (tar, "b/k.cls", "-2", 2);
  tar_member (tar, "b/k.seg.png", "P", 1);
  tar_member (tar, "c.cls", "abc", 3);
  tar_finish (tar);

  for (step = 1; step < 2000; step += 499) {
    m = (ShardMemory){ tar->data, tar->len, 0, step * 512 + step % 3 };
    reader = gst_train_shard_reader_new (&memory_funcs, &m, 0, 0, TRUE);
    fail_unless_equals_int (
        gst_train_shard_reader_next (reader, &sample, NULL), 1);
    fail_unless_equals_string (sample.key, long_key);
    fail_unless_equals_string (sample.image_member, long_jpg);
    fail_unless_equals_int (sample.image_size, 8);
    fail_unless (memcmp (sample.image, "JPEGDATA", 8) == 0);
    fail_unless_equals_int (sample.label_status, GST_TRAIN_SHARD_LABEL_OK);
    fail_unless_equals_int (sample.label, 3);
    fail_unless_equals_int (sample.ordinal, 0);
    fail_unless_equals_int (
        gst_train_shard_reader_next (reader, &sample, NULL), 1);
    fail_unless_equals_string (sample.key, "b/k");
    fail_unless_equals_string (sample.image_member, "b/k.JPEG");
    fail_unless_equals_int (sample.label, -2);
    fail_unless_equals_int (sample.ordinal, 1);
    fail_unless_equals_int (
        gst_train_shard_reader_next (reader, &sample, NULL), 1);
    fail_unless_equals_string (sample.key, "c");
    fail_unless (sample.image_member == NULL);
    fail_unless_equals_int (
        sample.label_status, GST_TRAIN_SHARD_LABEL_NOT_A_NUMBER);
    fail_unless_equals_string (sample.label_text, "abc");
    fail_unless_equals_int (
        gst_train_shard_reader_next (reader, &sample, NULL), 0);
    fail_unless_equals_int (
        gst_train_shard_reader_next (reader, &sample, NULL), 0);
    gst_train_shard_reader_free (reader);
  }

  /* cut anywhere: the samples before the cut, then an error at its byte */
  for (step = 0; step < tar->len - 1024; step += 97) {
    GError *error = NULL;
    gint got, n = 0;

    m = (ShardMemory){ tar->data, step, 0, 700 };
    reader = gst_train_shard_reader_new (&memory_funcs, &m, 0, 0, FALSE);
    while ((got = gst_train_shard_reader_next (reader, &sample, &error)) == 1)
      n++;
    fail_unless (n <= 3);
    if (got == -1) {
      fail_unless (g_error_matches (
          error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_DAMAGED));
      fail_unless (strstr (error->message, "damaged at byte") != NULL);
      g_error_free (error);
    }
    gst_train_shard_reader_free (reader);
  }
  gst_train_shard_sample_clear (&sample);
  g_byte_array_unref (tar);
  g_free (long_dir);
  g_free (long_key);
  g_free (long_jpg);
}

GST_END_TEST;

GST_START_TEST (test_split_and_order)
{
  guint n, *mine = gst_train_rank_split (7, 1, 3, &n), order[3], again[3];

  fail_unless_equals_int (n, 2);
  fail_unless (mine[0] == 1 && mine[1] == 4);
  g_free (mine);
  mine = gst_train_rank_split (7, 0, 3, &n);
  fail_unless_equals_int (n, 3);
  gst_train_shard_epoch_order (mine, order, n, 1, 0, FALSE);
  fail_unless (order[0] == 0 && order[1] == 3 && order[2] == 6);
  gst_train_shard_epoch_order (mine, order, n, 1, 4, TRUE);
  gst_train_shard_epoch_order (mine, again, n, 1, 4, TRUE);
  fail_unless (memcmp (order, again, sizeof (order)) == 0);
  fail_unless_equals_int (order[0] + order[1] + order[2], 9);
  g_free (mine);
}

GST_END_TEST;

/* The rotation alone: one sample from each slot in turn, a shard that
 * ends gives its slot to the next of the order and that turn's sample, and
 * once the order is spent the empty slots are passed over. */
GST_START_TEST (test_rotation)
{
  /* shards (places in the order) of 2, 1, 3 and 2 samples in 2 slots */
  static const guint sizes[] = { 2, 1, 3, 2 };
  /* the place each sample comes from */
  static const guint want[] = { 0, 1, 0, 2, 3, 2, 3, 2 };
  GstTrainShardRotation rotation = { 0 };
  guint taken[4] = { 0 }, n = 0, opened, place;
  gint slot;

  gst_train_shard_rotation_init (&rotation, 2, 4);
  while ((slot = gst_train_shard_rotation_next (&rotation, &opened)) >= 0) {
    place = rotation.open[slot];
    fail_unless (opened == G_MAXUINT || opened == place);
    if (taken[place] == sizes[place]) {
      fail_unless (opened == G_MAXUINT, "a shard opened empty");
      gst_train_shard_rotation_end (&rotation, slot);
      continue;
    }
    taken[place]++;
    fail_unless (n < G_N_ELEMENTS (want));
    fail_unless_equals_int (place, want[n]);
    n++;
    gst_train_shard_rotation_advance (&rotation);
  }
  fail_unless_equals_int (n, G_N_ELEMENTS (want));
  fail_unless_equals_int (rotation.n_open, 0);
  /* one slot: the shards one after the other */
  gst_train_shard_rotation_init (&rotation, 1, 3);
  for (place = 0; place < 3; place++) {
    fail_unless_equals_int (
        gst_train_shard_rotation_next (&rotation, &opened), 0);
    fail_unless_equals_int (opened, place);
    gst_train_shard_rotation_advance (&rotation);
    fail_unless_equals_int (
        gst_train_shard_rotation_next (&rotation, &opened), 0);
    fail_unless_equals_int (opened, G_MAXUINT);
    gst_train_shard_rotation_end (&rotation, 0);
  }
  fail_unless_equals_int (
      gst_train_shard_rotation_next (&rotation, &opened), -1);
  gst_train_shard_rotation_clear (&rotation);
}

GST_END_TEST;

/* ---- the element ---- */

/* shuffle=false interleave=false: the shards in the order written, each
 * front to back (webdataset's order in one process); the sample meta names
 * the shard and the member; tags say the classes. */
GST_START_TEST (test_shard_order_unshuffled)
{
  const gchar *dir = fixture_scratch ();
  const gchar *extra = fixture_scratch_path ("shard-002.tar", NULL);
  const gchar *location;
  GstTrainDatasetInfo info;
  RunResult *r;
  guint i;

  write_shards (3, 4);
  /* several patterns and files, separated by spaces, in the order written */
  location = fixture_scratch_own (
      g_strdup_printf ("%s %s/shard-{000..001}.tar", extra, dir));
  r = fixture_run_src (
      location, "shuffle=false interleave=false num-epochs=2 num-classes=10");
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, 24);
  for (i = 0; i < r->samples->len; i++) {
    RunSample *s = run_result_sample (r, i);
    guint place = i % 12, shard = (place / 4 + 2) % 3, member = place % 4;
    gchar *want = g_strdup_printf (
        "%s/shard-%03u.tar#s%u_%04u.jpg", dir, shard, shard, member);

    fail_unless (s->has_meta);
    fail_unless_equals_string (s->location, want);
    fail_unless_equals_int (s->label, (shard * 4 + member) % NUM_CLASSES);
    fail_unless_equals_int (s->epoch, i / 12);
    /* the index: the place of the shard in the list, and of the sample */
    fail_unless_equals_uint64 (s->index, ((guint64)(place / 4) << 32) | member);
    g_free (want);
  }
  fail_unless_equals_int (r->warnings->len, 0);
  fail_unless (gst_train_dataset_info_from_tag_list (r->tags, &info));
  fail_unless_equals_int (info.num_classes, NUM_CLASSES);
  fail_unless_equals_int (info.num_shards, 1);
  /* known once epoch 0 was read, and sent again */
  fail_unless_equals_uint64 (info.epoch_samples, 12);
  gst_train_dataset_info_clear (&info);
  run_result_free (r);
}

GST_END_TEST;

static gint
compare_indices (gconstpointer a, gconstpointer b)
{
  guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;

  return x < y ? -1 : x > y;
}

/* Every sample of the 4 shards of 5 once: a permutation. */
static void
expect_permutation (GArray *indices)
{
  GArray *sorted = g_array_copy (indices);
  guint i;

  g_array_sort (sorted, compare_indices);
  fail_unless_equals_int (sorted->len, 20);
  for (i = 0; i < 20; i++)
    fail_unless_equals_uint64 (
        g_array_index (sorted, guint64, i), ((guint64)(i / 5) << 32) | (i % 5));
  g_array_unref (sorted);
}

/* The shard order is drawn per epoch from the seed, then the shuffle
 * buffer mixes samples; the same seed gives the same order, every epoch
 * is a permutation; with a buffer of one and interleave=false, each shard
 * is read front to back, in one run. */
GST_START_TEST (test_shuffle_as_webdataset)
{
  const gchar *location = shard_pattern (4);
  RunResult *a, *b, *c, *d;
  GArray *a0, *a1, *b0, *c0, *d0;
  guint i;

  write_shards (4, 5);
  a = fixture_run_src (location,
      "seed=5 num-epochs=2 shuffle-buffer-size=6 "
      "num-classes=10");
  b = fixture_run_src (location,
      "seed=5 num-epochs=1 shuffle-buffer-size=6 "
      "num-classes=10");
  c = fixture_run_src (location,
      "seed=6 num-epochs=1 shuffle-buffer-size=6 "
      "num-classes=10");
  d = fixture_run_src (location,
      "seed=5 num-epochs=1 shuffle-buffer-size=1 interleave=false "
      "num-classes=10");
  a0 = run_result_indices (a, 0);
  a1 = run_result_indices (a, 1);
  b0 = run_result_indices (b, 0);
  c0 = run_result_indices (c, 0);
  d0 = run_result_indices (d, 0);
  expect_permutation (a0);
  expect_permutation (a1);
  expect_permutation (c0);
  expect_permutation (d0);
  fail_unless (
      fixture_arrays_equal (a0, b0), "the same seed gave another order");
  fail_if (
      fixture_arrays_equal (a0, a1), "epochs 0 and 1 came in the same order");
  fail_if (fixture_arrays_equal (a0, c0), "seeds 5 and 6 gave the same order");
  /* one slot: shards front to back, in an order that is not 0 1 2 3 */
  for (i = 0; i < 20; i++) {
    guint64 head = g_array_index (d0, guint64, i / 5 * 5);

    fail_unless_equals_uint64 (g_array_index (d0, guint64, i), head + i % 5);
  }
  for (i = 0; i < 4; i++)
    if (g_array_index (d0, guint64, i * 5) >> 32 != i)
      break;
  fail_unless (i < 4, "shards in the order written");

  g_array_unref (a0);
  g_array_unref (a1);
  g_array_unref (b0);
  g_array_unref (c0);
  g_array_unref (d0);
  run_result_free (a);
  run_result_free (b);
  run_result_free (c);
  run_result_free (d);
}

GST_END_TEST;

/* In a job of 3 ranks (the launcher's environment) each rank reads shards
 * of its own, rank r shards r, r + 3, ...: every sample once per epoch
 * across the job; rank/num-ranks do the same by hand; fewer shards
 * than ranks is an error that names both. */
GST_START_TEST (test_shards_split_across_ranks)
{
  const gchar *location = shard_pattern (7);
  guint seen[7 * 3] = { 0 }, i;
  gint rank;

  write_shards (7, 3);
  for (rank = 0; rank < 3; rank++) {
    gchar *props = g_strdup_printf ("seed=2 num-epochs=2 shuffle-buffer-size=4 "
                                    "num-classes=10 rank=%d num-ranks=3",
        rank);
    RunResult *r, *by_hand = fixture_run_src (location, props);
    GstTrainDatasetInfo info;

    fixture_set_launcher (rank, 3);
    r = fixture_run_src (location,
        "seed=2 num-epochs=2 shuffle-buffer-size=4 "
        "num-classes=10");
    fixture_set_launcher (-1, 0);
    fail_unless (r->error == NULL, "%s", r->error);
    /* shards r, r + 3, (r + 6): 3 or 2 shards of 3 samples, 2 epochs */
    fail_unless_equals_int (r->samples->len, 2 * 3 * (rank == 0 ? 3 : 2));
    for (i = 0; i < r->samples->len; i++) {
      RunSample *s = run_result_sample (r, i);
      guint shard = (guint)(s->index >> 32);

      fail_unless_equals_int (shard % 3, rank);
      fail_unless_equals_uint64 (
          s->index, run_result_sample (by_hand, i)->index);
      if (s->epoch == 0)
        seen[shard * 3 + (s->index & 0xffffffff)]++;
    }
    fail_unless (gst_train_dataset_info_from_tag_list (r->tags, &info));
    fail_unless_equals_int (info.shard_index, rank);
    fail_unless_equals_int (info.num_shards, 3);
    gst_train_dataset_info_clear (&info);
    run_result_free (r);
    run_result_free (by_hand);
    g_free (props);
  }
  for (i = 0; i < G_N_ELEMENTS (seen); i++)
    fail_unless_equals_int (seen[i], 1);

  /* 7 shards for 8 ranks */
  fixture_set_launcher (7, 8);
  {
    RunResult *r = fixture_run_src (location, "num-classes=10");

    fail_unless (r->error != NULL);
    fail_unless (strstr (r->error, "names 7 shards for 8 ranks") != NULL, "%s",
        r->error);
    run_result_free (r);
  }
  fixture_set_launcher (-1, 0);
}

GST_END_TEST;

/* Samples with no label, a label that is not a number or is out of range,
 * or no image: each skipped with a warning once per run and counted; with
 * on-error=fail the first is an error. */
GST_START_TEST (test_bad_samples)
{
  const gchar *path = fixture_scratch_path ("bad.tar", NULL);
  GByteArray *tar = g_byte_array_new ();
  RunResult *r;
  guint i;

  tar_sample (tar, "good0", 1, "1");
  tar_sample (tar, "nolabel", 2, NULL);
  tar_sample (tar, "word", 3, "cat");
  tar_sample (tar, "big", 4, "10");
  tar_member (tar, "noimage.cls", "2", 1);
  tar_sample (tar, "good1", 5, " 9\n");
  tar_finish (tar);
  fixture_write_file (path, tar->data, tar->len);

  r = fixture_run_src (path, "shuffle=false num-epochs=2 num-classes=10");
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, 4);
  for (i = 0; i < 4; i++)
    fail_unless_equals_int (run_result_sample (r, i)->label, i % 2 ? 9 : 1);
  fail_unless_equals_int (r->warnings->len, 4);
  fail_unless (run_result_has_warning (r, "nolabel", "no cls member"));
  fail_unless (run_result_has_warning (r, "\"cat\"", "not a number"));
  fail_unless (run_result_has_warning (r, "big", "10 is out of range"));
  fail_unless (run_result_has_warning (r, "noimage", "no jpg or jpeg"));
  fail_unless (run_result_has_warning (r, path, "Skipping sample"));
  run_result_free (r);

  r = fixture_run_src (path, "shuffle=false num-classes=10 on-error=fail");
  fail_unless (r->error != NULL);
  fail_unless (strstr (r->error, "nolabel") != NULL, "%s", r->error);
  fail_unless (strstr (r->error, path) != NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, 1);
  run_result_free (r);

  g_byte_array_unref (tar);
}

GST_END_TEST;

/* A memory shard whose reads fail with @code once @cut bytes are read. */
typedef struct
{
  ShardMemory memory;
  gsize cut;
  gint code;
} ShardCut;

static gssize
shard_cut_read (gpointer source, guint8 *data, gsize size, GError **error)
{
  ShardCut *c = source;

  if (c->memory.at >= c->cut) {
    g_set_error (error, GST_TRAIN_SHARD_ERROR, c->code,
        "cut at byte %" G_GSIZE_FORMAT, c->cut);
    return -1;
  }
  return shard_memory_read (
      &c->memory, data, MIN (size, c->cut - c->memory.at), error);
}

static const GstTrainShardSourceFuncs cut_funcs = { shard_cut_read, NULL };

/* Reads @tar until its reads fail with @code at byte @cut: the keys handed
 * out, in order, each with ":LABEL", or "?" when it came without one. */
static gchar *
read_until_cut (GByteArray *tar, gsize cut, gint code)
{
  ShardCut c = { { tar->data, tar->len, 0, 700 }, cut, code };
  GstTrainShardReader *reader;
  GstTrainShardSample sample = { 0 };
  GString *keys = g_string_new (NULL);
  GError *error = NULL;
  gint got;

  reader = gst_train_shard_reader_new (&cut_funcs, &c, 0, 0, FALSE);
  while ((got = gst_train_shard_reader_next (reader, &sample, &error)) == 1) {
    g_string_append_printf (keys, "%s%s", keys->len > 0 ? " " : "", sample.key);
    if (sample.label_status == GST_TRAIN_SHARD_LABEL_OK)
      g_string_append_printf (keys, ":%" G_GINT64_FORMAT, sample.label);
    else
      g_string_append_c (keys, '?');
  }
  fail_unless_equals_int (got, -1);
  fail_unless (g_error_matches (error, GST_TRAIN_SHARD_ERROR, code));
  g_clear_error (&error);
  gst_train_shard_reader_free (reader);
  gst_train_shard_sample_clear (&sample);
  return g_string_free (keys, FALSE);
}

/* A read that a flush ends (a stop, Ctrl-C) between a sample's image and
 * its label: the sample is not handed out half read (it used to be, and
 * the element then warned that the shard's sample had no label); a read
 * that fails there for any other reason keeps handing it out, with the
 * error after it. */
GST_START_TEST (test_reader_stop_between_members)
{
  GByteArray *tar = g_byte_array_new ();
  gchar *keys;
  gsize cut;

  tar_member (tar, "a.jpg", "IMAGE-A", 7);
  tar_member (tar, "a.cls", "1", 1);
  cut = tar->len + 1024; /* after b.jpg's header and data */
  tar_member (tar, "b.jpg", "IMAGE-B", 7);
  tar_member (tar, "b.cls", "2", 1);
  tar_finish (tar);

  keys = read_until_cut (tar, cut, GST_TRAIN_SHARD_ERROR_CANCELLED);
  fail_unless_equals_string (keys, "a:1");
  g_free (keys);
  keys = read_until_cut (tar, cut, GST_TRAIN_SHARD_ERROR_READ);
  fail_unless_equals_string (keys, "a:1 b?");
  g_free (keys);
  g_byte_array_unref (tar);
}

GST_END_TEST;

/* A shard cut short: the samples before the damage go out, one warning
 * names the shard and the byte, counted once per run; the next shard is
 * read whole (one shard after the other here; test_interleaved_order cuts
 * one among interleaved shards). */
GST_START_TEST (test_truncated_shard)
{
  const gchar *dir = fixture_scratch ();
  const gchar *shard0 = fixture_scratch_path ("shard-000.tar", NULL);
  const gchar *location = shard_pattern (2);
  gchar *contents, *cut;
  gsize length;
  RunResult *r;

  write_shards (2, 4);
  fail_unless (g_file_get_contents (shard0, &contents, &length, NULL));
  /* cut in the third sample's image */
  for (cut = contents; cut + 11 < contents + length; cut++)
    if (memcmp (cut, "s0_0002.jpg", 11) == 0)
      break;
  fail_unless (cut + 11 < contents + length);
  fixture_write_file (shard0, (const guint8 *)contents, cut - contents + 600);
  g_free (contents);

  r = fixture_run_src (
      location, "shuffle=false interleave=false num-epochs=2 num-classes=10");
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, 2 * (2 + 4));
  fail_unless_equals_string (run_result_sample (r, 1)->location,
      strstr (run_result_sample (r, 1)->location, dir));
  fail_unless (g_str_has_suffix (
      run_result_sample (r, 1)->location, "shard-000.tar#s0_0001.jpg"));
  fail_unless (g_str_has_suffix (
      run_result_sample (r, 2)->location, "shard-001.tar#s1_0000.jpg"));
  fail_unless_equals_int (r->warnings->len, 1);
  fail_unless (run_result_has_warning (r, shard0, "damaged at byte"));
  fail_unless (run_result_has_warning (r, "ends inside", "before the damage"));
  run_result_free (r);

  fail_unless_equals_uint64 (
      fixture_src_files_skipped (location,
          "shuffle=false interleave=false num-epochs=3 num-classes=10"),
      1);
}

GST_END_TEST;

/* Whether samples @a[from..] and @b[0..] are the same: meta and bytes. */
static void
expect_tail (RunResult *whole, guint from, RunResult *tail)
{
  guint i;

  fail_unless (tail->error == NULL, "%s", tail->error);
  fail_unless_equals_int (tail->samples->len, whole->samples->len - from);
  for (i = 0; i < tail->samples->len; i++) {
    RunSample *a = run_result_sample (whole, from + i);
    RunSample *b = run_result_sample (tail, i);
    GstBuffer *x = gst_sample_get_buffer (a->sample);
    GstBuffer *y = gst_sample_get_buffer (b->sample);
    GstMapInfo mx, my;

    fail_unless_equals_uint64 (a->index, b->index);
    fail_unless_equals_int (a->epoch, b->epoch);
    fail_unless_equals_int (a->label, b->label);
    fail_unless_equals_string (a->location, b->location);
    fail_unless (gst_buffer_map (x, &mx, GST_MAP_READ));
    fail_unless (gst_buffer_map (y, &my, GST_MAP_READ));
    fail_unless (mx.size == my.size && memcmp (mx.data, my.data, mx.size) == 0,
        "sample %u from %u: other bytes", i, from);
    gst_buffer_unmap (x, &mx);
    gst_buffer_unmap (y, &my);
  }
}

/* Overwrites the image data of the member @location names
 * ("SHARD#MEMBER"), keeping its size. */
static void
spoil_image (const gchar *location)
{
  gchar **parts = g_strsplit (location, "#", 2);
  gchar *contents;
  gsize length, at;
  guint64 size;

  fail_unless (g_file_get_contents (parts[0], &contents, &length, NULL));
  for (at = 0; at + 512 <= length; at += 512)
    if (strcmp (contents + at, parts[1]) == 0)
      break;
  fail_unless (at + 512 <= length, "%s not found", location);
  size = g_ascii_strtoull (contents + at + 124, NULL, 8);
  memset (contents + at + 512, 0x55, size);
  fixture_write_file (parts[0], (const guint8 *)contents, length);
  g_free (contents);
  g_strfreev (parts);
}

/* start-position, within an epoch, at a shard's end, across epochs, past
 * the end: the same samples as the tail of the whole run, bytes and meta,
 * bad samples and all; the images before the place are not read (spoiled,
 * they go unnoticed). */
GST_START_TEST (test_start_position)
{
  const gchar *dir = fixture_scratch ();
  const gchar *extra = fixture_scratch_path ("extra.tar", NULL);
  const gchar *location = fixture_scratch_own (
      g_strdup_printf ("%s/shard-{000..003}.tar %s", dir, extra));
  const gchar *common = "seed=4 shuffle-buffer-size=3 num-classes=10";
  GByteArray *tar = g_byte_array_new ();
  guint starts[] = { 1, 4, 7, 11, 22, 25, 49, 66 }, i;
  RunResult *whole, *tail;
  gchar *props;

  write_shards (4, 5);
  tar_sample (tar, "e0", 1, "1");
  tar_sample (tar, "e1", 2, "x");
  tar_sample (tar, "e2", 3, "2");
  tar_finish (tar);
  fixture_write_file (extra, tar->data, tar->len);

  props = g_strdup_printf ("%s num-epochs=3", common);
  whole = fixture_run_src (location, props);
  g_free (props);
  fail_unless (whole->error == NULL, "%s", whole->error);
  fail_unless_equals_int (whole->samples->len, 3 * 22);
  for (i = 0; i < G_N_ELEMENTS (starts); i++) {
    props = g_strdup_printf (
        "%s num-epochs=3 start-position=%u", common, starts[i]);
    tail = fixture_run_src (location, props);
    expect_tail (whole, starts[i], tail);
    run_result_free (tail);
    g_free (props);
  }
  run_result_free (whole);

  /* one epoch, shard order: the images before sample 13 spoiled */
  props = g_strdup_printf ("%s shuffle=false", common);
  whole = fixture_run_src (location, props);
  g_free (props);
  for (i = 0; i < 13; i++)
    spoil_image (run_result_sample (whole, i)->location);
  props = g_strdup_printf ("%s shuffle=false start-position=13", common);
  tail = fixture_run_src (location, props);
  expect_tail (whole, 13, tail);
  run_result_free (tail);
  g_free (props);
  run_result_free (whole);

  g_byte_array_unref (tar);
}

GST_END_TEST;

/* What a downstream pad probe answers the resume query with (as in
 * datasetsrc.c's test of the same). */
typedef struct
{
  guint64 samples;
  const guint64 *keep; /* NULL: not narrowed */
  guint n_keep;
  guint64 keep_end;
  guint asked;
} ResumeAnswer;

static GstPadProbeReturn
answer_resume (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  ResumeAnswer *answer = user_data;
  GstQuery *query = GST_PAD_PROBE_INFO_QUERY (info);

  if (!gst_train_is_resume_query (query))
    return GST_PAD_PROBE_OK;
  gst_train_resume_query_set (query, answer->samples, answer->samples, 0);
  if (answer->keep != NULL)
    gst_train_resume_query_set_keep (
        query, answer->keep, answer->n_keep, answer->keep_end);
  answer->asked++;
  return GST_PAD_PROBE_HANDLED;
}

static void
record_index (GstElement *sink, GstBuffer *buffer, GstPad *pad, gpointer data)
{
  GstTrainSampleMeta *meta = gst_buffer_get_train_sample_meta (buffer);

  fail_unless (meta != NULL);
  g_array_append_val ((GArray *)data, meta->index);
}

/* The sample indices that "datasetsrc location=@location @props !
 * fakesink" pushes when the sink pad answers the resume query with
 * @answer. */
static GArray *
run_resumed (const gchar *location, const gchar *props, ResumeAnswer *answer)
{
  gchar *launch = g_strdup_printf (
      "datasetsrc location=\"%s\" %s ! fakesink name=sink", location, props);
  GstElement *pipeline = gst_parse_launch (launch, NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  GArray *indices = g_array_new (FALSE, FALSE, sizeof (guint64));
  gchar *error;

  gst_pad_add_probe (
      pad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM, answer_resume, answer, NULL);
  g_object_set (sink, "signal-handoffs", TRUE, "sync", FALSE, NULL);
  g_signal_connect (sink, "handoff", G_CALLBACK (record_index), indices);
  answer->asked = 0;
  error = fixture_play_to_eos (pipeline, 0, NULL, NULL);
  fail_unless (error == NULL, "%s: %s", launch, error);
  fail_unless_equals_int (answer->asked, 1);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pad);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_free (launch);
  return indices;
}

/* Checks that @got is @whole from @from on, or, with @keep, @whole's
 * samples at @keep (@n_keep of them) and then from @end on. */
static void
expect_resumed (GArray *whole, GArray *got, guint64 from, const guint64 *keep,
    guint n_keep, guint64 end)
{
  guint i, k;

  if (keep == NULL) {
    n_keep = 0;
    end = from;
  }
  fail_unless_equals_int (
      got->len, n_keep + (whole->len - MIN (end, whole->len)));
  for (k = 0; k < n_keep; k++)
    fail_unless_equals_uint64 (g_array_index (got, guint64, k),
        g_array_index (whole, guint64, keep[k]));
  for (i = n_keep; i < got->len; i++)
    fail_unless_equals_uint64 (g_array_index (got, guint64, i),
        g_array_index (whole, guint64, end + i - n_keep));
}

/* On shards too the resume query's answer counts from start-position:
 * within an epoch, at an epoch's end, across epochs, past the end, and
 * narrowed to a few places counted from start-position. */
GST_START_TEST (test_resume_answer_counts_from_start_position)
{
  const gchar *dir = fixture_scratch ();
  const gchar *location =
      fixture_scratch_own (g_strdup_printf ("%s/shard-{000..003}.tar", dir));
  const gchar *common = "seed=4 shuffle-buffer-size=3 num-classes=10 "
                        "num-epochs=3";
  /* start-position, answer: 3 epochs of 20 */
  static const guint64 cases[][2] = { { 0, 9 }, { 7, 0 }, { 7, 4 }, { 15, 5 },
    { 15, 10 }, { 40, 30 } };
  static const guint64 keep[] = { 2, 4 };
  static const guint64 keep_at[] = { 5, 7 };
  ResumeAnswer answer = { 0 };
  RunResult *straight;
  GArray *whole, *got;
  guint i;

  write_shards (4, 5);
  straight = fixture_run_src (location, common);
  whole = run_result_indices (straight, -1);
  fail_unless_equals_int (whole->len, 3 * 20);
  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *props = g_strdup_printf (
        "%s start-position=%" G_GUINT64_FORMAT, common, cases[i][0]);

    answer.samples = cases[i][1];
    got = run_resumed (location, props, &answer);
    expect_resumed (whole, got, cases[i][0] + cases[i][1], NULL, 0, 0);
    g_array_unref (got);
    g_free (props);
  }

  /* of the answer's places 2 .. 5, only 2 and 4: places 3 + 2 and 3 + 4 of
   * the sequence, then 3 + 6 on */
  {
    gchar *props = g_strdup_printf ("%s start-position=3", common);

    answer.samples = 2;
    answer.keep = keep;
    answer.n_keep = G_N_ELEMENTS (keep);
    answer.keep_end = 6;
    got = run_resumed (location, props, &answer);
    expect_resumed (whole, got, 5, keep_at, G_N_ELEMENTS (keep_at), 9);
    g_array_unref (got);
    g_free (props);
  }
  g_array_unref (whole);
  run_result_free (straight);
}

GST_END_TEST;

/* Shards of uneven sizes for the interleaving tests: shard s holds
 * interleave_sizes[s] samples (keys "s<s>_<i>"), sample 2 of shard 1 has
 * a label that is not a number, and shard 4 is cut inside sample 2's
 * image (its samples 0 and 1 are kept). */
static const guint interleave_sizes[] = { 3, 7, 1, 5, 4, 6 };
#define INTERLEAVE_BAD_SHARD 1
#define INTERLEAVE_BAD_SAMPLE 2
#define INTERLEAVE_CUT_SHARD 4
#define INTERLEAVE_CUT_SAMPLE 2

static void
write_uneven_shards (void)
{
  guint s, i;

  for (s = 0; s < G_N_ELEMENTS (interleave_sizes); s++) {
    GByteArray *tar = g_byte_array_new ();
    gchar *path = g_strdup_printf ("%s/shard-%03u.tar", fixture_scratch (), s);

    for (i = 0; i < interleave_sizes[s]; i++) {
      gchar *key = g_strdup_printf ("s%u_%04u", s, i);
      gchar *label = g_strdup_printf ("%u", (s * 100 + i) % NUM_CLASSES);

      if (s == INTERLEAVE_CUT_SHARD && i == INTERLEAVE_CUT_SAMPLE) {
        gchar *name = g_strdup_printf ("%s.jpg", key);

        /* a header for 1000 bytes, 100 of them there */
        tar_header (tar, name, 1000, '0');
        g_byte_array_set_size (tar, tar->len + 100);
        g_free (name);
        g_free (key);
        g_free (label);
        break;
      }
      tar_sample (tar, key, s * 100 + i,
          s == INTERLEAVE_BAD_SHARD && i == INTERLEAVE_BAD_SAMPLE ? "x"
                                                                  : label);
      g_free (key);
      g_free (label);
    }
    if (s != INTERLEAVE_CUT_SHARD)
      tar_finish (tar);
    fixture_write_file (path, tar->data, tar->len);
    g_byte_array_unref (tar);
    g_free (path);
  }
}

/* Whether sample @i of shard @s is read (not bad, not past the cut). */
static gboolean
interleave_good (guint s, guint i)
{
  if (s == INTERLEAVE_BAD_SHARD && i == INTERLEAVE_BAD_SAMPLE)
    return FALSE;
  return s != INTERLEAVE_CUT_SHARD || i < INTERLEAVE_CUT_SAMPLE;
}

/* The oracle: the indices of one epoch as the interleaved order defines
 * them, written from the definition rather than with the rotation: the
 * first @n_slots shards of @order are open, one good sample is taken from
 * each open shard in turn, and a shard that has no sample left when its
 * turn comes gives its slot to the next shard of the order, which gives
 * that turn's sample. */
static GArray *
interleave_oracle (const guint *order, guint n_shards, guint n_slots)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (guint64));
  /* each slot's shard (-1: none) and its next sample */
  gint *shard = g_new (gint, n_slots);
  guint *at = g_new0 (guint, n_slots), next = 0, turn, idle = 0;

  for (turn = 0; turn < n_slots; turn++)
    shard[turn] = -1;
  for (turn = 0; idle < n_slots; turn = (turn + 1) % n_slots) {
    gboolean given = FALSE;

    for (;;) {
      if (shard[turn] >= 0) {
        guint s = (guint)shard[turn];

        while (at[turn] < interleave_sizes[s] && !interleave_good (s, at[turn]))
          at[turn]++;
        if (at[turn] < interleave_sizes[s]) {
          guint64 index = ((guint64)s << 32) | at[turn]++;

          g_array_append_val (out, index);
          given = TRUE;
          break;
        }
      }
      if (next == n_shards) {
        shard[turn] = -1;
        break;
      }
      shard[turn] = (gint)order[next++];
      at[turn] = 0;
    }
    idle = given ? 0 : idle + 1;
  }
  g_free (shard);
  g_free (at);
  return out;
}

/* The interleaved order is the oracle's over the epoch's shard order, for
 * every fetch-ahead (fetch-ahead + 1 shards open, or all of them when
 * fewer), shuffled or not (a shuffle buffer of one keeps the order the
 * shards give), across epochs; a bad sample does not use up its shard's
 * turn; a damaged shard gives up its slot after the samples before the
 * damage, with the warnings of shard after shard; interleave=false is the
 * oracle with one slot. */
GST_START_TEST (test_interleaved_order)
{
  const guint n = G_N_ELEMENTS (interleave_sizes);
  const gchar *location = shard_pattern (n);
  static const guint aheads[] = { 0, 1, 2, 3, 5, 9 };
  guint mine[G_N_ELEMENTS (interleave_sizes)], order[G_N_ELEMENTS (mine)];
  guint a, i, shuffle, interleave;
  gint epoch;

  write_uneven_shards ();
  for (i = 0; i < n; i++)
    mine[i] = i;
  for (shuffle = 0; shuffle < 2; shuffle++)
    for (interleave = 0; interleave < 2; interleave++)
      for (a = 0; a < G_N_ELEMENTS (aheads); a++) {
        gchar *props = g_strdup_printf (
            "seed=7 num-epochs=2 num-classes=10 shuffle-buffer-size=1 "
            "shuffle=%s interleave=%s fetch-ahead=%u",
            shuffle ? "true" : "false", interleave ? "true" : "false",
            aheads[a]);
        RunResult *r = fixture_run_src (location, props);
        guint n_slots = interleave ? MIN (aheads[a] + 1, n) : 1;

        fail_unless (r->error == NULL, "%s: %s", props, r->error);
        fail_unless_equals_int (r->warnings->len, 2);
        fail_unless (run_result_has_warning (r, "s1_0002", "not a number"));
        fail_unless (run_result_has_warning (r, "shard-004", "damaged"));
        for (epoch = 0; epoch < 2; epoch++) {
          GArray *got = run_result_indices (r, epoch), *want;

          gst_train_shard_epoch_order (mine, order, n, 7, epoch, shuffle);
          want = interleave_oracle (order, n, n_slots);
          fail_unless_equals_int (want->len, 23);
          fail_unless_equals_int (got->len, want->len);
          for (i = 0; i < want->len; i++)
            fail_unless (g_array_index (got, guint64, i)
                    == g_array_index (want, guint64, i),
                "%s: epoch %d, sample %u: %" G_GINT64_MODIFIER
                "x, not %" G_GINT64_MODIFIER "x",
                props, epoch, i, g_array_index (got, guint64, i),
                g_array_index (want, guint64, i));
          g_array_unref (want);
          g_array_unref (got);
        }
        run_result_free (r);
        g_free (props);
      }
}

GST_END_TEST;

/* An exact resume across the interleave: from every place of two epochs
 * of the uneven shards (inside the first rotation, where a shard ends and
 * the next takes its slot, in the damaged shard, at the epoch's end), with
 * each fetch-ahead and with interleave=false, the samples and their bytes
 * are the straight run's from that place on. */
GST_START_TEST (test_interleaved_resume)
{
  const gchar *location = shard_pattern (G_N_ELEMENTS (interleave_sizes));
  static const gchar *const variants[] = { "fetch-ahead=0", "fetch-ahead=1",
    "fetch-ahead=2", "fetch-ahead=9", "interleave=false" };
  guint v, start;

  write_uneven_shards ();
  for (v = 0; v < G_N_ELEMENTS (variants); v++) {
    gchar *props = g_strdup_printf (
        "seed=3 num-epochs=2 num-classes=10 shuffle-buffer-size=4 %s",
        variants[v]);
    RunResult *whole = fixture_run_src (location, props);

    fail_unless (whole->error == NULL, "%s", whole->error);
    fail_unless_equals_int (whole->samples->len, 2 * 23);
    for (start = 1; start <= whole->samples->len; start++) {
      gchar *from = g_strdup_printf ("%s start-position=%u", props, start);
      RunResult *tail = fixture_run_src (location, from);

      expect_tail (whole, start, tail);
      run_result_free (tail);
      g_free (from);
    }
    run_result_free (whole);
    g_free (props);
  }
}

GST_END_TEST;

/* Interleaving changes the order within a rank, not what a rank reads:
 * each rank of a job of 3 (the launcher's environment) gets the same
 * samples in each epoch as shard after shard, and the ranks' samples are
 * disjoint and complete. */
GST_START_TEST (test_interleave_keeps_rank_split)
{
  const gchar *location = shard_pattern (7);
  guint seen[2][7 * 3] = { { 0 } }, i;
  gint rank, epoch;

  write_shards (7, 3);
  for (rank = 0; rank < 3; rank++) {
    RunResult *mixed, *plain;

    fixture_set_launcher (rank, 3);
    mixed = fixture_run_src (
        location, "seed=2 num-epochs=2 shuffle-buffer-size=4 num-classes=10");
    plain = fixture_run_src (location,
        "seed=2 num-epochs=2 shuffle-buffer-size=4 num-classes=10 "
        "interleave=false");
    fixture_set_launcher (-1, 0);
    for (epoch = 0; epoch < 2; epoch++) {
      GArray *a = run_result_indices (mixed, epoch);
      GArray *b = run_result_indices (plain, epoch);

      fail_unless_equals_int (a->len, 3 * (rank == 0 ? 3 : 2));
      fail_if (fixture_arrays_equal (a, b), "rank %d: not interleaved", rank);
      g_array_sort (a, compare_indices);
      g_array_sort (b, compare_indices);
      fail_unless (fixture_arrays_equal (a, b),
          "rank %d, epoch %d: other samples when interleaved", rank, epoch);
      for (i = 0; i < a->len; i++) {
        guint64 index = g_array_index (a, guint64, i);

        fail_unless_equals_int ((guint)(index >> 32) % 3, rank);
        seen[epoch][(index >> 32) * 3 + (index & 0xffffffff)]++;
      }
      g_array_unref (a);
      g_array_unref (b);
    }
    run_result_free (mixed);
    run_result_free (plain);
  }
  for (epoch = 0; epoch < 2; epoch++)
    for (i = 0; i < G_N_ELEMENTS (seen[0]); i++)
      fail_unless_equals_int (seen[epoch][i], 1);
}

GST_END_TEST;

GST_START_TEST (test_errors_name_the_cause)
{
  const gchar *location = shard_pattern (3);
  const gchar *missing = fixture_scratch_path ("shard-002.tar", NULL);

  write_shards (2, 2);
  fixture_expect_src_error (
      location, "num-classes=10", missing, "No such file", 0);
  location = shard_pattern (2);
  fixture_expect_src_error (location, "", "set num-classes", NULL, 0);
  fixture_expect_src_error (location, "num-classes=10 rank=0 num-ranks=3",
      "names 2 shards for 3 ranks", NULL, 0);
  fixture_expect_src_error (location, "num-classes=10 rank=3 num-ranks=3",
      "rank 3 is out of range", NULL, 0);
  fixture_expect_src_error (
      "x-{1..}.tar", "num-classes=10", "x-{1..}.tar", "not two numbers", 0);
  fixture_write_jpeg (
      fixture_scratch_path ("tree", "a", "x.jpg", NULL), 8, 8, 1);
  missing = fixture_scratch_path ("tree", NULL);
  fixture_expect_src_error (
      missing, "num-classes=3", "holds 1 classes", NULL, 0);
}

GST_END_TEST;

/* rank not below num-ranks, whatever the location (an ImageFolder, a list
 * file, shards): datasetsrc does not start (the state change fails) and its
 * error names both numbers. */
GST_START_TEST (test_rank_out_of_range)
{
  const gchar *tree = fixture_scratch_path ("tree", NULL);
  const gchar *image = fixture_scratch_path ("tree", "a", "x.jpg", NULL);
  const gchar *list = fixture_scratch_path ("list.txt", NULL);
  const gchar *shards = shard_pattern (2);
  /* shards need num-classes, which the other two find themselves */
  const struct
  {
    const gchar *location;
    guint num_classes;
  } locations[] = { { tree, 0 }, { list, 0 }, { shards, NUM_CLASSES } };
  const guint index_and_count[][2] = { { 2, 2 }, { 7, 3 }, { 1, 1 } };
  guint l, c;

  write_shards (2, 2);
  fixture_write_jpeg (image, 8, 8, 1);
  fixture_write_file (list, (const guint8 *)"tree/a/x.jpg\t0\n", 15);
  for (l = 0; l < G_N_ELEMENTS (locations); l++)
    for (c = 0; c < G_N_ELEMENTS (index_and_count); c++) {
      guint index = index_and_count[c][0], count = index_and_count[c][1];
      GstElement *pipeline = gst_parse_launch_full ("datasetsrc name=src ! "
                                                    "fakesink",
          NULL, GST_PARSE_FLAG_FATAL_ERRORS, NULL);
      GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
      GstBus *bus = gst_element_get_bus (pipeline);
      gchar *want = g_strdup_printf (
          "rank %u is out of range for num-ranks %u.", index, count);
      GstMessage *message;
      GError *error = NULL;

      g_object_set (src, "location", locations[l].location, "rank", index,
          "num-ranks", count, "num-classes", locations[l].num_classes, NULL);
      fail_unless_equals_int (
          gst_element_set_state (pipeline, GST_STATE_PAUSED),
          GST_STATE_CHANGE_FAILURE);
      message = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
      fail_unless (message != NULL, "no error for %s", locations[l].location);
      fail_unless (GST_MESSAGE_SRC (message) == GST_OBJECT (src));
      gst_message_parse_error (message, &error, NULL);
      fail_unless (g_error_matches (
                       error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS),
          "%s", error->message);
      fail_unless_equals_string (error->message, want);
      g_error_free (error);
      gst_message_unref (message);
      gst_element_set_state (pipeline, GST_STATE_NULL);
      g_free (want);
      gst_object_unref (bus);
      gst_object_unref (src);
      gst_object_unref (pipeline);
    }
}

GST_END_TEST;

GST_START_TEST (test_stop_mid_stream)
{
  const gchar *location = shard_pattern (3);

  write_shards (3, 5);
  fixture_stop_mid_stream (GST_STATE_NULL, 2,
      "datasetsrc location=\"%s\" num-epochs=-1 num-classes=10 ! fakesink",
      location);
}

GST_END_TEST;

#define DATASETSRC_SHARDS_TESTS(test)                                          \
  test (test_patterns);                                                        \
  test (test_reader_formats);                                                  \
  test (test_split_and_order);                                                 \
  test (test_rotation);                                                        \
  test (test_shard_order_unshuffled);                                          \
  test (test_shuffle_as_webdataset);                                           \
  test (test_shards_split_across_ranks);                                       \
  test (test_bad_samples);                                                     \
  test (test_reader_stop_between_members);                                     \
  test (test_truncated_shard);                                                 \
  test (test_start_position);                                                  \
  test (test_resume_answer_counts_from_start_position);                        \
  test (test_interleaved_order);                                               \
  test (test_interleaved_resume);                                              \
  test (test_interleave_keeps_rank_split);                                     \
  test (test_errors_name_the_cause);                                           \
  test (test_rank_out_of_range);                                               \
  test (test_stop_mid_stream);

CHECK_MAIN_WITH_TEARDOWN (datasetsrc_shards, "datasetsrc-shards",
    fixture_scratch_teardown, DATASETSRC_SHARDS_TESTS);
