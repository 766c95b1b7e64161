/* dot-dump.c: graphviz dot dumps of the pipeline (--dot-dir), numbered in
 * the order they are written, with every property of every element shown:
 * GStreamer's own dumps show only those that differ from their
 * GParamSpec's default, which hides an element's own defaults.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "dot-dump.h"

#include <string.h>

/* "\nname=value" for every readable property of @element, default values
 * included, escaped as GStreamer's dumps write values. Objects, pointers and
 * boxed values other than caps (the last sample, statistics) are left out,
 * as are name and parent, which the label shows already. */
static void
append_every_param (GString *label, GstElement *element)
{
  GParamSpec **pspecs;
  guint n, i;

  pspecs = g_object_class_list_properties (G_OBJECT_GET_CLASS (element), &n);
  for (i = 0; i < n; i++) {
    GParamSpec *pspec = pspecs[i];
    GType type = pspec->value_type;
    GValue value = G_VALUE_INIT;
    gchar *contents, *escaped;

    if (!(pspec->flags & G_PARAM_READABLE) || g_str_equal (pspec->name, "name")
        || g_str_equal (pspec->name, "parent") || type == G_TYPE_POINTER
        || G_TYPE_IS_OBJECT (type) || G_TYPE_IS_INTERFACE (type)
        || (G_TYPE_FUNDAMENTAL (type) == G_TYPE_BOXED && type != GST_TYPE_CAPS))
      continue;
    g_value_init (&value, type);
    g_object_get_property (G_OBJECT (element), pspec->name, &value);
    /* enums and flags by their nicks, as GStreamer's own labels show them;
     * numbers with their significant digits (0.00005, not 0.000050) */
    if (G_VALUE_HOLDS_ENUM (&value) || G_VALUE_HOLDS_FLAGS (&value))
      contents = gst_value_serialize (&value);
    else if (G_VALUE_HOLDS_DOUBLE (&value))
      contents = g_strdup_printf ("%g", g_value_get_double (&value));
    else if (G_VALUE_HOLDS_FLOAT (&value))
      contents = g_strdup_printf ("%g", g_value_get_float (&value));
    else
      contents = NULL;
    if (contents == NULL)
      contents = g_strdup_value_contents (&value);
    escaped = g_strescape (contents, NULL);
    g_string_append_printf (label, "\\n%s=%s", pspec->name, escaped);
    g_free (escaped);
    g_free (contents);
    g_value_unset (&value);
  }
  g_free (pspecs);
}

/* GStreamer's dumps show only the properties that differ from the default
 * of their GParamSpec (whatever the details flags): a default-valued
 * property, or one that an element's own default overrides, is not shown.
 * Rewrites the label of every element's cluster in @dot to its first three
 * lines (type, name, state) and every property. */
static void
show_every_param (GString *dot, GstBin *pipeline)
{
  GstIterator *it = gst_bin_iterate_recurse (pipeline);
  GValue item = G_VALUE_INIT;

  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *element = g_value_get_object (&item);
    gchar *id, *key, *cluster, *label, *end, *cut;
    GString *replacement;
    gint newlines = 0;

    /* GStreamer names the cluster after the element's name and address */
    id = g_strdup_printf ("%s_%p", GST_OBJECT_NAME (element), (void *)element);
    g_strcanon (id, G_CSET_A_2_Z G_CSET_a_2_z G_CSET_DIGITS "_", '_');
    key = g_strdup_printf ("subgraph cluster_%s {\n", id);
    cluster = strstr (dot->str, key);
    label = cluster ? strstr (cluster + strlen (key), "label=\"") : NULL;
    if (label) {
      label += strlen ("label=\"");
      /* the closing quote: the first one not escaped */
      for (end = label; *end && *end != '"'; end++)
        if (*end == '\\' && end[1])
          end++;
      /* after type, name and state: the third "\n", or the end when
       * GStreamer showed no property */
      for (cut = label; cut < end; cut++)
        if (cut[0] == '\\' && cut[1] == 'n' && ++newlines == 3)
          break;
      if (*end == '"' && newlines >= 2) {
        gsize at = cut - dot->str, length = end - cut;

        replacement = g_string_new (NULL);
        append_every_param (replacement, element);
        g_string_erase (dot, at, length);
        g_string_insert (dot, at, replacement->str);
        g_string_free (replacement, TRUE);
      }
    }
    g_free (key);
    g_free (id);
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
}

/* Writes DIR/NNNN-NAME.dot, every property shown. gst_debug_bin_to_dot_data
 * rather than GST_DEBUG_BIN_TO_DOT_FILE, which needs GST_DEBUG_DUMP_DOT_DIR
 * set before GStreamer initialises (and option parsing initialises it). */
void
dot_dumps_write (DotDumps *dumps, GstElement *pipeline, const gchar *name)
{
  gchar *data, *file, *path;
  GString *dot;
  GError *error = NULL;

  if (dumps->dir == NULL)
    return;
  dot = g_string_new (NULL);
  data = gst_debug_bin_to_dot_data (
      GST_BIN (pipeline), GST_DEBUG_GRAPH_SHOW_VERBOSE);
  g_string_assign (dot, data);
  g_free (data);
  show_every_param (dot, GST_BIN (pipeline));
  data = g_string_free (dot, FALSE);
  file = g_strdup_printf ("%04d-%s.dot", dumps->count++, name);
  path = g_build_filename (dumps->dir, file, NULL);
  if (!g_file_set_contents (path, data, -1, &error)) {
    g_printerr ("could not write %s: %s\n", path, error->message);
    g_error_free (error);
  }
  g_free (path);
  g_free (file);
  g_free (data);
}
