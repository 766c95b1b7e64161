/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* element-util.c: the one error line of a failed start, and the stop of an
 * element disposed while it runs (element-util.h). */
#include "element-util.h"

#include <string.h>

/* The state change (its state and next state) in which @element posted an
 * error of its own, plus one; 0 for none. */
#define ERROR_IN_STATE_CHANGE "gst-train-error-in-state-change"

gboolean
gst_train_element_keep_message (GstElement *element, GstMessage *message)
{
  GError *error = NULL;
  gchar *debug = NULL;
  gboolean fallback;
  gint change, posted;

  if (GST_MESSAGE_TYPE (message) != GST_MESSAGE_ERROR
      || GST_MESSAGE_SRC (message) != GST_OBJECT_CAST (element))
    return TRUE;
  GST_OBJECT_LOCK (element);
  change = GST_STATE_NEXT (element) == GST_STATE_VOID_PENDING
      ? 0
      : 1 + (GST_STATE (element) << 8 | GST_STATE_NEXT (element));
  GST_OBJECT_UNLOCK (element);
  gst_message_parse_error (message, &error, &debug);
  /* gstbasesrc.c and gstbasesink.c: GST_ELEMENT_ERROR (.., CORE,
   * STATE_CHANGE, (NULL), ("Failed to start")) */
  fallback =
      g_error_matches (error, GST_CORE_ERROR, GST_CORE_ERROR_STATE_CHANGE)
      && debug != NULL && strstr (debug, "Failed to start") != NULL;
  g_error_free (error);
  g_free (debug);
  posted = GPOINTER_TO_INT (
      g_object_get_data (G_OBJECT (element), ERROR_IN_STATE_CHANGE));
  if (fallback) {
    g_object_set_data (G_OBJECT (element), ERROR_IN_STATE_CHANGE, NULL);
    return change == 0 || posted != change;
  }
  if (change != 0)
    g_object_set_data (
        G_OBJECT (element), ERROR_IN_STATE_CHANGE, GINT_TO_POINTER (change));
  return TRUE;
}

static gboolean
gst_train_element_post_kept_message (GstElement *element, GstMessage *message)
{
  GstElementClass *klass = GST_ELEMENT_GET_CLASS (element);

  if (!gst_train_element_keep_message (element, message)) {
    gst_message_unref (message);
    return TRUE;
  }
  /* the parent of the class that installed this function (a subclass may
   * have its own, and inherits this one until it does) */
  while (klass->post_message != gst_train_element_post_kept_message)
    klass = g_type_class_peek_parent (klass);
  while (klass->post_message == gst_train_element_post_kept_message)
    klass = g_type_class_peek_parent (klass);
  return klass->post_message (element, message);
}

void
gst_train_element_class_drop_fallback_errors (GstElementClass *klass)
{
  klass->post_message = gst_train_element_post_kept_message;
}

/* Set on an element whose stop was handed to another thread, so that its
 * next dispose does not hand it on again. */
#define STOP_DEFERRED "gst-train-stop-deferred"

static void
gst_train_element_stop_deferred (GstElement *element, gpointer unused)
{
  gst_element_set_state (element, GST_STATE_NULL);
  /* gst_element_call_async drops its reference after this: the element's
   * dispose then runs again, here, in NULL. */
}

/* Whether this thread runs one of @element's pad tasks. GStreamer has no
 * public call for it; gst_task_join() asks the same of the task's thread
 * field (to refuse to join itself), which this reads the same way. */
static gboolean
gst_train_element_in_own_task (GstElement *element)
{
  gboolean own = FALSE;
  GList *l;

  GST_OBJECT_LOCK (element);
  for (l = element->pads; l != NULL && !own; l = l->next) {
    GstPad *pad = l->data;
    GstTask *task;

    GST_OBJECT_LOCK (pad);
    task = GST_PAD_TASK (pad);
    if (task != NULL) {
      GST_OBJECT_LOCK (task);
      own = task->thread == g_thread_self ();
      GST_OBJECT_UNLOCK (task);
    }
    GST_OBJECT_UNLOCK (pad);
  }
  GST_OBJECT_UNLOCK (element);
  return own;
}

gboolean
gst_train_element_stop_before_dispose (GstElement *element)
{
  GstState state;

  GST_OBJECT_LOCK (element);
  state = GST_STATE (element);
  GST_OBJECT_UNLOCK (element);
  if (state == GST_STATE_NULL
      || g_object_get_data (G_OBJECT (element), STOP_DEFERRED) != NULL)
    return TRUE;
  /* GStreamer's own complaint (a critical in gst_element_dispose) would
   * come next, and the element's threads would go on over freed memory; a
   * warning says the same, and the element stops. A bin has unlinked and
   * unparented its child by now, so the state change posts to no bus and
   * pushes to no peer. */
  g_warning ("%s was disposed in the %s state: setting it to NULL first "
             "(set a pipeline to NULL before dropping it)",
      GST_OBJECT_NAME (element), gst_element_state_get_name (state));
  if (!gst_train_element_in_own_task (element)
      && gst_element_set_state (element, GST_STATE_NULL)
          == GST_STATE_CHANGE_SUCCESS)
    return TRUE;
  /* The last reference went in one of the element's own streaming threads
   * (a message it posted held it for a moment, or a probe dropped it
   * there), which cannot stop itself; or the stop failed. Keep the
   * element alive until another thread has stopped it. */
  GST_WARNING_OBJECT (element, "stopping it from another thread");
  g_object_set_data (G_OBJECT (element), STOP_DEFERRED, GINT_TO_POINTER (1));
  gst_element_call_async (element, gst_train_element_stop_deferred, NULL, NULL);
  return FALSE;
}
