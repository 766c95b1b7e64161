/* plugin-path.c: gst-train finds its own plugins, so that it runs from a
 * new shell without GST_PLUGIN_PATH: ../gst-plugins beside the binary in
 * the build tree, the installed plugin folder once installed (given by
 * meson relative to the installed binary, or absolute).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "plugin-path.h"

#include <glib.h>

/* Where the installed plugins are, relative to the folder of the installed
 * gst-train (or absolute); set by meson. */
#ifndef GST_TRAIN_PLUGINS_RELDIR
#define GST_TRAIN_PLUGINS_RELDIR "../lib/gstreamer-1.0"
#endif

/* Appends @dir to the plugin path GStreamer will read (GST_PLUGIN_PATH_1_0
 * when the user set it, GST_PLUGIN_PATH otherwise), after what the user put
 * there, unless it is there already. */
static void
append_plugin_path (const gchar *dir)
{
  const gchar *variable = g_getenv ("GST_PLUGIN_PATH_1_0")
      ? "GST_PLUGIN_PATH_1_0"
      : "GST_PLUGIN_PATH";
  const gchar *current = g_getenv (variable);
  gchar **entries, *joined;
  gboolean present = FALSE;
  gint i;

  if (current == NULL || current[0] == '\0') {
    g_setenv (variable, dir, TRUE);
    return;
  }
  entries = g_strsplit (current, G_SEARCHPATH_SEPARATOR_S, -1);
  for (i = 0; entries[i] && !present; i++)
    present = g_strcmp0 (entries[i], dir) == 0;
  g_strfreev (entries);
  if (present)
    return;
  joined = g_strconcat (current, G_SEARCHPATH_SEPARATOR_S, dir, NULL);
  g_setenv (variable, joined, TRUE);
  g_free (joined);
}

/* Adds the plugin folders that belong to this gst-train to GStreamer's
 * plugin path, so that it runs from a new shell without GST_PLUGIN_PATH:
 * ../gst-plugins beside the binary in the build tree, the installed plugin
 * folder once installed. Only folders that exist; before gst_init. */
void
plugin_path_add_own (void)
{
  const gchar *relative[] = { "../gst-plugins", GST_TRAIN_PLUGINS_RELDIR };
  gchar *exe, *bindir;
  guint i;

  exe = g_file_read_link ("/proc/self/exe", NULL);
  if (exe == NULL)
    return;
  bindir = g_path_get_dirname (exe);
  for (i = 0; i < G_N_ELEMENTS (relative); i++) {
    gchar *dir = g_path_is_absolute (relative[i])
        ? g_strdup (relative[i])
        : g_build_filename (bindir, relative[i], NULL);
    gchar *canonical = g_canonicalize_filename (dir, NULL);

    if (g_file_test (canonical, G_FILE_TEST_IS_DIR))
      append_plugin_path (canonical);
    g_free (canonical);
    g_free (dir);
  }
  g_free (bindir);
  g_free (exe);
}
