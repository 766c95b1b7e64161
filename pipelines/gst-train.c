/* gst-train.c: runs a training pipeline and shows how it is doing.
 *
 *   gst-train [--dot-dir DIR] [--summary FILE] [--quiet] LAUNCH-LINE...
 *   gst-train [--dot-dir DIR] [--summary FILE] [--quiet] -f FILE.pipeline
 *
 * A small GLib application on the GStreamer API, written to be read by
 * those who embed gst-train in their own programs: it builds the pipeline
 * with gst_parse_launch, watches the bus, prints a progress line for every
 * `train-stats` message of cudatrainsink (and the result of an eval run),
 * turns the first Ctrl-C into EOS, so that the sink finishes its step and
 * writes its final checkpoint (a second Ctrl-C aborts), writes graphviz dot
 * dumps of the pipeline at every state change and on error (--dot-dir),
 * and a JSON summary (--summary). Exit status: 0 when the pipeline reached
 * EOS, 1 on an error (its text on stderr), 2 on bad usage, 130 when aborted.
 */
#include "train-report.h"

#include <gst/gst.h>
#include <glib-unix.h>

#include <errno.h>

typedef struct
{
  GstElement *pipeline;
  GMainLoop *loop;
  gboolean quiet;
  const gchar *dot_dir;
  gint dots;
  gint interrupts;
  gint exit_status;
  gchar *error;
  GstStructure *last_stats;
  GstStructure *eval_result;
  gint64 start;
} App;

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

static gdouble
field_double (const GstStructure *s, const gchar *name)
{
  gdouble value = 0;

  gst_structure_get_double (s, name, &value);
  return value;
}

static void
print_progress (App *app, const GstStructure *s)
{
  guint64 step = 0;

  if (app->quiet)
    return;
  gst_structure_get_uint64 (s, "step", &step);
  g_print ("step %" G_GUINT64_FORMAT " | epoch %.2f | loss %.4f | lr %.4g | "
           "%.1f img/s | fresh %.1f img/s | echo x%.2f | data wait %.0f%%\n",
      step, field_double (s, "epoch"), field_double (s, "loss"),
      field_double (s, "lr"), field_double (s, "images-per-second"),
      field_double (s, "fresh-images-per-second"),
      field_double (s, "echo-factor"),
      100.0 * field_double (s, "data-wait-fraction"));
}

/* Writes DIR/NNNN-NAME.dot. gst_debug_bin_to_dot_data rather than
 * GST_DEBUG_BIN_TO_DOT_FILE, which needs GST_DEBUG_DUMP_DOT_DIR set before
 * GStreamer initialises (and option parsing initialises it). */
static void
dump_dot (App *app, const gchar *name)
{
  gchar *data, *file, *path;
  GError *error = NULL;

  if (app->dot_dir == NULL)
    return;
  data = gst_debug_bin_to_dot_data (
      GST_BIN (app->pipeline), GST_DEBUG_GRAPH_SHOW_ALL);
  file = g_strdup_printf ("%04d-%s.dot", app->dots++, name);
  path = g_build_filename (app->dot_dir, file, NULL);
  if (!g_file_set_contents (path, data, -1, &error)) {
    g_printerr ("could not write %s: %s\n", path, error->message);
    g_error_free (error);
  }
  g_free (path);
  g_free (file);
  g_free (data);
}

static gboolean
on_bus_message (GstBus *bus, GstMessage *message, gpointer data)
{
  App *app = data;

  switch (GST_MESSAGE_TYPE (message)) {
    case GST_MESSAGE_ELEMENT: {
      const GstStructure *s = gst_message_get_structure (message);

      if (gst_structure_has_name (s, "train-stats")) {
        if (app->last_stats)
          gst_structure_free (app->last_stats);
        app->last_stats = gst_structure_copy (s);
        print_progress (app, s);
      } else if (gst_structure_has_name (s, "eval-result")) {
        guint64 images = 0;

        if (app->eval_result)
          gst_structure_free (app->eval_result);
        app->eval_result = gst_structure_copy (s);
        gst_structure_get_uint64 (s, "images", &images);
        g_print ("eval: %" G_GUINT64_FORMAT " images, loss %.4f, top-1 "
                 "%.2f%%, top-5 %.2f%%\n",
            images, field_double (s, "loss"), 100 * field_double (s, "top1"),
            100 * field_double (s, "top5"));
      }
      break;
    }
    case GST_MESSAGE_STATE_CHANGED:
      if (GST_MESSAGE_SRC (message) == GST_OBJECT (app->pipeline)) {
        GstState old_state, new_state;
        gchar *name;

        gst_message_parse_state_changed (message, &old_state, &new_state, NULL);
        name = g_strdup_printf ("%s_%s", gst_element_state_get_name (old_state),
            gst_element_state_get_name (new_state));
        dump_dot (app, name);
        g_free (name);
      }
      break;
    case GST_MESSAGE_WARNING: {
      GError *error = NULL;

      gst_message_parse_warning (message, &error, NULL);
      g_printerr ("warning from %s: %s\n", GST_OBJECT_NAME (message->src),
          error->message);
      g_error_free (error);
      break;
    }
    case GST_MESSAGE_ERROR: {
      GError *error = NULL;
      gchar *debug = NULL;

      gst_message_parse_error (message, &error, &debug);
      /* the first error is the cause; later ones are its consequences */
      if (app->error == NULL)
        app->error = debug ? g_strdup_printf ("%s: %s (%s)",
                         GST_OBJECT_NAME (message->src), error->message, debug)
                           : g_strdup_printf ("%s: %s",
                               GST_OBJECT_NAME (message->src), error->message);
      g_printerr ("error from %s: %s\n", GST_OBJECT_NAME (message->src),
          error->message);
      dump_dot (app, "error");
      app->exit_status = 1;
      g_error_free (error);
      g_free (debug);
      g_main_loop_quit (app->loop);
      break;
    }
    case GST_MESSAGE_EOS:
      g_main_loop_quit (app->loop);
      break;
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

/* First Ctrl-C: EOS, so that the sink writes its final checkpoint; the
 * second: stop now. */
static gboolean
on_interrupt (gpointer data)
{
  App *app = data;

  if (++app->interrupts == 1) {
    /* the sources end the stream: what is already queued is still trained
     * on, then the sink writes its final checkpoint */
    g_printerr ("interrupt: ending the stream; the batches already queued "
                "are trained on, then the final checkpoint is written "
                "(Ctrl-C again to abort)\n");
    if (!gst_element_send_event (app->pipeline, gst_event_new_eos ()))
      g_printerr ("interrupt: the pipeline did not take EOS; Ctrl-C again "
                  "to abort\n");
    return G_SOURCE_CONTINUE;
  }
  g_printerr ("interrupt: aborting\n");
  app->exit_status = 130;
  g_main_loop_quit (app->loop);
  return G_SOURCE_REMOVE;
}

/* Appends ,\n  "@key": {fields of @s} to the summary. */
static void
append_fields (GString *json, const gchar *key, const GstStructure *s)
{
  TrainJsonObject object;

  g_string_append (json, ",\n  ");
  train_json_append_string (json, key);
  g_string_append (json, ": ");
  train_json_object_begin (&object, json);
  gst_structure_foreach (s, train_json_object_add_field, &object);
  train_json_object_end (&object);
}

static gboolean
write_summary (App *app, const gchar *path)
{
  GString *json = g_string_new ("{\n");
  GError *error = NULL;
  gboolean ok;

  g_string_append_printf (json,
      "  \"exit-status\": %d,\n  \"seconds\": %.3f,\n", app->exit_status,
      (g_get_monotonic_time () - app->start) / 1e6);
  g_string_append (json, "  \"error\": ");
  if (app->error)
    train_json_append_string (json, app->error);
  else
    g_string_append (json, "null");
  if (app->last_stats)
    append_fields (json, "last-train-stats", app->last_stats);
  if (app->eval_result)
    append_fields (json, "eval-result", app->eval_result);
  g_string_append (json, "\n}\n");
  ok = g_file_set_contents (path, json->str, -1, &error);
  if (!ok) {
    g_printerr ("could not write the summary: %s\n", error->message);
    g_error_free (error);
  }
  g_string_free (json, TRUE);
  return ok;
}

int
main (int argc, char **argv)
{
  gchar *file = NULL, *dot_dir = NULL, *summary = NULL, *launch = NULL;
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
    { NULL },
  };
  GOptionContext *context;
  GError *error = NULL;
  App app = { 0 };
  GstBus *bus;
  guint signal_source;

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

  if (dot_dir) {
    if (g_mkdir_with_parents (dot_dir, 0755) < 0) {
      g_printerr (
          "gst-train: cannot create %s: %s\n", dot_dir, g_strerror (errno));
      return 2;
    }
    app.dot_dir = dot_dir;
  }
  gst_init (NULL, NULL);

  app.quiet = quiet;
  app.start = g_get_monotonic_time ();
  app.pipeline = gst_parse_launch (launch, &error);
  if (app.pipeline == NULL || error != NULL) {
    g_printerr ("gst-train: the pipeline does not parse: %s\n",
        error ? error->message : "unknown error");
    if (app.pipeline)
      gst_object_unref (app.pipeline);
    return 1;
  }
  app.loop = g_main_loop_new (NULL, FALSE);
  bus = gst_element_get_bus (app.pipeline);
  gst_bus_add_watch (bus, on_bus_message, &app);
  gst_object_unref (bus);
  signal_source = g_unix_signal_add (SIGINT, on_interrupt, &app);

  if (gst_element_set_state (app.pipeline, GST_STATE_PLAYING)
      == GST_STATE_CHANGE_FAILURE) {
    /* the error message on the bus says why: let the watch see it */
    app.exit_status = 1;
    while (g_main_context_iteration (NULL, FALSE))
      ;
  } else {
    g_main_loop_run (app.loop);
  }

  gst_element_set_state (app.pipeline, GST_STATE_NULL);
  if (app.interrupts < 2)
    g_source_remove (signal_source);
  if (app.exit_status == 1 && app.error == NULL)
    g_printerr ("gst-train: the pipeline failed to start\n");
  if (summary && !write_summary (&app, summary) && app.exit_status == 0)
    app.exit_status = 1;

  if (app.last_stats)
    gst_structure_free (app.last_stats);
  if (app.eval_result)
    gst_structure_free (app.eval_result);
  g_free (app.error);
  g_main_loop_unref (app.loop);
  gst_object_unref (app.pipeline);
  g_free (launch);
  g_free (file);
  g_free (dot_dir);
  g_free (summary);
  return app.exit_status;
}
