/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* echo-buffer.c: what echo's modes share: the held items and their
 * emissions, fixed mode's shuffle buffer, and the way out downstream (caps
 * before the items that have them, the statistics before EOS). See
 * echo-private.h. In fixed mode the upstream streaming thread's, in
 * adaptive mode called with the lock (the pushing functions by the task,
 * without it). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "echo-private.h"
#include "train-meta.h"

/* ---- items ---- */

void
gst_echo_items_init (GstEcho *echo, guint capacity)
{
  echo->capacity = capacity;
  /* Fixed mode holds one item more than it has slots: the one entering. */
  echo->n_items = capacity + 1;
  echo->items = g_new0 (GstEchoItem, echo->n_items);
  echo->free_items = g_new (guint, echo->n_items);
  echo->slots = g_new (guint, MAX (capacity, 1));
  gst_echo_items_clear (echo);
}

void
gst_echo_items_clear (GstEcho *echo)
{
  guint i;

  for (i = 0; i < echo->n_items; i++) {
    gst_clear_buffer (&echo->items[i].buffer);
    gst_clear_caps (&echo->items[i].caps);
    echo->free_items[i] = echo->n_items - 1 - i;
  }
  echo->n_free = echo->n_items;
  echo->n_slots = 0;
  echo->held_bytes = 0;
}

void
gst_echo_items_free (GstEcho *echo)
{
  gst_echo_items_clear (echo);
  g_clear_pointer (&echo->items, g_free);
  g_clear_pointer (&echo->free_items, g_free);
  g_clear_pointer (&echo->slots, g_free);
  echo->n_items = 0;
  echo->n_free = 0;
}

/* Asks downstream where upstream's buffers should live, and widens each
 * bounded pool it proposes by the buffers echo may hold: echo keeps buffers
 * while it waits for more input, so a pool sized for downstream alone would
 * run dry with its buffers in echo, and upstream, waiting for a free one,
 * would never send the input that lets echo let go of them. */
gboolean
gst_echo_items_proxy_allocation (GstEcho *echo, GstQuery *query)
{
  guint i, n_pools;

  if (!gst_pad_peer_query (echo->srcpad, query))
    return FALSE;
  n_pools = gst_query_get_n_allocation_pools (query);
  for (i = 0; i < n_pools; i++) {
    GstBufferPool *pool = NULL;
    guint size, min, max;

    gst_query_parse_nth_allocation_pool (query, i, &pool, &size, &min, &max);
    /* Held items (n_items) and, in adaptive mode, the one being pushed. */
    if (max != 0)
      max = (guint64)max + echo->n_items + 1 > G_MAXUINT
          ? 0
          : max + echo->n_items + 1;
    GST_DEBUG_OBJECT (echo,
        "downstream pool %" GST_PTR_FORMAT ": %u .. %u buffers with ours", pool,
        min, max);
    gst_query_set_nth_allocation_pool (query, i, pool, size, min, max);
    if (pool != NULL)
      gst_object_unref (pool);
  }
  return TRUE;
}

guint
gst_echo_draw_count (GtRandom *rng, gdouble factor)
{
  guint count = (guint)factor;

  if (factor > count && gt_random_double (rng) < factor - count)
    count++;
  return count;
}

/* Also takes the caps that came before @buffer. */
guint
gst_echo_item_new (GstEcho *echo, GstBuffer *buffer, gsize size, guint left)
{
  guint index = echo->free_items[--echo->n_free];
  GstEchoItem *item = &echo->items[index];
  GstTrainSampleMeta *sample_meta = gst_buffer_get_train_sample_meta (buffer);
  GstTrainBatchMeta *batch_meta = gst_buffer_get_train_batch_meta (buffer);

  item->buffer = buffer;
  item->caps = echo->sink_caps ? gst_caps_ref (echo->sink_caps) : NULL;
  item->size = size;
  item->has_meta = sample_meta != NULL || batch_meta != NULL;
  item->base = sample_meta ? sample_meta->emissions
      : batch_meta         ? batch_meta->emissions
                           : 0;
  item->emitted = 0;
  item->left = left;
  echo->held_bytes += size;
  GST_LOG_OBJECT (echo,
      "item %u: %" G_GSIZE_FORMAT " bytes, %u emissions to come, %u before",
      index, size, left, item->base);
  return index;
}

void
gst_echo_item_free (GstEcho *echo, guint index)
{
  GstEchoItem *item = &echo->items[index];

  gst_clear_buffer (&item->buffer);
  gst_clear_caps (&item->caps);
  echo->held_bytes -= item->size;
  echo->free_items[echo->n_free++] = index;
}

/* @caps: a reference, or NULL; @fresh says whether it is the item's first
 * emission here. The last emission hands out the stored buffer itself and
 * frees the item; the others a new reference to it, or a shallow copy
 * (same memory) when the emission count in its meta must differ from the
 * stored one. */
GstBuffer *
gst_echo_item_emit (GstEcho *echo, guint index, GstCaps **caps, gboolean *fresh)
{
  GstEchoItem *item = &echo->items[index];
  guint emissions = item->base + item->emitted++;
  gboolean write_meta = item->has_meta && emissions != item->base;
  GstBuffer *out;

  *fresh = item->emitted == 1;
  GST_LOG_OBJECT (echo, "item %u: emission %u here, %u to come", index,
      item->emitted - 1, item->left - 1);
  if (--item->left > 0) {
    *caps = item->caps ? gst_caps_ref (item->caps) : NULL;
    if (!write_meta)
      return gst_buffer_ref (item->buffer);
    out = gst_buffer_copy (item->buffer);
  } else {
    out = item->buffer;
    *caps = item->caps;
    item->buffer = NULL;
    item->caps = NULL;
    gst_echo_item_free (echo, index);
    if (!write_meta)
      return out;
    out = gst_buffer_make_writable (out);
  }
  gst_train_buffer_set_emissions (out, emissions);
  return out;
}

/* ---- fixed mode's shuffle buffer ---- */

gboolean
gst_echo_shuffle_is_full (GstEcho *echo)
{
  return echo->n_slots >= echo->capacity
      || (echo->settings.max_size_bytes > 0 && echo->n_slots > 0
          && echo->held_bytes > echo->settings.max_size_bytes);
}

GstFlowReturn
gst_echo_shuffle_emit_random (GstEcho *echo)
{
  guint slot = (guint)gt_random_below (&echo->rng, echo->n_slots);
  guint index = echo->slots[slot];
  GstBuffer *out;
  GstCaps *caps;
  gboolean fresh;

  echo->slots[slot] = echo->slots[--echo->n_slots];
  out = gst_echo_item_emit (echo, index, &caps, &fresh);
  return gst_echo_push (echo, out, caps, fresh);
}

/* Forgets the @count copies of item @index that never entered the buffer
 * (a push failed); the copies already in it still go out. */
static void
gst_echo_shuffle_drop_copies (GstEcho *echo, guint index, guint count)
{
  GstEchoItem *item = &echo->items[index];

  item->left -= count;
  if (item->left == 0)
    gst_echo_item_free (echo, index);
}

GstFlowReturn
gst_echo_shuffle_enter (GstEcho *echo, guint index, guint copies)
{
  GstFlowReturn ret = GST_FLOW_OK;
  guint i;

  if (echo->capacity == 0) {
    for (i = 0; i < copies && ret == GST_FLOW_OK; i++) {
      GstCaps *caps;
      gboolean fresh;
      GstBuffer *out = gst_echo_item_emit (echo, index, &caps, &fresh);

      ret = gst_echo_push (echo, out, caps, fresh);
    }
    /* the copy whose push failed went (or was dropped) */
    if (i < copies)
      gst_echo_shuffle_drop_copies (echo, index, copies - i);
    return ret;
  }

  for (i = 0; i < copies; i++) {
    while (gst_echo_shuffle_is_full (echo)) {
      ret = gst_echo_shuffle_emit_random (echo);
      if (ret != GST_FLOW_OK) {
        GST_DEBUG_OBJECT (echo, "push failed: %s", gst_flow_get_name (ret));
        gst_echo_shuffle_drop_copies (echo, index, copies - i);
        return ret;
      }
    }
    echo->slots[echo->n_slots++] = index;
  }
  return GST_FLOW_OK;
}

/* ---- pushing ---- */

static void gst_echo_post_stats (GstEcho *echo);

/* Sends the caps first when they differ from the last ones sent; @fresh:
 * it is an item's first emission. */
GstFlowReturn
gst_echo_push (GstEcho *echo, GstBuffer *buffer, GstCaps *caps, gboolean fresh)
{
  GstFlowReturn ret;

  if (caps != NULL && caps != echo->src_caps) {
    if (echo->src_caps == NULL || !gst_caps_is_equal (caps, echo->src_caps)) {
      GST_DEBUG_OBJECT (echo, "caps of the next item: %" GST_PTR_FORMAT, caps);
      if (!gst_pad_push_event (echo->srcpad, gst_event_new_caps (caps))) {
        gchar *text = gst_caps_to_string (caps);

        gst_buffer_unref (buffer);
        gst_caps_unref (caps);
        if (GST_PAD_IS_FLUSHING (echo->srcpad)) {
          g_free (text);
          return GST_FLOW_FLUSHING;
        }
        GST_ELEMENT_ERROR (echo, CORE, NEGOTIATION,
            ("Downstream refused the caps %s that a held item arrived with.",
                text),
            (NULL));
        g_free (text);
        return GST_FLOW_NOT_NEGOTIATED;
      }
    }
    gst_caps_take (&echo->src_caps, caps);
  } else if (caps != NULL) {
    gst_caps_unref (caps);
  }

  ret = gst_pad_push (echo->srcpad, buffer);
  if (ret == GST_FLOW_OK) {
    GST_OBJECT_LOCK (echo);
    echo->items_out++;
    echo->fresh_out += fresh;
    GST_OBJECT_UNLOCK (echo);
  } else if (ret == GST_FLOW_EOS) {
    /* Downstream ended the stream (cudatrainsink at max-steps): nothing
     * more goes out, and the EOS that upstream sends next may reach echo
     * only after the application stopped the pipeline (cudatrainsink posts
     * EOS itself). */
    gst_echo_post_stats (echo);
  }
  return ret;
}

/* Dividing by items-in instead would read 0.2 while the shuffle buffer
 * fills (items in, few out yet); at EOS every fresh item has gone out and
 * the two agree. */
gdouble
gst_echo_effective_factor (guint64 fresh_out, guint64 items_out)
{
  return fresh_out > 0 ? (gdouble)items_out / fresh_out : 1.0;
}

/* Posts echo-stats, once per run: at the end of the stream, whichever side
 * ended it. */
static void
gst_echo_post_stats (GstEcho *echo)
{
  guint64 items_in, items_out, fresh_out;
  GstStructure *s;

  if (echo->stats_posted)
    return;
  echo->stats_posted = TRUE;
  GST_OBJECT_LOCK (echo);
  items_in = echo->items_in;
  items_out = echo->items_out;
  fresh_out = echo->fresh_out;
  GST_OBJECT_UNLOCK (echo);

  s = gst_structure_new ("echo-stats", "items-in", G_TYPE_UINT64, items_in,
      "items-out", G_TYPE_UINT64, items_out, "fresh-out", G_TYPE_UINT64,
      fresh_out, "effective-factor", G_TYPE_DOUBLE,
      gst_echo_effective_factor (fresh_out, items_out), "mode", G_TYPE_STRING,
      echo->mode->name, NULL);
  GST_DEBUG_OBJECT (echo, "at the end of the stream: %" GST_PTR_FORMAT, s);
  gst_element_post_message (
      GST_ELEMENT (echo), gst_message_new_element (GST_OBJECT (echo), s));
}

gboolean
gst_echo_push_eos (GstEcho *echo, GstEvent *eos, GstCaps *caps)
{
  if (caps != NULL && echo->src_caps == NULL
      && gst_pad_push_event (echo->srcpad, gst_event_new_caps (caps)))
    gst_caps_replace (&echo->src_caps, caps);
  if (caps != NULL)
    gst_caps_unref (caps);
  gst_echo_post_stats (echo);
  return gst_pad_push_event (echo->srcpad, eos);
}

/* Asked before new caps are stored for the items that come later. */
gboolean
gst_echo_downstream_accepts (GstEcho *echo, GstCaps *caps)
{
  GstPad *peer = gst_pad_get_peer (echo->srcpad);
  gboolean accepted = TRUE;

  if (peer != NULL) {
    accepted = gst_pad_query_accept_caps (peer, caps);
    gst_object_unref (peer);
  }
  if (!accepted)
    GST_WARNING_OBJECT (echo, "downstream refuses %" GST_PTR_FORMAT, caps);
  return accepted;
}
