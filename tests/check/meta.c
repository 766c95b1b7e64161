/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* meta.c: the public sample-metadata library on its own. */
#include <gst/check/gstcheck.h>

#include "check-main.h"

#include "train-meta.h"

GST_START_TEST (test_sample_meta_survives_copies)
{
  GstBuffer *buffer = gst_buffer_new_allocate (NULL, 16, NULL);
  GstBuffer *copy, *region;
  GstTrainSampleMeta *meta;

  meta = gst_buffer_add_train_sample_meta (buffer, 7, 1234, 3, "/d/c/x.jpg");
  fail_unless (meta != NULL);
  fail_unless_equals_int (meta->emissions, 0);
  fail_unless_equals_int (gst_train_buffer_count_fresh (buffer), 1);

  /* A copy (what echo makes for a repeat) carries its own meta. */
  copy = gst_buffer_copy (buffer);
  fail_unless (gst_train_buffer_set_emissions (copy, 2));
  meta = gst_buffer_get_train_sample_meta (copy);
  fail_unless_equals_int (meta->label, 7);
  fail_unless_equals_uint64 (meta->index, 1234);
  fail_unless_equals_int (meta->epoch, 3);
  fail_unless_equals_int (meta->emissions, 2);
  fail_unless_equals_string (meta->location, "/d/c/x.jpg");
  fail_unless_equals_int (gst_train_buffer_count_fresh (copy), 0);
  /* The original is untouched. */
  fail_unless_equals_int (
      gst_buffer_get_train_sample_meta (buffer)->emissions, 0);

  /* A partial copy (what a crop does) keeps the sample identity too. */
  region = gst_buffer_copy_region (buffer, GST_BUFFER_COPY_ALL, 4, 8);
  fail_unless_equals_int (gst_buffer_get_train_sample_meta (region)->label, 7);

  gst_buffer_unref (region);
  gst_buffer_unref (copy);
  gst_buffer_unref (buffer);
}

GST_END_TEST;

GST_START_TEST (test_batch_meta_counts_fresh_images)
{
  GstBuffer *batch = gst_buffer_new ();
  GstBuffer *repeat;
  GstBuffer *plain = gst_buffer_new ();

  fail_unless (gst_buffer_add_train_batch_meta (batch, 256, 200) != NULL);
  fail_unless_equals_int (gst_train_buffer_count_fresh (batch), 200);
  repeat = gst_buffer_copy (batch);
  fail_unless (gst_train_buffer_set_emissions (repeat, 1));
  fail_unless_equals_int (
      gst_buffer_get_train_batch_meta (repeat)->num_samples, 256);
  /* A repeated batch brings no fresh image. */
  fail_unless_equals_int (gst_train_buffer_count_fresh (repeat), 0);
  fail_unless_equals_int (gst_train_buffer_count_fresh (batch), 200);
  /* A buffer without either meta says so. */
  fail_unless_equals_int (gst_train_buffer_count_fresh (plain), -1);
  fail_if (gst_train_buffer_set_emissions (plain, 1));
  gst_buffer_unref (plain);
  gst_buffer_unref (repeat);
  gst_buffer_unref (batch);
}

GST_END_TEST;

GST_START_TEST (test_dataset_info_round_trip)
{
  const gchar *names[] = { "cat", "dog, big", "eel", NULL };
  GstTrainDatasetInfo in = { 3, (gchar **)names, 1000, 250, 2, 4 }, out;
  GstTagList *tags = gst_train_dataset_info_to_tag_list (&in);
  GstTagList *empty = gst_tag_list_new_empty ();

  fail_unless_equals_int (gst_tag_list_get_scope (tags), GST_TAG_SCOPE_STREAM);
  fail_unless (gst_train_dataset_info_from_tag_list (tags, &out));
  fail_unless_equals_int (out.num_classes, 3);
  /* A comma inside a name does not split it. */
  fail_unless_equals_string (out.class_names[1], "dog, big");
  fail_unless_equals_string (out.class_names[2], "eel");
  fail_unless (out.class_names[3] == NULL);
  fail_unless_equals_uint64 (out.num_samples, 1000);
  fail_unless_equals_uint64 (out.epoch_samples, 250);
  fail_unless_equals_int (out.shard_index, 2);
  fail_unless_equals_int (out.num_shards, 4);
  gst_train_dataset_info_clear (&out);
  fail_unless (out.class_names == NULL);
  gst_tag_list_unref (tags);

  /* a source that does not shard says nothing about shards */
  in.num_shards = 0;
  tags = gst_train_dataset_info_to_tag_list (&in);
  fail_if (gst_tag_list_get_tag_size (tags, GST_TRAIN_TAG_NUM_SHARDS));
  fail_unless (gst_train_dataset_info_from_tag_list (tags, &out));
  fail_unless_equals_int (out.num_shards, 0);
  fail_unless_equals_int (out.shard_index, 0);
  gst_train_dataset_info_clear (&out);

  fail_if (gst_train_dataset_info_from_tag_list (empty, &out));
  fail_unless_equals_int (out.num_classes, 0);
  gst_tag_list_unref (empty);
  gst_tag_list_unref (tags);
}

GST_END_TEST;

#define META_TESTS(test)                                                       \
  test (test_sample_meta_survives_copies);                                     \
  test (test_batch_meta_counts_fresh_images);                                  \
  test (test_dataset_info_round_trip);

CHECK_MAIN (meta, "meta", META_TESTS);
