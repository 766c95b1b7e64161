/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* element-util.h: what every gst-train element does the same way and no
 * application needs: one error line for a start that failed, and a stop
 * before dispose for an element dropped while it runs.
 *
 * Internal to the two plugins (a static library each links): the public
 * metadata library (train-meta.h) is what applications see, and these are
 * no part of it. */
#ifndef __GST_TRAIN_ELEMENT_UTIL_H__
#define __GST_TRAIN_ELEMENT_UTIL_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* ---- one error line for a start that failed ----
 *
 * GstBaseSrc and GstBaseSink post an error of their own after a start
 * that failed ("state change failed and some element failed to post a
 * proper error message with the reason for the failure"), even when the
 * element posted the reason: a second line that contradicts the first.
 * gst-train's source and sink pass each message they post through this
 * from their post_message. */

/* FALSE for the base class's fallback error after a start that failed,
 * when @element posted an error of its own in the same state change (the
 * element then drops @message); TRUE for every other message. */
G_GNUC_INTERNAL gboolean gst_train_element_keep_message (
    GstElement *element, GstMessage *message);

/* For an element that needs nothing else of post_message: installs in
 * @klass (from class_init) a post_message that drops what
 * gst_train_element_keep_message() says to drop and hands every other
 * message to the parent class's. */
G_GNUC_INTERNAL void gst_train_element_class_drop_fallback_errors (
    GstElementClass *klass);

/* ---- an element dropped while it runs ----
 *
 * GStreamer asks an application to set an element to NULL before it drops
 * the last reference, and only complains when it does not: the element is
 * then freed with its streaming threads, pad tasks and pool work still
 * running on it. Python's garbage collector drops a playing pipeline that
 * way whenever an exception unwinds the function that held it. Each of
 * gst-train's elements calls this first in its dispose, so that it warns
 * and shuts down instead of crashing the process. */

/* From @element's dispose, before the parent class's: when @element is not
 * in NULL, warns (naming it and its state) and sets it to NULL, which stops
 * what runs on it, as the application should have. Returns FALSE when that
 * could not be done from this thread (one of the element's own): it is then
 * done from another, the element stays alive until it is, and the caller
 * returns at once without chaining up; its dispose runs again after. */
G_GNUC_INTERNAL gboolean gst_train_element_stop_before_dispose (
    GstElement *element);

G_END_DECLS

#endif /* __GST_TRAIN_ELEMENT_UTIL_H__ */
