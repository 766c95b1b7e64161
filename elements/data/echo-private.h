/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* echo-private.h: the echo element's insides, shared by its files.
 *
 * gstecho.c owns the element: properties, pads, documentation, state
 * changes. It hands the data flow to the mode chosen at READY to PAUSED
 * through a GstEchoModeFuncs table: echo-fixed.c (everything in the
 * upstream streaming thread) or echo-adaptive.c (its own task on the source
 * pad, as queue). echo-resume.c answers the resume query and, in fixed
 * mode, rebuilds the shuffle buffer from the re-read items. What the modes
 * share (the held items, the shuffle buffer's slots, pushing downstream
 * after the right caps, the statistics) is echo-buffer.c. Calls go that way
 * only: gstecho.c to the mode files, the mode files to echo-buffer.c. */
#ifndef __GST_ECHO_PRIVATE_H__
#define __GST_ECHO_PRIVATE_H__

#include "gstecho.h"
#include "gt-random.h"

#include <gst/base/gstqueuearray.h>

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (gst_echo_debug);
#define GST_CAT_DEFAULT gst_echo_debug
/* Every wait and wake-up of adaptive mode's line, as queue_dataflow. */
GST_DEBUG_CATEGORY_EXTERN (gst_echo_dataflow_debug);

typedef enum
{
  GST_ECHO_MODE_FIXED,
  GST_ECHO_MODE_ADAPTIVE,
} GstEchoMode;

/* mode=adaptive: how many repeats (echo-adaptive.c, "the rates"). */
typedef enum
{
  GST_ECHO_POLICY_BACK_PRESSURE,
  GST_ECHO_POLICY_RATES,
} GstEchoPolicy;

/* The properties as they were when the element started. factor and
 * max-factor may change while it plays: the streaming thread reads them
 * from the properties, per item. */
typedef struct
{
  GstEchoMode mode;
  gdouble factor;
  gdouble max_factor;
  guint shuffle_buffer_size;
  guint64 max_size_bytes;
  guint64 seed;
  GstEchoPolicy policy;
} GstEchoSettings;

/* One fresh buffer and what its emissions need. */
typedef struct
{
  GstBuffer *buffer; /* NULL while the entry is free */
  GstCaps *caps;     /* the caps it arrived with, or NULL */
  gsize size;
  guint base;         /* the emission count it arrived with */
  guint emitted;      /* emissions so far */
  guint left;         /* emissions still due (fixed) or allowed (adaptive) */
  gboolean has_meta;  /* carries a sample or a batch meta */
  guint64 due;        /* adaptive: it may repeat once sequence reaches it */
  guint64 spread_due; /* adaptive: from here on it is preferred */
} GstEchoItem;

/* Exact resume (fixed mode): the shuffle buffer as it was after the last
 * output the resuming sink trained on, rebuilt from the items re-read
 * (echo-resume.c). */
typedef struct _GstEchoResume GstEchoResume;

/* What a mode does with the data flow. gstecho.c calls these and nothing
 * else of a mode; a NULL hook does nothing. */
typedef struct
{
  const gchar *name; /* as echo-stats' mode field */
  /* READY to PAUSED, with the settings copied: sizes the held items
   * (gst_echo_items_init) and what else the mode needs. */
  void (*start) (GstEcho *echo);
  /* PAUSED to READY, pads inactive: frees what start made beyond the
   * items, which gstecho.c frees after. */
  void (*stop) (GstEcho *echo);
  GstFlowReturn (*chain) (GstEcho *echo, GstBuffer *buffer);
  /* A serialized event other than the flushes (taken). */
  gboolean (*event) (GstEcho *echo, GstEvent *event);
  /* After the flush went downstream. */
  void (*flush_start) (GstEcho *echo);
  void (*flush_stop) (GstEcho *echo);
  /* The sink pad goes inactive: unblock a chain function that waits. */
  void (*sink_deactivate) (GstEcho *echo);
  /* The source pad goes (in)active in push mode. */
  gboolean (*src_activate) (GstEcho *echo, gboolean active);
  /* A reconfigure event came from downstream. */
  void (*reconfigure) (GstEcho *echo);
  /* It pushes from a thread of its own: a serialized query answered from
   * the sink pad would overtake the data in line. */
  gboolean own_thread;
} GstEchoModeFuncs;

extern const GstEchoModeFuncs gst_echo_fixed_mode;
extern const GstEchoModeFuncs gst_echo_adaptive_mode;

/* What waits in adaptive mode's line: a fresh item or a serialized event. */
typedef struct
{
  GstEvent *event;
  guint item;
} GstEchoEntry;

struct _GstEcho
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* Properties and counters, under the object lock. */
  GstEchoSettings props;
  guint64 items_in;
  guint64 items_out;
  guint64 fresh_out; /* first emissions among items_out */

  /* Chosen at READY to PAUSED from @settings, the copy of @props then. */
  GstEchoSettings settings;
  const GstEchoModeFuncs *mode;
  guint capacity; /* items (fixed: copies) held at most */

  /* Held items: the streaming thread's own in fixed mode, under @lock in
   * adaptive mode. @slots holds, in fixed mode, one entry per copy waiting
   * in the shuffle buffer and, in adaptive mode, the items that may still be
   * repeated. */
  GstEchoItem *items;
  guint n_items;
  guint *free_items;
  guint n_free;
  guint *slots;
  guint n_slots;
  guint64 held_bytes;
  GtRandom rng;
  GstCaps *sink_caps; /* the caps of the items that arrive next */
  /* set by the resume query before data flows; the streaming thread's
   * until the re-read items are back (fixed mode) */
  GstEchoResume *resume;

  /* Adaptive mode, as queue: one lock and two conditions, waited on and
   * signalled through the ECHO_WAIT_* and ECHO_SIGNAL_* macros. */
  GMutex lock;
  GCond item_add; /* something to push, or flushing */
  GCond item_del; /* room for a fresh item, or flushing */
  /* Who waits: g_cond_signal() is a system call even when nobody does. */
  gboolean waiting_add;
  gboolean waiting_del;
  GstQueueArray *line; /* GstEchoEntry, in arrival order */
  guint line_items;
  guint64 line_bytes;
  GstFlowReturn srcresult;
  gboolean eos; /* EOS arrived: upstream sees no more flow returns */
  /* Downstream answered a buffer with EOS: buffers are refused with EOS,
   * serialized events still go through the line (as queue's
   * "unexpected"), until a stream-start or a segment arrives. */
  gboolean downstream_eos;

  /* Adaptive mode's schedule of repeats, under @lock. */
  guint64 sequence; /* emissions so far (fresh and repeats) */
  guint gap;        /* other emissions between two of one item, at least */
  guint spread;     /* ... and preferably (half the kept items) */

  /* Adaptive mode's rates, under @lock (echo-adaptive.c, "the rates"):
   * what came in per second (and how long upstream was held back), what
   * went out over the time the task had something to send, as exponentially
   * weighted sums of one-second windows; the factor they give; the repeats
   * owed to the fresh items sent. */
  gboolean by_rates;     /* the policy: rates, or back-pressure alone */
  gint64 window_start;   /* monotonic µs; 0: not started */
  gint64 window_blocked; /* µs the chain function waited for room */
  gint64 window_idle;    /* µs the task waited for something to send */
  guint64 window_in, window_out;
  guint windows;
  gdouble in_sum, time_sum, blocked_sum, out_sum, busy_sum;
  gdouble target; /* emissions per fresh item sought */
  gdouble owed;   /* repeats owed, sent before the next fresh */

  /* The pushing thread's own (upstream's thread in fixed mode, the source
   * pad's task in adaptive mode). */
  GstCaps *src_caps; /* the caps last sent downstream */
  /* echo-stats went out for this run (cleared at start and by a flush) */
  gboolean stats_posted;
};

/* ---- echo-buffer.c: what the modes share ---- */

/* Allocates room for @capacity items in the slots (plus the one entering)
 * and empties it. */
void gst_echo_items_init (GstEcho *echo, guint capacity);
/* Frees every held item. */
void gst_echo_items_clear (GstEcho *echo);
/* Frees the held items and their room. */
void gst_echo_items_free (GstEcho *echo);
/* The allocation query on its way back up, each bounded pool widened by
 * the buffers echo may hold. */
gboolean gst_echo_items_proxy_allocation (GstEcho *echo, GstQuery *query);
/* floor(@factor), plus one with probability @factor - floor(@factor). */
guint gst_echo_draw_count (GtRandom *rng, gdouble factor);
/* Stores @buffer (taken) of @size bytes with @left emissions to come;
 * returns its index. */
guint gst_echo_item_new (
    GstEcho *echo, GstBuffer *buffer, gsize size, guint left);
void gst_echo_item_free (GstEcho *echo, guint index);
/* The buffer for the next emission of item @index, its caps in @caps. */
GstBuffer *gst_echo_item_emit (
    GstEcho *echo, guint index, GstCaps **caps, gboolean *fresh);

/* Whether fixed mode's shuffle buffer has no room for another copy. */
gboolean gst_echo_shuffle_is_full (GstEcho *echo);
/* Sends out the copy in a random slot of the shuffle buffer. */
GstFlowReturn gst_echo_shuffle_emit_random (GstEcho *echo);
/* Puts @copies copies of item @index into the shuffle buffer (back to back
 * downstream when it has no slots), sending out random copies while it is
 * full; on a flow error forgets the copies that did not get in. */
GstFlowReturn gst_echo_shuffle_enter (GstEcho *echo, guint index, guint copies);

/* Pushes @buffer after @caps (both taken; @caps may be NULL); when
 * downstream answers EOS, posts echo-stats (once per run). */
GstFlowReturn gst_echo_push (
    GstEcho *echo, GstBuffer *buffer, GstCaps *caps, gboolean fresh);
/* Posts echo-stats (unless downstream ended the stream first and it went
 * out then) and pushes @eos (taken), after @caps (taken, may be NULL) when
 * no buffer carried caps downstream. */
gboolean gst_echo_push_eos (GstEcho *echo, GstEvent *eos, GstCaps *caps);
/* Whether downstream takes @caps. */
gboolean gst_echo_downstream_accepts (GstEcho *echo, GstCaps *caps);
/* items-out / fresh-out, 1 before the first item went out. */
gdouble gst_echo_effective_factor (guint64 fresh_out, guint64 items_out);

/* ---- echo-resume.c: exact resume ---- */

/* The resume query on its way back up (see train-meta.h). */
gboolean gst_echo_resume_answer (GstEcho *echo, GstQuery *query);
/* Fixed mode while the re-read items come back (@echo->resume is set). */
GstFlowReturn gst_echo_resume_chain (GstEcho *echo, GstBuffer *buffer);
void gst_echo_resume_free (GstEchoResume *resume);

G_END_DECLS

#endif /* __GST_ECHO_PRIVATE_H__ */
