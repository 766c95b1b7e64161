/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fixtures.c: see fixtures.h. */
#include "fixtures.h"
#include "train-meta.h"

#include <dlfcn.h>
#include <gst/check/gstcheck.h>
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>
#include <jpeglib.h>

static void
fill_pattern (
    guint8 *pixels, gint width, gint height, gint channels, guint seed)
{
  guint32 state = seed * 2654435761u + 12345;
  gint x, y, c;

  /* Smooth gradients (so that chroma subsampling matters) plus a little
   * noise (so that every coefficient does). */
  for (y = 0; y < height; y++)
    for (x = 0; x < width; x++)
      for (c = 0; c < channels; c++) {
        gint v = (x * (3 + c) * 255) / MAX (width, 1)
            + (y * 255 * (c + 1)) / MAX (height * 2, 1)
            + (gint)(seed * 37 + c * 80);

        state = state * 1103515245u + 12345;
        v += (gint)((state >> 16) % 24) - 12;
        pixels[((gsize)y * width + x) * channels + c] = (guint8)(v & 0xff);
      }
}

guint8 *
fixture_jpeg_encode (
    gint width, gint height, guint seed, const FixtureJpeg *how, gsize *size)
{
  struct jpeg_compress_struct cinfo;
  struct jpeg_error_mgr jerr;
  unsigned char *out = NULL;
  unsigned long out_size = 0;
  gint channels;
  guint8 *pixels, *result;
  gint y;

  cinfo.err = jpeg_std_error (&jerr);
  jpeg_create_compress (&cinfo);
  jpeg_mem_dest (&cinfo, &out, &out_size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  switch (how->colour) {
    case FIXTURE_GRAY:
      cinfo.input_components = 1;
      cinfo.in_color_space = JCS_GRAYSCALE;
      break;
    case FIXTURE_CMYK:
    case FIXTURE_YCCK:
      cinfo.input_components = 4;
      cinfo.in_color_space = JCS_CMYK;
      break;
    default:
      cinfo.input_components = 3;
      cinfo.in_color_space = JCS_RGB;
      break;
  }
  jpeg_set_defaults (&cinfo);
  jpeg_set_quality (&cinfo, how->quality > 0 ? how->quality : 90, TRUE);
  if (how->colour == FIXTURE_YCCK)
    jpeg_set_colorspace (&cinfo, JCS_YCCK);
  if (how->colour == FIXTURE_YCC_444 || how->colour == FIXTURE_YCC_422) {
    cinfo.comp_info[0].h_samp_factor = how->colour == FIXTURE_YCC_422 ? 2 : 1;
    cinfo.comp_info[0].v_samp_factor = 1;
  }
  if (how->progressive)
    jpeg_simple_progression (&cinfo);
  cinfo.arith_code = how->arithmetic;
  cinfo.restart_in_rows = how->restart_interval;

  channels = cinfo.input_components;
  pixels = g_malloc ((gsize)width * height * channels);
  fill_pattern (pixels, width, height, channels, seed);
  jpeg_start_compress (&cinfo, TRUE);
  for (y = 0; y < height; y++) {
    JSAMPROW row = pixels + (gsize)y * width * channels;
    jpeg_write_scanlines (&cinfo, &row, 1);
  }
  jpeg_finish_compress (&cinfo);
  jpeg_destroy_compress (&cinfo);
  g_free (pixels);

  result = g_memdup2 (out, out_size);
  *size = out_size;
  free (out);
  return result;
}

void
fixture_write_file (const gchar *path, const guint8 *data, gsize size)
{
  gchar *dir = g_path_get_dirname (path);
  GError *error = NULL;

  fail_unless (g_mkdir_with_parents (dir, 0755) == 0, "mkdir %s", dir);
  g_free (dir);
  if (!g_file_set_contents (path, (const gchar *)data, size, &error))
    fail ("could not write %s: %s", path, error->message);
}

static const FixtureJpeg baseline_420 = { FIXTURE_YCC_420, FALSE, FALSE, 0,
  90 };

void
fixture_write_jpeg_as (const gchar *path, gint width, gint height, guint seed,
    const FixtureJpeg *how)
{
  gsize size;
  guint8 *data = fixture_jpeg_encode (width, height, seed, how, &size);

  fixture_write_file (path, data, size);
  g_free (data);
}

void
fixture_write_jpeg (const gchar *path, gint width, gint height, guint seed)
{
  fixture_write_jpeg_as (path, width, height, seed, &baseline_420);
}

static gint
cycle_at (FixtureCycle cycle, guint i)
{
  return cycle.base + (gint)(i % cycle.cycle) * cycle.step;
}

void
fixture_write_jpeg_tree (const gchar *root, guint n,
    const gchar *const *folders, FixtureCycle width, FixtureCycle height,
    const FixtureJpeg *kinds, guint n_kinds)
{
  guint n_folders = g_strv_length ((gchar **)folders), i;

  for (i = 0; i < n; i++) {
    gchar *name = g_strdup_printf ("%03u.jpg", i);
    gchar *path = g_build_filename (root, folders[i % n_folders], name, NULL);

    fixture_write_jpeg_as (path, cycle_at (width, i), cycle_at (height, i), i,
        kinds != NULL ? &kinds[i % n_kinds] : &baseline_420);
    g_free (name);
    g_free (path);
  }
}

void
fixture_set_launcher (gint rank, gint size)
{
  gchar text[16];

  if (rank < 0) {
    g_unsetenv ("OMPI_COMM_WORLD_RANK");
    g_unsetenv ("OMPI_COMM_WORLD_SIZE");
    g_unsetenv ("OMPI_COMM_WORLD_LOCAL_RANK");
    return;
  }
  g_snprintf (text, sizeof (text), "%d", rank);
  g_setenv ("OMPI_COMM_WORLD_RANK", text, TRUE);
  g_setenv ("OMPI_COMM_WORLD_LOCAL_RANK", text, TRUE);
  g_snprintf (text, sizeof (text), "%d", size);
  g_setenv ("OMPI_COMM_WORLD_SIZE", text, TRUE);
}

void
fixture_check_pad_caps (
    GstPad *pad, const gchar *format, gint width, gint height)
{
  GstCaps *caps = gst_pad_get_current_caps (pad);
  GstStructure *st;
  gint w = 0, h = 0;

  fail_unless (caps != NULL, "no caps");
  st = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_get_int (st, "width", &w));
  fail_unless (gst_structure_get_int (st, "height", &h));
  fail_unless_equals_int (w, width);
  fail_unless_equals_int (h, height);
  if (format != NULL)
    fail_unless_equals_string (gst_structure_get_string (st, "format"), format);
  gst_caps_unref (caps);
}

gchar *
fixture_make_temp_dir (void)
{
  GError *error = NULL;
  gchar *dir = g_dir_make_tmp ("gst-train-test-XXXXXX", &error);

  fail_unless (dir != NULL, "no temporary folder");
  return dir;
}

void
fixture_remove_tree (const gchar *path)
{
  gchar *argv[] = { (gchar *)"rm", (gchar *)"-rf", (gchar *)path, NULL };

  if (path != NULL)
    g_spawn_sync (NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
        NULL, NULL);
}

static gchar *scratch;
static GPtrArray *scratch_strings;

const gchar *
fixture_scratch (void)
{
  if (scratch == NULL) {
    scratch = fixture_make_temp_dir ();
    scratch_strings = g_ptr_array_new_with_free_func (g_free);
  }
  return scratch;
}

const gchar *
fixture_scratch_own (gchar *string)
{
  fixture_scratch ();
  g_ptr_array_add (scratch_strings, string);
  return string;
}

const gchar *
fixture_scratch_path (const gchar *first_element, ...)
{
  va_list args;
  gchar *rest, *path;

  va_start (args, first_element);
  rest = g_build_filename_valist (first_element, &args);
  va_end (args);
  path = g_build_filename (fixture_scratch (), rest, NULL);
  g_free (rest);
  return fixture_scratch_own (path);
}

void
fixture_scratch_teardown (void)
{
  fixture_remove_tree (scratch);
  g_clear_pointer (&scratch, g_free);
  g_clear_pointer (&scratch_strings, g_ptr_array_unref);
}

/* Parses a binary PGM or PPM; returns RGB. */
static guint8 *
parse_pnm (const guint8 *data, gsize size, gint *width, gint *height)
{
  gint channels, maxval, fields = 0, values[3] = { 0 };
  gsize pos = 2, n, i;
  guint8 *rgb;

  if (size < 3 || data[0] != 'P' || (data[1] != '5' && data[1] != '6'))
    return NULL;
  channels = data[1] == '6' ? 3 : 1;
  while (fields < 3 && pos < size) {
    if (data[pos] == '#') {
      while (pos < size && data[pos] != '\n')
        pos++;
    } else if (g_ascii_isdigit (data[pos])) {
      while (pos < size && g_ascii_isdigit (data[pos]))
        values[fields] = values[fields] * 10 + (data[pos++] - '0');
      fields++;
      continue;
    }
    pos++;
  }
  pos++; /* the single whitespace after maxval */
  *width = values[0];
  *height = values[1];
  maxval = values[2];
  n = (gsize)(*width) * (*height);
  if (maxval != 255 || pos + n * channels > size)
    return NULL;
  rgb = g_malloc (n * 3);
  for (i = 0; i < n; i++) {
    if (channels == 3) {
      memcpy (rgb + i * 3, data + pos + i * 3, 3);
    } else {
      rgb[i * 3] = rgb[i * 3 + 1] = rgb[i * 3 + 2] = data[pos + i];
    }
  }
  return rgb;
}

guint8 *
fixture_djpeg_rgb (
    const gchar *path, const gchar *scale, gint *width, gint *height)
{
  const gchar *argv[8];
  gchar *out = NULL;
  gsize out_len = 0;
  gint status = 0, argc = 0;
  guint8 *rgb;
  GError *error = NULL;
  GSubprocess *proc;
  GBytes *bytes = NULL;

  argv[argc++] = "djpeg";
  argv[argc++] = "-pnm";
  if (scale != NULL) {
    argv[argc++] = "-scale";
    argv[argc++] = scale;
  }
  argv[argc++] = path;
  argv[argc] = NULL;

  /* Binary output: GSubprocess keeps embedded NULs. */
  proc = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
  if (proc == NULL) {
    g_printerr ("djpeg: %s\n", error->message);
    g_error_free (error);
    return NULL;
  }
  if (!g_subprocess_communicate (proc, NULL, NULL, &bytes, NULL, &error)) {
    g_printerr ("djpeg: %s\n", error->message);
    g_error_free (error);
    g_object_unref (proc);
    return NULL;
  }
  status = g_subprocess_get_exit_status (proc);
  g_object_unref (proc);
  out = g_bytes_unref_to_data (bytes, &out_len);
  rgb = status == 0 ? parse_pnm ((guint8 *)out, out_len, width, height) : NULL;
  g_free (out);
  return rgb;
}

/* ---- pipeline runner ---- */

static void
on_handoff (
    GstElement *sink, GstBuffer *buffer, GstPad *pad, gpointer user_data)
{
  RunResult *result = user_data;
  GstTrainSampleMeta *meta = gst_buffer_get_train_sample_meta (buffer);
  GstCaps *caps = gst_pad_get_current_caps (pad);
  RunSample s = { 0 };

  s.has_meta = meta != NULL;
  if (meta != NULL) {
    s.label = meta->label;
    s.index = meta->index;
    s.epoch = meta->epoch;
    s.emissions = meta->emissions;
    s.location = g_strdup (meta->location);
  }
  s.sample = gst_sample_new (buffer, caps, NULL, NULL);
  if (caps != NULL)
    gst_caps_unref (caps);
  g_array_append_val (result->samples, s);
}

static void
clear_run_sample (gpointer data)
{
  RunSample *s = data;

  g_free (s->location);
  if (s->sample != NULL)
    gst_sample_unref (s->sample);
}

gchar *
fixture_play_to_eos (GstElement *pipeline, GstMessageType types,
    FixtureMessageFunc func, gpointer user_data)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  gchar *error = NULL;
  gboolean done = FALSE;

  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  while (!done) {
    GstMessage *msg = gst_bus_timed_pop_filtered (
        bus, 120 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR | types);

    fail_unless (
        msg != NULL, "pipeline %s did not finish", GST_ELEMENT_NAME (pipeline));
    switch (GST_MESSAGE_TYPE (msg)) {
      case GST_MESSAGE_EOS:
        done = TRUE;
        break;
      case GST_MESSAGE_ERROR: {
        GError *err = NULL;
        gchar *debug = NULL;

        gst_message_parse_error (msg, &err, &debug);
        error = g_strdup_printf ("%s: %s (%s)",
            GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)), err->message,
            debug ? debug : "");
        g_clear_error (&err);
        g_free (debug);
        done = TRUE;
        break;
      }
      default:
        func (msg, user_data);
        break;
    }
    gst_message_unref (msg);
  }
  gst_object_unref (bus);
  return error;
}

void
fixture_play_until_flowing (GstElement *pipeline)
{
  GstMessage *msg;

  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING)
      != GST_STATE_CHANGE_FAILURE);
  /* PLAYING reached means the sink prerolled: data is flowing. */
  fail_unless (gst_element_get_state (pipeline, NULL, NULL, 60 * GST_SECOND)
      == GST_STATE_CHANGE_SUCCESS);
  msg = gst_bus_pop_filtered (
      GST_ELEMENT_BUS (pipeline), GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
  fail_unless (msg == NULL, "%s message while streaming",
      msg ? GST_MESSAGE_TYPE_NAME (msg) : "no");
}

/* @symbol of the loaded "train" plugin. */
static gpointer
train_plugin_symbol (const gchar *symbol)
{
  GstPlugin *plugin = gst_plugin_load_by_name ("train");
  gpointer address;
  void *handle;

  fail_unless (plugin != NULL, "the train plugin does not load");
  /* the handle of the copy GStreamer loaded, not a new one */
  handle = dlopen (gst_plugin_get_filename (plugin), RTLD_NOW | RTLD_NOLOAD);
  fail_unless (
      handle != NULL, "%s: %s", gst_plugin_get_filename (plugin), dlerror ());
  address = dlsym (handle, symbol);
  fail_unless (
      address != NULL, "%s: no %s", gst_plugin_get_filename (plugin), symbol);
  dlclose (handle);
  gst_object_unref (plugin);
  return address;
}

guint64
fixture_pool_worker_tasks (void)
{
  guint64 (*get) (void) =
      train_plugin_symbol ("gst_train_pool_get_worker_tasks");

  return get ();
}

guint
fixture_pool_n_workers (void)
{
  guint (*get) (void) = train_plugin_symbol ("gst_train_pool_get_n_workers");

  return get ();
}

gint64
fixture_deadline (guint seconds)
{
  return g_get_monotonic_time () + (gint64)seconds * G_TIME_SPAN_SECOND;
}

void
fixture_cond_wait (
    GCond *cond, GMutex *lock, gint64 deadline, const gchar *what)
{
  if (!g_cond_wait_until (cond, lock, deadline)
      && g_get_monotonic_time () >= deadline) {
    g_mutex_unlock (lock);
    fail ("timed out waiting for %s", what);
  }
}

void
fixture_stop_mid_stream (
    GstState stop_state, guint rounds, const gchar *format, ...)
{
  va_list args;
  gchar *launch;
  GstElement *pipeline;
  guint i;

  va_start (args, format);
  launch = g_strdup_vprintf (format, args);
  va_end (args);
  pipeline = gst_parse_launch (launch, NULL);
  fail_unless (pipeline != NULL, "could not parse \"%s\"", launch);
  g_free (launch);
  for (i = 0; i < rounds; i++) {
    fixture_play_until_flowing (pipeline);
    fail_unless (gst_element_set_state (pipeline, stop_state)
        == GST_STATE_CHANGE_SUCCESS);
  }
  fail_unless (gst_element_set_state (pipeline, GST_STATE_NULL)
      == GST_STATE_CHANGE_SUCCESS);
  gst_object_unref (pipeline);
}

/* Keeps the warnings and the merged tags of a fixture_run(). */
static void
record_message (GstMessage *msg, gpointer user_data)
{
  RunResult *result = user_data;
  GError *err = NULL;
  gchar *debug = NULL;
  GstTagList *tags = NULL;

  switch (GST_MESSAGE_TYPE (msg)) {
    case GST_MESSAGE_WARNING:
      gst_message_parse_warning (msg, &err, &debug);
      g_ptr_array_add (result->warnings,
          g_strdup_printf ("%s: %s (%s)",
              GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)), err->message,
              debug ? debug : ""));
      g_clear_error (&err);
      g_free (debug);
      break;
    case GST_MESSAGE_TAG:
      gst_message_parse_tag (msg, &tags);
      if (result->tags == NULL) {
        result->tags = tags;
      } else {
        GstTagList *merged =
            gst_tag_list_merge (result->tags, tags, GST_TAG_MERGE_REPLACE);
        gst_tag_list_unref (result->tags);
        gst_tag_list_unref (tags);
        result->tags = merged;
      }
      break;
    default:
      break;
  }
}

RunResult *
fixture_run (const gchar *launch)
{
  RunResult *result = g_new0 (RunResult, 1);
  GError *error = NULL;
  GstElement *pipeline, *sink;

  result->samples = g_array_new (FALSE, TRUE, sizeof (RunSample));
  g_array_set_clear_func (result->samples, clear_run_sample);
  result->warnings = g_ptr_array_new_with_free_func (g_free);

  pipeline = gst_parse_launch (launch, &error);
  fail_unless (pipeline != NULL, "could not parse \"%s\": %s", launch,
      error ? error->message : "?");
  g_clear_error (&error);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  fail_unless (sink != NULL, "no element named sink in \"%s\"", launch);
  g_object_set (sink, "signal-handoffs", TRUE, "sync", FALSE, NULL);
  g_signal_connect (sink, "handoff", G_CALLBACK (on_handoff), result);
  gst_object_unref (sink);

  result->error = fixture_play_to_eos (
      pipeline, GST_MESSAGE_WARNING | GST_MESSAGE_TAG, record_message, result);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  return result;
}

RunResult *
fixture_run_printf (const gchar *format, ...)
{
  va_list args;
  gchar *launch;
  RunResult *result;

  va_start (args, format);
  launch = g_strdup_vprintf (format, args);
  va_end (args);
  result = fixture_run (launch);
  g_free (launch);
  return result;
}

RunResult *
fixture_run_src (const gchar *location, const gchar *props)
{
  return fixture_run_printf (
      "datasetsrc location=\"%s\" %s ! fakesink name=sink", location, props);
}

void
fixture_expect_src_error (const gchar *location, const gchar *props,
    const gchar *part1, const gchar *part2, guint samples_before)
{
  RunResult *r = fixture_run_src (location, props);

  fail_unless (r->error != NULL, "no error for %s", location);
  fail_unless (strstr (r->error, part1) != NULL, "\"%s\" not in \"%s\"", part1,
      r->error);
  if (part2 != NULL)
    fail_unless (strstr (r->error, part2) != NULL, "\"%s\" not in \"%s\"",
        part2, r->error);
  /* The message names the element. */
  fail_unless (g_str_has_prefix (r->error, "datasetsrc"), "%s", r->error);
  fail_unless_equals_int (r->samples->len, samples_before);
  run_result_free (r);
}

guint64
fixture_src_files_skipped (const gchar *location, const gchar *props)
{
  gchar *launch = g_strdup_printf (
      "datasetsrc name=src location=\"%s\" %s ! fakesink", location, props);
  GstElement *pipeline = gst_parse_launch (launch, NULL);
  GstElement *src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  gchar *error = fixture_play_to_eos (pipeline, 0, NULL, NULL);
  guint64 skipped = 0;

  fail_unless (error == NULL, "%s", error);
  g_object_get (src, "files-skipped", &skipped, NULL);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (pipeline);
  g_free (launch);
  return skipped;
}

void
run_result_free (RunResult *result)
{
  g_array_unref (result->samples);
  g_ptr_array_unref (result->warnings);
  g_free (result->error);
  if (result->tags)
    gst_tag_list_unref (result->tags);
  g_free (result);
}

RunSample *
run_result_sample (RunResult *result, guint i)
{
  return &g_array_index (result->samples, RunSample, i);
}

GArray *
run_result_indices (RunResult *result, gint epoch)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (guint64));
  guint i;

  fail_unless (result->error == NULL, "%s", result->error);
  for (i = 0; i < result->samples->len; i++)
    if (epoch < 0 || run_result_sample (result, i)->epoch == epoch)
      g_array_append_val (out, run_result_sample (result, i)->index);
  return out;
}

gboolean
run_result_same_outputs (RunResult *a, RunResult *b)
{
  guint i;

  if (a->samples->len != b->samples->len)
    return FALSE;
  for (i = 0; i < a->samples->len; i++) {
    GstBuffer *ba = gst_sample_get_buffer (run_result_sample (a, i)->sample);
    GstBuffer *bb = gst_sample_get_buffer (run_result_sample (b, i)->sample);
    GstMapInfo ma, mb;
    gboolean same;

    gst_buffer_map (ba, &ma, GST_MAP_READ);
    gst_buffer_map (bb, &mb, GST_MAP_READ);
    same = ma.size == mb.size && memcmp (ma.data, mb.data, ma.size) == 0;
    gst_buffer_unmap (ba, &ma);
    gst_buffer_unmap (bb, &mb);
    if (!same)
      return FALSE;
  }
  return TRUE;
}

gboolean
fixture_arrays_equal (GArray *a, GArray *b)
{
  return a->len == b->len
      && g_array_get_element_size (a) == g_array_get_element_size (b)
      && memcmp (a->data, b->data, a->len * g_array_get_element_size (a)) == 0;
}

GArray *
fixture_expect_rank_draws (
    FixtureDrawFunc draw, gpointer user_data, const gchar *what)
{
  GArray *alone = draw (user_data), *rank0, *rank1;

  fixture_set_launcher (0, 2);
  rank0 = draw (user_data);
  fixture_set_launcher (1, 2);
  rank1 = draw (user_data);
  fixture_set_launcher (-1, 0);
  fail_unless (
      fixture_arrays_equal (alone, rank0), "rank 0 %s otherwise", what);
  fail_unless (
      !fixture_arrays_equal (alone, rank1), "rank 1 %s as rank 0", what);
  g_array_unref (rank0);
  g_array_unref (rank1);
  return alone;
}

gboolean
run_result_has_warning (
    RunResult *result, const gchar *part1, const gchar *part2)
{
  guint i;

  for (i = 0; i < result->warnings->len; i++) {
    const gchar *w = g_ptr_array_index (result->warnings, i);

    if (strstr (w, part1) != NULL && (part2 == NULL || strstr (w, part2)))
      return TRUE;
  }
  return FALSE;
}
