/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstbatcher.h: the batcher element, see gstbatcher.c. */
#ifndef __GST_BATCHER_H__
#define __GST_BATCHER_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_BATCHER (gst_batcher_get_type ())
G_DECLARE_FINAL_TYPE (GstBatcher, gst_batcher, GST, BATCHER, GstElement);

GST_ELEMENT_REGISTER_DECLARE (batcher);

G_END_DECLS

#endif /* __GST_BATCHER_H__ */
