/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstbatcher.c: gathers fixed-size images into batch tensors.
 *
 * SECTION:element-batcher
 * @title: batcher
 *
 * Copies every @batch-size images (`video/x-raw, format=RGB`, all of one
 * size, each with a #GstTrainSampleMeta) into one batch buffer in
 * NNStreamer's tensor layout:
 *
 *     other/tensors, format=static, num_tensors=2, types="uint8,int32",
 *       dimensions="3:W:H:N,N", framerate=0/1
 *
 * Tensor 0 holds the images in NHWC order (NNStreamer writes the innermost
 * dimension first), tensor 1 the int32 labels; each is its own GstMemory in
 * the one buffer, so a batch survives serialisation (gdppay, tcp).
 *
 * With @layout=nchw tensor 0 holds each image planar instead, as PyTorch's
 * default (contiguous) image tensors do: all its R bytes, row by row, then
 * all G, then all B, and the caps say so in the same innermost-first order:
 *
 *     other/tensors, format=static, num_tensors=2, types="uint8,int32",
 *       dimensions="W:H:3:N,N", framerate=0/1
 *
 * The pixels are de-interleaved as they are copied in: still one copy per
 * image. cudatrainsink takes NHWC batches and refuses NCHW ones.
 *
 * A #GstTrainBatchMeta on the batch says how many of its images were fresh
 * (sample meta emissions 0), so that a sink can count fresh and repeated
 * images wherever an echo sits, and which samples it holds: the dataset
 * index of each (its #GstTrainSampleMeta index), in batch order. Each
 * batch's buffer offset is its number (the @batches-out count before it).
 *
 * Memory: when downstream answers the allocation query with a buffer pool
 * whose buffers hold at least a batch's images (W * H * 3 * N bytes), the
 * images memory of every batch is a pool buffer's own memory, so that a
 * sink that proposes pinned host memory (cudatrainsink) gets its batches
 * there; the labels (4 * N bytes) are a system memory beside it, which
 * keeps the pool buffer until the batch is freed and then gives it back
 * whole. (Only the images come from the pool: a memory added to or taken
 * from a pool buffer makes the pool discard it, and a labels memory of the
 * pool's size would waste it.) A bounded pool paces the batcher: it waits
 * for a free buffer. Without a pool that fits, both memories come from the
 * first allocator downstream offers, else from system memory, the images
 * memory then reused from batch to batch once downstream lets a batch go
 * (a fresh block of tens of megabytes per batch would cost its page faults
 * and zeroing in the streaming thread). Each image is copied exactly once.
 *
 * At EOS a last, partial batch is pushed with its own caps (N smaller) or
 * dropped, per @drop-remainder.
 *
 * ## Messages
 *
 * One warning: at EOS, when @drop-remainder drops the only images of the
 * stream (fewer than @batch-size arrived, so no batch went out at all):
 * "Dropped all N images of the stream at its end: fewer than
 * batch-size=B arrived, ...", naming drop-remainder=false and a smaller
 * batch-size. A remainder dropped after full batches is only logged (at
 * INFO), as DataLoader(drop_last=True) drops it. Errors (which stop
 * the pipeline) name the sample: an image of another size than the first
 * (put augment before batcher), an image without a label (a
 * #GstTrainSampleMeta from datasetsrc), a buffer smaller than its caps, an
 * image before any caps, downstream refusing the batch caps, a batch that
 * cannot be allocated.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 datasetsrc location=/data/train ! imagedec ! augment ! batcher batch-size=256 ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "element-util.h"
#include "gstbatcher.h"
#include "memory-recycler.h"
#include "train-common.h"
#include "train-meta.h"
#include "train-props.h"

#include <gst/video/video.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC (gst_batcher_debug);
#define GST_CAT_DEFAULT gst_batcher_debug

/* How tensor 0 holds each image. */
typedef enum
{
  GST_BATCHER_LAYOUT_NHWC,
  GST_BATCHER_LAYOUT_NCHW,
} GstBatcherLayout;

#define DEFAULT_BATCH_SIZE 256
#define DEFAULT_DROP_REMAINDER TRUE
#define DEFAULT_LAYOUT GST_BATCHER_LAYOUT_NHWC

enum
{
  PROP_0,
  PROP_BATCH_SIZE,
  PROP_DROP_REMAINDER,
  PROP_LAYOUT,
  PROP_BATCHES_OUT,
  N_PROPERTIES
};

/* The properties as they were when the element started; drop-remainder,
 * which may change while it plays, is read from the properties at EOS. */
typedef struct
{
  guint batch_size;
  gboolean drop_remainder;
  GstBatcherLayout layout;
} GstBatcherSettings;

struct _GstBatcher
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* Properties and the batch counter, under the object lock. */
  GstBatcherSettings props;
  guint64 batches_out;

  /* Streaming state (streaming thread): @settings is set at start. */
  GstBatcherSettings settings;
  GstVideoInfo in_info; /* the images' format, from the sink caps */
  gboolean have_in_info;
  gint width; /* size of the images in the batch */
  gint height;
  guint negotiated_n;      /* N of the caps last pushed, 0 = none */
  GstBufferPool *pool;     /* downstream's, when it fits (set under the object
                         lock: a state change makes it flush) */
  GstAllocator *allocator; /* downstream's, else NULL */
  GstAllocationParams params;
  GstTrainRecycler *recycler; /* images memory when downstream offers none */
  guint effective_size;       /* batch-size fixed at the first image */
  /* The batch being filled: its two memories, mapped, until it is pushed
   * (images NULL when none is). */
  GstMemory *images;
  GstMemory *labels;
  GstMapInfo images_map;
  GstMapInfo labels_map;
  guint filled;
  guint fresh;
  guint64 *indices; /* the dataset index of each image so far, for the batch
                       meta (effective_size entries) */
};

/* Where each property is kept in GstBatcher (train-props.h). */
#define FIELD(name) .offset = G_STRUCT_OFFSET (GstBatcher, name)
static const GstTrainProp property_table[N_PROPERTIES] = {
  [PROP_BATCH_SIZE] = { FIELD (props.batch_size) },
  [PROP_DROP_REMAINDER] = { FIELD (props.drop_remainder) },
  [PROP_LAYOUT] = { FIELD (props.layout) },
  [PROP_BATCHES_OUT] = { FIELD (batches_out) },
};
#undef FIELD

G_STATIC_ASSERT (sizeof (GstBatcherLayout) == sizeof (gint));

static GParamSpec *properties[N_PROPERTIES];

/* The labels of a batch whose images live in a downstream pool buffer: the
 * labels memory wraps this block, and freeing it returns the pool buffer. */
typedef struct
{
  GstBuffer *pool_buffer;
  gint32 labels[];
} GstBatcherPoolLabels;

static GType
gst_batcher_layout_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_BATCHER_LAYOUT_NHWC,
        "Interleaved pixels (RGBRGB...), dimensions 3:W:H:N", "nhwc" },
    { GST_BATCHER_LAYOUT_NCHW,
        "Planar images (all R, then all G, then all B), dimensions W:H:3:N",
        "nchw" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstBatcherLayout", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/x-raw, format = (string) RGB, "
                     "width = (int) [ 1, MAX ], height = (int) [ 1, MAX ]"));

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS,
        GST_STATIC_CAPS ("other/tensors, format = (string) static, "
                         "num_tensors = (int) 2, types = (string) "
                         "\"uint8,int32\", framerate = (fraction) 0/1"));

#define gst_batcher_parent_class parent_class
G_DEFINE_TYPE (GstBatcher, gst_batcher, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (
    batcher, "batcher", GST_RANK_NONE, GST_TYPE_BATCHER);

static GstStateChangeReturn gst_batcher_change_state (
    GstElement *element, GstStateChange transition);
static GstFlowReturn gst_batcher_chain (
    GstPad *pad, GstObject *parent, GstBuffer *buffer);
static gboolean gst_batcher_sink_event (
    GstPad *pad, GstObject *parent, GstEvent *event);

/* Dropped while it plays (Python's garbage collector does): stopped first,
 * so that its pool and pads go with it, as the other elements do. */
static void
gst_batcher_dispose (GObject *object)
{
  if (!gst_train_element_stop_before_dispose (GST_ELEMENT (object)))
    return; /* resurrected until another thread stops it */
  G_OBJECT_CLASS (parent_class)->dispose (object);
}

static void
gst_batcher_class_init (GstBatcherClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->dispose = gst_batcher_dispose;

  properties[PROP_BATCH_SIZE] = g_param_spec_uint ("batch-size", "Batch size",
      "Images per batch (the N of the output tensors)", 1, 65536,
      DEFAULT_BATCH_SIZE,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_DROP_REMAINDER] = g_param_spec_boolean ("drop-remainder",
      "Drop remainder",
      "At EOS, drop a last batch with fewer than batch-size images "
      "(FALSE: push it, with its own caps)",
      DEFAULT_DROP_REMAINDER,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  properties[PROP_LAYOUT] = g_param_spec_enum ("layout", "Layout",
      "How tensor 0 holds each image: nhwc, pixels interleaved "
      "(dimensions 3:W:H:N, what cudatrainsink takes), or nchw, planar "
      "(dimensions W:H:3:N, PyTorch's default image layout); each image "
      "is copied once either way",
      gst_batcher_layout_get_type (), DEFAULT_LAYOUT,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_BATCHES_OUT] = g_param_spec_uint64 ("batches-out",
      "Batches out", "Batches pushed downstream so far", 0, G_MAXUINT64, 0,
      G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  gst_train_props_install (
      gobject_class, property_table, properties, N_PROPERTIES);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Training batcher",
      "Filter/Converter/Video",
      "Gathers batch-size RGB images of one size and their labels into "
      "NNStreamer tensors: other/tensors, format=static, num_tensors=2, "
      "types=uint8,int32, dimensions=3:W:H:N,N (tensor 0 the images in NHWC "
      "order, tensor 1 the int32 labels; one memory each); a partial last "
      "batch has its own caps. Posts no message but errors, which name the "
      "sample",
      "gst-train developers");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_batcher_change_state);

  gst_type_mark_as_plugin_api (gst_batcher_layout_get_type (), 0);

  GST_DEBUG_CATEGORY_INIT (gst_batcher_debug, "batcher", 0, "training batcher");
}

static void
gst_batcher_init (GstBatcher *batcher)
{
  batcher->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (
      batcher->sinkpad, GST_DEBUG_FUNCPTR (gst_batcher_chain));
  gst_pad_set_event_function (
      batcher->sinkpad, GST_DEBUG_FUNCPTR (gst_batcher_sink_event));
  gst_element_add_pad (GST_ELEMENT (batcher), batcher->sinkpad);

  batcher->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (batcher->srcpad);
  gst_element_add_pad (GST_ELEMENT (batcher), batcher->srcpad);

  gst_train_props_init (batcher, property_table, properties, N_PROPERTIES);
}

static gsize
gst_batcher_images_size (GstBatcher *batcher, guint n)
{
  return (gsize)batcher->width * batcher->height * 3 * n;
}

/* The output caps for a batch of @n images: NNStreamer writes the
 * innermost dimension first. */
static GstCaps *
gst_batcher_make_caps (GstBatcher *batcher, guint n)
{
  gchar *dims = batcher->settings.layout == GST_BATCHER_LAYOUT_NCHW
      ? g_strdup_printf ("%d:%d:3:%u,%u", batcher->width, batcher->height, n, n)
      : g_strdup_printf (
          "3:%d:%d:%u,%u", batcher->width, batcher->height, n, n);
  GstCaps *caps = gst_caps_new_simple ("other/tensors", "format", G_TYPE_STRING,
      "static", "num_tensors", G_TYPE_INT, 2, "types", G_TYPE_STRING,
      "uint8,int32", "dimensions", G_TYPE_STRING, dims, "framerate",
      GST_TYPE_FRACTION, 0, 1, NULL);

  g_free (dims);
  return caps;
}

static void
gst_batcher_clear_allocation (GstBatcher *batcher)
{
  GstBufferPool *pool;

  GST_OBJECT_LOCK (batcher);
  pool = batcher->pool;
  batcher->pool = NULL;
  GST_OBJECT_UNLOCK (batcher);
  if (pool != NULL) {
    gst_buffer_pool_set_active (pool, FALSE);
    gst_object_unref (pool);
  }
  gst_clear_object (&batcher->allocator);
  gst_allocation_params_init (&batcher->params);
}

/* Makes a wait for a pool buffer return (@flushing) or lets it wait again:
 * a chain function blocked in the pool must not hold up a flush or a state
 * change. */
static void
gst_batcher_set_pool_flushing (GstBatcher *batcher, gboolean flushing)
{
  GST_OBJECT_LOCK (batcher);
  if (batcher->pool != NULL)
    gst_buffer_pool_set_flushing (batcher->pool, flushing);
  GST_OBJECT_UNLOCK (batcher);
}

/* Asks downstream where batches of @n images should live. */
static void
gst_batcher_decide_allocation (GstBatcher *batcher, GstCaps *caps, guint n)
{
  GstQuery *query = gst_query_new_allocation (caps, TRUE);
  gsize images = gst_batcher_images_size (batcher, n);

  gst_batcher_clear_allocation (batcher);
  if (!gst_pad_peer_query (batcher->srcpad, query)) {
    GST_DEBUG_OBJECT (batcher, "no allocation answer: system memory");
    gst_query_unref (query);
    return;
  }
  if (gst_query_get_n_allocation_params (query) > 0)
    gst_query_parse_nth_allocation_param (
        query, 0, &batcher->allocator, &batcher->params);
  if (gst_query_get_n_allocation_pools (query) > 0) {
    GstBufferPool *pool = NULL;
    guint size, min, max;

    gst_query_parse_nth_allocation_pool (query, 0, &pool, &size, &min, &max);
    /* A pool's buffer size is a guint: larger batches do without. */
    if (pool != NULL && ((gsize)size < images || images > G_MAXUINT)) {
      GST_DEBUG_OBJECT (batcher,
          "downstream pool buffers of %u bytes are too small for "
          "%" G_GSIZE_FORMAT " bytes of images",
          size, images);
      gst_clear_object (&pool);
    }
    if (pool != NULL) {
      GstStructure *config = gst_buffer_pool_get_config (pool);

      /* Only the images come from the pool (see start_batch): its buffers
       * hold exactly them. */
      gst_buffer_pool_config_set_params (config, caps, (guint)images, min, max);
      if (gst_buffer_pool_set_config (pool, config)
          && gst_buffer_pool_set_active (pool, TRUE)) {
        GST_OBJECT_LOCK (batcher);
        batcher->pool = pool;
        GST_OBJECT_UNLOCK (batcher);
        GST_DEBUG_OBJECT (batcher,
            "images from downstream pool %" GST_PTR_FORMAT
            " (%u .. %u buffers)",
            pool, min, max);
      } else {
        GST_WARNING_OBJECT (batcher,
            "downstream pool %" GST_PTR_FORMAT
            " refused the batch configuration; using its allocator",
            pool);
        gst_object_unref (pool);
      }
    }
  }
  gst_query_unref (query);
}

static void
gst_batcher_pool_labels_free (gpointer data)
{
  GstBatcherPoolLabels *block = data;

  /* The batch's images memory went first (memories are freed in order):
   * the pool buffer gets its memory back untouched and is reused. */
  gst_buffer_unref (block->pool_buffer);
  g_free (block);
}

/* The images memory of a batch of @n from a downstream pool buffer, and
 * the labels memory that keeps that buffer until the batch is freed. FALSE
 * when the pool has no buffer for it (flushing) or its buffers do not fit;
 * @ret says which. */
static gboolean
gst_batcher_memories_from_pool (
    GstBatcher *batcher, guint n, GstFlowReturn *ret)
{
  gsize images = gst_batcher_images_size (batcher, n);
  gsize labels = n * sizeof (gint32);
  GstBuffer *buffer = NULL;
  GstBatcherPoolLabels *block;
  GstMemory *memory;

  /* Blocks while downstream holds every buffer of a bounded pool: the
   * pool paces the batcher. */
  *ret = gst_buffer_pool_acquire_buffer (batcher->pool, &buffer, NULL);
  if (*ret != GST_FLOW_OK)
    return FALSE;
  memory = gst_buffer_n_memory (buffer) == 1
      ? gst_buffer_peek_memory (buffer, 0)
      : NULL;
  if (memory == NULL || memory->size < images
      || !gst_memory_is_writable (memory)) {
    GST_WARNING_OBJECT (batcher,
        "downstream pool buffers are not one writable memory of "
        "%" G_GSIZE_FORMAT " bytes or more; not using the pool",
        images);
    gst_buffer_unref (buffer);
    gst_batcher_clear_allocation (batcher);
    return FALSE;
  }
  /* Still the pool buffer's alone: a resize is undone by the pool when the
   * buffer returns. */
  if (memory->size > images)
    gst_memory_resize (memory, 0, images);

  /* The images memory itself goes into the batch, the pool buffer stays
   * whole (a memory taken out or added would make the pool discard it), and
   * the labels memory holds it. */
  block = g_malloc (sizeof (GstBatcherPoolLabels) + labels);
  block->pool_buffer = buffer;
  batcher->images = gst_memory_ref (memory);
  batcher->labels = gst_memory_new_wrapped (
      0, block->labels, labels, 0, labels, block, gst_batcher_pool_labels_free);
  return TRUE;
}

/* Starts an empty batch of @n images. */
static GstFlowReturn
gst_batcher_start_batch (GstBatcher *batcher, guint n)
{
  GstFlowReturn ret = GST_FLOW_OK;

  if (batcher->pool == NULL
      || !gst_batcher_memories_from_pool (batcher, n, &ret)) {
    if (ret != GST_FLOW_OK)
      return ret;
    gsize size = gst_batcher_images_size (batcher, n);

    if (batcher->allocator == NULL && batcher->params.align < 16) {
      GstBuffer *block =
          gst_train_recycler_new_buffer (batcher->recycler, size);

      batcher->images = gst_buffer_get_memory (block, 0);
      gst_buffer_unref (block);
    } else {
      batcher->images =
          gst_allocator_alloc (batcher->allocator, size, &batcher->params);
    }
    batcher->labels = gst_allocator_alloc (
        batcher->allocator, n * sizeof (gint32), &batcher->params);
  }

  if (batcher->images == NULL || batcher->labels == NULL
      || !gst_memory_map (batcher->images, &batcher->images_map, GST_MAP_WRITE))
    goto failed;
  if (!gst_memory_map (batcher->labels, &batcher->labels_map, GST_MAP_WRITE)) {
    gst_memory_unmap (batcher->images, &batcher->images_map);
    goto failed;
  }
  batcher->filled = 0;
  batcher->fresh = 0;
  return GST_FLOW_OK;

failed:
  /* Images first: the labels may hold the pool buffer they belong to. */
  g_clear_pointer (&batcher->images, gst_memory_unref);
  g_clear_pointer (&batcher->labels, gst_memory_unref);
  return GST_FLOW_ERROR;
}

static void
gst_batcher_unmap_batch (GstBatcher *batcher)
{
  gst_memory_unmap (batcher->labels, &batcher->labels_map);
  gst_memory_unmap (batcher->images, &batcher->images_map);
}

static void
gst_batcher_drop_batch (GstBatcher *batcher)
{
  if (batcher->images == NULL)
    return;
  gst_batcher_unmap_batch (batcher);
  g_clear_pointer (&batcher->images, gst_memory_unref);
  g_clear_pointer (&batcher->labels, gst_memory_unref);
}

/* Sends caps for batches of @n images unless they are already out. */
static gboolean
gst_batcher_negotiate (GstBatcher *batcher, guint n)
{
  GstCaps *caps;
  gboolean ok;

  if (batcher->negotiated_n == n)
    return TRUE;
  caps = gst_batcher_make_caps (batcher, n);
  GST_DEBUG_OBJECT (batcher, "caps %" GST_PTR_FORMAT, caps);
  /* gst_event_new_caps takes its own reference */
  ok = gst_pad_push_event (batcher->srcpad, gst_event_new_caps (caps));
  if (ok) {
    batcher->negotiated_n = n;
    /* A last, partial batch already has its memory: the allocation is for
     * full ones. */
    if (n == batcher->effective_size)
      gst_batcher_decide_allocation (batcher, caps, n);
  }
  gst_caps_unref (caps);
  return ok;
}

/* Fixes the image size of every batch from the current input caps and the
 * batch size from the settings, and sends the caps for full batches. */
static gboolean
gst_batcher_fix_size (GstBatcher *batcher)
{
  batcher->width = GST_VIDEO_INFO_WIDTH (&batcher->in_info);
  batcher->height = GST_VIDEO_INFO_HEIGHT (&batcher->in_info);
  batcher->effective_size = batcher->settings.batch_size;
  g_free (batcher->indices);
  batcher->indices = g_new (guint64, batcher->effective_size);
  return gst_batcher_negotiate (batcher, batcher->effective_size);
}

/* Pushes the batch being filled (possibly partial). */
static GstFlowReturn
gst_batcher_push_batch (GstBatcher *batcher)
{
  GstBuffer *batch;
  GstTrainBatchMeta *meta;
  guint n = batcher->filled;

  gst_batcher_unmap_batch (batcher);
  if (n < batcher->effective_size) {
    /* The partial batch was allocated for a full one: shrink it (while the
     * memories are still ours alone). */
    gst_memory_resize (
        batcher->images, 0, gst_batcher_images_size (batcher, n));
    gst_memory_resize (batcher->labels, 0, n * sizeof (gint32));
  }
  batch = gst_buffer_new ();
  gst_buffer_append_memory (batch, batcher->images);
  gst_buffer_append_memory (batch, batcher->labels);
  batcher->images = NULL;
  batcher->labels = NULL;
  if (!gst_batcher_negotiate (batcher, n)) {
    gst_buffer_unref (batch);
    if (GST_PAD_IS_FLUSHING (batcher->srcpad))
      return GST_FLOW_FLUSHING;
    GST_ELEMENT_ERROR (batcher, CORE, NEGOTIATION,
        ("Downstream does not accept batches of %u images of %dx%d.", n,
            batcher->width, batcher->height),
        (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  meta = gst_buffer_add_train_batch_meta (batch, n, batcher->fresh);
  memcpy (meta->indices, batcher->indices, n * sizeof (guint64));
  GST_OBJECT_LOCK (batcher);
  GST_BUFFER_OFFSET (batch) = batcher->batches_out++;
  GST_OBJECT_UNLOCK (batcher);
  GST_LOG_OBJECT (batcher,
      "pushing batch %" G_GUINT64_FORMAT ": %u images, %u fresh",
      GST_BUFFER_OFFSET (batch), n, batcher->fresh);
  return gst_pad_push (batcher->srcpad, batch);
}

/* A planar copy de-interleaves: GCC vectorises that at -O2 (its cheap cost
 * model) in blocks of a fixed pixel count, with byte shuffles that x86-64's
 * baseline lacks; built for AVX2 and SSSE3 (x86-64-v3, -v2) besides, the
 * CPU picks one when the plugin loads, as the trainer's streaming passes
 * do. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GST_BATCHER_VECTORISED                                                 \
  __attribute__ ((                                                             \
      target_clones ("arch=x86-64-v3", "arch=x86-64-v2", "default")))
#else
#define GST_BATCHER_VECTORISED
#endif
#define DEINTERLEAVE_BLOCK 32

/* Writes the @width RGB pixels at @src to one row of each plane. */
static inline void
gst_batcher_deinterleave_row (const guint8 *restrict src, guint8 *restrict r,
    guint8 *restrict g, guint8 *restrict b, gsize width)
{
  gsize x = 0, i;

  for (; x + DEINTERLEAVE_BLOCK <= width; x += DEINTERLEAVE_BLOCK)
    for (i = 0; i < DEINTERLEAVE_BLOCK; i++) {
      r[x + i] = src[3 * (x + i)];
      g[x + i] = src[3 * (x + i) + 1];
      b[x + i] = src[3 * (x + i) + 2];
    }
  for (; x < width; x++) {
    r[x] = src[3 * x];
    g[x] = src[3 * x + 1];
    b[x] = src[3 * x + 2];
  }
}

/* Copies the @width x @height RGB image at @src, rows @stride bytes apart,
 * to @dst as three planes of @width x @height bytes (R, G, B). */
GST_BATCHER_VECTORISED static void
gst_batcher_copy_planar (
    guint8 *dst, const guint8 *src, gsize stride, gsize width, gsize height)
{
  gsize plane = width * height, y;

  for (y = 0; y < height; y++)
    gst_batcher_deinterleave_row (src + y * stride, dst + y * width,
        dst + plane + y * width, dst + 2 * plane + y * width, width);
}

static GstFlowReturn
gst_batcher_chain (GstPad *pad, GstObject *parent, GstBuffer *buffer)
{
  GstBatcher *batcher = GST_BATCHER (parent);
  GstTrainSampleMeta *meta = gst_buffer_get_train_sample_meta (buffer);
  GstVideoFrame frame;
  gsize row_bytes;
  guint8 *dst;
  gint y;
  gchar *name;

  if (!batcher->have_in_info) {
    gst_buffer_unref (buffer);
    GST_ELEMENT_ERROR (
        batcher, CORE, NEGOTIATION, ("Got an image before its caps."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (meta == NULL || meta->label < 0) {
    name = gst_train_describe_sample (buffer);
    GST_ELEMENT_ERROR (batcher, STREAM, FORMAT,
        ("Sample %s has no label: batches need a GstTrainSampleMeta with a "
         "label (from datasetsrc).",
            name),
        (NULL));
    g_free (name);
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }

  if (batcher->images == NULL) {
    GstFlowReturn ret;

    if (batcher->width == 0) {
      /* The first image fixes the size of every batch. */
      if (!gst_batcher_fix_size (batcher)) {
        gst_buffer_unref (buffer);
        GST_ELEMENT_ERROR (batcher, CORE, NEGOTIATION,
            ("Downstream does not accept batches of %u images of %dx%d.",
                batcher->effective_size, batcher->width, batcher->height),
            (NULL));
        return GST_FLOW_NOT_NEGOTIATED;
      }
    }
    ret = gst_batcher_start_batch (batcher, batcher->effective_size);
    if (ret == GST_FLOW_FLUSHING) {
      gst_buffer_unref (buffer);
      return ret;
    }
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (buffer);
      GST_ELEMENT_ERROR (batcher, RESOURCE, NO_SPACE_LEFT,
          ("Could not allocate a batch of %u images of %dx%d.",
              batcher->effective_size, batcher->width, batcher->height),
          (NULL));
      return GST_FLOW_ERROR;
    }
  }

  if (GST_VIDEO_INFO_WIDTH (&batcher->in_info) != batcher->width
      || GST_VIDEO_INFO_HEIGHT (&batcher->in_info) != batcher->height) {
    name = gst_train_describe_sample (buffer);
    GST_ELEMENT_ERROR (batcher, STREAM, FORMAT,
        ("Sample %s is %dx%d but the batch holds %dx%d images: put augment "
         "(or another scaler to a fixed size) before batcher.",
            name, GST_VIDEO_INFO_WIDTH (&batcher->in_info),
            GST_VIDEO_INFO_HEIGHT (&batcher->in_info), batcher->width,
            batcher->height),
        (NULL));
    g_free (name);
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }

  if (!gst_video_frame_map (&frame, &batcher->in_info, buffer, GST_MAP_READ)) {
    name = gst_train_describe_sample (buffer);
    GST_ELEMENT_ERROR (batcher, STREAM, FORMAT,
        ("Sample %s is smaller than its caps say.", name), (NULL));
    g_free (name);
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }
  /* NHWC: rows of W * 3 bytes, padding of the video rows left out. */
  row_bytes = (gsize)batcher->width * 3;
  dst = batcher->images_map.data
      + (gsize)batcher->filled * row_bytes * batcher->height;
  if (batcher->settings.layout == GST_BATCHER_LAYOUT_NCHW) {
    gst_batcher_copy_planar (dst, GST_VIDEO_FRAME_PLANE_DATA (&frame, 0),
        GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0), batcher->width,
        batcher->height);
  } else if ((gsize)GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0) == row_bytes) {
    memcpy (dst, GST_VIDEO_FRAME_PLANE_DATA (&frame, 0),
        row_bytes * batcher->height);
  } else {
    for (y = 0; y < batcher->height; y++)
      memcpy (dst + y * row_bytes,
          (const guint8 *)GST_VIDEO_FRAME_PLANE_DATA (&frame, 0)
              + (gsize)y * GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0),
          row_bytes);
  }
  gst_video_frame_unmap (&frame);

  GST_LOG_OBJECT (batcher,
      "image %u of the batch: sample %" G_GUINT64_FORMAT ", label %d, "
      "emission %u",
      batcher->filled, meta->index, meta->label, meta->emissions);
  ((gint32 *)batcher->labels_map.data)[batcher->filled] = meta->label;
  batcher->indices[batcher->filled] = meta->index;
  batcher->fresh += meta->emissions == 0;
  batcher->filled++;
  gst_buffer_unref (buffer);

  if (batcher->filled == batcher->effective_size)
    return gst_batcher_push_batch (batcher);
  return GST_FLOW_OK;
}

/* At EOS: the last partial batch goes out or is dropped. */
static GstFlowReturn
gst_batcher_finish (GstBatcher *batcher)
{
  gboolean drop, none_out;

  if (batcher->images == NULL || batcher->filled == 0) {
    gst_batcher_drop_batch (batcher);
    return GST_FLOW_OK;
  }
  GST_OBJECT_LOCK (batcher);
  drop = batcher->props.drop_remainder;
  GST_OBJECT_UNLOCK (batcher);
  GST_OBJECT_LOCK (batcher);
  none_out = batcher->batches_out == 0;
  GST_OBJECT_UNLOCK (batcher);
  if (drop && none_out) {
    /* every image of the stream was in that one partial batch: downstream
     * gets nothing at all, which only this element can explain */
    GST_ELEMENT_WARNING (batcher, STREAM, FAILED,
        ("Dropped all %u images of the stream at its end: fewer than "
         "batch-size=%u arrived, and drop-remainder=true (the default) drops "
         "a last partial batch, so no batch went out. Set "
         "drop-remainder=false to push them as one smaller batch, or "
         "batch-size=%u or less.",
            batcher->filled, batcher->effective_size, batcher->filled),
        (NULL));
    gst_batcher_drop_batch (batcher);
    return GST_FLOW_OK;
  }
  if (drop) {
    GST_INFO_OBJECT (batcher, "dropping the last %u images (drop-remainder)",
        batcher->filled);
    gst_batcher_drop_batch (batcher);
    return GST_FLOW_OK;
  }
  return gst_batcher_push_batch (batcher);
}

static gboolean
gst_batcher_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstBatcher *batcher = GST_BATCHER (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS: {
      GstCaps *caps;
      GstVideoInfo info;

      gst_event_parse_caps (event, &caps);
      if (!gst_video_info_from_caps (&info, caps)) {
        GST_ELEMENT_ERROR (batcher, CORE, NEGOTIATION,
            ("Cannot batch images with caps %" GST_PTR_FORMAT ".", caps),
            (NULL));
        gst_event_unref (event);
        return FALSE;
      }
      GST_DEBUG_OBJECT (batcher, "input caps %" GST_PTR_FORMAT, caps);
      batcher->in_info = info;
      batcher->have_in_info = TRUE;
      gst_event_unref (event);
      /* Our own caps follow with the first image. */
      return TRUE;
    }
    case GST_EVENT_EOS:
      GST_DEBUG_OBJECT (batcher, "EOS with %u images in the batch",
          batcher->images != NULL ? batcher->filled : 0);
      gst_batcher_finish (batcher);
      break;
    case GST_EVENT_FLUSH_START:
      GST_DEBUG_OBJECT (batcher, "flush start");
      gst_batcher_set_pool_flushing (batcher, TRUE);
      break;
    case GST_EVENT_FLUSH_STOP:
      GST_DEBUG_OBJECT (batcher, "flush stop: dropping %u images",
          batcher->images != NULL ? batcher->filled : 0);
      gst_batcher_drop_batch (batcher);
      gst_batcher_set_pool_flushing (batcher, FALSE);
      break;
    case GST_EVENT_SEGMENT:
      /* A segment before our first caps would break the sticky order:
       * send the caps we can already give. */
      if (batcher->negotiated_n == 0 && batcher->have_in_info)
        gst_batcher_fix_size (batcher);
      break;
    default:
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}

static void
gst_batcher_reset (GstBatcher *batcher)
{
  gst_batcher_drop_batch (batcher);
  gst_batcher_clear_allocation (batcher);
  batcher->have_in_info = FALSE;
  batcher->width = 0;
  batcher->height = 0;
  batcher->negotiated_n = 0;
  batcher->effective_size = 0;
  g_clear_pointer (&batcher->indices, g_free);
}

static GstStateChangeReturn
gst_batcher_change_state (GstElement *element, GstStateChange transition)
{
  GstBatcher *batcher = GST_BATCHER (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    gst_batcher_reset (batcher);
    /* Two blocks: the batch downstream holds and the one being filled. */
    if (batcher->recycler == NULL)
      batcher->recycler = gst_train_recycler_new (2);
    GST_OBJECT_LOCK (batcher);
    batcher->settings = batcher->props;
    batcher->batches_out = 0;
    GST_OBJECT_UNLOCK (batcher);
    GST_INFO_OBJECT (batcher,
        "starting: batch-size %u, drop-remainder %d, layout %s",
        batcher->settings.batch_size, batcher->settings.drop_remainder,
        batcher->settings.layout == GST_BATCHER_LAYOUT_NCHW ? "nchw" : "nhwc");
  }
  /* Before the pads deactivate: that waits for a chain function that may
   * wait for a pool buffer. */
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    gst_batcher_set_pool_flushing (batcher, TRUE);
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY
      || (transition == GST_STATE_CHANGE_READY_TO_PAUSED
          && ret == GST_STATE_CHANGE_FAILURE)) {
    /* the pads are inactive: nothing pushes any more */
    GST_INFO_OBJECT (batcher, "stopped after %" G_GUINT64_FORMAT " batches",
        batcher->batches_out);
    gst_batcher_reset (batcher);
    /* Batches still downstream keep it alive until they are freed. */
    g_clear_pointer (&batcher->recycler, gst_train_recycler_unref);
  }
  return ret;
}
