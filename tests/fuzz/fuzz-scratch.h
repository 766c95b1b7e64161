/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-scratch.h: what the fuzz targets share: a private scratch folder for
 * the inputs that our code only reads from files, and a check that stops
 * the run (a crash for libFuzzer, a failure for the replay) when a parser
 * hands back something that breaks its own contract.
 */
#ifndef GST_TRAIN_FUZZ_SCRATCH_H
#define GST_TRAIN_FUZZ_SCRATCH_H

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* libFuzzer's entry point, which every target defines and replay.c calls. */
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Aborts with @what when @condition is false. */
#define FUZZ_CHECK(condition, what)                                            \
  G_STMT_START                                                                 \
  {                                                                            \
    if (!(condition))                                                          \
      fuzz_fail (__FILE__, __LINE__, (what));                                  \
  }                                                                            \
  G_STMT_END

G_NORETURN void fuzz_fail (const char *file, int line, const char *what);

/* The path of @name inside this process's scratch folder (in /dev/shm when
 * there is one: files there cost no disk writes), made on first use and
 * removed at exit. */
gchar *fuzz_scratch_path (const char *name);

/* Writes @size bytes to @path, replacing it; aborts when it cannot. */
void fuzz_write_file (const char *path, const uint8_t *data, size_t size);

/* Removes @path and, for a folder, all it holds, never following a
 * symbolic link. */
void fuzz_remove_tree (const char *path);

G_END_DECLS

#endif /* GST_TRAIN_FUZZ_SCRATCH_H */
