/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* augment-tool.c: the augment element's arithmetic (augment-ops.h), and the
 * element itself, behind a command line, so that tests in Python can hold
 * them against torchvision. Images are packed RGB files, rows without
 * padding:
 *
 *   augment-tool boxes WIDTH HEIGHT COUNT SEED SCALE-MIN SCALE-MAX
 *       RATIO-MIN RATIO-MAX
 *     COUNT crop boxes drawn one after the other from one generator, a line
 *     "TOP LEFT HEIGHT WIDTH FALLBACK" each (FALLBACK 1 when the central
 *     fallback was taken)
 *   augment-tool crop IN WIDTH HEIGHT TOP LEFT BOX-HEIGHT BOX-WIDTH
 *       OUT-WIDTH OUT-HEIGHT FLIP OUT
 *     F.resized_crop (and F.hflip when FLIP is 1)
 *   augment-tool center IN WIDTH HEIGHT RESIZE-SHORT OUT-WIDTH OUT-HEIGHT OUT
 *     Resize(RESIZE-SHORT) then CenterCrop((OUT-HEIGHT, OUT-WIDTH))
 *   augment-tool resize IN WIDTH HEIGHT OUT-WIDTH OUT-HEIGHT OUT
 *     the whole image resized
 *   augment-tool pipeline LAUNCH OUT
 *     runs LAUNCH (ending in "fakesink name=sink") and appends every RGB
 *     buffer that reaches the sink to OUT, printing "WIDTH HEIGHT" for each
 *
 * Exits 2 on bad arguments, 1 when a file or the pipeline fails. */
#include <gst/gst.h>
#include <gst/video/video.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "augment-ops.h"
#include "tool-pipeline.h"

static gint
int_arg (const gchar *text)
{
  gchar *end = NULL;
  gint64 value = g_ascii_strtoll (text, &end, 10);

  if (end == text || *end != '\0' || value < G_MININT || value > G_MAXINT) {
    fprintf (stderr, "not an integer: %s\n", text);
    exit (2);
  }
  return (gint)value;
}

static gdouble
double_arg (const gchar *text)
{
  gchar *end = NULL;
  gdouble value = g_ascii_strtod (text, &end);

  if (end == text || *end != '\0') {
    fprintf (stderr, "not a number: %s\n", text);
    exit (2);
  }
  return value;
}

static guint8 *
read_rgb (const gchar *path, gint width, gint height)
{
  gchar *data = NULL;
  gsize size = 0;
  GError *error = NULL;

  if (!g_file_get_contents (path, &data, &size, &error)) {
    fprintf (stderr, "%s\n", error->message);
    exit (1);
  }
  if (size != (gsize)width * height * 3) {
    fprintf (stderr, "%s holds %zu bytes, not %dx%d RGB\n", path, size, width,
        height);
    exit (1);
  }
  return (guint8 *)data;
}

static void
write_file (const gchar *path, const guint8 *data, gsize size)
{
  GError *error = NULL;

  if (!g_file_set_contents (path, (const gchar *)data, size, &error)) {
    fprintf (stderr, "%s\n", error->message);
    exit (1);
  }
}

/* Resamples @in (@width x @height) through @window into @out_path. */
static int
resample_to_file (const guint8 *in, gint width,
    const GstTrainResizeWindow *window, gboolean flip, const gchar *out_path)
{
  GstTrainResamplePlan plan;
  GstTrainResampleScratch scratch = { 0 };
  gsize out_stride = (gsize)window->x.size * 3;
  guint8 *out = g_malloc ((gsize)window->y.size * out_stride);

  gst_train_resample_plan_init (&plan, window, flip);
  gst_train_resample_rows (&plan, in, (gsize)width * 3, out, out_stride, 0,
      window->y.size, &scratch);
  write_file (out_path, out, (gsize)window->y.size * out_stride);
  gst_train_resample_plan_clear (&plan);
  gst_train_resample_scratch_clear (&scratch);
  g_free (out);
  return 0;
}

static int
run_boxes (gint width, gint height, gint count, guint64 seed,
    const GstTrainCropRange *range)
{
  GtRandom rng;
  gint i;

  gt_random_init (&rng, seed, 0);
  for (i = 0; i < count; i++) {
    GstTrainCropBox box;
    gboolean drawn =
        gst_train_augment_draw_crop (&rng, width, height, range, &box);

    printf ("%d %d %d %d %d\n", box.top, box.left, box.height, box.width,
        drawn ? 0 : 1);
  }
  return 0;
}

static void
on_handoff (
    GstElement *sink, GstBuffer *buffer, GstPad *pad, gpointer user_data)
{
  FILE *out = user_data;
  GstCaps *caps = gst_pad_get_current_caps (pad);
  GstVideoInfo info;
  GstVideoFrame frame;
  gint y;

  if (caps == NULL || !gst_video_info_from_caps (&info, caps)
      || GST_VIDEO_INFO_FORMAT (&info) != GST_VIDEO_FORMAT_RGB
      || !gst_video_frame_map (&frame, &info, buffer, GST_MAP_READ)) {
    fprintf (stderr, "the sink got a buffer that is not RGB\n");
    exit (1);
  }
  for (y = 0; y < GST_VIDEO_INFO_HEIGHT (&info); y++)
    fwrite ((const guint8 *)GST_VIDEO_FRAME_PLANE_DATA (&frame, 0)
            + (gsize)y * GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0),
        1, (gsize)GST_VIDEO_INFO_WIDTH (&info) * 3, out);
  gst_video_frame_unmap (&frame);
  printf (
      "%d %d\n", GST_VIDEO_INFO_WIDTH (&info), GST_VIDEO_INFO_HEIGHT (&info));
  gst_caps_unref (caps);
}

static int
run_pipeline (const gchar *launch, const gchar *out_path)
{
  GstElement *pipeline = tool_pipeline_new (launch);
  FILE *out;
  int status;

  if (pipeline == NULL)
    return 2;
  out = fopen (out_path, "wb");
  if (out == NULL) {
    perror (out_path);
    gst_object_unref (pipeline);
    return 1;
  }
  tool_pipeline_on_handoff (pipeline, G_CALLBACK (on_handoff), out);
  status = tool_pipeline_run (pipeline, NULL);
  if (fclose (out) != 0)
    status = 1;
  return status;
}

static int
usage (void)
{
  fprintf (stderr,
      "usage: augment-tool boxes|crop|center|resize|pipeline ARGS...\n"
      "(see the comment at the top of tests/tools/augment-tool.c)\n");
  return 2;
}

int
main (int argc, char **argv)
{
  const gchar *mode = argc > 1 ? argv[1] : "";
  GstTrainResizeWindow window;
  guint8 *in;
  int status;

  if (strcmp (mode, "boxes") == 0 && argc == 10) {
    GstTrainCropRange range = { double_arg (argv[6]), double_arg (argv[7]),
      double_arg (argv[8]), double_arg (argv[9]) };

    return run_boxes (int_arg (argv[2]), int_arg (argv[3]), int_arg (argv[4]),
        g_ascii_strtoull (argv[5], NULL, 10), &range);
  }
  if (strcmp (mode, "crop") == 0 && argc == 13) {
    gint width = int_arg (argv[3]), height = int_arg (argv[4]);
    GstTrainCropBox box = { int_arg (argv[5]), int_arg (argv[6]),
      int_arg (argv[7]), int_arg (argv[8]) };

    if (box.top < 0 || box.left < 0 || box.height < 1 || box.width < 1
        || box.top + box.height > height || box.left + box.width > width) {
      fprintf (stderr, "the box is not inside the image\n");
      return 2;
    }
    in = read_rgb (argv[2], width, height);
    gst_train_augment_crop_window (
        &box, int_arg (argv[9]), int_arg (argv[10]), &window);
    status =
        resample_to_file (in, width, &window, int_arg (argv[11]), argv[12]);
    g_free (in);
    return status;
  }
  if (strcmp (mode, "center") == 0 && argc == 9) {
    gint width = int_arg (argv[3]), height = int_arg (argv[4]);

    in = read_rgb (argv[2], width, height);
    gst_train_augment_center_window (width, height, int_arg (argv[5]),
        int_arg (argv[6]), int_arg (argv[7]), &window);
    status = resample_to_file (in, width, &window, FALSE, argv[8]);
    g_free (in);
    return status;
  }
  if (strcmp (mode, "resize") == 0 && argc == 8) {
    gint width = int_arg (argv[3]), height = int_arg (argv[4]);

    in = read_rgb (argv[2], width, height);
    gst_train_augment_resize_window (
        width, height, int_arg (argv[5]), int_arg (argv[6]), &window);
    status = resample_to_file (in, width, &window, FALSE, argv[7]);
    g_free (in);
    return status;
  }
  if (strcmp (mode, "pipeline") == 0 && argc == 4) {
    gst_init (NULL, NULL);
    return run_pipeline (argv[2], argv[3]);
  }
  return usage ();
}
