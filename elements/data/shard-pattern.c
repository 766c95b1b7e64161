/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* shard-pattern.c: shard locations and their brace patterns (see
 * shard-pattern.h). */
#include "shard-pattern.h"

#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK (gst - train - shard - error - quark, gst_train_shard_error)

/* The white-space separated items of @location (no empty ones). */
static gchar **
shard_location_items (const gchar *location)
{
  gchar **parts = g_strsplit_set (location, " \t\r\n", -1);
  guint i, n = 0;

  for (i = 0; parts[i] != NULL; i++) {
    if (parts[i][0] != '\0')
      parts[n++] = parts[i];
    else
      g_free (parts[i]);
  }
  parts[n] = NULL;
  return parts;
}

gboolean
gst_train_shard_is_url (const gchar *shard)
{
  return g_ascii_strncasecmp (shard, "http://", 7) == 0
      || g_ascii_strncasecmp (shard, "https://", 8) == 0;
}

gboolean
gst_train_shard_location_is_shards (const gchar *location)
{
  gchar **items;
  gboolean shards = FALSE;
  guint i;

  if (location == NULL)
    return FALSE;
  items = shard_location_items (location);
  for (i = 0; items[i] != NULL && !shards; i++)
    shards = gst_train_shard_is_url (items[i]) || strchr (items[i], '{')
        || g_str_has_suffix (items[i], ".tar");
  g_strfreev (items);
  return shards;
}

/* A bound of a numeric range: an optional minus sign and digits. */
static gboolean
shard_parse_number (
    const gchar *text, gint64 *value, guint *digits, gboolean *leading_zero)
{
  const gchar *p = text;
  gchar *end;

  if (*p == '-')
    p++;
  if (!g_ascii_isdigit (*p) || strlen (p) > 18)
    return FALSE;
  *value = g_ascii_strtoll (text, &end, 10);
  if (*end != '\0')
    return FALSE;
  *digits = strlen (p);
  *leading_zero = p[0] == '0' && p[1] != '\0';
  return TRUE;
}

/* The names of the range "A..B" or "A..B..STEP" in @content, appended to
 * @out; FALSE when @content is not such a range. */
static gboolean
shard_expand_range (
    const gchar *content, guint max, GPtrArray *out, GError **error)
{
  gchar **bounds = g_strsplit (content, "..", -1);
  guint n = g_strv_length (bounds), digits_a, digits_b, width = 0, dummy;
  gint64 a, b, step = 1, v;
  gboolean zero_a, zero_b, ok = FALSE, dummy_zero;

  if (n == 3) {
    if (!shard_parse_number (bounds[2], &step, &dummy, &dummy_zero)
        || step == 0) {
      g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_LOCATION,
          "the step of \"{%s}\" is not a number other than 0", content);
      goto out;
    }
    step = ABS (step);
  }
  if (n != 2 && n != 3) {
    g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_LOCATION,
        "\"{%s}\" is not a range \"{FIRST..LAST}\"", content);
    goto out;
  }
  if (shard_parse_number (bounds[0], &a, &digits_a, &zero_a)
      && shard_parse_number (bounds[1], &b, &digits_b, &zero_b)) {
    if (zero_a || zero_b)
      width = MAX (digits_a, digits_b);
    if ((guint64)ABS (b - a) / (guint64)step >= max) {
      g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_LOCATION,
          "\"{%s}\" names more than %u shards", content, max);
      goto out;
    }
    for (v = a; a <= b ? v <= b : v >= b; v += a <= b ? step : -step)
      g_ptr_array_add (out,
          v < 0 ? g_strdup_printf ("-%0*" G_GINT64_FORMAT, (int)width, -v)
                : g_strdup_printf ("%0*" G_GINT64_FORMAT, (int)width, v));
    ok = TRUE;
  } else if (strlen (bounds[0]) == 1 && strlen (bounds[1]) == 1
      && g_ascii_isalpha (bounds[0][0]) && g_ascii_isalpha (bounds[1][0])) {
    a = bounds[0][0];
    b = bounds[1][0];
    for (v = a; a <= b ? v <= b : v >= b; v += a <= b ? step : -step)
      g_ptr_array_add (out, g_strdup_printf ("%c", (gchar)v));
    ok = TRUE;
  } else {
    g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_LOCATION,
        "the bounds of \"{%s}\" are not two numbers or two letters", content);
  }
out:
  g_strfreev (bounds);
  return ok;
}

/* Appends every expansion of @item to @out. */
static gboolean
shard_expand_item (const gchar *item, guint max, GPtrArray *out, GError **error)
{
  const gchar *open = strchr (item, '{'), *p, *part;
  GPtrArray *choices;
  gboolean ok = TRUE;
  guint depth = 0, i;
  gchar *content;

  if (open == NULL) {
    if (strchr (item, '}') != NULL) {
      g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_LOCATION,
          "\"%s\" has a \"}\" without its \"{\"", item);
      return FALSE;
    }
    if (out->len >= max) {
      g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_LOCATION,
          "the location names more than %u shards", max);
      return FALSE;
    }
    g_ptr_array_add (out, g_strdup (item));
    return TRUE;
  }
  if (memchr (item, '}', open - item) != NULL) {
    g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_LOCATION,
        "\"%s\" has a \"}\" without its \"{\"", item);
    return FALSE;
  }

  /* the group's choices: its top-level comma-separated parts, or a range */
  choices = g_ptr_array_new_with_free_func (g_free);
  for (p = part = open + 1; *p != '\0'; p++) {
    if (*p == '{') {
      depth++;
    } else if (*p == '}' && depth > 0) {
      depth--;
    } else if ((*p == ',' || *p == '}') && depth == 0) {
      g_ptr_array_add (choices, g_strndup (part, p - part));
      part = p + 1;
      if (*p == '}')
        break;
    }
  }
  if (*p != '}') {
    g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_LOCATION,
        "\"%s\" has a \"{\" without its \"}\"", item);
    g_ptr_array_unref (choices);
    return FALSE;
  }
  if (choices->len == 1) {
    content = g_ptr_array_steal_index (choices, 0);
    ok = shard_expand_range (content, max, choices, error);
    g_free (content);
  }
  /* each choice in place of the group, then the rest of the item */
  for (i = 0; ok && i < choices->len; i++) {
    gchar *next = g_strdup_printf ("%.*s%s%s", (int)(open - item), item,
        (gchar *)g_ptr_array_index (choices, i), p + 1);

    ok = shard_expand_item (next, max, out, error);
    g_free (next);
  }
  g_ptr_array_unref (choices);
  return ok;
}

gchar **
gst_train_shard_pattern_expand (const gchar *location, GError **error)
{
  return gst_train_shard_pattern_expand_full (
      location, GST_TRAIN_SHARD_PATTERN_MAX, error);
}

gchar **
gst_train_shard_pattern_expand_full (
    const gchar *location, guint max_names, GError **error)
{
  GPtrArray *out = g_ptr_array_new_with_free_func (g_free);
  gchar **items = shard_location_items (location != NULL ? location : "");
  guint i;

  for (i = 0; items[i] != NULL; i++) {
    if (!shard_expand_item (items[i], max_names, out, error)) {
      g_strfreev (items);
      g_ptr_array_unref (out);
      return NULL;
    }
  }
  g_strfreev (items);
  if (out->len == 0) {
    g_set_error (error, GST_TRAIN_SHARD_ERROR, GST_TRAIN_SHARD_ERROR_LOCATION,
        "the location names no shard");
    g_ptr_array_unref (out);
    return NULL;
  }
  g_ptr_array_add (out, NULL);
  return (gchar **)g_ptr_array_free (out, FALSE);
}
