/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* output-dir.c: gst-train-dataset's output folder, atomic writes and
 * markers (see output-dir.h). */
#include "output-dir.h"
#include "idx-reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#define PROGRAM "gst-train-dataset"

/* Writes text to dir/name via dir/name.tmp and a rename. */
gboolean
output_write_text (
    const char *dir, const char *name, const char *text, GError **error)
{
  char *tmp = g_strconcat (name, ".tmp", NULL);
  int dirfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  gboolean ok;

  if (dirfd < 0) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: cannot open folder: %s", dir, g_strerror (errno));
    g_free (tmp);
    return FALSE;
  }
  ok = output_write_file_at (dirfd, dir, name, tmp, text, strlen (text), error);
  close (dirfd);
  g_free (tmp);
  return ok;
}

guint
output_name_width (guint64 v)
{
  guint n = 1;

  while (v >= 10) {
    v /= 10;
    n++;
  }
  return n;
}

gboolean
output_make_dir (const char *path, GError **error)
{
  if (g_mkdir_with_parents (path, 0755) != 0) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: cannot create folder: %s", path, g_strerror (errno));
    return FALSE;
  }
  return TRUE;
}

/* Writes len bytes to dirfd/name via dirfd/tmp_name and a rename. */
gboolean
output_write_file_at (int dirfd, const char *dir, const char *name,
    const char *tmp_name, const void *data, gsize len, GError **error)
{
  const guint8 *p = data;
  gsize done = 0;
  int fd;

  fd = openat (dirfd, tmp_name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s/%s: cannot create: %s", dir, tmp_name, g_strerror (errno));
    return FALSE;
  }
  while (done < len) {
    ssize_t w = write (fd, p + done, len - done);

    if (w < 0) {
      if (errno == EINTR)
        continue;
      g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
          "%s/%s: write failed: %s", dir, tmp_name, g_strerror (errno));
      close (fd);
      unlinkat (dirfd, tmp_name, 0);
      return FALSE;
    }
    done += (gsize)w;
  }
  if (close (fd) != 0) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s/%s: write failed: %s", dir, tmp_name, g_strerror (errno));
    unlinkat (dirfd, tmp_name, 0);
    return FALSE;
  }
  if (renameat (dirfd, tmp_name, dirfd, name) != 0) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s/%s: cannot rename to %s: %s", dir, tmp_name, name,
        g_strerror (errno));
    unlinkat (dirfd, tmp_name, 0);
    return FALSE;
  }
  return TRUE;
}

static char *
read_marker_line (const char *contents, const char *key)
{
  char **lines = g_strsplit (contents, "\n", -1);
  char *found = NULL;
  gsize klen = strlen (key);
  guint i;

  for (i = 0; lines[i]; i++) {
    if (strncmp (lines[i], key, klen) == 0 && lines[i][klen] == '=') {
      found = g_strdup (lines[i] + klen + 1);
      break;
    }
  }
  g_strfreev (lines);
  return found;
}

OutputState
output_check (const char *out_dir, const char *settings, GError **error)
{
  /* A marker file names the settings that made the tree beside it: made
   * with ours, a complete tree is done and an unfinished one (an
   * interrupted run) is redone; made with others, either is an error. */
  static const struct
  {
    const char *file;
    const char *tree;
    OutputState same_settings;
  } markers[] = {
    { MARKER_COMPLETE, "a complete", OUTPUT_COMPLETE },
    { MARKER_PARTIAL, "an unfinished", OUTPUT_FRESH },
  };
  char *contents = NULL;
  char *old = NULL;
  OutputState state = OUTPUT_ERROR;
  GDir *dir;
  guint i;

  if (!g_file_test (out_dir, G_FILE_TEST_EXISTS)) {
    state = OUTPUT_FRESH;
    goto out;
  }
  if (!g_file_test (out_dir, G_FILE_TEST_IS_DIR)) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: exists and is not a folder", out_dir);
    goto out;
  }

  for (i = 0; i < G_N_ELEMENTS (markers); i++) {
    char *path = g_build_filename (out_dir, markers[i].file, NULL);
    gboolean found = g_file_get_contents (path, &contents, NULL, NULL);

    g_free (path);
    if (!found)
      continue;
    old = read_marker_line (contents, "settings");
    if (old && strcmp (old, settings) == 0) {
      state = markers[i].same_settings;
    } else {
      g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
          "%s: holds %s tree made with other settings\n"
          "  that run: %s\n  this run: %s\n"
          "remove the folder or choose another --output",
          out_dir, markers[i].tree, old ? old : "(unknown)", settings);
    }
    goto out;
  }

  dir = g_dir_open (out_dir, 0, error);
  if (!dir)
    goto out;
  if (g_dir_read_name (dir) != NULL) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: folder is not empty and holds no tree made by " PROGRAM
        "; remove it or choose another --output",
        out_dir);
  } else {
    state = OUTPUT_FRESH;
  }
  g_dir_close (dir);

out:
  if (state == OUTPUT_COMPLETE) {
    char *classes = read_marker_line (contents, "classes");
    char *counts = read_marker_line (contents, "counts");

    g_print ("%s: already complete (%s, %s classes); nothing to do\n", out_dir,
        counts ? counts : "?", classes ? classes : "?");
    g_free (classes);
    g_free (counts);
  }
  g_free (old);
  g_free (contents);
  return state;
}
