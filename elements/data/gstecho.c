/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstecho.c: data echoing: repeats the items that pass through it.
 *
 * SECTION:element-echo
 * @title: echo
 *
 * Repeats every buffer that passes through it, so that a fast consumer (a
 * training step on an accelerator) is not left waiting for a slow producer
 * (storage reads, JPEG decoding, augmentation): "data echoing" (Choi et al.,
 * 2019). Its caps are ANY, so it sits anywhere: on encoded samples, on
 * decoded images of any size, on augmented images or on batches.
 *
 * A repeat shares the original's memory: it is the same #GstBuffer, or a
 * shallow copy of it when its metadata must differ, never a copy of the
 * payload. Every emission writes into the buffer's #GstTrainSampleMeta or
 * #GstTrainBatchMeta how many times the item went out before (0 for the
 * first emission, 1 for the second, ...), added to the count the buffer
 * arrived with, so that a repeat of a repeat stays a repeat when two echos
 * are chained. Timestamps, offsets and flags are the original's.
 *
 * ## mode=fixed
 *
 * Each fresh item is emitted floor(@factor) times, plus once more with
 * probability @factor - floor(@factor), drawn per item. With
 * @shuffle-buffer-size 0 the copies go out back to back, and factor=1 is the
 * identity. Otherwise the copies wait in a buffer of that many copies and
 * leave in random order, as in tf.data's shuffle: once the buffer is full, a
 * random resident copy leaves for each copy that enters, so repeats spread
 * out and rarely share a batch. Everything happens in the upstream streaming
 * thread, and the output depends only on the input and @seed (in a
 * data-parallel job, ranks other than 0 mix their rank into it, as
 * augment does).
 *
 * ## mode=adaptive
 *
 * The element runs its own streaming thread on its source pad, as `queue`
 * does. Fresh items go out first, in arrival order, as soon as downstream
 * takes them: a repeat never delays a fresh item. Only when no fresh item is
 * waiting does it emit a repeat of one of the items it keeps (the last
 * @shuffle-buffer-size ones, at least one), each item at most @max-factor
 * times in total. Downstream back-pressure paces it, so the effective
 * factor follows the ratio of downstream to upstream speed by itself:
 * about 1 when upstream keeps up, up to @max-factor when upstream is the
 * bottleneck.
 *
 * Which item repeats: an item is due once at least G other items went out
 * after its last emission, G plus a random part of G more, where G is
 * @shuffle-buffer-size / ceil(@max-factor) (while fewer items have come,
 * their number instead of @shuffle-buffer-size): the copies of an item stay
 * apart (with the defaults, 1024 and 3, and once 1024 items came, at least
 * 341 emissions: never in one batch of up to 341) and items that went out
 * together do not come back together. Of the due items, those last emitted
 * at least half the kept items back (plus a random part of a quarter) come
 * first, so that while the rate leaves such items, copies are that far
 * apart whatever @max-factor (with 1024 items, 512 to 768 emissions: four
 * to six batches of 128; measured in docs/echo.md, such copies are worth
 * more than copies a batch or two apart); near @max-factor the floor G
 * takes over. Within each group the least emitted goes first, ties drawn
 * at random, so that the repeats spread evenly. When no kept item is due
 * and no fresh item waits, it waits for fresh data rather than send the
 * last items again at once; when upstream is the bottleneck, every item
 * still goes out @max-factor times, only later. A fresh item that finds the
 * buffer full displaces the most emitted kept item. Choosing scans the kept
 * items, so a repeat costs time in proportion to their number.
 *
 * How many repeats is the @policy. With back-pressure (the default), the
 * above: a repeat whenever no fresh item waits. Input that comes in bursts
 * (WebDataset shards over a network: a shard fetched ahead arrives whole)
 * then goes through unrepeated while the trickle between bursts is
 * repeated up to @max-factor times (docs/echo.md measures it). With
 * policy=rates (experimental) each fresh item sent owes as many repeats as
 * the ratio of the emissions downstream takes per second to the fresh
 * items that come per second, both smoothed over about 20 s, within [1,
 * @max-factor]; the owed repeats go out before the next fresh item, and at
 * most @shuffle-buffer-size / 8 fresh items wait in line, so that a burst
 * waits upstream instead of pushing the kept items out. A repeat still goes
 * out whenever nothing else can. The debug category `echo` logs each change
 * of the factor at level 5 (GST_DEBUG=echo:5).
 *
 * @factor is not used; the output order depends on timing. As with queue's
 * `queue_dataflow`, the `echo_dataflow` debug category logs every wait and
 * wake-up of the two threads (GST_DEBUG=echo_dataflow:6).
 *
 * ## Memory
 *
 * The element holds at most @shuffle-buffer-size items and, when
 * @max-size-bytes is not 0, at most that many bytes of them (the copies of an
 * item share its memory and count once; a single larger item still passes).
 * In fixed mode a full buffer makes a random copy leave for each one that
 * enters. In adaptive mode a fresh item displaces the most emitted repeat
 * candidate, and upstream blocks when the fresh items waiting fill the
 * buffer.
 *
 * ## Caps and events
 *
 * Every buffer goes downstream after the caps it arrived with: each held
 * item keeps its caps, and new caps are sent before an item whose caps
 * differ from the last ones sent (decoded images of mixed sizes stay right
 * through a shuffle). New caps are checked with downstream (accept-caps) when
 * they arrive; they go on by themselves only when no item from before them
 * is held (in adaptive mode, when they reach the head of the line), and
 * otherwise travel with the items that have them.
 *
 * In fixed mode, stream-start, segment, stream-group-done, EOS and
 * non-sticky serialized events (gap, custom serialized events) first drain
 * the buffer: every copy received before them goes out, in random order,
 * before they do. The other sticky events (tags, sticky custom events)
 * describe the stream rather than a place in it and go on at once, without
 * draining.
 *
 * In adaptive mode every serialized event waits in line with the fresh
 * items and leaves after those that arrived before it. Stream-start, segment
 * and EOS also end the repeats of the items before them: at EOS the fresh
 * items still waiting go out, then EOS, and pending repeats are dropped
 * (repeats only fill time in which downstream would otherwise wait, and at
 * EOS nothing is coming). When downstream ends the stream itself (a push
 * returns EOS, as cudatrainsink's does at max-steps), echo drops what it
 * holds and answers further buffers with EOS, but still passes serialized
 * events on, as queue does, so that the EOS upstream sends then reaches
 * downstream; a stream-start or a segment takes buffers again.
 *
 * A flush drops everything held.
 *
 * ## Allocation
 *
 * Allocation queries go downstream and their answer back upstream, so that
 * batcher ! echo ! cudatrainsink keeps the sink's buffer pool (pinned
 * memory for the copy to the GPU). Echo holds buffers while it waits for
 * more input, up to @shuffle-buffer-size + 1 items: a pool sized for
 * downstream alone would run dry with its buffers here, and upstream,
 * waiting for a free one, would never send what lets echo release them. So
 * echo raises the most buffers of every bounded pool in the answer by
 * what it can hold, @shuffle-buffer-size + 2 (the items it holds, one more
 * entering, and in adaptive mode the one being pushed; an unbounded pool
 * stays unbounded): the pool grows rather than deadlocks. Held buffers are
 * never copied.
 *
 * ## Message
 *
 * When the stream ends, once per run (and again after a flush), echo
 * posts an element message named `echo-stats`: before EOS goes downstream
 * when upstream ends it, or as soon as downstream ends it (a push returns
 * EOS, as cudatrainsink's does at max-steps: the EOS that upstream sends
 * then may reach echo only after the application stopped the pipeline):
 *
 * * #guint64 `items-in`: fresh buffers received.
 * * #guint64 `items-out`: buffers pushed downstream (fresh and repeats);
 *   not the one that downstream answered with EOS.
 * * #guint64 `fresh-out`: buffers pushed downstream for the first time;
 *   items-out - fresh-out are repeats.
 * * #gdouble `effective-factor`: items-out / fresh-out, how many times each
 *   item went out on average (1 when nothing went out). When upstream ended
 *   the stream every fresh item has gone out, so this is also items-out /
 *   items-in.
 * * #gchararray `mode`: "fixed" or "adaptive".
 *
 * The counters are also readable at any time as the @items-in, @items-out,
 * @fresh-out and @effective-factor properties; they restart at READY to
 * PAUSED. effective-factor reads the same way at any time: while the
 * shuffle buffer still fills (items in, few out) it counts only the items
 * that went out, so a dot dump taken then shows the factor so far, not a
 * fraction.
 *
 * ## Exact resume
 *
 * When a cudatrainsink resumes from a checkpoint, datasetsrc asks it where
 * to start (see train-meta.h) and echo translates the answer on its way
 * back. In fixed mode echo replays its draws, without data, up to the
 * outputs the checkpoint trained on: that gives its generator's state and
 * the items its buffer held then. The source reads again only those items
 * (it passes over the others of their span unread), echo puts them back with
 * their emissions so far, and goes on exactly as the first run did. (Behind
 * another echo, which cannot leave out part of its output, the whole span
 * comes again and echo drops what had already gone out for good.) Exact
 * while the buffer is bounded by its item count (not @max-size-bytes) and
 * @factor is not changed while playing. In adaptive mode, whose output
 * depends on timing, the source restarts after the fresh items trained on
 * and echo starts empty. Behind batcher (batch echoing) echo's items are
 * batches: it reads the answer's samples as batches (over the batch size
 * the sink gives), and the window it asks for counts batches.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 datasetsrc location=/data/train ! imagedec ! echo factor=2 shuffle-buffer-size=1024 ! fakesink
 * ]| Every decoded image twice, the copies shuffled through 1024 slots.
 * |[
 * gst-launch-1.0 datasetsrc location=/data/train ! imagedec ! echo mode=adaptive max-factor=4 ! augment ! batcher ! queue ! fakesink
 * ]| Repeats only while the sink would otherwise wait for data.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "echo-private.h"
#include "element-util.h"
#include "train-common.h"
#include "train-meta.h"
#include "train-props.h"

GST_DEBUG_CATEGORY (gst_echo_debug);
GST_DEBUG_CATEGORY (gst_echo_dataflow_debug);

#define DEFAULT_MODE GST_ECHO_MODE_FIXED
#define DEFAULT_FACTOR 2.0
#define DEFAULT_MAX_FACTOR 3.0
#define DEFAULT_SHUFFLE_BUFFER_SIZE 1024
#define DEFAULT_MAX_SIZE_BYTES (G_GUINT64_CONSTANT (1) << 30)
#define DEFAULT_SEED 0
#define DEFAULT_POLICY GST_ECHO_POLICY_BACK_PRESSURE

/* The random stream of echo's draws ("echo"): a pipeline that gives every
 * element the same seed must not have echo replay datasetsrc's shuffle
 * (stream = epoch) or augment's draws. */
#define RANDOM_STREAM G_GUINT64_CONSTANT (0x6563686f)

/* Bounds that keep one item's copies and the item table reasonable. */
#define MAX_FACTOR 1000.0
#define MAX_SHUFFLE_BUFFER_SIZE (1 << 20)

enum
{
  PROP_0,
  PROP_MODE,
  PROP_FACTOR,
  PROP_MAX_FACTOR,
  PROP_SHUFFLE_BUFFER_SIZE,
  PROP_MAX_SIZE_BYTES,
  PROP_SEED,
  PROP_ITEMS_IN,
  PROP_ITEMS_OUT,
  PROP_FRESH_OUT,
  PROP_EFFECTIVE_FACTOR,
  PROP_POLICY,
  N_PROPERTIES
};

/* effective-factor is not kept: it follows from the counters. */
static void
gst_echo_compute_effective_factor (gconstpointer base, GValue *value)
{
  const GstEcho *echo = base;

  g_value_set_double (
      value, gst_echo_effective_factor (echo->fresh_out, echo->items_out));
}

/* Where each property is kept in GstEcho (train-props.h). */
#define FIELD(name) .offset = G_STRUCT_OFFSET (GstEcho, name)
static const GstTrainProp property_table[N_PROPERTIES] = {
  [PROP_MODE] = { FIELD (props.mode) },
  [PROP_FACTOR] = { FIELD (props.factor) },
  [PROP_MAX_FACTOR] = { FIELD (props.max_factor) },
  [PROP_SHUFFLE_BUFFER_SIZE] = { FIELD (props.shuffle_buffer_size) },
  [PROP_MAX_SIZE_BYTES] = { FIELD (props.max_size_bytes) },
  [PROP_SEED] = { FIELD (props.seed) },
  [PROP_ITEMS_IN] = { FIELD (items_in) },
  [PROP_ITEMS_OUT] = { FIELD (items_out) },
  [PROP_FRESH_OUT] = { FIELD (fresh_out) },
  [PROP_EFFECTIVE_FACTOR] = { .compute = gst_echo_compute_effective_factor },
  [PROP_POLICY] = { FIELD (props.policy) },
};
#undef FIELD

G_STATIC_ASSERT (sizeof (GstEchoMode) == sizeof (gint));

static GParamSpec *properties[N_PROPERTIES];

G_STATIC_ASSERT (sizeof (GstEchoPolicy) == sizeof (gint));

static GType
gst_echo_policy_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_ECHO_POLICY_BACK_PRESSURE,
        "Repeat whenever no fresh item waits and downstream takes more",
        "back-pressure" },
    { GST_ECHO_POLICY_RATES,
        "Repeat each fresh item as often as the smoothed rates in and out "
        "say, a burst as much as a trickle (experimental)",
        "rates" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstEchoPolicy", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static GType
gst_echo_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_ECHO_MODE_FIXED,
        "Emit every item factor times, shuffled through the buffer", "fixed" },
    { GST_ECHO_MODE_ADAPTIVE,
        "Emit fresh items first; repeat (up to max-factor times) only while "
        "downstream would otherwise wait",
        "adaptive" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstEchoMode", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE (
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE (
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

#define gst_echo_parent_class parent_class
G_DEFINE_TYPE (GstEcho, gst_echo, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (echo, "echo", GST_RANK_NONE, GST_TYPE_ECHO);

static void gst_echo_dispose (GObject *object);
static void gst_echo_finalize (GObject *object);
static GstStateChangeReturn gst_echo_change_state (
    GstElement *element, GstStateChange transition);
static GstFlowReturn gst_echo_chain (
    GstPad *pad, GstObject *parent, GstBuffer *buffer);
static gboolean gst_echo_sink_event (
    GstPad *pad, GstObject *parent, GstEvent *event);
static gboolean gst_echo_sink_query (
    GstPad *pad, GstObject *parent, GstQuery *query);
static gboolean gst_echo_src_event (
    GstPad *pad, GstObject *parent, GstEvent *event);
static gboolean gst_echo_sink_activate_mode (
    GstPad *pad, GstObject *parent, GstPadMode mode, gboolean active);
static gboolean gst_echo_src_activate_mode (
    GstPad *pad, GstObject *parent, GstPadMode mode, gboolean active);

static void
gst_echo_class_init (GstEchoClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->dispose = gst_echo_dispose;
  gobject_class->finalize = gst_echo_finalize;

  properties[PROP_MODE] = g_param_spec_enum ("mode", "Mode",
      "fixed: every item factor times; adaptive: fresh items first, "
      "repeats only while downstream would otherwise wait",
      gst_echo_mode_get_type (), DEFAULT_MODE,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_FACTOR] = g_param_spec_double ("factor", "Echo factor",
      "mode=fixed only (mode=adaptive ignores it and repeats up to "
      "max-factor): emit each item floor(factor) times, plus once more "
      "with probability factor - floor(factor)",
      1.0, MAX_FACTOR, DEFAULT_FACTOR,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  properties[PROP_MAX_FACTOR] = g_param_spec_double ("max-factor",
      "Maximum echo factor",
      "mode=adaptive: emit each item at most floor(max-factor) times in "
      "all, plus once more with probability max-factor - "
      "floor(max-factor); repeats go to the least emitted kept items",
      1.0, MAX_FACTOR, DEFAULT_MAX_FACTOR,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  properties[PROP_SHUFFLE_BUFFER_SIZE] =
      g_param_spec_uint ("shuffle-buffer-size", "Shuffle buffer size",
          "Items held back and sent in random order, so that the copies of "
          "an item leave far apart and rarely share a batch; larger spreads "
          "them further and holds more memory (see max-size-bytes). "
          "mode=fixed: 0 sends an item's copies back to back. mode=adaptive: "
          "the items kept for repeats and the fresh ones waiting (0 counts "
          "as 1); an item's copies go out at least this / ceil(max-factor) "
          "emissions apart, and half this apart while the rate allows",
          0, MAX_SHUFFLE_BUFFER_SIZE, DEFAULT_SHUFFLE_BUFFER_SIZE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_MAX_SIZE_BYTES] =
      g_param_spec_uint64 ("max-size-bytes", "Maximum size in bytes",
          "Most bytes of items held (copies of an item count once; 0 = no "
          "limit); beyond it the buffer counts as full",
          0, G_MAXUINT64, DEFAULT_MAX_SIZE_BYTES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_SEED] = g_param_spec_uint64 ("seed", "Seed",
      "Seed of the per-item draws and of the shuffle; the same seed and "
      "input give the same output in mode=fixed (in a data-parallel job, "
      "ranks other than 0 mix their rank into it)",
      0, G_MAXUINT64, DEFAULT_SEED,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_ITEMS_IN] = g_param_spec_uint64 ("items-in", "Items in",
      "Fresh buffers received since the element last went to PAUSED", 0,
      G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_ITEMS_OUT] = g_param_spec_uint64 ("items-out", "Items out",
      "Buffers pushed downstream (fresh and repeats) since the element "
      "last went to PAUSED",
      0, G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_FRESH_OUT] =
      g_param_spec_uint64 ("fresh-out", "Fresh items out",
          "Items pushed downstream for the first time (the others in "
          "items-out are repeats) since the element last went to PAUSED",
          0, G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_EFFECTIVE_FACTOR] =
      g_param_spec_double ("effective-factor", "Effective factor",
          "Emissions per item so far, items-out / fresh-out (1 before "
          "anything went out); meaningful at any time, also while the "
          "shuffle buffer fills",
          1.0, G_MAXDOUBLE, 1.0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_POLICY] = g_param_spec_enum ("policy", "Adaptive policy",
      "mode=adaptive: how many repeats. back-pressure: a repeat whenever no "
      "fresh item waits (input that comes in bursts, as shards over a "
      "network do, goes through unrepeated and its trickle is repeated "
      "max-factor times); rates: each fresh item owes as many repeats as "
      "the ratio of the rate downstream takes to the rate upstream "
      "delivers, smoothed over 20 s, and they go out before the next fresh "
      "item (experimental: measured on echo's trace, not yet in training "
      "runs; docs/echo.md)",
      gst_echo_policy_get_type (), DEFAULT_POLICY,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  gst_train_props_install (
      gobject_class, property_table, properties, N_PROPERTIES);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Data echo", "Generic",
      "Repeats every item (fixed factor, shuffled) or only while downstream "
      "would wait (adaptive), sharing the payload memory; passes allocation "
      "queries on. At the end of the stream (EOS from upstream or from "
      "downstream) posts an element message echo-stats: items-in, "
      "items-out, fresh-out (guint64), effective-factor (gdouble, items-out "
      "/ fresh-out), mode (string)",
      "gst-train developers");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_echo_change_state);

  gst_type_mark_as_plugin_api (gst_echo_mode_get_type (), 0);
  gst_type_mark_as_plugin_api (gst_echo_policy_get_type (), 0);
  GST_DEBUG_CATEGORY_INIT (gst_echo_debug, "echo", 0, "data echoing");
  GST_DEBUG_CATEGORY_INIT (gst_echo_dataflow_debug, "echo_dataflow", 0,
      "dataflow inside the echo element");
}

static void
gst_echo_init (GstEcho *echo)
{
  echo->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (
      echo->sinkpad, GST_DEBUG_FUNCPTR (gst_echo_chain));
  gst_pad_set_event_function (
      echo->sinkpad, GST_DEBUG_FUNCPTR (gst_echo_sink_event));
  gst_pad_set_query_function (
      echo->sinkpad, GST_DEBUG_FUNCPTR (gst_echo_sink_query));
  gst_pad_set_activatemode_function (
      echo->sinkpad, GST_DEBUG_FUNCPTR (gst_echo_sink_activate_mode));
  GST_PAD_SET_PROXY_CAPS (echo->sinkpad);
  gst_element_add_pad (GST_ELEMENT (echo), echo->sinkpad);

  echo->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_event_function (
      echo->srcpad, GST_DEBUG_FUNCPTR (gst_echo_src_event));
  gst_pad_set_activatemode_function (
      echo->srcpad, GST_DEBUG_FUNCPTR (gst_echo_src_activate_mode));
  GST_PAD_SET_PROXY_CAPS (echo->srcpad);
  gst_element_add_pad (GST_ELEMENT (echo), echo->srcpad);

  gst_train_props_init (echo, property_table, properties, N_PROPERTIES);
  echo->mode = &gst_echo_fixed_mode;
  echo->srcresult = GST_FLOW_FLUSHING;
  g_mutex_init (&echo->lock);
  g_cond_init (&echo->item_add);
  g_cond_init (&echo->item_del);
}

static void
gst_echo_dispose (GObject *object)
{
  if (!gst_train_element_stop_before_dispose (GST_ELEMENT (object)))
    return; /* resurrected until another thread stops it */
  G_OBJECT_CLASS (parent_class)->dispose (object);
}

static void
gst_echo_finalize (GObject *object)
{
  GstEcho *echo = GST_ECHO (object);

  g_mutex_clear (&echo->lock);
  g_cond_clear (&echo->item_add);
  g_cond_clear (&echo->item_del);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* ---- the data flow, handed to the mode (echo-fixed.c, echo-adaptive.c)
 * or, while the re-read items come back, to echo-resume.c ---- */

static GstFlowReturn
gst_echo_chain (GstPad *pad, GstObject *parent, GstBuffer *buffer)
{
  GstEcho *echo = GST_ECHO (parent);

  if (echo->resume != NULL)
    return gst_echo_resume_chain (echo, buffer);
  return echo->mode->chain (echo, buffer);
}

static gboolean
gst_echo_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstEcho *echo = GST_ECHO (parent);
  gboolean ok;

  GST_LOG_OBJECT (echo, "%" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_EOS:
      GST_DEBUG_OBJECT (echo, "EOS");
      break;
    case GST_EVENT_FLUSH_START:
      GST_DEBUG_OBJECT (echo, "flush start");
      /* Downstream first: that unblocks a push in progress. */
      ok = gst_pad_push_event (echo->srcpad, event);
      if (echo->mode->flush_start != NULL)
        echo->mode->flush_start (echo);
      return ok;
    case GST_EVENT_FLUSH_STOP:
      GST_DEBUG_OBJECT (echo, "flush stop: dropping what is held");
      ok = gst_pad_push_event (echo->srcpad, event);
      /* the stream goes on: it will end again (the pushing thread waits,
       * adaptive mode's task paused by the flush start) */
      echo->stats_posted = FALSE;
      if (echo->mode->flush_stop != NULL)
        echo->mode->flush_stop (echo);
      return ok;
    default:
      break;
  }
  if (!GST_EVENT_IS_SERIALIZED (event))
    return gst_pad_event_default (pad, parent, event);
  return echo->mode->event (echo, event);
}

static gboolean
gst_echo_sink_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstEcho *echo = GST_ECHO (parent);

  if (gst_train_is_resume_query (query))
    return gst_echo_resume_answer (echo, query);
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_ALLOCATION:
      /* Serialized, but its answer describes downstream's memory, not a
       * place in the stream: it may overtake the items in adaptive mode's
       * line. */
      return gst_echo_items_proxy_allocation (echo, query);
    default:
      /* Adaptive mode pushes from its own thread: a serialized query
       * answered from here would overtake the data in line. */
      if (echo->mode->own_thread && GST_QUERY_IS_SERIALIZED (query)) {
        GST_DEBUG_OBJECT (echo, "not forwarding serialized %s query",
            GST_QUERY_TYPE_NAME (query));
        return FALSE;
      }
      return gst_pad_query_default (pad, parent, query);
  }
}

static gboolean
gst_echo_src_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstEcho *echo = GST_ECHO (parent);

  if (GST_EVENT_TYPE (event) == GST_EVENT_RECONFIGURE
      && echo->mode->reconfigure != NULL)
    echo->mode->reconfigure (echo);
  return gst_pad_event_default (pad, parent, event);
}

static gboolean
gst_echo_sink_activate_mode (
    GstPad *pad, GstObject *parent, GstPadMode mode, gboolean active)
{
  GstEcho *echo = GST_ECHO (parent);

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (!active && echo->mode->sink_deactivate != NULL)
    echo->mode->sink_deactivate (echo);
  return TRUE;
}

static gboolean
gst_echo_src_activate_mode (
    GstPad *pad, GstObject *parent, GstPadMode mode, gboolean active)
{
  GstEcho *echo = GST_ECHO (parent);

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (echo->mode->src_activate == NULL)
    return TRUE;
  return echo->mode->src_activate (echo, active);
}

/* ---- state ---- */

static void
gst_echo_start (GstEcho *echo)
{
  const GstEchoSettings *s = &echo->settings;

  GST_OBJECT_LOCK (echo);
  echo->settings = echo->props;
  echo->items_in = 0;
  echo->items_out = 0;
  echo->fresh_out = 0;
  GST_OBJECT_UNLOCK (echo);
  echo->stats_posted = FALSE;

  echo->mode = s->mode == GST_ECHO_MODE_ADAPTIVE ? &gst_echo_adaptive_mode
                                                 : &gst_echo_fixed_mode;
  echo->mode->start (echo);
  {
    gint rank;
    guint64 seed = gst_train_rank_seed (s->seed, &rank);

    if (seed != s->seed)
      GST_INFO_OBJECT (echo,
          "rank %d of a data-parallel job: drawing from seed %" G_GUINT64_FORMAT
          " mixed with the rank",
          rank, s->seed);
    gt_random_init (&echo->rng, seed, RANDOM_STREAM);
  }
  GST_INFO_OBJECT (echo,
      "starting: mode %s, factor %g, max-factor %g, shuffle-buffer-size %u "
      "(%u held at most), max-size-bytes %" G_GUINT64_FORMAT
      ", seed %" G_GUINT64_FORMAT,
      echo->mode->name, s->factor, s->max_factor, s->shuffle_buffer_size,
      echo->capacity, s->max_size_bytes, s->seed);
}

static void
gst_echo_stop (GstEcho *echo)
{
  GST_INFO_OBJECT (echo,
      "stopping: %" G_GUINT64_FORMAT " items in, %" G_GUINT64_FORMAT
      " out (%" G_GUINT64_FORMAT " fresh)",
      echo->items_in, echo->items_out, echo->fresh_out);
  g_mutex_lock (&echo->lock);
  if (echo->mode->stop != NULL)
    echo->mode->stop (echo);
  gst_echo_items_free (echo);
  g_mutex_unlock (&echo->lock);
  g_clear_pointer (&echo->resume, gst_echo_resume_free);
  gst_clear_caps (&echo->sink_caps);
  gst_clear_caps (&echo->src_caps);
}

static GstStateChangeReturn
gst_echo_change_state (GstElement *element, GstStateChange transition)
{
  GstEcho *echo = GST_ECHO (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    gst_echo_start (echo);

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY
      || (transition == GST_STATE_CHANGE_READY_TO_PAUSED
          && ret == GST_STATE_CHANGE_FAILURE))
    gst_echo_stop (echo);
  return ret;
}
