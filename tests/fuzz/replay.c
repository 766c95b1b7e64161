/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* replay.c: a main() for the fuzz targets without libFuzzer: feeds every
 * file of the folders (or the files) named on the command line to
 * LLVMFuzzerTestOneInput, in name order, so that the normal build (gcc, and
 * its ASan build) replays the committed corpora and regressions. A path that
 * does not exist is passed over (a target without regressions has no folder
 * for them); replaying no input at all fails.
 *
 *   fuzz-replay-jpeg tests/fuzz/corpus/jpeg tests/fuzz/regressions/jpeg
 */
#include "fuzz-scratch.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* AddressSanitizer reserves terabytes of address space for its shadow. */
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif

/* libFuzzer fails an input that makes the code allocate more than 2 GiB
 * (-malloc_limit_mb); without it, a limit on the address space makes such
 * an allocation fail where a target can see it. */
#define REPLAY_ADDRESS_SPACE_LIMIT ((rlim_t)2 << 30)

static gint
compare_names (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const gchar *const *)a, *(const gchar *const *)b);
}

static void
replay_file (const char *path)
{
  gchar *contents = NULL;
  gsize length = 0;
  GError *error = NULL;
  uint8_t *copy;

  if (!g_file_get_contents (path, &contents, &length, &error)) {
    fprintf (stderr, "replay: %s\n", error->message);
    fuzz_fail (__FILE__, __LINE__, "cannot read an input");
  }
  /* A copy of exactly the input's size, as libFuzzer passes it, so that
   * AddressSanitizer sees a read past the end. */
  copy = g_malloc (length > 0 ? length : 1);
  memcpy (copy, contents, length);
  g_free (contents);
  LLVMFuzzerTestOneInput (copy, length);
  g_free (copy);
}

/* Replays @path, a file or every file in a folder; returns how many. */
static guint
replay_path (const char *path)
{
  GPtrArray *names;
  const gchar *name;
  GDir *dir;
  guint i;

  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    return 0;
  if (!g_file_test (path, G_FILE_TEST_IS_DIR)) {
    replay_file (path);
    return 1;
  }
  dir = g_dir_open (path, 0, NULL);
  if (dir == NULL)
    fuzz_fail (__FILE__, __LINE__, "cannot read a corpus folder");
  names = g_ptr_array_new_with_free_func (g_free);
  while ((name = g_dir_read_name (dir)) != NULL)
    g_ptr_array_add (names, g_build_filename (path, name, NULL));
  g_dir_close (dir);
  g_ptr_array_sort (names, compare_names);
  for (i = 0; i < names->len; i++)
    replay_file (g_ptr_array_index (names, i));
  i = names->len;
  g_ptr_array_unref (names);
  return i;
}

int
main (int argc, char **argv)
{
  guint total = 0;
  int i;

#ifndef HAVE_ASAN
  {
    struct rlimit limit = { REPLAY_ADDRESS_SPACE_LIMIT,
      REPLAY_ADDRESS_SPACE_LIMIT };

    setrlimit (RLIMIT_AS, &limit);
  }
#endif
  for (i = 1; i < argc; i++) {
    guint n = replay_path (argv[i]);

    printf ("replayed %u input%s from %s\n", n, n == 1 ? "" : "s", argv[i]);
    total += n;
  }
  /* A replay of nothing tested nothing. */
  if (total == 0) {
    fprintf (stderr, "replay: no inputs\n");
    return 1;
  }
  return 0;
}
