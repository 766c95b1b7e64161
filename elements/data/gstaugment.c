/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstaugment.c: torchvision's training crops and flips, on RGB images of
 * any size, to one fixed output size.
 *
 * SECTION:element-augment
 * @title: augment
 *
 * Takes `video/x-raw, format=RGB` images of any size, one sample per buffer,
 * whose size may change from buffer to buffer (new caps before each, as
 * imagedec sends them), and gives `video/x-raw, format=RGB` images of
 * @width x @height, always the same caps.
 *
 * With crop=random-resized (the default) each image is cut to a random box
 * drawn exactly as torchvision's RandomResizedCrop draws it (ten tries at an
 * area of @scale-min .. @scale-max of the image and an aspect ratio of
 * @ratio-min .. @ratio-max, uniform in log, then the central fallback), and
 * that box is resized to the output. crop=center is torchvision's
 * evaluation transform, Resize(@resize-short) then CenterCrop; only the
 * kept window of the resized image is computed. crop=resize stretches the
 * whole image to the output size. Then, with probability @flip, the result
 * is mirrored left to right (in every crop mode: set flip=0 for evaluation).
 *
 * Resampling is torch's bilinear interpolation with antialias=True (what
 * torchvision's F.resized_crop does to a uint8 tensor): a triangle filter,
 * widened by the scale factor when shrinking, applied along the rows and
 * then the columns in float, and rounded half to even. On photographs it
 * agrees with torchvision 0.14 / torch 1.13 to within one grey level, on
 * almost every pixel exactly.
 *
 * The random numbers of each image come from its own generator, seeded
 * from @seed and the sample's identity in its #GstTrainSampleMeta (epoch,
 * dataset index, and emissions, so that each echo repeat of a sample gets
 * its own crop): per image the crop box (area and ratio per try, then the
 * position), then one number for the flip, drawn whatever @flip is, so
 * that flip=0 leaves the crops of a seed as they were. An image's output
 * therefore depends only on @seed and which sample it is, not on what came
 * before it: the same whatever @n-threads and the thread budget, whatever
 * the order of the input, and an exact resume that starts the source
 * half-way through an epoch has no generator state to restore. A buffer
 * without a sample meta draws from a stream numbered by its place in the
 * input since the element started. In a data-parallel job (mpirun, srun:
 * more than one rank in the launcher's environment) every rank but rank 0
 * mixes its rank into @seed, so that one launch line gives each rank its
 * own draws. (Until issue 17 the draws came from one generator in buffer
 * order: the crops of a given seed changed then.)
 *
 * Since the crop box is all that crop=random-resized reads, augment tells
 * an imagedec linked directly to it, when asked, the box of each sample
 * with a sample meta (GST_TRAIN_REGION_QUERY, train-common.h), and takes the
 * decoded rectangle (#GstTrainRegionMeta) in place of the whole image: same
 * draws, same output, less decoding. Through a queue, echo or any other
 * element it does not answer. A #GstTrainRegionMeta whose rectangle does
 * not hold augment's box is an error naming the sample (set
 * decode-region=false on the decoder).
 *
 * Images are resampled whole on the worker threads that the data elements
 * of a process share (one thread budget, by default the cores the process
 * may run on; GST_TRAIN_THREADS sets it), at most 2 x @n-threads at once
 * (0: 8 x the budget, at most 2 x the budget + 64), and leave in input
 * order; with n-threads=1, or a budget of one, in the streaming thread.
 * Images in flight go out before any serialized event and when a drain
 * query comes, so a single buffer pushed alone (an appsrc, a test harness)
 * needs EOS or a drain query to come out.
 *
 * The sample meta (#GstTrainSampleMeta), timestamps and every other meta of
 * the input that has no tags travel on to the output.
 *
 * ## Messages
 *
 * augment posts no message of its own while it works. Errors (which stop
 * the pipeline): scale-min above scale-max or ratio-min above ratio-max (at
 * start, naming the properties), an image before any caps or smaller than
 * its caps say (naming the sample), caps that are not RGB, downstream
 * refusing the output size, a region meta whose rectangle does not hold
 * the crop box.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 datasetsrc location=/data/train ! imagedec min-short-side=256 ! augment width=224 height=224 seed=1 ! fakesink
 * ]| Training crops, as torchvision's RandomResizedCrop(224) +
 * RandomHorizontalFlip().
 * |[
 * gst-launch-1.0 datasetsrc location=/data/val shuffle=false ! imagedec ! augment crop=center resize-short=256 flip=0 ! fakesink
 * ]| Evaluation crops, as Resize(256) + CenterCrop(224).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "augment-private.h"
#include "element-util.h"
#include "train-common.h"
#include "train-meta.h"
#include "train-props.h"

#include <string.h>

GST_DEBUG_CATEGORY (gst_augment_debug);

#define DEFAULT_WIDTH 224
#define DEFAULT_HEIGHT 224
#define DEFAULT_CROP GST_AUGMENT_CROP_RANDOM_RESIZED
#define DEFAULT_SCALE_MIN 0.08
#define DEFAULT_SCALE_MAX 1.0
#define DEFAULT_RATIO_MIN (3.0 / 4.0)
#define DEFAULT_RATIO_MAX (4.0 / 3.0)
#define DEFAULT_FLIP 0.5
#define DEFAULT_RESIZE_SHORT 256
#define DEFAULT_SEED 0
#define DEFAULT_N_THREADS 0

#define MAX_SIZE 16384
#define MIN_RATIO 0.001
#define MAX_RATIO 1000.0

enum
{
  PROP_0,
  PROP_WIDTH,
  PROP_HEIGHT,
  PROP_CROP,
  PROP_SCALE_MIN,
  PROP_SCALE_MAX,
  PROP_RATIO_MIN,
  PROP_RATIO_MAX,
  PROP_FLIP,
  PROP_RESIZE_SHORT,
  PROP_SEED,
  PROP_N_THREADS,
  N_PROPERTIES
};

/* Where each property is kept in GstAugment (train-props.h). */
#define FIELD(name) .offset = G_STRUCT_OFFSET (GstAugment, name)
static const GstTrainProp property_table[N_PROPERTIES] = {
  [PROP_WIDTH] = { FIELD (props.width) },
  [PROP_HEIGHT] = { FIELD (props.height) },
  [PROP_CROP] = { FIELD (props.crop) },
  [PROP_SCALE_MIN] = { FIELD (props.range.scale_min) },
  [PROP_SCALE_MAX] = { FIELD (props.range.scale_max) },
  [PROP_RATIO_MIN] = { FIELD (props.range.ratio_min) },
  [PROP_RATIO_MAX] = { FIELD (props.range.ratio_max) },
  [PROP_FLIP] = { FIELD (props.flip) },
  [PROP_RESIZE_SHORT] = { FIELD (props.resize_short) },
  [PROP_SEED] = { FIELD (props.seed) },
  [PROP_N_THREADS] = { FIELD (props.n_threads) },
};
#undef FIELD

G_STATIC_ASSERT (sizeof (GstAugmentCrop) == sizeof (gint));

static GParamSpec *properties[N_PROPERTIES];

static GType
gst_augment_crop_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_AUGMENT_CROP_RANDOM_RESIZED,
        "A random box (RandomResizedCrop's rule) resized to the output",
        "random-resized" },
    { GST_AUGMENT_CROP_CENTER,
        "Short side resized to resize-short, then the centre cut out "
        "(Resize + CenterCrop)",
        "center" },
    { GST_AUGMENT_CROP_RESIZE,
        "The whole image resized to the output, aspect ratio not kept",
        "resize" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstAugmentCrop", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/x-raw, format = (string) RGB, "
                     "width = (int) [ 1, MAX ], height = (int) [ 1, MAX ]"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/x-raw, format = (string) RGB, "
                     "width = (int) [ 1, MAX ], height = (int) [ 1, MAX ]"));

#define gst_augment_parent_class parent_class
G_DEFINE_TYPE (GstAugment, gst_augment, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (
    augment, "augment", GST_RANK_NONE, GST_TYPE_AUGMENT);

static void gst_augment_dispose (GObject *object);
static void gst_augment_finalize (GObject *object);
static GstStateChangeReturn gst_augment_change_state (
    GstElement *element, GstStateChange transition);
static GstFlowReturn gst_augment_chain (
    GstPad *pad, GstObject *parent, GstBuffer *buffer);
static gboolean gst_augment_sink_event (
    GstPad *pad, GstObject *parent, GstEvent *event);
static gboolean gst_augment_sink_query (
    GstPad *pad, GstObject *parent, GstQuery *query);
static gboolean gst_augment_src_query (
    GstPad *pad, GstObject *parent, GstQuery *query);
static GstFlowReturn gst_augment_push_ready (GstAugment *augment, guint keep);
static void gst_augment_discard_jobs (GstAugment *augment);

static void
gst_augment_class_init (GstAugmentClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags flags =
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY;

  gobject_class->dispose = gst_augment_dispose;
  gobject_class->finalize = gst_augment_finalize;

  properties[PROP_WIDTH] = g_param_spec_int ("width", "Width",
      "Width of every output image, in pixels", 1, MAX_SIZE, DEFAULT_WIDTH,
      flags);
  properties[PROP_HEIGHT] = g_param_spec_int ("height", "Height",
      "Height of every output image, in pixels", 1, MAX_SIZE, DEFAULT_HEIGHT,
      flags);
  properties[PROP_CROP] = g_param_spec_enum ("crop", "Crop",
      "Which part of the image becomes the output: a random box "
      "(training), the centre after a resize (evaluation) or all of it",
      gst_augment_crop_get_type (), DEFAULT_CROP, flags);
  properties[PROP_SCALE_MIN] =
      g_param_spec_double ("scale-min", "Minimum scale",
          "crop=random-resized: smallest area of the box, as a fraction of "
          "the image's area (at most scale-max)",
          0.0, 1.0, DEFAULT_SCALE_MIN, flags);
  properties[PROP_SCALE_MAX] =
      g_param_spec_double ("scale-max", "Maximum scale",
          "crop=random-resized: largest area of the box, as a fraction of "
          "the image's area",
          0.0, 1.0, DEFAULT_SCALE_MAX, flags);
  properties[PROP_RATIO_MIN] =
      g_param_spec_double ("ratio-min", "Minimum aspect ratio",
          "crop=random-resized: smallest width / height of the box (at most "
          "ratio-max); the ratio is drawn uniformly in log",
          MIN_RATIO, MAX_RATIO, DEFAULT_RATIO_MIN, flags);
  properties[PROP_RATIO_MAX] =
      g_param_spec_double ("ratio-max", "Maximum aspect ratio",
          "crop=random-resized: largest width / height of the box", MIN_RATIO,
          MAX_RATIO, DEFAULT_RATIO_MAX, flags);
  properties[PROP_FLIP] = g_param_spec_double ("flip", "Flip probability",
      "Probability that an output image is mirrored left to right "
      "(in every crop mode; 0 = never)",
      0.0, 1.0, DEFAULT_FLIP, flags);
  properties[PROP_RESIZE_SHORT] =
      g_param_spec_int ("resize-short", "Resize short side",
          "crop=center: the image's short side is resized to this many "
          "pixels before the centre is cut out",
          1, 4 * MAX_SIZE, DEFAULT_RESIZE_SHORT, flags);
  properties[PROP_SEED] = g_param_spec_uint64 ("seed", "Seed",
      "Seed of the crop and flip draws, mixed with each sample's epoch, "
      "index and emissions: the same seed gives a sample the same crop "
      "whatever came before it (in a data-parallel job, ranks other than "
      "0 mix their rank into it)",
      0, G_MAXUINT64, DEFAULT_SEED, flags);
  properties[PROP_N_THREADS] = g_param_spec_uint ("n-threads", "Threads",
      "Images to resample at once on the threads the data elements "
      "share (0 = the whole thread budget: the cores this process may "
      "run on, or GST_TRAIN_THREADS; 1 = in the streaming thread); the "
      "output does not depend on it",
      0, 256, DEFAULT_N_THREADS, flags);
  gst_train_props_install (
      gobject_class, property_table, properties, N_PROPERTIES);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Training image augmentation", "Filter/Effect/Video",
      "Random-resized or centre crops and random flips of RGB images of any "
      "size to width x height, as torchvision computes them. Posts no "
      "message but errors (bad ranges at start, naming the properties; an "
      "image its caps do not describe, naming the sample)",
      "gst-train developers");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_augment_change_state);

  gst_type_mark_as_plugin_api (gst_augment_crop_get_type (), 0);
  GST_DEBUG_CATEGORY_INIT (
      gst_augment_debug, "augment", 0, "training image augmentation");
}

static void
gst_augment_init (GstAugment *augment)
{
  augment->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (
      augment->sinkpad, GST_DEBUG_FUNCPTR (gst_augment_chain));
  gst_pad_set_event_function (
      augment->sinkpad, GST_DEBUG_FUNCPTR (gst_augment_sink_event));
  gst_pad_set_query_function (
      augment->sinkpad, GST_DEBUG_FUNCPTR (gst_augment_sink_query));
  /* Every input size is fine: accepting caps need not ask downstream, which
   * would cost a round trip per image. */
  GST_PAD_SET_ACCEPT_TEMPLATE (augment->sinkpad);
  gst_element_add_pad (GST_ELEMENT (augment), augment->sinkpad);

  augment->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_query_function (
      augment->srcpad, GST_DEBUG_FUNCPTR (gst_augment_src_query));
  gst_element_add_pad (GST_ELEMENT (augment), augment->srcpad);

  gst_train_props_init (augment, property_table, properties, N_PROPERTIES);
  g_queue_init (&augment->jobs);
  g_queue_init (&augment->free_jobs);
}

static void
gst_augment_dispose (GObject *object)
{
  if (!gst_train_element_stop_before_dispose (GST_ELEMENT (object)))
    return; /* resurrected until another thread stops it */
  G_OBJECT_CLASS (parent_class)->dispose (object);
}

static void
gst_augment_finalize (GObject *object)
{
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* ---- caps ---- */

/* What we output for @width x @height at @fps_n / @fps_d (a range of rates
 * when @fps_d is 0). */
static GstCaps *
gst_augment_output_caps (gint width, gint height, gint fps_n, gint fps_d)
{
  GstCaps *caps = gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING,
      "RGB", "width", G_TYPE_INT, width, "height", G_TYPE_INT, height,
      "pixel-aspect-ratio", GST_TYPE_FRACTION, 1, 1, NULL);

  if (fps_d > 0)
    gst_caps_set_simple (
        caps, "framerate", GST_TYPE_FRACTION, fps_n, fps_d, NULL);
  else
    gst_caps_set_simple (
        caps, "framerate", GST_TYPE_FRACTION_RANGE, 0, 1, G_MAXINT, 1, NULL);
  return caps;
}

/* The output size: the one the element started with while it runs, so
 * that caps always describe the buffers. */
static void
gst_augment_get_output_size (GstAugment *augment, gint *width, gint *height)
{
  GST_OBJECT_LOCK (augment);
  if (augment->started) {
    *width = augment->settings.width;
    *height = augment->settings.height;
  } else {
    *width = augment->props.width;
    *height = augment->props.height;
  }
  GST_OBJECT_UNLOCK (augment);
}

/* Remembers the input format and, when the output caps change (the first
 * time, or a new frame rate), sends them downstream. */
static gboolean
gst_augment_set_input_caps (GstAugment *augment, GstCaps *caps)
{
  GstCaps *out_caps, *current;
  GstVideoInfo info;
  gint width, height;
  gboolean ok = TRUE;

  if (!gst_video_info_from_caps (&info, caps)) {
    GST_ELEMENT_ERROR (augment, STREAM, FORMAT,
        ("Input caps are not a complete RGB image format: %" GST_PTR_FORMAT ".",
            caps),
        (NULL));
    return FALSE;
  }
  /* A new image size alone leaves the output caps as they are: skip
   * building and comparing them for every image. */
  if (augment->have_in_caps && gst_pad_has_current_caps (augment->srcpad)
      && GST_VIDEO_INFO_FPS_N (&info)
          == GST_VIDEO_INFO_FPS_N (&augment->in_info)
      && GST_VIDEO_INFO_FPS_D (&info)
          == GST_VIDEO_INFO_FPS_D (&augment->in_info)) {
    GST_LOG_OBJECT (augment, "input caps %" GST_PTR_FORMAT, caps);
    augment->in_info = info;
    return TRUE;
  }
  GST_DEBUG_OBJECT (augment, "input caps %" GST_PTR_FORMAT, caps);
  /* New output caps go behind the images still in flight. */
  if (augment->pool != NULL)
    gst_augment_push_ready (augment, 0);
  augment->in_info = info;
  augment->have_in_caps = TRUE;

  gst_augment_get_output_size (augment, &width, &height);
  out_caps = gst_augment_output_caps (width, height,
      GST_VIDEO_INFO_FPS_N (&info), MAX (GST_VIDEO_INFO_FPS_D (&info), 1));
  current = gst_pad_get_current_caps (augment->srcpad);
  if (current == NULL || !gst_caps_is_equal (current, out_caps)) {
    GST_DEBUG_OBJECT (augment, "output caps %" GST_PTR_FORMAT, out_caps);
    /* Pushing sticky caps succeeds whatever downstream thinks of them (the
     * refusal would surface later as a bare not-negotiated): ask first, so
     * that the error says what was refused. */
    if (!gst_pad_peer_query_accept_caps (augment->srcpad, out_caps)) {
      GST_ELEMENT_ERROR (augment, CORE, NEGOTIATION,
          ("Downstream does not accept RGB images of %dx%d.", width, height),
          ("refused %" GST_PTR_FORMAT, out_caps));
      ok = FALSE;
    } else {
      ok = gst_pad_push_event (augment->srcpad, gst_event_new_caps (out_caps));
    }
  }
  if (current != NULL)
    gst_caps_unref (current);
  gst_caps_unref (out_caps);
  return ok;
}

static gboolean
gst_augment_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstAugment *augment = GST_AUGMENT (parent);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    gboolean ok;

    gst_event_parse_caps (event, &caps);
    ok = gst_augment_set_input_caps (augment, caps);
    gst_event_unref (event);
    return ok;
  }
  if (GST_EVENT_TYPE (event) == GST_EVENT_FLUSH_STOP
      || GST_EVENT_TYPE (event) == GST_EVENT_EOS)
    GST_DEBUG_OBJECT (augment, "%s: %u images in flight",
        GST_EVENT_TYPE_NAME (event), g_queue_get_length (&augment->jobs));
  if (GST_EVENT_TYPE (event) == GST_EVENT_FLUSH_STOP) {
    if (augment->pool != NULL)
      gst_augment_discard_jobs (augment);
  } else if (GST_EVENT_IS_SERIALIZED (event) && augment->pool != NULL) {
    /* A serialized event (EOS among them) stays behind the images that
     * came before it. */
    gst_augment_push_ready (augment, 0);
  }
  return gst_pad_event_default (pad, parent, event);
}

static gboolean
gst_augment_sink_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstAugment *augment = GST_AUGMENT (parent);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS: {
      GstCaps *filter, *result, *out_caps, *peer;
      gint width, height;

      /* Any RGB size, as long as downstream takes our output. */
      gst_query_parse_caps (query, &filter);
      gst_augment_get_output_size (augment, &width, &height);
      out_caps = gst_augment_output_caps (width, height, 0, 0);
      peer = gst_pad_peer_query_caps (augment->srcpad, out_caps);
      if (gst_caps_is_empty (peer)) {
        result = gst_caps_new_empty ();
      } else {
        GstCaps *templ = gst_pad_get_pad_template_caps (pad);

        result = filter
            ? gst_caps_intersect_full (filter, templ, GST_CAPS_INTERSECT_FIRST)
            : gst_caps_ref (templ);
        gst_caps_unref (templ);
      }
      gst_query_set_caps_result (query, result);
      gst_caps_unref (result);
      gst_caps_unref (peer);
      gst_caps_unref (out_caps);
      return TRUE;
    }
    case GST_QUERY_DRAIN:
      /* Everything in flight goes out before the answer. */
      if (augment->pool != NULL)
        gst_augment_push_ready (augment, 0);
      return gst_pad_query_default (pad, parent, query);
    case GST_QUERY_CUSTOM: {
      const GstStructure *s = gst_query_get_structure (query);

      /* What lies downstream has no say in which pixels augment reads. */
      if (s != NULL && gst_structure_has_name (s, GST_TRAIN_REGION_QUERY))
        return gst_augment_answer_region (augment, pad, query);
      return gst_pad_query_default (pad, parent, query);
    }
    case GST_QUERY_ALLOCATION:
      /* Our output is not our input: downstream's pool is no use upstream.
       * Frames are mapped through their video meta, so strides are free. */
      gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
      return TRUE;
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

static gboolean
gst_augment_src_query (GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstAugment *augment = GST_AUGMENT (parent);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS) {
    GstCaps *filter, *caps, *result;
    gint width, height;

    gst_query_parse_caps (query, &filter);
    gst_augment_get_output_size (augment, &width, &height);
    caps = gst_augment_output_caps (width, height, 0, 0);
    result = filter
        ? gst_caps_intersect_full (filter, caps, GST_CAPS_INTERSECT_FIRST)
        : gst_caps_ref (caps);
    gst_query_set_caps_result (query, result);
    gst_caps_unref (result);
    gst_caps_unref (caps);
    return TRUE;
  }
  return gst_pad_query_default (pad, parent, query);
}

/* ---- resampling (any thread) ---- */

/* Zeroes the bytes that pad each row of @data to its stride: recycled
 * memory would otherwise carry an older image there, and equal images
 * should be equal buffers. */
static void
gst_augment_clear_row_padding (const GstVideoInfo *info, guint8 *data)
{
  gsize stride = GST_VIDEO_INFO_PLANE_STRIDE (info, 0);
  gsize row = (gsize)GST_VIDEO_INFO_WIDTH (info) * 3;
  gint y;

  for (y = 0; row < stride && y < GST_VIDEO_INFO_HEIGHT (info); y++)
    memset (data + y * stride + row, 0, stride - row);
}

/* Resamples one image whole, as drawn, into a new output buffer. */
static void
gst_augment_task (GstTrainTask *task)
{
  GstAugmentJob *job = (GstAugmentJob *)task;
  const GstAugmentSettings *s = &job->augment->settings;
  GstTrainResamplePlan plan;
  GstVideoInfo out_info;
  GstMapInfo out_map;

  gst_train_resample_plan_init (&plan, &job->window, job->flip);
  gst_video_info_set_format (
      &out_info, GST_VIDEO_FORMAT_RGB, s->width, s->height);
  job->output = gst_train_recycler_new_buffer (
      job->augment->recycler, GST_VIDEO_INFO_SIZE (&out_info));
  gst_buffer_map (job->output, &out_map, GST_MAP_WRITE);
  gst_train_resample_rows (&plan,
      GST_VIDEO_FRAME_PLANE_DATA (&job->in_frame, 0),
      GST_VIDEO_FRAME_PLANE_STRIDE (&job->in_frame, 0), out_map.data,
      GST_VIDEO_INFO_PLANE_STRIDE (&out_info, 0), 0, plan.y.size,
      &job->scratch);
  gst_augment_clear_row_padding (&out_info, out_map.data);
  gst_buffer_unmap (job->output, &out_map);
  gst_video_frame_unmap (&job->in_frame);
  gst_train_resample_plan_clear (&plan);
}

/* ---- streaming ---- */

static GstAugmentJob *
gst_augment_job_new (GstAugment *augment, GstBuffer *input)
{
  GstAugmentJob *job = g_queue_pop_head (&augment->free_jobs);

  if (job == NULL) {
    job = g_new0 (GstAugmentJob, 1);
    job->task.func = gst_augment_task;
    job->augment = augment;
  }
  job->input = input;
  return job;
}

/* Keeps @job (its scratch memory) for the next image. */
static void
gst_augment_job_recycle (GstAugment *augment, GstAugmentJob *job)
{
  gst_clear_buffer (&job->input);
  gst_clear_buffer (&job->output);
  g_queue_push_head (&augment->free_jobs, job);
}

/* Pushes the output of @job, which has run, downstream. */
static GstFlowReturn
gst_augment_finish_job (GstAugment *augment, GstAugmentJob *job)
{
  GstBuffer *output = job->output;

  job->output = NULL;
  gst_buffer_copy_into (output, job->input,
      GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
  gst_train_copy_untagged_metas (job->input, output);
  gst_augment_job_recycle (augment, job);
  return gst_pad_push (augment->srcpad, output);
}

/* Pushes resampled images from the head of the queue, in input order,
 * waiting (and resampling meanwhile) while more than @keep are queued. */
static GstFlowReturn
gst_augment_push_ready (GstAugment *augment, guint keep)
{
  GstAugmentJob *job;
  GstFlowReturn ret = GST_FLOW_OK;

  while (ret == GST_FLOW_OK
      && (job = g_queue_peek_head (&augment->jobs)) != NULL) {
    if (!gst_train_pool_is_done (augment->pool, &job->task)) {
      if (g_queue_get_length (&augment->jobs) <= keep)
        break;
      gst_train_pool_wait (augment->pool, &job->task);
    }
    g_queue_pop_head (&augment->jobs);
    ret = gst_augment_finish_job (augment, job);
  }
  return ret;
}

/* Drops every image in flight (a flush, stop). */
static void
gst_augment_discard_jobs (GstAugment *augment)
{
  GstAugmentJob *job;

  while ((job = g_queue_pop_head (&augment->jobs)) != NULL) {
    if (!gst_train_pool_cancel (augment->pool, &job->task))
      gst_video_frame_unmap (&job->in_frame);
    gst_augment_job_recycle (augment, job);
  }
}

static GstFlowReturn
gst_augment_chain (GstPad *pad, GstObject *parent, GstBuffer *buffer)
{
  GstAugment *augment = GST_AUGMENT (parent);
  GstAugmentJob *job;

  if (!augment->have_in_caps) {
    gchar *name = gst_train_describe_sample (buffer);

    GST_ELEMENT_ERROR (augment, CORE, NEGOTIATION,
        ("Sample %s arrived before any caps said its size and format.", name),
        ("augment needs video/x-raw, format=RGB caps before each image "
         "size"));
    g_free (name);
    gst_buffer_unref (buffer);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  job = gst_augment_job_new (augment, buffer);
  if (!gst_video_frame_map (
          &job->in_frame, &augment->in_info, buffer, GST_MAP_READ)) {
    gchar *name = gst_train_describe_sample (buffer);

    GST_ELEMENT_ERROR (augment, STREAM, FORMAT,
        ("Sample %s: a buffer of %" G_GSIZE_FORMAT
         " bytes does not hold the %dx%d RGB image its caps announce "
         "(%" G_GSIZE_FORMAT " bytes).",
            name, gst_buffer_get_size (buffer),
            GST_VIDEO_INFO_WIDTH (&augment->in_info),
            GST_VIDEO_INFO_HEIGHT (&augment->in_info),
            GST_VIDEO_INFO_SIZE (&augment->in_info)),
        (NULL));
    g_free (name);
    gst_augment_job_recycle (augment, job);
    return GST_FLOW_ERROR;
  }

  if (!gst_augment_draw_buffer (augment, job)) {
    gst_video_frame_unmap (&job->in_frame);
    gst_augment_job_recycle (augment, job);
    return GST_FLOW_ERROR;
  }

  if (augment->pool == NULL) {
    gst_augment_task (&job->task);
    return gst_augment_finish_job (augment, job);
  }
  g_queue_push_tail (&augment->jobs, job);
  gst_train_pool_push (augment->pool, &job->task);
  return gst_augment_push_ready (augment, augment->window - 1);
}

/* ---- state ---- */

static gboolean
gst_augment_start (GstAugment *augment)
{
  GstAugmentSettings *s = &augment->settings;

  GST_OBJECT_LOCK (augment);
  *s = augment->props;
  augment->started = TRUE;
  GST_OBJECT_UNLOCK (augment);

  if (s->range.scale_min > s->range.scale_max) {
    GST_ELEMENT_ERROR (augment, LIBRARY, SETTINGS,
        ("scale-min (%g) is larger than scale-max (%g).", s->range.scale_min,
            s->range.scale_max),
        (NULL));
    return FALSE;
  }
  if (s->range.ratio_min > s->range.ratio_max) {
    GST_ELEMENT_ERROR (augment, LIBRARY, SETTINGS,
        ("ratio-min (%g) is larger than ratio-max (%g).", s->range.ratio_min,
            s->range.ratio_max),
        (NULL));
    return FALSE;
  }

  {
    gint rank;
    guint64 seed = gst_train_rank_seed (s->seed, &rank);

    if (seed != s->seed)
      GST_INFO_OBJECT (augment,
          "rank %d of a data-parallel job: drawing from seed %" G_GUINT64_FORMAT
          " mixed with the rank",
          rank, s->seed);
    augment->rank_seed = seed;
    augment->unnamed_in = 0;
  }
  augment->have_in_caps = FALSE;
  /* Room for the images a short queue downstream holds; buffers that stay
   * away longer (in an echo buffer) just get new blocks. */
  augment->recycler = gst_train_recycler_new (16);
  /* n-threads=1 resamples in the streaming thread; otherwise whole images
   * go to the shared pool, enough in flight to keep n-threads busy while
   * the head waits for the slowest (0: the pool's window). */
  augment->pool = s->n_threads == 1 ? NULL : gst_train_pool_get ();
  if (augment->pool == NULL)
    augment->window = 1;
  else if (s->n_threads > 0)
    augment->window = 2 * s->n_threads;
  else
    augment->window = gst_train_pool_get_window (augment->pool);
  GST_INFO_OBJECT (augment,
      "starting: %dx%d, crop %s, scale %g .. %g, ratio %g .. %g, flip %g, "
      "resize-short %d, seed %" G_GUINT64_FORMAT ", n-threads %u (%u images "
      "in flight)",
      s->width, s->height,
      s->crop == GST_AUGMENT_CROP_RANDOM_RESIZED ? "random-resized"
          : s->crop == GST_AUGMENT_CROP_CENTER   ? "center"
                                                 : "resize",
      s->range.scale_min, s->range.scale_max, s->range.ratio_min,
      s->range.ratio_max, s->flip, s->resize_short, s->seed, s->n_threads,
      augment->window);
  return TRUE;
}

static void
gst_augment_stop (GstAugment *augment)
{
  GstAugmentJob *job;

  GST_INFO_OBJECT (augment, "stopping");
  /* The pads are inactive: only the pool may still hold an image. */
  if (augment->pool != NULL)
    gst_augment_discard_jobs (augment);
  g_clear_pointer (&augment->pool, gst_train_pool_unref);
  while ((job = g_queue_pop_head (&augment->free_jobs)) != NULL) {
    gst_train_resample_scratch_clear (&job->scratch);
    g_free (job);
  }
  g_clear_pointer (&augment->recycler, gst_train_recycler_unref);
  augment->have_in_caps = FALSE;
  GST_OBJECT_LOCK (augment);
  augment->started = FALSE;
  GST_OBJECT_UNLOCK (augment);
}

static GstStateChangeReturn
gst_augment_change_state (GstElement *element, GstStateChange transition)
{
  GstAugment *augment = GST_AUGMENT (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED
      && !gst_augment_start (augment)) {
    gst_augment_stop (augment);
    return GST_STATE_CHANGE_FAILURE;
  }

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY
      || (transition == GST_STATE_CHANGE_READY_TO_PAUSED
          && ret == GST_STATE_CHANGE_FAILURE))
    gst_augment_stop (augment);
  return ret;
}
