/* gst-train-dataset: turns IDX image/label pairs (MNIST, Fashion-MNIST, ...)
 * into an ImageFolder tree of JPEGs or WebDataset shards, and an
 * ImageFolder into shards.
 *
 *   gst-train-dataset idx --images FILE --labels FILE --output DIR
 *       [--class-names a,b,c] [--quality 95] [--limit N] [--shard-size N]
 *   gst-train-dataset fashion-mnist --output DIR
 *       [--source /usr/share/datasets/fashion-mnist] [--quality 95]
 *       [--limit-train N] [--limit-test N] [--shard-size N]
 *   gst-train-dataset shards --input DIR --output DIR [--prefix NAME]
 *       [--shard-size 1000] [--seed 0] [--keep-order]
 *
 * With --shard-size N the IDX commands write shards of N samples instead
 * of a tree: DIR/<split>-000000.tar, ... ("shard-" for idx), each sample
 * "<index>.jpg" and "<index>.cls" (shard-writer.c), in IDX order, which
 * WebDataset and datasetsrc read. "shards" writes an ImageFolder's files
 * as they are, in an order shuffled from --seed (imagefolder-shards.c).
 *
 * Class folders are named "<label>_<name>" (the label zero-padded to the
 * digits of the largest label) so that sorting the folder names, as
 * ImageFolder does, gives back the label order.  Without class names the
 * folders are just the zero-padded labels.  Files are "<index>.jpg", the
 * index being the image's position in the IDX file, zero-padded to the
 * digits of the file's image count.
 *
 * A finished tree holds a ".complete" marker (written last) with the
 * settings and counts; running again with the same settings does nothing.
 * While writing, a ".partial" marker holds the settings, so an interrupted
 * run can be redone with the same settings.
 *
 * Copyright (C) gst-train contributors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <turbojpeg.h>

#include "idx-reader.h"
#include "imagefolder-shards.h"
#include "output-dir.h"
#include "shard-writer.h"

#define PROGRAM "gst-train-dataset"

#define FASHION_MNIST_SOURCE "/usr/share/datasets/fashion-mnist"

static const char *const fashion_mnist_classes[] = {
  "T-shirt_top",
  "Trouser",
  "Pullover",
  "Dress",
  "Coat",
  "Sandal",
  "Shirt",
  "Sneaker",
  "Bag",
  "Ankle_boot",
};

typedef struct
{
  const char *name; /* "train", "test", or NULL for a single tree */
  char *images_path;
  char *labels_path;
  guint32 limit; /* 0: all */
  IdxFile images;
  IdxFile labels;
  guint32 written;
  guint n_shards; /* written as shards: how many, and their pattern */
  char *shards_pattern;
} Split;

static void
split_clear (Split *s)
{
  g_free (s->images_path);
  g_free (s->labels_path);
  g_free (s->shards_pattern);
  idx_file_clear (&s->images);
  idx_file_clear (&s->labels);
}

static gboolean
split_load (Split *s, GError **error)
{
  if (!idx_load (&s->images, s->images_path, TRUE, error))
    return FALSE;
  if (!idx_load (&s->labels, s->labels_path, FALSE, error))
    return FALSE;
  if (s->images.count != s->labels.count) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s holds %u images but %s holds %u labels; the counts must match",
        s->images.path, s->images.count, s->labels.path, s->labels.count);
    return FALSE;
  }
  return TRUE;
}

/* Largest label in the file. */
static guint
split_max_label (const Split *s)
{
  guint max = 0;
  guint32 i;

  for (i = 0; i < s->labels.count; i++)
    max = MAX (max, s->labels.data[i]);
  return max;
}

static gboolean
split_check_labels (
    const Split *s, guint n_classes, const char *names_from, GError **error)
{
  guint32 i;

  for (i = 0; i < s->labels.count; i++) {
    if (s->labels.data[i] >= n_classes) {
      g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
          "%s: label %u at index %u is out of range: %s %u class%s "
          "(labels 0..%u)",
          s->labels.path, s->labels.data[i], i, names_from, n_classes,
          n_classes == 1 ? "" : "es", n_classes - 1);
      return FALSE;
    }
  }
  return TRUE;
}

/* Folder names in label order: "<label>_<name>", or "<label>" without
 * names, the label zero-padded so that sorting keeps label order. */
static GPtrArray *
make_class_folders (char **names, guint n_classes)
{
  GPtrArray *folders = g_ptr_array_new_with_free_func (g_free);
  guint width = output_name_width (n_classes - 1);
  guint i;

  for (i = 0; i < n_classes; i++) {
    if (names)
      g_ptr_array_add (
          folders, g_strdup_printf ("%0*u_%s", (int)width, i, names[i]));
    else
      g_ptr_array_add (folders, g_strdup_printf ("%0*u", (int)width, i));
  }
  return folders;
}

/* Shared by the workers writing one split. */
typedef struct
{
  const Split *split;
  guint32 n;      /* images to write */
  int name_width; /* digits of the file names */
  int quality;
  char **dirs;      /* class folder paths, for messages */
  int *dirfds;      /* class folders, open */
  GBytes **encoded; /* shards: the JPEGs kept in memory, in order */
  gint next;        /* next block of images to take (atomic) */
  gint written;     /* images written (atomic) */
  gint failed;      /* set once a worker fails (atomic) */
  GMutex lock;
  GError *error; /* the first failure */
} WriteJob;

#define WRITE_BLOCK 256

static gpointer
write_worker (gpointer data)
{
  WriteJob *job = data;
  const IdxFile *im = &job->split->images;
  const guint8 *labels = job->split->labels.data;
  gsize frame = (gsize)im->rows * im->cols * im->channels;
  int pf = im->channels == 3 ? TJPF_RGB : TJPF_GRAY;
  int subsamp = im->channels == 3 ? TJSAMP_420 : TJSAMP_GRAY;
  unsigned long bufsize;
  unsigned char *jpeg = NULL;
  GError *error = NULL;
  char name[64], tmp_name[64];
  tjhandle tj;

  tj = tjInitCompress ();
  if (!tj) {
    g_set_error (&error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "cannot start the JPEG encoder: %s", tjGetErrorStr2 (NULL));
    goto out;
  }
  bufsize = tjBufSize ((int)im->cols, (int)im->rows, subsamp);
  if (bufsize == (unsigned long)-1) {
    g_set_error (&error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: cannot size a JPEG buffer: %s", im->path, tjGetErrorStr2 (tj));
    goto out;
  }
  jpeg = tjAlloc ((int)bufsize);
  if (!jpeg) {
    g_set_error (&error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "out of memory allocating a JPEG buffer");
    goto out;
  }

  while (!g_atomic_int_get (&job->failed)) {
    guint32 first = (guint32)g_atomic_int_add (&job->next, WRITE_BLOCK);
    guint32 last = MIN ((guint64)first + WRITE_BLOCK, job->n);
    guint32 k;

    if (first >= job->n)
      break;
    for (k = first; k < last; k++) {
      unsigned char *out = jpeg;
      unsigned long out_size = bufsize;
      guint8 label = labels[k];

      if (tjCompress2 (tj, im->data + (gsize)k * frame, (int)im->cols,
              (int)(im->cols * im->channels), (int)im->rows, pf, &out,
              &out_size, subsamp, job->quality, TJFLAG_NOREALLOC)
          != 0) {
        g_set_error (&error, DATASET_ERROR, DATASET_ERROR_FAILED,
            "%s: JPEG encoding of image %u failed: %s", im->path, k,
            tjGetErrorStr2 (tj));
        goto out;
      }
      if (job->encoded != NULL) {
        job->encoded[k] = g_bytes_new (out, out_size);
        continue;
      }
      g_snprintf (name, sizeof (name), "%0*u.jpg", job->name_width, k);
      g_snprintf (tmp_name, sizeof (tmp_name), "%s.tmp", name);
      if (!output_write_file_at (job->dirfds[label], job->dirs[label], name,
              tmp_name, out, out_size, &error))
        goto out;
    }
    g_atomic_int_add (&job->written, (gint)(last - first));
  }

out:
  if (error) {
    g_atomic_int_set (&job->failed, 1);
    g_mutex_lock (&job->lock);
    if (!job->error)
      job->error = error;
    else
      g_error_free (error);
    g_mutex_unlock (&job->lock);
  }
  if (jpeg)
    tjFree (jpeg);
  if (tj)
    tjDestroy (tj);
  return NULL;
}

/* Shards of @shard_size samples named after the split (root/train-NNNNNN.tar;
 * "shard-" for a split without a name) from the images @job encoded, keys
 * the images' indices as the ImageFolder's file names are. */
static gboolean
split_write_shards (Split *s, const WriteJob *job, const char *root,
    guint shard_size, GError **error)
{
  ShardWriter *writer =
      shard_writer_new (root, s->name ? s->name : "shard", shard_size);
  gboolean ok = TRUE;
  guint32 k;
  char key[32];

  for (k = 0; k < job->n && ok; k++) {
    gsize size;
    const void *jpeg = g_bytes_get_data (job->encoded[k], &size);

    g_snprintf (key, sizeof (key), "%0*u", job->name_width, k);
    ok = shard_writer_add (writer, key, jpeg, size, s->labels.data[k], error);
  }
  g_free (s->shards_pattern);
  if (!shard_writer_finish (
          writer, &s->n_shards, &s->shards_pattern, ok ? error : NULL))
    ok = FALSE;
  return ok;
}

/* Encodes and writes the images of one split into root/<class>/ (or, with
 * @shard_size, into shards in root), with n_jobs threads, each reusing one
 * TurboJPEG handle. */
static gboolean
split_write (Split *s, const char *root, GPtrArray *folders, int quality,
    guint shard_size, guint n_jobs, GError **error)
{
  WriteJob job;
  GThread **threads;
  gboolean ok = FALSE;
  guint i;

  memset (&job, 0, sizeof (job));
  job.split = s;
  job.n = s->limit ? MIN (s->limit, s->images.count) : s->images.count;
  job.name_width = (int)output_name_width (s->images.count);
  job.quality = quality;
  job.dirs = g_new0 (char *, folders->len + 1);
  job.dirfds = g_new (int, folders->len);
  g_mutex_init (&job.lock);
  for (i = 0; i < folders->len; i++)
    job.dirfds[i] = -1;
  if (shard_size > 0)
    job.encoded = g_new0 (GBytes *, MAX (job.n, 1));

  for (i = 0; i < folders->len && shard_size == 0; i++) {
    job.dirs[i] = g_build_filename (root, g_ptr_array_index (folders, i), NULL);
    if (!output_make_dir (job.dirs[i], error))
      goto out;
    job.dirfds[i] = open (job.dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (job.dirfds[i] < 0) {
      g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
          "%s: cannot open folder: %s", job.dirs[i], g_strerror (errno));
      goto out;
    }
  }

  n_jobs = CLAMP (n_jobs, 1, MAX (1, job.n / WRITE_BLOCK));
  threads = g_new0 (GThread *, n_jobs);
  for (i = 1; i < n_jobs; i++) {
    threads[i] = g_thread_try_new ("writer", write_worker, &job, NULL);
    if (!threads[i])
      break; /* fewer workers then */
  }
  write_worker (&job);
  for (i = 1; i < n_jobs; i++) {
    if (threads[i])
      g_thread_join (threads[i]);
  }
  g_free (threads);

  s->written = (guint32)g_atomic_int_get (&job.written);
  if (job.error) {
    g_propagate_error (error, job.error);
    job.error = NULL;
    goto out;
  }
  ok = shard_size == 0 || split_write_shards (s, &job, root, shard_size, error);

out:
  for (i = 0; job.encoded != NULL && i < job.n; i++)
    if (job.encoded[i] != NULL)
      g_bytes_unref (job.encoded[i]);
  g_free (job.encoded);
  for (i = 0; i < folders->len; i++) {
    if (job.dirfds[i] >= 0)
      close (job.dirfds[i]);
  }
  g_free (job.dirfds);
  g_strfreev (job.dirs);
  g_mutex_clear (&job.lock);
  return ok;
}

static char *
absolute_path (const char *path)
{
  return g_canonicalize_filename (path, NULL);
}

/* Loads, checks and writes all splits; each split goes to out_dir/name, or
 * to out_dir itself when its name is NULL; with @shard_size, to shards
 * out_dir/name-NNNNNN.tar. */
static gboolean
run (Split *splits, guint n_splits, const char *out_dir, char **class_names,
    const char *names_from, int quality, guint shard_size, guint n_jobs,
    const char *settings, GError **error)
{
  GPtrArray *folders = NULL;
  GString *marker = NULL;
  GString *counts = NULL;
  gint64 t0 = g_get_monotonic_time ();
  guint n_classes;
  gboolean ok = FALSE;
  guint i;

  switch (output_check (out_dir, settings, error)) {
    case OUTPUT_COMPLETE:
      return TRUE;
    case OUTPUT_ERROR:
      return FALSE;
    case OUTPUT_FRESH:
      break;
  }

  /* Load and check everything before writing anything. */
  for (i = 0; i < n_splits; i++) {
    if (!split_load (&splits[i], error))
      return FALSE;
  }
  if (class_names) {
    n_classes = g_strv_length (class_names);
  } else {
    guint max = 0;

    for (i = 0; i < n_splits; i++)
      max = MAX (max, split_max_label (&splits[i]));
    n_classes = max + 1;
  }
  for (i = 0; i < n_splits; i++) {
    if (!split_check_labels (&splits[i], n_classes, names_from, error))
      return FALSE;
  }
  folders = make_class_folders (class_names, n_classes);

  if (!output_make_dir (out_dir, error))
    goto out;
  marker = g_string_new (NULL);
  g_string_append_printf (marker, "settings=%s\n", settings);
  if (!output_write_text (out_dir, MARKER_PARTIAL, marker->str, error))
    goto out;

  counts = g_string_new (NULL);
  for (i = 0; i < n_splits; i++) {
    Split *s = &splits[i];
    char *root = s->name && shard_size == 0
        ? g_build_filename (out_dir, s->name, NULL)
        : g_strdup (out_dir);
    gboolean written =
        split_write (s, root, folders, quality, shard_size, n_jobs, error);

    g_free (root);
    if (!written)
      goto out;
    if (counts->len)
      g_string_append (counts, ", ");
    if (s->name)
      g_string_append_printf (counts, "%s %u images", s->name, s->written);
    else
      g_string_append_printf (counts, "%u images", s->written);
    if (shard_size > 0)
      g_string_append_printf (counts, " in %u shard%s (%s)", s->n_shards,
          s->n_shards == 1 ? "" : "s", s->shards_pattern);
  }

  /* Marker last: the tree is only complete once it is there. */
  g_string_append_printf (
      marker, "counts=%s\nclasses=%u\n", counts->str, n_classes);
  for (i = 0; i < n_splits; i++) {
    Split *s = &splits[i];

    g_string_append_printf (marker, "%s%s%s=%u\n", s->name ? s->name : "",
        s->name ? "-" : "", "images", s->written);
  }
  g_string_append (marker, "folders=");
  for (i = 0; i < folders->len && shard_size == 0; i++)
    g_string_append_printf (
        marker, "%s%s", i ? "," : "", (char *)g_ptr_array_index (folders, i));
  g_string_append_c (marker, '\n');
  if (!output_write_text (out_dir, MARKER_COMPLETE, marker->str, error))
    goto out;
  {
    char *partial = g_build_filename (out_dir, MARKER_PARTIAL, NULL);

    g_unlink (partial);
    g_free (partial);
  }

  g_print ("%s: %s, %u classes, %.2f s\n", out_dir, counts->str, n_classes,
      (g_get_monotonic_time () - t0) / 1e6);
  ok = TRUE;

out:
  if (counts)
    g_string_free (counts, TRUE);
  if (marker)
    g_string_free (marker, TRUE);
  if (folders)
    g_ptr_array_unref (folders);
  return ok;
}

static gboolean
check_quality (int quality, GError **error)
{
  if (quality < 1 || quality > 100) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "--quality must be 1..100, got %d", quality);
    return FALSE;
  }
  return TRUE;
}

static gboolean
check_limit (const char *name, int limit, GError **error)
{
  if (limit < 0) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s must be 0 (all) or more, got %d", name, limit);
    return FALSE;
  }
  return TRUE;
}

static guint
effective_jobs (int jobs)
{
  if (jobs > 0)
    return (guint)MIN (jobs, 256);
  return CLAMP (g_get_num_processors (), 1, 16);
}

/* What both commands take besides their own options: JPEG quality and
 * encoder threads, parsed and checked in one place. */
typedef struct
{
  int quality;
  int jobs;
  int shard_size;
} EncodeOptions;

/* Parses a command's options: its own @entries, then quality and jobs into
 * @encode. FALSE with @error set on a bad option, a stray argument, or a
 * quality or thread count out of range. */
static gboolean
parse_command (int *argc, char ***argv, const char *parameter,
    const char *summary, const GOptionEntry *entries, EncodeOptions *encode,
    GError **error)
{
  GOptionEntry encode_entries[] = {
    { "quality", 'q', 0, G_OPTION_ARG_INT, &encode->quality,
        "JPEG quality 1..100 (default 95)", "Q" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &encode->jobs,
        "Encoder threads (default 0: one per CPU)", "N" },
    { "shard-size", 0, 0, G_OPTION_ARG_INT, &encode->shard_size,
        "Write WebDataset tar shards of N samples each (NAME-000000.tar, "
        "...; KEY.jpg and KEY.cls per sample) instead of an ImageFolder "
        "(default 0: an ImageFolder)",
        "N" },
    { NULL },
  };
  GOptionContext *ctx = g_option_context_new (parameter);
  gboolean ok;

  encode->quality = 95;
  encode->jobs = 0;
  encode->shard_size = 0;
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_main_entries (ctx, encode_entries, NULL);
  g_option_context_set_summary (ctx, summary);
  ok = g_option_context_parse (ctx, argc, argv, error);
  g_option_context_free (ctx);
  if (ok && *argc > 1) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "unexpected argument \"%s\"", (*argv)[1]);
    ok = FALSE;
  }
  return ok && check_quality (encode->quality, error)
      && check_limit ("--jobs", encode->jobs, error)
      && check_limit ("--shard-size", encode->shard_size, error);
}

/* The shard size as the settings in the markers say it ("" for an
 * ImageFolder, so that older markers still match). */
static const char *
shard_setting (const EncodeOptions *encode)
{
  static char text[32];

  if (encode->shard_size == 0)
    return "";
  g_snprintf (text, sizeof (text), " shard-size=%d", encode->shard_size);
  return text;
}

static int
cmd_idx (int argc, char **argv, GError **error)
{
  char *images = NULL, *labels = NULL, *output = NULL, *names_arg = NULL;
  int limit = 0;
  EncodeOptions encode;
  GOptionEntry entries[] = {
    { "images", 0, 0, G_OPTION_ARG_FILENAME, &images,
        "IDX image file (gzip or plain): magic 0x00000803, or 0x00000804 "
        "with a last dimension of 1 or 3 (RGB)",
        "FILE" },
    { "labels", 0, 0, G_OPTION_ARG_FILENAME, &labels,
        "IDX label file (gzip or plain), magic 0x00000801", "FILE" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
        "Output folder (ImageFolder tree)", "DIR" },
    { "class-names", 0, 0, G_OPTION_ARG_STRING, &names_arg,
        "Comma-separated class names in label order (default: the label "
        "numbers)",
        "a,b,c" },
    { "limit", 'n', 0, G_OPTION_ARG_INT, &limit,
        "Write only the first N images (default 0: all)", "N" },
    { NULL },
  };
  char **class_names = NULL;
  char *settings = NULL;
  Split split = { 0 };
  int status = 1;

  if (!parse_command (&argc, &argv, "- IDX pair to ImageFolder",
          "Turns an IDX image/label pair into DIR/<label>_<class>/<index>.jpg.",
          entries, &encode, error))
    goto out;
  if (!images || !labels || !output) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "idx needs --images, --labels and --output (see "
        "\"" PROGRAM " idx --help\")");
    goto out;
  }
  if (!check_limit ("--limit", limit, error))
    goto out;
  if (names_arg && !parse_class_names (names_arg, &class_names, error))
    goto out;

  split.images_path = g_strdup (images);
  split.labels_path = g_strdup (labels);
  split.limit = (guint32)limit;
  {
    char *joined = class_names ? g_strjoinv (",", class_names) : NULL;
    char *images_abs = absolute_path (images);
    char *labels_abs = absolute_path (labels);

    settings = g_strdup_printf (
        "idx images=%s labels=%s quality=%d limit=%d class-names=%s%s",
        images_abs, labels_abs, encode.quality, limit,
        joined ? joined : "(labels)", shard_setting (&encode));
    g_free (labels_abs);
    g_free (images_abs);
    g_free (joined);
  }
  if (run (&split, 1, output, class_names, "--class-names gives",
          encode.quality, encode.shard_size, effective_jobs (encode.jobs),
          settings, error))
    status = 0;

out:
  split_clear (&split);
  g_free (settings);
  g_strfreev (class_names);
  g_free (images);
  g_free (labels);
  g_free (output);
  g_free (names_arg);
  return status;
}

/* source/name.gz, or source/name when only the unpacked file is there. */
static char *
find_source_file (const char *source, const char *name)
{
  char *gz_name = g_strconcat (name, ".gz", NULL);
  char *path = g_build_filename (source, gz_name, NULL);

  g_free (gz_name);
  if (!g_file_test (path, G_FILE_TEST_EXISTS)) {
    char *plain = g_build_filename (source, name, NULL);

    if (g_file_test (plain, G_FILE_TEST_EXISTS)) {
      g_free (path);
      path = plain;
    } else {
      g_free (plain);
    }
  }
  return path;
}

static int
cmd_fashion_mnist (int argc, char **argv, GError **error)
{
  char *output = NULL, *source = NULL;
  int limit_train = 0, limit_test = 0;
  EncodeOptions encode;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
        "Output folder; gets train/ and test/", "DIR" },
    { "source", 's', 0, G_OPTION_ARG_FILENAME, &source,
        "Folder with the IDX files (default " FASHION_MNIST_SOURCE ")", "DIR" },
    { "limit-train", 0, 0, G_OPTION_ARG_INT, &limit_train,
        "Write only the first N training images (default 0: all)", "N" },
    { "limit-test", 0, 0, G_OPTION_ARG_INT, &limit_test,
        "Write only the first N test images (default 0: all)", "N" },
    { NULL },
  };
  char **class_names = NULL;
  char *settings = NULL;
  char *source_abs = NULL;
  Split splits[2] = { { 0 }, { 0 } };
  int status = 1;
  guint i;

  if (!parse_command (&argc, &argv, "- Fashion-MNIST to ImageFolder",
          "Turns the Fashion-MNIST IDX files (Debian package "
          "dataset-fashion-mnist)\ninto DIR/train and DIR/test, each "
          "<label>_<class>/<index>.jpg.",
          entries, &encode, error))
    goto out;
  if (!output) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "fashion-mnist needs --output (see \"" PROGRAM
        " fashion-mnist --help\")");
    goto out;
  }
  if (!check_limit ("--limit-train", limit_train, error)
      || !check_limit ("--limit-test", limit_test, error))
    goto out;

  if (!source)
    source = g_strdup (FASHION_MNIST_SOURCE);
  source_abs = absolute_path (source);
  if (!g_file_test (source, G_FILE_TEST_IS_DIR)) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "%s: no such folder (install the Debian package "
        "dataset-fashion-mnist, or give --source)",
        source);
    goto out;
  }

  splits[0].name = "train";
  splits[0].images_path = find_source_file (source, "train-images-idx3-ubyte");
  splits[0].labels_path = find_source_file (source, "train-labels-idx1-ubyte");
  splits[0].limit = (guint32)limit_train;
  splits[1].name = "test";
  splits[1].images_path = find_source_file (source, "t10k-images-idx3-ubyte");
  splits[1].labels_path = find_source_file (source, "t10k-labels-idx1-ubyte");
  splits[1].limit = (guint32)limit_test;

  class_names = g_new0 (char *, G_N_ELEMENTS (fashion_mnist_classes) + 1);
  for (i = 0; i < G_N_ELEMENTS (fashion_mnist_classes); i++)
    class_names[i] = g_strdup (fashion_mnist_classes[i]);

  settings = g_strdup_printf (
      "fashion-mnist source=%s quality=%d limit-train=%d limit-test=%d%s",
      source_abs, encode.quality, limit_train, limit_test,
      shard_setting (&encode));
  if (run (splits, 2, output, class_names, "Fashion-MNIST has", encode.quality,
          encode.shard_size, effective_jobs (encode.jobs), settings, error))
    status = 0;

out:
  split_clear (&splits[0]);
  split_clear (&splits[1]);
  g_free (settings);
  g_free (source_abs);
  g_strfreev (class_names);
  g_free (output);
  g_free (source);
  return status;
}

static int
cmd_shards (int argc, char **argv, GError **error)
{
  char *input = NULL, *output = NULL, *prefix = NULL;
  int shard_size = 1000;
  gint64 seed = 0;
  gboolean keep_order = FALSE;
  GOptionEntry entries[] = {
    { "input", 'i', 0, G_OPTION_ARG_FILENAME, &input,
        "ImageFolder tree (or list file) of JPEGs", "DIR" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
        "Output folder for the shards", "DIR" },
    { "prefix", 'p', 0, G_OPTION_ARG_STRING, &prefix,
        "Shard names: PREFIX-000000.tar, ... (default: the input folder's "
        "name)",
        "PREFIX" },
    { "shard-size", 0, 0, G_OPTION_ARG_INT, &shard_size,
        "Samples per shard (default 1000)", "N" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed,
        "Seed of the order the samples are written in (default 0)", "S" },
    { "keep-order", 0, 0, G_OPTION_ARG_NONE, &keep_order,
        "Write the samples in dataset order (one class after another) "
        "instead of shuffled",
        NULL },
    { NULL },
  };
  GOptionContext *ctx = g_option_context_new ("- ImageFolder to shards");
  int status = 1;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_set_summary (ctx,
      "Writes the JPEGs of an ImageFolder (labels in torchvision's order) as "
      "WebDataset\nshards DIR/PREFIX-NNNNNN.tar: KEY.jpg and KEY.cls per "
      "sample, the files' bytes unchanged.");
  if (!g_option_context_parse (ctx, &argc, &argv, error))
    goto out;
  if (argc > 1) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "unexpected argument \"%s\"", argv[1]);
    goto out;
  }
  if (!input || !output || shard_size < 1) {
    g_set_error (error, DATASET_ERROR, DATASET_ERROR_FAILED,
        "shards needs --input and --output, and a --shard-size of 1 or "
        "more (see \"" PROGRAM " shards --help\")");
    goto out;
  }
  if (prefix == NULL) {
    char *canonical = g_canonicalize_filename (input, NULL);

    prefix = g_path_get_basename (canonical);
    g_free (canonical);
  }
  if (imagefolder_to_shards (input, output, prefix, (guint)shard_size,
          (guint64)seed, keep_order, error))
    status = 0;

out:
  g_option_context_free (ctx);
  g_free (input);
  g_free (output);
  g_free (prefix);
  return status;
}

static void
usage (FILE *to)
{
  fprintf (to,
      "Usage:\n"
      "  " PROGRAM " idx --images FILE --labels FILE --output DIR\n"
      "      [--class-names a,b,c] [--quality 95] [--limit N] [--jobs N]\n"
      "  " PROGRAM " fashion-mnist --output DIR [--source " FASHION_MNIST_SOURCE
      "]\n"
      "      [--quality 95] [--limit-train N] [--limit-test N] [--jobs N]\n"
      "  " PROGRAM " shards --input DIR --output DIR [--prefix NAME]\n"
      "      [--shard-size 1000] [--seed 0] [--keep-order]\n"
      "\n"
      "Turns IDX image/label files (gzip or plain) into an ImageFolder tree\n"
      "of JPEGs: DIR/<label>_<class>/<index>.jpg.  \"" PROGRAM
      " COMMAND --help\"\n"
      "lists a command's options.\n");
}

int
main (int argc, char **argv)
{
  GError *error = NULL;
  const char *cmd;
  int status;

  if (argc < 2) {
    usage (stderr);
    return 1;
  }
  cmd = argv[1];
  if (strcmp (cmd, "--help") == 0 || strcmp (cmd, "-h") == 0
      || strcmp (cmd, "help") == 0) {
    usage (stdout);
    return 0;
  }

  {
    /* "--help" of a command then reads "gst-train-dataset COMMAND". */
    char *prgname = g_strconcat (PROGRAM " ", cmd, NULL);

    g_set_prgname (prgname);
    g_free (prgname);
  }
  if (strcmp (cmd, "idx") == 0) {
    status = cmd_idx (argc - 1, argv + 1, &error);
  } else if (strcmp (cmd, "fashion-mnist") == 0) {
    status = cmd_fashion_mnist (argc - 1, argv + 1, &error);
  } else if (strcmp (cmd, "shards") == 0) {
    status = cmd_shards (argc - 1, argv + 1, &error);
  } else {
    fprintf (stderr, PROGRAM ": unknown command \"%s\"\n\n", cmd);
    usage (stderr);
    return 1;
  }

  if (error) {
    fprintf (stderr, PROGRAM ": %s\n", error->message);
    g_error_free (error);
  }
  return status;
}
