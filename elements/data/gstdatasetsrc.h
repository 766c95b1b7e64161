/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstdatasetsrc.h: the datasetsrc element, see gstdatasetsrc.c. */
#ifndef __GST_DATASET_SRC_H__
#define __GST_DATASET_SRC_H__

#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS

#define GST_TYPE_DATASET_SRC (gst_dataset_src_get_type ())
G_DECLARE_FINAL_TYPE (
    GstDatasetSrc, gst_dataset_src, GST, DATASET_SRC, GstPushSrc);

GST_ELEMENT_REGISTER_DECLARE (datasetsrc);

G_END_DECLS

#endif /* __GST_DATASET_SRC_H__ */
