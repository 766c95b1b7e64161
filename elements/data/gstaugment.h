/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstaugment.h: the augment element, see gstaugment.c. */
#ifndef __GST_AUGMENT_H__
#define __GST_AUGMENT_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_AUGMENT (gst_augment_get_type ())
G_DECLARE_FINAL_TYPE (GstAugment, gst_augment, GST, AUGMENT, GstElement);

GST_ELEMENT_REGISTER_DECLARE (augment);

G_END_DECLS

#endif /* __GST_AUGMENT_H__ */
