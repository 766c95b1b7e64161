/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dump-samples.c: runs a launch line ending in "fakesink name=sink" and
 * prints what reached the sink, for tests in other languages:
 *   class<TAB>LABEL<TAB>NAME      from the dataset-info tags
 *   sample<TAB>INDEX<TAB>LABEL<TAB>EPOCH<TAB>EMISSIONS<TAB>BYTES<TAB>PATH
 * Exits 1 with the error on stderr when the pipeline fails. */
#include <gst/gst.h>
#include <stdio.h>

#include "tool-pipeline.h"
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

/* The class names of the dataset-info tags, in label order. */
static void
print_classes (GstTagList *tags)
{
  GstTrainDatasetInfo info;
  guint i;

  if (!gst_train_dataset_info_from_tag_list (tags, &info))
    return;
  for (i = 0; i < info.num_classes; i++)
    printf ("class\t%u\t%s\n", i, info.class_names[i]);
  gst_train_dataset_info_clear (&info);
}

int
main (int argc, char **argv)
{
  GstElement *pipeline;
  int status;

  gst_init (&argc, &argv);
  if (argc != 2) {
    fprintf (stderr, "usage: %s LAUNCH-LINE\n", argv[0]);
    return 2;
  }
  /* a line per sample as it arrives, so that a test can watch them come
   * out while the pipeline runs */
  setvbuf (stdout, NULL, _IOLBF, 0);
  pipeline = tool_pipeline_new (argv[1]);
  if (pipeline == NULL)
    return 2;
  tool_pipeline_on_handoff (pipeline, G_CALLBACK (on_handoff), NULL);
  status = tool_pipeline_run (pipeline, print_classes);
  gst_deinit ();
  return status;
}
