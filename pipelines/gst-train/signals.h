/* signals.h: Ctrl-C and SIGTERM in gst-train: the first stops the run with
 * a final checkpoint, the second aborts.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef GST_TRAIN_APP_SIGNALS_H
#define GST_TRAIN_APP_SIGNALS_H

#include "app.h"

/* The lock and condition the EOS of the first Ctrl-C is watched with:
 * before anything else, cleared by signals_clear. */
void signals_init (App *app);
void signals_clear (App *app);
/* Answers SIGINT and SIGTERM from the main loop, until signals_unwatch. */
void signals_watch (App *app);
void signals_unwatch (App *app);
/* Waits up to @seconds for the EOS of the first Ctrl-C to have been sent
 * (at once when none is being sent); TRUE when it has. */
gboolean signals_wait_eos_sent (App *app, gint seconds);

#endif
