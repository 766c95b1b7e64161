/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstecho.h: the echo element, see gstecho.c. */
#ifndef __GST_ECHO_H__
#define __GST_ECHO_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_ECHO (gst_echo_get_type ())
G_DECLARE_FINAL_TYPE (GstEcho, gst_echo, GST, ECHO, GstElement);

GST_ELEMENT_REGISTER_DECLARE (echo);

G_END_DECLS

#endif /* __GST_ECHO_H__ */
