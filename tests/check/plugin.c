/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* plugin.c: the plugin as gst-inspect-1.0 shows it: every element
 * registered, described, with a debug category, and every property of ours
 * with a real blurb. */
#include <gst/check/gstcheck.h>

#include "check-main.h"
#include <string.h>

static const gchar *elements[] = { "datasetsrc", "imagedec", "augment", "echo",
  "batcher", "cudatrainsink" };

static gboolean
have_debug_category (const gchar *name)
{
  GSList *all = gst_debug_get_all_categories (), *l;
  gboolean found = FALSE;

  for (l = all; l != NULL && !found; l = l->next)
    found = strcmp (gst_debug_category_get_name (l->data), name) == 0;
  g_slist_free (all);
  return found;
}

GST_START_TEST (test_every_element_is_documented)
{
  guint i, j;

  for (i = 0; i < G_N_ELEMENTS (elements); i++) {
    GstElementFactory *factory = gst_element_factory_find (elements[i]);
    GstElement *element;
    GParamSpec **specs;
    guint n_specs = 0;
    const gchar *keys[] = { GST_ELEMENT_METADATA_LONGNAME,
      GST_ELEMENT_METADATA_KLASS, GST_ELEMENT_METADATA_DESCRIPTION,
      GST_ELEMENT_METADATA_AUTHOR };

    fail_unless (factory != NULL, "%s is not registered", elements[i]);
    for (j = 0; j < G_N_ELEMENTS (keys); j++) {
      const gchar *value = gst_element_factory_get_metadata (factory, keys[j]);
      fail_unless (value != NULL && value[0] != '\0', "%s has no %s",
          elements[i], keys[j]);
    }
    element = gst_element_factory_create (factory, NULL);
    fail_unless (have_debug_category (elements[i]), "%s has no debug category",
        elements[i]);
    specs =
        g_object_class_list_properties (G_OBJECT_GET_CLASS (element), &n_specs);
    for (j = 0; j < n_specs; j++) {
      GParamSpec *pspec = specs[j];
      const gchar *blurb = g_param_spec_get_blurb (pspec);

      /* Properties of GstObject, GstBaseSrc and friends are upstream's. */
      if (pspec->owner_type != G_OBJECT_TYPE (element))
        continue;
      fail_unless (blurb != NULL && strlen (blurb) >= 20,
          "%s::%s has no real blurb", elements[i], pspec->name);
      fail_unless (strcmp (blurb, g_param_spec_get_nick (pspec)) != 0,
          "%s::%s blurb repeats the nick", elements[i], pspec->name);
      fail_unless (pspec->flags & G_PARAM_STATIC_STRINGS);
      /* Writable properties say when they may change. */
      if (pspec->flags & G_PARAM_WRITABLE)
        fail_unless (pspec->flags
                & (GST_PARAM_MUTABLE_READY | GST_PARAM_MUTABLE_PLAYING
                    | GST_PARAM_MUTABLE_PAUSED),
            "%s::%s has no GST_PARAM_MUTABLE_* flag", elements[i], pspec->name);
    }
    g_free (specs);
    gst_object_unref (element);
    gst_object_unref (factory);
  }
}

GST_END_TEST;

#define PLUGIN_TESTS(test) test (test_every_element_is_documented);

CHECK_MAIN (plugin, "plugin", PLUGIN_TESTS);
