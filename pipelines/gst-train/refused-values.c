/* refused-values.c: diagnosis of property values that gst_parse_launch
 * sets and the elements refuse. GLib's warning names neither the element
 * nor the range and converts the value (-3 for an unsigned property reads
 * 18446744073709551613); gst-train collects these warnings while it parses
 * and reports each as an error in the user's words: element, property,
 * value as written, range taken.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "refused-values.h"

#include <string.h>

static void
collect_log_message (const gchar *domain, GLogLevelFlags level,
    const gchar *message, gpointer data)
{
  ParseLog *log = data;

  g_ptr_array_add (log->messages, g_strdup (message));
}

void
parse_log_begin (ParseLog *log)
{
  const gchar *domains[] = { "GLib-GObject", "GStreamer" };
  guint i;

  log->messages = g_ptr_array_new_with_free_func (g_free);
  for (i = 0; i < G_N_ELEMENTS (domains); i++)
    log->handlers[i] = g_log_set_handler (domains[i],
        G_LOG_LEVEL_WARNING | G_LOG_LEVEL_CRITICAL | G_LOG_FLAG_FATAL
            | G_LOG_FLAG_RECURSION,
        collect_log_message, log);
}

void
parse_log_end (ParseLog *log)
{
  g_log_remove_handler ("GLib-GObject", log->handlers[0]);
  g_log_remove_handler ("GStreamer", log->handlers[1]);
}

/* The text between @open and the next @close after it in @text, or NULL. */
static gchar *
text_between (const gchar *text, const gchar *open, const gchar *close)
{
  const gchar *start = strstr (text, open), *end;

  if (start == NULL)
    return NULL;
  start += strlen (open);
  end = strstr (start, close);
  return end ? g_strndup (start, end - start) : NULL;
}

/* "MIN to MAX" for a numeric property, NULL for other kinds. */
static gchar *
describe_range (GParamSpec *pspec)
{
#define RANGE(TYPE, FORMAT)                                                    \
  if (G_IS_PARAM_SPEC_##TYPE (pspec))                                          \
    return g_strdup_printf (FORMAT " to " FORMAT,                              \
        G_PARAM_SPEC_##TYPE (pspec)->minimum,                                  \
        G_PARAM_SPEC_##TYPE (pspec)->maximum);
  RANGE (INT, "%d");
  RANGE (UINT, "%u");
  RANGE (LONG, "%ld");
  RANGE (ULONG, "%lu");
  RANGE (INT64, "%" G_GINT64_FORMAT);
  RANGE (UINT64, "%" G_GUINT64_FORMAT);
  RANGE (FLOAT, "%g");
  RANGE (DOUBLE, "%g");
#undef RANGE
  return NULL;
}

/* Whether @text, read as a value of @pspec's type, is one @pspec refuses. */
static gboolean
value_refused (GParamSpec *pspec, const gchar *text)
{
  GValue value = G_VALUE_INIT;
  gboolean refused;

  g_value_init (&value, pspec->value_type);
  if (!gst_value_deserialize (&value, text)) {
    g_value_unset (&value);
    return TRUE;
  }
  /* validating changes a value it refuses */
  refused = g_param_value_validate (pspec, &value);
  g_value_unset (&value);
  return refused;
}

/* The value the user wrote for @pspec in @launch, when it is set there
 * once: GLib's message has it converted (-3 for an unsigned property reads
 * 18446744073709551613; doubles have six decimals). Otherwise GLib's text,
 * doubles shortened. */
static gchar *
user_value (const gchar *launch, GParamSpec *pspec, const gchar *text)
{
  gchar *key = g_strconcat (pspec->name, "=", NULL);
  const gchar *at, *found = NULL;
  gint count = 0;

  for (at = strstr (launch, key); at; at = strstr (at + 1, key))
    if (at == launch || g_ascii_isspace (at[-1])) {
      found = at + strlen (key);
      count++;
    }
  g_free (key);
  if (count == 1) {
    gsize length = 0;

    while (found[length] && !g_ascii_isspace (found[length])
        && found[length] != '!')
      length++;
    if (length > 0)
      return g_strndup (found, length);
  }
  if (G_IS_PARAM_SPEC_DOUBLE (pspec) || G_IS_PARAM_SPEC_FLOAT (pspec))
    return g_strdup_printf ("%g", g_ascii_strtod (text, NULL));
  return g_strdup (text);
}

/* Prints one collected warning as an error: which element, which property,
 * the value and the range the property takes. Elements of @pipeline that
 * have the property and refuse the value are named (GLib's message names
 * neither the element nor the range). */
void
report_refused_value (
    GstElement *pipeline, const gchar *launch, const gchar *message)
{
  gchar *value = text_between (message, "value \"", "\"");
  gchar *property = text_between (message, "for property '", "'");
  GParamSpec *found = NULL;
  GString *owners = g_string_new (NULL);
  GstIterator *it;
  GValue item = G_VALUE_INIT;

  if (value == NULL || property == NULL || !GST_IS_BIN (pipeline)) {
    g_printerr (
        "gst-train: the pipeline does not parse cleanly: %s\n", message);
    goto done;
  }
  it = gst_bin_iterate_recurse (GST_BIN (pipeline));
  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *element = g_value_get_object (&item);
    GParamSpec *pspec =
        g_object_class_find_property (G_OBJECT_GET_CLASS (element), property);

    if (pspec && value_refused (pspec, value)) {
      found = pspec;
      /* the iterator goes from the last element added to the first */
      if (owners->len > 0)
        g_string_prepend (owners, " or ");
      g_string_prepend (owners, GST_OBJECT_NAME (element));
    }
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  if (found == NULL) {
    g_printerr (
        "gst-train: the pipeline does not parse cleanly: %s\n", message);
  } else {
    gchar *range = describe_range (found),
          *shown = user_value (launch, found, value);

    if (range)
      g_printerr ("gst-train: %s: %s=%s is out of range: %s takes %s\n",
          owners->str, property, shown, property, range);
    else
      g_printerr ("gst-train: %s: %s=%s is not a value %s takes\n", owners->str,
          property, shown, property);
    g_free (range);
    g_free (shown);
  }
done:
  g_string_free (owners, TRUE);
  g_free (value);
  g_free (property);
}
