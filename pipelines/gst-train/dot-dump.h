/* dot-dump.h: graphviz dot dumps of the pipeline: one to look at, with the
 * properties that differ from their defaults, and one with every property.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef GST_TRAIN_APP_DOT_DUMP_H
#define GST_TRAIN_APP_DOT_DUMP_H

#include <gst/gst.h>

typedef struct
{
  /* the folder (--dot-dir), NULL: no dumps */
  const gchar *dir;
  /* the dumps written so far: the number of the next */
  gint count;
} DotDumps;

/* Writes DIR/NNNN-@name.dot, the bin @pipeline with the properties that
 * differ from each element's defaults (a long chain in two rows), and
 * DIR/NNNN-@name.full.dot, with every property and state; a failure is
 * said on stderr. Nothing without a folder. */
void dot_dumps_write (DotDumps *dumps, GstElement *pipeline, const gchar *name);

#endif
