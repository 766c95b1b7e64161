/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* imagedec.c: tests of the imagedec element against libjpeg-turbo's own
 * decoder (djpeg) on JPEG files the tests write with libjpeg. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

#include "check-main.h"
#include "fixtures.h"
#include "jpeg-decode.h"
#include "train-meta.h"

typedef struct
{
  const gchar *name;
  FixtureJpeg how;
} Flavour;

/* Every kind of JPEG the spec asks for. */
static const Flavour flavours[] = {
  { "baseline-420", { FIXTURE_YCC_420, FALSE, FALSE, 0, 90 } },
  { "baseline-422", { FIXTURE_YCC_422, FALSE, FALSE, 0, 90 } },
  { "baseline-444", { FIXTURE_YCC_444, FALSE, FALSE, 0, 95 } },
  { "progressive-420", { FIXTURE_YCC_420, TRUE, FALSE, 0, 85 } },
  { "arithmetic-420", { FIXTURE_YCC_420, FALSE, TRUE, 0, 90 } },
  { "restart-422", { FIXTURE_YCC_422, FALSE, FALSE, 1, 90 } },
  { "gray", { FIXTURE_GRAY, FALSE, FALSE, 0, 90 } },
  { "gray-progressive", { FIXTURE_GRAY, TRUE, FALSE, 0, 90 } },
  { "cmyk", { FIXTURE_CMYK, FALSE, FALSE, 0, 90 } },
  { "ycck", { FIXTURE_YCCK, FALSE, FALSE, 0, 90 } },
};

/* Checks that @s holds exactly @expected (packed RGB) and its caps say
 * @width x @height RGB. */
static void
assert_rgb_equals (RunSample *s, const guint8 *expected, gint width,
    gint height, const gchar *what)
{
  GstVideoInfo info;
  GstVideoFrame frame;
  gint y;

  fail_unless (
      gst_video_info_from_caps (&info, gst_sample_get_caps (s->sample)),
      "%s: bad caps", what);
  fail_unless_equals_string (
      gst_video_format_to_string (GST_VIDEO_INFO_FORMAT (&info)), "RGB");
  fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&info), width);
  fail_unless_equals_int (GST_VIDEO_INFO_HEIGHT (&info), height);
  fail_unless (gst_video_frame_map (
      &frame, &info, gst_sample_get_buffer (s->sample), GST_MAP_READ));
  for (y = 0; y < height; y++) {
    const guint8 *row = (const guint8 *)GST_VIDEO_FRAME_PLANE_DATA (&frame, 0)
        + (gsize)y * GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0);
    const guint8 *want = expected + (gsize)y * width * 3;

    if (memcmp (row, want, (gsize)width * 3) != 0) {
      gint x = 0;

      while (row[x] == want[x])
        x++;
      fail ("%s: row %d differs at byte %d: %u, djpeg %u", what, y, x, row[x],
          want[x]);
    }
  }
  gst_video_frame_unmap (&frame);
}

static RunResult *
run_dec (const gchar *root, const gchar *src_props, const gchar *dec_props,
    const gchar *filter)
{
  return fixture_run_printf ("datasetsrc location=\"%s\" shuffle=false %s ! "
                             "imagedec %s ! %s%sfakesink name=sink",
      root, src_props, dec_props, filter ? filter : "", filter ? " ! " : "");
}

/* Writes one file per flavour, class folder "c", in flavour order. */
static gchar *
write_flavours (gint width, gint height)
{
  gchar *root = fixture_make_temp_dir ();
  guint i;

  for (i = 0; i < G_N_ELEMENTS (flavours); i++) {
    gchar *name = g_strdup_printf ("%02u-%s.jpg", i, flavours[i].name);
    gchar *path = g_build_filename (root, "c", name, NULL);

    fixture_write_jpeg_as (path, width, height, i + 1, &flavours[i].how);
    g_free (name);
    g_free (path);
  }
  return root;
}

static void
check_flavours_match_djpeg (const gchar *dec_props)
{
  /* An odd width: RGB rows of 37 * 3 bytes are padded to 112. */
  gchar *root = write_flavours (37, 29);
  RunResult *r = run_dec (root, "", dec_props, NULL);
  guint i;

  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->warnings->len, 0);
  fail_unless_equals_int (r->samples->len, G_N_ELEMENTS (flavours));
  for (i = 0; i < r->samples->len; i++) {
    RunSample *s = run_result_sample (r, i);
    gint w = 0, h = 0;
    guint8 *want = fixture_djpeg_rgb (s->location, NULL, &w, &h);

    fail_unless (want != NULL, "djpeg failed on %s", s->location);
    fail_unless_equals_int (w, 37);
    assert_rgb_equals (s, want, w, h, flavours[i].name);
    /* The sample meta survives decoding. */
    fail_unless (s->has_meta);
    fail_unless_equals_uint64 (s->index, i);
    g_free (want);
  }
  run_result_free (r);
  fixture_remove_tree (root);
  g_free (root);
}

GST_START_TEST (test_pixels_match_libjpeg_turbo)
{
  check_flavours_match_djpeg ("n-threads=1");
}

GST_END_TEST;

GST_START_TEST (test_pixels_match_libjpeg_turbo_threaded)
{
  check_flavours_match_djpeg ("n-threads=4");
}

GST_END_TEST;

GST_START_TEST (test_order_and_caps_with_mixed_sizes)
{
  static const gchar *const one_class[] = { "c", NULL };
  const guint n = 60;
  gchar *root = fixture_make_temp_dir ();
  guint64 worker_tasks;
  guint i;
  RunResult *r;

  /* Sizes change every few images, and big ones take longer to decode, so
   * threads finish out of order. */
  fixture_write_jpeg_tree (root, n, one_class, (FixtureCycle){ 17, 40, 7 },
      (FixtureCycle){ 16, 30, 5 }, NULL, 0);

  /* A budget of 3 (two workers) and only imagedec in the pool
   * (datasetsrc reads in its own thread): the workers decode some of the
   * images, which the order and sizes below do not show. */
  g_setenv ("GST_TRAIN_THREADS", "3", TRUE);
  worker_tasks = fixture_pool_worker_tasks ();
  r = run_dec (root, "num-epochs=2 n-threads=0", "n-threads=4", NULL);
  worker_tasks = fixture_pool_worker_tasks () - worker_tasks;
  g_unsetenv ("GST_TRAIN_THREADS");
  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless (worker_tasks > 0, "the pool's workers decoded no image");
  fail_unless_equals_int (r->samples->len, 2 * n);
  for (i = 0; i < r->samples->len; i++) {
    RunSample *s = run_result_sample (r, i);
    GstVideoInfo info;
    guint k = i % n;

    fail_unless_equals_uint64 (s->index, k);
    fail_unless (
        gst_video_info_from_caps (&info, gst_sample_get_caps (s->sample)));
    fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&info), 17 + (k % 7) * 40);
    fail_unless_equals_int (GST_VIDEO_INFO_HEIGHT (&info), 16 + (k % 5) * 30);
    fail_unless_equals_int (
        gst_buffer_get_size (gst_sample_get_buffer (s->sample)),
        GST_VIDEO_INFO_SIZE (&info));
    /* Odd widths pad each row; the padding is zero even in memory that
     * held a larger image before. */
    {
      GstMapInfo map;
      gint y, stride = GST_VIDEO_INFO_PLANE_STRIDE (&info, 0);
      gint row = GST_VIDEO_INFO_WIDTH (&info) * 3;

      fail_unless (stride > row);
      gst_buffer_map (gst_sample_get_buffer (s->sample), &map, GST_MAP_READ);
      for (y = 0; y < GST_VIDEO_INFO_HEIGHT (&info); y++)
        fail_unless_equals_int (map.data[y * stride + row], 0);
      gst_buffer_unmap (gst_sample_get_buffer (s->sample), &map);
    }
  }
  run_result_free (r);
  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

/* The scale imagedec should pick for a min-short-side. */
typedef struct
{
  guint min_short_side;
  const gchar *scale; /* "M/N" */
} ScalePick;

GST_START_TEST (test_min_short_side_picks_scale)
{
  gchar *root = fixture_make_temp_dir ();
  gchar *path = g_build_filename (root, "c", "big.jpg", NULL);
  /* 640x480: 1/8 gives a short side of 60, 1/4 gives 120, 3/8 gives 180,
   * 1/2 gives 240, 7/8 gives 420. */
  const ScalePick all[] = {
    { 100, "1/4" },
    { 120, "1/4" },
    { 121, "3/8" },
    { 60, "1/8" },
    { 400, "7/8" },
    { 480, "1/1" },
    { 1000, "1/1" },
  };
  /* The default keeps to the fast scales 1/8, 1/4, 1/2, 1. */
  const ScalePick fast[] = {
    { 121, "1/2" },
    { 60, "1/8" },
    { 240, "1/2" },
    { 241, "1/1" },
    { 1000, "1/1" },
  };
  const struct
  {
    const gchar *scales;
    const ScalePick *picks;
    guint n_picks;
  } modes[] = { { "all", all, G_N_ELEMENTS (all) },
    { "fast", fast, G_N_ELEMENTS (fast) } };
  guint m, i;

  fixture_write_jpeg (path, 640, 480, 5);
  for (m = 0; m < G_N_ELEMENTS (modes); m++)
    for (i = 0; i < modes[m].n_picks; i++) {
      const ScalePick *pick = &modes[m].picks[i];
      gchar *props = g_strdup_printf ("n-threads=1 min-short-side=%u scales=%s",
          pick->min_short_side, modes[m].scales);
      RunResult *r = run_dec (root, "", props, NULL);
      gint w = 0, h = 0, num = 0, den = 1;
      guint8 *want = fixture_djpeg_rgb (path, pick->scale, &w, &h);

      fail_unless (r->error == NULL, "%s", r->error);
      fail_unless_equals_int (r->samples->len, 1);
      fail_unless (want != NULL);
      /* djpeg's decode is 640x480 at that scale */
      fail_unless_equals_int (sscanf (pick->scale, "%d/%d", &num, &den), 2);
      fail_unless_equals_int (w, 640 * num / den);
      fail_unless_equals_int (h, 480 * num / den);
      assert_rgb_equals (run_result_sample (r, 0), want, w, h, props);
      g_free (want);
      g_free (props);
      run_result_free (r);
    }
  fixture_remove_tree (root);
  g_free (root);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_gray8_on_request)
{
  gchar *root = write_flavours (24, 16);
  RunResult *r = run_dec (root, "", "n-threads=2", "video/x-raw,format=GRAY8");
  guint i;

  fail_unless (r->error == NULL, "%s", r->error);
  fail_unless_equals_int (r->samples->len, G_N_ELEMENTS (flavours));
  for (i = 0; i < r->samples->len; i++) {
    GstVideoInfo info;

    fail_unless (gst_video_info_from_caps (
        &info, gst_sample_get_caps (run_result_sample (r, i)->sample)));
    fail_unless_equals_int (
        GST_VIDEO_INFO_FORMAT (&info), GST_VIDEO_FORMAT_GRAY8);
    fail_unless_equals_int (GST_VIDEO_INFO_WIDTH (&info), 24);
  }
  /* A gray JPEG decodes to its own samples, which RGB output repeats. */
  {
    RunSample *gray = run_result_sample (r, 6);
    gint w, h, y, x;
    guint8 *want = fixture_djpeg_rgb (gray->location, NULL, &w, &h);
    GstMapInfo map;

    fail_unless (strstr (gray->location, "gray") != NULL);
    gst_buffer_map (gst_sample_get_buffer (gray->sample), &map, GST_MAP_READ);
    for (y = 0; y < h; y++)
      for (x = 0; x < w; x++)
        fail_unless_equals_int (
            map.data[y * GST_ROUND_UP_4 (w) + x], want[(y * w + x) * 3]);
    gst_buffer_unmap (gst_sample_get_buffer (gray->sample), &map);
    g_free (want);
  }
  run_result_free (r);
  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

/* A tree of good files with four bad ones between them. */
static gchar *
write_bad_tree (gchar **bad_paths)
{
  gchar *root = fixture_make_temp_dir ();
  gsize size;
  guint8 *good;
  FixtureJpeg how = { FIXTURE_YCC_420, FALSE, FALSE, 0, 90 };
  guint8 *corrupt;
  gchar *p;
  guint i;

  for (i = 0; i < 4; i++) {
    gchar *name = g_strdup_printf ("good%u.jpg", i);
    p = g_build_filename (root, "c", name, NULL);
    fixture_write_jpeg (p, 32, 24, i);
    g_free (p);
    g_free (name);
  }
  good = fixture_jpeg_encode (64, 48, 9, &how, &size);
  /* Truncated: the entropy-coded data stops halfway. */
  bad_paths[0] = g_build_filename (root, "c", "bad-truncated.jpg", NULL);
  fixture_write_file (bad_paths[0], good, size / 2);
  /* Corrupt: a valid start, then the frame header overwritten. */
  corrupt = g_memdup2 (good, size);
  memset (corrupt + 20, 0xff, size - 40);
  bad_paths[1] = g_build_filename (root, "c", "bad-corrupt.jpg", NULL);
  fixture_write_file (bad_paths[1], corrupt, size);
  /* Empty. */
  bad_paths[2] = g_build_filename (root, "c", "bad-empty.jpg", NULL);
  fixture_write_file (bad_paths[2], (const guint8 *)"", 0);
  /* Not a JPEG at all: a PNG signature and some text. */
  bad_paths[3] = g_build_filename (root, "c", "bad-png.jpg", NULL);
  fixture_write_file (
      bad_paths[3], (const guint8 *)"\x89PNG\r\n\x1a\nnot really an image", 27);
  g_free (good);
  g_free (corrupt);
  return root;
}

/* Removes the tree of write_bad_tree and frees its paths. */
static void
free_bad_tree (gchar *root, gchar **bad_paths)
{
  guint i;

  for (i = 0; i < 4; i++)
    g_free (bad_paths[i]);
  fixture_remove_tree (root);
  g_free (root);
}

/* Decoding @root with @src_props fails once more than @max_errors samples
 * were skipped, and says so; returns the run for further checks. */
static RunResult *
run_past_max_errors (const gchar *root, const gchar *src_props, gint max_errors)
{
  gchar *dec_props = g_strdup_printf ("max-errors=%d", max_errors);
  gchar *says = g_strdup_printf ("max-errors is %d", max_errors);
  RunResult *r = run_dec (root, src_props, dec_props, NULL);

  fail_unless (r->error != NULL);
  fail_unless (strstr (r->error, says) != NULL, "%s", r->error);
  g_free (dec_props);
  g_free (says);
  return r;
}

GST_START_TEST (test_bad_input_is_skipped_with_a_warning)
{
  gchar *bad[4];
  gchar *root = write_bad_tree (bad);
  const gchar *threads[] = { "n-threads=1", "n-threads=3" };
  guint t, i;

  for (t = 0; t < G_N_ELEMENTS (threads); t++) {
    RunResult *r = run_dec (root, "", threads[t], NULL);

    fail_unless (r->error == NULL, "%s", r->error);
    fail_unless_equals_int (r->samples->len, 4);
    for (i = 0; i < 4; i++) {
      fail_unless (strstr (run_result_sample (r, i)->location, "good") != NULL);
      /* Each warning names the element, the sample's file and the cause. */
      fail_unless (run_result_has_warning (r, bad[i], "imagedec"),
          "no warning for %s", bad[i]);
    }
    fail_unless (run_result_has_warning (r, bad[2], "empty"));
    fail_unless (run_result_has_warning (r, bad[3], "not a decodable JPEG"));
    fail_unless_equals_int (r->warnings->len, 4);
    run_result_free (r);
  }

  /* on-error=fail stops at the first bad sample, naming it. */
  {
    RunResult *r = run_dec (root, "", "n-threads=2 on-error=fail", NULL);

    fail_unless (r->error != NULL);
    fail_unless (g_str_has_prefix (r->error, "imagedec"), "%s", r->error);
    fail_unless (strstr (r->error, "bad-corrupt.jpg") != NULL, "%s", r->error);
    run_result_free (r);
  }
  /* max-errors bounds the skips. */
  {
    RunResult *r = run_past_max_errors (root, "", 2);

    fail_unless_equals_int (r->warnings->len, 3);
    run_result_free (r);
  }
  free_bad_tree (root, bad);
}

GST_END_TEST;

/* A corrupt file is read again every epoch: it is warned about and counted
 * against max-errors once, then dropped quietly. */
GST_START_TEST (test_bad_file_is_reported_once_across_epochs)
{
  gchar *bad[4];
  gchar *root = write_bad_tree (bad);
  const gchar *threads[] = { "n-threads=1", "n-threads=3" };
  guint t, i;

  /* Only the corrupt one: the others go. */
  for (i = 0; i < 4; i++)
    if (i != 1)
      fail_unless (g_unlink (bad[i]) == 0);
  for (t = 0; t < G_N_ELEMENTS (threads); t++) {
    gchar *dec_props = g_strdup_printf ("%s max-errors=1", threads[t]);
    RunResult *r = run_dec (root, "num-epochs=3", dec_props, NULL);

    fail_unless (r->error == NULL, "%s", r->error);
    fail_unless_equals_int (r->samples->len, 3 * 4);
    fail_unless_equals_int (r->warnings->len, 1);
    fail_unless (run_result_has_warning (r, bad[1], "imagedec"));
    run_result_free (r);
    g_free (dec_props);
  }
  /* max-errors=0 still fails at the first. */
  run_result_free (run_past_max_errors (root, "num-epochs=3", 0));
  free_bad_tree (root, bad);
}

GST_END_TEST;

GST_START_TEST (test_harness_buffers_without_meta)
{
  GstHarness *h = gst_harness_new ("imagedec");
  FixtureJpeg how = { FIXTURE_YCC_444, FALSE, FALSE, 0, 90 };
  gsize size;
  guint8 *data = fixture_jpeg_encode (20, 10, 3, &how, &size);
  GstBuffer *out;

  g_object_set (h->element, "n-threads", 2, NULL);
  gst_harness_set_src_caps_str (h, "image/jpeg");
  fail_unless_equals_int (
      gst_harness_push (h, gst_buffer_new_wrapped (data, size)), GST_FLOW_OK);
  /* A zero-byte buffer between two images is skipped, not a crash. */
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new ()), GST_FLOW_OK);
  data = fixture_jpeg_encode (8, 6, 4, &how, &size);
  fail_unless_equals_int (
      gst_harness_push (h, gst_buffer_new_wrapped (data, size)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  out = gst_harness_pull (h);
  fail_unless_equals_int (gst_buffer_get_size (out), 20 * 3 * 10);
  gst_buffer_unref (out);
  out = gst_harness_pull (h);
  fail_unless_equals_int (
      gst_buffer_get_size (out), GST_ROUND_UP_4 (8 * 3) * 6);
  gst_buffer_unref (out);
  fixture_check_pad_caps (h->sinkpad, NULL, 8, 6);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_flush_drops_queued_images)
{
  GstHarness *h = gst_harness_new ("imagedec");
  FixtureJpeg how = { FIXTURE_YCC_420, FALSE, FALSE, 0, 90 };
  GstBuffer *out, *last = NULL;
  gsize size;
  guint8 *data;
  guint i, received = 0;

  g_object_set (h->element, "n-threads", 2, NULL);
  gst_harness_set_src_caps_str (h, "image/jpeg");
  for (i = 0; i < 3; i++) {
    data = fixture_jpeg_encode (64, 48, i, &how, &size);
    fail_unless_equals_int (
        gst_harness_push (h, gst_buffer_new_wrapped (data, size)), GST_FLOW_OK);
  }
  /* Whatever was still decoding is dropped; the element takes new data. */
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  gst_harness_set_src_caps_str (h, "image/jpeg");
  {
    GstSegment segment;

    gst_segment_init (&segment, GST_FORMAT_TIME);
    fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  }
  data = fixture_jpeg_encode (16, 8, 7, &how, &size);
  fail_unless_equals_int (
      gst_harness_push (h, gst_buffer_new_wrapped (data, size)), GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));

  while ((out = gst_harness_try_pull (h)) != NULL) {
    received++;
    gst_clear_buffer (&last);
    last = out;
  }
  fail_unless (received >= 1 && received <= 4);
  fail_unless_equals_int (gst_buffer_get_size (last), 16 * 3 * 8);
  gst_buffer_unref (last);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_stop_while_decoding)
{
  gchar *root = fixture_make_temp_dir ();
  guint i;

  for (i = 0; i < 8; i++) {
    gchar *name = g_strdup_printf ("%u.jpg", i);
    gchar *path = g_build_filename (root, "c", name, NULL);

    fixture_write_jpeg (path, 200, 150, i);
    g_free (path);
    g_free (name);
  }
  /* An endless stream, four decoder threads, stopped from PLAYING; and it
   * starts again from NULL. */
  fixture_stop_mid_stream (GST_STATE_NULL, 2,
      "datasetsrc location=\"%s\" num-epochs=-1 ! imagedec n-threads=4 ! "
      "fakesink",
      root);
  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

/* Decodes @data (@size bytes, the JPEG also written at @path) in @h and
 * checks the output: @width x @height in @format, its rows equal to djpeg's
 * (RGB only) and every byte that pads a row to its stride zero. */
static void
check_padded_output (GstHarness *h, const gchar *path, const guint8 *data,
    gsize size, gint width, gint height, GstVideoFormat format)
{
  GstVideoInfo info;
  GstMapInfo map;
  GstBuffer *out;
  gint y, x, stride, row;
  guint8 *want = NULL;

  fail_unless_equals_int (
      gst_harness_push (h, gst_buffer_new_memdup (data, size)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  gst_video_info_set_format (&info, format, width, height);
  stride = GST_VIDEO_INFO_PLANE_STRIDE (&info, 0);
  row = width * GST_VIDEO_INFO_COMP_PSTRIDE (&info, 0);
  fail_unless (stride > row);
  fail_unless_equals_int (gst_buffer_get_size (out), stride * height);
  if (format == GST_VIDEO_FORMAT_RGB) {
    gint w = 0, h_px = 0;

    want = fixture_djpeg_rgb (path, NULL, &w, &h_px);
    fail_unless (want != NULL && w == width && h_px == height);
  }
  gst_buffer_map (out, &map, GST_MAP_READ);
  for (y = 0; y < height; y++) {
    if (want != NULL)
      fail_unless (memcmp (map.data + y * stride, want + y * row, row) == 0,
          "row %d of a %d-wide image differs from djpeg", y, width);
    for (x = row; x < stride; x++)
      fail_unless_equals_int (map.data[y * stride + x], 0);
  }
  gst_buffer_unmap (out, &map);
  /* Back to imagedec's recycler: the next image reuses this memory. */
  gst_buffer_unref (out);
  g_free (want);
}

/* Rows pad to 4 bytes with 1, 2 or 3 zero bytes, in RGB and GRAY8, also in
 * memory a wider image has just filled. */
GST_START_TEST (test_row_padding_is_zero_in_reused_memory)
{
  static const GstVideoFormat formats[] = { GST_VIDEO_FORMAT_RGB,
    GST_VIDEO_FORMAT_GRAY8 };
  gchar *root = fixture_make_temp_dir ();
  FixtureJpeg how = { FIXTURE_YCC_420, FALSE, FALSE, 0, 95 };
  guint f;

  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    /* One thread: each image decodes in the chain function, into the block
     * the previous one, just unreferenced, left in the recycler. */
    GstHarness *h = gst_harness_new_parse ("imagedec n-threads=1");
    gint width;

    gst_harness_set_src_caps_str (h, "image/jpeg");
    gst_harness_set_sink_caps_str (
        h, f == 0 ? "video/x-raw,format=RGB" : "video/x-raw,format=GRAY8");
    for (width = 37; width <= 39; width++) {
      gchar *path = g_build_filename (root, "img.jpg", NULL);
      gsize size;
      guint8 *wide = fixture_jpeg_encode (61, 31, 9 + width, &how, &size);
      guint8 *data;
      GstBuffer *out;

      /* A wider image first: its pixels fill the bytes the next one pads. */
      fail_unless_equals_int (
          gst_harness_push (h, gst_buffer_new_wrapped (wide, size)),
          GST_FLOW_OK);
      out = gst_harness_pull (h);
      gst_buffer_unref (out);

      data = fixture_jpeg_encode (width, 29, width, &how, &size);
      fixture_write_file (path, data, size);
      check_padded_output (h, path, data, size, width, 29, formats[f]);
      g_free (data);
      g_free (path);
    }
    gst_harness_teardown (h);
  }
  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

/* gst_train_jpeg_decode_region() gives exactly the pixels of a whole
 * decode, for every kind of JPEG it takes, at full size and at DCT scales,
 * for rectangles anywhere (edges, corners, single pixels, the whole image),
 * reading the rest of the file or not, and refuses nothing that decodes. */
GST_START_TEST (test_region_decode_matches_full_decode)
{
  static const int scale_denoms[] = { 1, 2, 4, 8 };
  GRand *rand = g_rand_new_with_seed (17);
  guint i, s, k, checked = 0;

  for (i = 0; i < G_N_ELEMENTS (flavours); i++) {
    gsize size;
    guint8 *data =
        fixture_jpeg_encode (203, 157, i + 1, &flavours[i].how, &size);

    for (s = 0; s < G_N_ELEMENTS (scale_denoms); s++) {
      GstTrainJpegHeader header;
      gchar *error = NULL;
      guint8 *full, *part;
      int stride;

      /* min-short-side 157 / denom picks 1/denom (power-of-two scales). */
      fail_unless (
          gst_train_jpeg_read_header (data, size,
              s == 0 ? 0 : 157 / scale_denoms[s], TRUE, &header, &error),
          "%s", error);
      fail_unless_equals_int (header.scale.denom, scale_denoms[s]);
      if (!gst_train_jpeg_region_supported (&header, FALSE)) {
        fail_unless (flavours[i].how.colour == FIXTURE_CMYK
            || flavours[i].how.colour == FIXTURE_YCCK);
        break;
      }
      stride = GST_ROUND_UP_4 (header.out_width * 3);
      full = g_malloc ((gsize)stride * header.out_height);
      part = g_malloc ((gsize)stride * header.out_height);
      fail_unless (gst_train_jpeg_decode (
                       data, size, &header, FALSE, full, stride, &error),
          "%s", error);
      for (k = 0; k < 40; k++) {
        int w = header.out_width, h = header.out_height, left, top, width,
            height, part_stride, y;

        switch (k) {
          case 0: /* the whole image */
            left = top = 0, width = w, height = h;
            break;
          case 1: /* the last pixel */
            left = w - 1, top = h - 1, width = height = 1;
            break;
          case 2: /* the right and bottom edges */
            left = w / 3, top = h / 2, width = w - left, height = h - top;
            break;
          default:
            left = g_rand_int_range (rand, 0, w);
            top = g_rand_int_range (rand, 0, h);
            width = g_rand_int_range (rand, 1, w - left + 1);
            height = g_rand_int_range (rand, 1, h - top + 1);
            break;
        }
        part_stride = GST_ROUND_UP_4 (width * 3);
        memset (part, 0xa5, (gsize)stride * header.out_height);
        fail_unless (
            gst_train_jpeg_decode_region (data, size, &header, left, top, width,
                height, k % 2 == 0, part, part_stride, &error),
            "%s: %s", flavours[i].name, error);
        for (y = 0; y < height; y++) {
          const guint8 *got = part + (gsize)y * part_stride;

          fail_unless (
              memcmp (got, full + (gsize)(top + y) * stride + (gsize)left * 3,
                  (gsize)width * 3)
                  == 0,
              "%s at 1/%d: %dx%d at (%d, %d) differs in row %d",
              flavours[i].name, scale_denoms[s], width, height, left, top, y);
          /* The padding of each row is zero. */
          fail_unless (part_stride == width * 3
              || (got[width * 3] == 0 && got[part_stride - 1] == 0));
        }
        checked++;
      }
      g_free (full);
      g_free (part);
    }
    g_free (data);
  }
  /* 8 flavours of 10 at 4 scales, 40 rectangles each. */
  fail_unless_equals_int (checked, 8 * 4 * 40);
  g_rand_free (rand);
}

GST_END_TEST;

/* A rectangle of a truncated or corrupt file is an error with a reason, as
 * a whole decode is, never a crash or a half-grey image. */
GST_START_TEST (test_region_decode_of_bad_data_fails_cleanly)
{
  GstTrainJpegHeader header;
  gchar *error = NULL;
  gsize size;
  guint8 *data = fixture_jpeg_encode (96, 80, 3, &flavours[0].how, &size);
  guint8 *out = g_malloc (96 * 80 * 3);

  fail_unless (
      gst_train_jpeg_read_header (data, size, 0, TRUE, &header, &error));
  /* Cut in the middle of the entropy-coded data: rows near the top still
   * decode, the bottom rows are missing. A rectangle below the cut fails,
   * and so does one above it, as the whole decode does: which samples are
   * skipped must not depend on where the crop lands. */
  fail_if (gst_train_jpeg_decode (
      data, size / 2, &header, FALSE, out, 96 * 3, &error));
  g_clear_pointer (&error, g_free);
  fail_if (gst_train_jpeg_decode_region (
      data, size / 2, &header, 10, 60, 50, 20, TRUE, out, 152, &error));
  fail_unless (error != NULL && strstr (error, "corrupt JPEG data") != NULL,
      "%s", error);
  g_clear_pointer (&error, g_free);
  fail_if (gst_train_jpeg_decode_region (
      data, size / 2, &header, 0, 0, 16, 8, TRUE, out, 48, &error));
  fail_unless (error != NULL && strstr (error, "corrupt JPEG data") != NULL,
      "%s", error);
  g_clear_pointer (&error, g_free);
  /* Without read_all it stops after the rectangle, above the cut: for
   * files already known to decode whole. */
  fail_unless (gst_train_jpeg_decode_region (data, size / 2, &header, 0, 0, 16,
                   8, FALSE, out, 48, &error),
      "%s", error);
  /* Not a JPEG at all. */
  memset (data, 0x42, 64);
  fail_if (gst_train_jpeg_decode_region (
      data, size, &header, 0, 0, 8, 8, TRUE, out, 24, &error));
  fail_unless (error != NULL && error[0] != '\0');
  g_free (error);
  g_free (out);
  g_free (data);
}

GST_END_TEST;

/* Renames every quantization table that @data (a JPEG) defines to table 3,
 * which no component uses: the file now lacks the tables its frame needs. */
static void
break_quant_tables (guint8 *data, gsize size)
{
  gsize i = 2;

  while (i + 4 <= size && data[i] == 0xff && data[i + 1] != 0xda) {
    gsize len = ((gsize)data[i + 2] << 8) | data[i + 3], j = i + 4;

    if (data[i + 1] == 0xdb) {
      while (j < i + 2 + len) {
        gboolean wide = data[j] >> 4;

        data[j] = (data[j] & 0xf0) | 3;
        j += 1 + (wide ? 128 : 64);
      }
    }
    i += 2 + len;
  }
}

/* A file whose frame uses a quantization table it does not define does not
 * decode, whatever image the same thread decoded before (a reused decoder
 * kept the earlier image's tables and decoded it with those). */
GST_START_TEST (test_missing_quantization_table_is_a_bad_sample)
{
  gchar *root = fixture_make_temp_dir ();
  gchar *good = g_build_filename (root, "c", "00.jpg", NULL);
  gchar *bad = g_build_filename (root, "c", "01.jpg", NULL);
  gsize size;
  guint8 *data = fixture_jpeg_encode (48, 40, 2, &flavours[0].how, &size);
  GstTrainJpegHeader header;
  gchar *error = NULL;
  guint8 *out = g_malloc (48 * 40 * 3);
  RunResult *r;
  guint i;

  fixture_write_file (good, data, size);
  break_quant_tables (data, size);
  fixture_write_file (bad, data, size);
  /* The bytes alone: the header reads, the decode fails, whole or part. */
  fail_unless (
      gst_train_jpeg_read_header (data, size, 0, TRUE, &header, &error));
  fail_if (
      gst_train_jpeg_decode (data, size, &header, FALSE, out, 48 * 3, &error));
  fail_unless (strstr (error, "Quantization table") != NULL, "%s", error);
  g_clear_pointer (&error, g_free);
  fail_if (gst_train_jpeg_decode_region (
      data, size, &header, 8, 8, 16, 16, TRUE, out, 48, &error));
  fail_unless (strstr (error, "Quantization table") != NULL, "%s", error);
  g_clear_pointer (&error, g_free);

  /* In the element, right after a good image on the same thread, twice. */
  for (i = 0; i < 2; i++) {
    r = run_dec (
        root, "num-epochs=2", i == 0 ? "n-threads=1" : "n-threads=3", NULL);
    fail_unless (r->error == NULL, "%s", r->error);
    fail_unless_equals_int (r->samples->len, 2);
    fail_unless_equals_uint64 (run_result_sample (r, 0)->index, 0);
    fail_unless_equals_uint64 (run_result_sample (r, 1)->index, 0);
    fail_unless (run_result_has_warning (r, "01.jpg", "Quantization table"));
    run_result_free (r);
  }
  g_free (out);
  g_free (data);
  g_free (good);
  g_free (bad);
  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

#define IMAGEDEC_TESTS(test)                                                   \
  test (test_pixels_match_libjpeg_turbo);                                      \
  test (test_pixels_match_libjpeg_turbo_threaded);                             \
  test (test_region_decode_matches_full_decode);                               \
  test (test_region_decode_of_bad_data_fails_cleanly);                         \
  test (test_missing_quantization_table_is_a_bad_sample);                      \
  test (test_order_and_caps_with_mixed_sizes);                                 \
  test (test_row_padding_is_zero_in_reused_memory);                            \
  test (test_min_short_side_picks_scale);                                      \
  test (test_gray8_on_request);                                                \
  test (test_bad_input_is_skipped_with_a_warning);                             \
  test (test_bad_file_is_reported_once_across_epochs);                         \
  test (test_harness_buffers_without_meta);                                    \
  test (test_flush_drops_queued_images);                                       \
  test (test_stop_while_decoding);

CHECK_MAIN (imagedec, "imagedec", IMAGEDEC_TESTS);
