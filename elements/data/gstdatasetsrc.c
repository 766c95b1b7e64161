/* SPDX-License-Identifier: LGPL-2.1-or-later */
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
 * ImageFolder order in detail: class folders sorted by code point (`"B"`
 * before `"a"`), hidden folders included; inside a class, the files of
 * nested folders too, folders in sorted path order and files sorted by
 * name. A list file's paths are relative to the list file (absolute paths
 * are taken as they are); the last TAB separates the label; blank lines
 * and lines that start with `#` are skipped; labels are integers in
 * [0, 2^20). Its class names are the label numbers, and its class count is
 * the largest label plus one. Each buffer's offset is the sample's index
 * in the dataset (that of its #GstTrainSampleMeta).
 *
 * Each epoch visits the dataset in a fresh random order drawn from @seed and
 * the epoch number (or in dataset order with shuffle=false). With
 * @num-ranks > 1 every rank takes every num-ranks-th sample of the same
 * epoch order (rank k takes positions k, k + num-ranks, ...), so the ranks'
 * parts are disjoint and together complete, as PyTorch's DistributedSampler
 * does with drop_last=False, except that no part is padded with repeats:
 * parts differ by at most one sample. Files are read ahead of the stream on
 * the threads the data elements of a process share (unless @n-threads is
 * 0), at most @read-ahead samples in flight. @num-samples cuts each epoch's
 * part to the first N of that epoch's order, so with shuffle=true each
 * epoch uses a different subset.
 *
 * In a data-parallel job (mpirun, srun: the launcher's environment says
 * more than one rank; see docs/distributed.md), when neither @rank nor
 * @num-ranks is set, the source reads part R of N, R being its rank and N
 * the number of ranks: one launch line for every rank. Setting either
 * property turns that off, for processes that each train alone
 * (cudatrainsink distributed=off): a sink in the job checks that its
 * source reads its rank's part. @shard-index and @num-shards are the
 * deprecated names of @rank and @num-ranks, and still work.
 *
 * ## WebDataset shards
 *
 * @location may instead name tar shards in WebDataset's convention: a
 * `.tar` file, a brace pattern (`/data/train-{000000..000146}.tar`, also
 * `{a,b}` lists and `{0..100..10}` steps), several of them separated by
 * spaces, and `http://` or `https://` URLs of the same forms (fetched with
 * libcurl; see @fetch-ahead and @retries). A sample is the run of members
 * that share a key, the member name up to the first dot of its file name:
 * the image is the `jpg` or `jpeg` member, the label the `cls` member (a
 * decimal class index below @num-classes, which must be set: shards do not
 * say how many classes there are); other members are passed over. This is
 * what WebDataset's ShardWriter and `gst-train-dataset shards` write. The
 * sample meta's location is `SHARD#MEMBER` (the shard as the location
 * names it, the image member) and its index (shard << 32) | n, for the
 * shard's place in the location's list and the sample's place in the
 * shard: the same in every epoch.
 *
 * Shuffling is WebDataset's: every epoch reads the shards in an order drawn
 * from @seed and the epoch, each from front to back (sequential reads, as
 * on network storage and object stores), and the samples pass through a
 * shuffle buffer of @shuffle-buffer-size samples that hands out a random
 * one once it is full. With shuffle=false the shards come in the order
 * written, each in member order. As WebDataset's, the buffer starts
 * handing out samples once it holds 100 (or @shuffle-buffer-size, when
 * smaller) and fills up reading two samples per sample out. Each shard is
 * read on a thread of its own in large sequential reads.
 *
 * With @interleave (the default), @fetch-ahead + 1 shards of the epoch's
 * order are read at once and their samples are taken in turn, one from
 * each, each as soon as its bytes are in; when a shard ends, the next one
 * of the order takes its turn. So shards fetched over a network all feed
 * the stream at once, at the sum of their connections' rates, instead of
 * one connection's while the others fill memory and then arrive in a
 * burst. It is the order WebDataset gives under PyTorch's DataLoader with
 * fetch-ahead + 1 workers, one sample (rather than one batch) from each
 * worker in turn. The order depends on @seed, the shards' contents and
 * @fetch-ahead, never on when bytes arrive, and is the same for files and
 * URLs: runs repeat, and a resume (with the same @fetch-ahead) is exact.
 * With interleave=false the shards are read one after the other, the next
 * @fetch-ahead fetched while the current one is read: the webdataset
 * package's order in one process.
 * In a data-parallel job (or with @num-ranks) rank R of N reads shards
 * R, R + N, ... of the list: each
 * rank its own shards, every shard read once per epoch across the job;
 * fewer shards than ranks is an error. Ranks whose shards hold fewer
 * samples run out first: cudatrainsink's join ends the job at the same
 * step on every rank. @num-samples ends each epoch after that many
 * samples. The sample counts are not known before the shards are read: the
 * tags at start carry the class count and the rank, and once an epoch was
 * read whole (or a resume counted one) they come again with the samples
 * per epoch (`train-epoch-samples`), which cudatrainsink counts epochs by.
 *
 * A sample with no image, no label, a label that is not a number or is out
 * of range is skipped with a warning and counted (@on-error); a damaged
 * shard (cut short, or not a tar file past some byte) keeps the samples
 * before the damage, with one warning that names the shard and the byte,
 * counted once per run; a missing shard is an error (at start for a file,
 * when it is fetched for a URL: 404), and so is a transfer that still
 * fails after @retries new attempts.
 *
 * ## Starting half-way: exact resume
 *
 * @start-position passes over that many samples of the source's sequence
 * (this rank's samples of epoch 0 in order, then of epoch 1, ...) before
 * the first it reads, as a sampler's start index does: the epoch and the
 * place in it follow from the position, and the samples before it are
 * neither read nor pushed. Before its first buffer the source also asks
 * downstream where to start (the custom query GST_TRAIN_RESUME_QUERY, see
 * train-meta.h): a cudatrainsink that resumes from a checkpoint answers
 * with the samples it trained on, echo turns that into the place its
 * shuffle buffer needs, and the answer, when there is one, counts from
 * @start-position: the source starts at @start-position plus the answer,
 * and the places an answer narrows to (gst_train_resume_query_set_keep)
 * count from there too. So `cudatrainsink resume-from=` alone starts the
 * source where the checkpoint stopped, and an application that runs one
 * pipeline per epoch, @start-position at the epoch's first sample, answers
 * with the samples of the epoch it already has. The position counts
 * samples pushed: a file skipped as unreadable before it (on-error=skip)
 * shifts it by one. On shards the source finds the place without reading
 * an image before it: it counts the good samples of the shards the place
 * needs from their tar headers (a local shard is read header by header,
 * seeking over the images; over HTTP a shard is fetched all the same),
 * replays the shard orders, the interleaved shards' turns and the shuffle
 * buffer's draws up to the place, then goes on from the middle of the
 * shards open there and reads the samples the buffer held one by one (a
 * seek, or an HTTP range request) as they go out. With @interleave the
 * shards the place needs are all those open at it (up to @fetch-ahead +
 * 1); a place past epoch 0 counts every shard of the rank (the size of an
 * epoch).
 *
 * Before the first buffer it sends a stream tag list with the dataset facts
 * (see train-meta.h): number of classes, class names in label order, the
 * dataset's size, the samples per epoch, and the rank's part it reads
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
 *   holds no image, a folder with no class sub-folders, a list-file line
 *   that is not `path<TAB>label` or whose label is not an integer in range
 *   (the message gives `FILE:LINE`), rank not below num-ranks, a rank
 *   that gets no sample.
 * * A warning (GST_RESOURCE_ERROR_SETTINGS) at start when num-samples with
 *   shuffle=false takes a subset that misses classes the dataset holds (an
 *   ImageFolder's order is class by class).
 * * An error (GST_RESOURCE_ERROR_READ) at the end of an epoch none of whose
 *   samples could be read: "None of the N samples of epoch E could be read;
 *   the first tried, "PATH": CAUSE." and, for a list file, what its paths
 *   are relative to.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 datasetsrc location=/data/train num-epochs=2 ! imagedec ! fakesink
 * gst-launch-1.0 datasetsrc location=/data/train-{0000..0009}.tar num-classes=10 \
 *     ! imagedec ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "datasetsrc-private.h"
#include "element-util.h"
#include "gt-launcher.h"
#include "train-props.h"

GST_DEBUG_CATEGORY (gst_dataset_src_debug);

#define DEFAULT_LOCATION NULL
#define DEFAULT_SHUFFLE TRUE
#define DEFAULT_SEED 0
#define DEFAULT_NUM_EPOCHS 1
#define DEFAULT_RANK 0
#define DEFAULT_NUM_RANKS 1
#define DEFAULT_NUM_SAMPLES 0
#define DEFAULT_N_THREADS 2
#define DEFAULT_READ_AHEAD 32
#define DEFAULT_EXTENSIONS "jpg,jpeg"
#define DEFAULT_ON_ERROR GST_TRAIN_ON_ERROR_SKIP
#define DEFAULT_START_POSITION 0
#define DEFAULT_NUM_CLASSES 0
#define DEFAULT_SHUFFLE_BUFFER_SIZE 1000
#define DEFAULT_FETCH_AHEAD 2
#define DEFAULT_INTERLEAVE TRUE
#define DEFAULT_RETRIES 5

enum
{
  PROP_0,
  PROP_LOCATION,
  PROP_SHUFFLE,
  PROP_SEED,
  PROP_NUM_EPOCHS,
  PROP_RANK,
  PROP_NUM_RANKS,
  PROP_NUM_SAMPLES,
  PROP_N_THREADS,
  PROP_READ_AHEAD,
  PROP_EXTENSIONS,
  PROP_ON_ERROR,
  PROP_START_POSITION,
  PROP_NUM_CLASSES,
  PROP_DATASET_SIZE,
  PROP_FILES_SKIPPED,
  PROP_SHUFFLE_BUFFER_SIZE,
  PROP_FETCH_AHEAD,
  PROP_INTERLEAVE,
  PROP_RETRIES,
  PROP_SHARD_INDEX,
  PROP_NUM_SHARDS,
  N_PROPERTIES
};

/* Any of them turns off the part the launcher's rank would give. */
static void
gst_dataset_src_rank_changed (gpointer base)
{
  GstDatasetSrc *src = base;

  src->props.rank_set = TRUE;
}

/* num-classes is the dataset's once start() found it. */
static void
gst_dataset_src_compute_num_classes (gconstpointer base, GValue *value)
{
  const GstDatasetSrc *src = base;

  g_value_set_uint (
      value, src->num_classes ? src->num_classes : src->props.num_classes);
}

/* Where each property is kept in GstDatasetSrc (train-props.h). */
#define FIELD(name) .offset = G_STRUCT_OFFSET (GstDatasetSrc, name)
static const GstTrainProp property_table[N_PROPERTIES] = {
  [PROP_LOCATION] = { FIELD (props.location) },
  [PROP_SHUFFLE] = { FIELD (props.shuffle) },
  [PROP_SEED] = { FIELD (props.seed) },
  [PROP_NUM_EPOCHS] = { FIELD (props.num_epochs) },
  [PROP_RANK] = { FIELD (props.rank), .changed = gst_dataset_src_rank_changed },
  [PROP_NUM_RANKS] = { FIELD (props.num_ranks),
      .changed = gst_dataset_src_rank_changed },
  [PROP_NUM_SAMPLES] = { FIELD (props.num_samples) },
  [PROP_N_THREADS] = { FIELD (props.n_threads) },
  [PROP_READ_AHEAD] = { FIELD (props.read_ahead) },
  [PROP_EXTENSIONS] = { FIELD (props.extensions) },
  [PROP_ON_ERROR] = { FIELD (bad.on_error) },
  [PROP_START_POSITION] = { FIELD (props.start_position) },
  [PROP_NUM_CLASSES] = { FIELD (props.num_classes),
      .compute = gst_dataset_src_compute_num_classes },
  [PROP_DATASET_SIZE] = { FIELD (dataset_size) },
  [PROP_FILES_SKIPPED] = { FIELD (bad.skipped) },
  [PROP_SHUFFLE_BUFFER_SIZE] = { FIELD (props.shuffle_buffer_size) },
  [PROP_FETCH_AHEAD] = { FIELD (props.fetch_ahead) },
  [PROP_INTERLEAVE] = { FIELD (props.interleave) },
  [PROP_RETRIES] = { FIELD (props.retries) },
  /* the deprecated names: the same fields, set the same way */
  [PROP_SHARD_INDEX] = { FIELD (props.rank),
      .changed = gst_dataset_src_rank_changed },
  [PROP_NUM_SHARDS] = { FIELD (props.num_ranks),
      .changed = gst_dataset_src_rank_changed },
};
#undef FIELD

G_STATIC_ASSERT (sizeof (GstTrainOnError) == sizeof (gint));

static GParamSpec *properties[N_PROPERTIES];

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE (
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS ("image/jpeg"));

/* The modes, in the order they are asked whether a location is theirs:
 * the files mode last, as it takes any. */
static const GstDatasetSrcModeFuncs *const gst_dataset_src_modes[] = {
  &gst_dataset_src_shards_mode,
  &gst_dataset_src_files_mode,
};

static const GstDatasetSrcModeFuncs *
gst_dataset_src_find_mode (const gchar *location)
{
  const GstDatasetSrcModeFuncs *mode = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (gst_dataset_src_modes); i++) {
    mode = gst_dataset_src_modes[i];
    if (mode->takes == NULL || mode->takes (location))
      break;
  }
  return mode;
}

#define gst_dataset_src_parent_class parent_class
G_DEFINE_TYPE (GstDatasetSrc, gst_dataset_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (
    datasetsrc, "datasetsrc", GST_RANK_NONE, GST_TYPE_DATASET_SRC);

static void gst_dataset_src_dispose (GObject *object);
static void gst_dataset_src_finalize (GObject *object);
static gboolean gst_dataset_src_start (GstBaseSrc *bsrc);
static gboolean gst_dataset_src_stop (GstBaseSrc *bsrc);
static gboolean gst_dataset_src_set_caps (GstBaseSrc *bsrc, GstCaps *caps);
static gboolean gst_dataset_src_unlock (GstBaseSrc *bsrc);
static gboolean gst_dataset_src_unlock_stop (GstBaseSrc *bsrc);
static gboolean gst_dataset_src_is_seekable (GstBaseSrc *bsrc);
static GstFlowReturn gst_dataset_src_create (
    GstPushSrc *psrc, GstBuffer **buffer);

static void
gst_dataset_src_class_init (GstDatasetSrcClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *pushsrc_class = GST_PUSH_SRC_CLASS (klass);

  gobject_class->dispose = gst_dataset_src_dispose;
  gobject_class->finalize = gst_dataset_src_finalize;

  properties[PROP_LOCATION] = g_param_spec_string ("location", "Location",
      "Dataset to read: a folder in ImageFolder layout (one sub-folder "
      "per class), a list file of \"relative/path<TAB>label\" lines, or "
      "WebDataset tar shards: files, brace patterns "
      "(\"train-{000..099}.tar\") and http(s):// URLs, separated by "
      "spaces",
      DEFAULT_LOCATION,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_SHUFFLE] = g_param_spec_boolean ("shuffle", "Shuffle",
      "Visit the samples in a fresh random order each epoch (FALSE: "
      "dataset order)",
      DEFAULT_SHUFFLE,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_SEED] = g_param_spec_uint64 ("seed", "Seed",
      "Seed of the per-epoch shuffle; the same seed gives the same order "
      "(use one seed for all shards)",
      0, G_MAXUINT64, DEFAULT_SEED,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_NUM_EPOCHS] =
      g_param_spec_int ("num-epochs", "Number of epochs",
          "Passes over the dataset before EOS (-1 = forever, 0 = none: EOS "
          "at once)",
          -1, G_MAXINT, DEFAULT_NUM_EPOCHS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_RANK] = g_param_spec_uint ("rank", "Rank",
      "Which part this source reads, from 0 to num-ranks - 1 (unset, with "
      "num-ranks unset too: the rank of a data-parallel job, from the "
      "launcher's environment)",
      0, G_MAXUINT - 1, DEFAULT_RANK,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_NUM_RANKS] =
      g_param_spec_uint ("num-ranks", "Number of ranks",
          "Split every epoch into this many disjoint parts, one per training "
          "process; unset, with rank unset too: the number of ranks of a "
          "data-parallel job, from the launcher's environment",
          1, G_MAXUINT, DEFAULT_NUM_RANKS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_NUM_SAMPLES] =
      g_param_spec_uint64 ("num-samples", "Number of samples",
          "Use only the first N samples of each epoch's shard (0 = all)", 0,
          G_MAXUINT64, DEFAULT_NUM_SAMPLES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_N_THREADS] = g_param_spec_uint ("n-threads", "Reader threads",
      "Read files ahead of the stream on the threads the data elements "
      "share (any value above 0; they are the process's thread budget) "
      "(0 = read each file in the streaming thread when it is due, no "
      "read-ahead)",
      0, 256, DEFAULT_N_THREADS,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_READ_AHEAD] = g_param_spec_uint ("read-ahead", "Read-ahead",
      "Most samples read ahead of the one being pushed (bounds memory)", 1,
      65536, DEFAULT_READ_AHEAD,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_EXTENSIONS] = g_param_spec_string ("extensions", "Extensions",
      "Comma-separated file extensions (any case) that count as images "
      "in an ImageFolder tree (empty = every file)",
      DEFAULT_EXTENSIONS,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_ON_ERROR] = g_param_spec_enum ("on-error", "On error",
      "What to do with a file that cannot be read", GST_TYPE_TRAIN_ON_ERROR,
      DEFAULT_ON_ERROR,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
  properties[PROP_START_POSITION] =
      g_param_spec_uint64 ("start-position", "Start position",
          "Samples of the source's sequence (this shard's samples of each "
          "epoch's order, epoch after epoch) to pass over, unread, before the "
          "first one pushed: a sampler's start index. A resuming "
          "cudatrainsink downstream (any answer to the resume query) moves the "
          "start on from here by the samples its checkpoint trained on",
          0, G_MAXUINT64, DEFAULT_START_POSITION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_NUM_CLASSES] =
      g_param_spec_uint ("num-classes", "Number of classes",
          "Classes in the dataset, known once the element is PAUSED. Shards "
          "do not say: set it for them (labels are 0 to num-classes - 1; "
          "others are skipped). Set for a folder or a list file, it must "
          "match what they hold (0 = whatever they hold)",
          0, G_MAXUINT, DEFAULT_NUM_CLASSES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_DATASET_SIZE] =
      g_param_spec_uint64 ("dataset-size", "Dataset size",
          "Samples in the whole dataset (known once the element is PAUSED)", 0,
          G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_FILES_SKIPPED] =
      g_param_spec_uint64 ("files-skipped", "Files skipped",
          "Files that could not be read and were skipped (on-error=skip); "
          "for shards, the bad samples and damaged shards skipped",
          0, G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_SHUFFLE_BUFFER_SIZE] =
      g_param_spec_uint ("shuffle-buffer-size", "Shuffle buffer size",
          "Shards: samples held in the sample shuffle buffer, which hands "
          "out a random one of them (WebDataset's shuffle(N)); bounds "
          "memory (0 or 1, or shuffle=false: the samples in the order the "
          "shards give them, see interleave)",
          0, 1 << 24, DEFAULT_SHUFFLE_BUFFER_SIZE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_FETCH_AHEAD] =
      g_param_spec_uint ("fetch-ahead", "Fetch ahead",
          "Shards: how many shards are read (files) or fetched (HTTP, each "
          "on its own connection) on threads of their own besides the "
          "current one: with interleave, fetch-ahead + 1 shards read at once "
          "and their samples taken in turn; without, the next ones fetched "
          "ahead while the current one is read (at most 32 MiB of each held "
          "in memory)",
          0, 64, DEFAULT_FETCH_AHEAD,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_INTERLEAVE] =
      g_param_spec_boolean ("interleave", "Interleave",
          "Shards: read fetch-ahead + 1 shards at once and take their samples "
          "in turn, one from each, as soon as each one's bytes are in, so that "
          "every transfer feeds the stream at once (a PyTorch DataLoader with "
          "fetch-ahead + 1 WebDataset workers, one sample from each in turn); "
          "the order depends on the seed, the shards and fetch-ahead (resume "
          "with the same), never on timing. FALSE: one shard after the other, "
          "the order of the webdataset package in one process",
          DEFAULT_INTERLEAVE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  properties[PROP_RETRIES] = g_param_spec_uint ("retries", "Retries",
      "Shards over HTTP: new attempts, in a row, of a transfer that "
      "broke (connection failed or cut, time-out, HTTP 5xx), from the "
      "byte it reached, after 0.2 s, 0.4 s, 0.8 s, ...; then an error "
      "naming the URL",
      0, 100, DEFAULT_RETRIES,
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
  /* Kept so that launch lines and code written before the rename go on
   * working; "shard" is the tar file's word now. */
  properties[PROP_SHARD_INDEX] =
      g_param_spec_uint ("shard-index", "Shard index",
          "Deprecated alias of rank; setting either sets the same value", 0,
          G_MAXUINT - 1, DEFAULT_RANK,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY
              | G_PARAM_DEPRECATED);
  properties[PROP_NUM_SHARDS] =
      g_param_spec_uint ("num-shards", "Number of shards",
          "Deprecated alias of num-ranks; setting either sets the same value",
          1, G_MAXUINT, DEFAULT_NUM_RANKS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY
              | G_PARAM_DEPRECATED);
  gst_train_props_install (
      gobject_class, property_table, properties, N_PROPERTIES);

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "Dataset source",
      "Source/File",
      "Reads a labelled image dataset (ImageFolder, list file, or "
      "WebDataset tar shards from files or over HTTP), one image/jpeg "
      "sample per buffer with its label, in a fresh order each epoch; sends "
      "the dataset facts as stream tags. Posts a warning (resource, read) "
      "naming each unreadable file or damaged shard it skips, and (stream, "
      "format) each bad shard sample, once per run (an error with "
      "on-error=fail), and one per empty class folder",
      "gst-train developers");

  /* A start that failed posts its reason: GstBaseSrc's own error after it
   * ("failed to post a proper error message") would contradict it. */
  gst_train_element_class_drop_fallback_errors (element_class);
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
  gst_train_props_init (src, property_table, properties, N_PROPERTIES);
  /* No max-errors: every unreadable file is skipped, and counted. */
  src->bad.bounded = FALSE;
  src->bad.max_errors = -1;
  gst_base_src_set_format (GST_BASE_SRC (src), GST_FORMAT_TIME);
}

static void
gst_dataset_src_settings_clear (GstDatasetSrcSettings *settings)
{
  g_clear_pointer (&settings->location, g_free);
  g_clear_pointer (&settings->extensions, g_free);
}

static void
gst_dataset_src_dispose (GObject *object)
{
  if (!gst_train_element_stop_before_dispose (GST_ELEMENT (object)))
    return; /* resurrected until another thread stops it */
  G_OBJECT_CLASS (parent_class)->dispose (object);
}

static void
gst_dataset_src_finalize (GObject *object)
{
  GstDatasetSrc *src = GST_DATASET_SRC (object);

  gst_dataset_src_settings_clear (&src->props);
  gst_dataset_src_settings_clear (&src->settings);
  gst_train_bad_samples_clear (&src->bad);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static gboolean
gst_dataset_src_start (GstBaseSrc *bsrc)
{
  GstDatasetSrc *src = GST_DATASET_SRC (bsrc);
  GstDatasetSrcSettings *s = &src->settings;
  GstTrainOnError on_error;
  GstTagList *tags;

  GST_OBJECT_LOCK (src);
  gst_dataset_src_settings_clear (s);
  *s = src->props;
  s->location = g_strdup (src->props.location);
  s->extensions = g_strdup (src->props.extensions);
  on_error = src->bad.on_error;
  GST_OBJECT_UNLOCK (src);

  if (!s->rank_set) {
    GtLauncherPosition position;

    if (gt_launcher_position (&position) && position.size > 1) {
      s->rank = (guint)position.rank;
      s->num_ranks = (guint)position.size;
      GST_INFO_OBJECT (src, "rank %d of %d (%s): reading part %u of %u",
          position.rank, position.size, position.source, s->rank, s->num_ranks);
    }
  }
  GST_INFO_OBJECT (src,
      "starting: location %s, shuffle %d, seed %" G_GUINT64_FORMAT
      ", num-epochs %d, rank %u of %u, num-samples %" G_GUINT64_FORMAT
      ", n-threads %u, read-ahead %u, extensions %s, start-position "
      "%" G_GUINT64_FORMAT ", on-error %s, num-classes %u, "
      "shuffle-buffer-size %u, fetch-ahead %u, interleave %d, retries %u",
      GST_STR_NULL (s->location), s->shuffle, s->seed, s->num_epochs, s->rank,
      s->num_ranks, s->num_samples, s->n_threads, s->read_ahead,
      GST_STR_NULL (s->extensions), s->start_position,
      on_error == GST_TRAIN_ON_ERROR_SKIP ? "skip" : "fail", s->num_classes,
      s->shuffle_buffer_size, s->fetch_ahead, s->interleave, s->retries);
  if (s->location == NULL) {
    GST_ELEMENT_ERROR (src, RESOURCE, NOT_FOUND, ("No dataset location given."),
        ("Set the \"location\" property to an ImageFolder or a list file."));
    return FALSE;
  }
  /* both modes split their samples or shards by it */
  if (s->rank >= s->num_ranks) {
    GST_ELEMENT_ERROR (src, RESOURCE, SETTINGS,
        ("rank %u is out of range for num-ranks %u.", s->rank, s->num_ranks),
        (NULL));
    return FALSE;
  }

  src->mode = gst_dataset_src_find_mode (s->location);
  src->positioned = FALSE;
  src->emitted = 0;
  GST_DEBUG_OBJECT (src, "reading in %s mode", src->mode->name);
  tags = src->mode->start (src);
  if (tags == NULL) {
    /* GstBaseSrc does not call stop() after a failed start() */
    src->mode->stop (src);
    src->mode = NULL;
    return FALSE;
  }
  GST_DEBUG_OBJECT (src, "dataset info: %" GST_PTR_FORMAT, tags);
  /* GstBaseSrc queues a tag event sent to the element and pushes it after
   * the segment, ahead of the first buffer. */
  GST_ELEMENT_CLASS (parent_class)
      ->send_event (GST_ELEMENT (src), gst_event_new_tag (tags));
  return TRUE;
}

static gboolean
gst_dataset_src_stop (GstBaseSrc *bsrc)
{
  GstDatasetSrc *src = GST_DATASET_SRC (bsrc);

  GST_INFO_OBJECT (src,
      "stopping: %" G_GUINT64_FORMAT " samples handed out or skipped, "
      "%" G_GUINT64_FORMAT " skipped",
      src->emitted, src->bad.skipped);
  if (src->mode != NULL)
    src->mode->stop (src);
  src->mode = NULL;
  g_clear_pointer (&src->keep, g_free);
  gst_dataset_src_settings_clear (&src->settings);
  return TRUE;
}

/* Wakes create() out of its wait for data (@flushing) or lets it wait
 * again; nothing waits while no mode is started. */
static void
gst_dataset_src_set_flushing (GstDatasetSrc *src, gboolean flushing)
{
  if (src->mode != NULL)
    src->mode->set_flushing (src, flushing);
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

static GstFlowReturn
gst_dataset_src_create (GstPushSrc *psrc, GstBuffer **out)
{
  GstDatasetSrc *src = GST_DATASET_SRC (psrc);

  if (!src->positioned) {
    GstFlowReturn ret;

    src->positioned = TRUE;
    ret = src->mode->position (src);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  return src->mode->create (src, out);
}
