/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* echo-fixed.c: echo's mode=fixed: every item factor times, the copies
 * shuffled through the buffer, everything in the upstream streaming thread
 * (see gstecho.c's "mode=fixed" and "Caps and events"). The output depends
 * only on the input and the seed, which is what lets echo-resume.c replay
 * it. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "echo-private.h"

static void
gst_echo_fixed_start (GstEcho *echo)
{
  gst_echo_items_init (echo, echo->settings.shuffle_buffer_size);
}

/* Sends out every copy in the shuffle buffer, in random order; on a flow
 * error drops the rest. */
static GstFlowReturn
gst_echo_fixed_drain (GstEcho *echo)
{
  GstFlowReturn ret = GST_FLOW_OK;

  GST_DEBUG_OBJECT (echo, "draining %u copies", echo->n_slots);
  while (echo->n_slots > 0 && ret == GST_FLOW_OK)
    ret = gst_echo_shuffle_emit_random (echo);
  if (ret != GST_FLOW_OK) {
    GST_DEBUG_OBJECT (echo, "drain stopped: %s", gst_flow_get_name (ret));
    gst_echo_items_clear (echo);
  }
  return ret;
}

static GstFlowReturn
gst_echo_fixed_chain (GstEcho *echo, GstBuffer *buffer)
{
  gsize size = gst_buffer_get_size (buffer);
  gdouble factor;
  guint copies, index;

  GST_OBJECT_LOCK (echo);
  factor = echo->props.factor;
  echo->items_in++;
  GST_OBJECT_UNLOCK (echo);

  copies = gst_echo_draw_count (&echo->rng, factor);
  index = gst_echo_item_new (echo, buffer, size, copies);
  return gst_echo_shuffle_enter (echo, index, copies);
}

static gboolean
gst_echo_fixed_event (GstEcho *echo, GstEvent *event)
{
  GstCaps *caps;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:
      gst_event_parse_caps (event, &caps);
      GST_DEBUG_OBJECT (echo, "caps %" GST_PTR_FORMAT ", %u copies held", caps,
          echo->n_slots);
      if (echo->n_slots == 0 || echo->src_caps == NULL) {
        /* Nothing from before is held: the caps go on at once. */
        if (!gst_pad_push_event (echo->srcpad, gst_event_ref (event))) {
          gst_event_unref (event);
          return FALSE;
        }
        gst_caps_replace (&echo->src_caps, caps);
      } else if (!gst_echo_downstream_accepts (echo, caps)) {
        gst_event_unref (event);
        return FALSE;
      }
      gst_caps_replace (&echo->sink_caps, caps);
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_STREAM_START:
    case GST_EVENT_SEGMENT:
    case GST_EVENT_STREAM_GROUP_DONE:
      gst_echo_fixed_drain (echo);
      break;
    case GST_EVENT_EOS:
      gst_echo_fixed_drain (echo);
      return gst_echo_push_eos (
          echo, event, echo->sink_caps ? gst_caps_ref (echo->sink_caps) : NULL);
    default:
      /* Other sticky events (tags) describe the stream, not a place in it:
       * they need not wait for the shuffle buffer to empty. */
      if (!GST_EVENT_IS_STICKY (event))
        gst_echo_fixed_drain (echo);
      break;
  }
  return gst_pad_push_event (echo->srcpad, event);
}

/* A flush drops every held copy. */
static void
gst_echo_fixed_flush_stop (GstEcho *echo)
{
  GST_DEBUG_OBJECT (echo, "dropping %u copies", echo->n_slots);
  gst_echo_items_clear (echo);
}

const GstEchoModeFuncs gst_echo_fixed_mode = {
  .name = "fixed",
  .start = gst_echo_fixed_start,
  .chain = gst_echo_fixed_chain,
  .event = gst_echo_fixed_event,
  .flush_stop = gst_echo_fixed_flush_stop,
};
