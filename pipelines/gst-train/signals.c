/* signals.c: Ctrl-C (or SIGTERM) in gst-train. The first asks every
 * cudatrainsink to stop after its step in flight and write its final
 * checkpoint, and sends EOS from the sources (on a GStreamer thread: a
 * stuck streaming thread can hold what sending it waits for); the second
 * aborts with exit status 130.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "signals.h"

#include "train-sinks.h"

#include <glib-unix.h>

/* Sends EOS into the pipeline, on one of GStreamer's own threads. */
static void
send_eos (GstElement *pipeline, gpointer data)
{
  App *app = data;

  if (!gst_element_send_event (pipeline, gst_event_new_eos ()))
    g_printerr ("%sinterrupt: the pipeline did not take EOS; Ctrl-C again "
                "to abort\n",
        app->rank_prefix);
  g_mutex_lock (&app->eos_lock);
  app->eos_in_flight = FALSE;
  g_cond_broadcast (&app->eos_done);
  g_mutex_unlock (&app->eos_lock);
}

gboolean
signals_wait_eos_sent (App *app, gint seconds)
{
  gint64 deadline = g_get_monotonic_time () + seconds * G_TIME_SPAN_SECOND;
  gboolean sent;

  g_mutex_lock (&app->eos_lock);
  while (app->eos_in_flight
      && g_cond_wait_until (&app->eos_done, &app->eos_lock, deadline))
    ;
  sent = !app->eos_in_flight;
  g_mutex_unlock (&app->eos_lock);
  return sent;
}

/* First Ctrl-C (or SIGTERM): the sinks stop after their step in flight
 * and write their final checkpoint; the second: stop now. */
static gboolean
on_interrupt (gpointer data)
{
  App *app = data;

  if (++app->interrupts == 1) {
    /* cudatrainsink's "stop" does not wait for the batches queued before
     * it; EOS from the sources too, for pipelines without that sink (or
     * with one that has no "stop"), where what is queued is trained on */
    if (stop_train_sinks (app->sinks) > 0)
      g_printerr ("%sinterrupt: stopping after the step in flight; the "
                  "batches still queued are not used, the final checkpoint "
                  "(or eval result) is written (Ctrl-C again to abort)\n",
          app->rank_prefix);
    else
      g_printerr ("%sinterrupt: ending the stream; the batches already "
                  "queued are trained on, then the final checkpoint is "
                  "written (Ctrl-C again to abort)\n",
          app->rank_prefix);
    /* not from the main loop: a source whose streaming thread is stuck
     * pushing holds a lock that sending it an event waits for, and the
     * second Ctrl-C must still get through */
    g_mutex_lock (&app->eos_lock);
    app->eos_in_flight = TRUE;
    g_mutex_unlock (&app->eos_lock);
    gst_element_call_async (app->pipeline, send_eos, app, NULL);
    return G_SOURCE_CONTINUE;
  }
  g_printerr ("%sinterrupt: aborting\n", app->rank_prefix);
  app->exit_status = 130;
  g_main_loop_quit (app->loop);
  return G_SOURCE_CONTINUE;
}

void
signals_init (App *app)
{
  g_mutex_init (&app->eos_lock);
  g_cond_init (&app->eos_done);
}

void
signals_clear (App *app)
{
  g_mutex_clear (&app->eos_lock);
  g_cond_clear (&app->eos_done);
}

void
signals_watch (App *app)
{
  app->signal_sources[0] = g_unix_signal_add (SIGINT, on_interrupt, app);
  app->signal_sources[1] = g_unix_signal_add (SIGTERM, on_interrupt, app);
}

void
signals_unwatch (App *app)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (app->signal_sources); i++)
    g_source_remove (app->signal_sources[i]);
}
