/* dot-dump.c: graphviz dot dumps of the pipeline (--dot-dir), numbered in
 * the order they are written, two files each:
 *
 *   NNNN-NAME.dot       to look at: each element with the properties that
 *                       differ from its own defaults, the caps of each
 *                       link, and a long chain of elements folded into two
 *                       rows, so that the picture keeps a screen's shape
 *   NNNN-NAME.full.dot  to look things up: every property of every element
 *                       and the states of elements and pads, as GStreamer
 *                       lays them out
 *
 * GStreamer's own dumps show a property when it differs from its
 * GParamSpec's default, which shows an element's own defaults (a sink's
 * sync=FALSE) as if set and hides nothing else: both files here compare
 * with what the element really starts with, a new element of its factory.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "dot-dump.h"

#include <string.h>

/* Whether @pspec is shown: readable, and not a pointer, an object or a
 * boxed value other than caps (the last sample, statistics); name and
 * parent are left out, the label shows the name already. */
static gboolean
param_shown (GParamSpec *pspec)
{
  GType type = pspec->value_type;

  return (pspec->flags & G_PARAM_READABLE) && !g_str_equal (pspec->name, "name")
      && !g_str_equal (pspec->name, "parent") && type != G_TYPE_POINTER
      && !G_TYPE_IS_OBJECT (type) && !G_TYPE_IS_INTERFACE (type)
      && !(G_TYPE_FUNDAMENTAL (type) == G_TYPE_BOXED && type != GST_TYPE_CAPS);
}

/* @value as the dumps show it: enums and flags by their nicks, as
 * GStreamer's own labels show them; numbers with their significant digits
 * (0.00005, not 0.000050); escaped as GStreamer's dumps write values. */
static gchar *
value_text (const GValue *value)
{
  gchar *contents, *escaped;

  if (G_VALUE_HOLDS_ENUM (value) || G_VALUE_HOLDS_FLAGS (value))
    contents = gst_value_serialize (value);
  else if (G_VALUE_HOLDS_DOUBLE (value))
    contents = g_strdup_printf ("%g", g_value_get_double (value));
  else if (G_VALUE_HOLDS_FLOAT (value))
    contents = g_strdup_printf ("%g", g_value_get_float (value));
  else
    contents = NULL;
  if (contents == NULL)
    contents = g_strdup_value_contents (value);
  escaped = g_strescape (contents, NULL);
  g_free (contents);
  return escaped;
}

/* Whether @a and @b, two values of @pspec, are the same. */
static gboolean
same_value (GParamSpec *pspec, const GValue *a, const GValue *b)
{
  if (G_VALUE_HOLDS (a, GST_TYPE_CAPS)) {
    const GstCaps *x = gst_value_get_caps (a), *y = gst_value_get_caps (b);

    return x == y || (x && y && gst_caps_is_equal (x, y));
  }
  return g_param_values_cmp (pspec, a, b) == 0;
}

/* "\nname=value" for the properties of @element: every one shown, or, with
 * @defaults (a new element of the same factory), only those whose value
 * differs from its value there (read-only counters included: what the run
 * did). */
static void
append_params (GString *label, GstElement *element, GstElement *defaults)
{
  GParamSpec **pspecs;
  guint n, i;

  pspecs = g_object_class_list_properties (G_OBJECT_GET_CLASS (element), &n);
  for (i = 0; i < n; i++) {
    GParamSpec *pspec = pspecs[i];
    GValue value = G_VALUE_INIT, initial = G_VALUE_INIT;
    gboolean show = TRUE;
    gchar *text;

    if (!param_shown (pspec))
      continue;
    g_value_init (&value, pspec->value_type);
    g_object_get_property (G_OBJECT (element), pspec->name, &value);
    if (defaults) {
      g_value_init (&initial, pspec->value_type);
      g_object_get_property (G_OBJECT (defaults), pspec->name, &initial);
      show = !same_value (pspec, &value, &initial);
      g_value_unset (&initial);
    }
    if (show) {
      text = value_text (&value);
      g_string_append_printf (label, "\\n%s=%s", pspec->name, text);
      g_free (text);
    }
    g_value_unset (&value);
  }
  g_free (pspecs);
}

/* The id GStreamer gives @object in its dumps: its name and address, made
 * an identifier. */
static gchar *
dot_id (GstObject *object)
{
  gchar *id = g_strdup_printf ("%s_%p", GST_OBJECT_NAME (object), object);

  return g_strcanon (id, G_CSET_A_2_Z G_CSET_a_2_z G_CSET_DIGITS "_", '_');
}

/* A new element of @element's factory, as it starts: the defaults to
 * compare with, one per factory in @fresh (factory -> element). NULL for
 * an element without a factory. */
static GstElement *
defaults_of (GHashTable *fresh, GstElement *element)
{
  GstElementFactory *factory = gst_element_get_factory (element);
  GstElement *defaults;

  if (factory == NULL)
    return NULL;
  defaults = g_hash_table_lookup (fresh, factory);
  if (defaults == NULL) {
    defaults = gst_element_factory_create (factory, NULL);
    if (defaults == NULL)
      return NULL;
    g_hash_table_insert (fresh, factory, gst_object_ref_sink (defaults));
  }
  return defaults;
}

/* Rewrites the label of every element's cluster in @dot to its first lines
 * (type and name, and the state in the full form) and its properties: all
 * of them, or (@changed: the form without states) those that differ from
 * a new element's. */
static void
rewrite_params (GString *dot, GstBin *pipeline, gboolean changed)
{
  GstIterator *it = gst_bin_iterate_recurse (pipeline);
  GHashTable *fresh =
      g_hash_table_new_full (NULL, NULL, NULL, gst_object_unref);
  GValue item = G_VALUE_INIT;

  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *element = g_value_get_object (&item);
    gchar *id = dot_id (GST_OBJECT (element)), *key, *cluster, *label, *end,
          *cut;
    GString *replacement;
    gint newlines = 0;

    key = g_strdup_printf ("subgraph cluster_%s {\n", id);
    cluster = strstr (dot->str, key);
    label = cluster ? strstr (cluster + strlen (key), "label=\"") : NULL;
    if (label) {
      label += strlen ("label=\"");
      /* the closing quote: the first one not escaped */
      for (end = label; *end && *end != '"'; end++)
        if (*end == '\\' && end[1])
          end++;
      /* after type and name (and the state, when shown): the first
       * property's "\n", or the end when GStreamer showed none */
      for (cut = label; cut < end; cut++)
        if (cut[0] == '\\' && cut[1] == 'n' && ++newlines == (changed ? 2 : 3))
          break;
      if (*end == '"' && newlines >= (changed ? 1 : 2)) {
        gsize at = cut - dot->str, length = end - cut;

        replacement = g_string_new (NULL);
        append_params (replacement, element,
            changed ? defaults_of (fresh, element) : NULL);
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
  g_hash_table_unref (fresh);
}

/* The id of @pad in GStreamer's dumps: its element's id, then its own. */
static gchar *
pad_dot_id (GstPad *pad)
{
  GstElement *element = gst_pad_get_parent_element (pad);
  gchar *element_id, *pad_id = dot_id (GST_OBJECT (pad)), *id;

  if (element == NULL)
    return pad_id;
  element_id = dot_id (GST_OBJECT (element));
  id = g_strdup_printf ("%s_%s", element_id, pad_id);
  gst_object_unref (element);
  g_free (element_id);
  g_free (pad_id);
  return id;
}

/* The first pad of @element's @pads (its srcpads or sinkpads, a ref), or
 * NULL. */
static GstPad *
first_pad (GstElement *element, GList *const *pads)
{
  GstPad *pad = NULL;

  GST_OBJECT_LOCK (element);
  if (*pads)
    pad = gst_object_ref ((*pads)->data);
  GST_OBJECT_UNLOCK (element);
  return pad;
}

/* The element that @element's only source pad is linked to, when that
 * element is in the same bin and has one sink pad: the next link of a
 * chain (a ref). NULL otherwise. */
static GstElement *
next_in_chain (GstElement *element)
{
  GstPad *src_pad = NULL, *peer = NULL;
  GstElement *next = NULL;

  if (element->numsrcpads == 1)
    src_pad = first_pad (element, &element->srcpads);
  if (src_pad)
    peer = gst_pad_get_peer (src_pad);
  if (peer)
    next = gst_pad_get_parent_element (peer);
  if (next
      && (next->numsinkpads != 1
          || GST_OBJECT_PARENT (next) != GST_OBJECT_PARENT (element)))
    gst_clear_object (&next);
  gst_clear_object (&peer);
  gst_clear_object (&src_pad);
  return next;
}

/* A pipeline that is one chain of five or more elements (a source, what
 * it feeds, and so on to a sink) is drawn in two rows: the link in the
 * middle of the chain does not constrain the layout (constraint=false),
 * so that its second half starts again on the left, below the first. A
 * screen is wider than tall, but not seven elements wide. */
static void
fold_chain (GString *dot, GstBin *pipeline)
{
  GPtrArray *chain = g_ptr_array_new_with_free_func (gst_object_unref);
  GstElement *element = NULL, *last, *first;
  GstPad *src_pad, *sink_pad;
  GstIterator *it = gst_bin_iterate_sources (pipeline);
  GValue item = G_VALUE_INIT;
  gchar *src_id, *sink_id, *edge, *at;

  /* the one source of the pipeline */
  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    if (element)
      gst_clear_object (&element); /* two sources: not one chain */
    else
      element = g_value_dup_object (&item);
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  for (; element; element = next_in_chain (element))
    g_ptr_array_add (chain, element);
  if (chain->len >= 5
      && chain->len == (guint)GST_BIN_NUMCHILDREN (GST_BIN (pipeline))) {
    last = chain->pdata[(chain->len + 1) / 2 - 1];
    first = chain->pdata[(chain->len + 1) / 2];
    src_pad = first_pad (last, &last->srcpads);
    sink_pad = first_pad (first, &first->sinkpads);
    src_id = pad_dot_id (src_pad);
    sink_id = pad_dot_id (sink_pad);
    gst_object_unref (src_pad);
    gst_object_unref (sink_pad);
    edge = g_strdup_printf ("  %s -> %s [", src_id, sink_id);
    at = strstr (dot->str, edge);
    if (at)
      g_string_insert (
          dot, at - dot->str + strlen (edge), "constraint=false, ");
    g_free (edge);
    g_free (src_id);
    g_free (sink_id);
  }
  g_ptr_array_unref (chain);
}

/* The end of the quoted text that starts at @text: its first quote not
 * escaped (or the end of the string). */
static const gchar *
closing_quote (const gchar *text)
{
  for (; *text && *text != '"'; text++)
    if (*text == '\\' && text[1])
      text++;
  return text;
}

/* Fields a link's short label leaves out: what every image or batch here
 * has, or what says little at a glance. */
static const gchar *const quiet_fields[] = { "framerate", "pixel-aspect-ratio",
  "num_tensors", "interlace-mode", "multiview-mode", "multiview-flags",
  "colorimetry", "chroma-site", NULL };

/* @caps in a few words, for a link's label: the media type, and on a
 * second line the values that tell the stream apart ("RGB 28x28",
 * "uint8,int32 3:32:32:128,128"), escaped for a dot label. */
static gchar *
caps_summary (GstCaps *caps)
{
  const GstStructure *s = gst_caps_get_structure (caps, 0);
  GString *values = g_string_new (NULL);
  gint width = 0, height = 0;
  gchar *escaped, *summary;
  guint i;

  for (i = 0; i < (guint)gst_structure_n_fields (s); i++) {
    const gchar *field = gst_structure_nth_field_name (s, i);
    const GValue *value = gst_structure_get_value (s, field);
    gchar *text;

    if (g_strv_contains (quiet_fields, field)
        || (g_str_equal (field, "format") && G_VALUE_HOLDS_STRING (value)
            && g_str_equal (g_value_get_string (value), "static")))
      continue;
    if (g_str_equal (field, "width") && G_VALUE_HOLDS_INT (value)) {
      width = g_value_get_int (value);
      continue;
    }
    if (g_str_equal (field, "height") && G_VALUE_HOLDS_INT (value)) {
      height = g_value_get_int (value);
      continue;
    }
    text = G_VALUE_HOLDS_STRING (value) ? g_value_dup_string (value)
                                        : gst_value_serialize (value);
    g_string_append_printf (values, "%s%s", values->len ? " " : "", text);
    g_free (text);
  }
  if (width && height)
    g_string_append_printf (
        values, "%s%dx%d", values->len ? " " : "", width, height);
  escaped = g_strescape (values->str, NULL);
  summary = g_strdup_printf ("%s\\l%s%s", gst_structure_get_name (s), escaped,
      values->len ? "\\l" : "");
  g_free (escaped);
  g_string_free (values, TRUE);
  return summary;
}

/* Labels every link in @dot with the short form of its caps (GStreamer's
 * label lists every field, one a line, and widens the picture by a column
 * each). */
static void
shorten_links (GString *dot, GstBin *pipeline)
{
  GstIterator *it = gst_bin_iterate_recurse (pipeline);
  GValue item = G_VALUE_INIT;

  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *element = g_value_get_object (&item);
    GstPad *src_pad = first_pad (element, &element->srcpads), *peer;
    GstCaps *caps;
    gchar *src_id, *sink_id, *edge, *summary;
    const gchar *at, *label, *end;

    peer = src_pad ? gst_pad_get_peer (src_pad) : NULL;
    caps = src_pad ? gst_pad_get_current_caps (src_pad) : NULL;
    if (peer && caps && !gst_caps_is_empty (caps)) {
      src_id = pad_dot_id (src_pad);
      sink_id = pad_dot_id (peer);
      edge = g_strdup_printf ("  %s -> %s [", src_id, sink_id);
      at = strstr (dot->str, edge);
      label = at ? strstr (at, "label=\"") : NULL;
      if (label && !memchr (at, '\n', label - at)) {
        label += strlen ("label=\"");
        end = closing_quote (label);
        summary = caps_summary (caps);
        g_string_erase (dot, label - dot->str, end - label);
        g_string_insert (dot, label - dot->str, summary);
        g_free (summary);
      }
      g_free (edge);
      g_free (src_id);
      g_free (sink_id);
    }
    gst_clear_caps (&caps);
    gst_clear_object (&peer);
    gst_clear_object (&src_pad);
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
}

/* Leaves out the legend of states (the picture shows none) and puts the
 * elements' clusters in the reverse of GStreamer's order, which is the
 * bin's (the last added first): the source first, so that graphviz puts
 * the start of the chain on top. */
static void
source_first (GString *dot)
{
  const gchar *marker = "\n  subgraph cluster_";
  gchar *legend = strstr (dot->str, "\n  legend [");
  gchar *first, *end, *at, *next;
  GString *reversed;

  if (legend) {
    end = strstr (legend, "\n  ];");
    if (end)
      g_string_erase (dot, legend - dot->str, end + strlen ("\n  ];") - legend);
  }
  first = strstr (dot->str, marker);
  end = strrchr (dot->str, '}');
  if (first == NULL || end == NULL || end < first)
    return;
  /* each top-level cluster, with the links out of it that follow it */
  reversed = g_string_new (NULL);
  for (at = first; at && at < end; at = next) {
    next = strstr (at + 1, marker);
    if (next == NULL || next > end)
      next = end;
    g_string_prepend_len (reversed, at, next - at);
    if (next == end)
      break;
  }
  g_string_erase (dot, first - dot->str, end - first);
  g_string_insert (dot, first - dot->str, reversed->str);
  g_string_free (reversed, TRUE);
}

/* Writes @data to DIR/@file; a failure is said on stderr. */
static void
write_dump (DotDumps *dumps, const gchar *file, const gchar *data)
{
  gchar *path = g_build_filename (dumps->dir, file, NULL);
  GError *error = NULL;

  if (!g_file_set_contents (path, data, -1, &error)) {
    g_printerr ("could not write %s: %s\n", path, error->message);
    g_error_free (error);
  }
  g_free (path);
}

/* gst_debug_bin_to_dot_data rather than GST_DEBUG_BIN_TO_DOT_FILE, which
 * needs GST_DEBUG_DUMP_DOT_DIR set before GStreamer initialises (and option
 * parsing initialises it). */
void
dot_dumps_write (DotDumps *dumps, GstElement *pipeline, const gchar *name)
{
  gchar *data, *file;
  GString *dot;

  if (dumps->dir == NULL)
    return;
  /* to look at: no states (nor their legend), no defaults, two rows */
  data = gst_debug_bin_to_dot_data (GST_BIN (pipeline),
      GST_DEBUG_GRAPH_SHOW_MEDIA_TYPE | GST_DEBUG_GRAPH_SHOW_CAPS_DETAILS
          | GST_DEBUG_GRAPH_SHOW_NON_DEFAULT_PARAMS
          | GST_DEBUG_GRAPH_SHOW_FULL_PARAMS);
  dot = g_string_new (data);
  g_free (data);
  rewrite_params (dot, GST_BIN (pipeline), TRUE);
  shorten_links (dot, GST_BIN (pipeline));
  source_first (dot);
  fold_chain (dot, GST_BIN (pipeline));
  file = g_strdup_printf ("%04d-%s.dot", dumps->count, name);
  write_dump (dumps, file, dot->str);
  g_string_free (dot, TRUE);
  g_free (file);

  /* to look things up: everything */
  data = gst_debug_bin_to_dot_data (
      GST_BIN (pipeline), GST_DEBUG_GRAPH_SHOW_VERBOSE);
  dot = g_string_new (data);
  g_free (data);
  rewrite_params (dot, GST_BIN (pipeline), FALSE);
  file = g_strdup_printf ("%04d-%s.full.dot", dumps->count++, name);
  write_dump (dumps, file, dot->str);
  g_string_free (dot, TRUE);
  g_free (file);
}
