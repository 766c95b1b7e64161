/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cudatrainsink.c: whole training pipelines through gst_parse_launch, on
 * the CPU backend with resnet20 and small generated datasets: the loss
 * falls, resume is exact and the epoch goes on across it, fresh and total
 * counts at every echo position, eval on a known checkpoint, the "stop"
 * signal and a stop without EOS, every error and warning the sink
 * reports, and what it says about data-parallel jobs when it trains
 * alone. */
#include <errno.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <string.h>

#include "fixtures.h"
#include "safetensors.h"
#include "trainer.h"

/* The longest a test waits for the next bus message (under CK_FORK=no,
 * check's own timeout is not enforced): a run that stops posting fails
 * the test, naming its pipeline, instead of hanging until meson kills the
 * whole program. Every run here posts at least every few steps. */
#define BUS_WAIT (180 * GST_SECOND)

static guint64 checkpoint_step (const gchar *path);

/* The next message of @types on @pipeline's @bus, waiting at most BUS_WAIT;
 * when none comes, stops the pipeline (a failed check must not leave it
 * running) and fails the test, naming @launch. */
static GstMessage *
pop_or_fail (GstElement *pipeline, GstBus *bus, GstMessageType types,
    const gchar *launch)
{
  GstMessage *message = gst_bus_timed_pop_filtered (bus, BUS_WAIT, types);

  if (message == NULL) {
    gst_element_set_state (pipeline, GST_STATE_NULL);
    fail ("%s: no message for %" GST_TIME_FORMAT ", no EOS or error", launch,
        GST_TIME_ARGS (BUS_WAIT));
  }
  return message;
}

typedef struct
{
  GPtrArray *stats; /* GstStructure, train-stats in order */
  GstStructure *eval;
  gchar *error;
  GString *notes; /* warning and info messages, a line each */
} SinkRun;

static SinkRun *
sink_run (const gchar *launch)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (launch, &error);
  SinkRun *run = g_new0 (SinkRun, 1);
  GstBus *bus;
  gboolean done = FALSE;

  fail_unless (pipeline != NULL && error == NULL, "%s: %s", launch,
      error ? error->message : "?");
  run->stats =
      g_ptr_array_new_with_free_func ((GDestroyNotify)gst_structure_free);
  run->notes = g_string_new (NULL);
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  while (!done) {
    GstMessage *message = pop_or_fail (pipeline, bus,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT
            | GST_MESSAGE_WARNING | GST_MESSAGE_INFO,
        launch);

    switch (GST_MESSAGE_TYPE (message)) {
      case GST_MESSAGE_WARNING:
      case GST_MESSAGE_INFO: {
        GError *err = NULL;

        if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_WARNING)
          gst_message_parse_warning (message, &err, NULL);
        else
          gst_message_parse_info (message, &err, NULL);
        g_string_append_printf (run->notes, "%s: %s\n",
            GST_MESSAGE_TYPE_NAME (message), err->message);
        g_error_free (err);
        break;
      }
      case GST_MESSAGE_ELEMENT: {
        const GstStructure *s = gst_message_get_structure (message);

        if (gst_structure_has_name (s, "train-stats"))
          g_ptr_array_add (run->stats, gst_structure_copy (s));
        else if (gst_structure_has_name (s, "eval-result"))
          run->eval = gst_structure_copy (s);
        break;
      }
      case GST_MESSAGE_ERROR: {
        GError *err = NULL;
        gchar *debug = NULL;

        gst_message_parse_error (message, &err, &debug);
        run->error = g_strdup_printf ("%s (%s)", err->message, debug);
        g_error_free (err);
        g_free (debug);
        done = TRUE;
        break;
      }
      default:
        done = TRUE;
        break;
    }
    gst_message_unref (message);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  return run;
}

/* sink_run on @launch, which it frees. */
static SinkRun *
sink_run_take (gchar *launch)
{
  SinkRun *run = sink_run (launch);

  g_free (launch);
  return run;
}

/* sink_run on the launch line that g_strdup_printf() makes of the
 * arguments. */
#define sink_run_printf(...) sink_run_take (g_strdup_printf (__VA_ARGS__))

static void
sink_run_free (SinkRun *run)
{
  g_ptr_array_unref (run->stats);
  g_string_free (run->notes, TRUE);
  if (run->eval)
    gst_structure_free (run->eval);
  g_free (run->error);
  g_free (run);
}

static gdouble
get_double (const GstStructure *s, const gchar *name)
{
  gdouble value = -1;

  fail_unless (gst_structure_get_double (s, name, &value), "no %s", name);
  return value;
}

static guint64
get_uint64 (const GstStructure *s, const gchar *name)
{
  guint64 value = 0;

  fail_unless (gst_structure_get_uint64 (s, name, &value), "no %s", name);
  return value;
}

/* The last train-stats of @run, which ended without error. */
static const GstStructure *
last_stats (SinkRun *run)
{
  fail_unless (run->error == NULL, "%s", run->error);
  return g_ptr_array_index (run->stats, run->stats->len - 1);
}

/* The dataset of the test that runs, which the scratch folder holds (its
 * checked fixture removes it after the test): an ImageFolder of @per_class
 * JPEGs of 12x12 in each of @classes classes, "classC/NN.jpg". What the
 * tests write beside it, checkpoints and logs, does not count as data. */
static const gchar *
use_dataset (gint classes, gint per_class)
{
  const gchar *dir = fixture_scratch ();
  gint c, i;

  for (c = 0; c < classes; c++)
    for (i = 0; i < per_class; i++) {
      gchar *path = g_strdup_printf ("%s/class%d/%02d.jpg", dir, c, i);

      fixture_write_jpeg (path, 12, 12, c * 100 + i);
      g_free (path);
    }
  return dir;
}

/* The head of every pipeline here: deterministic given the seeds. */
static gchar *
input_stage (const gchar *dir, gint epochs)
{
  return g_strdup_printf ("datasetsrc location=%s num-epochs=%d seed=3 ! "
                          "imagedec ! augment width=12 height=12 seed=4",
      dir, epochs);
}

#define SINK "cudatrainsink model=resnet20 device=cpu num-threads=2 "

/* Where the test that runs has the sink write its checkpoint (the scratch
 * folder's "ck.safetensors"). */
static const gchar *
test_checkpoint (void)
{
  return fixture_scratch_path ("ck.safetensors", NULL);
}

/* sink_run on the dataset of use_dataset (@classes, @per_class): datasetsrc
 * on it, then @rest (the rest of the line: its properties and the
 * elements after it). */
static SinkRun *
sink_run_dataset (gint classes, gint per_class, const gchar *rest)
{
  return sink_run_printf (
      "datasetsrc location=%s %s", use_dataset (classes, per_class), rest);
}

GST_START_TEST (test_loss_falls)
{
  SinkRun *run = sink_run_dataset (2, 8,
      "num-epochs=40 seed=3 ! imagedec ! augment width=12 height=12 "
      "crop=center ! batcher batch-size=16 ! " SINK
      "lr=0.02 lr-schedule=constant label-smoothing=0 stats-interval=10");
  gdouble first_loss, last_loss, first_top1, last_top1;

  fail_unless (run->error == NULL, "%s", run->error);
  /* 16 images, one batch an epoch (the same images every step: they are
   * memorised), 40 epochs: 40 steps, 4 messages. lr 0.02: at 0.05 the loss
   * fell to about 0.18 by step 30 and then swung, so that the last
   * interval's loss (0.09 to 0.50 from 0.59) depended on the rounding of
   * the thread count and the kernels; at 0.02 it ends at 0.10 to 0.18 from
   * 0.55 with any of them. */
  fail_unless_equals_int (run->stats->len, 4);
  first_loss = get_double (g_ptr_array_index (run->stats, 0), "loss");
  last_loss = get_double (g_ptr_array_index (run->stats, 3), "loss");
  fail_unless (
      last_loss < 0.5 * first_loss, "loss %g -> %g", first_loss, last_loss);
  fail_unless_equals_uint64 (
      get_uint64 (g_ptr_array_index (run->stats, 3), "step"), 40);
  fail_unless_equals_uint64 (
      get_uint64 (g_ptr_array_index (run->stats, 3), "images"), 640);
  /* the interval's training accuracy rises with it (0.925 at the end
   * here); with two classes every label is in the top five */
  first_top1 = get_double (g_ptr_array_index (run->stats, 0), "top1");
  last_top1 = get_double (g_ptr_array_index (run->stats, 3), "top1");
  fail_unless (last_top1 >= 0.75 && last_top1 > first_top1, "top1 %g -> %g",
      first_top1, last_top1);
  fail_unless_equals_float (
      get_double (g_ptr_array_index (run->stats, 0), "top5"), 1.0);

  sink_run_free (run);
}

GST_END_TEST;

/* Every tensor of two checkpoints, byte for byte. */
static void
assert_same_checkpoints (const gchar *a_path, const gchar *b_path)
{
  gchar why[512];
  GtStFile *a = gt_st_open (a_path, why, sizeof (why));
  GtStFile *b;
  gint i;

  fail_unless (a != NULL, "%s", why);
  b = gt_st_open (b_path, why, sizeof (why));
  fail_unless (b != NULL, "%s", why);
  fail_unless_equals_int (gt_st_num_tensors (a), gt_st_num_tensors (b));
  for (i = 0; i < gt_st_num_tensors (a); i++) {
    const GtStTensor *x = gt_st_tensor (a, i);
    const GtStTensor *y = gt_st_find (b, x->name);

    fail_unless (y != NULL, "%s missing", x->name);
    fail_unless (x->end - x->begin == y->end - y->begin);
    fail_unless (
        memcmp (gt_st_data (a, x), gt_st_data (b, y), x->end - x->begin) == 0,
        "%s differs", x->name);
  }
  fail_unless_equals_string (gt_st_metadata (a, "gst_train.step"),
      gt_st_metadata (b, "gst_train.step"));
  gt_st_close (a);
  gt_st_close (b);
}

/* Trains in batches of 4 on a 4-step schedule (given: by default it is
 * max-steps, which differs between the runs here) up to @max_steps, from
 * @resume_from (NULL: fresh weights), checkpointing to @checkpoint; the
 * run ended without error. */
static SinkRun *
train_to_step (const gchar *input, gint max_steps, const gchar *resume_from,
    const gchar *checkpoint)
{
  gchar *resume = resume_from ? g_strdup_printf (" resume-from=%s", resume_from)
                              : g_strdup ("");
  SinkRun *run = sink_run_printf ("%s ! batcher batch-size=4 ! " SINK
                                  "total-steps=4 max-steps=%d%s "
                                  "checkpoint-location=%s",
      input, max_steps, resume, checkpoint);

  fail_unless (run->error == NULL, "%s", run->error);
  g_free (resume);
  return run;
}

/* Trains @pipeline (its part up to the sink) with a @total-step schedule:
 * straight to @steps, and to @half then resumed to @steps; the two end
 * bitwise the same. The resumed run's warnings and infos go to @notes
 * (NULL: not kept). */
static void
assert_resume_exact (const gchar *pipeline, const gchar *resumed_pipeline,
    gint half, gint steps, gint total, GString *notes)
{
  const gchar *straight = fixture_scratch_path ("straight.safetensors", NULL);
  const gchar *first = fixture_scratch_path ("first.safetensors", NULL);
  const gchar *resumed = fixture_scratch_path ("resumed.safetensors", NULL);
  SinkRun *run;

  run = sink_run_printf ("%s ! " SINK "total-steps=%d max-steps=%d "
                         "checkpoint-location=%s",
      pipeline, total, steps, straight);
  fail_unless (run->error == NULL, "%s", run->error);
  sink_run_free (run);
  run = sink_run_printf ("%s ! " SINK "total-steps=%d max-steps=%d "
                         "checkpoint-location=%s",
      pipeline, total, half, first);
  fail_unless (run->error == NULL, "%s", run->error);
  sink_run_free (run);
  run = sink_run_printf ("%s ! " SINK "total-steps=%d max-steps=%d "
                         "resume-from=%s checkpoint-location=%s",
      resumed_pipeline, total, steps, first, resumed);
  fail_unless (run->error == NULL, "%s: %s", resumed_pipeline, run->error);
  if (notes != NULL)
    g_string_append (notes, run->notes->str);
  sink_run_free (run);
  assert_same_checkpoints (straight, resumed);
}

/* A list file @name beside the dataset, of its images in ImageFolder
 * order, the first @missing of them replaced by files that do not exist. */
static const gchar *
write_list (const gchar *name, gint classes, gint per_class, gint missing)
{
  const gchar *path = fixture_scratch_path (name, NULL);
  GString *text = g_string_new (NULL);
  gint c, i, n = 0;

  for (c = 0; c < classes; c++)
    for (i = 0; i < per_class; i++, n++) {
      if (n < missing)
        g_string_append_printf (text, "missing/%02d.jpg\t%d\n", n, c);
      else
        g_string_append_printf (text, "class%d/%02d.jpg\t%d\n", c, i, c);
    }
  fail_unless (g_file_set_contents (path, text->str, -1, NULL));
  g_string_free (text, TRUE);
  return path;
}

/* An exact resume does not read what the checkpoint already trained on:
 * the resumed run reads a list whose first samples (those of the first
 * run) do not exist, and neither warns about them nor differs. */
#define LIST_STAGE                                                             \
  "datasetsrc location=%s shuffle=false ! imagedec ! augment width=12 "        \
  "height=12 seed=4 ! batcher batch-size=4"

GST_START_TEST (test_resume_reads_nothing_trained_on)
{
  const gchar *whole, *holed;
  gchar *a, *b;
  GString *notes = g_string_new (NULL);

  use_dataset (2, 6);
  whole = write_list ("whole.txt", 2, 6, 0);
  holed = write_list ("holed.txt", 2, 6, 8);
  a = g_strdup_printf (LIST_STAGE, whole);
  b = g_strdup_printf (LIST_STAGE, holed);

  /* 2 steps (samples 0..7), then the last one: samples 8..11 */
  assert_resume_exact (a, b, 2, 3, 3, notes);
  fail_if (strstr (notes->str, "Skipping sample") != NULL, "%s", notes->str);
  g_string_free (notes, TRUE);

  g_free (a);
  g_free (b);
}

GST_END_TEST;

/* Exact across an epoch boundary, with echo before and after augment, after
 * batcher, without a shuffle buffer, with a fractional factor, two echos in
 * a row, and over more than one epoch of echo's output. */
GST_START_TEST (test_resume_is_exact_with_echo)
{
  const gchar *dir = use_dataset (2, 6);
  const gchar *cases[] = {
    /* echo on decoded images, before the crops */
    "echo factor=2 shuffle-buffer-size=5 seed=6 ! augment width=12 height=12 "
    "seed=4 ! batcher batch-size=4",
    /* on augmented images, a fractional factor */
    "augment width=12 height=12 seed=4 ! echo factor=1.5 "
    "shuffle-buffer-size=7 seed=6 ! batcher batch-size=4",
    /* no shuffle buffer: copies back to back */
    "echo factor=3 shuffle-buffer-size=0 ! augment width=12 height=12 seed=4 "
    "! batcher batch-size=4",
    /* two echos: the upstream one sends its whole window again */
    "echo factor=2 shuffle-buffer-size=4 seed=6 ! augment width=12 "
    "height=12 seed=4 ! echo factor=1.5 shuffle-buffer-size=5 seed=7 ! "
    "batcher batch-size=4",
    /* whole batches, behind a queue */
    "augment width=12 height=12 seed=4 ! batcher batch-size=4 ! echo "
    "factor=2 shuffle-buffer-size=3 seed=6 ! queue",
  };
  guint i;
  gint half;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *line = g_strdup_printf (
        "datasetsrc location=%s num-epochs=-1 seed=3 ! imagedec ! %s", dir,
        cases[i]);

    /* 12 images an epoch: 6 to 9 steps an epoch of echo's output */
    for (half = 1; half <= 7; half += 3)
      assert_resume_exact (line, line, half, 11, 12, NULL);
    g_free (line);
  }
}

GST_END_TEST;

GST_START_TEST (test_resume_is_exact)
{
  const gchar *dir = use_dataset (2, 6);
  gchar *input = input_stage (dir, 10);
  const gchar *straight = fixture_scratch_path ("straight.safetensors", NULL);
  const gchar *half = fixture_scratch_path ("half.safetensors", NULL);
  const gchar *resumed = fixture_scratch_path ("resumed.safetensors", NULL);
  gchar *contents;
  gsize length;
  SinkRun *run;

  /* 4 steps straight; 2 steps, a checkpoint, and 2 more after resuming,
   * which the resumed run says (issue 43: it said nothing) */
  sink_run_free (train_to_step (input, 4, NULL, straight));
  sink_run_free (train_to_step (input, 2, NULL, half));
  run = train_to_step (input, 4, half, resumed);
  {
    gchar *want = g_strdup_printf ("info: Resumed from step 2 of %s: the "
                                   "source goes on after the 8 samples it "
                                   "trained on.\n",
        half);

    fail_unless (strstr (run->notes->str, want) != NULL, "%s", run->notes->str);
    g_free (want);
  }
  sink_run_free (run);
  assert_same_checkpoints (straight, resumed);

  /* resuming a finished run trains nothing and rewrites nothing */
  fail_unless (g_file_get_contents (straight, &contents, &length, NULL));
  fail_unless (g_file_set_contents (half, contents, length, NULL));
  g_free (contents);
  run = train_to_step (input, 4, half, half);
  fail_unless_equals_int (run->stats->len, 0);
  fail_unless (strstr (run->notes->str,
                   "warning: Resumed at step 4, which is already max-steps 4: "
                   "nothing to train; raise max-steps to train on.")
          != NULL,
      "%s", run->notes->str);
  fail_if (strstr (run->notes->str, "info: Resumed from") != NULL, "%s",
      run->notes->str);
  sink_run_free (run);
  assert_same_checkpoints (straight, half);

  g_free (input);
}

GST_END_TEST;

/* max-steps ends an endless stream even through a queue and adaptive
 * echo, which do not pass an EOS event back down once downstream returned
 * EOS: the sink posts EOS itself. (If it did not, this test would hang.) */
GST_START_TEST (test_max_steps_ends_the_pipeline)
{
  SinkRun *run = sink_run_dataset (2, 4,
      "num-epochs=-1 ! imagedec ! echo mode=adaptive max-factor=4 ! augment "
      "width=12 height=12 ! batcher batch-size=4 ! queue max-size-buffers=2 "
      "! " SINK "max-steps=5 stats-interval=2");

  fail_unless_equals_uint64 (get_uint64 (last_stats (run), "step"), 5);
  sink_run_free (run);
}

GST_END_TEST;

/* After max-steps, pausing and playing again ends with EOS again, as
 * GstBaseSink does after an EOS event. */
GST_START_TEST (test_max_steps_eos_survives_pause)
{
  const gchar *dir = use_dataset (2, 4);
  gchar *launch = g_strdup_printf (
      "datasetsrc location=%s num-epochs=-1 ! imagedec ! augment width=12 "
      "height=12 ! batcher batch-size=4 ! queue ! " SINK "max-steps=2",
      dir);
  GstElement *pipeline = gst_parse_launch (launch, NULL);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *eos_before, *eos_after = NULL;
  GstStateChangeReturn paused = GST_STATE_CHANGE_FAILURE;

  g_free (launch);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  eos_before = gst_bus_timed_pop_filtered (
      bus, 60 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (eos_before && GST_MESSAGE_TYPE (eos_before) == GST_MESSAGE_EOS) {
    gst_element_set_state (pipeline, GST_STATE_PAUSED);
    paused = gst_element_get_state (pipeline, NULL, NULL, 10 * GST_SECOND);
    gst_element_set_state (pipeline, GST_STATE_PLAYING);
    eos_after = gst_bus_timed_pop_filtered (
        bus, 10 * GST_SECOND, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  }
  /* tear down before asserting: a failed check must not leave it running */
  gst_element_set_state (pipeline, GST_STATE_NULL);
  fail_unless (eos_before && GST_MESSAGE_TYPE (eos_before) == GST_MESSAGE_EOS);
  fail_unless_equals_int (paused, GST_STATE_CHANGE_SUCCESS);
  fail_unless (eos_after && GST_MESSAGE_TYPE (eos_after) == GST_MESSAGE_EOS,
      "no EOS after PAUSED -> PLAYING");
  gst_message_unref (eos_before);
  gst_message_unref (eos_after);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* echo factor=2 before decoding (A), before augment (B), after it (C),
 * and on batches (D): the sink trains on twice the images, half of them
 * fresh, wherever the echo sits. */
GST_START_TEST (test_fresh_counts_at_every_position)
{
  const gchar *dir = use_dataset (2, 8);
  const gchar *echo = "echo factor=2 shuffle-buffer-size=0";
  const gchar *stages[3] = { "imagedec", "augment width=12 height=12",
    "batcher batch-size=8" };
  gint i, k;

  for (i = 0; i < 4; i++) {
    /* the stages from decoding to batching, with the echo before stage i */
    GString *middle = g_string_new (NULL);
    const GstStructure *last;
    SinkRun *run;

    for (k = 0; k < 4; k++)
      g_string_append_printf (middle, "%s%s", k ? " ! " : "",
          k == i ? echo : stages[k < i ? k : k - 1]);
    run = sink_run_printf (
        "datasetsrc location=%s seed=3 ! %s ! " SINK, dir, middle->str);
    fail_unless (run->error == NULL, "%c: %s", 'A' + i, run->error);
    fail_unless (run->stats->len > 0);
    last = g_ptr_array_index (run->stats, run->stats->len - 1);
    fail_unless_equals_uint64 (get_uint64 (last, "step"), 4);
    fail_unless_equals_uint64 (get_uint64 (last, "images"), 32);
    fail_unless_equals_uint64 (get_uint64 (last, "fresh-images"), 16);
    fail_unless (get_double (last, "echo-factor") == 2.0);
    sink_run_free (run);
    g_string_free (middle, TRUE);
  }
}

GST_END_TEST;

/* lr-schedule=step over max-steps=10 (total-steps 0 takes max-steps):
 * times 0.1 every 3 steps, at 30%, 60% and 90% of the run. */
GST_START_TEST (test_step_schedule_follows_max_steps)
{
  SinkRun *run = sink_run_dataset (2, 2,
      "num-epochs=-1 ! imagedec ! augment width=12 height=12 ! batcher "
      "batch-size=4 ! " SINK
      "lr=0.01 lr-schedule=step max-steps=10 stats-interval=1");
  guint i;

  fail_unless (run->error == NULL, "%s", run->error);
  fail_unless_equals_int (run->stats->len, 10);
  for (i = 0; i < run->stats->len; i++) {
    gdouble lr = get_double (g_ptr_array_index (run->stats, i), "lr");
    gdouble expected = 0.01 * pow (0.1, i / 3);

    fail_unless (
        fabs (lr - expected) < 1e-6 * expected, "step %u: lr %g", i + 1, lr);
  }
  sink_run_free (run);
}

GST_END_TEST;

/* A trainer of @config; fails the test when there is none. */
static GtTrainer *
trainer_new_or_fail (const GtTrainerConfig *config)
{
  gchar why[512];
  GtTrainer *trainer = gt_trainer_new (config, why, sizeof (why));

  fail_unless (trainer != NULL, "%s", why);
  return trainer;
}

/* A resnet20 trainer, the sink's model here, of @num_classes classes on
 * batches of @batch_size images of @size x @size. */
static GtTrainer *
new_resnet20_trainer (gint num_classes, gint size, gint batch_size)
{
  GtTrainerConfig config;

  gt_trainer_config_init (&config);
  config.model = GT_MODEL_RESNET20;
  config.num_classes = num_classes;
  config.height = config.width = size;
  config.batch_size = batch_size;
  return trainer_new_or_fail (&config);
}

/* A checkpoint whose classifier ignores the image and favours class 0 by
 * a margin of 3: every prediction is class 0. */
static const gchar *
make_class0_checkpoint (void)
{
  GtTrainer *trainer;
  GtStFile *file;
  GtStWriter *writer;
  gchar why[512];
  const gchar *base = fixture_scratch_path ("base.safetensors", NULL);
  const gchar *path = fixture_scratch_path ("class0.safetensors", NULL);
  GPtrArray *copies = g_ptr_array_new_with_free_func (g_free);
  gint i;

  trainer = new_resnet20_trainer (2, 12, 2);
  fail_unless (gt_trainer_save (trainer, base, 1) == GT_OK);
  gt_trainer_free (trainer);

  file = gt_st_open (base, why, sizeof (why));
  fail_unless (file != NULL, "%s", why);
  writer = gt_st_writer_new ();
  for (i = 0; i < gt_st_num_tensors (file); i++) {
    const GtStTensor *t = gt_st_tensor (file, i);
    gsize bytes = t->end - t->begin;
    guint8 *copy = g_memdup2 (gt_st_data (file, t), bytes);

    if (strcmp (t->name, "fc.weight") == 0)
      memset (copy, 0, bytes);
    if (strcmp (t->name, "fc.bias") == 0) {
      gfloat bias[2] = { 3.f, 0.f };

      memcpy (copy, bias, sizeof (bias));
    }
    g_ptr_array_add (copies, copy);
    gt_st_writer_add (writer, t->name, t->dtype, t->ndim, t->shape, copy);
  }
  fail_unless (gt_st_writer_write (writer, path, why, sizeof (why)) == 0);
  gt_st_writer_free (writer);
  gt_st_close (file);
  g_ptr_array_unref (copies);
  return path;
}

GST_START_TEST (test_eval_on_a_known_checkpoint)
{
  const gchar *dir = use_dataset (2, 3); /* 3 of class 0, 3 of class 1 */
  gchar *extra = g_strdup_printf ("%s/class0/extra.jpg", dir);
  const gchar *checkpoint;
  SinkRun *run;
  gdouble expected_loss;

  /* a fourth image in class 0: top-1 = 4 / 7 */
  fixture_write_jpeg (extra, 12, 12, 999);
  checkpoint = make_class0_checkpoint ();
  run = sink_run_printf ("datasetsrc location=%s shuffle=false ! imagedec ! "
                         "augment width=12 height=12 crop=center ! "
                         "batcher batch-size=4 drop-remainder=false ! " SINK
                         "mode=eval label-smoothing=0 num-classes=2 "
                         "resume-from=%s",
      dir, checkpoint);
  fail_unless (run->error == NULL, "%s", run->error);
  fail_unless (run->eval != NULL);
  fail_unless_equals_uint64 (get_uint64 (run->eval, "images"), 7);
  fail_unless (fabs (get_double (run->eval, "top1") - 4.0 / 7) < 1e-9);
  fail_unless (get_double (run->eval, "top5") == 1.0);
  /* -log softmax: log(1 + e^-3) for class 0, log(1 + e^3) for class 1 */
  expected_loss = (4 * log1p (exp (-3.0)) + 3 * log1p (exp (3.0))) / 7;
  fail_unless (fabs (get_double (run->eval, "loss") - expected_loss) < 1e-5,
      "loss %g, expected %g", get_double (run->eval, "loss"), expected_loss);
  sink_run_free (run);

  g_free (extra);
}

GST_END_TEST;

/* Checks that @run failed with an error that says @text; frees @run. */
static void
assert_error_says (SinkRun *run, const gchar *text)
{
  fail_unless (run->error && strstr (run->error, text), "%s", run->error);
  sink_run_free (run);
}

/* A resume with the wrong model says which model the file holds, first:
 * from its tensors' names and shapes when it has no gst-train metadata
 * (a state_dict saved from PyTorch), with the property to set. */
GST_START_TEST (test_resume_names_the_model)
{
  const gchar *dir = use_dataset (2, 2);
  gchar *input = input_stage (dir, 1);
  const gchar *checkpoint = make_class0_checkpoint (); /* resnet20, 2 */
  gchar *want;

  want = g_strdup_printf ("Cannot resume from \"%s\": it holds a resnet20, "
                          "not a resnet32. Set model=resnet20 to use it. (",
      checkpoint);
  assert_error_says (
      sink_run_printf ("%s ! batcher batch-size=4 ! cudatrainsink "
                       "model=resnet32 device=cpu num-classes=2 resume-from=%s",
          input, checkpoint),
      want);
  g_free (want);
  want = g_strdup_printf ("Cannot resume from \"%s\": it holds a resnet20 "
                          "with 2 classes, not 3 (this run's classes: "
                          "num-classes, else the dataset's). (",
      checkpoint);
  assert_error_says (
      sink_run_printf ("%s ! batcher batch-size=4 ! cudatrainsink "
                       "model=resnet20 device=cpu num-classes=3 resume-from=%s",
          input, checkpoint),
      want);
  g_free (want);
  want = g_strdup_printf ("Cannot resume from \"%s\": it holds a resnet20 "
                          "with 2 classes, not a resnet50 with 3. Set "
                          "model=resnet20 to use it. (",
      checkpoint);
  assert_error_says (
      sink_run_printf ("%s ! batcher batch-size=4 ! cudatrainsink "
                       "model=resnet50 device=cpu num-classes=3 resume-from=%s",
          input, checkpoint),
      want);
  g_free (want);
  g_free (input);
}

GST_END_TEST;

/* A run whose data ends before a step trains nothing: an error that says
 * why, and no checkpoint (issue 43: 100 images in batches of 128 said
 * "checkpoint written" and ended as a run that trained). batcher says that
 * it dropped every image. */
GST_START_TEST (test_nothing_trained_is_an_error)
{
  const gchar *dir = use_dataset (2, 3);
  const gchar *checkpoint = test_checkpoint ();
  gchar *input = input_stage (dir, 1);
  SinkRun *run;

  /* 6 images, batches of 8: batcher drops them all */
  run = sink_run_printf ("%s ! batcher batch-size=8 ! " SINK
                         "checkpoint-location=%s",
      input, checkpoint);
  fail_unless (run->error
          && strstr (run->error,
              "End of stream before the first batch: nothing was trained, "
              "and no checkpoint was written. The source's epoch holds 6 "
              "images, fewer than one batch of 8, and batcher drops a last "
              "partial batch unless drop-remainder=false: set that, or "
              "batch-size=6 or less."),
      "%s", run->error);
  fail_unless (strstr (run->notes->str,
                   "warning: Dropped all 6 images of the stream at its end: "
                   "fewer than batch-size=8 arrived")
          != NULL,
      "%s", run->notes->str);
  fail_if (g_file_test (checkpoint, G_FILE_TEST_EXISTS));
  fail_unless_equals_int (run->stats->len, 0);
  sink_run_free (run);

  /* an evaluation of nothing */
  assert_error_says (
      sink_run_printf (
          "%s ! batcher batch-size=8 ! " SINK "mode=eval num-classes=2", input),
      "End of stream before the first batch: nothing was evaluated.");

  /* drop-remainder=false: the 6 images are one step */
  run =
      sink_run_printf ("%s ! batcher batch-size=8 drop-remainder=false ! " SINK
                       "checkpoint-location=%s",
          input, checkpoint);
  fail_unless_equals_uint64 (get_uint64 (last_stats (run), "step"), 1);
  fail_unless_equals_uint64 (checkpoint_step (checkpoint), 1);
  sink_run_free (run);
  g_free (input);
}

GST_END_TEST;

GST_START_TEST (test_errors)
{
  const gchar *dir = use_dataset (3, 2);
  gchar *input = input_stage (dir, 1);
  const gchar *checkpoint = test_checkpoint ();
  SinkRun *run;

  /* types other than the template's: the link itself is refused */
  {
    GError *err = NULL;
    GstElement *pipeline = gst_parse_launch (
        "fakesrc ! capsfilter caps=\"other/tensors,format=static,"
        "num_tensors=2,types=(string)\\\"float32,int32\\\",framerate=0/1\" "
        "! " SINK,
        &err);

    fail_unless (err != NULL && strstr (err->message, "could not link"));
    g_error_free (err);
    gst_clear_object (&pipeline);
  }
  /* dimensions it cannot take (2 channels) */
  assert_error_says (
      sink_run ("fakesrc num-buffers=1 sizetype=fixed sizemax=96 ! "
                "capsfilter caps=\"other/tensors,format=static,"
                "num_tensors=2,types=(string)\\\"uint8,int32\\\","
                "dimensions=(string)\\\"2:2:2:2,2\\\",framerate=0/1\" ! " SINK
                "num-classes=2"),
      "uint8 images");
  /* planar batches (batcher layout=nchw): named as such */
  assert_error_says (
      sink_run_printf ("%s ! batcher batch-size=6 layout=nchw ! " SINK
                       "num-classes=2",
          input),
      "cudatrainsink takes NHWC batches (batcher layout=nhwc); got "
      "dimensions 12:12:3:6,6");

  /* labels outside the classes: 3 classes, a 2-class model */
  assert_error_says (
      sink_run_printf (
          "%s ! batcher batch-size=6 ! " SINK "num-classes=2", input),
      "outside the model's 2");

  /* a loss that goes to NaN or infinity: named, the last checkpoint kept */
  g_free (input);
  input = input_stage (dir, 50);
  run = sink_run_printf ("%s ! batcher batch-size=6 ! " SINK
                         "lr=100000 lr-schedule=constant "
                         "checkpoint-interval=1 checkpoint-location=%s",
      input, checkpoint);
  fail_unless (run->error && strstr (run->error, "diverged")
          && strstr (run->error, "step "),
      "%s", run->error);
  {
    gchar why[512];
    GtStFile *file = gt_st_open (checkpoint, why, sizeof (why));
    const gchar *step_text = strstr (run->error, "step ") + 5;

    fail_unless (file != NULL, "%s", why);
    fail_unless_equals_int (
        atoi (gt_st_metadata (file, "gst_train.step")), atoi (step_text) - 1);
    gt_st_close (file);
  }
  sink_run_free (run);
  /* a missing resume file, and one of another model */
  assert_error_says (sink_run_printf ("%s ! batcher batch-size=6 ! " SINK
                                      "resume-from=%s/none.safetensors",
                         input, dir),
      "none.safetensors");
  /* the model it holds, first, rather than the tensors that differ */
  {
    gchar *want = g_strdup_printf ("Cannot resume from \"%s\": it holds a "
                                   "resnet20, not a resnet32. Set "
                                   "model=resnet20 to use it. (",
        checkpoint);

    assert_error_says (
        sink_run_printf ("%s ! batcher batch-size=6 ! cudatrainsink "
                         "model=resnet32 device=cpu resume-from=%s",
            input, checkpoint),
        want);
    g_free (want);
  }

  g_free (input);
}

GST_END_TEST;

/* Snapshots every 8 fresh images with echo factor 2: 32 fresh images give
 * 4 snapshots, each noted with twice as many images as fresh ones. */
GST_START_TEST (test_snapshots_count_fresh_images)
{
  const gchar *dir = use_dataset (2, 8);
  const gchar *snapshots = fixture_scratch_path ("snapshots", NULL);
  const gchar *metrics = fixture_scratch_path ("metrics.jsonl", NULL);
  SinkRun *run = sink_run_printf (
      "datasetsrc location=%s num-epochs=2 seed=3 ! imagedec ! echo factor=2 "
      "shuffle-buffer-size=0 ! augment width=12 height=12 ! batcher "
      "batch-size=4 ! " SINK
      "snapshot-interval=8 snapshot-location=%s metrics-location=%s",
      dir, snapshots, metrics);
  gchar *contents, **lines;
  guint64 fresh;
  gint found = 0, i;

  fail_unless (run->error == NULL, "%s", run->error);
  for (fresh = 8; fresh <= 32; fresh += 8) {
    gchar *name = g_strdup_printf (
        "%s/fresh-%012" G_GUINT64_FORMAT ".safetensors", snapshots, fresh);

    fail_unless (g_file_test (name, G_FILE_TEST_EXISTS), "%s missing", name);
    g_free (name);
  }
  fail_unless (g_file_get_contents (metrics, &contents, NULL, NULL));
  lines = g_strsplit (contents, "\n", -1);
  for (i = 0; lines[i]; i++)
    if (strstr (lines[i], "\"snapshot\"")) {
      guint64 expected = 8 * (found + 1);
      gchar *want = g_strdup_printf ("\"mark\": %" G_GUINT64_FORMAT
                                     ", \"fresh-images\": %" G_GUINT64_FORMAT
                                     ", \"images\": %" G_GUINT64_FORMAT,
          expected, expected, 2 * expected);

      fail_unless (strstr (lines[i], want) != NULL, "%s", lines[i]);
      g_free (want);
      found++;
    }
  fail_unless_equals_int (found, 4);
  g_strfreev (lines);
  g_free (contents);
  sink_run_free (run);
}

GST_END_TEST;

/* A last batch of one image at a 1x1 last stage cannot train (batch-norm
 * sees one value per channel): it is dropped with a warning, and the run
 * ends normally with its checkpoint. */
GST_START_TEST (test_too_small_last_batch_is_dropped)
{
  const gchar *dir = use_dataset (1, 5);
  const gchar *checkpoint = test_checkpoint ();
  SinkRun *run = sink_run_printf (
      "datasetsrc location=%s ! imagedec ! augment width=4 height=4 ! "
      "batcher batch-size=4 drop-remainder=false ! " SINK
      "num-classes=2 checkpoint-location=%s",
      dir, checkpoint);
  const GstStructure *last = last_stats (run);

  fail_unless (run->error == NULL, "%s", run->error);
  fail_unless_equals_uint64 (get_uint64 (last, "step"), 1);
  fail_unless_equals_uint64 (get_uint64 (last, "images"), 4);
  fail_unless (strstr (run->notes->str,
                   "warning: Dropped a batch of 1 images: batch-norm needs "
                   "at least 2 to train at this image size.\n")
          != NULL,
      "no warning for the dropped batch: \"%s\"", run->notes->str);
  fail_unless_equals_uint64 (checkpoint_step (checkpoint), 1);
  sink_run_free (run);
}

GST_END_TEST;

/* The stats of @run at global step @step (stats-interval=1). */
static const GstStructure *
stats_at_step (SinkRun *run, guint64 step)
{
  guint i;

  for (i = 0; i < run->stats->len; i++)
    if (get_uint64 (g_ptr_array_index (run->stats, i), "step") == step)
      return g_ptr_array_index (run->stats, i);
  fail ("no train-stats at step %" G_GUINT64_FORMAT, step);
  return NULL;
}

/* After a resume the epoch counts on from the checkpoint's fresh images:
 * the first train-stats after resuming at step 3 says what a run that
 * went straight on says at step 4. */
#define EPOCH_RUN                                                              \
  "%s ! batcher batch-size=4 ! " SINK "total-steps=6 max-steps=%d "            \
  "stats-interval=1 "

GST_START_TEST (test_epoch_goes_on_after_resume)
{
  const gchar *dir = use_dataset (2, 6);
  gchar *input = input_stage (dir, 10);
  const gchar *straight = fixture_scratch_path ("straight.safetensors", NULL);
  const gchar *half = fixture_scratch_path ("half.safetensors", NULL);
  SinkRun *whole, *half_run, *rest;
  gdouble expected, resumed;

  whole =
      sink_run_printf (EPOCH_RUN "checkpoint-location=%s", input, 6, straight);
  half_run =
      sink_run_printf (EPOCH_RUN "checkpoint-location=%s", input, 3, half);
  rest = sink_run_printf (
      EPOCH_RUN "checkpoint-location=%s resume-from=%s", input, 6, half, half);
  fail_unless (whole->error == NULL, "%s", whole->error);
  fail_unless (rest->error == NULL, "%s", rest->error);
  fail_unless (rest->stats->len > 0);
  fail_unless_equals_uint64 (
      get_uint64 (g_ptr_array_index (rest->stats, 0), "step"), 4);
  expected = get_double (stats_at_step (whole, 4), "epoch");
  resumed = get_double (g_ptr_array_index (rest->stats, 0), "epoch");
  /* 12 images an epoch, 16 seen by step 4 */
  fail_unless (fabs (expected - 16.0 / 12) < 1e-9, "epoch %g", expected);
  fail_unless (fabs (resumed - expected) < 1e-6, "resumed epoch %g, not %g",
      resumed, expected);
  fail_unless (fabs (get_double (last_stats (rest), "epoch")
                   - get_double (last_stats (whole), "epoch"))
      < 1e-6);
  sink_run_free (whole);
  sink_run_free (half_run);
  sink_run_free (rest);
  g_free (input);
}

GST_END_TEST;

/* The step of checkpoint @path. */
static guint64
checkpoint_step (const gchar *path)
{
  gchar why[512];
  GtStFile *file = gt_st_open (path, why, sizeof (why));
  guint64 step;

  fail_unless (file != NULL, "%s", why);
  step = g_ascii_strtoull (gt_st_metadata (file, "gst_train.step"), NULL, 10);
  gt_st_close (file);
  return step;
}

/* An endless pipeline with 200 batches of room before the sink, named
 * "sink", checkpointing to @checkpoint. */
static GstElement *
endless_pipeline (const gchar *dir, const gchar *checkpoint)
{
  gchar *launch = g_strdup_printf (
      "datasetsrc location=%s num-epochs=-1 ! imagedec ! augment width=12 "
      "height=12 ! batcher batch-size=4 ! queue max-size-buffers=200 "
      "max-size-bytes=0 max-size-time=0 ! " SINK
      "name=sink stats-interval=1 checkpoint-location=%s",
      dir, checkpoint);
  GstElement *pipeline = gst_parse_launch (launch, NULL);

  fail_unless (pipeline != NULL);
  g_free (launch);
  return pipeline;
}

/* The step of train-stats @message; 0 for any other message. */
static guint64
message_step (GstMessage *message)
{
  const GstStructure *s = gst_message_get_structure (message);
  guint64 step = 0;

  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ELEMENT
      && gst_structure_has_name (s, "train-stats"))
    gst_structure_get_uint64 (s, "step", &step);
  return step;
}

/* Collects the text of warning messages in a GString (under its own
 * lock: the sync handler runs in the posting thread). */
static GMutex notes_lock;

static GstBusSyncReply
collect_warnings (GstBus *bus, GstMessage *message, gpointer notes)
{
  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_WARNING) {
    GError *err = NULL;

    gst_message_parse_warning (message, &err, NULL);
    g_mutex_lock (&notes_lock);
    g_string_append_printf (notes, "%s\n", err->message);
    g_mutex_unlock (&notes_lock);
    g_error_free (err);
  }
  return GST_BUS_PASS;
}

/* Holds the sink's fourth batch at its pad, so that "stop" comes after a
 * known number of batches whatever the machine's load (a stop emitted on
 * the third step's message raced steps of a few milliseconds). */
typedef struct
{
  GMutex lock;
  GCond cond;
  guint batches;
  gboolean held;
} StopHold;

#define STOP_AFTER_BATCHES 3

static GstPadProbeReturn
hold_fourth_batch (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  StopHold *hold = user_data;
  GstPadProbeReturn ret = GST_PAD_PROBE_PASS;

  g_mutex_lock (&hold->lock);
  if (++hold->batches > STOP_AFTER_BATCHES) {
    hold->held = TRUE;
    g_cond_signal (&hold->cond);
    ret = GST_PAD_PROBE_OK; /* blocks here until the probe goes */
  }
  g_mutex_unlock (&hold->lock);
  return ret;
}

/* "stop" from the application's thread: the run ends with EOS within two
 * steps of it, without the 200 batches queued, the checkpoint is at the
 * last step trained, and setting it to NULL after that says nothing more.
 * The stop comes while the sink holds STOP_AFTER_BATCHES batches and waits
 * for the next. */
GST_START_TEST (test_stop_signal)
{
  const gchar *dir = use_dataset (2, 4);
  const gchar *checkpoint = test_checkpoint ();
  GstElement *pipeline = endless_pipeline (dir, checkpoint);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  GstBus *bus = gst_element_get_bus (pipeline);
  guint64 emitted_at = STOP_AFTER_BATCHES, last_step = 0;
  GString *notes = g_string_new (NULL);
  StopHold hold = { 0 };
  GstMessage *message;
  gboolean eos = FALSE;
  gulong probe;

  g_mutex_init (&hold.lock);
  g_cond_init (&hold.cond);
  probe = gst_pad_add_probe (pad,
      GST_PAD_PROBE_TYPE_BLOCK | GST_PAD_PROBE_TYPE_BUFFER, hold_fourth_batch,
      &hold, NULL);
  gst_bus_set_sync_handler (bus, collect_warnings, notes, NULL);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  g_mutex_lock (&hold.lock);
  while (!hold.held)
    g_cond_wait (&hold.cond, &hold.lock);
  g_mutex_unlock (&hold.lock);
  g_signal_emit_by_name (sink, "stop");
  gst_pad_remove_probe (pad, probe);
  while ((message = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
              GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT))) {
    GstMessageType type = GST_MESSAGE_TYPE (message);
    guint64 step = message_step (message);

    gst_message_unref (message);
    if (type != GST_MESSAGE_ELEMENT) {
      eos = type == GST_MESSAGE_EOS;
      break;
    }
    last_step = MAX (last_step, step);
    if (last_step > emitted_at + 2)
      break; /* the stop did not take: the asserts below say so */
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_bus_set_sync_handler (bus, NULL, NULL, NULL);
  fail_unless (eos, "no EOS after stop");
  /* it ended at a step boundary: nothing to say when it stops */
  fail_unless_equals_string (notes->str, "");
  g_string_free (notes, TRUE);
  fail_unless (last_step <= emitted_at + 2,
      "stop at step %" G_GUINT64_FORMAT ", the last step %" G_GUINT64_FORMAT,
      emitted_at, last_step);
  fail_unless_equals_uint64 (checkpoint_step (checkpoint), last_step);
  g_mutex_clear (&hold.lock);
  g_cond_clear (&hold.cond);
  gst_object_unref (pad);
  gst_object_unref (sink);
  gst_object_unref (bus);
  gst_object_unref (pipeline);

  /* an endless evaluation ends at stop too, with its result so far */
  {
    gchar *launch = g_strdup_printf (
        "datasetsrc location=%s num-epochs=-1 ! imagedec ! augment "
        "width=12 height=12 ! batcher batch-size=4 ! queue ! " SINK
        "name=sink mode=eval resume-from=%s",
        dir, checkpoint);
    gboolean result = FALSE;

    pipeline = gst_parse_launch (launch, NULL);
    g_free (launch);
    sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
    bus = gst_element_get_bus (pipeline);
    gst_element_set_state (pipeline, GST_STATE_PLAYING);
    g_signal_emit_by_name (sink, "stop");
    eos = FALSE;
    while ((message = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
                GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT))) {
      GstMessageType type = GST_MESSAGE_TYPE (message);

      if (type == GST_MESSAGE_ELEMENT)
        result |= gst_structure_has_name (
            gst_message_get_structure (message), "eval-result");
      gst_message_unref (message);
      if (type != GST_MESSAGE_ELEMENT) {
        eos = type == GST_MESSAGE_EOS;
        break;
      }
    }
    gst_element_set_state (pipeline, GST_STATE_NULL);
    fail_unless (eos && result, "eval: EOS %d, eval-result %d", eos, result);
    gst_object_unref (sink);
    gst_object_unref (bus);
    gst_object_unref (pipeline);
  }
}

GST_END_TEST;

/* Set to NULL mid-run without EOS (gst-launch-1.0 without -e): the steps
 * trained are checkpointed, and a warning says where. */
GST_START_TEST (test_stop_without_eos_checkpoints)
{
  const gchar *checkpoint = test_checkpoint ();
  GstElement *pipeline = endless_pipeline (use_dataset (2, 4), checkpoint);
  GstBus *bus = gst_element_get_bus (pipeline);
  GString *notes = g_string_new (NULL);
  GstMessage *message;
  guint64 step = 0;
  const gchar *said;
  gchar *want;

  gst_bus_set_sync_handler (bus, collect_warnings, notes, NULL);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  while (step < 3
      && (message = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
              GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT))) {
    step = GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR
        ? G_MAXUINT64
        : message_step (message);
    gst_message_unref (message);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_bus_set_sync_handler (bus, NULL, NULL, NULL);
  fail_unless (step >= 3 && step != G_MAXUINT64);
  fail_unless (g_file_test (checkpoint, G_FILE_TEST_EXISTS), "%s", notes->str);
  step = checkpoint_step (checkpoint);
  fail_unless (step >= 3);
  want = g_strdup_printf (
      "Stopped without end-of-stream at step %" G_GUINT64_FORMAT
      ": checkpoint written to %s (use "
      "gst-launch-1.0 -e to stop at a step boundary).",
      step, checkpoint);
  said = strstr (notes->str, want);
  fail_unless (said != NULL, "%s", notes->str);
  g_free (want);
  g_string_free (notes, TRUE);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* A checkpoint folder that is missing is made at start, as
 * tensorboard-logdir's is, and so is the metrics file's; one that cannot
 * be used (a file) is an error at start, naming the folder; one that goes
 * away during the run makes the checkpoint's write error carry the OS
 * reason; the trainer's own save error says it too. */
GST_START_TEST (test_checkpoint_folder)
{
  const gchar *dir = use_dataset (2, 4);
  const gchar *folder = fixture_scratch_path ("gone", NULL);
  const gchar *checkpoint =
      fixture_scratch_path ("gone", "ck.safetensors", NULL);
  gchar *input = input_stage (dir, 1);
  GstElement *pipeline, *sink;
  GtTrainer *trainer;
  GstMessage *message;
  GstBus *bus;
  GError *err = NULL;
  gchar *want;
  SinkRun *run;

  {
    const gchar *made = fixture_scratch_path ("made", "deeper", NULL);
    gchar *made_checkpoint = g_build_filename (made, "ck.safetensors", NULL);
    gchar *made_metrics = g_build_filename (made, "m", "run.jsonl", NULL);

    run = sink_run_printf ("%s ! batcher batch-size=4 ! " SINK
                           "checkpoint-location=%s metrics-location=%s",
        input, made_checkpoint, made_metrics);
    fail_unless (run->error == NULL, "%s", run->error);
    fail_unless (g_file_test (made_checkpoint, G_FILE_TEST_IS_REGULAR));
    fail_unless (g_file_test (made_metrics, G_FILE_TEST_IS_REGULAR));
    sink_run_free (run);
    g_free (made_checkpoint);
    g_free (made_metrics);
  }

  fail_unless (g_file_set_contents (folder, "not a folder", -1, NULL));
  run = sink_run_printf ("%s ! batcher batch-size=4 ! " SINK
                         "checkpoint-location=%s",
      input, checkpoint);
  want = g_strdup_printf ("in folder \"%s\": ", folder);
  fail_unless (run->error && strstr (run->error, want), "%s", run->error);
  fail_unless_equals_int (run->stats->len, 0);
  g_free (want);
  sink_run_free (run);
  fail_unless (g_unlink (folder) == 0);

  /* there at start, gone before the final checkpoint */
  fail_unless (g_mkdir (folder, 0755) == 0);
  pipeline = endless_pipeline (dir, checkpoint);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  while ((message = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
              GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT))) {
    if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR)
      gst_message_parse_error (message, &err, NULL);
    if (message_step (message) == 1) {
      fail_unless (g_rmdir (folder) == 0);
      g_signal_emit_by_name (sink, "stop");
    }
    if (GST_MESSAGE_TYPE (message) != GST_MESSAGE_ELEMENT) {
      gst_message_unref (message);
      break;
    }
    gst_message_unref (message);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  fail_unless (err != NULL, "no error for a checkpoint that cannot be written");
  fail_unless (strstr (err->message, "Could not write checkpoint")
          && strstr (err->message, checkpoint)
          && strstr (err->message, g_strerror (ENOENT)),
      "%s", err->message);
  g_error_free (err);
  gst_object_unref (sink);
  gst_object_unref (bus);
  gst_object_unref (pipeline);

  /* the trainer's own message */
  trainer = new_resnet20_trainer (2, 12, 2);
  fail_unless_equals_int (
      gt_trainer_save (trainer, checkpoint, 0), GT_ERROR_IO);
  fail_unless (strstr (gt_trainer_error (trainer), checkpoint)
          && strstr (gt_trainer_error (trainer), g_strerror (ENOENT)),
      "%s", gt_trainer_error (trainer));
  gt_trainer_free (trainer);

  g_free (input);
}

GST_END_TEST;

/* One class: a warning, and the run goes on. device=auto on a machine
 * without the NVIDIA driver: training on the CPU is an info message, not
 * a warning; evaluating on it says "Evaluating". */
GST_START_TEST (test_one_class_and_cpu_notes)
{
  const gchar *dir = use_dataset (1, 4);
  gchar *input = input_stage (dir, 1);
  SinkRun *run = sink_run_printf (
      "%s ! batcher batch-size=4 ! cudatrainsink model=resnet20 "
      "num-threads=2",
      input);

  fail_unless (run->error == NULL, "%s", run->error);
  fail_unless (strstr (run->notes->str,
                   "warning: The dataset has one class: there is nothing to "
                   "learn")
          != NULL,
      "%s", run->notes->str);
  if (!g_file_test ("/proc/driver/nvidia/version", G_FILE_TEST_EXISTS)
      && !g_file_test ("/dev/nvidiactl", G_FILE_TEST_EXISTS)) {
    fail_unless (
        strstr (run->notes->str, "info: Training on the CPU: ") != NULL, "%s",
        run->notes->str);
    fail_if (strstr (run->notes->str, "warning: Training on the CPU"));
  }
  sink_run_free (run);
  /* an evaluation does not train (issue 43: it said "Training on") */
  run = sink_run_printf ("%s ! batcher batch-size=4 ! cudatrainsink "
                         "model=resnet20 num-threads=2 mode=eval",
      input);
  fail_unless (run->error == NULL, "%s", run->error);
  if (!g_file_test ("/proc/driver/nvidia/version", G_FILE_TEST_EXISTS)
      && !g_file_test ("/dev/nvidiactl", G_FILE_TEST_EXISTS))
    fail_unless (
        strstr (run->notes->str, "info: Evaluating on the CPU: ") != NULL
            && strstr (run->notes->str, "Training on the CPU") == NULL,
        "%s", run->notes->str);
  sink_run_free (run);
  g_free (input);
}

GST_END_TEST;

/* Sets @value (initialised to @spec's type) to a value of @spec other
 * than its default: the largest, the last enum value, the other boolean,
 * a string. */
static void
set_other_than_default (GParamSpec *spec, GValue *value)
{
  if (G_IS_PARAM_SPEC_ENUM (spec)) {
    GEnumClass *enums = G_PARAM_SPEC_ENUM (spec)->enum_class;

    g_value_set_enum (value, enums->values[enums->n_values - 1].value);
  } else if (G_IS_PARAM_SPEC_BOOLEAN (spec))
    g_value_set_boolean (value, !G_PARAM_SPEC_BOOLEAN (spec)->default_value);
  else if (G_IS_PARAM_SPEC_STRING (spec))
    g_value_set_string (value, "1,2,3");
  else if (G_IS_PARAM_SPEC_INT (spec))
    g_value_set_int (value, G_PARAM_SPEC_INT (spec)->maximum);
  else if (G_IS_PARAM_SPEC_UINT (spec))
    g_value_set_uint (value, G_PARAM_SPEC_UINT (spec)->maximum);
  else if (G_IS_PARAM_SPEC_UINT64 (spec))
    g_value_set_uint64 (value, G_PARAM_SPEC_UINT64 (spec)->maximum);
  else if (G_IS_PARAM_SPEC_DOUBLE (spec))
    g_value_set_double (value, G_PARAM_SPEC_DOUBLE (spec)->maximum);
  else
    fail ("%s: a type this test does not know", spec->name);
}

/* Every property reads back its default, then what was set, whatever its
 * type: the sink keeps its properties by table, not by a case for each.
 * Read-only ones read back their default before the sink starts. */
GST_START_TEST (test_properties_read_back)
{
  GstElement *sink = gst_element_factory_make ("cudatrainsink", NULL);
  GParamSpec **specs;
  guint n, i;

  fail_unless (sink != NULL);
  specs = g_object_class_list_properties (G_OBJECT_GET_CLASS (sink), &n);
  for (i = 0; i < n; i++) {
    GParamSpec *spec = specs[i];
    GValue value = G_VALUE_INIT, back = G_VALUE_INIT;

    if (spec->owner_type != G_OBJECT_TYPE (sink))
      continue;
    g_value_init (&value, spec->value_type);
    g_value_init (&back, spec->value_type);
    g_object_get_property (G_OBJECT (sink), spec->name, &back);
    fail_unless (g_param_value_defaults (spec, &back), "%s", spec->name);
    /* read-only (rank, world-size, global-batch-size): the default alone */
    if (!(spec->flags & G_PARAM_WRITABLE)) {
      g_value_unset (&value);
      g_value_unset (&back);
      continue;
    }
    set_other_than_default (spec, &value);
    fail_if (g_param_value_defaults (spec, &value), "%s", spec->name);
    g_object_set_property (G_OBJECT (sink), spec->name, &value);
    g_object_get_property (G_OBJECT (sink), spec->name, &back);
    fail_unless (
        g_param_values_cmp (spec, &value, &back) == 0, "%s", spec->name);
    g_value_unset (&value);
    g_value_unset (&back);
  }
  g_free (specs);
  gst_object_unref (sink);
}

GST_END_TEST;

/* Batches reach the sink in its own pool (the trainer's batch memory:
 * page-locked exactly when a CUDA device is usable), with and without echo
 * at position D; the busy time is a step's computation, within its time. */
GST_START_TEST (test_batches_in_sink_memory)
{
  const gchar *dir = use_dataset (2, 8);
  const gchar *positions[] = { "", "echo factor=2 shuffle-buffer-size=4 ! " };
  char why[256];
  gdouble pinned = gt_cuda_device_count (why, sizeof (why)) > 0 ? 1.0 : 0.0;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (positions); i++) {
    SinkRun *run = sink_run_printf (
        "datasetsrc location=%s num-epochs=-1 seed=3 ! imagedec ! augment "
        "width=12 height=12 ! batcher batch-size=4 ! %squeue ! " SINK
        "max-steps=6 stats-interval=3",
        dir, positions[i]);
    const GstStructure *stats = last_stats (run);

    fail_unless_equals_float (get_double (stats, "sink-memory-fraction"), 1.0);
    fail_unless_equals_float (get_double (stats, "pinned-fraction"), pinned);
    fail_unless (get_double (stats, "busy-time") > 0
            && get_double (stats, "busy-time")
                <= get_double (stats, "step-time"),
        "busy %g, step %g", get_double (stats, "busy-time"),
        get_double (stats, "step-time"));
    sink_run_free (run);
  }
}

GST_END_TEST;

/* A batch of @n 12x12 RGB images (a test pattern) with labels 0 and 1. */
static GstBuffer *
make_batch (gint n)
{
  GstBuffer *buffer = gst_buffer_new ();
  guint8 *images = g_malloc (n * 12 * 12 * 3);
  gint32 *labels = g_new (gint32, n);
  gint i;

  for (i = 0; i < n * 12 * 12 * 3; i++)
    images[i] = (guint8)(i * 7);
  for (i = 0; i < n; i++)
    labels[i] = i % 2;
  gst_buffer_append_memory (buffer,
      gst_memory_new_wrapped (0, images, n * 432, 0, n * 432, images, g_free));
  gst_buffer_append_memory (buffer,
      gst_memory_new_wrapped (0, labels, n * 4, 0, n * 4, labels, g_free));
  return buffer;
}

/* After an error (a non-finite loss: the images scaled to infinity), the
 * EOS that follows (a source sends one after its flow error) writes no
 * checkpoint: the last one stays. */
GST_START_TEST (test_no_checkpoint_after_an_error)
{
  static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE (
      "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
  const gchar *checkpoint = test_checkpoint ();
  GstElement *sink = gst_element_factory_make ("cudatrainsink", NULL);
  GstCaps *caps = gst_caps_from_string (
      "other/tensors, format=static, num_tensors=2, "
      "types=(string)\"uint8,int32\", "
      "dimensions=(string)\"3:12:12:4,4\", framerate=0/1");
  GstPad *src;

  gst_util_set_object_arg (G_OBJECT (sink), "model", "resnet20");
  gst_util_set_object_arg (G_OBJECT (sink), "device", "cpu");
  g_object_set (sink, "num-classes", 2, "num-threads", 1, "mean", "0,0,0",
      "std", "1e-45,1e-45,1e-45", "checkpoint-location", checkpoint, NULL);
  src = gst_check_setup_src_pad (sink, &src_template);
  gst_pad_set_active (src, TRUE);
  gst_element_set_state (sink, GST_STATE_PLAYING);
  gst_check_setup_events (src, sink, caps, GST_FORMAT_TIME);
  fail_unless_equals_int (gst_pad_push (src, make_batch (4)), GST_FLOW_OK);
  /* the step in flight ends when the next batch comes: it diverged */
  fail_unless_equals_int (gst_pad_push (src, make_batch (4)), GST_FLOW_ERROR);
  gst_pad_push_event (src, gst_event_new_eos ());
  fail_if (g_file_test (checkpoint, G_FILE_TEST_EXISTS),
      "a checkpoint was written after the error");
  gst_element_set_state (sink, GST_STATE_NULL);
  gst_pad_set_active (src, FALSE);
  gst_check_teardown_src_pad (sink);
  gst_object_unref (sink);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* A resume that no source asked about (a source other than datasetsrc)
 * skips the batches trained on before, and says so; when that is all the
 * data there is, nothing is trained: an error, and no checkpoint. */
GST_START_TEST (test_resume_no_source_asks)
{
  static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE (
      "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
  const gchar *dir = use_dataset (2, 4);
  gchar *input = input_stage (dir, 1);
  const gchar *trained = fixture_scratch_path ("first.safetensors", NULL);
  const gchar *checkpoint = test_checkpoint ();
  GstElement *sink = gst_element_factory_make ("cudatrainsink", NULL);
  GstCaps *caps = gst_caps_from_string (
      "other/tensors, format=static, num_tensors=2, "
      "types=(string)\"uint8,int32\", "
      "dimensions=(string)\"3:12:12:4,4\", framerate=0/1");
  GstBus *bus = gst_bus_new ();
  GString *notes = g_string_new (NULL);
  GstMessage *message;
  GError *err = NULL;
  gchar *want;
  GstPad *src;

  /* 2 steps of 4 images */
  sink_run_free (train_to_step (input, 2, NULL, trained));
  gst_element_set_bus (sink, bus);
  gst_util_set_object_arg (G_OBJECT (sink), "model", "resnet20");
  gst_util_set_object_arg (G_OBJECT (sink), "device", "cpu");
  g_object_set (sink, "num-classes", 2, "num-threads", 1, "resume-from",
      trained, "checkpoint-location", checkpoint, NULL);
  src = gst_check_setup_src_pad (sink, &src_template);
  gst_pad_set_active (src, TRUE);
  gst_element_set_state (sink, GST_STATE_PLAYING);
  gst_check_setup_events (src, sink, caps, GST_FORMAT_TIME);
  fail_unless_equals_int (gst_pad_push (src, make_batch (4)), GST_FLOW_OK);
  fail_unless_equals_int (gst_pad_push (src, make_batch (4)), GST_FLOW_OK);
  gst_pad_push_event (src, gst_event_new_eos ());
  while ((message = gst_bus_pop_filtered (
              bus, GST_MESSAGE_INFO | GST_MESSAGE_ERROR))) {
    if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_INFO) {
      gst_message_parse_info (message, &err, NULL);
      g_string_append_printf (notes, "%s\n", err->message);
      g_clear_error (&err);
    } else {
      fail_unless (err == NULL, "two errors");
      gst_message_parse_error (message, &err, NULL);
    }
    gst_message_unref (message);
  }
  want = g_strdup_printf ("Resumed from step 2 of %s: no source asked where "
                          "to start, so the first 2 batches, trained on "
                          "before, are skipped.\n",
      trained);
  fail_unless (strstr (notes->str, want) != NULL, "%s", notes->str);
  fail_unless (err != NULL
          && strstr (err->message,
              "End of stream before a training step: nothing was trained, "
              "and no checkpoint was written. The 2 batch(es) that arrived "
              "were skipped as trained on before the resume (no source "
              "asked where to start)"),
      "%s", err ? err->message : "no error");
  fail_if (g_file_test (checkpoint, G_FILE_TEST_EXISTS));
  g_clear_error (&err);
  g_free (want);
  g_string_free (notes, TRUE);
  gst_element_set_state (sink, GST_STATE_NULL);
  gst_pad_set_active (src, FALSE);
  gst_check_teardown_src_pad (sink);
  /* the state-changed messages left on the bus hold the sink */
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (sink);
  gst_object_unref (bus);
  gst_caps_unref (caps);
  g_free (input);
}

GST_END_TEST;

/* Alone (no launcher in the environment, or distributed=off under one):
 * rank 0 of 1, no time in communication, the global batch is the batch;
 * under a launcher that says rank 1 of 2, datasetsrc reads shard 1 of 2
 * by itself while a sink with distributed=off trains that shard alone
 * (no MPI: the environment is all this test fakes). */
GST_START_TEST (test_alone_and_launcher_shard)
{
  const gchar *dir = use_dataset (2, 8);
  const gchar *launcher[][2] = { { "OMPI_COMM_WORLD_RANK", "1" },
    { "OMPI_COMM_WORLD_SIZE", "2" }, { "OMPI_COMM_WORLD_LOCAL_RANK", "1" } };
  gchar *input = input_stage (dir, 1);
  gint round;

  for (round = 0; round < 2; round++) {
    gchar *launch = g_strdup_printf ("%s ! batcher batch-size=4 ! " SINK
                                     "name=sink stats-interval=1 %s",
        input, round ? "distributed=off" : "");
    GstElement *pipeline = gst_parse_launch (launch, NULL);
    GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
    GstBus *bus = gst_element_get_bus (pipeline);
    GstMessage *message;
    const GstStructure *s;
    gint rank = -1, world_size = -1, global_batch = -1, value;
    guint64 steps = 0;
    guint i;

    for (i = 0; round && i < G_N_ELEMENTS (launcher); i++)
      g_setenv (launcher[i][0], launcher[i][1], TRUE);
    gst_element_set_state (pipeline, GST_STATE_PLAYING);
    while (
        (message = pop_or_fail (pipeline, bus,
             GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT, launch))
        && GST_MESSAGE_TYPE (message) == GST_MESSAGE_ELEMENT) {
      s = gst_message_get_structure (message);
      if (gst_structure_has_name (s, "train-stats")) {
        fail_unless (gst_structure_get_int (s, "rank", &value) && value == 0);
        fail_unless (
            gst_structure_get_int (s, "world-size", &value) && value == 1);
        fail_unless_equals_float (get_double (s, "comm-time"), 0.0);
        fail_unless (
            gst_structure_get_int (s, "slowest-rank", &value) && value == 0);
        fail_unless_equals_float (get_double (s, "straggler-wait"), 0.0);
        steps = get_uint64 (s, "step");
      }
      gst_message_unref (message);
    }
    fail_unless (GST_MESSAGE_TYPE (message) == GST_MESSAGE_EOS);
    gst_message_unref (message);
    g_object_get (sink, "rank", &rank, "world-size", &world_size,
        "global-batch-size", &global_batch, NULL);
    for (i = 0; i < G_N_ELEMENTS (launcher); i++)
      g_unsetenv (launcher[i][0]);
    fail_unless_equals_int (rank, 0);
    fail_unless_equals_int (world_size, 1);
    fail_unless_equals_int (global_batch, 4);
    /* 16 images: 4 steps alone, 2 on shard 1 of 2 */
    fail_unless_equals_uint64 (steps, round ? 2 : 4);
    gst_element_set_state (pipeline, GST_STATE_NULL);
    gst_object_unref (bus);
    gst_object_unref (sink);
    gst_object_unref (pipeline);
    g_free (launch);
  }
  g_free (input);
}

GST_END_TEST;

static Suite *
cudatrainsink_suite (void)
{
  Suite *s = suite_create ("cudatrainsink");
  TCase *tc = tcase_create ("general");

  tcase_add_checked_fixture (tc, NULL, fixture_scratch_teardown);

  /* enforced when check forks (CK_FORK=yes, as meson runs it); under
   * CK_FORK=no, BUS_WAIT bounds every wait */
  tcase_set_timeout (tc, 600);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_properties_read_back);
  tcase_add_test (tc, test_loss_falls);
  tcase_add_test (tc, test_batches_in_sink_memory);
  tcase_add_test (tc, test_resume_is_exact);
  tcase_add_test (tc, test_resume_reads_nothing_trained_on);
  tcase_add_test (tc, test_resume_is_exact_with_echo);
  tcase_add_test (tc, test_step_schedule_follows_max_steps);
  tcase_add_test (tc, test_max_steps_ends_the_pipeline);
  tcase_add_test (tc, test_max_steps_eos_survives_pause);
  tcase_add_test (tc, test_fresh_counts_at_every_position);
  tcase_add_test (tc, test_eval_on_a_known_checkpoint);
  tcase_add_test (tc, test_errors);
  tcase_add_test (tc, test_resume_names_the_model);
  tcase_add_test (tc, test_nothing_trained_is_an_error);
  tcase_add_test (tc, test_resume_no_source_asks);
  tcase_add_test (tc, test_too_small_last_batch_is_dropped);
  tcase_add_test (tc, test_snapshots_count_fresh_images);
  tcase_add_test (tc, test_epoch_goes_on_after_resume);
  tcase_add_test (tc, test_stop_signal);
  tcase_add_test (tc, test_stop_without_eos_checkpoints);
  tcase_add_test (tc, test_checkpoint_folder);
  tcase_add_test (tc, test_one_class_and_cpu_notes);
  tcase_add_test (tc, test_alone_and_launcher_shard);
  tcase_add_test (tc, test_no_checkpoint_after_an_error);
  return s;
}

GST_CHECK_MAIN (cudatrainsink);
