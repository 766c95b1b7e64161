/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-app.c: the smallest GLib application that trains with gst-train.
 *
 *   train-app [--factories] [--steps N] [--checkpoint FILE] DATASET-FOLDER
 *
 * It builds a training pipeline over an ImageFolder of JPEGs, either from a
 * launch description (gst_parse_launch, as gst-launch-1.0 does) or, with
 * --factories, element by element from their factories, with properties set
 * through GObject and the elements linked in order. It then runs the
 * pipeline, prints one line for every `train-stats` message cudatrainsink
 * posts on the bus, and, after N steps (default 20) or at Ctrl-C, stops it
 * cleanly: the sink's "stop" action and end-of-stream; the sink finishes the
 * step in flight and writes its final checkpoint before EOS reaches the
 * bus. Stopped for its steps, it ends one step after the statistics that
 * reached N (with statistics every 5 steps, --steps 10 ends at step 11),
 * however busy the machine (on_sync_message). Exit status 0 when
 * the run ended at EOS, 1 on an error (its text on stderr).
 *
 * Build it against the installed plugins' pkg-config file (the sample
 * metadata library is not needed here; only GStreamer):
 *
 *   cc train-app.c -o train-app $(pkg-config --cflags --libs gstreamer-1.0)
 */
#include <glib-unix.h>
#include <gst/gst.h>

typedef struct
{
  GstElement *pipeline;
  GMainLoop *loop;
  guint64 stop_after;
  gboolean stopping;
  gint stop_sent; /* atomic: the sink was told to stop */
  int status;
} App;

/* @path with backslashes and double quotes escaped, to stand between
 * double quotes in a launch description. */
static gchar *
escape_quotes (const gchar *path)
{
  GString *out = g_string_new (NULL);

  for (; *path; path++) {
    if (*path == '\\' || *path == '"')
      g_string_append_c (out, '\\');
    g_string_append_c (out, *path);
  }
  return g_string_free (out, FALSE);
}

/* A pipeline from a launch description: the quickest way, and the same
 * text gst-launch-1.0 and gst-train take. */
static GstElement *
pipeline_from_description (const gchar *dataset, const gchar *checkpoint)
{
  GError *error = NULL;
  GstElement *pipeline;
  /* quoted in the description: a path may hold spaces, quotes or '!' */
  gchar *quoted_dataset = escape_quotes (dataset);
  gchar *quoted_checkpoint = escape_quotes (checkpoint);
  gchar *description = g_strdup_printf (
      "datasetsrc location=\"%s\" num-epochs=-1 seed=1 ! imagedec "
      "! echo mode=adaptive max-factor=4 ! augment width=32 height=32 "
      "! batcher batch-size=32 ! queue max-size-buffers=2 "
      "! cudatrainsink name=sink model=resnet20 device=auto stats-interval=5 "
      "checkpoint-location=\"%s\"",
      quoted_dataset, quoted_checkpoint);

  pipeline = gst_parse_launch (description, &error);
  g_free (description);
  g_free (quoted_dataset);
  g_free (quoted_checkpoint);
  /* a pipeline may come back with an error too (a missing property): both
   * mean the description is not what was meant */
  if (error != NULL) {
    g_printerr ("train-app: the pipeline does not parse: %s\n", error->message);
    g_clear_error (&error);
    g_clear_object (&pipeline);
  }
  return pipeline;
}

static GstElement *
make (GstElement *pipeline, const gchar *factory, const gchar *name)
{
  GstElement *element = gst_element_factory_make (factory, name);

  if (element == NULL)
    g_printerr ("train-app: no element \"%s\": is GST_PLUGIN_PATH set to "
                "gst-train's plugins?\n",
        factory);
  else
    gst_bin_add (GST_BIN (pipeline), element);
  return element;
}

/* The same pipeline from element factories, for applications that want to
 * hold on to their elements and set properties as typed values. */
static GstElement *
pipeline_from_factories (const gchar *dataset, const gchar *checkpoint)
{
  GstElement *pipeline = gst_pipeline_new ("train");
  GstElement *src, *dec, *echo, *aug, *batcher, *queue, *sink;

  src = make (pipeline, "datasetsrc", NULL);
  dec = make (pipeline, "imagedec", NULL);
  echo = make (pipeline, "echo", NULL);
  aug = make (pipeline, "augment", NULL);
  batcher = make (pipeline, "batcher", NULL);
  queue = make (pipeline, "queue", NULL);
  sink = make (pipeline, "cudatrainsink", "sink");
  if (!src || !dec || !echo || !aug || !batcher || !queue || !sink) {
    gst_object_unref (pipeline);
    return NULL;
  }
  g_object_set (
      src, "location", dataset, "num-epochs", -1, "seed", (guint64)1, NULL);
  gst_util_set_object_arg (G_OBJECT (echo), "mode", "adaptive");
  g_object_set (echo, "max-factor", 4.0, NULL);
  g_object_set (aug, "width", 32, "height", 32, NULL);
  g_object_set (batcher, "batch-size", 32u, NULL);
  g_object_set (queue, "max-size-buffers", 2u, NULL);
  gst_util_set_object_arg (G_OBJECT (sink), "model", "resnet20");
  g_object_set (
      sink, "stats-interval", 5u, "checkpoint-location", checkpoint, NULL);
  if (!gst_element_link_many (
          src, dec, echo, aug, batcher, queue, sink, NULL)) {
    g_printerr ("train-app: the elements do not link\n");
    gst_object_unref (pipeline);
    return NULL;
  }
  return pipeline;
}

/* The sink's "stop" action ends training at the next step boundary: it
 * finishes the step in flight, writes its checkpoint and posts EOS,
 * without training on what the queue and echo still hold. Any thread. */
static void
stop_sink (App *app)
{
  GstElement *sink;

  if (g_atomic_int_exchange (&app->stop_sent, TRUE))
    return;
  sink = gst_bin_get_by_name (GST_BIN (app->pipeline), "sink");
  if (sink != NULL) {
    g_signal_emit_by_name (sink, "stop");
    gst_object_unref (sink);
  }
}

static void
stop (App *app, const gchar *why)
{
  if (app->stopping)
    return;
  app->stopping = TRUE;
  g_print ("train-app: %s: sending end-of-stream\n", why);
  stop_sink (app);
  /* EOS from the sources too, for sinks that have no such action: every
   * element then finishes what it holds before EOS reaches the bus. */
  gst_element_send_event (app->pipeline, gst_event_new_eos ());
}

static gboolean
on_sigint (gpointer data)
{
  stop (data, "interrupted");
  return G_SOURCE_CONTINUE;
}

/* The step of a train-stats @message, FALSE for any other message. */
static gboolean
stats_step (GstMessage *message, guint64 *step)
{
  const GstStructure *s = gst_message_get_structure (message);

  return GST_MESSAGE_TYPE (message) == GST_MESSAGE_ELEMENT
      && gst_structure_has_name (s, "train-stats")
      && gst_structure_get_uint64 (s, "step", step);
}

/* In the thread that posts each message, before the main loop sees it:
 * the statistics that reach the steps asked for (step S) tell the sink to
 * stop as it posts them. The sink posts them when the batch of step S + 1
 * has come in, which it then trains, and stops there: at step S + 1
 * whatever the main loop is doing. Told from the main loop, the sink
 * could have gone a step or more further by then, as far as the main loop
 * is late. */
static GstBusSyncReply
on_sync_message (GstBus *bus, GstMessage *message, gpointer data)
{
  App *app = data;
  guint64 step;

  if (stats_step (message, &step) && step >= app->stop_after)
    stop_sink (app);
  return GST_BUS_PASS;
}

static gboolean
on_message (GstBus *bus, GstMessage *message, gpointer data)
{
  App *app = data;
  const GstStructure *s;
  GError *error = NULL;
  gchar *debug = NULL;
  guint64 step = 0;
  gdouble loss = 0, rate = 0, wait = 0;

  switch (GST_MESSAGE_TYPE (message)) {
    case GST_MESSAGE_ELEMENT:
      s = gst_message_get_structure (message);
      if (!gst_structure_has_name (s, "train-stats"))
        break;
      gst_structure_get (s, "step", G_TYPE_UINT64, &step, "loss", G_TYPE_DOUBLE,
          &loss, "images-per-second", G_TYPE_DOUBLE, &rate,
          "data-wait-fraction", G_TYPE_DOUBLE, &wait, NULL);
      g_print ("step %" G_GUINT64_FORMAT " | loss %.4f | %.1f img/s | data "
               "wait %.0f%%\n",
          step, loss, rate, wait * 100);
      if (step >= app->stop_after)
        stop (app, "enough steps");
      break;
    case GST_MESSAGE_ERROR:
      gst_message_parse_error (message, &error, &debug);
      g_printerr ("train-app: error from %s: %s\n",
          GST_OBJECT_NAME (GST_MESSAGE_SRC (message)), error->message);
      g_clear_error (&error);
      g_free (debug);
      app->status = 1;
      g_main_loop_quit (app->loop);
      break;
    case GST_MESSAGE_EOS:
      g_print ("train-app: end of stream: stopped cleanly\n");
      g_main_loop_quit (app->loop);
      break;
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

int
main (int argc, char **argv)
{
  gboolean factories = FALSE;
  gint steps = 20;
  gchar *checkpoint = NULL;
  GOptionEntry entries[] = {
    { "factories", 0, 0, G_OPTION_ARG_NONE, &factories,
        "Build the pipeline from element factories", NULL },
    { "steps", 0, 0, G_OPTION_ARG_INT, &steps,
        "Stop after N steps (default 20; checked every 5)", "N" },
    { "checkpoint", 0, 0, G_OPTION_ARG_FILENAME, &checkpoint,
        "Where the sink writes its checkpoint (default train-app.safetensors)",
        "FILE" },
    { NULL },
  };
  GOptionContext *context;
  GError *error = NULL;
  App app = { 0 };
  GstBus *bus;
  guint sigint;

  context = g_option_context_new ("DATASET-FOLDER");
  g_option_context_add_main_entries (context, entries, NULL);
  g_option_context_add_group (context, gst_init_get_option_group ());
  if (!g_option_context_parse (context, &argc, &argv, &error) || argc != 2
      || steps < 1) {
    g_printerr ("train-app: %s\n",
        error ? error->message
              : "usage: train-app [--factories] [--steps N] "
                "[--checkpoint FILE] DATASET-FOLDER");
    g_clear_error (&error);
    g_option_context_free (context);
    return 2;
  }
  g_option_context_free (context);
  if (checkpoint == NULL)
    checkpoint = g_strdup ("train-app.safetensors");

  app.stop_after = (guint64)steps;
  app.pipeline = factories ? pipeline_from_factories (argv[1], checkpoint)
                           : pipeline_from_description (argv[1], checkpoint);
  g_free (checkpoint);
  if (app.pipeline == NULL)
    return 1;
  app.loop = g_main_loop_new (NULL, FALSE);
  bus = gst_element_get_bus (app.pipeline);
  gst_bus_set_sync_handler (bus, on_sync_message, &app, NULL);
  gst_bus_add_watch (bus, on_message, &app);
  sigint = g_unix_signal_add (SIGINT, on_sigint, &app);

  if (gst_element_set_state (app.pipeline, GST_STATE_PLAYING)
      == GST_STATE_CHANGE_FAILURE) {
    /* the element that refused posted the reason as an error message */
    GstMessage *message = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);

    if (message != NULL) {
      on_message (bus, message, &app);
      gst_message_unref (message);
    }
    g_printerr ("train-app: the pipeline does not start\n");
    app.status = 1;
  } else {
    g_main_loop_run (app.loop);
  }

  gst_element_set_state (app.pipeline, GST_STATE_NULL);
  g_source_remove (sigint);
  gst_bus_set_sync_handler (bus, NULL, NULL, NULL);
  gst_bus_remove_watch (bus);
  gst_object_unref (bus);
  gst_object_unref (app.pipeline);
  g_main_loop_unref (app.loop);
  return app.status;
}
