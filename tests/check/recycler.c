/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* recycler.c: the memory recycler that imagedec's output comes from. */
#include <gst/check/gstcheck.h>

#include "check-main.h"

#include "memory-recycler.h"

static guint8 *
bytes_of (GstBuffer *buffer)
{
  GstMapInfo map;
  guint8 *data;

  fail_unless (gst_buffer_map (buffer, &map, GST_MAP_READ));
  data = map.data;
  gst_buffer_unmap (buffer, &map);
  return data;
}

GST_START_TEST (test_returned_block_is_reused)
{
  GstTrainRecycler *recycler = gst_train_recycler_new (4);
  GstBuffer *a = gst_train_recycler_new_buffer (recycler, 100000);
  guint8 *a_data = bytes_of (a);
  GstBuffer *b;

  fail_unless_equals_int (gst_buffer_n_memory (a), 1);
  fail_unless_equals_int (gst_buffer_get_size (a), 100000);
  fail_unless (gst_buffer_is_writable (a));
  gst_buffer_unref (a);
  /* The next request of any size up to the largest gets the same memory. */
  b = gst_train_recycler_new_buffer (recycler, 50000);
  fail_unless (bytes_of (b) == a_data);
  fail_unless_equals_int (gst_buffer_get_size (b), 50000);
  gst_buffer_unref (b);
  gst_train_recycler_unref (recycler);
}

GST_END_TEST;

GST_START_TEST (test_blocks_follow_the_largest_size)
{
  GstTrainRecycler *recycler = gst_train_recycler_new (4);
  GstBuffer *small = gst_train_recycler_new_buffer (recycler, 1000);
  GstBuffer *big = gst_train_recycler_new_buffer (recycler, 300000);
  guint8 *big_data = bytes_of (big);
  GstBuffer *again;

  /* The small block is smaller than the high-water mark: it is not kept. */
  gst_buffer_unref (small);
  gst_buffer_unref (big);
  again = gst_train_recycler_new_buffer (recycler, 1000);
  fail_unless (bytes_of (again) == big_data);
  gst_buffer_unref (again);
  gst_train_recycler_unref (recycler);
}

GST_END_TEST;

GST_START_TEST (test_buffers_outlive_the_recycler)
{
  GstTrainRecycler *recycler = gst_train_recycler_new (1);
  GstBuffer *held[3];
  guint i;

  for (i = 0; i < 3; i++)
    held[i] = gst_train_recycler_new_buffer (recycler, 4096 * (i + 1));
  /* The element stops while buffers are still downstream. */
  gst_train_recycler_unref (recycler);
  for (i = 0; i < 3; i++) {
    gst_buffer_memset (held[i], 0, 0xab, 4096);
    gst_buffer_unref (held[i]);
  }
}

GST_END_TEST;

#define RECYCLER_TESTS(test)                                                   \
  test (test_returned_block_is_reused);                                        \
  test (test_blocks_follow_the_largest_size);                                  \
  test (test_buffers_outlive_the_recycler);

CHECK_MAIN (recycler, "recycler", RECYCLER_TESTS);
