/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-scratch.c: the scratch folder and checks of fuzz-scratch.h. */
#include "fuzz-scratch.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static gchar *scratch_dir;

void
fuzz_fail (const char *file, int line, const char *what)
{
  fprintf (stderr, "%s:%d: contract broken: %s\n", file, line, what);
  abort ();
}

void
fuzz_remove_tree (const char *path)
{
  struct stat st;

  if (lstat (path, &st) != 0)
    return;
  if (S_ISDIR (st.st_mode)) {
    GDir *dir = g_dir_open (path, 0, NULL);
    const gchar *name;

    while (dir != NULL && (name = g_dir_read_name (dir)) != NULL) {
      gchar *child = g_build_filename (path, name, NULL);

      fuzz_remove_tree (child);
      g_free (child);
    }
    if (dir != NULL)
      g_dir_close (dir);
    g_rmdir (path);
  } else {
    g_unlink (path);
  }
}

static void
remove_scratch_dir (void)
{
  fuzz_remove_tree (scratch_dir);
  g_free (scratch_dir);
  scratch_dir = NULL;
}

gchar *
fuzz_scratch_path (const char *name)
{
  if (scratch_dir == NULL) {
    gchar *template = g_file_test ("/dev/shm", G_FILE_TEST_IS_DIR)
        ? g_strdup ("/dev/shm/gst-train-fuzz-XXXXXX")
        : g_build_filename (g_get_tmp_dir (), "gst-train-fuzz-XXXXXX", NULL);

    if (g_mkdtemp (template) == NULL) {
      g_free (template);
      template =
          g_build_filename (g_get_tmp_dir (), "gst-train-fuzz-XXXXXX", NULL);
      if (g_mkdtemp (template) == NULL)
        fuzz_fail (__FILE__, __LINE__, "cannot make a scratch folder");
    }
    scratch_dir = template;
    atexit (remove_scratch_dir);
  }
  return g_build_filename (scratch_dir, name, NULL);
}

void
fuzz_write_file (const char *path, const uint8_t *data, size_t size)
{
  GError *error = NULL;

  if (!g_file_set_contents (path, (const gchar *)data, (gssize)size, &error)) {
    fprintf (stderr, "%s\n", error->message);
    fuzz_fail (__FILE__, __LINE__, "cannot write a scratch file");
  }
}
