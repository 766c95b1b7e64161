/* bus.c: what gst-train does with each message on the pipeline's bus. It
 * hands statistics and results to progress.c and dumps to dot-dump.c,
 * prints info messages, warnings and errors on stderr (every rank prints
 * its own), and ends the main loop at EOS and at the first error, whose
 * text it keeps for the summary.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "bus.h"

#include <string.h>

/* An element's @message without the rank it starts with (cudatrainsink
 * names it): the line starts with the rank already. */
static const gchar *
without_rank (App *app, const gchar *message)
{
  return g_str_has_prefix (message, app->rank_prefix)
      ? message + strlen (app->rank_prefix)
      : message;
}

gboolean
bus_on_message (GstBus *bus, GstMessage *message, gpointer data)
{
  App *app = data;

  switch (GST_MESSAGE_TYPE (message)) {
    case GST_MESSAGE_ELEMENT: {
      const GstStructure *s = gst_message_get_structure (message);

      if (gst_structure_has_name (s, "train-stats"))
        progress_on_train_stats (&app->progress, message, s);
      else if (gst_structure_has_name (s, "eval-result") && !app->follower)
        progress_on_eval_result (&app->progress, s);
      break;
    }
    case GST_MESSAGE_STATE_CHANGED:
      if (GST_MESSAGE_SRC (message) == GST_OBJECT (app->pipeline)) {
        GstState old_state, new_state;
        gchar *name;

        gst_message_parse_state_changed (message, &old_state, &new_state, NULL);
        name = g_strdup_printf ("%s_%s", gst_element_state_get_name (old_state),
            gst_element_state_get_name (new_state));
        dot_dumps_write (&app->dots, app->pipeline, name);
        g_free (name);
        if (new_state == GST_STATE_PLAYING)
          progress_on_playing (&app->progress);
      }
      break;
    case GST_MESSAGE_INFO: {
      GError *error = NULL;

      /* what the elements say about the run: the classes trained on, the
       * ranks of a job, the device */
      gst_message_parse_info (message, &error, NULL);
      g_printerr ("%sinfo from %s: %s\n", app->rank_prefix,
          GST_OBJECT_NAME (message->src), without_rank (app, error->message));
      g_error_free (error);
      break;
    }
    case GST_MESSAGE_WARNING: {
      GError *error = NULL;

      gst_message_parse_warning (message, &error, NULL);
      g_printerr ("%swarning from %s: %s\n", app->rank_prefix,
          GST_OBJECT_NAME (message->src), without_rank (app, error->message));
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
      g_printerr ("%serror from %s: %s\n", app->rank_prefix,
          GST_OBJECT_NAME (message->src), without_rank (app, error->message));
      dot_dumps_write (&app->dots, app->pipeline, "error");
      app->exit_status = 1;
      g_error_free (error);
      g_free (debug);
      g_main_loop_quit (app->loop);
      break;
    }
    case GST_MESSAGE_EOS:
      /* the last look at the pipeline, before it goes to NULL */
      dot_dumps_write (&app->dots, app->pipeline, "eos");
      g_main_loop_quit (app->loop);
      break;
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}
