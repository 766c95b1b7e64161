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

/* ---- misspellings in the launch line ---- */

/* Edit distance between @a and @b: insertions, deletions, substitutions
 * and swaps of two neighbours, ASCII case ignored. */
static guint
edit_distance (const gchar *a, const gchar *b)
{
  gsize la = strlen (a), lb = strlen (b), i, j;
  guint *d = g_new (guint, (la + 1) * (lb + 1)), distance;

#define D(I, J) d[(I) * (lb + 1) + (J)]
  for (i = 0; i <= la; i++)
    D (i, 0) = i;
  for (j = 0; j <= lb; j++)
    D (0, j) = j;
  for (i = 1; i <= la; i++)
    for (j = 1; j <= lb; j++) {
      gchar x = g_ascii_tolower (a[i - 1]), y = g_ascii_tolower (b[j - 1]);
      guint best = MIN (D (i - 1, j), D (i, j - 1)) + 1;

      best = MIN (best, D (i - 1, j - 1) + (x != y));
      if (i > 1 && j > 1 && x == g_ascii_tolower (b[j - 2])
          && g_ascii_tolower (a[i - 2]) == y)
        best = MIN (best, D (i - 2, j - 2) + 1);
      D (i, j) = best;
    }
  distance = D (la, lb);
#undef D
  g_free (d);
  return distance;
}

/* Whether @candidate may be what @typed meant: the same first letter (a
 * slip there is rare, and "gpu" is not "cpu"). */
static gboolean
same_start (const gchar *typed, const gchar *candidate)
{
  return g_ascii_tolower (typed[0]) == g_ascii_tolower (candidate[0]);
}

/* Whether @typed is the start of @candidate (three characters or more),
 * or one or more whole words of it, words being separated by '-' or '_',
 * ASCII case ignored: "cos" of "cosine", "random" of "random-resized",
 * "interval" of "stats-interval". An edit distance cannot find these: the
 * characters left out are many edits. */
static gboolean
part_of (const gchar *typed, const gchar *candidate)
{
  gsize length = strlen (typed);
  const gchar *at;

  if (length == 0 || length >= strlen (candidate))
    return FALSE;
  if (length >= 3 && g_ascii_strncasecmp (candidate, typed, length) == 0)
    return TRUE;
  for (at = candidate; *at; at++) {
    if (at != candidate && at[-1] != '-' && at[-1] != '_')
      continue;
    if (g_ascii_strncasecmp (at, typed, length) == 0
        && (at[length] == '\0' || at[length] == '-' || at[length] == '_'))
      return TRUE;
  }
  return FALSE;
}

/* "; did you mean A?" (or "A or B", at most three) for the @candidates
 * nearest to @typed, when they are near enough to be what was meant (an
 * edit per three characters, at least one, and the same first letter);
 * else those that @typed is a part of ("random" for "random-resized",
 * "cos" for "cosine"); "" when none is. */
static gchar *
did_you_mean (const gchar *typed, GPtrArray *candidates)
{
  guint best = G_MAXUINT, limit = MAX (1, (guint)strlen (typed) / 3), i;
  GString *text = g_string_new (NULL);
  guint shown = 0;

  for (i = 0; i < candidates->len; i++)
    if (same_start (typed, candidates->pdata[i]))
      best = MIN (best, edit_distance (typed, candidates->pdata[i]));
  for (i = 0; i < candidates->len && best <= limit && shown < 3; i++) {
    if (!same_start (typed, candidates->pdata[i])
        || edit_distance (typed, candidates->pdata[i]) != best)
      continue;
    g_string_append (text, shown++ ? " or " : "; did you mean ");
    g_string_append (text, candidates->pdata[i]);
  }
  for (i = 0; i < candidates->len && best > limit && shown < 3; i++) {
    if (!part_of (typed, candidates->pdata[i]))
      continue;
    g_string_append (text, shown++ ? " or " : "; did you mean ");
    g_string_append (text, candidates->pdata[i]);
  }
  if (shown)
    g_string_append_c (text, '?');
  return g_string_free (text, FALSE);
}

/* The @n-th "quoted" string of @message (from 0), or NULL. The last one
 * runs to the last quote, so that a value with quotes in it stays whole. */
static gchar *
quoted (const gchar *message, guint n, gboolean last)
{
  const gchar *start = message, *end;
  guint i;

  for (i = 0; i <= n; i++) {
    start = strchr (start, '"');
    if (start == NULL)
      return NULL;
    start++;
    end = last && i == n ? strrchr (start, '"') : strchr (start, '"');
    if (end == NULL || end < start)
      return NULL;
    if (i < n)
      start = end + 1;
  }
  return g_strndup (start, end - start);
}

/* The class of the element the parser named @name (a ref): the element of
 * @pipeline so named, or the factory of that name, or of that name without
 * the number GStreamer appends. NULL when none is found. */
static GObjectClass *
element_class_named (GstElement *pipeline, const gchar *name)
{
  GstElementFactory *factory = NULL;
  GObjectClass *klass = NULL;
  gchar *stem;

  if (pipeline && GST_IS_BIN (pipeline)) {
    GstElement *element = gst_bin_get_by_name (GST_BIN (pipeline), name);

    if (element) {
      klass = g_type_class_ref (G_OBJECT_TYPE (element));
      gst_object_unref (element);
      return klass;
    }
  }
  factory = gst_element_factory_find (name);
  if (factory == NULL) {
    stem = g_strdup (name);
    g_strchomp (stem);
    while (*stem && g_ascii_isdigit (stem[strlen (stem) - 1]))
      stem[strlen (stem) - 1] = '\0';
    factory = gst_element_factory_find (stem);
    g_free (stem);
  }
  if (factory) {
    factory = GST_ELEMENT_FACTORY (
        gst_plugin_feature_load (GST_PLUGIN_FEATURE (factory)));
    if (factory && gst_element_factory_get_element_type (factory))
      klass = g_type_class_ref (gst_element_factory_get_element_type (factory));
    gst_clear_object (&factory);
  }
  return klass;
}

/* What values @pspec takes, in words: "resnet18, resnet34, ...", "true or
 * false", "a number from 0 to 1000". */
static gchar *
describe_values (GParamSpec *pspec)
{
  GString *text = g_string_new (NULL);
  gchar *range = describe_range (pspec);
  guint i;

  if (G_IS_PARAM_SPEC_ENUM (pspec)) {
    GEnumClass *values = G_PARAM_SPEC_ENUM (pspec)->enum_class;

    for (i = 0; i < values->n_values; i++)
      g_string_append_printf (
          text, "%s%s", i ? ", " : "", values->values[i].value_nick);
  } else if (G_IS_PARAM_SPEC_FLAGS (pspec)) {
    GFlagsClass *values = G_PARAM_SPEC_FLAGS (pspec)->flags_class;

    for (i = 0; i < values->n_values; i++)
      g_string_append_printf (
          text, "%s%s", i ? ", " : "", values->values[i].value_nick);
    g_string_append (text, " (several joined by +)");
  } else if (G_IS_PARAM_SPEC_BOOLEAN (pspec)) {
    g_string_append (text, "true or false");
  } else if (range) {
    g_string_append_printf (text, "a number from %s", range);
  } else {
    g_string_append_printf (text, "a %s", g_type_name (pspec->value_type));
  }
  g_free (range);
  return g_string_free (text, FALSE);
}

/* The names of the properties of @klass. */
static GPtrArray *
property_names (GObjectClass *klass)
{
  GPtrArray *names = g_ptr_array_new ();
  GParamSpec **pspecs;
  guint n, i;

  pspecs = g_object_class_list_properties (klass, &n);
  for (i = 0; i < n; i++)
    g_ptr_array_add (names, (gpointer)pspecs[i]->name);
  g_free (pspecs);
  return names;
}

/* "name=value is not a value name takes[; did you mean X?]: name takes
 * ...", for a value the parser could not turn into @pspec's type. */
static void
report_wrong_value (const gchar *prefix, const gchar *element,
    GParamSpec *pspec, const gchar *value)
{
  GPtrArray *nicks = g_ptr_array_new ();
  gchar *mean, *values = describe_values (pspec);
  guint i;

  if (G_IS_PARAM_SPEC_ENUM (pspec)) {
    GEnumClass *enums = G_PARAM_SPEC_ENUM (pspec)->enum_class;

    for (i = 0; i < enums->n_values; i++)
      g_ptr_array_add (nicks, (gpointer)enums->values[i].value_nick);
  }
  mean = did_you_mean (value, nicks);
  g_printerr ("%sgst-train: %s: %s=%s is not a value %s takes%s %s takes %s\n",
      prefix, element, pspec->name, value, pspec->name, *mean ? mean : ";",
      pspec->name, values);
  g_free (mean);
  g_free (values);
  g_ptr_array_unref (nicks);
}

/* The names of every element factory GStreamer found. */
static GPtrArray *
factory_names (GList **features)
{
  GPtrArray *names = g_ptr_array_new ();
  GList *l;

  *features = gst_registry_get_feature_list (
      gst_registry_get (), GST_TYPE_ELEMENT_FACTORY);
  for (l = *features; l; l = l->next)
    g_ptr_array_add (names, (gpointer)GST_OBJECT_NAME (l->data));
  return names;
}

gint
report_parse_error (
    GstElement *pipeline, const GError *error, const gchar *prefix)
{
  gchar *first = quoted (error->message, 0, FALSE);
  gchar *element = quoted (error->message, 1, FALSE);
  GObjectClass *klass = NULL;
  gint status = 1;

  if (error->domain != GST_PARSE_ERROR || first == NULL)
    goto as_it_is;
  if (error->code == GST_PARSE_ERROR_NO_SUCH_ELEMENT) {
    GList *features;
    GPtrArray *names = factory_names (&features);
    gchar *mean = did_you_mean (first, names);

    g_printerr ("%sgst-train: the pipeline does not parse: no element %s%s "
                "(gst-inspect-1.0 lists the elements there are)\n",
        prefix, first, mean);
    g_free (mean);
    g_ptr_array_unref (names);
    gst_plugin_feature_list_free (features);
    goto done;
  }
  if (element)
    klass = element_class_named (pipeline, element);
  if (klass == NULL)
    goto as_it_is;
  if (error->code == GST_PARSE_ERROR_NO_SUCH_PROPERTY) {
    GPtrArray *names = property_names (klass);
    gchar *mean = did_you_mean (first, names);

    g_printerr ("%sgst-train: %s has no property %s%s (gst-inspect-1.0 %s "
                "lists its properties)\n",
        prefix, element, first, mean, element);
    g_free (mean);
    g_ptr_array_unref (names);
    status = 2;
    goto done;
  }
  if (error->code == GST_PARSE_ERROR_COULD_NOT_SET_PROPERTY) {
    GParamSpec *pspec = g_object_class_find_property (klass, first);
    gchar *value = quoted (error->message, 2, TRUE);

    if (pspec && value) {
      report_wrong_value (prefix, element, pspec, value);
      g_free (value);
      status = 2;
      goto done;
    }
    g_free (value);
  }
as_it_is:
  g_printerr (
      "%sgst-train: the pipeline does not parse: %s\n", prefix, error->message);
done:
  if (klass)
    g_type_class_unref (klass);
  g_free (first);
  g_free (element);
  return status;
}
