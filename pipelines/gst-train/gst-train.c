/* gst-train.c: runs a training pipeline and shows how it is doing.
 *
 *   gst-train [--dot-dir DIR] [--summary FILE] [--quiet] [--resume CKPT]
 *             [--tensorboard DIR] LAUNCH-LINE...
 *   gst-train [--dot-dir DIR] [--summary FILE] [--quiet] [--resume CKPT]
 *             [--tensorboard DIR] -f FILE.pipeline
 *
 * A small GLib application on the GStreamer API, written to be read by
 * those who embed gst-train in their own programs: it finds its own plugins
 * (beside itself in the build tree, or where it was installed), builds the
 * pipeline with gst_parse_launch (a property value out of its range is an
 * error, not a warning), watches the bus, prints a progress line for every
 * `train-stats` message of cudatrainsink (and the result of an eval run),
 * turns the first Ctrl-C (or SIGTERM) into a stop: cudatrainsink finishes
 * its step and writes its final checkpoint without training on what is
 * still queued (a second one aborts), closes with the step it stopped at
 * and the checkpoint it wrote (or that it wrote none),
 * writes graphviz dot dumps of the pipeline with every property at every
 * state change, at EOS and on error (--dot-dir), and a JSON summary
 * (--summary). --resume CKPT sets resume-from on every cudatrainsink: run
 * with the launch line (or pipeline file) and seeds of the run that wrote
 * CKPT, training goes on exactly where it stopped, and datasetsrc starts
 * there without reading what was trained on. Exit status: 0 when the
 * pipeline reached EOS, 1 on an error (its text on stderr; a training run
 * that trained nothing is cudatrainsink's error), 2 on bad usage
 * (a bad property value or a property the element does not have included,
 * said with what comes closest: "did you mean max-steps?"), 130 when
 * aborted.
 *
 * Under a launcher (mpirun -np N gst-train ..., srun: one process per rank
 * of a data-parallel job, docs/distributed.md) rank 0 alone prints progress,
 * results and the closing line, and writes dot dumps and the summary; every
 * rank prints its errors and warnings, each line starting with "rank R: ".
 *
 * The files of this folder, each calling only those below it:
 *   gst-train.c      arguments, the launch line, the run from start to end
 *   bus.c            the bus watch          signals.c   Ctrl-C and SIGTERM
 *   progress.c       progress lines, the closing line, the JSON summary
 *   dot-dump.c       dot dumps              train-sinks.c  the cudatrainsinks
 *   plugin-path.c    finding our plugins    refused-values.c  bad values
 * app.h holds the state the first three share.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "app.h"
#include "bus.h"
#include "plugin-path.h"
#include "refused-values.h"
#include "signals.h"
#include "train-sinks.h"

#include "gt-launcher.h"

#include <gst/gst.h>

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

/* The launch line in the file at @path: its lines joined, '#' lines and
 * empty ones left out. */
static gchar *
read_pipeline_file (const gchar *path, GError **error)
{
  gchar *text, **lines, *joined;
  GString *launch;
  gint i;

  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  /* '#' starts a comment line; the rest is one launch line */
  lines = g_strsplit (text, "\n", -1);
  launch = g_string_new (NULL);
  for (i = 0; lines[i]; i++) {
    gchar *line = g_strstrip (lines[i]);

    if (line[0] == '#' || line[0] == '\0')
      continue;
    g_string_append_c (launch, ' ');
    g_string_append (launch, line);
  }
  g_strfreev (lines);
  g_free (text);
  joined = g_string_free (launch, FALSE);
  return joined;
}

int
main (int argc, char **argv)
{
  /* freed on every way out */
  g_autofree gchar *file = NULL;
  g_autofree gchar *dot_dir = NULL;
  g_autofree gchar *summary = NULL;
  g_autofree gchar *launch = NULL;
  g_autofree gchar *resume = NULL;
  g_autofree gchar *tensorboard = NULL;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
    { "file", 'f', 0, G_OPTION_ARG_FILENAME, &file,
        "Read the launch line from FILE ('#' lines are comments)", "FILE" },
    { "dot-dir", 0, 0, G_OPTION_ARG_FILENAME, &dot_dir,
        "Write graphviz dot dumps of the pipeline to DIR at every state "
        "change and on error",
        "DIR" },
    { "summary", 0, 0, G_OPTION_ARG_FILENAME, &summary,
        "Write a JSON summary (last statistics, eval result, error) to FILE",
        "FILE" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress lines", NULL },
    { "resume", 0, 0, G_OPTION_ARG_FILENAME, &resume,
        "Resume every cudatrainsink from the checkpoint CKPT (its "
        "resume-from): with the same pipeline and seeds, training goes on "
        "exactly where CKPT stopped, the source starting there",
        "CKPT" },
    { "tensorboard", 0, 0, G_OPTION_ARG_FILENAME, &tensorboard,
        "Write TensorBoard event files to DIR (every cudatrainsink's "
        "tensorboard-logdir; with several, DIR/NAME each): tensorboard "
        "--logdir DIR shows the run live",
        "DIR" },
    { NULL },
  };
  GOptionContext *context;
  GError *error = NULL;
  GtLauncherPosition position;
  App app = { 0 };
  ParseLog parse_log;
  GstBus *bus;
  GList *l;
  guint i;
  gint64 start;
  gboolean stuck = FALSE;

  signals_init (&app);
  /* before option parsing, which initialises GStreamer */
  plugin_path_add_own ();
  context = g_option_context_new ("[LAUNCH-LINE...]");
  g_option_context_set_summary (context,
      "Runs a gst-train pipeline: progress lines, Ctrl-C writes the final "
      "checkpoint, dot dumps and a JSON summary on request.");
  g_option_context_add_main_entries (context, entries, NULL);
  g_option_context_add_group (context, gst_init_get_option_group ());
  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    g_printerr ("gst-train: %s\n", error->message);
    return 2;
  }
  g_option_context_free (context);

  if (file != NULL && argc > 1) {
    g_printerr ("gst-train: give a launch line or -f FILE, not both\n");
    return 2;
  }
  if (file != NULL) {
    launch = read_pipeline_file (file, &error);
    if (launch == NULL) {
      g_printerr ("gst-train: %s\n", error->message);
      return 2;
    }
  } else if (argc > 1) {
    launch = g_strjoinv (" ", argv + 1);
  } else {
    g_printerr ("gst-train: no pipeline (see --help)\n");
    return 2;
  }

  /* a data-parallel job: rank 0 speaks for it */
  if (gt_launcher_position (&position) && position.size > 1) {
    g_snprintf (
        app.rank_prefix, sizeof (app.rank_prefix), "rank %d: ", position.rank);
    app.follower = position.rank > 0;
    quiet |= app.follower;
    if (app.follower)
      g_clear_pointer (&dot_dir, g_free);
    if (app.follower)
      g_clear_pointer (&summary, g_free);
  }
  if (dot_dir) {
    if (g_mkdir_with_parents (dot_dir, 0755) < 0) {
      g_printerr (
          "gst-train: cannot create %s: %s\n", dot_dir, g_strerror (errno));
      return 2;
    }
    app.dots.dir = dot_dir;
  }
  gst_init (NULL, NULL);

  start = g_get_monotonic_time ();
  parse_log_begin (&parse_log);
  app.pipeline = gst_parse_launch (launch, &error);
  parse_log_end (&parse_log);
  if (app.pipeline == NULL || error != NULL) {
    gint status = 1;

    /* a misspelt property or element: what comes closest */
    if (error)
      status = report_parse_error (app.pipeline, error, app.rank_prefix);
    else
      g_printerr (
          "%sgst-train: the pipeline does not parse\n", app.rank_prefix);
    g_clear_error (&error);
    if (app.pipeline)
      gst_object_unref (app.pipeline);
    g_ptr_array_unref (parse_log.messages);
    return status;
  }
  if (parse_log.messages->len > 0) {
    /* GLib kept the default and would go on: nothing runs */
    for (i = 0; i < parse_log.messages->len; i++)
      report_refused_value (app.pipeline, launch, parse_log.messages->pdata[i]);
    g_ptr_array_unref (parse_log.messages);
    gst_object_unref (app.pipeline);
    return 2;
  }
  g_ptr_array_unref (parse_log.messages);
  app.sinks = find_train_sinks (app.pipeline);
  if (resume != NULL && app.sinks == NULL) {
    g_printerr ("%sgst-train: --resume: the pipeline has no %s\n",
        app.rank_prefix, TRAIN_SINK_FACTORY);
    gst_object_unref (app.pipeline);
    return 2;
  }
  for (l = app.sinks; resume != NULL && l != NULL; l = l->next)
    g_object_set (l->data, "resume-from", resume, NULL);
  if (tensorboard != NULL && app.sinks == NULL) {
    g_printerr ("%sgst-train: --tensorboard: the pipeline has no %s\n",
        app.rank_prefix, TRAIN_SINK_FACTORY);
    gst_object_unref (app.pipeline);
    return 2;
  }
  for (l = app.sinks; tensorboard != NULL && l != NULL; l = l->next) {
    /* several sinks: a run each, as TensorBoard shows folders */
    g_autofree gchar *dir = app.sinks->next
        ? g_build_filename (tensorboard, GST_OBJECT_NAME (l->data), NULL)
        : g_strdup (tensorboard);

    g_object_set (l->data, "tensorboard-logdir", dir, NULL);
  }
  progress_init (&app.progress, app.sinks, quiet, start);
  app.loop = g_main_loop_new (NULL, FALSE);
  bus = gst_element_get_bus (app.pipeline);
  gst_bus_add_watch (bus, bus_on_message, &app);
  gst_object_unref (bus);
  signals_watch (&app);

  if (gst_element_set_state (app.pipeline, GST_STATE_PLAYING)
      == GST_STATE_CHANGE_FAILURE) {
    /* the error message on the bus says why: let the watch see it */
    app.exit_status = 1;
    while (g_main_context_iteration (NULL, FALSE))
      ;
  } else {
    g_main_loop_run (app.loop);
  }

  /* After an abort with the EOS still being sent (for 10 s more), a
   * streaming thread holds what stopping the pipeline would wait for (the
   * EOS holds the pipeline's state lock while the source's thread is
   * stuck): leave it running, the process ends anyway; what was written
   * stays written. Otherwise stopping it lets the sinks write their final
   * checkpoint. */
  stuck = app.exit_status == 130 && !signals_wait_eos_sent (&app, 10);
  if (stuck)
    g_printerr ("%sinterrupt: the pipeline is stuck (the EOS of the first "
                "Ctrl-C is not through): exiting without stopping it\n",
        app.rank_prefix);
  else
    gst_element_set_state (app.pipeline, GST_STATE_NULL);
  signals_unwatch (&app);
  if (app.exit_status == 1 && app.error == NULL)
    g_printerr ("%sgst-train: the pipeline failed to start\n", app.rank_prefix);
  if (!app.follower)
    progress_print_closing (&app.progress, app.exit_status);
  if (summary
      && !progress_write_summary (
          &app.progress, app.exit_status, app.error, summary)
      && app.exit_status == 0)
    app.exit_status = 1;

  progress_clear (&app.progress);
  g_free (app.error);
  g_list_free_full (app.sinks, gst_object_unref);
  g_main_loop_unref (app.loop);
  if (stuck) {
    /* the stuck pipeline's threads still run and hold it: end the process
     * here, without taking it down (everything above is written) */
    fflush (stdout);
    fflush (stderr);
    _exit (app.exit_status);
  }
  gst_object_unref (app.pipeline);
  signals_clear (&app);
  return app.exit_status;
}
