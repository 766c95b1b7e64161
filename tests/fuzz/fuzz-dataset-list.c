/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-dataset-list.c: datasetsrc's dataset index (elements/data/dataset-index.c)
 * on arbitrary bytes, in one of two shapes chosen by the first byte:
 *
 * - 'T': the rest describes an ImageFolder tree, made in a scratch folder
 *   and then loaded. Its first line is the extensions list, as the
 *   element's property gives it; each other line is "dir/", "file", or
 *   "link -> target" (a symbolic link, relative, that stays in the tree),
 *   with at most 64 entries, 6 levels, names of 40 bytes and 4 links.
 *   More links could make a tree of 2^N paths without a loop: an honest
 *   listing of that is slow, and no bug.
 * - anything else: the rest is a list file ("path<TAB>label" lines).
 *
 * An index it returns must be non-empty, with every label naming a class.
 */
#include "dataset-index.h"
#include "fuzz-scratch.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_TREE_ENTRIES 64
#define MAX_TREE_DEPTH 6
#define MAX_NAME_LENGTH 40
#define MAX_TREE_LINKS 4

static void
check_index (GstTrainDatasetIndex *index, GError *error, const char *root)
{
  guint i;

  if (index == NULL) {
    FUZZ_CHECK (error != NULL && error->message[0] != '\0',
        "a failure without a reason");
    g_error_free (error);
    return;
  }
  FUZZ_CHECK (error == NULL, "an error on success");
  FUZZ_CHECK (index->entries->len > 0, "an empty dataset accepted");
  for (i = 0; i < index->entries->len; i++) {
    GstTrainDatasetEntry *entry =
        &g_array_index (index->entries, GstTrainDatasetEntry, i);

    FUZZ_CHECK (entry->path != NULL, "an entry without a path");
    FUZZ_CHECK (
        entry->label >= 0 && (guint)entry->label < index->class_names->len,
        "a label without a class");
    FUZZ_CHECK (root == NULL || g_str_has_prefix (entry->path, root),
        "a tree entry outside the tree");
  }
  FUZZ_CHECK (index->empty_classes->len < index->class_names->len,
      "every class empty, yet samples");
  gst_train_dataset_index_free (index);
}

/* TRUE when @path is 1 .. MAX_TREE_DEPTH plain names ("." and ".." are not
 * names here); *@depth gets their count. */
static gboolean
is_plain_path (const char *path, guint *depth)
{
  gchar **parts = g_strsplit (path, "/", -1);
  gboolean ok = parts[0] != NULL;
  guint i;

  for (i = 0; ok && parts[i] != NULL; i++)
    ok = parts[i][0] != '\0' && strlen (parts[i]) <= MAX_NAME_LENGTH
        && strcmp (parts[i], ".") != 0 && strcmp (parts[i], "..") != 0;
  *depth = i;
  g_strfreev (parts);
  return ok && i <= MAX_TREE_DEPTH;
}

/* TRUE when @target, relative to a link @depth levels below the root, stays
 * in the tree: some "../" (into the root at most) and then ".", ".." or a
 * plain path. No ".." after a name: the name could be a link, and ".."
 * would then climb from where the link leads. */
static gboolean
is_tree_target (const char *target, guint depth)
{
  guint ups = 0, ignored;

  while (g_str_has_prefix (target, "../")) {
    target += 3;
    ups++;
  }
  if (strcmp (target, "..") == 0) {
    ups++;
    target = ".";
  }
  /* The link's folder is @depth - 1 levels below the root. */
  if (ups + 1 > depth)
    return FALSE;
  return strcmp (target, ".") == 0 || is_plain_path (target, &ignored);
}

/* TRUE when a folder on the way from @root to @name is a symbolic link:
 * an entry made through it would not be where its name says, and the
 * checks on its target would not hold. */
static gboolean
has_link_above (const char *root, const char *name)
{
  gchar *path = g_build_filename (root, name, NULL);
  gsize root_length = strlen (root);
  gboolean found = FALSE;
  gchar *slash;

  while (!found && (slash = strrchr (path, '/')) != NULL
      && (gsize)(slash - path) > root_length) {
    *slash = '\0';
    found = g_file_test (path, G_FILE_TEST_IS_SYMLINK);
  }
  g_free (path);
  return found;
}

static void
make_tree_entry (const char *root, const char *line, guint *links)
{
  const char *arrow = strstr (line, " -> ");
  gchar *name, *path, *parent;
  guint depth;
  gboolean is_dir;

  name = arrow != NULL ? g_strndup (line, arrow - line) : g_strdup (line);
  is_dir = arrow == NULL && g_str_has_suffix (name, "/");
  if (is_dir)
    name[strlen (name) - 1] = '\0';
  if (!is_plain_path (name, &depth) || has_link_above (root, name)) {
    g_free (name);
    return;
  }
  path = g_build_filename (root, name, NULL);
  parent = g_path_get_dirname (path);
  g_mkdir_with_parents (parent, 0755);
  if (is_dir)
    g_mkdir_with_parents (path, 0755);
  else if (arrow != NULL && *links < MAX_TREE_LINKS
      && is_tree_target (arrow + 4, depth) && symlink (arrow + 4, path) == 0)
    (*links)++;
  else if (arrow == NULL)
    g_file_set_contents (path, "", 0, NULL);
  g_free (parent);
  g_free (path);
  g_free (name);
}

static void
fuzz_tree (const char *text)
{
  static gchar *root;
  gchar **lines = g_strsplit (text, "\n", MAX_TREE_ENTRIES + 2);
  gchar **extensions = NULL;
  GError *error = NULL;
  GstTrainDatasetIndex *index;
  guint i, links = 0;

  if (root == NULL)
    root = fuzz_scratch_path ("tree");
  fuzz_remove_tree (root);
  g_mkdir (root, 0755);
  for (i = 0; lines[i] != NULL; i++) {
    if (i == 0)
      extensions = gst_train_dataset_parse_extensions (lines[0]);
    else if (i <= MAX_TREE_ENTRIES)
      make_tree_entry (root, lines[i], &links);
  }
  g_strfreev (lines);

  index = gst_train_dataset_index_load (
      root, (const gchar *const *)extensions, &error);
  check_index (index, error, root);
  g_strfreev (extensions);
  fuzz_remove_tree (root);
}

static void
fuzz_list_file (const uint8_t *data, size_t size)
{
  static gchar *path;
  GError *error = NULL;
  GstTrainDatasetIndex *index;

  if (path == NULL)
    path = fuzz_scratch_path ("list.txt");
  fuzz_write_file (path, data, size);
  index = gst_train_dataset_index_load (path, NULL, &error);
  check_index (index, error, NULL);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size == 0)
    return 0;
  if (data[0] == 'T') {
    gchar *text = g_strndup ((const gchar *)data + 1, size - 1);

    fuzz_tree (text);
    g_free (text);
  } else {
    fuzz_list_file (data + 1, size - 1);
  }
  return 0;
}
