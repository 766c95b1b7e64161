/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trainsink-plugin.c: the training plugin, libgsttrainsink.so: cudatrainsink,
 * on gst-train's training library (which opens its CUDA backend at run time,
 * so this plugin loads where CUDA is missing and trains on the CPU). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>

#include "gstcudatrainsink.h"
#include "train-meta.h"

static gboolean
plugin_init (GstPlugin *plugin)
{
  gst_train_tags_register ();
  return GST_ELEMENT_REGISTER (cudatrainsink, plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, trainsink,
    "Training sink of gst-train: ResNet training and evaluation steps on "
    "batches, on the GPU or the CPU",
    plugin_init, PACKAGE_VERSION, "LGPL", "gst-train",
    "https://github.com/gst-train/gst-train")
