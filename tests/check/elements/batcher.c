/* batcher.c: tests of the batcher element. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <string.h>

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

/* A pool whose buffers hold two memories, as cudatrainsink's pinned pool
 * will; counts what it hands out. */
typedef struct
{
  GstBufferPool parent;
  gsize images_size;
  gsize labels_size;
  guint allocated;
} TestPool;
typedef GstBufferPoolClass TestPoolClass;

static GType test_pool_get_type (void);
G_DEFINE_TYPE (TestPool, test_pool, GST_TYPE_BUFFER_POOL);

static GstFlowReturn
test_pool_alloc_buffer (
    GstBufferPool *pool, GstBuffer **buffer, GstBufferPoolAcquireParams *params)
{
  TestPool *self = (TestPool *)pool;

  *buffer = gst_buffer_new ();
  gst_buffer_append_memory (
      *buffer, gst_allocator_alloc (NULL, self->images_size, NULL));
  gst_buffer_append_memory (
      *buffer, gst_allocator_alloc (NULL, self->labels_size, NULL));
  self->allocated++;
  return GST_FLOW_OK;
}

static void
test_pool_class_init (TestPoolClass *klass)
{
  klass->alloc_buffer = test_pool_alloc_buffer;
}

static void
test_pool_init (TestPool *self)
{}

static TestPool *answer_pool;

static gboolean
answer_allocation (GstPad *pad, GstObject *parent, GstQuery *query)
{
  if (GST_QUERY_TYPE (query) == GST_QUERY_ALLOCATION) {
    gst_query_add_allocation_pool (
        query, GST_BUFFER_POOL (answer_pool), 0, 0, 0);
    return TRUE;
  }
  return gst_pad_query_default (pad, parent, query);
}

GST_START_TEST (test_batches_come_from_downstream_pool)
{
  GstHarness *h;
  guint i;

  answer_pool = g_object_new (test_pool_get_type (), NULL);
  gst_object_ref_sink (answer_pool);
  answer_pool->images_size = 4 * W * H * 3;
  answer_pool->labels_size = 4 * sizeof (gint32);
  h = new_harness_with_query ("batch-size=4", answer_allocation);

  for (i = 0; i < 12; i++)
    fail_unless_equals_int (
        gst_harness_push (h, make_frame (i, i % 10, 0)), GST_FLOW_OK);
  for (i = 0; i < 3; i++) {
    GstBuffer *batch = gst_harness_pull (h);

    check_batch (batch, i * 4, 4);
    gst_buffer_unref (batch);
  }
  /* Every batch came from the pool, which recycles released buffers. */
  fail_unless (answer_pool->allocated >= 1 && answer_pool->allocated <= 3);
  gst_harness_teardown (h);
  gst_object_unref (answer_pool);
}

GST_END_TEST;

GST_START_TEST (test_pipeline_labels_match_the_samples)
{
  gchar *root = fixture_make_temp_dir ();
  gchar *launch;
  RunResult *r;
  guint c, i, total = 0;

  /* Same-size images, so that no scaler is needed before the batcher. */
  for (c = 0; c < 3; c++)
    for (i = 0; i < 5; i++) {
      gchar *name = g_strdup_printf ("class%u/%u.jpg", c, i);
      gchar *path = g_build_filename (root, name, NULL);

      fixture_write_jpeg (path, 6, 4, c * 10 + i);
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
    GstMapInfo labels;
    guint k;

    gst_buffer_map_range (batch, 1, 1, &labels, GST_MAP_READ);
    for (k = 0; k < labels.size / 4; k++)
      fail_unless (
          ((gint32 *)labels.data)[k] >= 0 && ((gint32 *)labels.data)[k] < 3);
    total += labels.size / 4;
    gst_buffer_unmap (batch, &labels);
    fail_unless_equals_int (
        gst_train_buffer_count_fresh (batch), (gint)(labels.size / 4));
  }
  fail_unless_equals_int (total, 15);
  run_result_free (r);
  g_free (launch);
  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

static Suite *
batcher_suite (void)
{
  Suite *s = suite_create ("batcher");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_batches_hold_the_images_in_order);
  tcase_add_test (tc, test_remainder_dropped_or_pushed);
  tcase_add_test (tc, test_errors_name_the_sample);
  tcase_add_test (tc, test_batches_come_from_downstream_pool);
  tcase_add_test (tc, test_pipeline_labels_match_the_samples);
  return s;
}

GST_CHECK_MAIN (batcher);
