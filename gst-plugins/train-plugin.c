/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-plugin.c: the data plugin, libgsttrain.so: the elements that carry
 * samples from files to batches. It needs GStreamer, GLib and libjpeg-turbo
 * only; the training sink is the trainsink plugin (trainsink-plugin.c). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>

#include "gstdatasetsrc.h"
#include "gstimagedec.h"
#include "gstaugment.h"
#include "gstecho.h"
#include "gstbatcher.h"
#include "train-meta.h"

static gboolean
plugin_init (GstPlugin *plugin)
{
  gboolean ok = FALSE;

  gst_train_tags_register ();
  ok |= GST_ELEMENT_REGISTER (datasetsrc, plugin);
  ok |= GST_ELEMENT_REGISTER (imagedec, plugin);
  ok |= GST_ELEMENT_REGISTER (augment, plugin);
  ok |= GST_ELEMENT_REGISTER (echo, plugin);
  ok |= GST_ELEMENT_REGISTER (batcher, plugin);
  return ok;
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, train,
    "Training data pipelines with data echoing: datasets, JPEG decoding, "
    "augmentation, echoing and batching",
    plugin_init, PACKAGE_VERSION, "LGPL", "gst-train",
    "https://github.com/gst-train/gst-train")
