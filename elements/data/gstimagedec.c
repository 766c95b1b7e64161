/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gstimagedec.c: decodes JPEG samples with libjpeg-turbo, in parallel.
 *
 * SECTION:element-imagedec
 * @title: imagedec
 *
 * Decodes one `image/jpeg` buffer per sample into `video/x-raw` RGB (or GRAY8
 * when downstream asks for it), at full resolution or, with @min-short-side,
 * at the smallest DCT scale (1/8, 1/4, 1/2 or 1; any eighth with
 * scales=all) whose short side still reaches that
 * many pixels, which is several times cheaper than decoding at full size and
 * shrinking afterwards. Grayscale and CMYK/YCCK JPEGs come out as RGB;
 * baseline, progressive, arithmetic-coded and restart-marker files decode.
 *
 * With @decode-region (the default), imagedec asks the element linked to
 * its source pad, before each decode, which rectangle of the image it will
 * read (the custom query GST_TRAIN_REGION_QUERY, train-common.h). augment
 * answers with its crop box when it is linked directly; imagedec then
 * decodes that rectangle alone (libjpeg-turbo's jpeg_crop_scanline and
 * jpeg_skip_scanlines) and pushes it with caps of its size and a
 * #GstTrainRegionMeta saying where it lies. The pixels are those of a whole
 * decode. The first time a file comes (by its dataset index in this run)
 * the rest of it is read too, entropy-decoded only, so a file damaged
 * anywhere fails as its whole decode does; later it stops after the box.
 * So augment's output and the samples skipped do not change; the work
 * saved is the inverse DCT, upsampling and colour conversion outside the
 * box, and from a file's second time all decoding below it
 * (docs/benchmarks/input-stage.md). Anything else downstream leaves the
 * query unanswered and gets whole images.
 *
 * Samples decode on the worker threads that the data elements of a process
 * share (one thread budget, by default the cores the process may run on;
 * see the thread budget in docs/benchmarks/input-pipeline.md), at most
 * 2 x @n-threads in flight (0: 8 x the budget, at most 2 x the budget
 * + 64), and leave in input order. Every image
 * has its own size: when it changes, new caps go downstream before the
 * buffer, as jpegdec does. The sample meta (#GstTrainSampleMeta) and every
 * other untagged meta of the input travel on to the output.
 *
 * A corrupt, truncated, empty or non-JPEG buffer, or one whose header
 * claims more than 2^28 pixels, is a warning that names the sample and its
 * file, and is dropped (on-error=skip, at most @max-errors times), or an
 * error that stops the pipeline (on-error=fail). A file is
 * warned about and counted once per run: datasetsrc reads it again every
 * epoch, and imagedec then drops it quietly (a debug line), by the file (or
 * the dataset index) in its #GstTrainSampleMeta.
 *
 * ## Messages
 *
 * * A warning (GST_STREAM_ERROR_DECODE) per sample skipped: "Skipping
 *   sample N ("PATH"): CAUSE." with the debug text "on-error=skip, K
 *   skipped so far"; @samples-skipped counts them.
 * * An error (GST_STREAM_ERROR_DECODE) once more than @max-errors samples
 *   were skipped: "Too many samples did not decode: K skipped, max-errors
 *   is M."; with on-error=fail, at the first: "Could not decode sample N
 *   ("PATH"): CAUSE."
 * * Errors when downstream takes neither RGB nor GRAY8, or refuses the caps
 *   of an image's size.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 datasetsrc location=/data/train ! imagedec n-threads=4 min-short-side=256 ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "element-util.h"
#include "gstimagedec.h"
#include "jpeg-decode.h"
#include "memory-recycler.h"
#include "train-common.h"
#include "train-meta.h"
#include "train-props.h"
#include "train-pool.h"

#include <gst/video/video.h>
#include <turbojpeg.h>

GST_DEBUG_CATEGORY_STATIC (gst_image_dec_debug);
#define GST_CAT_DEFAULT gst_image_dec_debug

#define DEFAULT_N_THREADS 0
#define DEFAULT_MIN_SHORT_SIDE 0
#define DEFAULT_SCALES GST_IMAGE_DEC_SCALES_FAST
#define DEFAULT_ON_ERROR GST_TRAIN_ON_ERROR_SKIP
#define DEFAULT_MAX_ERRORS 1000
#define DEFAULT_DECODE_REGION TRUE

enum
{
  PROP_0,
  PROP_N_THREADS,
  PROP_MIN_SHORT_SIDE,
  PROP_SCALES,
  PROP_ON_ERROR,
  PROP_MAX_ERRORS,
  PROP_SAMPLES_SKIPPED,
  PROP_DECODE_REGION,
  N_PROPERTIES
};

typedef enum
{
  GST_IMAGE_DEC_SCALES_FAST,
  GST_IMAGE_DEC_SCALES_ALL,
} GstImageDecScales;

/* The properties as they were when the element started; on-error and
 * max-errors, which may change while it plays, live in GstTrainBadSamples. */
typedef struct
{
  guint n_threads;
  guint min_short_side;
  GstImageDecScales scales;
  gboolean decode_region;
} GstImageDecSettings;

/* One input buffer on its way through the shared pool. */
typedef struct
{
  GstTrainTask task; /* first: the pool hands it back */
  GstImageDec *dec;
  GstBuffer *input;
  GstBuffer *output;
  gchar *error;
  gint width;
  gint height;
  /* @header is the image's when @have_header (read in the streaming thread
   * to ask downstream); only @region of it is wanted when @has_region
   * (downstream said so, see GST_TRAIN_REGION_QUERY). */
  gboolean have_header;
  gboolean has_region;
  GstTrainRegion region;
  GstTrainJpegHeader header;
} GstImageDecJob;

struct _GstImageDec
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* Properties and the skip policy and count, under the object lock. */
  GstImageDecSettings props;
  GstTrainBadSamples bad;

  /* Streaming state: @settings is set at start, then read-only (decoder
   * threads read it too). */
  GstImageDecSettings settings;
  GstVideoFormat format; /* chosen with downstream at the first buffer */
  gint out_width;
  gint out_height;
  gboolean have_caps;
  GList *pending_events; /* sticky events held until the first caps */
  /* nobody downstream answers region queries: ask no more until the
   * source pad is relinked (a reconfigure) or the element starts again */
  gboolean region_refused;
  guint window;               /* decodes in flight in the pool */
  GstTrainRecycler *recycler; /* where output images get their memory */

  /* Jobs in input order, and the samples (by dataset index) whose file
   * decoded whole once in this run, under @lock: a region of one of those
   * is decoded without reading the file past it. */
  GMutex lock;
  GQueue jobs;
  gboolean flushing;
  GArray *known_good; /* guint8 bits, bit i = dataset index i */
  GstTrainPool *pool; /* the process's; NULL with n-threads=1 */
};

/* Where each property is kept in GstImageDec (train-props.h). */
#define FIELD(name) .offset = G_STRUCT_OFFSET (GstImageDec, name)
static const GstTrainProp property_table[N_PROPERTIES] = {
  [PROP_N_THREADS] = { FIELD (props.n_threads) },
  [PROP_MIN_SHORT_SIDE] = { FIELD (props.min_short_side) },
  [PROP_SCALES] = { FIELD (props.scales) },
  [PROP_ON_ERROR] = { FIELD (bad.on_error) },
  [PROP_MAX_ERRORS] = { FIELD (bad.max_errors) },
  [PROP_SAMPLES_SKIPPED] = { FIELD (bad.skipped) },
  [PROP_DECODE_REGION] = { FIELD (props.decode_region) },
};
#undef FIELD

G_STATIC_ASSERT (sizeof (GstImageDecScales) == sizeof (gint));
G_STATIC_ASSERT (sizeof (GstTrainOnError) == sizeof (gint));

static GParamSpec *properties[N_PROPERTIES];

static GType
gst_image_dec_scales_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { GST_IMAGE_DEC_SCALES_FAST,
        "1/8, 1/4, 1/2 or 1: the scales libjpeg-turbo decodes fastest",
        "fast" },
    { GST_IMAGE_DEC_SCALES_ALL,
        "Any libjpeg-turbo scale from 1/8 to 1 "
        "(in eighths): fewest pixels, but 3/8 .. 7/8 decode slowly",
        "all" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstImageDecScales", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE (
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS ("image/jpeg"));

static GstStaticPadTemplate src_template =
    GST_STATIC_PAD_TEMPLATE ("src", GST_PAD_SRC, GST_PAD_ALWAYS,
        GST_STATIC_CAPS ("video/x-raw, format = (string) { RGB, GRAY8 }, "
                         "width = (int) [ 1, MAX ], height = (int) [ 1, MAX ], "
                         "framerate = (fraction) 0/1"));

#define gst_image_dec_parent_class parent_class
G_DEFINE_TYPE (GstImageDec, gst_image_dec, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (
    imagedec, "imagedec", GST_RANK_NONE, GST_TYPE_IMAGE_DEC);

static void gst_image_dec_dispose (GObject *object);
static void gst_image_dec_finalize (GObject *object);
static GstStateChangeReturn gst_image_dec_change_state (
    GstElement *element, GstStateChange transition);
static GstFlowReturn gst_image_dec_chain (
    GstPad *pad, GstObject *parent, GstBuffer *buffer);
static gboolean gst_image_dec_sink_event (
    GstPad *pad, GstObject *parent, GstEvent *event);

static void
gst_image_dec_class_init (GstImageDecClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->dispose = gst_image_dec_dispose;
  gobject_class->finalize = gst_image_dec_finalize;

  properties[PROP_N_THREADS] = g_param_spec_uint ("n-threads", "Threads",
      "Decodes to keep running at once on the threads the data elements "
      "share (0 = the whole thread budget: the cores this process may "
      "run on, or GST_TRAIN_THREADS; 1 = decode in the streaming "
      "thread); output keeps the input order",
      0, 256, DEFAULT_N_THREADS,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_MIN_SHORT_SIDE] =
      g_param_spec_uint ("min-short-side", "Minimum short side",
          "Decode at the smallest DCT scale (see scales) whose short side is "
          "still at least this many pixels (0 = full resolution)",
          0, G_MAXINT, DEFAULT_MIN_SHORT_SIDE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_SCALES] = g_param_spec_enum ("scales", "Scales",
      "Which DCT scales min-short-side may pick",
      gst_image_dec_scales_get_type (), DEFAULT_SCALES,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_DECODE_REGION] =
      g_param_spec_boolean ("decode-region", "Decode region",
          "Ask the element linked to the source pad (augment) which "
          "rectangle of each image it reads, and decode only that: "
          "libjpeg-turbo skips the inverse DCT and colour conversion of "
          "the rest (the first time a file comes it is read to the end, "
          "so damage anywhere fails as in a whole decode). The pixels "
          "are those of a whole decode; the buffer holds the rectangle, "
          "with caps of its size. Only for RGB output of YCbCr, RGB and "
          "grayscale JPEGs; FALSE decodes every image whole",
          DEFAULT_DECODE_REGION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_ON_ERROR] = g_param_spec_enum ("on-error", "On error",
      "What to do with a sample that does not decode (corrupt, "
      "truncated, empty or not a JPEG)",
      GST_TYPE_TRAIN_ON_ERROR, DEFAULT_ON_ERROR,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  properties[PROP_MAX_ERRORS] = g_param_spec_int ("max-errors",
      "Maximum errors",
      "With on-error=skip, fail once more than this many samples were "
      "skipped (-1 = never fail)",
      -1, G_MAXINT, DEFAULT_MAX_ERRORS,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  properties[PROP_SAMPLES_SKIPPED] = g_param_spec_uint64 ("samples-skipped",
      "Samples skipped", "Samples that did not decode and were dropped", 0,
      G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  gst_train_props_install (
      gobject_class, property_table, properties, N_PROPERTIES);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Training image decoder", "Codec/Decoder/Image",
      "Decodes JPEG samples with libjpeg-turbo on several threads, in order, "
      "to RGB (or GRAY8) at full size or a DCT scale; new caps when the size "
      "changes. Posts a warning (stream, decode) naming each sample that "
      "does not decode, once per file (debug: the count so far), and an "
      "error past max-errors or with on-error=fail",
      "gst-train developers");

  element_class->change_state = GST_DEBUG_FUNCPTR (gst_image_dec_change_state);

  gst_type_mark_as_plugin_api (GST_TYPE_TRAIN_ON_ERROR, 0);
  gst_type_mark_as_plugin_api (gst_image_dec_scales_get_type (), 0);
  GST_DEBUG_CATEGORY_INIT (
      gst_image_dec_debug, "imagedec", 0, "training image decoder");
}

static void
gst_image_dec_init (GstImageDec *dec)
{
  dec->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (
      dec->sinkpad, GST_DEBUG_FUNCPTR (gst_image_dec_chain));
  gst_pad_set_event_function (
      dec->sinkpad, GST_DEBUG_FUNCPTR (gst_image_dec_sink_event));
  gst_element_add_pad (GST_ELEMENT (dec), dec->sinkpad);

  dec->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (dec->srcpad);
  gst_element_add_pad (GST_ELEMENT (dec), dec->srcpad);

  gst_train_props_init (dec, property_table, properties, N_PROPERTIES);
  dec->bad.bounded = TRUE;
  dec->format = GST_VIDEO_FORMAT_UNKNOWN;
  g_mutex_init (&dec->lock);
  g_queue_init (&dec->jobs);
  dec->known_good = g_array_new (FALSE, TRUE, sizeof (guint8));
}

static void
gst_image_dec_dispose (GObject *object)
{
  if (!gst_train_element_stop_before_dispose (GST_ELEMENT (object)))
    return; /* resurrected until another thread stops it */
  G_OBJECT_CLASS (parent_class)->dispose (object);
}

static void
gst_image_dec_finalize (GObject *object)
{
  GstImageDec *dec = GST_IMAGE_DEC (object);

  gst_train_bad_samples_clear (&dec->bad);
  g_array_unref (dec->known_good);
  g_mutex_clear (&dec->lock);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* ---- decoding (any thread) ---- */

/* Whether the file of @input (its sample meta's dataset index) decoded
 * whole before in this run; @set marks it so. Any thread. */
static gboolean
gst_image_dec_known_good (GstImageDec *dec, GstBuffer *input, gboolean set)
{
  GstTrainSampleMeta *meta = gst_buffer_get_train_sample_meta (input);
  gboolean known = FALSE;
  guint byte;

  if (meta == NULL || meta->index >= G_MAXUINT / 2)
    return FALSE;
  byte = (guint)(meta->index / 8);
  g_mutex_lock (&dec->lock);
  if (set && byte >= dec->known_good->len)
    g_array_set_size (
        dec->known_good, MAX (byte + 1, dec->known_good->len * 2));
  if (byte < dec->known_good->len) {
    guint8 *bits = &g_array_index (dec->known_good, guint8, byte);

    known = (*bits >> (meta->index % 8)) & 1;
    if (set)
      *bits |= 1 << (meta->index % 8);
  }
  g_mutex_unlock (&dec->lock);
  return known;
}

/* Decodes @job->input into a new buffer; on failure leaves @job->output
 * NULL and says why in @job->error. */
static void
gst_image_dec_decode (GstImageDec *dec, GstImageDecJob *job)
{
  GstVideoFormat format = dec->format;
  GstMapInfo map;
  GstTrainJpegHeader header;
  GstVideoInfo info;
  GstBuffer *output;
  GstMapInfo out_map;
  gboolean ok, read_all;

  if (!gst_buffer_map (job->input, &map, GST_MAP_READ)) {
    job->error = g_strdup ("could not map the input buffer");
    return;
  }
  if (job->have_header)
    header = job->header;
  else if (!gst_train_jpeg_read_header (map.data, map.size,
               dec->settings.min_short_side,
               dec->settings.scales == GST_IMAGE_DEC_SCALES_FAST, &header,
               &job->error))
    goto done;
  job->width = job->has_region ? job->region.width : header.out_width;
  job->height = job->has_region ? job->region.height : header.out_height;

  gst_video_info_set_format (&info, format, job->width, job->height);
  output = gst_train_recycler_new_buffer (
      dec->recycler, GST_VIDEO_INFO_SIZE (&info));
  gst_buffer_map (output, &out_map, GST_MAP_WRITE);
  /* The first time a file is seen its region decode reads it to the end,
   * so that a file damaged below the box fails as a whole decode would;
   * then it stops after the box (docs/benchmarks/input-stage.md). */
  read_all =
      job->has_region && !gst_image_dec_known_good (dec, job->input, FALSE);
  if (job->has_region)
    ok = gst_train_jpeg_decode_region (map.data, map.size, &header,
        job->region.left, job->region.top, job->region.width,
        job->region.height, read_all, out_map.data,
        GST_VIDEO_INFO_PLANE_STRIDE (&info, 0), &job->error);
  else
    ok = gst_train_jpeg_decode (map.data, map.size, &header,
        format == GST_VIDEO_FORMAT_GRAY8, out_map.data,
        GST_VIDEO_INFO_PLANE_STRIDE (&info, 0), &job->error);
  gst_buffer_unmap (output, &out_map);
  if (!ok) {
    gst_buffer_unref (output);
    goto done;
  }

  if (job->has_region)
    gst_buffer_add_train_region_meta (
        output, header.out_width, header.out_height, &job->region);
  if (read_all)
    gst_image_dec_known_good (dec, job->input, TRUE);
  job->output = output;

done:
  gst_buffer_unmap (job->input, &map);
}

static void
gst_image_dec_task (GstTrainTask *task)
{
  GstImageDecJob *job = (GstImageDecJob *)task;

  gst_image_dec_decode (job->dec, job);
}

static void
gst_image_dec_job_free (GstImageDecJob *job)
{
  gst_clear_buffer (&job->input);
  gst_clear_buffer (&job->output);
  g_free (job->error);
  g_free (job);
}

/* ---- output (streaming thread) ---- */

/* Chooses RGB unless downstream only takes GRAY8. */
static gboolean
gst_image_dec_choose_format (GstImageDec *dec)
{
  GstCaps *templ = gst_pad_get_pad_template_caps (dec->srcpad);
  GstCaps *peer = gst_pad_peer_query_caps (dec->srcpad, templ);
  guint i;

  gst_caps_unref (templ);
  dec->format = GST_VIDEO_FORMAT_UNKNOWN;
  for (i = 0; i < gst_caps_get_size (peer); i++) {
    const GValue *formats =
        gst_structure_get_value (gst_caps_get_structure (peer, i), "format");
    GValue rgb = G_VALUE_INIT;

    g_value_init (&rgb, G_TYPE_STRING);
    g_value_set_static_string (&rgb, "RGB");
    if (formats == NULL || gst_value_intersect (NULL, formats, &rgb)) {
      dec->format = GST_VIDEO_FORMAT_RGB;
      g_value_unset (&rgb);
      break;
    }
    g_value_unset (&rgb);
    dec->format = GST_VIDEO_FORMAT_GRAY8;
  }
  gst_caps_unref (peer);
  GST_DEBUG_OBJECT (
      dec, "output format %s", gst_video_format_to_string (dec->format));
  return dec->format != GST_VIDEO_FORMAT_UNKNOWN;
}

static void
gst_image_dec_push_pending_events (GstImageDec *dec)
{
  GList *events = g_list_reverse (dec->pending_events), *l;

  dec->pending_events = NULL;
  for (l = events; l != NULL; l = l->next)
    gst_pad_push_event (dec->srcpad, l->data);
  g_list_free (events);
}

/* Sends caps for a @width x @height image when they differ from the last. */
static gboolean
gst_image_dec_negotiate (GstImageDec *dec, gint width, gint height)
{
  GstCaps *caps;
  gboolean ok;

  if (dec->have_caps && width == dec->out_width && height == dec->out_height)
    return TRUE;

  caps = gst_caps_new_simple ("video/x-raw", "format", G_TYPE_STRING,
      gst_video_format_to_string (dec->format), "width", G_TYPE_INT, width,
      "height", G_TYPE_INT, height, "framerate", GST_TYPE_FRACTION, 0, 1,
      "pixel-aspect-ratio", GST_TYPE_FRACTION, 1, 1, NULL);
  GST_DEBUG_OBJECT (dec, "new caps %" GST_PTR_FORMAT, caps);
  ok = gst_pad_push_event (dec->srcpad, gst_event_new_caps (caps));
  gst_caps_unref (caps);
  if (!ok)
    return FALSE;
  dec->out_width = width;
  dec->out_height = height;
  if (!dec->have_caps) {
    dec->have_caps = TRUE;
    gst_image_dec_push_pending_events (dec);
  }
  return TRUE;
}

/* Pushes a decoded job downstream, or reports why it did not decode. */
static GstFlowReturn
gst_image_dec_finish_job (GstImageDec *dec, GstImageDecJob *job)
{
  GstBuffer *output;
  GstFlowReturn ret;
  gchar *name, *key;

  if (job->output != NULL) {
    if (!gst_image_dec_negotiate (dec, job->width, job->height)) {
      if (GST_PAD_IS_FLUSHING (dec->srcpad))
        return GST_FLOW_FLUSHING;
      GST_ELEMENT_ERROR (dec, CORE, NEGOTIATION,
          ("Downstream does not accept %s images of %dx%d.",
              gst_video_format_to_string (dec->format), job->width,
              job->height),
          (NULL));
      return GST_FLOW_NOT_NEGOTIATED;
    }
    output = job->output;
    job->output = NULL;
    gst_buffer_copy_into (output, job->input,
        GST_BUFFER_COPY_FLAGS | GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
    gst_train_copy_untagged_metas (job->input, output);
    GST_LOG_OBJECT (dec, "pushing a %dx%d %s, offset %" G_GUINT64_FORMAT,
        job->width, job->height, job->has_region ? "region" : "image",
        GST_BUFFER_OFFSET (job->input));
    return gst_pad_push (dec->srcpad, output);
  }

  name = gst_train_describe_sample (job->input);
  /* datasetsrc reads a corrupt file again every epoch: it is warned about
   * and counted against max-errors once. */
  key = gst_train_sample_key (job->input);
  ret = gst_train_report_bad_sample (dec, &dec->bad, key, GST_STREAM_ERROR,
      GST_STREAM_ERROR_DECODE, "decode",
      g_strdup_printf ("Could not decode sample %s: %s.", name, job->error),
      g_strdup_printf ("Skipping sample %s: %s.", name, job->error));
  g_free (key);
  g_free (name);
  return ret;
}

/* Pushes finished jobs from the head of the queue, waiting for unfinished
 * ones while more than @keep jobs are queued. */
static GstFlowReturn
gst_image_dec_push_ready (GstImageDec *dec, guint keep)
{
  GstFlowReturn ret = GST_FLOW_OK;

  g_mutex_lock (&dec->lock);
  for (;;) {
    GstImageDecJob *job = g_queue_peek_head (&dec->jobs);

    if (dec->flushing) {
      ret = GST_FLOW_FLUSHING;
      break;
    }
    if (job == NULL)
      break;
    if (!gst_train_pool_is_done (dec->pool, &job->task)) {
      if (g_queue_get_length (&dec->jobs) <= keep)
        break;
      /* Decodes (ours or another element's) while it waits. */
      g_mutex_unlock (&dec->lock);
      gst_train_pool_wait (dec->pool, &job->task);
      g_mutex_lock (&dec->lock);
      continue;
    }
    g_queue_pop_head (&dec->jobs);
    g_mutex_unlock (&dec->lock);
    ret = gst_image_dec_finish_job (dec, job);
    gst_image_dec_job_free (job);
    g_mutex_lock (&dec->lock);
    if (ret != GST_FLOW_OK)
      break;
  }
  g_mutex_unlock (&dec->lock);
  return ret;
}

/* Asks downstream which part of @job's image it reads (see
 * GST_TRAIN_REGION_QUERY). Reads the header here, in the streaming thread
 * (a few microseconds), and leaves @job as it was when the image does not
 * decode (the decode reports it), is not supported or is wanted whole. */
static void
gst_image_dec_ask_region (GstImageDec *dec, GstImageDecJob *job)
{
  GstMapInfo map;
  gchar *error = NULL;
  GstQuery *query;
  GstTrainRegion r;
  gboolean ok;

  if (!gst_buffer_map (job->input, &map, GST_MAP_READ))
    return;
  ok = gst_train_jpeg_read_header (map.data, map.size,
      dec->settings.min_short_side,
      dec->settings.scales == GST_IMAGE_DEC_SCALES_FAST, &job->header, &error);
  gst_buffer_unmap (job->input, &map);
  g_free (error);
  job->have_header = ok;
  if (!ok || !gst_train_jpeg_region_supported (&job->header, FALSE))
    return;

  query = gst_train_region_query_new (
      dec->srcpad, job->input, job->header.out_width, job->header.out_height);
  if (!gst_pad_peer_query (dec->srcpad, query)) {
    GST_DEBUG_OBJECT (dec, "nobody downstream reads regions: whole images");
    dec->region_refused = TRUE;
  } else if (gst_train_region_query_get (query, &r) && r.left >= 0 && r.top >= 0
      && r.width > 0 && r.height > 0
      && r.width <= job->header.out_width - r.left
      && r.height <= job->header.out_height - r.top
      && (gint64)r.width * r.height
          < (gint64)job->header.out_width * job->header.out_height) {
    job->has_region = TRUE;
    job->region = r;
    GST_LOG_OBJECT (dec, "decoding %dx%d at (%d, %d) of %dx%d", r.width,
        r.height, r.left, r.top, job->header.out_width, job->header.out_height);
  }
  gst_query_unref (query);
}

static GstFlowReturn
gst_image_dec_chain (GstPad *pad, GstObject *parent, GstBuffer *buffer)
{
  GstImageDec *dec = GST_IMAGE_DEC (parent);
  GstImageDecJob *job;

  if (dec->format == GST_VIDEO_FORMAT_UNKNOWN
      && !gst_image_dec_choose_format (dec)) {
    gst_buffer_unref (buffer);
    if (GST_PAD_IS_FLUSHING (dec->srcpad))
      return GST_FLOW_FLUSHING;
    GST_ELEMENT_ERROR (dec, CORE, NEGOTIATION,
        ("Downstream accepts neither RGB nor GRAY8 images."), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }

  job = g_new0 (GstImageDecJob, 1);
  job->task.func = gst_image_dec_task;
  job->dec = dec;
  job->input = buffer;
  /* (a relink may bring a reader of regions) */
  if (gst_pad_check_reconfigure (dec->srcpad))
    dec->region_refused = FALSE;
  if (dec->settings.decode_region && !dec->region_refused
      && dec->format == GST_VIDEO_FORMAT_RGB)
    gst_image_dec_ask_region (dec, job);

  if (dec->pool == NULL) {
    GstFlowReturn ret;

    gst_image_dec_decode (dec, job);
    ret = gst_image_dec_finish_job (dec, job);
    gst_image_dec_job_free (job);
    return ret;
  }

  g_mutex_lock (&dec->lock);
  if (dec->flushing) {
    g_mutex_unlock (&dec->lock);
    gst_image_dec_job_free (job);
    return GST_FLOW_FLUSHING;
  }
  g_queue_push_tail (&dec->jobs, job);
  g_mutex_unlock (&dec->lock);
  gst_train_pool_push (dec->pool, &job->task);

  return gst_image_dec_push_ready (dec, dec->window - 1);
}

/* Takes every queued job out of the pool (waiting for those running) and
 * frees it. */
static void
gst_image_dec_discard_jobs (GstImageDec *dec)
{
  GstImageDecJob *job;

  g_mutex_lock (&dec->lock);
  while ((job = g_queue_pop_head (&dec->jobs)) != NULL) {
    g_mutex_unlock (&dec->lock);
    gst_train_pool_cancel (dec->pool, &job->task);
    gst_image_dec_job_free (job);
    g_mutex_lock (&dec->lock);
  }
  g_mutex_unlock (&dec->lock);
}

static gboolean
gst_image_dec_sink_event (GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstImageDec *dec = GST_IMAGE_DEC (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:
      /* image/jpeg says nothing about the output: caps come per image. */
      GST_DEBUG_OBJECT (
          dec, "input %" GST_PTR_FORMAT, gst_event_get_structure (event));
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_FLUSH_START:
      GST_DEBUG_OBJECT (dec, "flush start");
      g_mutex_lock (&dec->lock);
      dec->flushing = TRUE;
      g_mutex_unlock (&dec->lock);
      return gst_pad_push_event (dec->srcpad, event);
    case GST_EVENT_FLUSH_STOP:
      GST_DEBUG_OBJECT (dec, "flush stop: dropping the images in flight");
      gst_image_dec_discard_jobs (dec);
      g_mutex_lock (&dec->lock);
      dec->flushing = FALSE;
      g_mutex_unlock (&dec->lock);
      return gst_pad_push_event (dec->srcpad, event);
    case GST_EVENT_STREAM_START:
      gst_image_dec_push_ready (dec, 0);
      return gst_pad_push_event (dec->srcpad, event);
    case GST_EVENT_EOS:
      GST_DEBUG_OBJECT (dec, "EOS: pushing the images in flight first");
      gst_image_dec_push_ready (dec, 0);
      /* No image decoded: the held segment and tags still go out. */
      gst_image_dec_push_pending_events (dec);
      return gst_pad_push_event (dec->srcpad, event);
    default:
      break;
  }

  if (!GST_EVENT_IS_SERIALIZED (event))
    return gst_pad_event_default (pad, parent, event);

  /* A serialized event stays behind the images that came before it. */
  gst_image_dec_push_ready (dec, 0);
  if (!dec->have_caps && GST_EVENT_IS_STICKY (event)) {
    /* Stream-start, caps, segment must go in that order: hold the segment
     * and what follows until the first image has given us caps. */
    dec->pending_events = g_list_prepend (dec->pending_events, event);
    return TRUE;
  }
  return gst_pad_push_event (dec->srcpad, event);
}

static gboolean
gst_image_dec_start (GstImageDec *dec)
{
  GstTrainOnError on_error;
  gint max_errors;

  GST_OBJECT_LOCK (dec);
  dec->settings = dec->props;
  gst_train_bad_samples_reset (&dec->bad);
  on_error = dec->bad.on_error;
  max_errors = dec->bad.max_errors;
  GST_OBJECT_UNLOCK (dec);

  /* n-threads=1 decodes in the streaming thread; otherwise the shared
   * pool decodes, with enough jobs in flight to keep n-threads busy while
   * the head of the queue waits for the slowest (0: the pool's window). */
  dec->pool = dec->settings.n_threads == 1 ? NULL : gst_train_pool_get ();
  if (dec->pool == NULL)
    dec->window = 1;
  else if (dec->settings.n_threads > 0)
    dec->window = 2 * dec->settings.n_threads;
  else
    dec->window = gst_train_pool_get_window (dec->pool);
  /* Room for every image in flight plus what a short queue downstream holds;
   * buffers that stay away longer (an echo buffer) just get new blocks. */
  dec->recycler = gst_train_recycler_new (dec->window + 8);
  dec->format = GST_VIDEO_FORMAT_UNKNOWN;
  dec->have_caps = FALSE;
  dec->flushing = FALSE;
  dec->region_refused = FALSE;
  GST_INFO_OBJECT (dec,
      "starting: n-threads %u (%u decodes in flight), min-short-side %u, "
      "scales %s, decode-region %d, on-error %s, max-errors %d",
      dec->settings.n_threads, dec->window, dec->settings.min_short_side,
      dec->settings.scales == GST_IMAGE_DEC_SCALES_FAST ? "fast" : "all",
      dec->settings.decode_region,
      on_error == GST_TRAIN_ON_ERROR_SKIP ? "skip" : "fail", max_errors);
  return TRUE;
}

static void
gst_image_dec_stop (GstImageDec *dec)
{
  GST_INFO_OBJECT (
      dec, "stopping: %" G_GUINT64_FORMAT " samples skipped", dec->bad.skipped);
  gst_image_dec_discard_jobs (dec);
  g_clear_pointer (&dec->pool, gst_train_pool_unref);
  g_clear_pointer (&dec->recycler, gst_train_recycler_unref);
  g_list_free_full (dec->pending_events, (GDestroyNotify)gst_event_unref);
  dec->pending_events = NULL;
  dec->have_caps = FALSE;
  dec->format = GST_VIDEO_FORMAT_UNKNOWN;
  /* a new run may read other files under the same indices */
  g_array_set_size (dec->known_good, 0);
}

static GstStateChangeReturn
gst_image_dec_change_state (GstElement *element, GstStateChange transition)
{
  GstImageDec *dec = GST_IMAGE_DEC (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED
      && !gst_image_dec_start (dec))
    return GST_STATE_CHANGE_FAILURE;

  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    gst_image_dec_stop (dec);
  return ret;
}
