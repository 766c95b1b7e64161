/* gstdatasetsrc.c: reads a dataset of encoded images, one sample per buffer.
 *
 * SECTION:element-datasetsrc
 * @title: datasetsrc
 *
 * Reads an image dataset and pushes one `image/jpeg` buffer per sample, each
 * with a #GstTrainSampleMeta (label, dataset index, epoch). @location is either
 * a folder in ImageFolder layout (one sub-folder per class; labels follow the
 * sorted class names exactly as torchvision's ImageFolder numbers them) or a
 * list file of `relative/path<TAB>label` lines.
 *
 * Each epoch visits the dataset in a fresh random order drawn from @seed and
 * the epoch number (or in dataset order with shuffle=false). With
 * @num-shards > 1 every shard takes every num-shards-th sample of the same
 * epoch order (shard k takes positions k, k + num-shards, ...), so shards
 * are disjoint and together complete, as PyTorch's DistributedSampler does
 * with drop_last=False, except that no shard is padded with repeats: shards
 * differ by at most one sample. Files are read ahead of the stream on the
 * threads the data elements of a process share (unless @n-threads is 0), at
 * most @read-ahead samples in flight.
 *
 * In a data-parallel job (mpirun, srun: the launcher's environment says
 * more than one rank; see docs/distributed.md), when neither @shard-index
 * nor @num-shards is set, the source reads shard R of N, R being its rank
 * and N the number of ranks: one launch line for every rank. Setting either
 * property turns that off, for processes that each train alone
 * (cudatrainsink distributed=off): a sink in the job checks that its
 * source reads its rank's shard.
 *
 * ## Starting half-way: exact resume
 *
 * @start-position passes over that many samples of the source's sequence
 * (this shard's samples of epoch 0 in order, then of epoch 1, ...) before
 * the first it reads, as a sampler's start index does: the epoch and the
 * place in it follow from the position, and the samples before it are
 * neither read nor pushed. Before its first buffer the source also asks
 * downstream where to start (the custom query GST_TRAIN_RESUME_QUERY, see
 * train-meta.h): a cudatrainsink that resumes from a checkpoint answers
 * with the samples it trained on, echo turns that into the place its
 * shuffle buffer needs, and the answer, when there is one, replaces
 * @start-position. So `cudatrainsink resume-from=` alone starts the source
 * where the checkpoint stopped. The position counts samples pushed: a file
 * skipped as unreadable before it (on-error=skip) shifts it by one.
 *
 * Before the first buffer it sends a stream tag list with the dataset facts
 * (see train-meta.h): number of classes, class names in label order, the
 * dataset's size, the samples per epoch, and the shard it reads
 * (`train-shard-index`, `train-num-shards`), which cudatrainsink checks
 * against its rank and world size.
 *
 * ## Messages
 *
 * * A warning (GST_RESOURCE_ERROR_READ) for each file that cannot be read:
 *   "Skipping sample N: could not read "PATH": CAUSE." (debug text
 *   "on-error=skip"). The sample is dropped and counted in @files-skipped.
 *   A file is warned about and counted once per run: it is read again in
 *   later epochs and, still unreadable, dropped quietly (a debug line).
 *   With on-error=fail the first one is an error instead: "Could not read
 *   sample N from "PATH": CAUSE."
 * * A warning (GST_RESOURCE_ERROR_NOT_FOUND) at start for each class folder
 *   that holds no image: its label stays reserved.
 * * Errors at start: no location, a dataset that is missing, unreadable or
 *   holds no image, shard-index not below num-shards, a shard that gets no
 *   sample.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 datasetsrc location=/data/train num-epochs=2 ! imagedec ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstdatasetsrc.h"
#include "dataset-index.h"
#include "train-common.h"
#include "train-meta.h"
#include "train-pool.h"
#include "gt-launcher.h"
#include "gt-random.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

GST_DEBUG_CATEGORY_STATIC (gst_dataset_src_debug);
#define GST_CAT_DEFAULT gst_dataset_src_debug

#define DEFAULT_LOCATION NULL
#define DEFAULT_SHUFFLE TRUE
#define DEFAULT_SEED 0
#define DEFAULT_NUM_EPOCHS 1
#define DEFAULT_SHARD_INDEX 0
#define DEFAULT_NUM_SHARDS 1
#define DEFAULT_NUM_SAMPLES 0
#define DEFAULT_N_THREADS 2
#define DEFAULT_READ_AHEAD 32
#define DEFAULT_EXTENSIONS "jpg,jpeg"
#define DEFAULT_ON_ERROR GST_TRAIN_ON_ERROR_SKIP
#define DEFAULT_START_POSITION 0

enum
{
  PROP_0,
  PROP_LOCATION,
  PROP_SHUFFLE,
  PROP_SEED,
  PROP_NUM_EPOCHS,
  PROP_SHARD_INDEX,
  PROP_NUM_SHARDS,
  PROP_NUM_SAMPLES,
  PROP_N_THREADS,
  PROP_READ_AHEAD,
  PROP_EXTENSIONS,
  PROP_ON_ERROR,
  PROP_START_POSITION,
  PROP_NUM_CLASSES,
  PROP_DATASET_SIZE,
  PROP_FILES_SKIPPED,
};

/* One read-ahead slot: a sample handed to a reader thread and its result. */
typedef struct
{
  GstTrainTask task; /* first: the pool hands it back */
  GstDatasetSrc *src;
  guint64 sample;
  gint epoch;
  gboolean done;
  GstBuffer *buffer;
  gchar *error;
} GstDatasetSrcSlot;

/* The properties as they were when the element started; on-error, which
 * may change while it plays, lives in GstTrainBadSamples. */
typedef struct
{
  gchar *location;
  gboolean shuffle;
  guint64 seed;
  gint num_epochs;
  guint shard_index;
  guint num_shards;
  guint64 num_samples;
  guint n_threads;
  guint read_ahead;
  gchar *extensions;
  guint64 start_position;
  /* shard-index or num-shards was set: the launcher's rank is not used */
  gboolean shard_set;
} GstDatasetSrcSettings;

struct _GstDatasetSrc
{
  GstPushSrc parent;

  /* Properties, the skip policy and count, and what start() found, under
   * the object lock. */
  GstDatasetSrcSettings props;
  GstTrainBadSamples bad;
  guint num_classes;
  guint64 dataset_size;

  /* Set in start(), read-only while streaming. */
  GstDatasetSrcSettings settings;
  GstTrainDatasetIndex *index;
  guint64 epoch_samples;

  /* Which sample the next submitted read is for (streaming thread only). */
  gint cursor_epoch;
  guint64 cursor_pos;
  guint64 *cursor_order;
  gboolean cursor_done;
  gboolean positioned; /* the start position is taken (first create) */
  /* a resume wants only these positions of the sequence before
   * @keep_end (sorted; NULL: all) */
  guint64 *keep;
  guint n_keep, next_keep;
  guint64 keep_end;

  /* The read-ahead ring, under @lock. */
  GMutex lock;
  GCond cond;
  GstDatasetSrcSlot *slots;
  guint n_slots;
  guint64 submitted;
  guint64 emitted;
  gboolean flushing;
  GstTrainPool *pool; /* the data elements' shared threads */
};

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE (
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS ("image/jpeg"));

#define gst_dataset_src_parent_class parent_class
G_DEFINE_TYPE (GstDatasetSrc, gst_dataset_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (
    datasetsrc, "datasetsrc", GST_RANK_NONE, GST_TYPE_DATASET_SRC);

static void gst_dataset_src_finalize (GObject *object);
static void gst_dataset_src_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec);
static void gst_dataset_src_get_property (
    GObject *object, guint prop_id, GValue *value, GParamSpec *pspec);
static gboolean gst_dataset_src_start (GstBaseSrc *bsrc);
static gboolean gst_dataset_src_stop (GstBaseSrc *bsrc);
static gboolean gst_dataset_src_set_caps (GstBaseSrc *bsrc, GstCaps *caps);
static gboolean gst_dataset_src_unlock (GstBaseSrc *bsrc);
static gboolean gst_dataset_src_unlock_stop (GstBaseSrc *bsrc);
static gboolean gst_dataset_src_is_seekable (GstBaseSrc *bsrc);
static GstFlowReturn gst_dataset_src_create (
    GstPushSrc *psrc, GstBuffer **buffer);
static void gst_dataset_src_read_sample (gpointer data, gpointer user_data);
static void gst_dataset_src_read_task (GstTrainTask *task);

static void
gst_dataset_src_class_init (GstDatasetSrcClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *pushsrc_class = GST_PUSH_SRC_CLASS (klass);

  gobject_class->finalize = gst_dataset_src_finalize;
  gobject_class->set_property = gst_dataset_src_set_property;
  gobject_class->get_property = gst_dataset_src_get_property;

  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "Location",
          "Dataset to read: a folder in ImageFolder layout (one sub-folder "
          "per class) or a list file of \"relative/path<TAB>label\" lines",
          DEFAULT_LOCATION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_SHUFFLE,
      g_param_spec_boolean ("shuffle", "Shuffle",
          "Visit the samples in a fresh random order each epoch (FALSE: "
          "dataset order)",
          DEFAULT_SHUFFLE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_SEED,
      g_param_spec_uint64 ("seed", "Seed",
          "Seed of the per-epoch shuffle; the same seed gives the same order "
          "(use one seed for all shards)",
          0, G_MAXUINT64, DEFAULT_SEED,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_NUM_EPOCHS,
      g_param_spec_int ("num-epochs", "Number of epochs",
          "Passes over the dataset before EOS (-1 = forever, 0 = none: EOS "
          "at once)",
          -1, G_MAXINT, DEFAULT_NUM_EPOCHS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_SHARD_INDEX,
      g_param_spec_uint ("shard-index", "Shard index",
          "Which shard this source reads, from 0 to num-shards - 1 (unset, "
          "with num-shards unset too: the rank of a data-parallel job, from "
          "the launcher's environment)",
          0, G_MAXUINT - 1, DEFAULT_SHARD_INDEX,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_NUM_SHARDS,
      g_param_spec_uint ("num-shards", "Number of shards",
          "Split every epoch into this many disjoint shards (one per "
          "training process; unset, with shard-index unset too: the number of "
          "ranks of a data-parallel job, from the launcher's environment)",
          1, G_MAXUINT, DEFAULT_NUM_SHARDS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_NUM_SAMPLES,
      g_param_spec_uint64 ("num-samples", "Number of samples",
          "Use only the first N samples of each epoch's shard (0 = all)", 0,
          G_MAXUINT64, DEFAULT_NUM_SAMPLES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_N_THREADS,
      g_param_spec_uint ("n-threads", "Reader threads",
          "Read files ahead of the stream on the threads the data elements "
          "share (any value above 0; they are the process's thread budget) "
          "(0 = read each file in the streaming thread when it is due, no "
          "read-ahead)",
          0, 256, DEFAULT_N_THREADS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_READ_AHEAD,
      g_param_spec_uint ("read-ahead", "Read-ahead",
          "Most samples read ahead of the one being pushed (bounds memory)", 1,
          65536, DEFAULT_READ_AHEAD,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_EXTENSIONS,
      g_param_spec_string ("extensions", "Extensions",
          "Comma-separated file extensions (any case) that count as images "
          "in an ImageFolder tree (empty = every file)",
          DEFAULT_EXTENSIONS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_ON_ERROR,
      g_param_spec_enum ("on-error", "On error",
          "What to do with a file that cannot be read", GST_TYPE_TRAIN_ON_ERROR,
          DEFAULT_ON_ERROR,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_START_POSITION,
      g_param_spec_uint64 ("start-position", "Start position",
          "Samples of the source's sequence (this shard's samples of each "
          "epoch's order, epoch after epoch) to pass over, unread, before the "
          "first one pushed: a sampler's start index. A resuming "
          "cudatrainsink downstream overrides it with where its checkpoint "
          "stopped",
          0, G_MAXUINT64, DEFAULT_START_POSITION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
              | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_NUM_CLASSES,
      g_param_spec_uint ("num-classes", "Number of classes",
          "Classes in the dataset (known once the element is PAUSED)", 0,
          G_MAXUINT, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_DATASET_SIZE,
      g_param_spec_uint64 ("dataset-size", "Dataset size",
          "Samples in the whole dataset (known once the element is PAUSED)", 0,
          G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_FILES_SKIPPED,
      g_param_spec_uint64 ("files-skipped", "Files skipped",
          "Files that could not be read and were skipped (on-error=skip)", 0,
          G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Dataset source",
      "Source/File",
      "Reads a labelled image dataset (ImageFolder or list file), one "
      "image/jpeg sample per buffer with its label, in a fresh order each "
      "epoch; sends the dataset facts as stream tags. Posts a warning "
      "(resource, read) naming each unreadable file it skips, once per file "
      "(an error with on-error=fail), and one per empty class folder",
      "gst-train developers");

  basesrc_class->start = GST_DEBUG_FUNCPTR (gst_dataset_src_start);
  basesrc_class->stop = GST_DEBUG_FUNCPTR (gst_dataset_src_stop);
  basesrc_class->set_caps = GST_DEBUG_FUNCPTR (gst_dataset_src_set_caps);
  basesrc_class->unlock = GST_DEBUG_FUNCPTR (gst_dataset_src_unlock);
  basesrc_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_dataset_src_unlock_stop);
  basesrc_class->is_seekable = GST_DEBUG_FUNCPTR (gst_dataset_src_is_seekable);
  pushsrc_class->create = GST_DEBUG_FUNCPTR (gst_dataset_src_create);

  gst_type_mark_as_plugin_api (GST_TYPE_TRAIN_ON_ERROR, 0);
  GST_DEBUG_CATEGORY_INIT (
      gst_dataset_src_debug, "datasetsrc", 0, "dataset source");
}

static void
gst_dataset_src_init (GstDatasetSrc *src)
{
  src->props.location = g_strdup (DEFAULT_LOCATION);
  src->props.shuffle = DEFAULT_SHUFFLE;
  src->props.seed = DEFAULT_SEED;
  src->props.num_epochs = DEFAULT_NUM_EPOCHS;
  src->props.shard_index = DEFAULT_SHARD_INDEX;
  src->props.num_shards = DEFAULT_NUM_SHARDS;
  src->props.num_samples = DEFAULT_NUM_SAMPLES;
  src->props.n_threads = DEFAULT_N_THREADS;
  src->props.read_ahead = DEFAULT_READ_AHEAD;
  src->props.extensions = g_strdup (DEFAULT_EXTENSIONS);
  src->props.start_position = DEFAULT_START_POSITION;
  /* No max-errors: every unreadable file is skipped, and counted. */
  src->bad.on_error = DEFAULT_ON_ERROR;
  src->bad.bounded = FALSE;
  src->bad.max_errors = -1;
  g_mutex_init (&src->lock);
  g_cond_init (&src->cond);
  gst_base_src_set_format (GST_BASE_SRC (src), GST_FORMAT_TIME);
}

static void
gst_dataset_src_settings_clear (GstDatasetSrcSettings *settings)
{
  g_clear_pointer (&settings->location, g_free);
  g_clear_pointer (&settings->extensions, g_free);
}

static void
gst_dataset_src_finalize (GObject *object)
{
  GstDatasetSrc *src = GST_DATASET_SRC (object);

  gst_dataset_src_settings_clear (&src->props);
  gst_dataset_src_settings_clear (&src->settings);
  gst_train_bad_samples_clear (&src->bad);
  g_mutex_clear (&src->lock);
  g_cond_clear (&src->cond);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_dataset_src_set_property (
    GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GstDatasetSrc *src = GST_DATASET_SRC (object);
  GstDatasetSrcSettings *props = &src->props;

  GST_OBJECT_LOCK (src);
  switch (prop_id) {
    case PROP_LOCATION:
      g_free (props->location);
      props->location = g_value_dup_string (value);
      break;
    case PROP_SHUFFLE:
      props->shuffle = g_value_get_boolean (value);
      break;
    case PROP_SEED:
      props->seed = g_value_get_uint64 (value);
      break;
    case PROP_NUM_EPOCHS:
      props->num_epochs = g_value_get_int (value);
      break;
    case PROP_SHARD_INDEX:
      props->shard_index = g_value_get_uint (value);
      props->shard_set = TRUE;
      break;
    case PROP_NUM_SHARDS:
      props->num_shards = g_value_get_uint (value);
      props->shard_set = TRUE;
      break;
    case PROP_NUM_SAMPLES:
      props->num_samples = g_value_get_uint64 (value);
      break;
    case PROP_N_THREADS:
      props->n_threads = g_value_get_uint (value);
      break;
    case PROP_READ_AHEAD:
      props->read_ahead = g_value_get_uint (value);
      break;
    case PROP_EXTENSIONS:
      g_free (props->extensions);
      props->extensions = g_value_dup_string (value);
      break;
    case PROP_ON_ERROR:
      src->bad.on_error = g_value_get_enum (value);
      break;
    case PROP_START_POSITION:
      props->start_position = g_value_get_uint64 (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (src);
}

static void
gst_dataset_src_get_property (
    GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GstDatasetSrc *src = GST_DATASET_SRC (object);
  GstDatasetSrcSettings *props = &src->props;

  GST_OBJECT_LOCK (src);
  switch (prop_id) {
    case PROP_LOCATION:
      g_value_set_string (value, props->location);
      break;
    case PROP_SHUFFLE:
      g_value_set_boolean (value, props->shuffle);
      break;
    case PROP_SEED:
      g_value_set_uint64 (value, props->seed);
      break;
    case PROP_NUM_EPOCHS:
      g_value_set_int (value, props->num_epochs);
      break;
    case PROP_SHARD_INDEX:
      g_value_set_uint (value, props->shard_index);
      break;
    case PROP_NUM_SHARDS:
      g_value_set_uint (value, props->num_shards);
      break;
    case PROP_NUM_SAMPLES:
      g_value_set_uint64 (value, props->num_samples);
      break;
    case PROP_N_THREADS:
      g_value_set_uint (value, props->n_threads);
      break;
    case PROP_READ_AHEAD:
      g_value_set_uint (value, props->read_ahead);
      break;
    case PROP_EXTENSIONS:
      g_value_set_string (value, props->extensions);
      break;
    case PROP_ON_ERROR:
      g_value_set_enum (value, src->bad.on_error);
      break;
    case PROP_START_POSITION:
      g_value_set_uint64 (value, props->start_position);
      break;
    case PROP_NUM_CLASSES:
      g_value_set_uint (value, src->num_classes);
      break;
    case PROP_DATASET_SIZE:
      g_value_set_uint64 (value, src->dataset_size);
      break;
    case PROP_FILES_SKIPPED:
      g_value_set_uint64 (value, src->bad.skipped);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (src);
}

/* Samples that one epoch of this shard emits. */
static guint64
gst_dataset_src_count_epoch_samples (guint64 dataset_size, guint shard_index,
    guint num_shards, guint64 num_samples)
{
  guint64 count = 0;

  if (shard_index < dataset_size)
    count = (dataset_size - shard_index + num_shards - 1) / num_shards;
  if (num_samples > 0 && num_samples < count)
    count = num_samples;
  return count;
}

static void
gst_dataset_src_send_dataset_info (GstDatasetSrc *src)
{
  GstTrainDatasetInfo info;
  GstTagList *tags;

  info.num_classes = src->index->class_names->len;
  g_ptr_array_add (src->index->class_names, NULL);
  info.class_names = (gchar **)src->index->class_names->pdata;
  info.num_samples = src->index->entries->len;
  info.epoch_samples = src->epoch_samples;
  info.shard_index = src->settings.shard_index;
  info.num_shards = src->settings.num_shards;
  tags = gst_train_dataset_info_to_tag_list (&info);
  g_ptr_array_remove_index (
      src->index->class_names, src->index->class_names->len - 1);

  GST_DEBUG_OBJECT (src, "dataset info: %" GST_PTR_FORMAT, tags);
  /* GstBaseSrc queues a tag event sent to the element and pushes it after
   * the segment, ahead of the first buffer. */
  GST_ELEMENT_CLASS (parent_class)
      ->send_event (GST_ELEMENT (src), gst_event_new_tag (tags));
}

static gboolean
gst_dataset_src_start (GstBaseSrc *bsrc)
{
  GstDatasetSrc *src = GST_DATASET_SRC (bsrc);
  GstDatasetSrcSettings *s = &src->settings;
  GstTrainDatasetIndex *index;
  GError *error = NULL;
  gchar **extensions;
  guint64 epoch_samples;
  GstTrainOnError on_error;
  guint i;

  GST_OBJECT_LOCK (src);
  gst_dataset_src_settings_clear (s);
  *s = src->props;
  s->location = g_strdup (src->props.location);
  s->extensions = g_strdup (src->props.extensions);
  on_error = src->bad.on_error;
  GST_OBJECT_UNLOCK (src);

  if (!s->shard_set) {
    GtLauncherPosition position;

    if (gt_launcher_position (&position) && position.size > 1) {
      s->shard_index = (guint)position.rank;
      s->num_shards = (guint)position.size;
      GST_INFO_OBJECT (src, "rank %d of %d (%s): reading shard %u of %u",
          position.rank, position.size, position.source, s->shard_index,
          s->num_shards);
    }
  }
  GST_INFO_OBJECT (src,
      "starting: location %s, shuffle %d, seed %" G_GUINT64_FORMAT
      ", num-epochs %d, shard %u of %u, num-samples %" G_GUINT64_FORMAT
      ", n-threads %u, read-ahead %u, extensions %s, start-position "
      "%" G_GUINT64_FORMAT ", on-error %s",
      GST_STR_NULL (s->location), s->shuffle, s->seed, s->num_epochs,
      s->shard_index, s->num_shards, s->num_samples, s->n_threads,
      s->read_ahead, GST_STR_NULL (s->extensions), s->start_position,
      on_error == GST_TRAIN_ON_ERROR_SKIP ? "skip" : "fail");
  if (s->location == NULL) {
    GST_ELEMENT_ERROR (src, RESOURCE, NOT_FOUND, ("No dataset location given."),
        ("Set the \"location\" property to an ImageFolder or a list file."));
    return FALSE;
  }

  extensions = gst_train_dataset_parse_extensions (s->extensions);
  index = gst_train_dataset_index_load (
      s->location, (const gchar *const *)extensions, &error);
  g_strfreev (extensions);
  if (index == NULL) {
    if (g_error_matches (
            error, GST_TRAIN_DATASET_ERROR, GST_TRAIN_DATASET_ERROR_NOT_FOUND))
      GST_ELEMENT_ERROR (
          src, RESOURCE, NOT_FOUND, ("%s", error->message), (NULL));
    else if (g_error_matches (error, GST_TRAIN_DATASET_ERROR,
                 GST_TRAIN_DATASET_ERROR_UNREADABLE))
      GST_ELEMENT_ERROR (
          src, RESOURCE, OPEN_READ, ("%s", error->message), (NULL));
    else
      GST_ELEMENT_ERROR (src, RESOURCE, FAILED, ("%s", error->message), (NULL));
    g_error_free (error);
    return FALSE;
  }

  for (i = 0; i < index->empty_classes->len; i++)
    GST_ELEMENT_WARNING (src, RESOURCE, NOT_FOUND,
        ("Class folder \"%s\" in \"%s\" holds no image; its label stays "
         "reserved.",
            (gchar *)g_ptr_array_index (index->empty_classes, i), s->location),
        (NULL));

  if (s->shard_index >= s->num_shards) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS,
        ("shard-index %u is out of range for num-shards %u.", s->shard_index,
            s->num_shards),
        (NULL));
    gst_train_dataset_index_free (index);
    return FALSE;
  }
  epoch_samples = gst_dataset_src_count_epoch_samples (
      index->entries->len, s->shard_index, s->num_shards, s->num_samples);
  if (epoch_samples == 0) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS,
        ("Shard %u of %u (shard-index, num-shards) gets no sample of the %u "
         "in \"%s\".",
            s->shard_index, s->num_shards, index->entries->len, s->location),
        (NULL));
    gst_train_dataset_index_free (index);
    return FALSE;
  }

  GST_OBJECT_LOCK (src);
  src->num_classes = index->class_names->len;
  src->dataset_size = index->entries->len;
  gst_train_bad_samples_reset (&src->bad);
  GST_OBJECT_UNLOCK (src);

  src->index = index;
  src->epoch_samples = epoch_samples;
  GST_INFO_OBJECT (src,
      "%u samples in %u classes from %s, %" G_GUINT64_FORMAT " per epoch",
      index->entries->len, index->class_names->len, s->location,
      src->epoch_samples);

  src->cursor_epoch = -1;
  src->cursor_pos = 0;
  src->cursor_order = NULL;
  src->cursor_done = FALSE;
  src->positioned = FALSE;
  src->keep = NULL;
  src->n_slots = s->n_threads > 0 ? s->read_ahead : 1;
  src->slots = g_new0 (GstDatasetSrcSlot, src->n_slots);
  src->submitted = 0;
  src->emitted = 0;
  src->flushing = FALSE;
  for (i = 0; i < src->n_slots; i++)
    src->slots[i].task.func = gst_dataset_src_read_task;
  src->pool = s->n_threads == 0 ? NULL : gst_train_pool_get ();

  gst_dataset_src_send_dataset_info (src);
  return TRUE;
}

static gboolean
gst_dataset_src_stop (GstBaseSrc *bsrc)
{
  GstDatasetSrc *src = GST_DATASET_SRC (bsrc);
  guint i;

  GST_INFO_OBJECT (src,
      "stopping: %" G_GUINT64_FORMAT " samples handed out or skipped, "
      "%" G_GUINT64_FORMAT " skipped",
      src->emitted, src->bad.skipped);
  if (src->pool != NULL) {
    /* Reads already running finish; queued ones are dropped. */
    for (i = 0; i < src->n_slots; i++)
      gst_train_pool_cancel (src->pool, &src->slots[i].task);
    g_clear_pointer (&src->pool, gst_train_pool_unref);
  }
  for (i = 0; i < src->n_slots; i++) {
    gst_clear_buffer (&src->slots[i].buffer);
    g_clear_pointer (&src->slots[i].error, g_free);
  }
  g_clear_pointer (&src->slots, g_free);
  src->n_slots = 0;
  g_clear_pointer (&src->cursor_order, g_free);
  g_clear_pointer (&src->keep, g_free);
  g_clear_pointer (&src->index, gst_train_dataset_index_free);
  gst_dataset_src_settings_clear (&src->settings);
  return TRUE;
}

/* Wakes create() out of its wait for a read (@flushing) or lets it wait
 * again. */
static void
gst_dataset_src_set_flushing (GstDatasetSrc *src, gboolean flushing)
{
  g_mutex_lock (&src->lock);
  src->flushing = flushing;
  g_cond_broadcast (&src->cond);
  g_mutex_unlock (&src->lock);
}

static gboolean
gst_dataset_src_unlock (GstBaseSrc *bsrc)
{
  GST_DEBUG_OBJECT (bsrc, "flushing: create() stops waiting for reads");
  gst_dataset_src_set_flushing (GST_DATASET_SRC (bsrc), TRUE);
  return TRUE;
}

static gboolean
gst_dataset_src_unlock_stop (GstBaseSrc *bsrc)
{
  GST_DEBUG_OBJECT (bsrc, "flush done");
  gst_dataset_src_set_flushing (GST_DATASET_SRC (bsrc), FALSE);
  return TRUE;
}

/* The caps are the template's (image/jpeg); set only to say so in the
 * log. */
static gboolean
gst_dataset_src_set_caps (GstBaseSrc *bsrc, GstCaps *caps)
{
  GST_DEBUG_OBJECT (bsrc, "caps %" GST_PTR_FORMAT, caps);
  return TRUE;
}

static gboolean
gst_dataset_src_is_seekable (GstBaseSrc *bsrc)
{
  return FALSE;
}

/* Moves the cursor into epoch @epoch: draws that epoch's order and keeps
 * this shard's part of it. */
static void
gst_dataset_src_enter_epoch (GstDatasetSrc *src, gint epoch)
{
  const GstDatasetSrcSettings *s = &src->settings;
  guint64 n = src->index->entries->len, i, pos;
  guint64 *order = g_new (guint64, n);

  for (i = 0; i < n; i++)
    order[i] = i;
  if (s->shuffle) {
    GtRandom rng;

    gt_random_init (&rng, s->seed, (guint64)epoch);
    gt_random_shuffle (&rng, order, n);
  }
  /* Every shard draws the same order; shard k keeps positions k, k + S, ... */
  for (i = 0, pos = s->shard_index; i < src->epoch_samples;
       i++, pos += s->num_shards)
    order[i] = order[pos];

  g_free (src->cursor_order);
  src->cursor_order = order;
  src->cursor_epoch = epoch;
  src->cursor_pos = 0;
  GST_DEBUG_OBJECT (src, "epoch %d: %" G_GUINT64_FORMAT " samples, %s", epoch,
      src->epoch_samples, s->shuffle ? "shuffled" : "in dataset order");
}

/* Before the first read: asks downstream where to start (a resuming sink
 * answers), else takes start-position, and moves the cursor there without
 * reading anything before it. Streaming thread, without @lock. */
static void
gst_dataset_src_position (GstDatasetSrc *src)
{
  GstQuery *query = gst_train_resume_query_new ();
  guint64 start = src->settings.start_position, asked, epoch;
  gint num_epochs = src->settings.num_epochs;

  src->positioned = TRUE;
  if (gst_pad_peer_query (GST_BASE_SRC_PAD (src), query)
      && gst_train_resume_query_parse (query, &asked, NULL, NULL)) {
    GST_INFO_OBJECT (src,
        "downstream resumes: starting at sample %" G_GUINT64_FORMAT
        " of the sequence (start-position %" G_GUINT64_FORMAT ")",
        asked, start);
    start = asked;
    src->keep =
        gst_train_resume_query_get_keep (query, &src->n_keep, &src->keep_end);
    src->next_keep = 0;
    if (src->keep != NULL)
      GST_INFO_OBJECT (src,
          "of the %" G_GUINT64_FORMAT " samples up to %" G_GUINT64_FORMAT
          ", reading only the %u downstream still holds",
          src->keep_end - start, src->keep_end, src->n_keep);
  }
  gst_query_unref (query);
  if (start == 0)
    return;

  epoch = start / src->epoch_samples;
  if (epoch > G_MAXINT || (num_epochs >= 0 && epoch >= (guint64)num_epochs)) {
    GST_INFO_OBJECT (src,
        "start at sample %" G_GUINT64_FORMAT " is past the last epoch: EOS",
        start);
    src->cursor_done = TRUE;
    return;
  }
  gst_dataset_src_enter_epoch (src, (gint)epoch);
  src->cursor_pos = start % src->epoch_samples;
  GST_INFO_OBJECT (src,
      "starting at sample %" G_GUINT64_FORMAT " of epoch %" G_GUINT64_FORMAT,
      src->cursor_pos, epoch);
}

/* Hands reads to the pool until the ring is full or the last epoch is
 * submitted. Called with @lock held, from the streaming thread. */
static void
gst_dataset_src_refill (GstDatasetSrc *src)
{
  gint num_epochs = src->settings.num_epochs;

  while (!src->cursor_done && src->submitted - src->emitted < src->n_slots) {
    GstDatasetSrcSlot *slot;

    if (src->cursor_epoch < 0 || src->cursor_pos >= src->epoch_samples) {
      gint next_epoch = src->cursor_epoch + 1;

      if ((num_epochs >= 0 && next_epoch >= num_epochs) || next_epoch < 0) {
        src->cursor_done = TRUE;
        break;
      }
      gst_dataset_src_enter_epoch (src, next_epoch);
    }
    if (src->keep != NULL) {
      /* a resume re-reads only what downstream held */
      guint64 at =
          (guint64)src->cursor_epoch * src->epoch_samples + src->cursor_pos;

      if (at >= src->keep_end) {
        g_clear_pointer (&src->keep, g_free);
      } else if (src->next_keep < src->n_keep
          && src->keep[src->next_keep] == at) {
        src->next_keep++;
      } else {
        src->cursor_pos++;
        continue;
      }
    }

    slot = &src->slots[src->submitted % src->n_slots];
    slot->src = src;
    slot->sample = src->cursor_order[src->cursor_pos++];
    slot->epoch = src->cursor_epoch;
    slot->done = FALSE;
    src->submitted++;
    if (src->pool != NULL) {
      gst_train_pool_push (src->pool, &slot->task);
    } else {
      /* Page-cached files on a busy core: a thread hand-off per sample costs
       * more than the read. */
      g_mutex_unlock (&src->lock);
      gst_dataset_src_read_sample (slot, src);
      g_mutex_lock (&src->lock);
    }
  }
}

/* Reads the whole of @path; NULL with @error set (naming the cause). */
static GstBuffer *
gst_dataset_src_read_file (const gchar *path, gchar **error)
{
  struct stat st;
  guint8 *data;
  gsize size, done = 0;
  int fd;

  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = g_strdup (g_strerror (errno));
    return NULL;
  }
  if (fstat (fd, &st) != 0) {
    *error = g_strdup (g_strerror (errno));
    close (fd);
    return NULL;
  }
  if (!S_ISREG (st.st_mode)) {
    *error = g_strdup ("not a regular file");
    close (fd);
    return NULL;
  }
  size = st.st_size;
  data = g_malloc (size > 0 ? size : 1);
  while (done < size) {
    ssize_t got = read (fd, data + done, size - done);

    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      *error = g_strdup (g_strerror (errno));
      g_free (data);
      close (fd);
      return NULL;
    }
    if (got == 0)
      break; /* the file shrank while we read it */
    done += got;
  }
  close (fd);
  return gst_buffer_new_wrapped (data, done);
}

static void
gst_dataset_src_read_task (GstTrainTask *task)
{
  GstDatasetSrcSlot *slot = (GstDatasetSrcSlot *)task;

  gst_dataset_src_read_sample (slot, slot->src);
}

/* A reader thread: fills one slot. */
static void
gst_dataset_src_read_sample (gpointer data, gpointer user_data)
{
  GstDatasetSrcSlot *slot = data;
  GstDatasetSrc *src = user_data;
  const GstTrainDatasetEntry *entry =
      &g_array_index (src->index->entries, GstTrainDatasetEntry, slot->sample);
  gchar *error = NULL;
  GstBuffer *buffer;

  buffer = gst_dataset_src_read_file (entry->path, &error);
  if (buffer != NULL) {
    gst_buffer_add_train_sample_meta (
        buffer, entry->label, slot->sample, slot->epoch, entry->path);
    GST_BUFFER_OFFSET (buffer) = slot->sample;
  }

  g_mutex_lock (&src->lock);
  slot->buffer = buffer;
  slot->error = error;
  slot->done = TRUE;
  g_cond_broadcast (&src->cond);
  g_mutex_unlock (&src->lock);
}

static GstFlowReturn
gst_dataset_src_create (GstPushSrc *psrc, GstBuffer **out)
{
  GstDatasetSrc *src = GST_DATASET_SRC (psrc);

  if (!src->positioned)
    gst_dataset_src_position (src);
  g_mutex_lock (&src->lock);
  for (;;) {
    GstDatasetSrcSlot *slot;
    GstBuffer *buffer;
    gchar *error;
    guint64 sample;
    const gchar *path;
    GstFlowReturn ret;

    gst_dataset_src_refill (src);
    if (src->emitted == src->submitted) {
      g_mutex_unlock (&src->lock);
      GST_DEBUG_OBJECT (src, "all epochs read, EOS");
      return GST_FLOW_EOS;
    }

    slot = &src->slots[src->emitted % src->n_slots];
    while (!slot->done && !src->flushing) {
      if (src->pool == NULL) {
        g_cond_wait (&src->cond, &src->lock);
        continue;
      }
      /* Reads (or other elements' work) in this thread while it waits. */
      g_mutex_unlock (&src->lock);
      gst_train_pool_wait (src->pool, &slot->task);
      g_mutex_lock (&src->lock);
    }
    if (src->flushing) {
      g_mutex_unlock (&src->lock);
      return GST_FLOW_FLUSHING;
    }

    buffer = slot->buffer;
    error = slot->error;
    sample = slot->sample;
    slot->buffer = NULL;
    slot->error = NULL;
    slot->done = FALSE;
    src->emitted++;

    if (buffer != NULL) {
      gst_dataset_src_refill (src);
      g_mutex_unlock (&src->lock);
      GST_LOG_OBJECT (src,
          "sample %" G_GUINT64_FORMAT " (%s), %" G_GSIZE_FORMAT " bytes",
          sample,
          g_array_index (src->index->entries, GstTrainDatasetEntry, sample)
              .path,
          gst_buffer_get_size (buffer));
      *out = buffer;
      return GST_FLOW_OK;
    }

    g_mutex_unlock (&src->lock);
    path =
        g_array_index (src->index->entries, GstTrainDatasetEntry, sample).path;
    ret = gst_train_report_bad_sample (src, &src->bad, path, GST_RESOURCE_ERROR,
        GST_RESOURCE_ERROR_READ, "read",
        g_strdup_printf ("Could not read sample %" G_GUINT64_FORMAT
                         " from \"%s\": %s.",
            sample, path, error),
        g_strdup_printf ("Skipping sample %" G_GUINT64_FORMAT
                         ": could not read \"%s\": %s.",
            sample, path, error));
    g_free (error);
    if (ret != GST_FLOW_OK)
      return ret;
    g_mutex_lock (&src->lock);
  }
}
