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
 * EOS nothing is coming).
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
 * what it can hold (an unbounded pool stays unbounded): the pool grows
 * rather than deadlocks. Held buffers are never copied.
 *
 * ## Message
 *
 * Before EOS goes downstream, echo posts an element message named
 * `echo-stats`:
 *
 * * #guint64 `items-in`: fresh buffers received.
 * * #guint64 `items-out`: buffers pushed downstream (fresh and repeats).
 * * #guint64 `fresh-out`: buffers pushed downstream for the first time;
 *   items-out - fresh-out are repeats.
 * * #gdouble `effective-factor`: items-out / fresh-out, how many times each
 *   item went out on average (1 when nothing went out). At EOS every fresh
 *   item has gone out, so this is also items-out / items-in.
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
 * and echo starts empty.
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

#include "gstecho.h"
#include "train-common.h"
#include "train-meta.h"
#include "gt-random.h"

#include <gst/base/gstqueuearray.h>

GST_DEBUG_CATEGORY_STATIC (gst_echo_debug);
#define GST_CAT_DEFAULT gst_echo_debug
/* Every wait and wake-up of adaptive mode's line, as queue_dataflow. */
GST_DEBUG_CATEGORY_STATIC (echo_dataflow);

typedef enum
{
  GST_ECHO_MODE_FIXED,
  GST_ECHO_MODE_ADAPTIVE,
} GstEchoMode;

#define DEFAULT_MODE GST_ECHO_MODE_FIXED
#define DEFAULT_FACTOR 2.0
#define DEFAULT_MAX_FACTOR 3.0
#define DEFAULT_SHUFFLE_BUFFER_SIZE 1024
#define DEFAULT_MAX_SIZE_BYTES (G_GUINT64_CONSTANT (1) << 30)
#define DEFAULT_SEED 0

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
};

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
 * output the resuming sink trained on, rebuilt from the items re-read. */
typedef struct _GstEchoResume GstEchoResume;

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
  gboolean adaptive;
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

  /* Adaptive mode's schedule of repeats, under @lock. */
  guint64 sequence; /* emissions so far (fresh and repeats) */
  guint gap;        /* other emissions between two of one item, at least */
  guint spread;     /* ... and preferably (half the kept items) */

  /* The pushing thread's own (upstream's thread in fixed mode, the source
   * pad's task in adaptive mode). */
  GstCaps *src_caps; /* the caps last sent downstream */
};

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

static void gst_echo_finalize (GObject *object);
static void gst_echo_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec);
static void gst_echo_get_property (
    GObject *object, guint prop_id, GValue *value, GParamSpec *pspec);
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
static void gst_echo_loop (GstPad *pad);

static void
gst_echo_class_init (GstEchoClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->finalize = gst_echo_finalize;
  gobject_class->set_property = gst_echo_set_property;
  gobject_class->get_property = gst_echo_get_property;

  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode",
          "fixed: every item factor times; adaptive: fresh items first, "
          "repeats only while downstream would otherwise wait",
          gst_echo_mode_get_type (), DEFAULT_MODE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_FACTOR,
      g_param_spec_double ("factor", "Echo factor",
          "mode=fixed: emit each item floor(factor) times, plus once more "
          "with probability factor - floor(factor)",
          1.0, MAX_FACTOR, DEFAULT_FACTOR,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_MAX_FACTOR,
      g_param_spec_double ("max-factor", "Maximum echo factor",
          "mode=adaptive: emit each item at most floor(max-factor) times in "
          "all, plus once more with probability max-factor - "
          "floor(max-factor); repeats go to the least emitted kept items",
          1.0, MAX_FACTOR, DEFAULT_MAX_FACTOR,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_SHUFFLE_BUFFER_SIZE,
      g_param_spec_uint ("shuffle-buffer-size", "Shuffle buffer size",
          "fixed: copies that wait and leave in random order (0 = copies go "
          "out back to back); adaptive: items kept for repeats and fresh "
          "items waiting (0 counts as 1); an item's copies go out at least "
          "this / ceil(max-factor) emissions apart, and half this apart "
          "while the rate allows",
          0, MAX_SHUFFLE_BUFFER_SIZE, DEFAULT_SHUFFLE_BUFFER_SIZE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_MAX_SIZE_BYTES,
      g_param_spec_uint64 ("max-size-bytes", "Maximum size in bytes",
          "Most bytes of items held (copies of an item count once; 0 = no "
          "limit); beyond it the buffer counts as full",
          0, G_MAXUINT64, DEFAULT_MAX_SIZE_BYTES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_SEED,
      g_param_spec_uint64 ("seed", "Seed",
          "Seed of the per-item draws and of the shuffle; the same seed and "
          "input give the same output in mode=fixed (in a data-parallel job, "
          "ranks other than 0 mix their rank into it)",
          0, G_MAXUINT64, DEFAULT_SEED,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_ITEMS_IN,
      g_param_spec_uint64 ("items-in", "Items in",
          "Fresh buffers received since the element last went to PAUSED", 0,
          G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_ITEMS_OUT,
      g_param_spec_uint64 ("items-out", "Items out",
          "Buffers pushed downstream (fresh and repeats) since the element "
          "last went to PAUSED",
          0, G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_FRESH_OUT,
      g_param_spec_uint64 ("fresh-out", "Fresh items out",
          "Items pushed downstream for the first time (the others in "
          "items-out are repeats) since the element last went to PAUSED",
          0, G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_EFFECTIVE_FACTOR,
      g_param_spec_double ("effective-factor", "Effective factor",
          "Emissions per item so far, items-out / fresh-out (1 before "
          "anything went out); meaningful at any time, also while the "
          "shuffle buffer fills",
          1.0, G_MAXDOUBLE, 1.0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Data echo", "Generic",
      "Repeats every item (fixed factor, shuffled) or only while downstream "
      "would wait (adaptive), sharing the payload memory; passes allocation "
      "queries on. Before EOS posts an element message echo-stats: items-in, "
      "items-out, fresh-out (guint64), effective-factor (gdouble, items-out "
      "/ fresh-out), mode (string)",
      "gst-train developers");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_echo_change_state);

  gst_type_mark_as_plugin_api (gst_echo_mode_get_type (), 0);
  GST_DEBUG_CATEGORY_INIT (gst_echo_debug, "echo", 0, "data echoing");
  GST_DEBUG_CATEGORY_INIT (
      echo_dataflow, "echo_dataflow", 0, "dataflow inside the echo element");
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

  echo->props.mode = DEFAULT_MODE;
  echo->props.factor = DEFAULT_FACTOR;
  echo->props.max_factor = DEFAULT_MAX_FACTOR;
  echo->props.shuffle_buffer_size = DEFAULT_SHUFFLE_BUFFER_SIZE;
  echo->props.max_size_bytes = DEFAULT_MAX_SIZE_BYTES;
  echo->props.seed = DEFAULT_SEED;
  echo->srcresult = GST_FLOW_FLUSHING;
  g_mutex_init (&echo->lock);
  g_cond_init (&echo->item_add);
  g_cond_init (&echo->item_del);
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

/* items-out / fresh-out, 1 before the first item went out. Dividing by
 * items-in instead would read 0.2 while the shuffle buffer fills (items in,
 * few out yet); at EOS every fresh item has gone out and the two agree. */
static gdouble
gst_echo_effective_factor (guint64 fresh_out, guint64 items_out)
{
  return fresh_out > 0 ? (gdouble)items_out / fresh_out : 1.0;
}

static void
gst_echo_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstEcho *echo = GST_ECHO (object);

  GST_OBJECT_LOCK (echo);
  switch (prop_id) {
    case PROP_MODE:
      echo->props.mode = g_value_get_enum (value);
      break;
    case PROP_FACTOR:
      echo->props.factor = g_value_get_double (value);
      break;
    case PROP_MAX_FACTOR:
      echo->props.max_factor = g_value_get_double (value);
      break;
    case PROP_SHUFFLE_BUFFER_SIZE:
      echo->props.shuffle_buffer_size = g_value_get_uint (value);
      break;
    case PROP_MAX_SIZE_BYTES:
      echo->props.max_size_bytes = g_value_get_uint64 (value);
      break;
    case PROP_SEED:
      echo->props.seed = g_value_get_uint64 (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (echo);
}

static void
gst_echo_get_property (
    GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstEcho *echo = GST_ECHO (object);

  GST_OBJECT_LOCK (echo);
  switch (prop_id) {
    case PROP_MODE:
      g_value_set_enum (value, echo->props.mode);
      break;
    case PROP_FACTOR:
      g_value_set_double (value, echo->props.factor);
      break;
    case PROP_MAX_FACTOR:
      g_value_set_double (value, echo->props.max_factor);
      break;
    case PROP_SHUFFLE_BUFFER_SIZE:
      g_value_set_uint (value, echo->props.shuffle_buffer_size);
      break;
    case PROP_MAX_SIZE_BYTES:
      g_value_set_uint64 (value, echo->props.max_size_bytes);
      break;
    case PROP_SEED:
      g_value_set_uint64 (value, echo->props.seed);
      break;
    case PROP_ITEMS_IN:
      g_value_set_uint64 (value, echo->items_in);
      break;
    case PROP_ITEMS_OUT:
      g_value_set_uint64 (value, echo->items_out);
      break;
    case PROP_FRESH_OUT:
      g_value_set_uint64 (value, echo->fresh_out);
      break;
    case PROP_EFFECTIVE_FACTOR:
      g_value_set_double (
          value, gst_echo_effective_factor (echo->fresh_out, echo->items_out));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (echo);
}

/* ---- items (fixed: streaming thread; adaptive: under the lock) ---- */

/* floor(@factor), plus one with probability @factor - floor(@factor). */
static guint
gst_echo_draw_count (GtRandom *rng, gdouble factor)
{
  guint count = (guint)factor;

  if (factor > count && gt_random_double (rng) < factor - count)
    count++;
  return count;
}

/* Stores @buffer (taken) of @size bytes with @left emissions to come, with
 * the caps that came before it; returns its index. */
static guint
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
  return index;
}

static void
gst_echo_item_free (GstEcho *echo, guint index)
{
  GstEchoItem *item = &echo->items[index];

  gst_clear_buffer (&item->buffer);
  gst_clear_caps (&item->caps);
  echo->held_bytes -= item->size;
  echo->free_items[echo->n_free++] = index;
}

/* The buffer for the next emission of item @index, and its caps (a
 * reference, or NULL) in @caps; @fresh says whether it is the item's first
 * emission here. The last emission hands out the stored
 * buffer itself and frees the item; the others a new reference to it, or a
 * shallow copy (same memory) when the emission count in its meta must
 * differ from the stored one. */
static GstBuffer *
gst_echo_item_emit (GstEcho *echo, guint index, GstCaps **caps, gboolean *fresh)
{
  GstEchoItem *item = &echo->items[index];
  guint emissions = item->base + item->emitted++;
  gboolean write_meta = item->has_meta && emissions != item->base;
  GstBuffer *out;

  *fresh = item->emitted == 1;
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

/* Frees every held item and event. */
static void
gst_echo_clear (GstEcho *echo)
{
  guint i;

  if (echo->line != NULL) {
    while (!gst_queue_array_is_empty (echo->line)) {
      GstEchoEntry *entry = gst_queue_array_pop_head_struct (echo->line);

      if (entry->event != NULL)
        gst_event_unref (entry->event);
    }
  }
  echo->line_items = 0;
  echo->line_bytes = 0;
  for (i = 0; i < echo->n_items; i++) {
    gst_clear_buffer (&echo->items[i].buffer);
    gst_clear_caps (&echo->items[i].caps);
    echo->free_items[i] = echo->n_items - 1 - i;
  }
  echo->n_free = echo->n_items;
  echo->n_slots = 0;
  echo->held_bytes = 0;
}

/* ---- pushing (the streaming thread in fixed mode, the task in adaptive) */

/* Pushes @buffer after @caps (both taken; @caps may be NULL), sending the
 * caps first when they differ from the last ones sent; @fresh: it is an
 * item's first emission. */
static GstFlowReturn
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
  }
  return ret;
}

static void
gst_echo_post_stats (GstEcho *echo)
{
  guint64 items_in, items_out, fresh_out;
  GstStructure *s;

  GST_OBJECT_LOCK (echo);
  items_in = echo->items_in;
  items_out = echo->items_out;
  fresh_out = echo->fresh_out;
  GST_OBJECT_UNLOCK (echo);

  s = gst_structure_new ("echo-stats", "items-in", G_TYPE_UINT64, items_in,
      "items-out", G_TYPE_UINT64, items_out, "fresh-out", G_TYPE_UINT64,
      fresh_out, "effective-factor", G_TYPE_DOUBLE,
      gst_echo_effective_factor (fresh_out, items_out), "mode", G_TYPE_STRING,
      echo->adaptive ? "adaptive" : "fixed", NULL);
  GST_DEBUG_OBJECT (echo, "at EOS: %" GST_PTR_FORMAT, s);
  gst_element_post_message (
      GST_ELEMENT (echo), gst_message_new_element (GST_OBJECT (echo), s));
}

/* Pushes EOS after the statistics and, when no buffer ever carried them,
 * the caps that came last (@caps, taken, may be NULL). */
static gboolean
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

/* Whether downstream takes @caps, asked before they are stored for later. */
static gboolean
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

/* ---- mode=fixed: everything in upstream's streaming thread ---- */

/* Sends out the copy in a random slot of the shuffle buffer. */
static GstFlowReturn
gst_echo_fixed_emit_random (GstEcho *echo)
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

static gboolean
gst_echo_fixed_is_full (GstEcho *echo)
{
  return echo->n_slots >= echo->capacity
      || (echo->settings.max_size_bytes > 0 && echo->n_slots > 0
          && echo->held_bytes > echo->settings.max_size_bytes);
}

/* Sends out every copy in the shuffle buffer, in random order; on a flow
 * error drops the rest. */
static GstFlowReturn
gst_echo_fixed_drain (GstEcho *echo)
{
  GstFlowReturn ret = GST_FLOW_OK;

  GST_DEBUG_OBJECT (echo, "draining %u copies", echo->n_slots);
  while (echo->n_slots > 0 && ret == GST_FLOW_OK)
    ret = gst_echo_fixed_emit_random (echo);
  if (ret != GST_FLOW_OK) {
    GST_DEBUG_OBJECT (echo, "drain stopped: %s", gst_flow_get_name (ret));
    gst_echo_clear (echo);
  }
  return ret;
}

/* Forgets the @count copies of item @index that never entered the buffer
 * (a push failed); the copies already in it still go out. */
static void
gst_echo_fixed_drop_copies (GstEcho *echo, guint index, guint count)
{
  GstEchoItem *item = &echo->items[index];

  item->left -= count;
  if (item->left == 0)
    gst_echo_item_free (echo, index);
}

static GstFlowReturn
gst_echo_fixed_chain (GstEcho *echo, GstBuffer *buffer)
{
  GstFlowReturn ret = GST_FLOW_OK;
  gsize size = gst_buffer_get_size (buffer);
  gdouble factor;
  guint copies, index, i;

  GST_OBJECT_LOCK (echo);
  factor = echo->props.factor;
  echo->items_in++;
  GST_OBJECT_UNLOCK (echo);

  copies = gst_echo_draw_count (&echo->rng, factor);
  index = gst_echo_item_new (echo, buffer, size, copies);

  if (echo->capacity == 0) {
    for (i = 0; i < copies && ret == GST_FLOW_OK; i++) {
      GstCaps *caps;
      gboolean fresh;
      GstBuffer *out = gst_echo_item_emit (echo, index, &caps, &fresh);

      ret = gst_echo_push (echo, out, caps, fresh);
    }
    if (i < copies)
      gst_echo_fixed_drop_copies (echo, index, copies - i);
    return ret;
  }

  for (i = 0; i < copies; i++) {
    while (gst_echo_fixed_is_full (echo)) {
      ret = gst_echo_fixed_emit_random (echo);
      if (ret != GST_FLOW_OK) {
        GST_DEBUG_OBJECT (echo, "push failed: %s", gst_flow_get_name (ret));
        gst_echo_fixed_drop_copies (echo, index, copies - i);
        return ret;
      }
    }
    echo->slots[echo->n_slots++] = index;
  }
  return GST_FLOW_OK;
}

static gboolean
gst_echo_fixed_event (GstEcho *echo, GstEvent *event)
{
  GstCaps *caps;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:
      gst_event_parse_caps (event, &caps);
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

/* ---- mode=adaptive: chain and sink events feed the source pad's task ---- */

/* Adaptive mode's waits and wake-ups, named as queue's are
 * (GST_QUEUE_WAIT_DEL_CHECK, GST_QUEUE_SIGNAL_ADD), each logged to
 * echo_dataflow with the state of the line. All with @lock held. */
#define ECHO_STATUS(echo, pad, msg)                                            \
  GST_CAT_LOG_OBJECT (echo_dataflow, echo,                                     \
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
    GST_CAT_LOG_OBJECT (echo_dataflow, echo, "waking all waiters: %s",         \
        gst_flow_get_name ((echo)->srcresult));                                \
    g_cond_broadcast (&(echo)->item_add);                                      \
    g_cond_broadcast (&(echo)->item_del);                                      \
  }                                                                            \
  G_STMT_END

static gboolean
gst_echo_line_is_full (GstEcho *echo, gsize size)
{
  return echo->line_items >= echo->capacity
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
  while (gst_echo_line_is_full (echo, size))
    ECHO_WAIT_ITEM_DELETED (echo, out_flushing);

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
}

static gboolean
gst_echo_adaptive_event (GstEcho *echo, GstEvent *event)
{
  GstEventType type = GST_EVENT_TYPE (event);
  GstEchoEntry entry = { event, 0 };
  GstCaps *caps = NULL;

  if (type == GST_EVENT_CAPS) {
    gst_event_parse_caps (event, &caps);
    if (!gst_echo_downstream_accepts (echo, caps)) {
      gst_event_unref (event);
      return FALSE;
    }
  }

  g_mutex_lock (&echo->lock);
  if (caps != NULL)
    gst_caps_replace (&echo->sink_caps, caps);
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

/* Takes what to push next: the head of the line (an event, or a fresh item
 * that then stays for repeats while it has emissions left), else a repeat of
 * a kept item (gst_echo_adaptive_pick). FALSE when there is nothing, or
 * nothing that may go out yet. With an event, @caps may say which caps to
 * send first. Called with the lock. */
static gboolean
gst_echo_adaptive_next (GstEcho *echo, GstBuffer **out, GstCaps **caps,
    GstEvent **event, gboolean *fresh)
{
  while (!gst_queue_array_is_empty (echo->line)) {
    GstEchoEntry *entry = gst_queue_array_pop_head_struct (echo->line);
    GstEchoItem *item;
    guint index;

    if (entry->event != NULL) {
      switch (GST_EVENT_TYPE (entry->event)) {
        case GST_EVENT_CAPS:
          if (echo->n_slots > 0 && echo->src_caps != NULL) {
            /* Kept items still have the old caps: the new ones travel with
             * the items that have them. */
            gst_event_unref (entry->event);
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
      *event = entry->event;
      return TRUE;
    }

    index = entry->item;
    item = &echo->items[index];
    echo->line_items--;
    echo->line_bytes -= item->size;
    if (item->left > 1)
      echo->slots[echo->n_slots++] = index;
    gst_echo_adaptive_set_due (echo, item);
    *out = gst_echo_item_emit (echo, index, caps, fresh);
    ECHO_SIGNAL_ITEM_DELETED (echo);
    return TRUE;
  }

  if (echo->n_slots > 0) {
    gint slot = gst_echo_adaptive_pick (echo, TRUE);
    guint index;

    if (slot < 0)
      return FALSE;
    index = echo->slots[slot];
    if (echo->items[index].left == 1)
      echo->slots[slot] = echo->slots[--echo->n_slots];
    gst_echo_adaptive_set_due (echo, &echo->items[index]);
    *out = gst_echo_item_emit (echo, index, caps, fresh);
    return TRUE;
  }
  return FALSE;
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
  while (!gst_echo_adaptive_next (echo, &out, &caps, &event, &fresh))
    ECHO_WAIT_ITEM_ADDED (echo, out_flushing);
  g_mutex_unlock (&echo->lock);

  if (event != NULL)
    ret = gst_echo_adaptive_push_event (echo, event, caps);
  else
    ret = gst_echo_push (echo, out, caps, fresh);
  if (ret == GST_FLOW_OK)
    return;

  g_mutex_lock (&echo->lock);
  /* A flush that came meanwhile says FLUSHING already. */
  if (echo->srcresult == GST_FLOW_OK)
    echo->srcresult = ret;
  ret = echo->srcresult;
  gst_echo_clear (echo);
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
  gst_echo_clear (echo);
  echo->srcresult = GST_FLOW_OK;
  echo->eos = FALSE;
  if (gst_pad_is_active (echo->srcpad))
    gst_pad_start_task (
        echo->srcpad, (GstTaskFunction)gst_echo_loop, echo->srcpad, NULL);
  g_mutex_unlock (&echo->lock);
}

/* ---- pads ---- */

/* ---- exact resume: the state after the last output trained on ----
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

static void
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
static gboolean
gst_echo_answer_resume (GstEcho *echo, GstQuery *query)
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
  if (echo->adaptive) {
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
static GstFlowReturn
gst_echo_resume_chain (GstEcho *echo, GstBuffer *buffer)
{
  GstEchoResume *r = echo->resume;
  GstEchoResumeItem *held = NULL;
  GstFlowReturn ret = GST_FLOW_OK;
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
  for (i = 0; i < r->pending_copies; i++) {
    if (echo->capacity == 0) {
      GstCaps *caps;
      gboolean fresh;
      GstBuffer *out = gst_echo_item_emit (echo, last, &caps, &fresh);

      ret = gst_echo_push (echo, out, caps, fresh);
      if (ret != GST_FLOW_OK) {
        i++; /* that copy went (or was dropped) */
        break;
      }
      continue;
    }
    while (gst_echo_fixed_is_full (echo) && ret == GST_FLOW_OK)
      ret = gst_echo_fixed_emit_random (echo);
    if (ret != GST_FLOW_OK)
      break;
    echo->slots[echo->n_slots++] = last;
  }
  if (ret != GST_FLOW_OK && i < r->pending_copies)
    gst_echo_fixed_drop_copies (echo, last, r->pending_copies - i);
  gst_echo_resume_free (r);
  return ret;
}

static GstFlowReturn
gst_echo_chain (GstPad *pad, GstObject *parent, GstBuffer *buffer)
{
  GstEcho *echo = GST_ECHO (parent);

  if (echo->resume != NULL)
    return gst_echo_resume_chain (echo, buffer);
  if (echo->adaptive)
    return gst_echo_adaptive_chain (echo, buffer);
  return gst_echo_fixed_chain (echo, buffer);
}

static gboolean
gst_echo_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstEcho *echo = GST_ECHO (parent);
  gboolean ok;

  GST_LOG_OBJECT (echo, "%" GST_PTR_FORMAT, event);
  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_START:
      /* Downstream first: that unblocks a push in progress. */
      ok = gst_pad_push_event (echo->srcpad, event);
      if (echo->adaptive)
        gst_echo_adaptive_flush_start (echo);
      return ok;
    case GST_EVENT_FLUSH_STOP:
      ok = gst_pad_push_event (echo->srcpad, event);
      if (echo->adaptive)
        gst_echo_adaptive_flush_stop (echo);
      else
        gst_echo_clear (echo);
      return ok;
    default:
      break;
  }
  if (!GST_EVENT_IS_SERIALIZED (event))
    return gst_pad_event_default (pad, parent, event);
  if (echo->adaptive)
    return gst_echo_adaptive_event (echo, event);
  return gst_echo_fixed_event (echo, event);
}

/* Asks downstream where upstream's buffers should live, and widens each
 * bounded pool it proposes by the buffers echo may hold: echo keeps buffers
 * while it waits for more input, so a pool sized for downstream alone would
 * run dry with its buffers in echo, and upstream, waiting for a free one,
 * would never send the input that lets echo let go of them. */
static gboolean
gst_echo_proxy_allocation (GstEcho *echo, GstQuery *query)
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

static gboolean
gst_echo_sink_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstEcho *echo = GST_ECHO (parent);

  if (gst_train_is_resume_query (query))
    return gst_echo_answer_resume (echo, query);
  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_ALLOCATION:
      /* Serialized, but its answer describes downstream's memory, not a
       * place in the stream: it may overtake the items in adaptive mode's
       * line. */
      return gst_echo_proxy_allocation (echo, query);
    default:
      /* Adaptive mode pushes from its own thread: a serialized query
       * answered from here would overtake the data in line. */
      if (echo->adaptive && GST_QUERY_IS_SERIALIZED (query)) {
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

  if (GST_EVENT_TYPE (event) == GST_EVENT_RECONFIGURE && echo->adaptive) {
    g_mutex_lock (&echo->lock);
    if (echo->srcresult == GST_FLOW_NOT_LINKED) {
      /* Linked again, perhaps: try pushing. */
      echo->srcresult = GST_FLOW_OK;
      gst_pad_start_task (pad, (GstTaskFunction)gst_echo_loop, pad, NULL);
    }
    g_mutex_unlock (&echo->lock);
  }
  return gst_pad_event_default (pad, parent, event);
}

static gboolean
gst_echo_sink_activate_mode (
    GstPad *pad, GstObject *parent, GstPadMode mode, gboolean active)
{
  GstEcho *echo = GST_ECHO (parent);

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  /* Unblocks a chain function that waits for room. */
  if (echo->adaptive && !active)
    gst_echo_adaptive_set_flushing (echo);
  return TRUE;
}

static gboolean
gst_echo_src_activate_mode (
    GstPad *pad, GstObject *parent, GstPadMode mode, gboolean active)
{
  GstEcho *echo = GST_ECHO (parent);
  gboolean ok;

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (!echo->adaptive)
    return TRUE;
  if (active) {
    g_mutex_lock (&echo->lock);
    echo->srcresult = GST_FLOW_OK;
    echo->eos = FALSE;
    ok = gst_pad_start_task (pad, (GstTaskFunction)gst_echo_loop, pad, NULL);
    g_mutex_unlock (&echo->lock);
  } else {
    gst_echo_adaptive_set_flushing (echo);
    ok = gst_pad_stop_task (pad);
  }
  return ok;
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

  echo->adaptive = s->mode == GST_ECHO_MODE_ADAPTIVE;
  echo->capacity =
      echo->adaptive ? MAX (s->shuffle_buffer_size, 1) : s->shuffle_buffer_size;
  /* Fixed mode holds one item more than it has slots: the one entering. */
  echo->n_items = echo->capacity + 1;
  echo->items = g_new0 (GstEchoItem, echo->n_items);
  echo->free_items = g_new (guint, echo->n_items);
  echo->slots = g_new (guint, MAX (echo->capacity, 1));
  if (echo->adaptive)
    echo->line = gst_queue_array_new_for_struct (sizeof (GstEchoEntry), 16);
  gst_echo_clear (echo);
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
  GST_DEBUG_OBJECT (echo, "%s mode, %u items, %" G_GUINT64_FORMAT " bytes",
      echo->adaptive ? "adaptive" : "fixed", echo->capacity,
      echo->settings.max_size_bytes);
}

static void
gst_echo_stop (GstEcho *echo)
{
  g_mutex_lock (&echo->lock);
  gst_echo_clear (echo);
  g_mutex_unlock (&echo->lock);
  g_clear_pointer (&echo->resume, gst_echo_resume_free);
  g_clear_pointer (&echo->line, gst_queue_array_free);
  g_clear_pointer (&echo->items, g_free);
  g_clear_pointer (&echo->free_items, g_free);
  g_clear_pointer (&echo->slots, g_free);
  echo->n_items = 0;
  echo->n_free = 0;
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
