/* dump-samples.c: runs a launch line ending in "fakesink name=sink" and
 * prints what reached the sink, for tests in other languages:
 *   class<TAB>LABEL<TAB>NAME      from the dataset-info tags
 *   sample<TAB>INDEX<TAB>LABEL<TAB>EPOCH<TAB>EMISSIONS<TAB>BYTES<TAB>PATH
 * Exits 1 with the error on stderr when the pipeline fails. */
#include <gst/gst.h>
#include <stdio.h>

#include "train-meta.h"

static void
on_handoff (
    GstElement *sink, GstBuffer *buffer, GstPad *pad, gpointer user_data)
{
  GstTrainSampleMeta *meta = gst_buffer_get_train_sample_meta (buffer);

  if (meta == NULL) {
    printf ("sample\t-\t-\t-\t-\t%zu\t-\n", gst_buffer_get_size (buffer));
    return;
  }
  printf ("sample\t%" G_GUINT64_FORMAT "\t%d\t%d\t%u\t%zu\t%s\n", meta->index,
      meta->label, meta->epoch, meta->emissions, gst_buffer_get_size (buffer),
      meta->location ? meta->location : "-");
}

int
main (int argc, char **argv)
{
  GstElement *pipeline, *sink;
  GError *error = NULL;
  GstBus *bus;
  int status = 0;
  gboolean done = FALSE;

  gst_init (&argc, &argv);
  if (argc != 2) {
    fprintf (stderr, "usage: %s LAUNCH-LINE\n", argv[0]);
    return 2;
  }
  pipeline = gst_parse_launch (argv[1], &error);
  if (pipeline == NULL) {
    fprintf (stderr, "%s\n", error->message);
    return 2;
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  if (sink == NULL) {
    fprintf (stderr, "no element named sink\n");
    return 2;
  }
  g_object_set (sink, "signal-handoffs", TRUE, NULL);
  g_signal_connect (sink, "handoff", G_CALLBACK (on_handoff), NULL);
  gst_object_unref (sink);

  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  while (!done) {
    GstMessage *msg = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_TAG);

    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
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
      GstTrainDatasetInfo info;

      gst_message_parse_tag (msg, &tags);
      if (gst_train_dataset_info_from_tag_list (tags, &info)) {
        guint i;

        for (i = 0; i < info.num_classes; i++)
          printf ("class\t%u\t%s\n", i, info.class_names[i]);
        gst_train_dataset_info_clear (&info);
      }
      gst_tag_list_unref (tags);
    } else {
      done = TRUE;
    }
    gst_message_unref (msg);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  gst_deinit ();
  return status;
}
