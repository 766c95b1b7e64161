/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* batcher.c: tests of the batcher element. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/base/gstbasesink.h>
#include <gst/video/video.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>

#include "check-main.h"
#include "fixtures.h"
#include "train-meta.h"

/* An odd width: video rows of 5 * 3 bytes are padded to 16, batch rows are
 * not. */
#define W 5
#define H 3

/* A W x H RGB frame whose every byte encodes (image, row, byte in row), with
 * a sample meta. */
static GstBuffer *
make_frame (guint image, gint label, guint emissions)
{
  GstVideoInfo info;
  GstBuffer *buffer;
  GstMapInfo map;
  gint y, x;
  GstTrainSampleMeta *meta;

  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_RGB, W, H);
  buffer = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  gst_buffer_map (buffer, &map, GST_MAP_WRITE);
  memset (map.data, 0xee, map.size);
  for (y = 0; y < H; y++)
    for (x = 0; x < W * 3; x++)
      map.data[y * GST_VIDEO_INFO_PLANE_STRIDE (&info, 0) + x] =
          (guint8)(image * 31 + y * 7 + x);
  gst_buffer_unmap (buffer, &map);
  meta = gst_buffer_add_train_sample_meta (buffer, label, image, 0, NULL);
  meta->emissions = emissions;
  return buffer;
}

static void
check_batch (GstBuffer *batch, guint first_image, guint n)
{
  GstMapInfo images, labels;
  guint i;
  gint y, x;

  fail_unless_equals_int (gst_buffer_n_memory (batch), 2);
  fail_unless (gst_buffer_map_range (batch, 0, 1, &images, GST_MAP_READ));
  fail_unless (gst_buffer_map_range (batch, 1, 1, &labels, GST_MAP_READ));
  fail_unless_equals_int (images.size, n * W * H * 3);
  fail_unless_equals_int (labels.size, n * sizeof (gint32));
  for (i = 0; i < n; i++) {
    guint image = first_image + i;

    for (y = 0; y < H; y++)
      for (x = 0; x < W * 3; x++)
        fail_unless_equals_int (images.data[((i * H) + y) * W * 3 + x],
            (guint8)(image * 31 + y * 7 + x));
    fail_unless_equals_int (((gint32 *)labels.data)[i], (gint)(image % 10));
  }
  gst_buffer_unmap (batch, &labels);
  gst_buffer_unmap (batch, &images);
}

static GstHarness *
new_harness_with_query (const gchar *props, GstPadQueryFunction query)
{
  gchar *desc = g_strdup_printf ("batcher %s", props);
  GstHarness *h = gst_harness_new_parse (desc);
  gchar *caps = g_strdup_printf ("video/x-raw,format=RGB,width=%d,height=%d,"
                                 "framerate=0/1",
      W, H);

  /* Downstream's answer to the allocation query must be in place before
   * the caps go out. */
  if (query != NULL)
    gst_pad_set_query_function (h->sinkpad, query);
  gst_harness_set_src_caps_str (h, caps);
  g_free (caps);
  g_free (desc);
  return h;
}

static GstHarness *
new_harness (const gchar *props)
{
  return new_harness_with_query (props, NULL);
}

GST_START_TEST (test_batches_hold_the_images_in_order)
{
  GstHarness *h = new_harness ("batch-size=4");
  GstBuffer *batch;
  GstCaps *caps;
  gchar *caps_str;
  GstTrainBatchMeta *meta;
  guint i;

  for (i = 0; i < 8; i++)
    fail_unless_equals_int (
        gst_harness_push (h, make_frame (i, i % 10, i == 1 || i == 6 ? 1 : 0)),
        GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 2);

  caps = gst_pad_get_current_caps (h->sinkpad);
  caps_str = gst_caps_to_string (caps);
  fail_unless_equals_string (caps_str,
      "other/tensors, format=(string)static, num_tensors=(int)2, "
      "types=(string)\"uint8\\,int32\", dimensions=(string)\"3:5:3:4\\,4\", "
      "framerate=(fraction)0/1");
  g_free (caps_str);
  gst_caps_unref (caps);

  for (i = 0; i < 2; i++) {
    batch = gst_harness_pull (h);
    check_batch (batch, i * 4, 4);
    meta = gst_buffer_get_train_batch_meta (batch);
    fail_unless (meta != NULL);
    fail_unless_equals_int (meta->num_samples, 4);
    /* One repeat in each batch. */
    fail_unless_equals_int (meta->num_fresh, 3);
    fail_unless_equals_int (gst_train_buffer_count_fresh (batch), 3);
    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (batch), i);
    gst_buffer_unref (batch);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_remainder_dropped_or_pushed)
{
  GstHarness *h = new_harness ("batch-size=4");
  GstBuffer *batch;
  GstCaps *caps;
  const GstStructure *st;
  guint i;

  /* drop-remainder=true (default): 10 images give 2 batches. */
  for (i = 0; i < 10; i++)
    gst_harness_push (h, make_frame (i, i % 10, 0));
  gst_harness_push_event (h, gst_event_new_eos ());
  fail_unless_equals_int (gst_harness_buffers_received (h), 2);
  gst_harness_teardown (h);

  /* drop-remainder=false: the third batch holds 2, with its own caps. */
  h = new_harness ("batch-size=4 drop-remainder=false");
  for (i = 0; i < 10; i++)
    gst_harness_push (h, make_frame (i, i % 10, 0));
  gst_harness_push_event (h, gst_event_new_eos ());
  fail_unless_equals_int (gst_harness_buffers_received (h), 3);
  for (i = 0; i < 2; i++)
    gst_buffer_unref (gst_harness_pull (h));
  batch = gst_harness_pull (h);
  check_batch (batch, 8, 2);
  fail_unless_equals_int (
      gst_buffer_get_train_batch_meta (batch)->num_samples, 2);
  gst_buffer_unref (batch);
  caps = gst_pad_get_current_caps (h->sinkpad);
  st = gst_caps_get_structure (caps, 0);
  fail_unless_equals_string (
      gst_structure_get_string (st, "dimensions"), "3:5:3:2,2");
  gst_caps_unref (caps);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The warning text of the one warning @h's batcher posted on @bus at EOS
 * after @n images (a new string), or NULL when it posted none. */
static gchar *
warning_at_eos (GstHarness *h, GstBus *bus, guint n)
{
  GstMessage *msg;
  GError *err = NULL;
  gchar *text = NULL;
  guint i;

  for (i = 0; i < n; i++)
    gst_harness_push (h, make_frame (i, i % 10, 0));
  gst_harness_push_event (h, gst_event_new_eos ());
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  if (msg != NULL) {
    gst_message_parse_warning (msg, &err, NULL);
    text = g_strdup (err->message);
    g_error_free (err);
    gst_message_unref (msg);
  }
  fail_if (gst_bus_have_pending (bus), "more than one message");
  return text;
}

/* drop-remainder dropping every image of the stream (fewer than one batch
 * arrived) says so: downstream got nothing (issue 43: a training run of 100
 * images in batches of 128 trained nothing, and nothing said why). A
 * remainder after full batches is dropped without a word. */
GST_START_TEST (test_dropping_every_image_warns)
{
  GstHarness *h = new_harness ("batch-size=4");
  GstBus *bus = gst_bus_new ();
  gchar *text;

  gst_element_set_bus (h->element, bus);
  text = warning_at_eos (h, bus, 3);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  fail_unless_equals_string (text,
      "Dropped all 3 images of the stream at its end: fewer than "
      "batch-size=4 arrived, and drop-remainder=true (the default) drops a "
      "last partial batch, so no batch went out. Set drop-remainder=false "
      "to push them as one smaller batch, or batch-size=3 or less.");
  g_free (text);
  gst_element_set_bus (h->element, NULL);
  gst_harness_teardown (h);

  h = new_harness ("batch-size=4");
  gst_element_set_bus (h->element, bus);
  text = warning_at_eos (h, bus, 10);
  fail_unless_equals_int (gst_harness_buffers_received (h), 2);
  fail_unless (text == NULL, "%s", text);
  gst_element_set_bus (h->element, NULL);
  gst_harness_teardown (h);

  h = new_harness ("batch-size=4 drop-remainder=false");
  gst_element_set_bus (h->element, bus);
  text = warning_at_eos (h, bus, 3);
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  fail_unless (text == NULL, "%s", text);
  gst_element_set_bus (h->element, NULL);
  gst_harness_teardown (h);
  gst_object_unref (bus);
}

GST_END_TEST;

/* A flush drops the partial batch: what follows starts a new one. */
GST_START_TEST (test_flush_drops_the_partial_batch)
{
  GstHarness *h = new_harness ("batch-size=4 drop-remainder=false");
  GstSegment segment;
  GstBuffer *batch;
  guint i;

  for (i = 0; i < 6; i++)
    fail_unless_equals_int (
        gst_harness_push (h, make_frame (i, i % 10, 0)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  gst_segment_init (&segment, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  for (i = 10; i < 14; i++)
    fail_unless_equals_int (
        gst_harness_push (h, make_frame (i, i % 10, 0)), GST_FLOW_OK);
  gst_harness_push_event (h, gst_event_new_eos ());
  /* images 4 and 5 are gone: the batch after the flush is 10..13, and EOS
   * finds no remainder */
  fail_unless_equals_int (gst_harness_buffers_received (h), 2);
  gst_buffer_unref (gst_harness_pull (h));
  batch = gst_harness_pull (h);
  check_batch (batch, 10, 4);
  gst_buffer_unref (batch);
  gst_harness_teardown (h);
}

GST_END_TEST;

static void
expect_error (GstHarness *h, GstBuffer *bad, const gchar *part)
{
  GstMessage *msg;
  GError *err = NULL;
  GstBus *bus = gst_bus_new ();

  gst_element_set_bus (h->element, bus);
  fail_unless_equals_int (gst_harness_push (h, bad), GST_FLOW_ERROR);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (strstr (err->message, part) != NULL, "\"%s\" not in \"%s\"",
      part, err->message);
  g_error_free (err);
  gst_message_unref (msg);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
}

GST_START_TEST (test_errors_name_the_sample)
{
  GstHarness *h = new_harness ("batch-size=4");
  GstBuffer *unlabelled = gst_buffer_new_allocate (NULL, 16 * H, NULL);
  GstBuffer *big;
  GstVideoInfo info;

  expect_error (h, unlabelled, "has no label");
  gst_harness_teardown (h);

  /* A sample of another size than the first. */
  h = new_harness ("batch-size=4");
  fail_unless_equals_int (
      gst_harness_push (h, make_frame (0, 1, 0)), GST_FLOW_OK);
  gst_harness_set_src_caps_str (
      h, "video/x-raw,format=RGB,width=7,height=3,framerate=0/1");
  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_RGB, 7, 3);
  big = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  gst_buffer_add_train_sample_meta (big, 2, 42, 0, "/data/x/big.jpg");
  expect_error (h, big,
      "42 (\"/data/x/big.jpg\") is 7x3 but the batch holds "
      "5x3");
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A buffer pool that knows the memories it made, as cudatrainsink's pool of
 * pinned memory will: a batch whose images memory is one of them reached
 * the sink in the sink's memory. Counts the buffers it allocates. */
typedef struct
{
  GstBufferPool parent;
  GMutex lock;
  GHashTable *memories;
  gint allocated; /* atomic */
} TestPool;
typedef GstBufferPoolClass TestPoolClass;

static GType test_pool_get_type (void);
G_DEFINE_TYPE (TestPool, test_pool, GST_TYPE_BUFFER_POOL);

static GstFlowReturn
test_pool_alloc_buffer (
    GstBufferPool *pool, GstBuffer **buffer, GstBufferPoolAcquireParams *params)
{
  TestPool *self = (TestPool *)pool;
  GstFlowReturn ret = GST_BUFFER_POOL_CLASS (test_pool_parent_class)
                          ->alloc_buffer (pool, buffer, params);
  guint i;

  if (ret != GST_FLOW_OK)
    return ret;
  g_mutex_lock (&self->lock);
  for (i = 0; i < gst_buffer_n_memory (*buffer); i++)
    g_hash_table_add (self->memories, gst_buffer_peek_memory (*buffer, i));
  g_mutex_unlock (&self->lock);
  g_atomic_int_inc (&self->allocated);
  return GST_FLOW_OK;
}

static void
test_pool_finalize (GObject *object)
{
  TestPool *self = (TestPool *)object;

  g_hash_table_unref (self->memories);
  g_mutex_clear (&self->lock);
  G_OBJECT_CLASS (test_pool_parent_class)->finalize (object);
}

static void
test_pool_class_init (TestPoolClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = test_pool_finalize;
  klass->alloc_buffer = test_pool_alloc_buffer;
}

static void
test_pool_init (TestPool *self)
{
  g_mutex_init (&self->lock);
  self->memories = g_hash_table_new (NULL, NULL);
}

static TestPool *
test_pool_new (void)
{
  TestPool *pool = g_object_new (test_pool_get_type (), NULL);

  gst_object_ref_sink (pool);
  return pool;
}

static gboolean
test_pool_made (TestPool *pool, GstMemory *memory)
{
  gboolean made;

  g_mutex_lock (&pool->lock);
  made = g_hash_table_contains (pool->memories, memory);
  g_mutex_unlock (&pool->lock);
  return made;
}

static guint
test_pool_allocated (TestPool *pool)
{
  return (guint)g_atomic_int_get (&pool->allocated);
}

static TestPool *answer_pool;
static guint answer_size;

static gboolean
answer_allocation (GstPad *pad, GstObject *parent, GstQuery *query)
{
  if (GST_QUERY_TYPE (query) == GST_QUERY_ALLOCATION) {
    gst_query_add_allocation_pool (
        query, GST_BUFFER_POOL (answer_pool), answer_size, 0, 0);
    return TRUE;
  }
  return gst_pad_query_default (pad, parent, query);
}

GST_START_TEST (test_batches_come_from_downstream_pool)
{
  GstHarness *h;
  guint i;

  answer_pool = test_pool_new ();
  answer_size = 4 * W * H * 3;
  h = new_harness_with_query (
      "batch-size=4 drop-remainder=false", answer_allocation);

  for (i = 0; i < 12; i++)
    fail_unless_equals_int (
        gst_harness_push (h, make_frame (i, i % 10, 0)), GST_FLOW_OK);
  for (i = 0; i < 3; i++) {
    GstBuffer *batch = gst_harness_pull (h);

    check_batch (batch, i * 4, 4);
    /* The images are in the pool's memory, the labels beside them. */
    fail_unless (
        test_pool_made (answer_pool, gst_buffer_peek_memory (batch, 0)));
    gst_buffer_unref (batch);
  }
  /* The pool recycles the buffers released: a batch gives back its pool
   * buffer whole. */
  fail_unless (test_pool_allocated (answer_pool) >= 1
      && test_pool_allocated (answer_pool) <= 3);

  /* A partial last batch is shrunk in place, still in the pool's memory. */
  for (i = 12; i < 14; i++)
    fail_unless_equals_int (
        gst_harness_push (h, make_frame (i, i % 10, 0)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  {
    GstBuffer *batch = gst_harness_pull (h);

    check_batch (batch, 12, 2);
    fail_unless (
        test_pool_made (answer_pool, gst_buffer_peek_memory (batch, 0)));
    gst_buffer_unref (batch);
  }
  gst_harness_teardown (h);
  gst_object_unref (answer_pool);

  /* A pool whose buffers are too small for the images is not used. */
  answer_pool = test_pool_new ();
  answer_size = 4 * W * H * 3 - 1;
  h = new_harness_with_query ("batch-size=4", answer_allocation);
  for (i = 0; i < 4; i++)
    fail_unless_equals_int (
        gst_harness_push (h, make_frame (i, i % 10, 0)), GST_FLOW_OK);
  {
    GstBuffer *batch = gst_harness_pull (h);

    check_batch (batch, 0, 4);
    fail_unless_equals_int (test_pool_allocated (answer_pool), 0);
    gst_buffer_unref (batch);
  }
  gst_harness_teardown (h);
  gst_object_unref (answer_pool);
}

GST_END_TEST;

/* A sink that proposes a small TestPool, as cudatrainsink will propose its
 * pinned one, and counts the batches that reach it in that pool's memory. */
#define POOL_SINK_MAX_BUFFERS 4

typedef struct
{
  GstBaseSink parent;
  TestPool *pool;
  guint rendered;
  guint in_pool;
} PoolSink;
typedef GstBaseSinkClass PoolSinkClass;

static GType pool_sink_get_type (void);
G_DEFINE_TYPE (PoolSink, pool_sink, GST_TYPE_BASE_SINK);

static GstStaticPadTemplate pool_sink_template = GST_STATIC_PAD_TEMPLATE (
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static gboolean
pool_sink_propose_allocation (GstBaseSink *base, GstQuery *query)
{
  PoolSink *sink = (PoolSink *)base;
  GstCaps *caps = NULL;
  guint c = 0, w = 0, h = 0, n = 0, size;
  const gchar *dims;

  gst_query_parse_allocation (query, &caps, NULL);
  dims =
      gst_structure_get_string (gst_caps_get_structure (caps, 0), "dimensions");
  fail_unless (
      dims != NULL && sscanf (dims, "%u:%u:%u:%u", &c, &w, &h, &n) == 4);
  size = c * w * h * n;
  if (!gst_buffer_pool_is_active (GST_BUFFER_POOL (sink->pool))) {
    GstStructure *config =
        gst_buffer_pool_get_config (GST_BUFFER_POOL (sink->pool));

    gst_buffer_pool_config_set_params (
        config, caps, size, 0, POOL_SINK_MAX_BUFFERS);
    gst_buffer_pool_set_config (GST_BUFFER_POOL (sink->pool), config);
  }
  gst_query_add_allocation_pool (
      query, GST_BUFFER_POOL (sink->pool), size, 0, POOL_SINK_MAX_BUFFERS);
  return TRUE;
}

static GstFlowReturn
pool_sink_render (GstBaseSink *base, GstBuffer *buffer)
{
  PoolSink *sink = (PoolSink *)base;

  fail_unless_equals_int (gst_buffer_n_memory (buffer), 2);
  GST_OBJECT_LOCK (sink);
  sink->rendered++;
  sink->in_pool +=
      test_pool_made (sink->pool, gst_buffer_peek_memory (buffer, 0));
  GST_OBJECT_UNLOCK (sink);
  return GST_FLOW_OK;
}

static void
pool_sink_finalize (GObject *object)
{
  gst_object_unref (((PoolSink *)object)->pool);
  G_OBJECT_CLASS (pool_sink_parent_class)->finalize (object);
}

static void
pool_sink_class_init (PoolSinkClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = pool_sink_finalize;
  gst_element_class_add_static_pad_template (
      GST_ELEMENT_CLASS (klass), &pool_sink_template);
  gst_element_class_set_static_metadata (GST_ELEMENT_CLASS (klass), "Pool sink",
      "Sink", "Proposes a small buffer pool (test)", "tests");
  klass->propose_allocation = pool_sink_propose_allocation;
  klass->render = pool_sink_render;
}

static void
pool_sink_init (PoolSink *sink)
{
  sink->pool = test_pool_new ();
  gst_base_sink_set_sync (GST_BASE_SINK (sink), FALSE);
}

static void
register_pool_sink (void)
{
  fail_unless (gst_element_register (
      NULL, "testpoolsink", GST_RANK_NONE, pool_sink_get_type ()));
}

/* A folder of @count 6x4 JPEGs in @classes classes, for the pool tests
 * (which register the test sink first). */
static gchar *
write_pool_tree (guint count, guint classes)
{
  gchar *root = fixture_make_temp_dir ();
  guint i;

  register_pool_sink ();
  for (i = 0; i < count; i++) {
    gchar *name = g_strdup_printf ("class%u/%u.jpg", i % classes, i);
    gchar *path = g_build_filename (root, name, NULL);

    fixture_write_jpeg (path, 6, 4, i);
    g_free (path);
    g_free (name);
  }
  return root;
}

/* Runs 15 images x 2 epochs in batches of 2 (15 batches) through @echo (a
 * launch fragment ending in "!", or "") into a pool sink with a pool of 4
 * buffers; returns the sink (a reference) once the pipeline reached EOS. */
static PoolSink *
run_into_pool_sink (const gchar *root, const gchar *echo)
{
  gchar *launch =
      g_strdup_printf ("datasetsrc location=\"%s\" num-epochs=2 ! imagedec ! "
                       "batcher batch-size=2 ! %s testpoolsink name=sink",
          root, echo);
  GstElement *pipeline = gst_parse_launch (launch, NULL);
  GstElement *sink;
  gchar *error;

  fail_unless (pipeline != NULL, "%s", launch);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  error = fixture_play_to_eos (pipeline, 0, NULL, NULL);
  fail_unless (error == NULL, "%s: %s", launch, error);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  g_free (launch);
  return (PoolSink *)sink;
}

/* Batches reach the sink in the memory of the pool it proposed, with and
 * without echo between batcher and sink (position D); echo holds more
 * batches than the pool has buffers without a deadlock. */
GST_START_TEST (test_batches_reach_the_sink_in_its_pool)
{
  gchar *root = write_pool_tree (15, 3);
  PoolSink *sink;

  sink = run_into_pool_sink (root, "");
  fail_unless_equals_int (sink->rendered, 15);
  fail_unless_equals_int (sink->in_pool, 15);
  /* Released batches give their pool buffer back whole: it is reused. */
  fail_unless (test_pool_allocated (sink->pool) <= POOL_SINK_MAX_BUFFERS);
  gst_object_unref (sink);

  /* Fixed mode: 8 copies held, more than the pool's 4 buffers. */
  sink = run_into_pool_sink (root, "echo factor=2 shuffle-buffer-size=8 !");
  fail_unless_equals_int (sink->rendered, 30);
  fail_unless_equals_int (sink->in_pool, 30);
  fail_unless (test_pool_allocated (sink->pool) > POOL_SINK_MAX_BUFFERS);
  gst_object_unref (sink);

  sink = run_into_pool_sink (
      root, "echo mode=adaptive max-factor=3 shuffle-buffer-size=8 !");
  fail_unless (sink->rendered >= 15);
  fail_unless_equals_int (sink->in_pool, sink->rendered);
  gst_object_unref (sink);

  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

/* Stopping mid-stream is clean while a slow sink behind a queue and an echo
 * keeps the small pool's buffers busy (batcher mostly waits for one). */
GST_START_TEST (test_stop_while_batches_fill_the_pool)
{
  gchar *root = write_pool_tree (6, 2);
  GstState stop_states[] = { GST_STATE_READY, GST_STATE_NULL };
  guint rounds[] = { 3, 2 }, i;

  for (i = 0; i < G_N_ELEMENTS (stop_states); i++)
    fixture_stop_mid_stream (stop_states[i], rounds[i],
        "datasetsrc location=\"%s\" num-epochs=-1 ! imagedec ! batcher "
        "batch-size=2 ! queue ! identity sleep-time=20000 ! echo factor=2 "
        "shuffle-buffer-size=2 ! testpoolsink",
        root);
  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

/* A @width x @height JPEG of one colour, grey level @level. */
static void
write_solid_jpeg (const gchar *path, gint width, gint height, guint8 level)
{
  struct jpeg_compress_struct cinfo;
  struct jpeg_error_mgr jerr;
  guint8 *row = g_malloc (width * 3);
  unsigned char *data = NULL;
  unsigned long size = 0;

  memset (row, level, width * 3);
  cinfo.err = jpeg_std_error (&jerr);
  jpeg_create_compress (&cinfo);
  jpeg_mem_dest (&cinfo, &data, &size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults (&cinfo);
  jpeg_set_quality (&cinfo, 95, TRUE);
  jpeg_start_compress (&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height)
    jpeg_write_scanlines (&cinfo, &row, 1);
  jpeg_finish_compress (&cinfo);
  jpeg_destroy_compress (&cinfo);
  fixture_write_file (path, data, size);
  free (data);
  g_free (row);
}

/* Class c's images are all grey level 40 + 80 c: every slot of every
 * batch must hold the picture of the class its label names. */
GST_START_TEST (test_pipeline_labels_match_the_samples)
{
  gchar *root = fixture_make_temp_dir ();
  gchar *launch;
  RunResult *r;
  guint c, i, total = 0, per_class[3] = { 0, 0, 0 };
  gboolean seen_index[15] = { FALSE };

  /* Same-size images, so that no scaler is needed before the batcher. */
  for (c = 0; c < 3; c++)
    for (i = 0; i < 5; i++) {
      gchar *name = g_strdup_printf ("class%u/%u.jpg", c, i);
      gchar *path = g_build_filename (root, name, NULL);

      write_solid_jpeg (path, 8, 4, (guint8)(40 + 80 * c));
      g_free (path);
      g_free (name);
    }
  launch = g_strdup_printf (
      "datasetsrc location=\"%s\" seed=3 ! imagedec ! "
      "batcher batch-size=4 drop-remainder=false ! fakesink name=sink",
      root);
  r = fixture_run (launch);
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, 4);
  for (i = 0; i < r->samples->len; i++) {
    GstBuffer *batch =
        gst_sample_get_buffer (g_array_index (r->samples, RunSample, i).sample);
    GstMapInfo images, labels;
    guint k, n, p;

    gst_buffer_map_range (batch, 0, 1, &images, GST_MAP_READ);
    gst_buffer_map_range (batch, 1, 1, &labels, GST_MAP_READ);
    n = labels.size / 4;
    /* 4 + 4 + 4 + the partial batch of 3 */
    fail_unless_equals_int (n, i < 3 ? 4 : 3);
    fail_unless_equals_int (images.size, n * 8 * 4 * 3);
    for (k = 0; k < n; k++) {
      gint label = ((gint32 *)labels.data)[k];
      const guint8 *pixels = images.data + k * 8 * 4 * 3;
      guint64 index = gst_buffer_get_train_batch_meta (batch)->indices[k];

      fail_unless (label >= 0 && label < 3, "label %d", label);
      per_class[label]++;
      /* ImageFolder order: class c's samples are 5 c .. 5 c + 4, each once */
      fail_unless (index < 15 && index / 5 == (guint64)label,
          "batch %u slot %u: index %" G_GUINT64_FORMAT ", label %d", i, k,
          index, label);
      fail_if (seen_index[index]);
      seen_index[index] = TRUE;
      for (p = 0; p < 8 * 4 * 3; p++)
        fail_unless (ABS ((gint)pixels[p] - (40 + 80 * label)) <= 3,
            "batch %u slot %u: pixel %u is %u, label %d wants %d", i, k, p,
            pixels[p], label, 40 + 80 * label);
    }
    total += n;
    gst_buffer_unmap (batch, &images);
    gst_buffer_unmap (batch, &labels);
    fail_unless_equals_int (gst_train_buffer_count_fresh (batch), (gint)n);
  }
  fail_unless_equals_int (total, 15);
  for (c = 0; c < 3; c++)
    fail_unless_equals_int (per_class[c], 5);
  run_result_free (r);
  g_free (launch);
  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

/* Checks that @batch's meta holds the sample indices @expected (@n). */
static void
check_indices (GstBuffer *batch, const guint64 *expected, guint n)
{
  GstTrainBatchMeta *meta = gst_buffer_get_train_batch_meta (batch);
  guint i;

  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->num_samples, n);
  fail_unless (meta->indices != NULL);
  for (i = 0; i < n; i++)
    fail_unless_equals_uint64 (meta->indices[i], expected[i]);
}

/* The batch meta holds the dataset index of each sample, in batch order
 * (the partial last batch too); a copy of the batch (as echo makes for
 * each repeat) holds its own copy of them. */
GST_START_TEST (test_batch_meta_holds_the_sample_indices)
{
  static const guint64 indices[] = { 17, 3, G_GUINT64_CONSTANT (1) << 40, 0, 99,
    5, 1234567 };
  GstHarness *h = new_harness ("batch-size=3 drop-remainder=false");
  GstBuffer *batch, *copy;
  GstTrainBatchMeta *meta, *copy_meta;
  guint i, n_out, seen[3] = { 0, 0, 0 };

  for (i = 0; i < G_N_ELEMENTS (indices); i++) {
    GstBuffer *frame = make_frame (i, i % 10, 0);

    gst_buffer_get_train_sample_meta (frame)->index = indices[i];
    fail_unless_equals_int (gst_harness_push (h, frame), GST_FLOW_OK);
  }
  gst_harness_push_event (h, gst_event_new_eos ());
  fail_unless_equals_int (gst_harness_buffers_received (h), 3);
  for (i = 0; i < 3; i++) {
    batch = gst_harness_pull (h);
    check_indices (batch, indices + 3 * i, i < 2 ? 3 : 1);
    if (i == 0) {
      copy = gst_buffer_copy (batch);
      meta = gst_buffer_get_train_batch_meta (batch);
      copy_meta = gst_buffer_get_train_batch_meta (copy);
      check_indices (copy, indices, 3);
      fail_unless (copy_meta->indices != meta->indices);
      /* the copy outlives the batch */
      gst_buffer_unref (batch);
      check_indices (copy, indices, 3);
      gst_buffer_unref (copy);
    } else {
      gst_buffer_unref (batch);
    }
  }
  gst_harness_teardown (h);

  /* batch echo: every copy out holds its batch's indices */
  h = gst_harness_new_parse ("batcher batch-size=3 drop-remainder=false ! "
                             "echo factor=2 shuffle-buffer-size=2 seed=1");
  {
    gchar *caps = g_strdup_printf (
        "video/x-raw,format=RGB,width=%d,height=%d,framerate=0/1", W, H);

    gst_harness_set_src_caps_str (h, caps);
    g_free (caps);
  }
  for (i = 0; i < G_N_ELEMENTS (indices); i++) {
    GstBuffer *frame = make_frame (i, i % 10, 0);

    gst_buffer_get_train_sample_meta (frame)->index = indices[i];
    fail_unless_equals_int (gst_harness_push (h, frame), GST_FLOW_OK);
  }
  gst_harness_push_event (h, gst_event_new_eos ());
  n_out = gst_harness_buffers_received (h);
  fail_unless_equals_int (n_out, 6);
  for (i = 0; i < n_out; i++) {
    guint first;

    batch = gst_harness_pull (h);
    meta = gst_buffer_get_train_batch_meta (batch);
    fail_unless (meta != NULL && meta->num_samples > 0);
    /* which batch: told by its size and its first index */
    first = meta->num_samples == 3 ? (meta->indices[0] == 17 ? 0 : 1) : 2;
    check_indices (batch, indices + 3 * first, meta->num_samples);
    seen[first]++;
    gst_buffer_unref (batch);
  }
  for (i = 0; i < 3; i++)
    fail_unless_equals_int (seen[i], 2);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* layout=nchw: each image planar (plane c, row y, pixel x at
 * c * H * W + y * W + x), the caps' dimensions W:H:3:N, the rest as in
 * NHWC batches. */
GST_START_TEST (test_nchw_batches_are_planar)
{
  GstHarness *h = new_harness ("batch-size=4 layout=nchw");
  GstBuffer *batch;
  GstCaps *caps;
  GstMapInfo images, labels;
  guint i, image, c;
  gint y, x;
  gint layout = -1;
  GstElement *batcher;

  batcher = gst_harness_find_element (h, "batcher");
  g_object_get (batcher, "layout", &layout, NULL);
  fail_unless_equals_int (layout, 1);
  gst_object_unref (batcher);
  for (i = 0; i < 6; i++)
    fail_unless_equals_int (
        gst_harness_push (h, make_frame (i, i % 10, 0)), GST_FLOW_OK);
  gst_harness_push_event (h, gst_event_new_eos ());
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);

  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless_equals_string (
      gst_structure_get_string (gst_caps_get_structure (caps, 0), "dimensions"),
      "5:3:3:4,4");
  gst_caps_unref (caps);

  batch = gst_harness_pull (h);
  fail_unless (gst_buffer_map_range (batch, 0, 1, &images, GST_MAP_READ));
  fail_unless (gst_buffer_map_range (batch, 1, 1, &labels, GST_MAP_READ));
  fail_unless_equals_int (images.size, 4 * W * H * 3);
  for (image = 0; image < 4; image++) {
    for (c = 0; c < 3; c++)
      for (y = 0; y < H; y++)
        for (x = 0; x < W; x++)
          fail_unless_equals_int (
              images.data[((image * 3 + c) * H + y) * W + x],
              (guint8)(image * 31 + y * 7 + x * 3 + c));
    fail_unless_equals_int (((gint32 *)labels.data)[image], (gint)image);
  }
  gst_buffer_unmap (batch, &labels);
  gst_buffer_unmap (batch, &images);
  gst_buffer_unref (batch);
  gst_harness_teardown (h);

  /* a partial last batch has its own N, in the same order */
  h = new_harness ("batch-size=4 layout=nchw drop-remainder=false");
  for (i = 0; i < 2; i++)
    gst_harness_push (h, make_frame (i, i % 10, 0));
  gst_harness_push_event (h, gst_event_new_eos ());
  gst_buffer_unref (gst_harness_pull (h));
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless_equals_string (
      gst_structure_get_string (gst_caps_get_structure (caps, 0), "dimensions"),
      "5:3:3:2,2");
  gst_caps_unref (caps);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The batches of "@upstream ! batcher @props layout=L ! fakesink" run with
 * layout=nhwc and layout=nchw: every NCHW batch is its NHWC batch
 * transposed, image by image, and the labels are the same. */
static void
expect_nchw_is_nhwc_transposed (const gchar *upstream, const gchar *props,
    gint width, gint height, guint n_batches)
{
#define LAYOUT_LAUNCH "%s ! batcher %s layout=%s ! fakesink name=sink"
  gchar *nhwc_launch = g_strdup_printf (LAYOUT_LAUNCH, upstream, props, "nhwc");
  gchar *nchw_launch = g_strdup_printf (LAYOUT_LAUNCH, upstream, props, "nchw");
#undef LAYOUT_LAUNCH
  RunResult *nhwc = fixture_run (nhwc_launch);
  RunResult *nchw = fixture_run (nchw_launch);
  gsize plane = (gsize)width * height;
  guint i;

  fail_unless (nhwc->error == NULL, "%s: %s", nhwc_launch, nhwc->error);
  fail_unless (nchw->error == NULL, "%s: %s", nchw_launch, nchw->error);
  fail_unless_equals_int (nhwc->samples->len, n_batches);
  fail_unless_equals_int (nchw->samples->len, n_batches);
  for (i = 0; i < n_batches; i++) {
    GstSample *a = run_result_sample (nhwc, i)->sample;
    GstSample *b = run_result_sample (nchw, i)->sample;
    GstBuffer *interleaved = gst_sample_get_buffer (a);
    GstBuffer *planar = gst_sample_get_buffer (b);
    GstMapInfo in, out, in_labels, out_labels;
    gchar *dims;
    gsize k, p, n;
    guint c, differ = 0;

    dims = g_strdup_printf ("%d:%d:3:", width, height);
    fail_unless (g_str_has_prefix (
        gst_structure_get_string (
            gst_caps_get_structure (gst_sample_get_caps (b), 0), "dimensions"),
        dims));
    g_free (dims);
    fail_unless (gst_buffer_map_range (interleaved, 0, 1, &in, GST_MAP_READ));
    fail_unless (gst_buffer_map_range (planar, 0, 1, &out, GST_MAP_READ));
    fail_unless (
        gst_buffer_map_range (interleaved, 1, 1, &in_labels, GST_MAP_READ));
    fail_unless (
        gst_buffer_map_range (planar, 1, 1, &out_labels, GST_MAP_READ));
    fail_unless_equals_int (in.size, out.size);
    fail_unless_equals_int (in_labels.size, out_labels.size);
    fail_unless (memcmp (in_labels.data, out_labels.data, in_labels.size) == 0);
    n = in.size / (plane * 3);
    for (k = 0; k < n; k++)
      for (p = 0; p < plane; p++)
        for (c = 0; c < 3; c++) {
          guint8 expected = in.data[(k * plane + p) * 3 + c];

          fail_unless_equals_int (out.data[(k * 3 + c) * plane + p], expected);
          /* the test means something only where channels differ */
          differ += c > 0 && expected != in.data[(k * plane + p) * 3];
        }
    fail_unless (differ > 0);
    gst_buffer_unmap (planar, &out_labels);
    gst_buffer_unmap (interleaved, &in_labels);
    gst_buffer_unmap (planar, &out);
    gst_buffer_unmap (interleaved, &in);
  }
  run_result_free (nhwc);
  run_result_free (nchw);
  g_free (nhwc_launch);
  g_free (nchw_launch);
}

/* Decoded images of different content, a width that takes both the
 * de-interleaving's blocks of 32 pixels and its tail and rows that the
 * video layout pads (70 * 3 bytes): the NCHW batches are the NHWC ones
 * transposed. The same over photographs, where the system has them. */
GST_START_TEST (test_nchw_is_nhwc_transposed)
{
  const gchar *root = fixture_scratch_path ("tree", NULL);
  const gchar *photos_dir = "/usr/share/backgrounds/mate/nature";
  gchar *upstream;
  guint i;
  GDir *dir;

  for (i = 0; i < 12; i++) {
    gchar *path = g_strdup_printf ("%s/class%u/%02u.jpg", root, i % 3, i);

    fixture_write_jpeg (path, 70, 45, i * 7 + 1);
    g_free (path);
  }
  upstream =
      g_strdup_printf ("datasetsrc location=\"%s\" seed=5 ! imagedec", root);
  expect_nchw_is_nhwc_transposed (
      upstream, "batch-size=5 drop-remainder=false", 70, 45, 3);
  g_free (upstream);

  /* photographs, cropped and scaled by augment (the same draws in both
   * runs) */
  dir = g_dir_open (photos_dir, 0, NULL);
  if (dir != NULL) {
    const gchar *photos = fixture_scratch_path ("photos", NULL);
    const gchar *name;
    guint n = 0;

    while ((name = g_dir_read_name (dir)) != NULL && n < 4)
      if (g_str_has_suffix (name, ".jpg")) {
        gchar *from = g_build_filename (photos_dir, name, NULL);
        gchar *to = g_strdup_printf ("%s/class%u/%s", photos, n % 2, name);
        gchar *folder = g_path_get_dirname (to);

        g_mkdir_with_parents (folder, 0755);
        fail_unless (symlink (from, to) == 0);
        g_free (folder);
        g_free (to);
        g_free (from);
        n++;
      }
    g_dir_close (dir);
    if (n > 0) {
      gchar *props = g_strdup_printf ("batch-size=%u", n);

      upstream =
          g_strdup_printf ("datasetsrc location=\"%s\" seed=5 ! "
                           "imagedec ! augment width=99 height=64 seed=2",
              photos);
      expect_nchw_is_nhwc_transposed (upstream, props, 99, 64, 1);
      g_free (upstream);
      g_free (props);
    }
  }
}

GST_END_TEST;

/* The first image fixes the batch's image size for the whole stream,
 * even where a batch has just been completed: a later image of another
 * size is an error naming both sizes, and the batch before it went out
 * whole. */
GST_START_TEST (test_size_change_at_a_batch_boundary)
{
  GstHarness *h = new_harness ("batch-size=2");
  GstBuffer *batch, *other;
  GstVideoInfo info;
  guint i;

  for (i = 0; i < 2; i++)
    fail_unless_equals_int (
        gst_harness_push (h, make_frame (i, i % 10, 0)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  batch = gst_harness_pull (h);
  check_batch (batch, 0, 2);
  gst_buffer_unref (batch);

  gst_harness_set_src_caps_str (
      h, "video/x-raw,format=RGB,width=8,height=3,framerate=0/1");
  gst_video_info_set_format (&info, GST_VIDEO_FORMAT_RGB, 8, 3);
  other = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  gst_buffer_memset (other, 0, 7, GST_VIDEO_INFO_SIZE (&info));
  gst_buffer_add_train_sample_meta (other, 1, 2, 0, NULL);
  expect_error (h, other, "is 8x3 but the batch holds 5x3 images");
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  gst_harness_teardown (h);
}

GST_END_TEST;

#define BATCHER_TESTS(test)                                                    \
  test (test_batches_hold_the_images_in_order);                                \
  test (test_remainder_dropped_or_pushed);                                     \
  test (test_dropping_every_image_warns);                                      \
  test (test_flush_drops_the_partial_batch);                                   \
  test (test_size_change_at_a_batch_boundary);                                 \
  test (test_errors_name_the_sample);                                          \
  test (test_batches_come_from_downstream_pool);                               \
  test (test_batches_reach_the_sink_in_its_pool);                              \
  test (test_stop_while_batches_fill_the_pool);                                \
  test (test_pipeline_labels_match_the_samples);                               \
  test (test_batch_meta_holds_the_sample_indices);                             \
  test (test_nchw_batches_are_planar);                                         \
  test (test_nchw_is_nhwc_transposed);

CHECK_MAIN_WITH_TEARDOWN (
    batcher, "batcher", fixture_scratch_teardown, BATCHER_TESTS);
