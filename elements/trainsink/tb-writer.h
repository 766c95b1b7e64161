/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tb-writer.h: TensorBoard event files, as TensorFlow's and PyTorch's
 * summary writers write them: a file events.out.tfevents.TIME.HOST.PID in
 * a log folder, a TFRecord stream of Event protocol buffers whose first
 * is the file version, then scalars, each an Event with a one-value
 * Summary and the step as x.
 *
 * GLib only (no GStreamer), below cudatrainsink's report code, which
 * decides what goes in (gstcudatrainsink-report.c). Events are queued in
 * memory and written by tb_writer_flush, so that a running TensorBoard
 * sees whole records only, as often as the caller flushes. */
#ifndef __TB_WRITER_H__
#define __TB_WRITER_H__

#include <glib.h>

G_BEGIN_DECLS

typedef struct _TbWriter TbWriter;

/* Creates @logdir (with its parents) and a new event file in it whose
 * first record, the file_version event, is written at once; NULL, with
 * @error naming the folder or the file and the OS reason, when either
 * cannot be made or written. The time in the file's name is now, or one
 * second past the newest event file already in @logdir when that is not
 * older: TensorBoard reads a folder's files in the order of their names,
 * and a run that goes on in a new file must be read last. */
TbWriter *tb_writer_new (const gchar *logdir, GError **error);

/* The event file's path. */
const gchar *tb_writer_get_path (const TbWriter *writer);

/* Queues the event that tells TensorBoard a run starts again at @step:
 * whatever the files read before this one hold at @step or later belongs to
 * a run that this one replaces, and TensorBoard drops it (a SessionLog
 * START event, what SummaryWriter(purge_step=) writes). */
void tb_writer_add_restart (TbWriter *writer, gint64 step);

/* Queues a scalar: @value (stored as a float, as TensorBoard's scalars
 * are) under @tag at @step. */
void tb_writer_add_scalar (
    TbWriter *writer, const gchar *tag, gint64 step, gdouble value);

/* Writes the queued events to the file. FALSE, with @error naming the file
 * and the OS reason, when the file could not take them all (a full disk):
 * they are dropped, and the file is cut back to its last whole record, so
 * that it stays readable and the next flush can add to it again. */
gboolean tb_writer_flush (TbWriter *writer, GError **error);

/* Closes the file, dropping what was not flushed. */
void tb_writer_free (TbWriter *writer);

/* CRC-32C (Castagnoli) of @length bytes at @data, as TFRecord framing
 * uses it; and that CRC masked as TFRecord stores it. */
guint32 tb_crc32c (gconstpointer data, gsize length);
guint32 tb_masked_crc32c (gconstpointer data, gsize length);

G_END_DECLS

#endif /* __TB_WRITER_H__ */
