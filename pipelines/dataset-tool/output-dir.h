/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* output-dir.h: how gst-train-dataset writes its output folder: every file
 * through a temporary name and a rename, and markers that say with which
 * settings the folder was made (".partial" while writing, ".complete" when
 * done), so that a second run with the same settings does nothing and an
 * interrupted one is redone. GLib only. */
#ifndef GST_TRAIN_OUTPUT_DIR_H
#define GST_TRAIN_OUTPUT_DIR_H

#include <glib.h>

G_BEGIN_DECLS

#define MARKER_COMPLETE ".complete"
#define MARKER_PARTIAL ".partial"

typedef enum
{
  OUTPUT_FRESH,    /* nothing there yet, or an interrupted run to redo */
  OUTPUT_COMPLETE, /* done earlier with the same settings */
  OUTPUT_ERROR,
} OutputState;

/* What to do with the folder @out_dir given this run's @settings: write it
 * (absent, empty, or an interrupted run with these settings), nothing (a
 * complete tree made with them: says so on stdout), or an error (a folder
 * made with other settings, or by something else). */
OutputState output_check (
    const char *out_dir, const char *settings, GError **error);

/* The digits of @v in decimal: the width of zero-padded names numbered up
 * to @v. */
guint output_name_width (guint64 v);

/* Creates @path and its parents. */
gboolean output_make_dir (const char *path, GError **error);

/* Writes @len bytes to @dirfd/@name via @dirfd/@tmp_name and a rename
 * (@dir names the folder in messages). */
gboolean output_write_file_at (int dirfd, const char *dir, const char *name,
    const char *tmp_name, const void *data, gsize len, GError **error);

/* Writes @text to @dir/@name via @dir/@name.tmp and a rename. */
gboolean output_write_text (
    const char *dir, const char *name, const char *text, GError **error);

G_END_DECLS

#endif /* GST_TRAIN_OUTPUT_DIR_H */
