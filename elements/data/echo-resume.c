/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* echo-resume.c: echo's exact resume. The resume query on its way back
 * up, and in fixed mode the shuffle buffer rebuilt from the items the
 * source reads again (see gstecho.c's "Exact resume"). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "echo-private.h"
#include "train-meta.h"

/* The state after the last output trained on.
 *
 * A resuming cudatrainsink says, through datasetsrc's resume query
 * (train-meta.h), how many items it trained on: N outputs of this echo. In
 * fixed mode what echo did up to there depends only on its seed, its factor
 * and the number of items that came in (the copies drawn per item, and which
 * slot leaves when the buffer is full), so it is replayed without data: the
 * draws alone, from the generator as the element started. That gives the
 * generator's state after output N, the items still held then (their place
 * in the input, emissions so far and to come) and the slots they fill. The
 * answer upstream is the oldest held item, narrowed to the held items
 * (gst_train_resume_query_set_keep): the source reads those alone, up to
 * shuffle-buffer-size of them, and passes over the others of that span
 * unread. Behind another echo, which cannot leave out part of its output,
 * the whole span comes again and echo drops the items that had already gone
 * out for good (an echo on the way down marks the query, so the one
 * downstream of it knows). Once the last held item is back (the one coming
 * in when output N left) echo goes on exactly where it was. The replay
 * assumes the buffer is full by its item count, not by max-size-bytes, and
 * that factor did not change while playing. In adaptive mode the output
 * depends on timing: the source restarts after the fresh items trained on,
 * and echo starts empty. */

typedef struct
{
  guint64 input; /* place in the input since the start */
  guint emitted;
  guint left;
  guint id; /* the replay's own numbering */
} GstEchoResumeItem;

struct _GstEchoResume
{
  guint64 next; /* place in the input of the next item to arrive */
  guint64 end;  /* the first item that had not arrived */
  GArray *held; /* GstEchoResumeItem, in input order */
  guint installed;
  guint *index;         /* per held item: its item index once back */
  GArray *slots;        /* guint: per slot, the held item in it */
  guint pending_copies; /* of the last item, not yet in the buffer */
  gboolean sparse;      /* only the held items come again */
  GtRandom rng;
};

static gint
gst_echo_resume_compare (gconstpointer a, gconstpointer b)
{
  guint64 x = ((const GstEchoResumeItem *)a)->input;
  guint64 y = ((const GstEchoResumeItem *)b)->input;

  return x < y ? -1 : x > y;
}

void
gst_echo_resume_free (GstEchoResume *resume)
{
  g_array_unref (resume->held);
  g_array_unref (resume->slots);
  g_free (resume->index);
  g_free (resume);
}

/* Replays fixed mode's draws for @outputs outputs; NULL when nothing is
 * held then (the source starts at *@first_input, the generator is set).
 * *@first_input: the first item the source must send again. */
static GstEchoResume *
gst_echo_resume_replay (
    GstEcho *echo, gdouble factor, guint64 outputs, guint64 *first_input)
{
  GstEchoResume *r = g_new0 (GstEchoResume, 1);
  GArray *items = g_array_new (FALSE, FALSE, sizeof (GstEchoResumeItem));
  GArray *free_ids = g_array_new (FALSE, FALSE, sizeof (guint));
  guint *slots = g_new (guint, MAX (echo->capacity, 1));
  guint n_slots = 0, current = 0, i, k;
  guint64 done = 0, input = 0;
  gint64 first = -1;
  gboolean entering;
  guint *map;

  r->rng = echo->rng;
  while (done < outputs) {
    GstEchoResumeItem item = { input++, 0, 0, 0 };
    guint copies = gst_echo_draw_count (&r->rng, factor), c;

    item.left = copies;
    if (free_ids->len > 0) {
      current = g_array_index (free_ids, guint, free_ids->len - 1);
      g_array_set_size (free_ids, free_ids->len - 1);
      g_array_index (items, GstEchoResumeItem, current) = item;
    } else {
      current = items->len;
      g_array_append_val (items, item);
    }
    for (c = 0; c < copies && done < outputs; c++) {
      if (echo->capacity == 0) {
        /* back to back */
        GstEchoResumeItem *it =
            &g_array_index (items, GstEchoResumeItem, current);

        it->emitted++;
        if (--it->left == 0)
          g_array_append_val (free_ids, current);
        done++;
        continue;
      }
      while (n_slots >= echo->capacity && done < outputs) {
        guint slot = (guint)gt_random_below (&r->rng, n_slots);
        guint id = slots[slot];
        GstEchoResumeItem *it = &g_array_index (items, GstEchoResumeItem, id);

        slots[slot] = slots[--n_slots];
        it->emitted++;
        if (--it->left == 0)
          g_array_append_val (free_ids, id);
        done++;
      }
      if (done == outputs) {
        r->pending_copies = copies - c;
        break;
      }
      slots[n_slots++] = current;
    }
    if (copies == 0)
      g_array_append_val (free_ids, current);
  }

  /* what is held after the last output: the items in slots, and the one
   * coming in when it left */
  map = g_new (guint, MAX (items->len, 1));
  for (i = 0; i < items->len; i++)
    map[i] = G_MAXUINT;
  for (i = 0; i < n_slots; i++)
    map[slots[i]] = 0;
  if (echo->capacity > 0)
    entering = r->pending_copies > 0;
  else
    entering = outputs > 0
        && g_array_index (items, GstEchoResumeItem, current).left > 0;
  if (entering)
    map[current] = 0;
  r->held = g_array_new (FALSE, FALSE, sizeof (GstEchoResumeItem));
  /* in input order: ids are reused, so sort by input */
  for (i = 0; i < items->len; i++)
    if (map[i] == 0) {
      g_array_index (items, GstEchoResumeItem, i).id = i;
      g_array_append_val (r->held, g_array_index (items, GstEchoResumeItem, i));
    }
  g_array_sort (r->held, gst_echo_resume_compare);
  for (k = 0; k < r->held->len; k++)
    map[g_array_index (r->held, GstEchoResumeItem, k).id] = k;
  r->slots = g_array_sized_new (FALSE, FALSE, sizeof (guint), n_slots);
  for (i = 0; i < n_slots; i++)
    g_array_append_val (r->slots, map[slots[i]]);
  if (echo->capacity == 0 && r->held->len > 0)
    r->pending_copies = g_array_index (r->held, GstEchoResumeItem, 0).left;
  r->end = input;
  if (r->held->len > 0)
    first = (gint64)g_array_index (r->held, GstEchoResumeItem, 0).input;
  r->next = first >= 0 ? (guint64)first : input;
  r->index = g_new (guint, MAX (r->held->len, 1));
  *first_input = r->next;

  g_free (map);
  g_free (slots);
  g_array_unref (items);
  g_array_unref (free_ids);
  if (r->held->len == 0) {
    echo->rng = r->rng;
    gst_echo_resume_free (r);
    return NULL;
  }
  return r;
}

/* Whether the items here are batches: downstream takes tensors. */
static gboolean
gst_echo_carries_batches (GstEcho *echo)
{
  GstCaps *caps = gst_pad_peer_query_caps (echo->srcpad, NULL);
  gboolean batches = !gst_caps_is_empty (caps) && !gst_caps_is_any (caps);
  guint i;

  for (i = 0; batches && i < gst_caps_get_size (caps); i++)
    batches = gst_structure_has_name (
        gst_caps_get_structure (caps, i), "other/tensors");
  gst_caps_unref (caps);
  return batches;
}

/* The resume query on its way back: downstream's answer (outputs of this
 * echo) becomes where the input restarts, and the state to rebuild. */
gboolean
gst_echo_resume_answer (GstEcho *echo, GstQuery *query)
{
  guint64 samples, fresh, outputs, first = 0, unit = 1;
  guint batch_size;
  gdouble factor;
  gboolean echo_upstream;
  GstStructure *s = gst_query_writable_structure (query);

  /* on the way down: an echo that has another upstream gets all of its
   * window again (the other one cannot skip part of its output) */
  echo_upstream = gst_structure_has_field (s, "echo-upstream");
  gst_structure_set (s, "echo-upstream", G_TYPE_BOOLEAN, TRUE, NULL);
  if (!gst_pad_peer_query (echo->srcpad, query))
    return FALSE;
  if (!gst_train_resume_query_parse (query, &samples, &fresh, &batch_size))
    return TRUE;
  if (batch_size > 0 && gst_echo_carries_batches (echo))
    unit = batch_size;
  if (echo->settings.mode == GST_ECHO_MODE_ADAPTIVE) {
    first = fresh / unit;
    GST_INFO_OBJECT (echo,
        "adaptive mode: the input restarts after the %" G_GUINT64_FORMAT
        " fresh items trained on; the repeats differ from the first run's",
        first);
  } else {
    outputs = samples / unit;
    GST_OBJECT_LOCK (echo);
    factor = echo->props.factor;
    GST_OBJECT_UNLOCK (echo);
    if (echo->resume != NULL)
      gst_echo_resume_free (echo->resume);
    echo->resume = gst_echo_resume_replay (echo, factor, outputs, &first);
    GST_INFO_OBJECT (echo,
        "resuming after %" G_GUINT64_FORMAT " outputs: the input restarts at "
        "item %" G_GUINT64_FORMAT " of the %" G_GUINT64_FORMAT
        " that had arrived, %u of them still held",
        outputs, first, echo->resume ? echo->resume->end : first,
        echo->resume ? echo->resume->held->len : 0);
  }
  gst_train_resume_query_set (query, first * unit, first * unit, batch_size);
  if (echo->resume != NULL && !echo_upstream) {
    /* the source re-reads only the held items */
    GstEchoResume *r = echo->resume;
    guint64 *keep = g_new (guint64, (gsize)r->held->len * unit);
    guint i, n = 0;
    guint64 u;

    for (i = 0; i < r->held->len; i++)
      for (u = 0; u < unit; u++)
        keep[n++] =
            g_array_index (r->held, GstEchoResumeItem, i).input * unit + u;
    gst_train_resume_query_set_keep (query, keep, n, r->end * unit);
    r->sparse = TRUE;
    g_free (keep);
  }
  return TRUE;
}

/* Fixed mode while the re-read items come back: keeps the held ones,
 * drops the others, and after the last one puts the buffer back as it was
 * and goes on with the copies of the item that was entering. */
GstFlowReturn
gst_echo_resume_chain (GstEcho *echo, GstBuffer *buffer)
{
  GstEchoResume *r = echo->resume;
  GstEchoResumeItem *held = NULL;
  GstFlowReturn ret;
  guint i, last;

  if (r->sparse
      || (r->installed < r->held->len
          && g_array_index (r->held, GstEchoResumeItem, r->installed).input
              == r->next))
    held = &g_array_index (r->held, GstEchoResumeItem, r->installed);
  r->next++;
  if (held == NULL) {
    GST_LOG_OBJECT (
        echo, "re-read item %" G_GUINT64_FORMAT " had gone out", r->next - 1);
    gst_buffer_unref (buffer);
    return GST_FLOW_OK;
  }
  GST_OBJECT_LOCK (echo);
  echo->items_in++;
  GST_OBJECT_UNLOCK (echo);
  i = gst_echo_item_new (
      echo, buffer, gst_buffer_get_size (buffer), held->left);
  echo->items[i].emitted = held->emitted;
  r->index[r->installed++] = i;
  if (r->installed < r->held->len)
    return GST_FLOW_OK;

  /* all back: the buffer as it was, then the rest of the entering item */
  echo->resume = NULL;
  echo->rng = r->rng;
  for (i = 0; i < r->slots->len; i++)
    echo->slots[i] = r->index[g_array_index (r->slots, guint, i)];
  echo->n_slots = r->slots->len;
  last = r->index[r->held->len - 1];
  GST_DEBUG_OBJECT (echo, "restored %u items in %u slots, %u copies to go",
      r->held->len, echo->n_slots, r->pending_copies);
  if (g_array_index (r->held, GstEchoResumeItem, r->held->len - 1).input
      != r->end - 1)
    r->pending_copies = 0;
  ret = gst_echo_shuffle_enter (echo, last, r->pending_copies);
  gst_echo_resume_free (r);
  return ret;
}
