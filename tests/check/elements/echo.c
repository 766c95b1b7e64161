/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* echo.c: tests of the echo element: repeat counts, shuffling, seeds, shared
 * memory, caps through a shuffle, EOS, flushes and state changes, and the
 * adaptive mode's pacing by downstream. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <string.h>

#include "check-main.h"
#include "fixtures.h"
#include "train-meta.h"

/* The "mode" property's value "adaptive" (the enum type is the plugin's). */
#define MODE_ADAPTIVE 1

/* A harness around a new echo with the given properties (set before it
 * starts, as most of them only change in READY), whose source caps are
 * already set. */
static GstHarness *
echo_harness (const gchar *first_property, ...)
{
  GstElement *echo = gst_element_factory_make ("echo", NULL);
  GstHarness *h;
  va_list args;

  fail_unless (echo != NULL, "echo is not registered");
  va_start (args, first_property);
  g_object_set_valist (G_OBJECT (echo), first_property, args);
  va_end (args);
  h = gst_harness_new_with_element (echo, "sink", "src");
  gst_object_unref (echo);
  gst_harness_set_src_caps_str (h, "application/x-test");
  return h;
}

/* A @size-byte buffer holding sample @index, with its sample meta. */
static GstBuffer *
sample_buffer (guint64 index, gsize size)
{
  GstBuffer *buffer = gst_buffer_new_allocate (NULL, size, NULL);

  gst_buffer_memset (buffer, 0, (guint8)index, size);
  gst_buffer_add_train_sample_meta (buffer, (gint)(index % 10), index, 0, NULL);
  return buffer;
}

static GstTrainSampleMeta *
sample_meta (GstBuffer *buffer)
{
  GstTrainSampleMeta *meta = gst_buffer_get_train_sample_meta (buffer);

  fail_unless (meta != NULL, "a buffer lost its sample meta");
  return meta;
}

/* Pulls the next buffer and checks that it is emission @emissions (0 for
 * the fresh one) of sample @index. */
static void
pull_emission (GstHarness *h, guint64 index, guint emissions)
{
  GstBuffer *out = gst_harness_pull (h);

  fail_unless_equals_int (sample_meta (out)->index, index);
  fail_unless_equals_int (sample_meta (out)->emissions, emissions);
  gst_buffer_unref (out);
}

static guint64
get_uint64 (GstElement *element, const gchar *name)
{
  guint64 value = 0;

  g_object_get (element, name, &value, NULL);
  return value;
}

static void
push_eos (GstHarness *h)
{
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
}

/* Pulls the events the harness received until EOS, which must come. */
static void
wait_for_eos (GstHarness *h)
{
  for (;;) {
    GstEvent *event = gst_harness_pull_event (h);
    gboolean eos;

    fail_unless (event != NULL, "no EOS came out");
    eos = GST_EVENT_TYPE (event) == GST_EVENT_EOS;
    gst_event_unref (event);
    if (eos)
      return;
  }
}

GST_START_TEST (test_factor_one_is_identity)
{
  GstHarness *h = echo_harness ("factor", 1.0, "shuffle-buffer-size", 0, NULL);
  GstBuffer *pushed[20];
  guint i;

  for (i = 0; i < G_N_ELEMENTS (pushed); i++) {
    pushed[i] = sample_buffer (i, 8);
    fail_unless_equals_int (gst_harness_push (h, pushed[i]), GST_FLOW_OK);
  }
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 20);
  for (i = 0; i < G_N_ELEMENTS (pushed); i++) {
    GstBuffer *out = gst_harness_pull (h);

    /* The very buffer that went in, untouched. */
    fail_unless (out == pushed[i]);
    fail_unless_equals_int (sample_meta (out)->index, i);
    fail_unless_equals_int (sample_meta (out)->emissions, 0);
    gst_buffer_unref (out);
  }
  fail_unless_equals_int (get_uint64 (h->element, "items-in"), 20);
  fail_unless_equals_int (get_uint64 (h->element, "items-out"), 20);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_factor_three_back_to_back)
{
  GstHarness *h = echo_harness ("factor", 3.0, "shuffle-buffer-size", 0, NULL);
  GstMemory *memory[10];
  gdouble effective = 0;
  guint i, e;

  for (i = 0; i < G_N_ELEMENTS (memory); i++) {
    GstBuffer *in = sample_buffer (i, 64);

    memory[i] = gst_memory_ref (gst_buffer_peek_memory (in, 0));
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  }
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 30);
  for (i = 0; i < G_N_ELEMENTS (memory); i++) {
    for (e = 0; e < 3; e++) {
      GstBuffer *out = gst_harness_pull (h);

      fail_unless_equals_int (sample_meta (out)->index, i);
      fail_unless_equals_int (sample_meta (out)->emissions, e);
      /* Repeats share the payload: no copy of the memory. */
      fail_unless_equals_int (gst_buffer_n_memory (out), 1);
      fail_unless (gst_buffer_peek_memory (out, 0) == memory[i]);
      gst_buffer_unref (out);
    }
    gst_memory_unref (memory[i]);
  }
  g_object_get (h->element, "effective-factor", &effective, NULL);
  fail_unless_equals_float (effective, 3.0);
  gst_harness_teardown (h);
}

GST_END_TEST;

static gdouble
get_effective_factor (GstElement *element)
{
  gdouble factor = 0;

  g_object_get (element, "effective-factor", &factor, NULL);
  return factor;
}

/* While the shuffle buffer fills, items come in and few go out: the factor
 * counts the items that went out (items-out / fresh-out), so it reads 1
 * before anything went out and never the fraction items-out / items-in. */
GST_START_TEST (test_effective_factor_while_the_buffer_fills)
{
  GstHarness *h = echo_harness ("factor", 2.0, "shuffle-buffer-size", 16, NULL);
  guint64 in, out, fresh;
  guint i;

  fail_unless_equals_float (get_effective_factor (h->element), 1.0);
  for (i = 0; i < 8; i++)
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 8)), GST_FLOW_OK);
  /* 16 copies fill the buffer: nothing went out yet. */
  fail_unless_equals_int (get_uint64 (h->element, "items-out"), 0);
  fail_unless_equals_float (get_effective_factor (h->element), 1.0);

  for (; i < 12; i++) {
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 8)), GST_FLOW_OK);
    in = get_uint64 (h->element, "items-in");
    out = get_uint64 (h->element, "items-out");
    fresh = get_uint64 (h->element, "fresh-out");
    fail_unless (out > 0 && out < in);
    fail_unless (fresh > 0 && fresh <= out);
    fail_unless_equals_float (
        get_effective_factor (h->element), (gdouble)out / fresh);
    fail_unless (get_effective_factor (h->element) >= 1.0);
  }
  /* At EOS every item went out twice. */
  push_eos (h);
  fail_unless_equals_int (get_uint64 (h->element, "items-out"), 24);
  fail_unless_equals_int (get_uint64 (h->element, "fresh-out"), 12);
  fail_unless_equals_float (get_effective_factor (h->element), 2.0);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Pushes @n items of @size bytes, then EOS, and pulls everything; checks that
 * each item came out 1 .. @max_copies times with emissions 0, 1, ... in order
 * and sharing its memory. Returns how often each item came out. */
static guint *
run_and_count (GstHarness *h, guint n, gsize size, guint max_copies)
{
  guint *copies = g_new0 (guint, n);
  GstMemory **memory = g_new0 (GstMemory *, n);
  GstBuffer *out;
  guint i;

  for (i = 0; i < n; i++) {
    GstBuffer *in = sample_buffer (i, size);

    memory[i] = gst_memory_ref (gst_buffer_peek_memory (in, 0));
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  }
  push_eos (h);
  while ((out = gst_harness_try_pull (h)) != NULL) {
    GstTrainSampleMeta *meta = sample_meta (out);

    fail_unless (meta->index < n);
    fail_unless_equals_int (meta->emissions, copies[meta->index]);
    copies[meta->index]++;
    fail_unless (copies[meta->index] <= max_copies);
    /* The memory of a pushed buffer lives as long as one of its copies. */
    fail_unless (gst_buffer_peek_memory (out, 0) == memory[meta->index]);
    gst_buffer_unref (out);
  }
  for (i = 0; i < n; i++) {
    fail_unless (copies[i] >= 1, "item %u never came out", i);
    gst_memory_unref (memory[i]);
  }
  g_free (memory);
  return copies;
}

static void
check_fractional_factor (guint shuffle_buffer_size)
{
  const guint n = 10000;
  GstHarness *h = echo_harness ("factor", 1.5, "shuffle-buffer-size",
      shuffle_buffer_size, "seed", G_GUINT64_CONSTANT (7), NULL);
  guint *copies = run_and_count (h, n, 4, 2);
  guint64 total = 0;
  gdouble mean, sigma;
  guint i;

  for (i = 0; i < n; i++)
    total += copies[i];
  mean = (gdouble)total / n;
  /* Each item draws 1 or 2 copies with probability 1/2: the mean of n such
   * draws has a standard deviation of 0.5 / sqrt (n), 0.005. */
  sigma = 0.005;
  fail_unless (
      ABS (mean - 1.5) < 3 * sigma, "mean %f, want 1.5 +- %f", mean, 3 * sigma);
  fail_unless_equals_int (get_uint64 (h->element, "items-in"), n);
  fail_unless_equals_int (get_uint64 (h->element, "items-out"), total);
  g_free (copies);
  gst_harness_teardown (h);
}

GST_START_TEST (test_fractional_factor)
{
  check_fractional_factor (0);
  check_fractional_factor (64);
}

GST_END_TEST;

GST_START_TEST (test_shuffle_spreads_copies)
{
  const guint n = 2000;
  GstHarness *h = echo_harness ("factor", 2.0, "shuffle-buffer-size", 100,
      "seed", G_GUINT64_CONSTANT (3), NULL);
  gint64 *first_position = g_new (gint64, n);
  guint64 distance = 0;
  guint adjacent = 0, position = 0, i;
  GstBuffer *out;

  for (i = 0; i < n; i++)
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 4)), GST_FLOW_OK);
  /* The shuffle buffer is full: 2 * n copies went in, 100 wait. */
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 2 * n - 100);
  push_eos (h);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 2 * n);

  while ((out = gst_harness_try_pull (h)) != NULL) {
    GstTrainSampleMeta *meta = sample_meta (out);

    if (meta->emissions == 0) {
      first_position[meta->index] = position;
    } else {
      gint64 d = position - first_position[meta->index];

      fail_unless_equals_int (meta->emissions, 1);
      fail_unless (d > 0);
      distance += d;
      adjacent += d == 1;
    }
    position++;
    gst_buffer_unref (out);
  }
  fail_unless_equals_int (position, 2 * n);
  /* Each copy stays about shuffle-buffer-size steps: the two copies of an
   * item end up about 100 apart, next to each other about 1 time in 100. */
  fail_unless (
      (gdouble)distance / n > 50, "mean distance %f", (gdouble)distance / n);
  fail_unless (adjacent < n / 20, "%u of %u pairs adjacent", adjacent, n);
  g_free (first_position);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The (index, emissions) sequence that @seed gives for 300 items. */
static GArray *
sequence_for_seed (guint64 seed)
{
  GstHarness *h = echo_harness (
      "factor", 1.7, "shuffle-buffer-size", 16, "seed", seed, NULL);
  GArray *sequence = g_array_new (FALSE, FALSE, sizeof (guint64));
  GstBuffer *out;
  guint i;

  for (i = 0; i < 300; i++)
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 4)), GST_FLOW_OK);
  push_eos (h);
  while ((out = gst_harness_try_pull (h)) != NULL) {
    guint64 v = sample_meta (out)->index * 16 + sample_meta (out)->emissions;

    g_array_append_val (sequence, v);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
  return sequence;
}

GST_START_TEST (test_seed_reproduces)
{
  GArray *a = sequence_for_seed (11);
  GArray *b = sequence_for_seed (11);
  GArray *c = sequence_for_seed (12);

  fail_unless (a->len > 300);
  fail_unless (fixture_arrays_equal (a, b), "the same seed gave another order");
  fail_unless (
      !fixture_arrays_equal (a, c), "another seed gave the same order");
  g_array_unref (a);
  g_array_unref (b);
  g_array_unref (c);
}

GST_END_TEST;

/* In a data-parallel job (the launcher's environment), rank 0 draws as a
 * process alone does and rank 1 draws otherwise, from one seed. */
static GArray *
draw_seed_11 (gpointer unused)
{
  return sequence_for_seed (11);
}

GST_START_TEST (test_seed_differs_per_rank)
{
  g_array_unref (fixture_expect_rank_draws (draw_seed_11, NULL, "drew"));
}

GST_END_TEST;

GST_START_TEST (test_repeats_share_memory_through_shuffle)
{
  GstHarness *h = echo_harness ("factor", 3.0, "shuffle-buffer-size", 8, NULL);
  guint *copies = run_and_count (h, 50, 1000, 3);
  guint i;

  for (i = 0; i < 50; i++)
    fail_unless_equals_int (copies[i], 3);
  g_free (copies);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_batches_and_chained_echos)
{
  GstHarness *h = echo_harness ("factor", 3.0, "shuffle-buffer-size", 0, NULL);
  GstBuffer *batch = gst_buffer_new_allocate (NULL, 4 * 12, NULL);
  GstBuffer *repeat = sample_buffer (5, 4);
  guint e;

  gst_harness_set_src_caps_str (h,
      "other/tensors, format=(string)static, num_tensors=(int)2, "
      "framerate=(fraction)0/1");
  gst_buffer_add_train_batch_meta (batch, 4, 4);
  fail_unless_equals_int (gst_harness_push (h, batch), GST_FLOW_OK);
  for (e = 0; e < 3; e++) {
    GstBuffer *out = gst_harness_pull (h);
    GstTrainBatchMeta *meta = gst_buffer_get_train_batch_meta (out);

    fail_unless (meta != NULL);
    fail_unless_equals_int (meta->emissions, e);
    /* A repeated batch holds no fresh image. */
    fail_unless_equals_int (gst_train_buffer_count_fresh (out), e ? 0 : 4);
    gst_buffer_unref (out);
  }

  /* An item that an echo upstream already repeated stays a repeat. */
  gst_train_buffer_set_emissions (repeat, 1);
  fail_unless_equals_int (gst_harness_push (h, repeat), GST_FLOW_OK);
  for (e = 0; e < 3; e++) {
    GstBuffer *out = gst_harness_pull (h);

    fail_unless_equals_int (sample_meta (out)->emissions, 1 + e);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

/* ---- caps ---- */

typedef struct
{
  guint64 index;
  gsize size;
  gint width, height;
} CapsRecord;

/* Records, for every buffer echo pushes, the caps current on its source pad
 * at that moment: what downstream believes the buffer is. */
static GstPadProbeReturn
record_caps (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  GArray *records = user_data;
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER (info);
  GstCaps *caps = gst_pad_get_current_caps (pad);
  GstStructure *s = gst_caps_get_structure (caps, 0);
  CapsRecord r = { 0 };

  r.index = sample_meta (buffer)->index;
  r.size = gst_buffer_get_size (buffer);
  gst_structure_get_int (s, "width", &r.width);
  gst_structure_get_int (s, "height", &r.height);
  g_array_append_val (records, r);
  gst_caps_unref (caps);
  return GST_PAD_PROBE_OK;
}

static GstCaps *
rgb_caps (gint width, gint height)
{
  return gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING, "RGB",
      "width", G_TYPE_INT, width, "height", G_TYPE_INT, height, "framerate",
      GST_TYPE_FRACTION, 0, 1, NULL);
}

GST_START_TEST (test_mixed_sizes_keep_their_caps)
{
  /* Widths are multiples of 4, so RGB rows need no padding. */
  static const gint sizes[][2] = { { 4, 2 }, { 8, 4 }, { 12, 6 }, { 16, 2 } };
  GstHarness *h = echo_harness ("factor", 2.0, "shuffle-buffer-size", 8, NULL);
  GArray *records = g_array_new (FALSE, FALSE, sizeof (CapsRecord));
  GstPad *srcpad = gst_element_get_static_pad (h->element, "src");
  guint i, size_changes = 0;
  gint last = -1;

  gst_pad_add_probe (
      srcpad, GST_PAD_PROBE_TYPE_BUFFER, record_caps, records, NULL);
  gst_harness_set_src_caps (h, rgb_caps (sizes[0][0], sizes[0][1]));
  for (i = 0; i < 60; i++) {
    gint k = (i / 3) % 4;

    if (k != last) {
      /* A caps event alone (no new segment), as a decoder sends; the
       * event takes its own reference to the caps. */
      GstCaps *caps = rgb_caps (sizes[k][0], sizes[k][1]);

      fail_unless (gst_harness_push_event (h, gst_event_new_caps (caps)));
      gst_caps_unref (caps);
      last = k;
    }
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, sizes[k][0] * sizes[k][1] * 3)),
        GST_FLOW_OK);
  }
  push_eos (h);

  fail_unless_equals_int (records->len, 120);
  for (i = 0; i < records->len; i++) {
    CapsRecord *r = &g_array_index (records, CapsRecord, i);
    gint k = (r->index / 3) % 4;

    fail_unless_equals_int (r->width, sizes[k][0]);
    fail_unless_equals_int (r->height, sizes[k][1]);
    fail_unless_equals_int (r->size, r->width * r->height * 3);
    if (i > 0 && r->size != g_array_index (records, CapsRecord, i - 1).size)
      size_changes++;
  }
  /* The shuffle really mixed the sizes: in input order they change 19
   * times. */
  fail_unless (size_changes > 30, "%u size changes", size_changes);
  gst_object_unref (srcpad);
  g_array_unref (records);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A dataset of @n JPEGs whose size depends on their index. */
static gchar *
write_mixed_dataset (guint n)
{
  static const gchar *const one_class[] = { "c", NULL };
  gchar *root = fixture_make_temp_dir ();

  fixture_write_jpeg_tree (root, n, one_class, (FixtureCycle){ 16, 8, 5 },
      (FixtureCycle){ 16, 8, 3 }, NULL, 0);
  return root;
}

/* Each of @n samples came out exactly twice, emissions 0 then 1, as a
 * decoded image of its own size. */
static void
check_each_image_twice (RunResult *r, guint n)
{
  guint *copies = g_new0 (guint, n);
  guint i;

  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->warnings->len, 0);
  fail_unless_equals_int (r->samples->len, 2 * n);
  for (i = 0; i < r->samples->len; i++) {
    RunSample *s = run_result_sample (r, i);
    GstVideoInfo info;

    fail_unless (s->has_meta);
    fail_unless (s->index < n);
    fail_unless_equals_int (s->emissions, copies[s->index]);
    copies[s->index]++;
    fail_unless (
        gst_video_info_from_caps (&info, gst_sample_get_caps (s->sample)));
    fail_unless_equals_int (
        GST_VIDEO_INFO_WIDTH (&info), 16 + (s->index % 5) * 8);
    fail_unless_equals_int (
        GST_VIDEO_INFO_HEIGHT (&info), 16 + (s->index % 3) * 8);
    fail_unless_equals_int (
        gst_buffer_get_size (gst_sample_get_buffer (s->sample)),
        GST_VIDEO_INFO_SIZE (&info));
  }
  for (i = 0; i < n; i++)
    fail_unless_equals_int (copies[i], 2);
  g_free (copies);
}

/* Runs the @n images of @root in dataset order through @middle and checks
 * that each came out twice. */
static void
check_position (const gchar *root, guint n, const gchar *middle)
{
  RunResult *r = fixture_run_printf (
      "datasetsrc location=\"%s\" shuffle=false ! %s ! fakesink name=sink",
      root, middle);

  check_each_image_twice (r, n);
  run_result_free (r);
}

GST_START_TEST (test_positions_a_and_b)
{
  const guint n = 30;
  gchar *root = write_mixed_dataset (n);

  /* B: decoded images of changing size through the shuffle buffer. */
  check_position (root, n, "imagedec n-threads=2 ! echo shuffle-buffer-size=8");
  /* A: encoded samples, decoded after the echo. */
  check_position (
      root, n, "echo factor=2 shuffle-buffer-size=4 ! imagedec n-threads=2");

  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

/* ---- EOS, flushes, memory bound, state changes ---- */

typedef struct
{
  guint buffers;
  gint buffers_before_eos; /* -1 until EOS passed */
} EosOrder;

static GstPadProbeReturn
record_eos_order (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  EosOrder *order = user_data;

  if (info->type & GST_PAD_PROBE_TYPE_BUFFER)
    order->buffers++;
  else if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) == GST_EVENT_EOS)
    order->buffers_before_eos = order->buffers;
  return GST_PAD_PROBE_OK;
}

GST_START_TEST (test_eos_drains_the_buffer)
{
  GstHarness *h = echo_harness ("factor", 2.0, "shuffle-buffer-size", 16, NULL);
  GstPad *srcpad = gst_element_get_static_pad (h->element, "src");
  EosOrder order = { 0, -1 };
  guint i;

  gst_pad_add_probe (srcpad,
      GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
      record_eos_order, &order, NULL);
  for (i = 0; i < 10; i++)
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 4)), GST_FLOW_OK);
  /* 20 copies, 16 of them still waiting. */
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 4);
  push_eos (h);
  fail_unless_equals_int (order.buffers_before_eos, 20);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 20);
  gst_object_unref (srcpad);
  gst_harness_teardown (h);
}

GST_END_TEST;

static void
push_segment (GstHarness *h)
{
  GstSegment segment;

  gst_segment_init (&segment, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
}

GST_START_TEST (test_flush_empties_the_buffer)
{
  GstHarness *h = echo_harness ("factor", 2.0, "shuffle-buffer-size", 16, NULL);
  guint i;

  for (i = 0; i < 10; i++)
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 4)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 4);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  push_segment (h);
  /* The 16 waiting copies are gone; a new item goes through. */
  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (100, 4)), GST_FLOW_OK);
  push_eos (h);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 6);
  for (i = 0; i < 4; i++)
    gst_buffer_unref (gst_harness_pull (h));
  for (i = 0; i < 2; i++)
    pull_emission (h, 100, i);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_max_size_bytes_bounds_the_buffer)
{
  GstHarness *h = echo_harness ("factor", 1.0, "shuffle-buffer-size", 100,
      "max-size-bytes", G_GUINT64_CONSTANT (10000), NULL);
  guint i;

  for (i = 0; i < 50; i++)
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 1000)), GST_FLOW_OK);
  /* Ten 1000-byte items fit; the others had to leave. */
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 40);
  push_eos (h);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 50);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Lets *@budget buffers through, then fails every push. */
static GstPadProbeReturn
fail_pushes (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  gint *budget = user_data;

  if ((*budget)-- > 0)
    return GST_PAD_PROBE_OK;
  gst_buffer_unref (GST_PAD_PROBE_INFO_BUFFER (info));
  GST_PAD_PROBE_INFO_FLOW_RETURN (info) = GST_FLOW_ERROR;
  return GST_PAD_PROBE_HANDLED;
}

/* After a failed push the element goes on with what it still holds. */
static void
check_flow_error (guint shuffle_buffer_size, guint budget, guint failing_item,
    guint expected_out)
{
  GstHarness *h = echo_harness (
      "factor", 2.0, "shuffle-buffer-size", shuffle_buffer_size, NULL);
  GstPad *srcpad = gst_element_get_static_pad (h->element, "src");
  gint left = budget;
  gulong probe = gst_pad_add_probe (
      srcpad, GST_PAD_PROBE_TYPE_BUFFER, fail_pushes, &left, NULL);
  GstBuffer *out;
  guint i, n_out = 0;

  for (i = 0; i < failing_item; i++)
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 4)), GST_FLOW_OK);
  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (i, 4)), GST_FLOW_ERROR);
  gst_pad_remove_probe (srcpad, probe);
  for (i = failing_item + 1; i < 10; i++)
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 4)), GST_FLOW_OK);
  push_eos (h);
  while ((out = gst_harness_try_pull (h)) != NULL) {
    fail_unless (sample_meta (out)->index != failing_item);
    fail_unless (sample_meta (out)->emissions < 2);
    n_out++;
    gst_buffer_unref (out);
  }
  fail_unless_equals_int (n_out, expected_out);
  gst_object_unref (srcpad);
  gst_harness_teardown (h);
}

GST_START_TEST (test_flow_errors)
{
  /* Back to back: item 1's first copy fails, its second is dropped. */
  check_flow_error (0, 2, 1, 18);
  /* Shuffled: items 0 and 1 fill the 4 slots; item 2's first copy needs
   * room, and the copy that leaves for it fails: one copy of 0 or 1 and
   * both of 2 are lost. */
  check_flow_error (4, 0, 2, 17);
}

GST_END_TEST;

GST_START_TEST (test_state_changes)
{
  /* Twice PLAYING and back to READY while data flows (and, with a slow
   * sink, while upstream waits for room). */
  fixture_stop_mid_stream (GST_STATE_READY, 2,
      "fakesrc sizetype=fixed sizemax=64 "
      "filltype=nothing ! echo shuffle-buffer-size=32 ! "
      "fakesink sync=false");
  fixture_stop_mid_stream (GST_STATE_READY, 2,
      "fakesrc sizetype=fixed sizemax=64 "
      "filltype=nothing ! echo mode=adaptive "
      "shuffle-buffer-size=32 ! fakesink sync=false");
  fixture_stop_mid_stream (GST_STATE_READY, 2,
      "fakesrc sizetype=fixed sizemax=64 "
      "filltype=nothing ! echo mode=adaptive "
      "shuffle-buffer-size=4 ! identity sleep-time=1000 ! "
      "fakesink sync=false");
}

GST_END_TEST;

/* ---- adaptive mode ---- */

GST_START_TEST (test_adaptive_repeats_up_to_max_factor_then_waits)
{
  /* A buffer of one item, less than max-factor: no room to spread the
   * copies, they may go out back to back. */
  GstHarness *h = echo_harness (
      "mode", MODE_ADAPTIVE, "max-factor", 3.0, "shuffle-buffer-size", 1, NULL);
  GstBuffer *out;
  guint e, rest = 0;

  /* Downstream (the harness) always takes: one item goes out max-factor
   * times, fresh first. */
  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (1, 16)), GST_FLOW_OK);
  for (e = 0; e < 3; e++)
    pull_emission (h, 1, e);
  /* Then it waits: the next buffer out is the next fresh one, not a fourth
   * copy of the first. */
  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (2, 16)), GST_FLOW_OK);
  pull_emission (h, 2, 0);

  /* At EOS the pending repeats are optional: what comes out before EOS are
   * repeats of item 2, in order. */
  push_eos (h);
  wait_for_eos (h);
  while ((out = gst_harness_try_pull (h)) != NULL) {
    rest++;
    fail_unless_equals_int (sample_meta (out)->index, 2);
    fail_unless_equals_int (sample_meta (out)->emissions, rest);
    gst_buffer_unref (out);
  }
  fail_unless (rest <= 2);
  fail_unless_equals_int (get_uint64 (h->element, "items-in"), 2);
  fail_unless_equals_int (get_uint64 (h->element, "items-out"), 4 + rest);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Holds the first buffer that reaches a pad until the probe goes. */
typedef struct
{
  GMutex lock;
  GCond cond;
  gboolean blocked;
} Blocker;

static GstPadProbeReturn
block_buffer (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  Blocker *b = user_data;

  g_mutex_lock (&b->lock);
  b->blocked = TRUE;
  g_cond_signal (&b->cond);
  g_mutex_unlock (&b->lock);
  return GST_PAD_PROBE_OK;
}

static gulong
block_pad (GstPad *pad, Blocker *b)
{
  g_mutex_init (&b->lock);
  g_cond_init (&b->cond);
  b->blocked = FALSE;
  return gst_pad_add_probe (pad,
      GST_PAD_PROBE_TYPE_BLOCK | GST_PAD_PROBE_TYPE_BUFFER, block_buffer, b,
      NULL);
}

static void
wait_blocked (Blocker *b)
{
  gint64 deadline = fixture_deadline (60);

  g_mutex_lock (&b->lock);
  while (!b->blocked)
    fixture_cond_wait (&b->cond, &b->lock, deadline, "the first buffer");
  g_mutex_unlock (&b->lock);
}

static void
blocker_clear (Blocker *b)
{
  g_mutex_clear (&b->lock);
  g_cond_clear (&b->cond);
}

GST_START_TEST (test_adaptive_fresh_items_go_first)
{
  GstHarness *h = echo_harness (
      "mode", MODE_ADAPTIVE, "max-factor", 3.0, "shuffle-buffer-size", 8, NULL);
  GstPad *srcpad = gst_element_get_static_pad (h->element, "src");
  Blocker blocker;
  gulong probe = block_pad (srcpad, &blocker);
  GstBuffer *out;
  guint i;

  /* Downstream is busy with item 0 while 1, 2, 3 arrive. */
  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (0, 16)), GST_FLOW_OK);
  wait_blocked (&blocker);
  for (i = 1; i < 4; i++)
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 16)), GST_FLOW_OK);
  gst_pad_remove_probe (srcpad, probe);

  /* Once it is free again, the waiting fresh items go before any repeat,
   * in arrival order. */
  for (i = 0; i < 4; i++)
    pull_emission (h, i, 0);
  /* Then repeats, each item at most 3 times in all. */
  push_eos (h);
  wait_for_eos (h);
  while ((out = gst_harness_try_pull (h)) != NULL) {
    fail_unless (sample_meta (out)->index < 4);
    fail_unless (sample_meta (out)->emissions >= 1);
    fail_unless (sample_meta (out)->emissions <= 2);
    gst_buffer_unref (out);
  }
  fail_unless (get_uint64 (h->element, "items-out") <= 12);
  blocker_clear (&blocker);
  gst_object_unref (srcpad);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Pushes items 0 to @n - 1 while item 0 is held downstream, then lets it
 * go: no input comes while the rest goes out, so what goes out does not
 * depend on timing. */
static void
push_while_first_held (GstHarness *h, GstPad *srcpad, Blocker *blocker, guint n)
{
  gulong probe = block_pad (srcpad, blocker);
  guint i;

  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (0, 16)), GST_FLOW_OK);
  wait_blocked (blocker);
  for (i = 1; i < n; i++)
    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 16)), GST_FLOW_OK);
  gst_pad_remove_probe (srcpad, probe);
}

/* With downstream always free, 48 items that wait together, kept in a
 * buffer of 49, go out @max_factor times each: fresh first, in order, then
 * in rounds, every item once more before any item a third time (the least
 * emitted first), and the copies of an item more than 48 (items so far) /
 * max-factor other emissions apart (they would share a batch otherwise).
 * Then the element waits: nothing more comes before EOS. */
static void
check_repeats_spread (guint max_factor)
{
  const guint n = 48, gap = n / max_factor;
  GstHarness *h = echo_harness ("mode", MODE_ADAPTIVE, "max-factor",
      (gdouble)max_factor, "shuffle-buffer-size", n + 1, NULL);
  GstPad *srcpad = gst_element_get_static_pad (h->element, "src");
  gint64 last[48];
  guint seen[48] = { 0 };
  Blocker blocker;
  guint position;

  push_while_first_held (h, srcpad, &blocker, n);

  for (position = 0; position < n * max_factor; position++) {
    GstBuffer *out = gst_harness_pull (h);
    GstTrainSampleMeta *meta = sample_meta (out);
    guint round = position / n;

    fail_unless (meta->index < n);
    if (round == 0)
      fail_unless_equals_int (meta->index, position);
    /* Round r is every item's emission r, once. */
    fail_unless_equals_int (meta->emissions, round);
    fail_unless_equals_int (seen[meta->index], round);
    if (round > 0)
      fail_unless (position - last[meta->index] > gap,
          "item %u went out at %" G_GINT64_FORMAT " and %u: less than %u "
          "emissions apart",
          (guint)meta->index, last[meta->index], position, gap + 1);
    seen[meta->index]++;
    last[meta->index] = position;
    gst_buffer_unref (out);
  }
  push_eos (h);
  wait_for_eos (h);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  fail_unless_equals_int (get_uint64 (h->element, "items-out"), n * max_factor);
  blocker_clear (&blocker);
  gst_object_unref (srcpad);
  gst_harness_teardown (h);
}

GST_START_TEST (test_adaptive_spreads_repeats_least_emitted_first)
{
  check_repeats_spread (2);
  check_repeats_spread (3);
}

GST_END_TEST;

/* With max-factor 8 the floor between two copies of an item is only 64 / 8
 * = 8 emissions; while enough kept items are due, the copies go out at
 * least half the kept items (32) apart instead. 64 items wait together;
 * four rounds of them then go out with no fresh item between. */
GST_START_TEST (test_adaptive_copies_half_the_kept_items_apart)
{
  const guint n = 64;
  GstHarness *h = echo_harness ("mode", MODE_ADAPTIVE, "max-factor", 8.0,
      "shuffle-buffer-size", n + 1, NULL);
  GstPad *srcpad = gst_element_get_static_pad (h->element, "src");
  gint64 last[64];
  guint closest = G_MAXUINT, position;
  Blocker blocker;

  push_while_first_held (h, srcpad, &blocker, n);

  for (position = 0; position < 4 * n; position++) {
    GstBuffer *out = gst_harness_pull (h);
    GstTrainSampleMeta *meta;

    fail_unless (out != NULL, "nothing at emission %u", position);
    meta = sample_meta (out);
    fail_unless (meta->index < n);
    if (meta->emissions > 0)
      closest = MIN (closest, position - (guint)last[meta->index]);
    else
      fail_unless_equals_int (meta->index, position);
    last[meta->index] = position;
    gst_buffer_unref (out);
  }
  fail_unless (
      closest >= n / 2, "copies of an item %u emissions apart", closest);
  blocker_clear (&blocker);
  gst_object_unref (srcpad);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The emissions that must come between two of an item's in a buffer of 32
 * with max-factor 2, when the item was item @index: the items so far, at
 * most 32, over 2. */
static guint
gap_of (guint64 index)
{
  return (guint)MIN (index + 1, 32) / 2;
}

/* With downstream always free and one fresh item at a time, an item may go
 * out again only after gap_of() other emissions; until one may, the element
 * waits for fresh data rather than repeat the last items at once, and the
 * next fresh item never waits behind a repeat. */
GST_START_TEST (test_adaptive_waits_rather_than_bunch_repeats)
{
  const guint n = 200;
  GstHarness *h = echo_harness ("mode", MODE_ADAPTIVE, "max-factor", 2.0,
      "shuffle-buffer-size", 32, NULL);
  gint64 *last = g_new (gint64, n);
  guint i, position = 0, repeats = 0;
  GstBuffer *out;

  for (i = 0; i < n; i++) {
    gboolean fresh = FALSE;

    fail_unless_equals_int (
        gst_harness_push (h, sample_buffer (i, 16)), GST_FLOW_OK);
    /* Repeats may come before it; the fresh item comes before the next is
     * pushed. */
    while (!fresh) {
      GstTrainSampleMeta *meta;

      out = gst_harness_pull (h);
      meta = sample_meta (out);
      fresh = meta->emissions == 0;
      if (fresh) {
        fail_unless_equals_int (meta->index, i);
      } else {
        fail_unless_equals_int (meta->emissions, 1);
        fail_unless (position - last[meta->index] > gap_of (meta->index),
            "item %u repeated %" G_GINT64_FORMAT " emissions after it went "
            "out",
            (guint)meta->index, position - last[meta->index]);
        repeats++;
      }
      last[meta->index] = position++;
      gst_buffer_unref (out);
    }
  }
  push_eos (h);
  wait_for_eos (h);
  while ((out = gst_harness_try_pull (h)) != NULL) {
    GstTrainSampleMeta *meta = sample_meta (out);

    fail_unless_equals_int (meta->emissions, 1);
    fail_unless (position - last[meta->index] > gap_of (meta->index));
    last[meta->index] = position++;
    repeats++;
    gst_buffer_unref (out);
  }
  /* Repeats did come (how many depends on when the task ran between two
   * pushes; check_repeats_spread counts them where timing cannot matter). */
  fail_unless (repeats > 0, "no repeats of %u items", n);
  g_free (last);
  gst_harness_teardown (h);
}

GST_END_TEST;

typedef struct
{
  GstHarness *h;
  GstFlowReturn ret;
  gint done;
} PushJob;

static gpointer
push_in_thread (gpointer data)
{
  PushJob *job = data;

  job->ret = gst_harness_push (job->h, sample_buffer (3, 16));
  g_atomic_int_set (&job->done, TRUE);
  return NULL;
}

/* With a line that holds two 16-byte items (by @shuffle_buffer_size or by
 * @max_size_bytes), a third waits until a flush releases it. */
static void
check_flush_unblocks (guint shuffle_buffer_size, guint64 max_size_bytes)
{
  GstHarness *h = echo_harness ("mode", MODE_ADAPTIVE, "max-factor", 1.0,
      "shuffle-buffer-size", shuffle_buffer_size, "max-size-bytes",
      max_size_bytes, NULL);
  GstPad *srcpad = gst_element_get_static_pad (h->element, "src");
  GstPad *sinkpad = gst_element_get_static_pad (h->element, "sink");
  Blocker blocker;
  gulong probe = block_pad (srcpad, &blocker);
  PushJob job = { h, GST_FLOW_OK, FALSE };
  GThread *thread;
  GstBuffer *out;

  /* Item 0 is stuck downstream, 1 and 2 fill the line, 3 has to wait. */
  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (0, 16)), GST_FLOW_OK);
  wait_blocked (&blocker);
  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (1, 16)), GST_FLOW_OK);
  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (2, 16)), GST_FLOW_OK);
  thread = g_thread_new ("push", push_in_thread, &job);
  /* The pushing thread holds the sink pad's stream lock once it is in the
   * chain function (and, when the line is not full, returns soon). */
  while (!g_atomic_int_get (&job.done)
      && g_rec_mutex_trylock (GST_PAD_GET_STREAM_LOCK (sinkpad))) {
    g_rec_mutex_unlock (GST_PAD_GET_STREAM_LOCK (sinkpad));
    g_thread_yield ();
  }

  /* The flush unblocks both the chain function and the task. */
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  g_thread_join (thread);
  fail_unless (job.ret == GST_FLOW_FLUSHING, "item 3 did not wait for room: %s",
      gst_flow_get_name (job.ret));
  gst_pad_remove_probe (srcpad, probe);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  push_segment (h);

  /* Nothing from before the flush is left; new data flows again. */
  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (9, 16)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_int (sample_meta (out)->index, 9);
  gst_buffer_unref (out);
  push_eos (h);
  wait_for_eos (h);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);

  blocker_clear (&blocker);
  gst_object_unref (srcpad);
  gst_object_unref (sinkpad);
  gst_harness_teardown (h);
}

GST_START_TEST (test_adaptive_flush_unblocks_and_restarts)
{
  check_flush_unblocks (2, 0);
  check_flush_unblocks (100, 32);
}

GST_END_TEST;

GST_START_TEST (test_adaptive_restarts_after_ready)
{
  GstHarness *h = echo_harness ("mode", MODE_ADAPTIVE, "max-factor", 2.0, NULL);
  GstBuffer *out;

  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (0, 16)), GST_FLOW_OK);
  /* Stopped while the task waits for data, holding an item for repeats. */
  gst_buffer_unref (gst_harness_pull (h));
  fail_unless (gst_element_set_state (h->element, GST_STATE_READY)
      == GST_STATE_CHANGE_SUCCESS);
  gst_harness_play (h);
  fail_unless (
      gst_harness_push_event (h, gst_event_new_stream_start ("again")));
  gst_harness_set_src_caps_str (h, "application/x-test");
  /* Whatever came out before the stop, the new item is the next fresh. */
  while ((out = gst_harness_try_pull (h)) != NULL)
    gst_buffer_unref (out);
  fail_unless_equals_int (
      gst_harness_push (h, sample_buffer (1, 16)), GST_FLOW_OK);
  pull_emission (h, 1, 0);
  fail_unless_equals_int (get_uint64 (h->element, "items-in"), 1);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Keeps a copy of the echo-stats message; there must be one only. */
static void
record_stats (GstMessage *msg, gpointer user_data)
{
  GstStructure **stats = user_data;

  if (gst_message_has_name (msg, "echo-stats")) {
    fail_unless (*stats == NULL, "two echo-stats messages");
    *stats = gst_structure_copy (gst_message_get_structure (msg));
  }
}

/* Runs @launch to EOS and returns a copy of the echo-stats message, which
 * must come before EOS. */
static GstStructure *
run_for_stats (const gchar *launch)
{
  GstElement *pipeline = gst_parse_launch (launch, NULL);
  GstStructure *stats = NULL;
  gchar *error;

  fail_unless (pipeline != NULL);
  error =
      fixture_play_to_eos (pipeline, GST_MESSAGE_ELEMENT, record_stats, &stats);
  fail_unless (error == NULL, "\"%s\" failed: %s", launch, error);
  fail_unless (stats != NULL, "no echo-stats message before EOS");
  fail_unless (gst_element_set_state (pipeline, GST_STATE_NULL)
      == GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (pipeline);
  return stats;
}

static gdouble
stats_factor (const GstStructure *stats, const gchar *mode)
{
  guint64 in = 0, out = 0;
  gdouble factor = 0;

  fail_unless (gst_structure_get_uint64 (stats, "items-in", &in));
  fail_unless (gst_structure_get_uint64 (stats, "items-out", &out));
  fail_unless (gst_structure_get_double (stats, "effective-factor", &factor));
  fail_unless_equals_string (gst_structure_get_string (stats, "mode"), mode);
  fail_unless (in > 0);
  fail_unless_equals_float (factor, (gdouble)out / in);
  return factor;
}

GST_START_TEST (test_stats_message_at_eos)
{
  GstStructure *stats = run_for_stats (
      "fakesrc num-buffers=100 sizetype=fixed sizemax=8 filltype=nothing ! "
      "echo factor=2 shuffle-buffer-size=8 ! fakesink sync=false");
  guint64 in = 0, out = 0;

  fail_unless (gst_structure_get_uint64 (stats, "items-in", &in));
  fail_unless (gst_structure_get_uint64 (stats, "items-out", &out));
  fail_unless_equals_int (in, 100);
  fail_unless_equals_int (out, 200);
  fail_unless (gst_structure_get_uint64 (stats, "fresh-out", &in));
  fail_unless_equals_int (in, 100);
  fail_unless_equals_float (stats_factor (stats, "fixed"), 2.0);
  gst_structure_free (stats);
}

GST_END_TEST;

GST_START_TEST (test_adaptive_follows_downstream_speed)
{
  GstStructure *stats;
  gdouble factor;

  /* Slow sink, fast source: a fresh item is always waiting, so there is
   * (almost) no time for repeats. */
  stats = run_for_stats (
      "fakesrc num-buffers=300 sizetype=fixed sizemax=16 filltype=nothing ! "
      "echo mode=adaptive max-factor=4 shuffle-buffer-size=64 ! "
      "identity sleep-time=1000 ! fakesink sync=false");
  factor = stats_factor (stats, "adaptive");
  fail_unless (
      factor >= 1.0 && factor < 1.1, "factor %f with a slow sink", factor);
  gst_structure_free (stats);

  /* Slow source, fast sink: the sink would wait, so items repeat, up to
   * max-factor times. */
  stats = run_for_stats (
      "fakesrc num-buffers=40 sizetype=fixed sizemax=16 filltype=nothing ! "
      "identity sleep-time=2000 ! echo mode=adaptive max-factor=4 ! "
      "fakesink sync=false");
  factor = stats_factor (stats, "adaptive");
  fail_unless (
      factor > 1.5 && factor <= 4.0, "factor %f with a slow source", factor);
  gst_structure_free (stats);
}

GST_END_TEST;

/* ---- downstream ends the stream ---- */

/* On the harness's sink pad: lets @user_data's count of buffers through,
 * then answers every buffer with EOS, as cudatrainsink answers the batch
 * that reaches max-steps. */
static GstPadProbeReturn
answer_eos_after (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  gint *left = user_data;

  if (g_atomic_int_add (left, -1) > 0)
    return GST_PAD_PROBE_OK;
  gst_buffer_unref (GST_PAD_PROBE_INFO_BUFFER (info));
  GST_PAD_PROBE_INFO_FLOW_RETURN (info) = GST_FLOW_EOS;
  return GST_PAD_PROBE_HANDLED;
}

/* The echo-stats messages on @bus, each checked to say @mode. */
static guint
count_stats_messages (GstBus *bus, const gchar *mode, guint64 *items_out)
{
  GstMessage *msg;
  guint n = 0;

  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT)) != NULL) {
    const GstStructure *s = gst_message_get_structure (msg);

    if (gst_structure_has_name (s, "echo-stats")) {
      fail_unless_equals_string (gst_structure_get_string (s, "mode"), mode);
      fail_unless (gst_structure_get_uint64 (s, "items-out", items_out));
      n++;
    }
    gst_message_unref (msg);
  }
  return n;
}

/* When downstream answers EOS, echo-stats goes out at once, whether or not
 * the EOS that upstream sends then ever reaches echo (a pipeline whose
 * sink posts EOS itself stops before it does), and only once per run: the
 * EOS event that comes after does not post it again, and goes downstream
 * (adaptive mode passes it on as queue does, after dropping what it
 * held). */
static void
check_stats_when_downstream_ends (gint mode)
{
  const gchar *name = mode == MODE_ADAPTIVE ? "adaptive" : "fixed";
  GstHarness *h = mode == MODE_ADAPTIVE
      ? echo_harness ("mode", MODE_ADAPTIVE, "max-factor", 1.0,
          "shuffle-buffer-size", 4, NULL)
      : echo_harness ("factor", 1.0, "shuffle-buffer-size", 0, NULL);
  GstBus *bus = gst_bus_new ();
  gint left = 5;
  guint64 items_out = 0, i;
  GstFlowReturn ret = GST_FLOW_OK;

  gst_element_set_bus (h->element, bus);
  gst_pad_add_probe (
      h->sinkpad, GST_PAD_PROBE_TYPE_BUFFER, answer_eos_after, &left, NULL);
  /* Fixed mode pushes in the chain function and returns downstream's EOS
   * at once; adaptive mode's task learns it, and the chain function
   * answers EOS from then on. */
  for (i = 0; i < 1000 && ret == GST_FLOW_OK; i++) {
    ret = gst_harness_push (h, sample_buffer (i, 16));
    if (ret == GST_FLOW_OK && mode == MODE_ADAPTIVE)
      g_usleep (1000);
  }
  fail_unless_equals_int (ret, GST_FLOW_EOS);
  if (mode != MODE_ADAPTIVE)
    fail_unless_equals_int (i, 6);

  /* posted by the pushing thread when its push returned EOS, before the
   * chain function answered EOS */
  fail_unless_equals_int (count_stats_messages (bus, name, &items_out), 1);
  /* the sixth buffer, answered with EOS, does not count */
  fail_unless_equals_int (items_out, 5);

  push_eos (h);
  wait_for_eos (h);
  fail_unless (count_stats_messages (bus, name, &items_out) == 0,
      "echo-stats twice in one run");

  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_START_TEST (test_stats_message_when_downstream_ends)
{
  check_stats_when_downstream_ends (0);
  check_stats_when_downstream_ends (MODE_ADAPTIVE);
}

GST_END_TEST;

/* The same through whole pipelines whose sink answers its tenth buffer
 * with EOS (fakesink num-buffers), with and without a queue between echo
 * and the sink: the run reaches EOS, and echo-stats comes once, before it
 * (run_for_stats). */
GST_START_TEST (test_stats_message_when_the_sink_ends_the_run)
{
  static const gchar *modes[] = { "fixed", "adaptive" };
  static const gchar *between[] = { "", "queue max-size-buffers=4 ! " };
  guint m, q;

  for (m = 0; m < G_N_ELEMENTS (modes); m++) {
    for (q = 0; q < G_N_ELEMENTS (between); q++) {
      gchar *launch = g_strdup_printf (
          "fakesrc num-buffers=100000 sizetype=fixed sizemax=8 "
          "filltype=nothing ! echo mode=%s factor=2 shuffle-buffer-size=8 ! "
          "%sfakesink sync=false num-buffers=10",
          modes[m], between[q]);
      GstStructure *stats = run_for_stats (launch);
      guint64 in = 0, out = 0;

      fail_unless (gst_structure_get_uint64 (stats, "items-in", &in));
      fail_unless (gst_structure_get_uint64 (stats, "items-out", &out));
      fail_unless_equals_string (
          gst_structure_get_string (stats, "mode"), modes[m]);
      fail_unless (in < 1000, "%s: the source ended the run", launch);
      /* without a queue, the tenth push is the one answered with EOS; a
       * queue takes a few more before it knows */
      if (q == 0) {
        fail_unless_equals_int (out, 9);
      } else {
        fail_unless (out >= 9 && out <= 9 + 4 + 2,
            "%s: %" G_GUINT64_FORMAT " out", launch, out);
      }
      gst_structure_free (stats);
      g_free (launch);
    }
  }
}

GST_END_TEST;

/* ---- dropped while it plays ---- */

typedef struct
{
  GMutex lock;
  GCond cond;
  gboolean pushed;   /* the pushing thread left the chain function */
  GstElement *echo;  /* the last reference, which the probe drops */
  gboolean disposed; /* echo's dispose chained up */
  GstState state;    /* the state it was in then */
} DropJob;

/* In echo's task, downstream of it: drops the last reference there, once
 * the thread that pushed the item no longer holds one. */
static GstPadProbeReturn
drop_echo_in_its_task (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  DropJob *job = user_data;
  GstElement *echo;

  g_mutex_lock (&job->lock);
  while (!job->pushed)
    g_cond_wait (&job->cond, &job->lock);
  echo = g_steal_pointer (&job->echo);
  g_mutex_unlock (&job->lock);
  if (echo != NULL)
    gst_object_unref (echo);
  return GST_PAD_PROBE_OK;
}

static void
echo_disposed (gpointer data, GObject *echo)
{
  DropJob *job = data;

  g_mutex_lock (&job->lock);
  job->state = GST_STATE (echo);
  job->disposed = TRUE;
  g_cond_signal (&job->cond);
  g_mutex_unlock (&job->lock);
}

static gboolean
drop_expected_warning (const gchar *log_domain, GLogLevelFlags log_level,
    const gchar *message, gpointer user_data)
{
  return TRUE;
}

/* Python drops a playing pipeline whenever an exception unwinds the
 * function that held it. Whichever thread drops echo's last reference,
 * echo stops before it is freed: here its own task does (a message it
 * posts, or a probe, may hold the reference there for a moment), which
 * cannot join itself, so another thread stops it and disposes of it. */
GST_START_TEST (test_adaptive_dropped_in_its_own_thread)
{
  static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE (
      "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
  static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE (
      "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
  GstElement *echo = gst_element_factory_make ("echo", NULL);
  GstCaps *caps = gst_caps_new_empty_simple ("x/y");
  DropJob job = { 0 };
  GstPad *srcpad, *sinkpad;
  GstSegment segment;
  gint64 deadline;

  g_mutex_init (&job.lock);
  g_cond_init (&job.cond);
  gst_check_add_log_filter (NULL, G_LOG_LEVEL_WARNING,
      g_regex_new ("disposed in the PLAYING state", 0, 0, NULL),
      drop_expected_warning, NULL, NULL);
  g_object_set (echo, "mode", MODE_ADAPTIVE, NULL);
  srcpad = gst_check_setup_src_pad (echo, &src_template);
  sinkpad = gst_check_setup_sink_pad (echo, &sink_template);
  gst_pad_set_active (srcpad, TRUE);
  gst_pad_set_active (sinkpad, TRUE);
  gst_pad_add_probe (
      sinkpad, GST_PAD_PROBE_TYPE_BUFFER, drop_echo_in_its_task, &job, NULL);
  g_object_weak_ref (G_OBJECT (echo), echo_disposed, &job);
  fail_unless (gst_element_set_state (echo, GST_STATE_PLAYING)
      == GST_STATE_CHANGE_SUCCESS);
  job.echo = echo;

  gst_segment_init (&segment, GST_FORMAT_TIME);
  fail_unless (gst_pad_push_event (srcpad, gst_event_new_stream_start ("x")));
  fail_unless (gst_pad_push_event (srcpad, gst_event_new_caps (caps)));
  gst_caps_unref (caps);
  fail_unless (gst_pad_push_event (srcpad, gst_event_new_segment (&segment)));
  fail_unless_equals_int (
      gst_pad_push (srcpad, sample_buffer (0, 16)), GST_FLOW_OK);
  g_mutex_lock (&job.lock);
  job.pushed = TRUE;
  g_cond_broadcast (&job.cond);
  deadline = g_get_monotonic_time () + 20 * G_TIME_SPAN_SECOND;
  while (!job.disposed)
    fail_unless (g_cond_wait_until (&job.cond, &job.lock, deadline),
        "echo was not disposed of after its last reference went");
  g_mutex_unlock (&job.lock);
  fail_unless_equals_int (job.state, GST_STATE_NULL);

  gst_check_clear_log_filter ();
  gst_check_drop_buffers ();
  gst_pad_set_active (srcpad, FALSE);
  gst_pad_set_active (sinkpad, FALSE);
  gst_object_unref (srcpad);
  gst_object_unref (sinkpad);
  g_mutex_clear (&job.lock);
  g_cond_clear (&job.cond);
}

GST_END_TEST;

#define ECHO_TESTS(test)                                                       \
  test (test_factor_one_is_identity);                                          \
  test (test_factor_three_back_to_back);                                       \
  test (test_effective_factor_while_the_buffer_fills);                         \
  test (test_fractional_factor);                                               \
  test (test_shuffle_spreads_copies);                                          \
  test (test_seed_reproduces);                                                 \
  test (test_seed_differs_per_rank);                                           \
  test (test_repeats_share_memory_through_shuffle);                            \
  test (test_batches_and_chained_echos);                                       \
  test (test_mixed_sizes_keep_their_caps);                                     \
  test (test_positions_a_and_b);                                               \
  test (test_eos_drains_the_buffer);                                           \
  test (test_flush_empties_the_buffer);                                        \
  test (test_max_size_bytes_bounds_the_buffer);                                \
  test (test_flow_errors);                                                     \
  test (test_state_changes);                                                   \
  test (test_adaptive_repeats_up_to_max_factor_then_waits);                    \
  test (test_adaptive_fresh_items_go_first);                                   \
  test (test_adaptive_spreads_repeats_least_emitted_first);                    \
  test (test_adaptive_copies_half_the_kept_items_apart);                       \
  test (test_adaptive_waits_rather_than_bunch_repeats);                        \
  test (test_adaptive_flush_unblocks_and_restarts);                            \
  test (test_adaptive_restarts_after_ready);                                   \
  test (test_stats_message_at_eos);                                            \
  test (test_adaptive_follows_downstream_speed);                               \
  test (test_stats_message_when_downstream_ends);                              \
  test (test_stats_message_when_the_sink_ends_the_run);                        \
  test (test_adaptive_dropped_in_its_own_thread);

CHECK_MAIN (echo, "echo", ECHO_TESTS);
