/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tool-pipeline.h: what the test tools share: a launch line that ends in
 * "fakesink name=sink", every buffer handed to the tool, run to EOS with
 * its error on stderr. A header of static functions, so that each tool
 * stays one executable built from one file. */
#ifndef __GST_TRAIN_TOOL_PIPELINE_H__
#define __GST_TRAIN_TOOL_PIPELINE_H__

#include <gst/gst.h>
#include <stdio.h>

/* Parses @launch; NULL, with the reason on stderr, when it does not parse
 * or has no element named "sink" (the tools then exit 2). */
static GstElement *
tool_pipeline_new (const gchar *launch)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (launch, &error);
  GstElement *sink;

  if (pipeline == NULL) {
    fprintf (stderr, "%s\n", error->message);
    g_error_free (error);
    return NULL;
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  if (sink == NULL) {
    fprintf (stderr, "no element named sink\n");
    gst_object_unref (pipeline);
    return NULL;
  }
  gst_object_unref (sink);
  return pipeline;
}

/* Has the sink of @pipeline call @on_handoff (a fakesink "handoff"
 * handler) with @user_data for every buffer, as fast as they come. */
static void
tool_pipeline_on_handoff (
    GstElement *pipeline, GCallback on_handoff, gpointer user_data)
{
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");

  g_object_set (sink, "signal-handoffs", TRUE, "sync", FALSE, NULL);
  g_signal_connect (sink, "handoff", on_handoff, user_data);
  gst_object_unref (sink);
}

/* Plays @pipeline (taken) to EOS or an error, handing the tag lists it
 * posts to @on_tags when that is not NULL, and frees it. Returns 0 at EOS,
 * 1 after printing the error on stderr. */
static int
tool_pipeline_run (GstElement *pipeline, void (*on_tags) (GstTagList *tags))
{
  GstBus *bus = gst_element_get_bus (pipeline);
  gboolean done = FALSE;
  int status = 0;

  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  while (!done) {
    GstMessage *msg = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR
            | (on_tags != NULL ? GST_MESSAGE_TAG : 0));

    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
      GError *error = NULL;
      gchar *debug = NULL;

      gst_message_parse_error (msg, &error, &debug);
      fprintf (stderr, "ERROR from %s: %s (%s)\n",
          GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)), error->message,
          debug ? debug : "");
      g_clear_error (&error);
      g_free (debug);
      status = 1;
      done = TRUE;
    } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_TAG) {
      GstTagList *tags = NULL;

      gst_message_parse_tag (msg, &tags);
      on_tags (tags);
      gst_tag_list_unref (tags);
    } else {
      done = TRUE;
    }
    gst_message_unref (msg);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  return status;
}

#endif /* __GST_TRAIN_TOOL_PIPELINE_H__ */
