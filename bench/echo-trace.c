/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* echo-trace.c: records what an echo element lets in and sends out.
 *
 *   echo-trace [--seconds S] OUTPUT.csv LAUNCH-LINE
 *
 * Runs LAUNCH-LINE (gst-launch syntax) to EOS, or for S seconds and then
 * EOS, and writes one CSV line per buffer that enters or leaves the
 * element named "echo":
 *
 *   in,SECONDS,EPOCH,INDEX       a fresh item arrived
 *   out,SECONDS,EPOCH,INDEX,N    an emission left (N: emissions before it,
 *                                0 = fresh)
 *
 * SECONDS count from the first buffer in. EPOCH and INDEX are the buffer's
 * sample meta's (GstTrainSampleMeta); buffers without one (fakesrc) get the
 * meta here, numbered in arrival order. bench/echo-experiment --diagnose reads
 * the file: repeats per item, the spread of an item's copies, duplicates in
 * a batch, the effective factor over time. */
#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train-meta.h"

typedef struct
{
  FILE *out;
  GMutex lock;
  gint64 start;
  guint64 next_index;
} Trace;

static gdouble
trace_seconds (Trace *t)
{
  gint64 now = g_get_monotonic_time ();

  if (t->start == 0)
    t->start = now;
  return (now - t->start) / 1e6;
}

static GstPadProbeReturn
on_in (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  Trace *t = user_data;
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER (info);
  GstTrainSampleMeta *meta = gst_buffer_get_train_sample_meta (buffer);

  g_mutex_lock (&t->lock);
  if (meta == NULL) {
    buffer = gst_buffer_make_writable (buffer);
    meta =
        gst_buffer_add_train_sample_meta (buffer, 0, t->next_index++, 0, NULL);
    GST_PAD_PROBE_INFO_DATA (info) = buffer;
  }
  fprintf (t->out, "in,%.6f,%d,%" G_GUINT64_FORMAT "\n", trace_seconds (t),
      meta->epoch, meta->index);
  g_mutex_unlock (&t->lock);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
on_out (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  Trace *t = user_data;
  GstTrainSampleMeta *meta =
      gst_buffer_get_train_sample_meta (GST_PAD_PROBE_INFO_BUFFER (info));

  if (meta == NULL)
    return GST_PAD_PROBE_OK;
  g_mutex_lock (&t->lock);
  fprintf (t->out, "out,%.6f,%d,%" G_GUINT64_FORMAT ",%u\n", trace_seconds (t),
      meta->epoch, meta->index, meta->emissions);
  g_mutex_unlock (&t->lock);
  return GST_PAD_PROBE_OK;
}

static gboolean
send_eos (gpointer data)
{
  gst_element_send_event (GST_ELEMENT (data), gst_event_new_eos ());
  return G_SOURCE_REMOVE;
}

int
main (int argc, char **argv)
{
  Trace t = { NULL };
  gdouble seconds = 0;
  GstElement *pipeline, *echo;
  GstPad *sink, *src;
  GstBus *bus;
  GstMessage *msg;
  GError *error = NULL;
  int rc = 0, arg = 1;

  gst_init (&argc, &argv);
  if (argc > 2 && strcmp (argv[1], "--seconds") == 0) {
    seconds = g_ascii_strtod (argv[2], NULL);
    arg = 3;
  }
  if (argc - arg != 2) {
    fprintf (
        stderr, "usage: %s [--seconds S] OUTPUT.csv LAUNCH-LINE\n", argv[0]);
    return 2;
  }
  pipeline = gst_parse_launch (argv[arg + 1], &error);
  if (pipeline == NULL) {
    fprintf (stderr, "echo-trace: %s\n", error->message);
    return 1;
  }
  echo = gst_bin_get_by_name (GST_BIN (pipeline), "echo");
  if (echo == NULL) {
    fprintf (stderr, "echo-trace: the launch line has no element named echo\n");
    return 1;
  }
  t.out = fopen (argv[arg], "w");
  if (t.out == NULL) {
    perror (argv[arg]);
    return 1;
  }
  g_mutex_init (&t.lock);
  sink = gst_element_get_static_pad (echo, "sink");
  src = gst_element_get_static_pad (echo, "src");
  gst_pad_add_probe (sink, GST_PAD_PROBE_TYPE_BUFFER, on_in, &t, NULL);
  gst_pad_add_probe (src, GST_PAD_PROBE_TYPE_BUFFER, on_out, &t, NULL);

  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  bus = gst_element_get_bus (pipeline);
  if (seconds > 0)
    g_timeout_add ((guint)(seconds * 1000), send_eos, pipeline);
  for (;;) {
    GMainContext *ctx = g_main_context_default ();

    while (g_main_context_iteration (ctx, FALSE))
      ;
    msg = gst_bus_timed_pop_filtered (
        bus, 20 * GST_MSECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    if (msg == NULL)
      continue;
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      GError *err = NULL;

      gst_message_parse_error (msg, &err, NULL);
      fprintf (stderr, "echo-trace: %s\n", err->message);
      g_error_free (err);
      rc = 1;
    }
    gst_message_unref (msg);
    break;
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  fclose (t.out);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (src);
  gst_object_unref (echo);
  gst_object_unref (pipeline);
  g_mutex_clear (&t.lock);
  return rc;
}
