/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fixtures.h: what the element tests share: JPEG files written with libjpeg,
 * libjpeg-turbo's own decode of them (djpeg) as the oracle, temporary
 * dataset trees, and a pipeline runner that records every sample. */
#ifndef __GST_TRAIN_TEST_FIXTURES_H__
#define __GST_TRAIN_TEST_FIXTURES_H__

#include <gst/gst.h>

G_BEGIN_DECLS

typedef enum
{
  FIXTURE_YCC_444,
  FIXTURE_YCC_422,
  FIXTURE_YCC_420,
  FIXTURE_GRAY,
  FIXTURE_CMYK,
  FIXTURE_YCCK,
} FixtureColour;

typedef struct
{
  FixtureColour colour;
  gboolean progressive;
  gboolean arithmetic;
  guint restart_interval; /* in MCU rows; 0 = none */
  gint quality;
} FixtureJpeg;

/* A JPEG of a @width x @height test pattern (different per @seed), encoded
 * as @how says; free with g_free(). */
guint8 *fixture_jpeg_encode (
    gint width, gint height, guint seed, const FixtureJpeg *how, gsize *size);

/* Writes @size bytes to @path, creating folders; aborts the test on
 * failure. */
void fixture_write_file (const gchar *path, const guint8 *data, gsize size);

/* Writes a baseline 4:2:0 JPEG file. */
void fixture_write_jpeg (
    const gchar *path, gint width, gint height, guint seed);

/* Writes a JPEG file encoded as @how says (fixture_jpeg_encode()). */
void fixture_write_jpeg_as (const gchar *path, gint width, gint height,
    guint seed, const FixtureJpeg *how);

/* A size that cycles with an image's number i: @base + (i % @cycle) *
 * @step. */
typedef struct
{
  gint base;
  gint step;
  guint cycle;
} FixtureCycle;

/* Writes @n JPEG files into @root, "%03u.jpg" for i from 0, spread in turn
 * over the sub-folders of @folders (a NULL-terminated list: one class a
 * folder); image i is @width x @height at i, of pattern i, encoded as
 * @kinds[i % @n_kinds] says, or baseline 4:2:0 when @kinds is NULL. */
void fixture_write_jpeg_tree (const gchar *root, guint n,
    const gchar *const *folders, FixtureCycle width, FixtureCycle height,
    const FixtureJpeg *kinds, guint n_kinds);

/* Makes this process look like rank @rank of a job of @size ranks that
 * Open MPI's mpirun started (OMPI_COMM_WORLD_* in the environment), as the
 * elements read it (gt-launcher.h); @rank < 0 removes those variables. No
 * MPI is involved: for the elements that only read the environment. */
void fixture_set_launcher (gint rank, gint size);

/* Checks the caps current on @pad: @width x @height, and @format too
 * unless it is NULL. */
void fixture_check_pad_caps (
    GstPad *pad, const gchar *format, gint width, gint height);

/* A new empty temporary folder; remove with fixture_remove_tree(). */
gchar *fixture_make_temp_dir (void);
void fixture_remove_tree (const gchar *path);

/* The running test's scratch folder: a temporary folder, made on first
 * use, that fixture_scratch_teardown() removes with all it holds. A test
 * case whose tests use it registers that as its checked fixture's teardown
 * (tcase_add_checked_fixture (tc, NULL, fixture_scratch_teardown)), so that
 * a test that fails leaves nothing behind either. */
const gchar *fixture_scratch (void);

/* The path of the elements given (as g_build_filename() takes them) inside
 * fixture_scratch(); the scratch owns it. */
const gchar *fixture_scratch_path (
    const gchar *first_element, ...) G_GNUC_NULL_TERMINATED;

/* Hands @string to the scratch, which frees it at teardown; returns it. */
const gchar *fixture_scratch_own (gchar *string);

void fixture_scratch_teardown (void);

/* libjpeg-turbo's own decode of @path to packed RGB (djpeg -ppm, with
 * "-scale M/N" when @scale is not NULL), width x height x 3 bytes; gray files
 * are expanded to R = G = B. NULL if djpeg fails. */
guint8 *fixture_djpeg_rgb (
    const gchar *path, const gchar *scale, gint *width, gint *height);

/* One buffer as it left the pipeline's last element. */
typedef struct
{
  gint label;
  guint64 index;
  gint epoch;
  guint emissions;
  gchar *location;
  gboolean has_meta;
  GstSample *sample; /* buffer and its caps */
} RunSample;

typedef struct
{
  GArray *samples;     /* RunSample */
  GPtrArray *warnings; /* "element: message (debug)" */
  gchar *error;        /* NULL when the pipeline reached EOS */
  GstTagList *tags;    /* merged tags the sink saw */
} RunResult;

/* Called by fixture_play_to_eos() with each message of the types asked
 * for. */
typedef void (*FixtureMessageFunc) (GstMessage *message, gpointer user_data);

/* Sets @pipeline PLAYING and waits for EOS or an error, handing every
 * message of @types (besides those two) to @func on the way; fails the test
 * when the bus stays silent for two minutes. Returns NULL at EOS, else the
 * error as "element: message (debug)" (free with g_free()). The pipeline is
 * left PLAYING. */
gchar *fixture_play_to_eos (GstElement *pipeline, GstMessageType types,
    FixtureMessageFunc func, gpointer user_data);

/* Sets @pipeline PLAYING, waits until it prerolled (so data flows) and
 * checks that it posted no error and no EOS: the state in which the tests
 * stop a pipeline mid-stream. */
void fixture_play_until_flowing (GstElement *pipeline);

/* A deadline @seconds from now, for fixture_cond_wait(). */
gint64 fixture_deadline (guint seconds);

/* g_cond_wait() on @cond with @lock held, failing the test, with @what in
 * the message, once @deadline (from fixture_deadline()) has passed: a
 * waiting test ends with a reason, even where check's own timeout does not
 * run (CK_FORK=no). */
void fixture_cond_wait (
    GCond *cond, GMutex *lock, gint64 deadline, const gchar *what);

/* Parses the launch line that @format and what follows make, then @rounds
 * times plays it until data flows and sets it to @stop_state (READY or
 * NULL), each change a success; then to NULL. Stopping mid-stream, threads
 * busy, must be clean. */
void fixture_stop_mid_stream (GstState stop_state, guint rounds,
    const gchar *format, ...) G_GNUC_PRINTF (3, 4);

/* The data elements' shared pool (train-pool.h) as the "train" plugin that
 * this process loaded sees it, loading the plugin if need be: the plugin
 * links the element library whole, so the copy of train-pool.c linked into
 * a test keeps counts of its own, untouched by pipelines. Tasks that pool
 * workers ran, every pool so far; and the workers running now. */
guint64 fixture_pool_worker_tasks (void);
guint fixture_pool_n_workers (void);

/* Runs @launch (whose last element must be "fakesink name=sink") to EOS or
 * error, recording every buffer that reaches the sink. */
RunResult *fixture_run (const gchar *launch);
void run_result_free (RunResult *result);

/* fixture_run() of the launch line that @format and what follows make. */
RunResult *fixture_run_printf (const gchar *format, ...) G_GNUC_PRINTF (1, 2);

/* fixture_run() of datasetsrc at @location, with properties @props, into
 * "fakesink name=sink". */
RunResult *fixture_run_src (const gchar *location, const gchar *props);

/* Runs datasetsrc at @location with @props and checks that it failed with
 * an error from datasetsrc that contains @part1 and, unless NULL, @part2,
 * after @samples_before samples. */
void fixture_expect_src_error (const gchar *location, const gchar *props,
    const gchar *part1, const gchar *part2, guint samples_before);

/* Plays datasetsrc at @location with @props to EOS, checking that no error
 * came, and returns its files-skipped. */
guint64 fixture_src_files_skipped (const gchar *location, const gchar *props);

/* The @i-th buffer that reached the sink. */
RunSample *run_result_sample (RunResult *result, guint i);

/* The dataset index of every sample of @epoch (of all, when @epoch < 0) in
 * the order they reached the sink (guint64); checks that @result ended
 * without an error. */
GArray *run_result_indices (RunResult *result, gint epoch);

/* TRUE when both runs hold the same bytes in the same order. */
gboolean run_result_same_outputs (RunResult *a, RunResult *b);

/* TRUE when @a and @b hold the same elements (of the same size). */
gboolean fixture_arrays_equal (GArray *a, GArray *b);

/* What an element drew (an order, pixels), as a new array. */
typedef GArray *(*FixtureDrawFunc) (gpointer user_data);

/* Calls @draw in a process alone, then as rank 0 and as rank 1 of a
 * data-parallel job of 2 (fixture_set_launcher()), and checks that rank 0
 * drew what a process alone draws and rank 1 drew otherwise (@what names
 * the draws in the failures). Returns what the process alone drew. */
GArray *fixture_expect_rank_draws (
    FixtureDrawFunc draw, gpointer user_data, const gchar *what);

/* TRUE when some warning contains all of the given substrings. */
gboolean run_result_has_warning (
    RunResult *result, const gchar *part1, const gchar *part2);

G_END_DECLS

#endif
