/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* datasetsrc-resume.c: the exact resume both of datasetsrc's modes take
 * (see gstdatasetsrc.c's "Starting half-way: exact resume"): where to
 * start, start-position plus the samples downstream says it already has
 * (asked once with the resume query), and which samples before the end of
 * the re-read window downstream still holds. Below the mode files; it
 * calls nothing in them or in the element's file. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "datasetsrc-private.h"

/* @base + @offset, or G_MAXUINT64 (past any end) when that overflows. */
static guint64
gst_dataset_src_offset_position (guint64 base, guint64 offset)
{
  guint64 place;

  return g_uint64_checked_add (&place, base, offset) ? place : G_MAXUINT64;
}

guint64
gst_dataset_src_ask_resume (GstDatasetSrc *src)
{
  GstQuery *query = gst_train_resume_query_new ();
  guint64 base = src->settings.start_position, start = base, asked;
  guint i;

  if (gst_pad_peer_query (GST_BASE_SRC_PAD (src), query)
      && gst_train_resume_query_parse (query, &asked, NULL, NULL)) {
    /* The answer counts the samples downstream has of the stream this
     * source pushes, which begins at start-position. */
    start = gst_dataset_src_offset_position (base, asked);
    /* the tests and scripts read this line's start */
    GST_INFO_OBJECT (src,
        "downstream resumes: starting at sample %" G_GUINT64_FORMAT
        " of the sequence (start-position %" G_GUINT64_FORMAT
        " + the %" G_GUINT64_FORMAT " samples answered)",
        start, base, asked);
    src->keep =
        gst_train_resume_query_get_keep (query, &src->n_keep, &src->keep_end);
    src->next_keep = 0;
    if (src->keep != NULL) {
      for (i = 0; i < src->n_keep; i++)
        src->keep[i] = gst_dataset_src_offset_position (base, src->keep[i]);
      src->keep_end = gst_dataset_src_offset_position (base, src->keep_end);
      GST_INFO_OBJECT (src,
          "of the %" G_GUINT64_FORMAT " samples up to %" G_GUINT64_FORMAT
          ", reading only the %u downstream still holds",
          src->keep_end - start, src->keep_end, src->n_keep);
    }
  }
  gst_query_unref (query);
  return start;
}

gboolean
gst_dataset_src_wanted (GstDatasetSrc *src, guint64 place)
{
  if (src->keep == NULL)
    return TRUE;
  if (place >= src->keep_end) {
    g_clear_pointer (&src->keep, g_free);
    return TRUE;
  }
  if (src->next_keep < src->n_keep && src->keep[src->next_keep] == place) {
    src->next_keep++;
    return TRUE;
  }
  return FALSE;
}
