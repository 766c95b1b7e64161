/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstimagedec.h: the imagedec element, see gstimagedec.c. */
#ifndef __GST_IMAGE_DEC_H__
#define __GST_IMAGE_DEC_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_IMAGE_DEC (gst_image_dec_get_type ())
G_DECLARE_FINAL_TYPE (GstImageDec, gst_image_dec, GST, IMAGE_DEC, GstElement);

GST_ELEMENT_REGISTER_DECLARE (imagedec);

G_END_DECLS

#endif /* __GST_IMAGE_DEC_H__ */
