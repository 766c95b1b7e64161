/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* datasetsrc.c: tests of the datasetsrc element on trees the tests write. */
#include <gst/check/gstcheck.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "check-main.h"
#include "fixtures.h"
#include "train-meta.h"

/* Class folders whose sorted order depends on case and on punctuation:
 * torchvision sorts by code point, so "A" < "B" < "Zeta" < "_x" < "a" < "b". */
static const gchar *class_dirs[] = { "b", "a", "B", "_x", "Zeta", "A" };
static const gchar *sorted_classes[] = { "A", "B", "Zeta", "_x", "a", "b" };

#define FILES_PER_CLASS 3

/* Writes a small ImageFolder tree, "tree" in the scratch folder:
 * FILES_PER_CLASS images per class, one of them in a nested folder, plus
 * files the extension filter must ignore. */
static const gchar *
make_tree (void)
{
  const gchar *root = fixture_scratch_path ("tree", NULL);
  guint c;

  for (c = 0; c < G_N_ELEMENTS (class_dirs); c++) {
    gchar *p;

    p = g_build_filename (root, class_dirs[c], "img1.jpg", NULL);
    fixture_write_jpeg (p, 8, 8, c * 10 + 1);
    g_free (p);
    p = g_build_filename (root, class_dirs[c], "IMG0.JPEG", NULL);
    fixture_write_jpeg (p, 8, 8, c * 10 + 2);
    g_free (p);
    p = g_build_filename (root, class_dirs[c], "sub", "deep.jpg", NULL);
    fixture_write_jpeg (p, 8, 8, c * 10 + 3);
    g_free (p);
    p = g_build_filename (root, class_dirs[c], "notes.txt", NULL);
    fixture_write_file (p, (const guint8 *)"x", 1);
    g_free (p);
  }
  return root;
}

GST_START_TEST (test_labels_follow_sorted_class_names)
{
  const gchar *root = make_tree ();
  RunResult *r = fixture_run_src (root, "shuffle=false");
  GstTrainDatasetInfo info;
  guint i;

  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (
      r->samples->len, G_N_ELEMENTS (class_dirs) * FILES_PER_CLASS);

  /* Dataset order: classes in code-point order; inside a class the files of
   * the class folder (sorted: "IMG0.JPEG" < "img1.jpg"), then sub/. */
  for (i = 0; i < r->samples->len; i++) {
    RunSample *s = run_result_sample (r, i);
    guint label = i / FILES_PER_CLASS;
    const gchar *expected_file[] = { "IMG0.JPEG", "img1.jpg", "sub/deep.jpg" };
    gchar *expected = g_build_filename (
        root, sorted_classes[label], expected_file[i % FILES_PER_CLASS], NULL);

    fail_unless (s->has_meta);
    fail_unless_equals_int (s->label, label);
    fail_unless_equals_uint64 (s->index, i);
    fail_unless_equals_int (s->epoch, 0);
    fail_unless_equals_int (s->emissions, 0);
    fail_unless_equals_string (s->location, expected);
    g_free (expected);
  }

  /* The dataset facts reach the sink as tags. */
  fail_unless (gst_train_dataset_info_from_tag_list (r->tags, &info));
  fail_unless_equals_int (info.num_classes, G_N_ELEMENTS (sorted_classes));
  for (i = 0; i < info.num_classes; i++)
    fail_unless_equals_string (info.class_names[i], sorted_classes[i]);
  fail_unless_equals_uint64 (info.num_samples, r->samples->len);
  fail_unless_equals_uint64 (info.epoch_samples, r->samples->len);
  gst_train_dataset_info_clear (&info);

  run_result_free (r);
}

GST_END_TEST;

/* TRUE when indices [from, from + n) of @a are a permutation of 0 .. n-1. */
static gboolean
is_permutation (GArray *a, guint from, guint n)
{
  gboolean *seen = g_new0 (gboolean, n);
  gboolean ok = TRUE;
  guint i;

  for (i = from; i < from + n && ok; i++) {
    guint64 v = g_array_index (a, guint64, i);

    ok = v < n && !seen[v];
    if (ok)
      seen[v] = TRUE;
  }
  g_free (seen);
  return ok;
}

GST_START_TEST (test_shuffle_is_reproducible_permutation_per_epoch)
{
  const gchar *root = make_tree ();
  guint n = G_N_ELEMENTS (class_dirs) * FILES_PER_CLASS;
  RunResult *r1 = fixture_run_src (root, "seed=7 num-epochs=3");
  RunResult *r2 = fixture_run_src (root,
      "seed=7 num-epochs=3 n-threads=4 "
      "read-ahead=2");
  RunResult *r3 = fixture_run_src (root, "seed=8 num-epochs=3");
  RunResult *r4 = fixture_run_src (root, "seed=7 num-epochs=3 n-threads=0");
  GArray *a1 = run_result_indices (r1, -1), *a2 = run_result_indices (r2, -1),
         *a3 = run_result_indices (r3, -1);
  GArray *a4 = run_result_indices (r4, -1);
  guint e, i, in_order = 0;

  fail_unless_equals_int (a1->len, 3 * n);
  for (e = 0; e < 3; e++) {
    fail_unless (is_permutation (a1, e * n, n), "epoch %u", e);
    for (i = 0; i < n; i++)
      fail_unless_equals_int (run_result_sample (r1, e * n + i)->epoch, e);
  }
  /* Each epoch draws its own order. */
  fail_if (
      memcmp (a1->data, (guint64 *)a1->data + n, n * sizeof (guint64)) == 0);
  fail_if (memcmp ((guint64 *)a1->data + n, (guint64 *)a1->data + 2 * n,
               n * sizeof (guint64))
      == 0);
  /* The order is not the dataset order. */
  for (i = 0; i < n; i++)
    in_order += g_array_index (a1, guint64, i) == i;
  fail_if (in_order == n);
  /* Same seed, same order, whatever the threading; another seed differs. */
  fail_unless (fixture_arrays_equal (a1, a2));
  fail_unless (fixture_arrays_equal (a1, a4));
  fail_if (fixture_arrays_equal (a1, a3));
  /* Labels travel with their samples. */
  for (i = 0; i < a1->len; i++)
    fail_unless_equals_int (run_result_sample (r1, i)->label,
        (gint)(run_result_sample (r1, i)->index / FILES_PER_CLASS));

  g_array_unref (a1);
  g_array_unref (a2);
  g_array_unref (a3);
  g_array_unref (a4);
  run_result_free (r4);
  run_result_free (r1);
  run_result_free (r2);
  run_result_free (r3);
}

GST_END_TEST;

GST_START_TEST (test_ranks_are_disjoint_and_complete)
{
  const gchar *root = make_tree ();
  guint n = G_N_ELEMENTS (class_dirs) * FILES_PER_CLASS;
  const guint num_ranks = 4, num_epochs = 2;
  guint e, k, i, total = 0;
  gint *owner = g_new (gint, n * num_epochs);

  for (i = 0; i < n * num_epochs; i++)
    owner[i] = -1;
  for (k = 0; k < num_ranks; k++) {
    gchar *props = g_strdup_printf ("seed=3 num-epochs=%u rank=%u "
                                    "num-ranks=%u",
        num_epochs, k, num_ranks);
    RunResult *r = fixture_run_src (root, props);
    GstTrainDatasetInfo info;

    fail_unless (r->error == NULL, "%s", r->error);
    /* 18 samples in 4 parts: 5, 5, 4, 4. */
    fail_unless_equals_int (
        r->samples->len, num_epochs * ((n - k + num_ranks - 1) / num_ranks));
    fail_unless (gst_train_dataset_info_from_tag_list (r->tags, &info));
    fail_unless_equals_uint64 (
        info.epoch_samples, r->samples->len / num_epochs);
    gst_train_dataset_info_clear (&info);
    for (i = 0; i < r->samples->len; i++) {
      RunSample *s = run_result_sample (r, i);
      guint slot = s->epoch * n + (guint)s->index;

      fail_unless (owner[slot] == -1,
          "sample %" G_GUINT64_FORMAT " of epoch %d in ranks %d and %u",
          s->index, s->epoch, owner[slot], k);
      owner[slot] = k;
      total++;
    }
    run_result_free (r);
    g_free (props);
  }
  for (e = 0; e < num_epochs; e++)
    for (i = 0; i < n; i++)
      fail_if (
          owner[e * n + i] == -1, "sample %u of epoch %u in no rank", i, e);
  fail_unless_equals_int (total, n * num_epochs);
  g_free (owner);
}

GST_END_TEST;

/* The indices @r read, in order. */
static GArray *
indices_read (RunResult *r)
{
  GArray *indices = g_array_new (FALSE, FALSE, sizeof (guint64));
  guint i;

  fail_unless (r->error == NULL, "%s", r->error);
  for (i = 0; i < r->samples->len; i++)
    g_array_append_val (indices, run_result_sample (r, i)->index);
  return indices;
}

/* Under a launcher that says rank r of 3, with no rank set, the source
 * reads part r of 3, exactly as rank=r num-ranks=3 does, and says so in its
 * tags; a rank set by hand wins (num-ranks=1: everything). */
GST_START_TEST (test_rank_from_launcher)
{
  const gchar *root = make_tree ();
  guint n = G_N_ELEMENTS (class_dirs) * FILES_PER_CLASS;
  gint rank;

  for (rank = 0; rank < 3; rank++) {
    gchar *explicit = g_strdup_printf ("seed=3 rank=%d num-ranks=3", rank);
    RunResult *by_hand = fixture_run_src (root, explicit), *launched,
              *everything;
    GArray *want = indices_read (by_hand), *got;
    GstTrainDatasetInfo info;

    fixture_set_launcher (rank, 3);
    launched = fixture_run_src (root, "seed=3");
    everything = fixture_run_src (root, "seed=3 num-ranks=1");
    fixture_set_launcher (-1, 0);
    got = indices_read (launched);
    fail_unless (want->len == 6 && got->len == want->len
            && memcmp (got->data, want->data, want->len * sizeof (guint64))
                == 0,
        "rank %d did not read part %d of 3", rank, rank);
    fail_unless (gst_train_dataset_info_from_tag_list (launched->tags, &info));
    fail_unless_equals_int (info.shard_index, rank);
    fail_unless_equals_int (info.num_shards, 3);
    gst_train_dataset_info_clear (&info);
    fail_unless (everything->error == NULL, "%s", everything->error);
    fail_unless_equals_int (everything->samples->len, n);
    fail_unless (
        gst_train_dataset_info_from_tag_list (everything->tags, &info));
    fail_unless_equals_int (info.num_shards, 1);
    gst_train_dataset_info_clear (&info);
    g_array_unref (want);
    g_array_unref (got);
    run_result_free (by_hand);
    run_result_free (launched);
    run_result_free (everything);
    g_free (explicit);
  }
}

GST_END_TEST;

/* shard-index and num-shards, the names rank and num-ranks had before
 * "shard" came to mean a tar file, still work: the same split on a launch
 * line, the same field through either name, and, set alone under a
 * launcher, they turn its rank off as rank and num-ranks do. gst-inspect
 * shows them as deprecated (their pspecs' flag and blurb). */
GST_START_TEST (test_deprecated_shard_names)
{
  const gchar *root = make_tree ();
  guint n = G_N_ELEMENTS (class_dirs) * FILES_PER_CLASS, value;
  const gchar *const aliases[][2] = { { "shard-index", "rank" },
    { "num-shards", "num-ranks" } };
  GstElement *src;
  RunResult *r;
  gint rank;
  guint i;

  for (rank = 0; rank < 3; rank++) {
    gchar *old_names = g_strdup_printf (
        "seed=5 num-epochs=2 shard-index=%d num-shards=3", rank);
    gchar *new_names =
        g_strdup_printf ("seed=5 num-epochs=2 rank=%d num-ranks=3", rank);
    RunResult *by_old = fixture_run_src (root, old_names),
              *by_new = fixture_run_src (root, new_names);
    GArray *want = indices_read (by_new), *got = indices_read (by_old);
    GstTrainDatasetInfo info;

    fail_unless (want->len == 2 * 6 && got->len == want->len
            && memcmp (got->data, want->data, want->len * sizeof (guint64))
                == 0,
        "shard-index=%d num-shards=3 did not read rank %d's part", rank, rank);
    fail_unless (gst_train_dataset_info_from_tag_list (by_old->tags, &info));
    fail_unless_equals_int (info.shard_index, rank);
    fail_unless_equals_int (info.num_shards, 3);
    gst_train_dataset_info_clear (&info);
    g_array_unref (want);
    g_array_unref (got);
    run_result_free (by_old);
    run_result_free (by_new);
    g_free (old_names);
    g_free (new_names);
  }

  /* either alias alone is a split set by hand: rank 1 of 3 by the
   * launcher, yet everything (0 of 1) */
  fixture_set_launcher (1, 3);
  r = fixture_run_src (root, "seed=5 shard-index=0");
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, n);
  run_result_free (r);
  r = fixture_run_src (root, "seed=5 num-shards=1");
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, n);
  run_result_free (r);
  fixture_set_launcher (-1, 0);

  src = gst_element_factory_make ("datasetsrc", NULL);
  fail_unless (src != NULL);
  g_object_set (src, "num-shards", 4, "rank", 2, NULL);
  g_object_get (src, "num-ranks", &value, NULL);
  fail_unless_equals_int (value, 4);
  g_object_get (src, "shard-index", &value, NULL);
  fail_unless_equals_int (value, 2);
  for (i = 0; i < G_N_ELEMENTS (aliases); i++) {
    GParamSpec *alias =
        g_object_class_find_property (G_OBJECT_GET_CLASS (src), aliases[i][0]);
    GParamSpec *current =
        g_object_class_find_property (G_OBJECT_GET_CLASS (src), aliases[i][1]);
    gchar *blurb = g_strdup_printf ("Deprecated alias of %s; ", aliases[i][1]);

    fail_unless (alias != NULL && current != NULL);
    fail_unless (alias->flags & G_PARAM_DEPRECATED, "%s", aliases[i][0]);
    fail_if (current->flags & G_PARAM_DEPRECATED, "%s", aliases[i][1]);
    fail_unless (g_str_has_prefix (g_param_spec_get_blurb (alias), blurb),
        "%s: %s", aliases[i][0], g_param_spec_get_blurb (alias));
    g_free (blurb);
  }
  gst_object_unref (src);
}

GST_END_TEST;

GST_START_TEST (test_num_samples_and_epochs)
{
  const gchar *root = make_tree ();
  RunResult *r =
      fixture_run_src (root, "shuffle=false num-samples=4 num-epochs=2");
  guint i;

  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, 8);
  for (i = 0; i < 8; i++) {
    fail_unless_equals_uint64 (run_result_sample (r, i)->index, i % 4);
    fail_unless_equals_int (run_result_sample (r, i)->epoch, i / 4);
  }
  /* in dataset order, class by class, those are of the first two classes
   * only: a warning says so (issue 43: it took them silently) */
  fail_unless (run_result_has_warning (r,
      "num-samples=4 with shuffle=false takes the first 4 samples in dataset "
      "order, the same every epoch, and an ImageFolder's order is class by "
      "class: they come from the first 2 of the 6 classes only (A, B). Set "
      "shuffle=true for a random subset of every class, a new one each "
      "epoch.",
      NULL));
  fail_unless_equals_int (r->warnings->len, 1);
  run_result_free (r);

  /* shuffled, or every sample, or every class: no warning */
  r = fixture_run_src (root, "num-samples=4");
  fail_unless (r->error == NULL && r->warnings->len == 0, "%s", r->error);
  run_result_free (r);
  r = fixture_run_src (root, "shuffle=false num-samples=18");
  fail_unless (r->error == NULL && r->warnings->len == 0, "%s", r->error);
  run_result_free (r);
  r = fixture_run_src (root, "shuffle=false num-samples=2 num-ranks=9");
  fail_unless (r->error == NULL && r->warnings->len == 0, "%s", r->error);
  run_result_free (r);
}

GST_END_TEST;

/* start-position passes over the start of the sequence, across epochs and
 * shards: what follows is the tail of the whole run, sample for sample, and
 * the files before it are not read (their removal goes unnoticed). */
GST_START_TEST (test_start_position)
{
  const gchar *root = make_tree ();
  guint n = G_N_ELEMENTS (class_dirs) * FILES_PER_CLASS, per_shard = n / 3;
  RunResult *whole = fixture_run_src (root,
      "seed=7 num-epochs=3 rank=1 "
      "num-ranks=3");
  RunResult *tail = fixture_run_src (root,
      "seed=7 num-epochs=3 rank=1 "
      "num-ranks=3 start-position=8");
  RunResult *past =
      fixture_run_src (root, "seed=7 num-epochs=3 start-position=54");
  GArray *a = run_result_indices (whole, -1),
         *b = run_result_indices (tail, -1);
  guint i;

  fail_unless (tail->error == NULL, "%s", tail->error);
  fail_unless_equals_int (a->len, 3 * per_shard);
  fail_unless_equals_int (b->len, a->len - 8);
  for (i = 0; i < b->len; i++) {
    fail_unless_equals_uint64 (
        g_array_index (b, guint64, i), g_array_index (a, guint64, i + 8));
    fail_unless_equals_int (run_result_sample (tail, i)->epoch,
        run_result_sample (whole, i + 8)->epoch);
  }
  /* at or past the end: EOS at once */
  fail_unless (past->error == NULL, "%s", past->error);
  fail_unless_equals_int (past->samples->len, 0);
  g_array_unref (a);
  g_array_unref (b);
  run_result_free (whole);
  run_result_free (tail);
  run_result_free (past);

  /* nothing before the start is read: in a list of the files, remove the
   * first ones, and nothing is skipped */
  {
    RunResult *plain = fixture_run_src (root, "shuffle=false num-epochs=1");
    gchar *list = g_build_filename (root, "list.txt", NULL);
    gchar *props = g_strdup_printf (
        "location=\"%s\" shuffle=false num-epochs=1 start-position=5", list);
    GString *text = g_string_new (NULL);
    RunResult *later;

    for (i = 0; i < n; i++)
      g_string_append_printf (text, "%s\t%d\n",
          run_result_sample (plain, i)->location,
          run_result_sample (plain, i)->label);
    fail_unless (g_file_set_contents (list, text->str, -1, NULL));
    for (i = 0; i < 5; i++)
      fail_unless (g_unlink (run_result_sample (plain, i)->location) == 0);
    later = fixture_run_src (root, props);
    fail_unless (later->error == NULL, "%s", later->error);
    fail_unless_equals_int (later->samples->len, n - 5);
    fail_unless_equals_int (later->warnings->len, 0);
    for (i = 0; i < n - 5; i++)
      fail_unless_equals_uint64 (run_result_sample (later, i)->index, i + 5);
    g_string_free (text, TRUE);
    g_free (props);
    g_free (list);
    run_result_free (plain);
    run_result_free (later);
  }
}

GST_END_TEST;

/* What a downstream pad probe answers the resume query with. */
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

/* The dataset indices that "datasetsrc location=@root @props ! fakesink"
 * pushes when the sink pad answers the resume query with @answer. */
static GArray *
run_resumed (const gchar *root, const gchar *props, ResumeAnswer *answer)
{
  gchar *launch = g_strdup_printf (
      "datasetsrc location=\"%s\" %s ! fakesink name=sink", root, props);
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

/* The resume query's answer counts from start-position: the source starts
 * at start-position + the answer of the straight sequence, within an
 * epoch, across epoch boundaries, on a shard, past the end; the places an
 * answer narrows to count from start-position too. */
GST_START_TEST (test_resume_answer_counts_from_start_position)
{
  const gchar *root = make_tree ();
  guint n = G_N_ELEMENTS (class_dirs) * FILES_PER_CLASS;
  /* start-position, answer: whole runs of 3 epochs of 18 */
  static const guint64 cases[][2] = { { 0, 13 }, { 8, 0 }, { 8, 5 }, { 15, 6 },
    { 18, 20 }, { 30, 23 }, { 40, 20 } };
  RunResult *straight = fixture_run_src (root, "seed=7 num-epochs=3");
  GArray *whole = run_result_indices (straight, -1), *got;
  ResumeAnswer answer = { 0 };
  guint i;

  fail_unless_equals_int (whole->len, 3 * n);
  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *props = g_strdup_printf (
        "seed=7 num-epochs=3 start-position=%" G_GUINT64_FORMAT, cases[i][0]);

    answer.samples = cases[i][1];
    got = run_resumed (root, props, &answer);
    expect_resumed (whole, got, cases[i][0] + cases[i][1], NULL, 0, 0);
    g_array_unref (got);
    g_free (props);
  }

  /* narrowed: of the answer's places 2 .. 8, only 3, 6 and 7, that is
   * places 5 + 3, 5 + 6 and 5 + 7 of the sequence, then 5 + 9 on (across
   * into epoch 1) */
  {
    static const guint64 keep[] = { 3, 6, 7 };
    static const guint64 keep_at[] = { 8, 11, 12 };

    answer.samples = 2;
    answer.keep = keep;
    answer.n_keep = G_N_ELEMENTS (keep);
    answer.keep_end = 9;
    got = run_resumed (root, "seed=7 num-epochs=3 start-position=5", &answer);
    expect_resumed (whole, got, 7, keep_at, G_N_ELEMENTS (keep_at), 14);
    g_array_unref (got);
    answer.keep = NULL;
  }
  g_array_unref (whole);
  run_result_free (straight);

  /* a shard's sequence: 6 samples an epoch */
  straight = fixture_run_src (root, "seed=7 num-epochs=3 rank=1 num-ranks=3");
  whole = run_result_indices (straight, -1);
  fail_unless_equals_int (whole->len, 3 * n / 3);
  answer.samples = 5;
  got = run_resumed (
      root, "seed=7 num-epochs=3 rank=1 num-ranks=3 start-position=4", &answer);
  expect_resumed (whole, got, 9, NULL, 0, 0);
  g_array_unref (got);
  g_array_unref (whole);
  run_result_free (straight);
}

GST_END_TEST;

GST_START_TEST (test_list_file)
{
  const gchar *list = fixture_scratch_path ("train.txt", NULL);
  const gchar *img_a = fixture_scratch_path ("imgs", "a.jpg", NULL);
  const gchar *img_b = fixture_scratch_path ("imgs", "b.jpg", NULL);
  const gchar *text = "# comment\nimgs/a.jpg\t2\n\nimgs/b.jpg\t0\n";
  RunResult *r;
  GstTrainDatasetInfo info;

  fixture_write_jpeg (img_a, 8, 8, 1);
  fixture_write_jpeg (img_b, 8, 8, 2);
  fixture_write_file (list, (const guint8 *)text, strlen (text));
  r = fixture_run_src (list, "shuffle=false");
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, 2);
  fail_unless_equals_int (run_result_sample (r, 0)->label, 2);
  fail_unless_equals_string (run_result_sample (r, 0)->location, img_a);
  fail_unless_equals_int (run_result_sample (r, 1)->label, 0);
  fail_unless (gst_train_dataset_info_from_tag_list (r->tags, &info));
  fail_unless_equals_int (info.num_classes, 3);
  fail_unless_equals_string (info.class_names[2], "2");
  gst_train_dataset_info_clear (&info);
  run_result_free (r);
}

GST_END_TEST;

GST_START_TEST (test_errors_name_the_cause)
{
  const gchar *missing = fixture_scratch_path ("nowhere", NULL);
  const gchar *empty = fixture_scratch_path ("empty", NULL);
  const gchar *no_images = fixture_scratch_path ("no-images", NULL);
  const gchar *txt =
      fixture_scratch_path ("no-images", "cls", "readme.txt", NULL);
  const gchar *bad_list = fixture_scratch_path ("bad.txt", NULL);
  const gchar *bad_label = fixture_scratch_path ("bad-label.txt", NULL);
  const gchar *tree = make_tree ();

  fixture_expect_src_error (missing, "", missing, "does not exist", 0);
  g_mkdir (empty, 0755);
  fixture_expect_src_error (empty, "", empty, "no class sub-folders", 0);
  fixture_write_file (txt, (const guint8 *)"x", 1);
  fixture_expect_src_error (no_images, "", no_images, "holds no samples", 0);
  fixture_write_file (
      bad_list, (const guint8 *)"a.jpg\t1\nb.jpg\t0\nc.jpg\n", 21);
  fixture_expect_src_error (
      bad_list, "", "bad.txt:3:", "relative/path<TAB>label", 0);
  fixture_write_file (bad_label, (const guint8 *)"a.jpg\tcat\n", 10);
  fixture_expect_src_error (bad_label, "", "bad-label.txt:1:", "cat", 0);
  fixture_expect_src_error (
      tree, "rank=4 num-ranks=4", "rank 4 is out of range", NULL, 0);
  fixture_expect_src_error (
      tree, "rank=30 num-ranks=40", "gets no sample", NULL, 0);
}

GST_END_TEST;

GST_START_TEST (test_unreadable_file_skip_or_fail)
{
  const gchar *root = make_tree ();
  const gchar *dead =
      fixture_scratch_own (g_build_filename (root, "a", "dead.jpg", NULL));
  RunResult *r;

  /* A dangling link: listed like any file, unreadable when opened (even for
   * root, whom permissions would not stop). */
  fail_unless (symlink ("/nonexistent/gst-train.jpg", dead) == 0);

  r = fixture_run_src (root, "shuffle=false");
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (
      r->samples->len, G_N_ELEMENTS (class_dirs) * FILES_PER_CLASS);
  fail_unless (run_result_has_warning (r, dead, "No such file"));
  run_result_free (r);

  /* Read again every epoch, it is warned about (and counted) once. */
  r = fixture_run_src (root, "num-epochs=3");
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (
      r->samples->len, 3 * G_N_ELEMENTS (class_dirs) * FILES_PER_CLASS);
  fail_unless_equals_int (r->warnings->len, 1);
  fail_unless (run_result_has_warning (r, dead, "No such file"));
  run_result_free (r);

  /* Class "a" comes fifth: the four classes before it and a/IMG0.JPEG go
   * out ("a/dead.jpg" < "a/img1.jpg"), then the error. */
  fixture_expect_src_error (root, "shuffle=false on-error=fail", dead,
      "No such file", 4 * FILES_PER_CLASS + 1);

  /* The skip count is readable. */
  fail_unless_equals_uint64 (fixture_src_files_skipped (root, ""), 1);
}

GST_END_TEST;

/* A list file none of whose paths can be read (written relative to
 * another folder than the list's): an error at the end of the epoch, which
 * names the first path tried and the folder the paths are relative to,
 * rather than a warning per file and an empty stream (issue 43). Also with
 * num-epochs=-1, which would otherwise go on for ever. */
GST_START_TEST (test_no_readable_sample_is_an_error)
{
  const gchar *list = fixture_scratch_path ("lists", "train.txt", NULL);
  const gchar *folder = fixture_scratch_path ("lists", NULL);
  const gchar *text = "imgs/a.jpg\t0\nimgs/b.jpg\t1\nimgs/c.jpg\t1\n";
  const gchar *first_path =
      fixture_scratch_path ("lists", "imgs", "a.jpg", NULL);
  const gchar *root = make_tree ();
  gchar *want;
  RunResult *r;

  /* the images are beside "lists", not in it */
  fixture_write_jpeg (fixture_scratch_path ("imgs", "a.jpg", NULL), 8, 8, 1);
  fixture_write_file (list, (const guint8 *)text, strlen (text));
  want = g_strdup_printf ("None of the 3 samples of epoch 0 could be read; "
                          "the first tried, \"%s\": No such file or "
                          "directory. The paths in list file \"%s\" are "
                          "relative to its folder, \"%s\"",
      first_path, list, folder);
  fixture_expect_src_error (list, "shuffle=false", want, NULL, 0);
  fixture_expect_src_error (list, "shuffle=false num-epochs=-1", want, NULL, 0);
  g_free (want);

  /* an epoch with one sample read is not an error */
  text = "../imgs/a.jpg\t0\nimgs/b.jpg\t1\nimgs/c.jpg\t1\n";
  fixture_write_file (list, (const guint8 *)text, strlen (text));
  r = fixture_run_src (list, "num-epochs=2");
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, 2);
  run_result_free (r);

  /* nor are the samples a resume passes over: only those tried count */
  r = fixture_run_src (root, "shuffle=false start-position=17");
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, 1);
  run_result_free (r);
}

GST_END_TEST;

GST_START_TEST (test_stop_mid_stream)
{
  const gchar *root = make_tree ();

  /* An endless source stops cleanly from PLAYING, readers in flight. */
  fixture_stop_mid_stream (GST_STATE_NULL, 1,
      "datasetsrc location=\"%s\" num-epochs=-1 n-threads=3 ! fakesink", root);
}

GST_END_TEST;

#define DATASETSRC_TESTS(test)                                                 \
  test (test_labels_follow_sorted_class_names);                                \
  test (test_shuffle_is_reproducible_permutation_per_epoch);                   \
  test (test_ranks_are_disjoint_and_complete);                                 \
  test (test_rank_from_launcher);                                              \
  test (test_deprecated_shard_names);                                          \
  test (test_num_samples_and_epochs);                                          \
  test (test_start_position);                                                  \
  test (test_resume_answer_counts_from_start_position);                        \
  test (test_list_file);                                                       \
  test (test_errors_name_the_cause);                                           \
  test (test_unreadable_file_skip_or_fail);                                    \
  test (test_no_readable_sample_is_an_error);                                  \
  test (test_stop_mid_stream);

CHECK_MAIN_WITH_TEARDOWN (
    datasetsrc, "datasetsrc", fixture_scratch_teardown, DATASETSRC_TESTS);
