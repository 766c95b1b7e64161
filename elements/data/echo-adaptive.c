/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* echo-adaptive.c: echo's mode=adaptive: fresh items first, repeats only
 * while downstream would otherwise wait (see gstecho.c's "mode=adaptive").
 * As queue: the chain function and serialized events feed a line that the
 * source pad's task empties, one lock and two conditions between them,
 * waited on and signalled through named macros that log to echo_dataflow.
 * Downstream's back-pressure paces the task: repeats go out only while no
 * fresh item waits. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "echo-private.h"

#include <math.h>

static void gst_echo_loop (GstPad *pad);

/* Frees every held item and event. Called with the lock. */
static void
gst_echo_adaptive_clear (GstEcho *echo)
{
  if (echo->line != NULL) {
    while (!gst_queue_array_is_empty (echo->line)) {
      GstEchoEntry *entry = gst_queue_array_pop_head_struct (echo->line);

      if (entry->event != NULL)
        gst_event_unref (entry->event);
    }
  }
  echo->line_items = 0;
  echo->line_bytes = 0;
  gst_echo_items_clear (echo);
}

/* Adaptive mode's waits and wake-ups, named as queue's are
 * (GST_QUEUE_WAIT_DEL_CHECK, GST_QUEUE_SIGNAL_ADD), each logged to
 * echo_dataflow with the state of the line. All with @lock held. */
#define ECHO_STATUS(echo, pad, msg)                                            \
  GST_CAT_LOG_OBJECT (gst_echo_dataflow_debug, echo,                           \
      "(%s:%s) " msg ": %u fresh items (%" G_GUINT64_FORMAT                    \
      " bytes) in line, %u kept for repeats",                                  \
      GST_DEBUG_PAD_NAME (pad), (echo)->line_items, (echo)->line_bytes,        \
      (echo)->n_slots)

/* Waits on @cond (item_add or item_del), saying so in @waiting; jumps to
 * @label when it wakes to a flow that stopped (a flush, a pad going
 * inactive, a downstream error). @pad is the side that waits. */
#define ECHO_WAIT(echo, cond, waiting, pad, what, label)                       \
  G_STMT_START                                                                 \
  {                                                                            \
    ECHO_STATUS (echo, pad, "wait for " what);                                 \
    (echo)->waiting = TRUE;                                                    \
    g_cond_wait (&(echo)->cond, &(echo)->lock);                                \
    (echo)->waiting = FALSE;                                                   \
    if ((echo)->srcresult != GST_FLOW_OK) {                                    \
      ECHO_STATUS (echo, pad, "received " what " wakeup");                     \
      goto label;                                                              \
    }                                                                          \
    ECHO_STATUS (echo, pad, "received " what);                                 \
  }                                                                            \
  G_STMT_END

/* Signals @cond only when someone waits on it: g_cond_signal() is a system
 * call even when nobody does. @pad is the side that signals. */
#define ECHO_SIGNAL(echo, cond, waiting, pad, what)                            \
  G_STMT_START                                                                 \
  {                                                                            \
    if ((echo)->waiting) {                                                     \
      ECHO_STATUS (echo, pad, "signal " what);                                 \
      g_cond_signal (&(echo)->cond);                                           \
    }                                                                          \
  }                                                                            \
  G_STMT_END

/* The task waits for something to push; the chain function for room in
 * the line. */
#define ECHO_WAIT_ITEM_ADDED(echo, label)                                      \
  ECHO_WAIT (echo, item_add, waiting_add, (echo)->srcpad, "ADD", label)
#define ECHO_WAIT_ITEM_DELETED(echo, label)                                    \
  ECHO_WAIT (echo, item_del, waiting_del, (echo)->sinkpad, "DEL", label)

/* The chain function (and serialized events) added to the line; the task
 * took from it. */
#define ECHO_SIGNAL_ITEM_ADDED(echo)                                           \
  ECHO_SIGNAL (echo, item_add, waiting_add, (echo)->sinkpad, "ADD")
#define ECHO_SIGNAL_ITEM_DELETED(echo)                                         \
  ECHO_SIGNAL (echo, item_del, waiting_del, (echo)->srcpad, "DEL")

/* Wakes both sides, whoever waits, after srcresult stopped the flow. */
#define ECHO_WAKE_ALL(echo)                                                    \
  G_STMT_START                                                                 \
  {                                                                            \
    GST_CAT_LOG_OBJECT (gst_echo_dataflow_debug, echo,                         \
        "waking all waiters: %s", gst_flow_get_name ((echo)->srcresult));      \
    g_cond_broadcast (&(echo)->item_add);                                      \
    g_cond_broadcast (&(echo)->item_del);                                      \
  }                                                                            \
  G_STMT_END

/* Fresh items that may wait in line under the rates policy: a burst that
 * finds the line this long waits upstream, so that the repeats owed to the
 * items sent keep their room among the kept items. */
#define ECHO_RATES_LINE_SHARE 8

static gboolean
gst_echo_line_is_full (GstEcho *echo, gsize size)
{
  guint limit = echo->by_rates ? MAX (echo->capacity / ECHO_RATES_LINE_SHARE, 1)
                               : echo->capacity;

  return echo->line_items >= limit
      || (echo->settings.max_size_bytes > 0 && echo->line_items > 0
          && echo->line_bytes + size > echo->settings.max_size_bytes);
}

static gboolean
gst_echo_needs_room (GstEcho *echo, gsize size)
{
  return echo->line_items + echo->n_slots >= echo->capacity
      || (echo->settings.max_size_bytes > 0
          && echo->held_bytes + size > echo->settings.max_size_bytes);
}

/* Forgets the items kept for repeats. */
static void
gst_echo_drop_repeats (GstEcho *echo)
{
  while (echo->n_slots > 0)
    gst_echo_item_free (echo, echo->slots[--echo->n_slots]);
}

/* The emissions that must separate two emissions of one item:
 * @items / ceil(@max_factor), where @items is the buffer's capacity once
 * that many items came (the items that came so far until then, so that the
 * first repeats do not wait for the buffer to fill), so that an item's
 * copies land in different batches and the copies of that many items mix.
 * 0 (back to back) when it is less than max-factor. This is the floor; the
 * spacing sought is @items / 2 (gst_echo_adaptive_set_due). */
static guint
gst_echo_adaptive_gap (guint items, gdouble max_factor)
{
  guint copies = (guint)max_factor;

  if (max_factor > copies)
    copies++;
  return items / copies;
}

/* Numbers the emission of @item that goes out now and says when it may go
 * out again: after gap emissions and a random part of another gap, so that
 * items that went out together do not come back together; and when it is
 * preferred: after spread (half the kept items) and a random part of half
 * of that. Measured (docs/echo.md), copies one or two batches apart (the
 * gap alone at max-factor 8) were worth less than a fixed factor's copies,
 * which a shuffle buffer scatters over about a thousand emissions. */
static void
gst_echo_adaptive_set_due (GstEcho *echo, GstEchoItem *item)
{
  item->due = ++echo->sequence + echo->gap;
  if (echo->gap > 1)
    item->due += gt_random_below (&echo->rng, echo->gap);
  item->spread_due = echo->sequence + echo->spread;
  if (echo->spread > 3)
    item->spread_due += gt_random_below (&echo->rng, echo->spread / 2);
  item->spread_due = MAX (item->spread_due, item->due);
}

/* The slot of the next repeat (@repeat) or of the candidate to drop for a
 * fresh item (!@repeat). A repeat is the least emitted item among those
 * past their spread_due, else among those past their due
 * (gst_echo_adaptive_set_due), so that the repeats spread evenly over the
 * kept items and an item's copies stay apart, as far as the rate allows;
 * the one to drop is the most emitted item. Ties are drawn at random. -1
 * when no item may be repeated yet. A scan of the kept items, called with
 * the lock. */
static gint
gst_echo_adaptive_pick (GstEcho *echo, gboolean repeat)
{
  /* [0]: preferred (or every item, to drop), [1]: due only */
  guint i, best[2] = { 0, 0 }, ties[2] = { 0, 0 };
  gint pick[2] = { -1, -1 };

  for (i = 0; i < echo->n_slots; i++) {
    const GstEchoItem *item = &echo->items[echo->slots[i]];
    guint t = 0;

    if (repeat && item->due > echo->sequence)
      continue;
    if (repeat && item->spread_due > echo->sequence)
      t = 1;
    if (pick[t] < 0
        || (repeat ? item->emitted < best[t] : item->emitted > best[t])) {
      best[t] = item->emitted;
      ties[t] = 1;
      pick[t] = (gint)i;
    } else if (item->emitted == best[t]
        && gt_random_below (&echo->rng, ++ties[t]) == 0) {
      pick[t] = (gint)i;
    }
  }
  return pick[0] >= 0 ? pick[0] : pick[1];
}

/* ---- the rates ----
 *
 * Back-pressure alone says only whether downstream would wait at this
 * instant: fed by a burst (a shard that arrived whole), it sent the burst
 * on without repeats and repeated the trickle after it up to max-factor
 * times each (docs/echo.md, "Input over a network"). Under the rates
 * policy the factor comes from two rates instead, each smoothed over about
 * ECHO_RATES_HORIZON seconds (a plain mean until that many have passed):
 * the fresh items that came in per second, and the emissions downstream
 * took per second while echo had something to send (the time the task
 * waited does not count). Their ratio, within [1, max-factor], is the
 * emissions each fresh item should have; it moves only when the ratio
 * leaves a band of ECHO_RATES_BAND around it. Each fresh item sent owes
 * target - 1 repeats, which go out before the next fresh item whenever a
 * kept item is due: a burst waits upstream rather than go through
 * unrepeated. Held back that way, upstream delivers less, which would
 * confirm any target: while the chain function spent over
 * ECHO_RATES_BLOCKED of the horizon waiting for room, upstream has more
 * than echo takes, and the target comes down by ECHO_RATES_EASE a
 * second instead. */
#define ECHO_RATES_WINDOW_US G_USEC_PER_SEC
#define ECHO_RATES_HORIZON 20.0
#define ECHO_RATES_BAND 0.1
#define ECHO_RATES_BLOCKED 0.8
#define ECHO_RATES_EASE 0.9
/* Repeats owed at most, in fresh items' worth: what could not be repeated
 * (no kept item was due) is forgiven beyond it, so that a backlog does not
 * hold fresh items back for long. */
#define ECHO_RATES_OWED_ITEMS 2.0

static void
gst_echo_rates_reset (GstEcho *echo)
{
  echo->window_start = 0;
  echo->window_blocked = echo->window_idle = 0;
  echo->window_in = echo->window_out = 0;
  echo->windows = 0;
  echo->in_sum = echo->time_sum = echo->blocked_sum = 0;
  echo->out_sum = echo->busy_sum = 0;
  echo->target = 1;
  echo->owed = 0;
}

/* Closes the window once it is a window long: adds it to the sums and
 * moves the target. Called with the lock. */
static void
gst_echo_rates_tick (GstEcho *echo, gdouble max_factor)
{
  gint64 now = g_get_monotonic_time (), length;
  gdouble keep, ratio, seconds;

  if (echo->window_start == 0) {
    echo->window_start = now;
    return;
  }
  length = now - echo->window_start;
  if (length < ECHO_RATES_WINDOW_US)
    return;
  seconds = length / 1e6;
  echo->windows++;
  keep = 1.0 - 1.0 / MIN (echo->windows, ECHO_RATES_HORIZON);
  echo->in_sum = keep * echo->in_sum + echo->window_in;
  echo->time_sum = keep * echo->time_sum + seconds;
  echo->blocked_sum =
      keep * echo->blocked_sum + MIN (echo->window_blocked, length) / 1e6;
  echo->out_sum = keep * echo->out_sum + echo->window_out;
  echo->busy_sum = keep * echo->busy_sum
      + MAX (length - echo->window_idle, length / 10) / 1e6;
  echo->window_start = now;
  echo->window_blocked = echo->window_idle = 0;
  echo->window_in = echo->window_out = 0;
  if (echo->in_sum <= 0 || echo->busy_sum <= 0)
    return;
  if (echo->blocked_sum > ECHO_RATES_BLOCKED * echo->time_sum) {
    ratio = MAX (echo->target * ECHO_RATES_EASE, 1.0);
  } else {
    ratio = (echo->out_sum / echo->busy_sum) / (echo->in_sum / echo->time_sum);
    ratio = CLAMP (ratio, 1.0, max_factor);
    if (fabs (ratio - echo->target) <= ECHO_RATES_BAND * echo->target)
      return;
  }
  GST_DEBUG_OBJECT (echo,
      "factor %.2f -> %.2f: %.1f fresh items/s in, %.1f emissions/s out, "
      "%.0f%% of the time held back",
      echo->target, ratio, echo->in_sum / echo->time_sum,
      echo->out_sum / echo->busy_sum, 100 * echo->blocked_sum / echo->time_sum);
  echo->target = ratio;
}

static GstFlowReturn
gst_echo_adaptive_chain (GstEcho *echo, GstBuffer *buffer)
{
  gsize size = gst_buffer_get_size (buffer);
  GstEchoEntry entry = { NULL, 0 };
  GstFlowReturn ret;
  gdouble max_factor;
  guint64 items_in;

  GST_OBJECT_LOCK (echo);
  max_factor = echo->props.max_factor;
  items_in = echo->items_in;
  GST_OBJECT_UNLOCK (echo);

  g_mutex_lock (&echo->lock);
  if (echo->srcresult != GST_FLOW_OK)
    goto out_flushing;
  if (!echo->downstream_eos && gst_echo_line_is_full (echo, size)) {
    gint64 waited = g_get_monotonic_time ();

    while (!echo->downstream_eos && gst_echo_line_is_full (echo, size))
      ECHO_WAIT_ITEM_DELETED (echo, out_flushing);
    echo->window_blocked += g_get_monotonic_time () - waited;
  }
  echo->window_in++;
  if (echo->downstream_eos)
    goto out_eos;

  /* Fresh data comes first: it displaces the repeat candidates that went
   * out most often. */
  while (echo->n_slots > 0 && gst_echo_needs_room (echo, size)) {
    guint slot = gst_echo_adaptive_pick (echo, FALSE);
    guint index = echo->slots[slot];

    echo->slots[slot] = echo->slots[--echo->n_slots];
    gst_echo_item_free (echo, index);
  }
  echo->gap = gst_echo_adaptive_gap (
      (guint)MIN (items_in + 1, echo->capacity), max_factor);
  echo->spread = (guint)MIN (items_in + 1, echo->capacity) / 2;
  entry.item = gst_echo_item_new (
      echo, buffer, size, gst_echo_draw_count (&echo->rng, max_factor));
  gst_queue_array_push_tail_struct (echo->line, &entry);
  echo->line_items++;
  echo->line_bytes += size;
  /* Counted before the task can see it, so that items-out never runs ahead
   * of max-factor * items-in. */
  GST_OBJECT_LOCK (echo);
  echo->items_in++;
  GST_OBJECT_UNLOCK (echo);
  ECHO_SIGNAL_ITEM_ADDED (echo);
  g_mutex_unlock (&echo->lock);
  return GST_FLOW_OK;

out_flushing:
  ret = echo->srcresult;
  g_mutex_unlock (&echo->lock);
  GST_LOG_OBJECT (echo, "refusing buffer: %s", gst_flow_get_name (ret));
  gst_buffer_unref (buffer);
  return ret;

out_eos:
  g_mutex_unlock (&echo->lock);
  GST_LOG_OBJECT (echo, "refusing buffer: downstream ended the stream");
  gst_buffer_unref (buffer);
  return GST_FLOW_EOS;
}

static gboolean
gst_echo_adaptive_event (GstEcho *echo, GstEvent *event)
{
  GstEventType type = GST_EVENT_TYPE (event);
  GstEchoEntry entry = { event, 0 };
  GstCaps *caps = NULL;

  if (type == GST_EVENT_CAPS) {
    gst_event_parse_caps (event, &caps);
    GST_DEBUG_OBJECT (
        echo, "caps %" GST_PTR_FORMAT ": in line with the items", caps);
    if (!gst_echo_downstream_accepts (echo, caps)) {
      gst_event_unref (event);
      return FALSE;
    }
  }

  g_mutex_lock (&echo->lock);
  if (caps != NULL)
    gst_caps_replace (&echo->sink_caps, caps);
  if (type == GST_EVENT_STREAM_START || type == GST_EVENT_SEGMENT)
    echo->downstream_eos = FALSE;
  if (echo->srcresult == GST_FLOW_EOS
      && (type == GST_EVENT_STREAM_START || type == GST_EVENT_SEGMENT)) {
    /* A new stream after EOS: push again. */
    echo->srcresult = GST_FLOW_OK;
    echo->eos = FALSE;
    gst_pad_start_task (
        echo->srcpad, (GstTaskFunction)gst_echo_loop, echo->srcpad, NULL);
  }
  if (echo->srcresult != GST_FLOW_OK) {
    /* As queue: a sticky event is no problem now (the data flow reports
     * the error), other events fail. */
    gboolean ok = GST_EVENT_IS_STICKY (event) && type != GST_EVENT_EOS;

    GST_LOG_OBJECT (echo, "refusing %s event: %s", GST_EVENT_TYPE_NAME (event),
        gst_flow_get_name (echo->srcresult));
    g_mutex_unlock (&echo->lock);
    gst_event_unref (event);
    return ok;
  }
  if (type == GST_EVENT_EOS)
    echo->eos = TRUE;
  gst_queue_array_push_tail_struct (echo->line, &entry);
  ECHO_SIGNAL_ITEM_ADDED (echo);
  g_mutex_unlock (&echo->lock);
  return TRUE;
}

/* Sends a repeat of a kept item (gst_echo_adaptive_pick): FALSE when none
 * may go out yet. Called with the lock. */
static gboolean
gst_echo_adaptive_repeat (
    GstEcho *echo, GstBuffer **out, GstCaps **caps, gboolean *fresh)
{
  gint slot;
  guint index;

  if (echo->n_slots == 0 || (slot = gst_echo_adaptive_pick (echo, TRUE)) < 0)
    return FALSE;
  index = echo->slots[slot];
  if (echo->items[index].left == 1)
    echo->slots[slot] = echo->slots[--echo->n_slots];
  gst_echo_adaptive_set_due (echo, &echo->items[index]);
  *out = gst_echo_item_emit (echo, index, caps, fresh);
  return TRUE;
}

/* Takes what to push next: the head of the line (an event, or a fresh item
 * that then stays for repeats while it has emissions left), else a repeat of
 * a kept item (gst_echo_adaptive_pick); under the rates policy, the repeats
 * owed to the fresh items sent come before the next fresh item. FALSE when
 * there is nothing, or nothing that may go out yet. With an event, @caps
 * may say which caps to send first. Called with the lock. */
static gboolean
gst_echo_adaptive_next (GstEcho *echo, GstBuffer **out, GstCaps **caps,
    GstEvent **event, gboolean *fresh)
{
  if (echo->by_rates) {
    gdouble max_factor;

    GST_OBJECT_LOCK (echo);
    max_factor = echo->props.max_factor;
    GST_OBJECT_UNLOCK (echo);
    gst_echo_rates_tick (echo, max_factor);
  }

  while (!gst_queue_array_is_empty (echo->line)) {
    GstEchoEntry *entry = gst_queue_array_peek_head_struct (echo->line);
    GstEchoItem *item;
    guint index;

    if (entry->event != NULL) {
      GstEvent *head = entry->event;

      gst_queue_array_pop_head_struct (echo->line);
      switch (GST_EVENT_TYPE (head)) {
        case GST_EVENT_CAPS:
          if (echo->n_slots > 0 && echo->src_caps != NULL) {
            /* Kept items still have the old caps: the new ones travel with
             * the items that have them. */
            gst_event_unref (head);
            continue;
          }
          break;
        case GST_EVENT_EOS:
          if (echo->src_caps == NULL && echo->sink_caps != NULL)
            *caps = gst_caps_ref (echo->sink_caps);
          /* fall through */
        case GST_EVENT_STREAM_START:
        case GST_EVENT_SEGMENT:
          gst_echo_drop_repeats (echo);
          break;
        default:
          break;
      }
      *event = head;
      return TRUE;
    }

    if (echo->by_rates && echo->owed >= 1
        && gst_echo_adaptive_repeat (echo, out, caps, fresh)) {
      echo->owed -= 1;
      echo->window_out++;
      return TRUE;
    }
    index = entry->item;
    gst_queue_array_pop_head_struct (echo->line);
    item = &echo->items[index];
    echo->line_items--;
    echo->line_bytes -= item->size;
    if (item->left > 1)
      echo->slots[echo->n_slots++] = index;
    gst_echo_adaptive_set_due (echo, item);
    *out = gst_echo_item_emit (echo, index, caps, fresh);
    if (echo->by_rates)
      echo->owed = MIN (
          echo->owed + echo->target - 1, ECHO_RATES_OWED_ITEMS * echo->target);
    echo->window_out++;
    ECHO_SIGNAL_ITEM_DELETED (echo);
    return TRUE;
  }

  /* Nothing fresh waits: a repeat rather than a consumer that waits. */
  if (gst_echo_adaptive_repeat (echo, out, caps, fresh)) {
    echo->owed = MAX (echo->owed - 1, 0);
    echo->window_out++;
    return TRUE;
  }
  return FALSE;
}

/* Downstream answered a buffer with EOS. As queue: what is held is
 * dropped and the chain function answers EOS from now on, but the task
 * goes on with the events in line, so that the EOS that upstream sends
 * once it gets EOS reaches downstream (which posts it: the pipeline ends);
 * paused, the task would drop it. */
static void
gst_echo_adaptive_downstream_eos (GstEcho *echo)
{
  guint n;

  g_mutex_lock (&echo->lock);
  if (echo->srcresult != GST_FLOW_OK) {
    /* a flush came meanwhile */
    g_mutex_unlock (&echo->lock);
    return;
  }
  GST_DEBUG_OBJECT (echo,
      "downstream ended the stream: dropping %u fresh "
      "items and %u kept, passing on events only",
      echo->line_items, echo->n_slots);
  echo->downstream_eos = TRUE;
  for (n = gst_queue_array_get_length (echo->line); n > 0; n--) {
    GstEchoEntry entry =
        *(GstEchoEntry *)gst_queue_array_pop_head_struct (echo->line);

    if (entry.event != NULL)
      gst_queue_array_push_tail_struct (echo->line, &entry);
    else
      gst_echo_item_free (echo, entry.item);
  }
  echo->line_items = 0;
  echo->line_bytes = 0;
  gst_echo_drop_repeats (echo);
  ECHO_SIGNAL_ITEM_DELETED (echo);
  g_mutex_unlock (&echo->lock);
}

static GstFlowReturn
gst_echo_adaptive_push_event (GstEcho *echo, GstEvent *event, GstCaps *caps)
{
  GstCaps *event_caps;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:
      gst_event_parse_caps (event, &event_caps);
      if (gst_pad_push_event (echo->srcpad, gst_event_ref (event)))
        gst_caps_replace (&echo->src_caps, event_caps);
      gst_event_unref (event);
      return GST_FLOW_OK;
    case GST_EVENT_EOS:
      gst_echo_push_eos (echo, event, caps);
      /* As queue: the task pauses until a new stream or a flush. */
      return GST_FLOW_EOS;
    default:
      gst_pad_push_event (echo->srcpad, event);
      return GST_FLOW_OK;
  }
}

static void
gst_echo_loop (GstPad *pad)
{
  GstEcho *echo = GST_ECHO (GST_PAD_PARENT (pad));
  GstBuffer *out = NULL;
  GstEvent *event = NULL;
  GstCaps *caps = NULL;
  GstFlowReturn ret;
  gboolean eos, fresh = FALSE;

  g_mutex_lock (&echo->lock);
  if (echo->srcresult != GST_FLOW_OK)
    goto out_flushing;
  if (!gst_echo_adaptive_next (echo, &out, &caps, &event, &fresh)) {
    gint64 waited = g_get_monotonic_time ();

    do
      ECHO_WAIT_ITEM_ADDED (echo, out_flushing);
    while (!gst_echo_adaptive_next (echo, &out, &caps, &event, &fresh));
    echo->window_idle += g_get_monotonic_time () - waited;
  }
  g_mutex_unlock (&echo->lock);

  if (event != NULL)
    ret = gst_echo_adaptive_push_event (echo, event, caps);
  else
    ret = gst_echo_push (echo, out, caps, fresh);
  if (ret == GST_FLOW_OK)
    return;
  if (ret == GST_FLOW_EOS && event == NULL) {
    gst_echo_adaptive_downstream_eos (echo);
    return;
  }

  g_mutex_lock (&echo->lock);
  /* A flush that came meanwhile says FLUSHING already. */
  if (echo->srcresult == GST_FLOW_OK)
    echo->srcresult = ret;
  ret = echo->srcresult;
  gst_echo_adaptive_clear (echo);
  ECHO_WAKE_ALL (echo);
  g_mutex_unlock (&echo->lock);
  goto paused;

out_flushing:
  ret = echo->srcresult;
  g_mutex_unlock (&echo->lock);

paused:
  GST_DEBUG_OBJECT (echo, "pausing task: %s", gst_flow_get_name (ret));
  gst_pad_pause_task (echo->srcpad);
  g_mutex_lock (&echo->lock);
  eos = echo->eos;
  g_mutex_unlock (&echo->lock);
  /* As queue: upstream reports errors it gets from the chain function, but
   * after EOS nobody would. */
  if (eos && (ret == GST_FLOW_NOT_LINKED || ret < GST_FLOW_EOS)) {
    GST_ELEMENT_FLOW_ERROR (echo, ret);
    gst_pad_push_event (echo->srcpad, gst_event_new_eos ());
  }
}

/* Stops the line and wakes the chain function waiting for room and the
 * task waiting for data. */
static void
gst_echo_adaptive_set_flushing (GstEcho *echo)
{
  g_mutex_lock (&echo->lock);
  echo->srcresult = GST_FLOW_FLUSHING;
  ECHO_WAKE_ALL (echo);
  g_mutex_unlock (&echo->lock);
}

static void
gst_echo_adaptive_flush_start (GstEcho *echo)
{
  gst_echo_adaptive_set_flushing (echo);
  /* Returns once the loop is out of its push (the flush went downstream
   * first, so the push returns). */
  gst_pad_pause_task (echo->srcpad);
}

static void
gst_echo_adaptive_flush_stop (GstEcho *echo)
{
  g_mutex_lock (&echo->lock);
  gst_echo_adaptive_clear (echo);
  echo->srcresult = GST_FLOW_OK;
  echo->eos = FALSE;
  echo->downstream_eos = FALSE;
  if (gst_pad_is_active (echo->srcpad))
    gst_pad_start_task (
        echo->srcpad, (GstTaskFunction)gst_echo_loop, echo->srcpad, NULL);
  g_mutex_unlock (&echo->lock);
}

static void
gst_echo_adaptive_start (GstEcho *echo)
{
  /* One item at least: the fresh item in line. */
  gst_echo_items_init (echo, MAX (echo->settings.shuffle_buffer_size, 1));
  echo->line = gst_queue_array_new_for_struct (sizeof (GstEchoEntry), 16);
  echo->line_items = 0;
  echo->line_bytes = 0;
  echo->by_rates = echo->settings.policy == GST_ECHO_POLICY_RATES;
  gst_echo_rates_reset (echo);
}

static void
gst_echo_adaptive_stop (GstEcho *echo)
{
  gst_echo_adaptive_clear (echo);
  g_clear_pointer (&echo->line, gst_queue_array_free);
}

/* Unblocks a chain function that waits for room. */
static void
gst_echo_adaptive_sink_deactivate (GstEcho *echo)
{
  gst_echo_adaptive_set_flushing (echo);
}

static gboolean
gst_echo_adaptive_src_activate (GstEcho *echo, gboolean active)
{
  gboolean ok;

  if (active) {
    g_mutex_lock (&echo->lock);
    echo->srcresult = GST_FLOW_OK;
    echo->eos = FALSE;
    echo->downstream_eos = FALSE;
    ok = gst_pad_start_task (
        echo->srcpad, (GstTaskFunction)gst_echo_loop, echo->srcpad, NULL);
    g_mutex_unlock (&echo->lock);
  } else {
    gst_echo_adaptive_set_flushing (echo);
    ok = gst_pad_stop_task (echo->srcpad);
  }
  return ok;
}

static void
gst_echo_adaptive_reconfigure (GstEcho *echo)
{
  g_mutex_lock (&echo->lock);
  if (echo->srcresult == GST_FLOW_NOT_LINKED) {
    /* Linked again, perhaps: try pushing. */
    echo->srcresult = GST_FLOW_OK;
    gst_pad_start_task (
        echo->srcpad, (GstTaskFunction)gst_echo_loop, echo->srcpad, NULL);
  }
  g_mutex_unlock (&echo->lock);
}

const GstEchoModeFuncs gst_echo_adaptive_mode = {
  .name = "adaptive",
  .start = gst_echo_adaptive_start,
  .stop = gst_echo_adaptive_stop,
  .chain = gst_echo_adaptive_chain,
  .event = gst_echo_adaptive_event,
  .flush_start = gst_echo_adaptive_flush_start,
  .flush_stop = gst_echo_adaptive_flush_stop,
  .sink_deactivate = gst_echo_adaptive_sink_deactivate,
  .src_activate = gst_echo_adaptive_src_activate,
  .reconfigure = gst_echo_adaptive_reconfigure,
  .own_thread = TRUE,
};
