/* train-common.h: small types several gst-train elements share. */
#ifndef __GST_TRAIN_COMMON_H__
#define __GST_TRAIN_COMMON_H__

#include <gst/gst.h>

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

/* Copies the untagged metas of @input (the sample meta among them) onto
 * @output; tagged ones describe the input's memory or pixels, not the
 * output's. */
void gst_train_copy_untagged_metas (GstBuffer *input, GstBuffer *output);

/* A new string naming the sample in @buffer for messages: its dataset index
 * and file ("12 (\"/data/c/x.jpg\")"), or its offset when it has no sample
 * meta. Free with g_free(). */
gchar *gst_train_describe_sample (GstBuffer *buffer);

G_END_DECLS

#endif /* __GST_TRAIN_COMMON_H__ */
