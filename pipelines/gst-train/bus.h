/* bus.h: gst-train's watch on the pipeline's bus.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef GST_TRAIN_APP_BUS_H
#define GST_TRAIN_APP_BUS_H

#include "app.h"

/* The bus watch (gst_bus_add_watch with @data the App): progress and eval
 * results, dot dumps at every state change of the pipeline, at EOS and on
 * error, warnings and errors on stderr; EOS and the first error end the
 * main loop. */
gboolean bus_on_message (GstBus *bus, GstMessage *message, gpointer data);

#endif
