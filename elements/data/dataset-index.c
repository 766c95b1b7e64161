/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dataset-index.c: ImageFolder and list-file datasets, as in dataset-index.h.
 *
 * The ImageFolder rules are torchvision's: every sub-folder of the root is a
 * class (hidden ones too), classes sorted by name in code-point order (so
 * "B" comes before "a"), and inside a class every file of every nested folder,
 * folders visited in sorted path order and files sorted by name. Sorting UTF-8
 * bytes with strcmp() gives exactly Python's code-point order. One exception:
 * a symbolic link to a folder's own parent is not followed (torchvision
 * follows it until the path gets too long, listing the same files again at
 * every level).
 */
#include "dataset-index.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

G_DEFINE_QUARK (gst - train - dataset - error - quark, gst_train_dataset_error);

static gint
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const gchar *const *)a, *(const gchar *const *)b);
}

gchar **
gst_train_dataset_parse_extensions (const gchar *list)
{
  gchar **parts = g_strsplit (list ? list : "", ",", -1);
  GPtrArray *out = g_ptr_array_new ();
  guint i;

  for (i = 0; parts[i] != NULL; i++) {
    gchar *ext = g_strstrip (parts[i]);

    /* Spaces after the dot too: ". png" means "png", not " png". */
    while (*ext == '.' || g_ascii_isspace (*ext))
      ext++;
    if (*ext != '\0')
      g_ptr_array_add (out, g_ascii_strdown (ext, -1));
  }
  g_strfreev (parts);
  g_ptr_array_add (out, NULL);
  return (gchar **)g_ptr_array_free (out, FALSE);
}

static gboolean
has_extension (const gchar *name, const gchar *const *extensions)
{
  gsize len = strlen (name);
  guint i;

  if (extensions == NULL || extensions[0] == NULL)
    return TRUE;
  for (i = 0; extensions[i] != NULL; i++) {
    gsize ext_len = strlen (extensions[i]);

    if (len > ext_len + 1 && name[len - ext_len - 1] == '.'
        && g_ascii_strcasecmp (name + len - ext_len, extensions[i]) == 0)
      return TRUE;
  }
  return FALSE;
}

static gboolean
is_directory (const gchar *path)
{
  struct stat st;

  /* stat() follows symbolic links, as os.scandir().is_dir() and
   * os.walk(followlinks=True) do. */
  return stat (path, &st) == 0 && S_ISDIR (st.st_mode);
}

/* Sorted names of the entries of @dir; NULL with @error set if unreadable. */
static GPtrArray *
list_sorted (const gchar *dir, GError **error)
{
  GDir *d = g_dir_open (dir, 0, error);
  GPtrArray *names;
  const gchar *name;

  if (d == NULL)
    return NULL;
  names = g_ptr_array_new_with_free_func (g_free);
  while ((name = g_dir_read_name (d)) != NULL)
    g_ptr_array_add (names, g_strdup (name));
  g_dir_close (d);
  g_ptr_array_sort (names, compare_strings);
  return names;
}

/* A folder as stat() names it, whatever path led to it. */
typedef struct
{
  dev_t dev;
  ino_t ino;
} FolderId;

/* Collects every folder under @dir (itself included) into @dirs, but not a
 * folder that is one of its own @ancestors (reached through a symbolic link
 * to a parent), as find -L does: two such links in one folder would make
 * the walk take 2^depth steps. */
static void
collect_dirs (const gchar *dir, GPtrArray *dirs, GArray *ancestors)
{
  GPtrArray *names;
  struct stat st;
  FolderId id;
  guint i;

  if (stat (dir, &st) != 0)
    return;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  for (i = 0; i < ancestors->len; i++) {
    FolderId *ancestor = &g_array_index (ancestors, FolderId, i);

    if (ancestor->dev == id.dev && ancestor->ino == id.ino)
      return;
  }
  g_ptr_array_add (dirs, g_strdup (dir));
  /* Links to folders outside can still nest paths deeply; torchvision would
   * go on until the path is too long, we stop at a depth no real dataset
   * reaches. */
  if (ancestors->len > 64)
    return;
  names = list_sorted (dir, NULL);
  if (names == NULL)
    return;
  g_array_append_val (ancestors, id);
  for (i = 0; i < names->len; i++) {
    gchar *child = g_build_filename (dir, g_ptr_array_index (names, i), NULL);

    if (is_directory (child))
      collect_dirs (child, dirs, ancestors);
    g_free (child);
  }
  g_array_set_size (ancestors, ancestors->len - 1);
  g_ptr_array_unref (names);
}

static void
add_entry (GstTrainDatasetIndex *index, gchar *path, gint label)
{
  GstTrainDatasetEntry entry = { path, label };

  g_array_append_val (index->entries, entry);
}

static void
clear_entry (gpointer data)
{
  g_free (((GstTrainDatasetEntry *)data)->path);
}

static GstTrainDatasetIndex *
index_new (void)
{
  GstTrainDatasetIndex *index = g_new0 (GstTrainDatasetIndex, 1);

  index->class_names = g_ptr_array_new_with_free_func (g_free);
  index->empty_classes = g_ptr_array_new_with_free_func (g_free);
  index->entries = g_array_new (FALSE, FALSE, sizeof (GstTrainDatasetEntry));
  g_array_set_clear_func (index->entries, clear_entry);
  return index;
}

static gboolean
load_image_folder (GstTrainDatasetIndex *index, const gchar *root,
    const gchar *const *extensions, GError **error)
{
  GPtrArray *names;
  GError *err = NULL;
  guint i, j, k;

  names = list_sorted (root, &err);
  if (names == NULL) {
    g_set_error (error, GST_TRAIN_DATASET_ERROR,
        GST_TRAIN_DATASET_ERROR_UNREADABLE,
        "Could not read dataset folder \"%s\": %s", root, err->message);
    g_error_free (err);
    return FALSE;
  }

  for (i = 0; i < names->len; i++) {
    const gchar *name = g_ptr_array_index (names, i);
    gchar *class_dir = g_build_filename (root, name, NULL);

    if (is_directory (class_dir)) {
      g_ptr_array_add (index->class_names, g_strdup (name));
    }
    g_free (class_dir);
  }
  g_ptr_array_unref (names);

  if (index->class_names->len == 0) {
    g_set_error (error, GST_TRAIN_DATASET_ERROR, GST_TRAIN_DATASET_ERROR_EMPTY,
        "Dataset folder \"%s\" has no class sub-folders (ImageFolder layout "
        "expects one folder per class)",
        root);
    return FALSE;
  }

  for (i = 0; i < index->class_names->len; i++) {
    const gchar *name = g_ptr_array_index (index->class_names, i);
    gchar *class_dir = g_build_filename (root, name, NULL);
    GPtrArray *dirs = g_ptr_array_new_with_free_func (g_free);
    GArray *ancestors = g_array_new (FALSE, FALSE, sizeof (FolderId));
    guint before = index->entries->len;

    collect_dirs (class_dir, dirs, ancestors);
    g_array_unref (ancestors);
    /* os.walk() results sorted by their folder path. */
    g_ptr_array_sort (dirs, compare_strings);
    for (j = 0; j < dirs->len; j++) {
      const gchar *dir = g_ptr_array_index (dirs, j);
      GPtrArray *files = list_sorted (dir, NULL);

      if (files == NULL)
        continue;
      for (k = 0; k < files->len; k++) {
        const gchar *file = g_ptr_array_index (files, k);
        gchar *path;

        if (!has_extension (file, extensions))
          continue;
        path = g_build_filename (dir, file, NULL);
        if (is_directory (path)) {
          g_free (path);
          continue;
        }
        add_entry (index, path, (gint)i);
      }
      g_ptr_array_unref (files);
    }
    if (index->entries->len == before)
      g_ptr_array_add (index->empty_classes, g_strdup (name));
    g_ptr_array_unref (dirs);
    g_free (class_dir);
  }
  return TRUE;
}

static gboolean
load_list_file (
    GstTrainDatasetIndex *index, const gchar *list_path, GError **error)
{
  gchar *contents = NULL, *base_dir;
  gsize length;
  gchar **lines;
  GError *err = NULL;
  gint max_label = -1;
  guint i;
  gboolean ok = TRUE;

  if (!g_file_get_contents (list_path, &contents, &length, &err)) {
    g_set_error (error, GST_TRAIN_DATASET_ERROR,
        GST_TRAIN_DATASET_ERROR_UNREADABLE,
        "Could not read dataset list file \"%s\": %s", list_path, err->message);
    g_error_free (err);
    return FALSE;
  }
  if (memchr (contents, '\0', length) != NULL) {
    g_set_error (error, GST_TRAIN_DATASET_ERROR,
        GST_TRAIN_DATASET_ERROR_BAD_LINE,
        "Dataset list file \"%s\" is not a text file", list_path);
    g_free (contents);
    return FALSE;
  }

  base_dir = g_path_get_dirname (list_path);
  lines = g_strsplit (contents, "\n", -1);
  for (i = 0; lines[i] != NULL; i++) {
    gchar *line = lines[i];
    gchar *tab, *label_text, *end;
    gint64 label;
    gsize len = strlen (line);

    if (len > 0 && line[len - 1] == '\r')
      line[len - 1] = '\0';
    if (line[0] == '\0' || line[0] == '#')
      continue;
    tab = strrchr (line, '\t');
    if (tab == NULL || tab == line) {
      g_set_error (error, GST_TRAIN_DATASET_ERROR,
          GST_TRAIN_DATASET_ERROR_BAD_LINE,
          "%s:%u: expected \"relative/path<TAB>label\", got \"%s\"", list_path,
          i + 1, line);
      ok = FALSE;
      break;
    }
    *tab = '\0';
    label_text = tab + 1;
    errno = 0;
    label = g_ascii_strtoll (label_text, &end, 10);
    if (label_text[0] == '\0' || *end != '\0' || errno != 0 || label < 0
        || label >= GST_TRAIN_DATASET_MAX_CLASSES) {
      g_set_error (error, GST_TRAIN_DATASET_ERROR,
          GST_TRAIN_DATASET_ERROR_BAD_LINE,
          "%s:%u: label \"%s\" is not an integer in [0, %d)", list_path, i + 1,
          label_text, GST_TRAIN_DATASET_MAX_CLASSES);
      ok = FALSE;
      break;
    }
    if (g_path_is_absolute (line))
      add_entry (index, g_strdup (line), (gint)label);
    else
      add_entry (index, g_build_filename (base_dir, line, NULL), (gint)label);
    max_label = MAX (max_label, (gint)label);
  }
  g_strfreev (lines);
  g_free (base_dir);
  g_free (contents);

  if (ok) {
    /* A list file has no class names: a class is called by its label. */
    for (i = 0; i < (guint)(max_label + 1); i++)
      g_ptr_array_add (index->class_names, g_strdup_printf ("%u", i));
  }
  return ok;
}

GstTrainDatasetIndex *
gst_train_dataset_index_load (
    const gchar *location, const gchar *const *extensions, GError **error)
{
  GstTrainDatasetIndex *index;
  struct stat st;
  gboolean ok;

  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (location == NULL || location[0] == '\0') {
    g_set_error (error, GST_TRAIN_DATASET_ERROR,
        GST_TRAIN_DATASET_ERROR_NOT_FOUND, "No dataset location given");
    return NULL;
  }
  if (stat (location, &st) != 0) {
    g_set_error (error, GST_TRAIN_DATASET_ERROR,
        errno == ENOENT || errno == ENOTDIR
            ? GST_TRAIN_DATASET_ERROR_NOT_FOUND
            : GST_TRAIN_DATASET_ERROR_UNREADABLE,
        "Dataset location \"%s\" %s: %s", location,
        errno == ENOENT ? "does not exist" : "cannot be read",
        g_strerror (errno));
    return NULL;
  }

  index = index_new ();
  if (S_ISDIR (st.st_mode))
    ok = load_image_folder (index, location, extensions, error);
  else
    ok = load_list_file (index, location, error);

  if (ok && index->entries->len == 0) {
    g_set_error (error, GST_TRAIN_DATASET_ERROR, GST_TRAIN_DATASET_ERROR_EMPTY,
        "Dataset \"%s\" holds no samples%s", location,
        S_ISDIR (st.st_mode) ? " with the accepted file extensions" : "");
    ok = FALSE;
  }
  if (!ok) {
    gst_train_dataset_index_free (index);
    return NULL;
  }
  return index;
}

void
gst_train_dataset_index_free (GstTrainDatasetIndex *index)
{
  if (index == NULL)
    return;
  g_ptr_array_unref (index->class_names);
  g_ptr_array_unref (index->empty_classes);
  g_array_unref (index->entries);
  g_free (index);
}
