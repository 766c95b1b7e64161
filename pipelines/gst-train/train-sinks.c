/* train-sinks.c: the cudatrainsinks of a pipeline, found by factory name
 * and reached through GObject properties and signals only, so that
 * gst-train runs pipelines without the sink (or with an older one) too.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "train-sinks.h"

GList *
find_train_sinks (GstElement *pipeline)
{
  GList *sinks = NULL;
  GstIterator *it;
  GValue item = G_VALUE_INIT;

  if (!GST_IS_BIN (pipeline)) {
    GstElementFactory *factory = gst_element_get_factory (pipeline);

    if (factory
        && g_strcmp0 (GST_OBJECT_NAME (factory), TRAIN_SINK_FACTORY) == 0)
      sinks = g_list_append (sinks, gst_object_ref (pipeline));
    return sinks;
  }
  it = gst_bin_iterate_recurse (GST_BIN (pipeline));
  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *element = g_value_get_object (&item);
    GstElementFactory *factory = gst_element_get_factory (element);

    if (factory
        && g_strcmp0 (GST_OBJECT_NAME (factory), TRAIN_SINK_FACTORY) == 0)
      sinks = g_list_prepend (sinks, gst_object_ref (element));
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return g_list_reverse (sinks);
}

gboolean
sink_evaluates (GstElement *sink)
{
  GParamSpec *pspec =
      g_object_class_find_property (G_OBJECT_GET_CLASS (sink), "mode");
  GEnumValue *value;
  gint mode;

  if (pspec == NULL || !G_IS_PARAM_SPEC_ENUM (pspec))
    return FALSE;
  g_object_get (sink, "mode", &mode, NULL);
  value = g_enum_get_value (G_PARAM_SPEC_ENUM (pspec)->enum_class, mode);
  return value && g_strcmp0 (value->value_nick, "eval") == 0;
}

gint
stop_train_sinks (GList *sinks)
{
  gint stopped = 0;
  GList *l;

  for (l = sinks; l; l = l->next) {
    guint id = g_signal_lookup ("stop", G_OBJECT_TYPE (l->data));
    GSignalQuery query;
    GValue instance = G_VALUE_INIT, result = G_VALUE_INIT;

    if (id == 0)
      continue;
    g_signal_query (id, &query);
    if (query.n_params != 0)
      continue;
    /* g_signal_emitv: whatever the signal returns has a place to go */
    g_value_init (&instance, G_OBJECT_TYPE (l->data));
    g_value_set_object (&instance, l->data);
    if (query.return_type != G_TYPE_NONE)
      g_value_init (&result, query.return_type & ~G_SIGNAL_TYPE_STATIC_SCOPE);
    g_signal_emitv (
        &instance, id, 0, query.return_type != G_TYPE_NONE ? &result : NULL);
    if (G_IS_VALUE (&result))
      g_value_unset (&result);
    g_value_unset (&instance);
    stopped++;
  }
  return stopped;
}
