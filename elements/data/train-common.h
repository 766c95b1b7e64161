/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-common.h: small types several gst-train elements share. */
#ifndef __GST_TRAIN_COMMON_H__
#define __GST_TRAIN_COMMON_H__

#include <gst/gst.h>

#include "train-meta.h"

G_BEGIN_DECLS

/* What an element does with one bad sample (an unreadable file, a corrupt
 * JPEG): warn, count and drop it, or fail the pipeline. */
typedef enum
{
  GST_TRAIN_ON_ERROR_SKIP,
  GST_TRAIN_ON_ERROR_FAIL,
} GstTrainOnError;

GType gst_train_on_error_get_type (void);
#define GST_TYPE_TRAIN_ON_ERROR (gst_train_on_error_get_type ())

/* An element's on-error policy and its count of the samples it dropped.
 * Kept under the element's object lock: on-error and max-errors may change
 * while the element plays. */
typedef struct
{
  GstTrainOnError on_error;
  /* The element has a max-errors property: warnings say how many samples
   * were skipped so far, and more than @max_errors skips (-1 = no bound)
   * stop the stream. */
  gboolean bounded;
  gint max_errors;
  guint64 skipped;
  /* The samples already reported, by key (their file): a later epoch drops
   * them again without a second warning and without counting them again.
   * Created at the first report. */
  GHashTable *reported;
} GstTrainBadSamples;

/* Forgets the samples reported and the count: a new run starts. Call under
 * the element's object lock. */
void gst_train_bad_samples_reset (GstTrainBadSamples *bad);

/* Frees what @bad holds (at finalize). */
void gst_train_bad_samples_clear (GstTrainBadSamples *bad);

/* Reports a sample that @element could not use, as @bad's on-error says
 * (read, and the skip counted, under @element's object lock): an error
 * @fail_text (on-error=fail), or a warning @skip_text and, past max-errors,
 * an error "Too many samples did not @verb". A sample whose @key (see
 * gst_train_sample_key(); NULL = not known) was reported before is dropped
 * with no message on the bus, and not counted again: a bad file stays bad
 * every epoch. Every skip, repeated ones too, is logged at WARNING level (a
 * failure at ERROR) in the element's debug category. Both texts are taken.
 * Returns
 * GST_FLOW_OK when the sample is dropped and the stream goes on,
 * GST_FLOW_ERROR when an error was posted. A macro, so that the messages
 * name the element's own source line and the log its GST_CAT_DEFAULT. */
#define gst_train_report_bad_sample(                                           \
    element, bad, key, domain, code, verb, fail_text, skip_text)               \
  gst_train_report_bad_sample_full (GST_ELEMENT (element), (bad), (key),       \
      (domain), (code), (verb), (fail_text), (skip_text), GST_CAT_DEFAULT,     \
      __FILE__, GST_FUNCTION, __LINE__)

GstFlowReturn gst_train_report_bad_sample_full (GstElement *element,
    GstTrainBadSamples *bad, const gchar *key, GQuark domain, gint code,
    const gchar *verb, gchar *fail_text, gchar *skip_text,
    GstDebugCategory *category, const gchar *file, const gchar *function,
    gint line);

/* A new string that names the sample in @buffer the same way every epoch:
 * its file, else its dataset index; NULL when it has no sample meta. Free
 * with g_free(). */
gchar *gst_train_sample_key (GstBuffer *buffer);

/* Copies the untagged metas of @input (the sample meta among them) onto
 * @output; tagged ones describe the input's memory or pixels, not the
 * output's. */
void gst_train_copy_untagged_metas (GstBuffer *input, GstBuffer *output);

/* A new string naming the sample in @buffer for messages: its dataset index
 * and file ("12 (\"/data/c/x.jpg\")"), or its offset when it has no sample
 * meta. Free with g_free(). */
gchar *gst_train_describe_sample (GstBuffer *buffer);

/* The seed an element with random draws (augment, echo) uses: @seed
 * itself in a process that runs alone, else, in a job of more than one
 * rank (by the launcher's environment, gt-launcher.h), @seed mixed with the
 * rank, so that the ranks of a data-parallel job, started from one launch
 * line, draw different crops and repeats. Rank 0 keeps @seed. *@rank is set
 * to the launcher's rank (0 alone). */
guint64 gst_train_rank_seed (guint64 seed, gint *rank);

/* ---- decoding only the part of an image that augment reads ----
 *
 * For each image, imagedec asks the element linked to its source pad which
 * rectangle of the image it will read: this custom query (not serialized),
 * holding imagedec's source pad, the sample's input buffer (with its
 * sample meta) and the size the image decodes to. augment answers when the
 * query comes straight from its upstream peer (nothing between them that
 * could move, repeat or reorder pixels) and its crop of that sample is a
 * part of the image. imagedec then decodes that rectangle alone and marks
 * the output with a GstTrainRegionMeta. Elements that do not know the
 * query pass it on or drop it; neither changes what augment does. A query
 * nobody answers (FALSE) stops imagedec asking until its source pad is
 * relinked; the reader answers TRUE without a rectangle for an image it
 * wants whole. */
#define GST_TRAIN_REGION_QUERY "gst-train-region"

/* A new region query from @origin about @sample (not referenced: the
 * query lives while the caller holds both) of @width x @height. */
GstQuery *gst_train_region_query_new (
    GstPad *origin, GstBuffer *sample, gint width, gint height);

/* The question of @query: FALSE when it is not a region query. */
gboolean gst_train_region_query_parse (GstQuery *query, GstPad **origin,
    GstBuffer **sample, gint *width, gint *height);

/* Answers the writable region @query. */
void gst_train_region_query_set (GstQuery *query, const GstTrainRegion *region);

/* The rectangle @query was answered with; FALSE when it holds none (nobody
 * answered, or the reader wants this image whole). */
gboolean gst_train_region_query_get (GstQuery *query, GstTrainRegion *region);

G_END_DECLS

#endif /* __GST_TRAIN_COMMON_H__ */
