/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* idx-reader.h: what gst-train-dataset reads: IDX files of uint8 data
 * (plain or gzip) and its --class-names list.
 *
 * Apart from the tool's main() so that the fuzzers (tests/fuzz/fuzz-idx.c,
 * fuzz-strings.c) link the same code. GLib and zlib only.
 */
#ifndef GST_TRAIN_IDX_READER_H
#define GST_TRAIN_IDX_READER_H

#include <glib.h>

G_BEGIN_DECLS

#define DATASET_ERROR (dataset_error_quark ())

GQuark dataset_error_quark (void);

enum
{
  DATASET_ERROR_FAILED,
};

/* One IDX file, fully loaded and checked. */
typedef struct
{
  char *path;
  gboolean gzip;
  guint32 count;
  guint32 rows;
  guint32 cols;
  guint32 channels;
  guint8 *data;
} IdxFile;

/* Loads the IDX file at @path into @f (which it overwrites) and checks its
 * header against its data: @want_images accepts (N, rows, cols) or (N, rows,
 * cols, 1|3), else only labels (N). FALSE with a message naming the path
 * and the problem in @error otherwise. Either way the caller frees @f with
 * idx_file_clear(). */
gboolean idx_load (
    IdxFile *f, const char *path, gboolean want_images, GError **error);

/* Frees what @f holds and zeroes it. */
void idx_file_clear (IdxFile *f);

/* Splits the --class-names argument "a,b,c" into names, at most 256 (uint8
 * labels), none empty or holding '/' or a control character (they become
 * folder names). FALSE with @error set otherwise; free with g_strfreev(). */
gboolean parse_class_names (const char *arg, char ***names_out, GError **error);

G_END_DECLS

#endif /* GST_TRAIN_IDX_READER_H */
