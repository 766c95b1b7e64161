/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-strings.c: the small string parsers of ours that take text from a
 * user: datasetsrc's extensions property
 * (gst_train_dataset_parse_extensions), gst-train-dataset's --class-names
 * (parse_class_names) and the launcher variables that pick a process's
 * rank and shard (common/gt-launcher.h). The input, up to its first NUL,
 * is given to each.
 */
#include "dataset-index.h"
#include "fuzz-scratch.h"
#include "gt-launcher.h"
#include "idx-reader.h"

#include <stdlib.h>
#include <string.h>

static void
check_extensions (const gchar *text)
{
  gchar **extensions = gst_train_dataset_parse_extensions (text);
  guint i;

  FUZZ_CHECK (extensions != NULL, "no extension list");
  for (i = 0; extensions[i] != NULL; i++) {
    const gchar *ext = extensions[i];
    gchar *lower = g_ascii_strdown (ext, -1);

    FUZZ_CHECK (ext[0] != '\0' && ext[0] != '.', "an empty or dotted suffix");
    FUZZ_CHECK (strchr (ext, ',') == NULL, "a comma in a suffix");
    FUZZ_CHECK (strcmp (lower, ext) == 0, "an upper-case suffix");
    FUZZ_CHECK (
        !g_ascii_isspace (ext[0]) && !g_ascii_isspace (ext[strlen (ext) - 1]),
        "a suffix with spaces around it");
    g_free (lower);
  }
  g_strfreev (extensions);
}

static void
check_class_names (const gchar *text)
{
  GError *error = NULL;
  char **names = NULL;
  guint i, n;

  if (!parse_class_names (text, &names, &error)) {
    FUZZ_CHECK (error != NULL && names == NULL, "a failure without a reason");
    g_error_free (error);
    return;
  }
  n = g_strv_length (names);
  FUZZ_CHECK (n >= 1 && n <= 256, "a class count uint8 labels cannot hold");
  for (i = 0; i < n; i++) {
    const char *c;

    FUZZ_CHECK (names[i][0] != '\0', "an empty class name");
    for (c = names[i]; *c != '\0'; c++)
      FUZZ_CHECK (*c != '/' && *c != ',' && (guchar)*c >= 0x20 && *c != 0x7f,
          "a class name that cannot be a folder name");
  }
  g_strfreev (names);
}

/* The environment entries the launcher checks read, "NAME=value" in
 * buffers of ours: putenv() keeps the buffer itself, where setenv() would
 * leak a copy of every input. */
#define MAX_VALUE 4096
static char fuzz_int_entry[32 + MAX_VALUE];
static char rank_entry[32 + MAX_VALUE];
static char local_rank_entry[32 + MAX_VALUE];
static char size_entry[] = "OMPI_COMM_WORLD_SIZE=8";

static void
set_entry (char *entry, size_t entry_size, const char *name, const char *value)
{
  g_snprintf (entry, entry_size, "%s=%.*s", name, MAX_VALUE, value);
  putenv (entry);
}

/* gt_launcher_env_int against strtol's own verdict, then as a rank. */
static void
check_launcher (const gchar *text)
{
  GtLauncherPosition position;
  const char *value;
  long want = -1;
  char *end;
  int got;

  set_entry (
      fuzz_int_entry, sizeof (fuzz_int_entry), "GST_TRAIN_FUZZ_INT", text);
  value = strchr (fuzz_int_entry, '=') + 1;
  got = gt_launcher_env_int ("GST_TRAIN_FUZZ_INT");
  if (value[0] != '\0') {
    want = strtol (value, &end, 10);
    if (*end != '\0' || want < 0 || want > 1 << 24)
      want = -1;
  }
  FUZZ_CHECK (got == want, "gt_launcher_env_int disagrees with strtol");

  set_entry (rank_entry, sizeof (rank_entry), "OMPI_COMM_WORLD_RANK", text);
  set_entry (local_rank_entry, sizeof (local_rank_entry),
      "OMPI_COMM_WORLD_LOCAL_RANK", text);
  putenv (size_entry);
  if (gt_launcher_position (&position))
    FUZZ_CHECK (position.rank >= 0 && position.rank < position.size
            && position.local_rank >= 0,
        "a launcher position outside the job");
  else
    FUZZ_CHECK (position.rank == 0 && position.size == 1,
        "no launcher but not a single process");
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  gchar *text = g_strndup ((const gchar *)data, size);

  check_extensions (text);
  check_class_names (text);
  check_launcher (text);
  g_free (text);
  return 0;
}
