/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* play-deaf.c: plays a launch line and never reads its bus, as an
 * application that misses an error does (gst-launch-1.0 misses one that is
 * posted before its main loop runs). For the test of cudatrainsink's
 * error-timeout in a data-parallel job (tests/integration/dist-faults.sh).
 * Runs until it is killed.
 *
 * Usage: play-deaf LAUNCH-LINE... */
#include <gst/gst.h>

int
main (int argc, char **argv)
{
  GError *error = NULL;
  GstElement *pipeline;

  gst_init (&argc, &argv);
  if (argc < 2) {
    g_printerr ("usage: play-deaf LAUNCH-LINE...\n");
    return 2;
  }
  pipeline = gst_parse_launchv ((const gchar **)argv + 1, &error);
  if (pipeline == NULL) {
    g_printerr ("play-deaf: %s\n", error->message);
    return 2;
  }
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  g_main_loop_run (g_main_loop_new (NULL, FALSE));
  return 0;
}
