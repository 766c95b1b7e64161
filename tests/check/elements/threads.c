/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* threads.c: the data elements' one thread budget (train-pool.h).
 *
 * However many datasetsrc, imagedec and augment elements a process runs,
 * their work runs on one pool of budget - 1 worker threads (the streaming
 * threads do the rest), the budget being the cores the process may run on
 * or GST_TRAIN_THREADS; every worker takes tasks; and the bytes that come
 * out do not depend on it. */
#include "check-main.h"
#include "fixtures.h"
#include "train-pool.h"

#include <gst/check/gstcheck.h>
#include <string.h>

/* A dataset of @n small photos-like JPEGs of varied sizes in two classes. */
static gchar *
write_tree (guint n)
{
  gchar *root = fixture_make_temp_dir ();
  guint i;

  for (i = 0; i < n; i++) {
    gchar *path = g_strdup_printf ("%s/class%u/%03u.jpg", root, i % 2, i);

    fixture_write_jpeg (
        path, 60 + (gint)(i * 7) % 50, 40 + (gint)(i * 5) % 40, i);
    g_free (path);
  }
  return root;
}

/* Threads of this process now, and how many of them are pool workers. */
static void
count_threads (guint *total, guint *workers)
{
  GDir *dir = g_dir_open ("/proc/self/task", 0, NULL);
  const gchar *name;

  fail_unless (dir != NULL);
  *total = *workers = 0;
  while ((name = g_dir_read_name (dir)) != NULL) {
    gchar *path = g_strdup_printf ("/proc/self/task/%s/comm", name);
    gchar *comm = NULL;

    /* A thread may end between the listing and the read. */
    if (g_file_get_contents (path, &comm, NULL, NULL)) {
      (*total)++;
      if (g_str_has_prefix (comm, "train-pool"))
        (*workers)++;
    }
    g_free (comm);
    g_free (path);
  }
  g_dir_close (dir);
}

typedef struct
{
  GMutex lock;
  guint max_total;
  guint max_workers;
  guint buffers;
} ThreadWatch;

/* At every buffer that reaches a sink, the threads the process runs. */
static GstPadProbeReturn
watch_threads (GstPad *pad, GstPadProbeInfo *info, gpointer user_data)
{
  ThreadWatch *watch = user_data;
  guint total, workers;

  count_threads (&total, &workers);
  g_mutex_lock (&watch->lock);
  watch->max_total = MAX (watch->max_total, total);
  watch->max_workers = MAX (watch->max_workers, workers);
  watch->buffers++;
  g_mutex_unlock (&watch->lock);
  return GST_PAD_PROBE_OK;
}

static void
watch_sink (GstElement *pipeline, const gchar *name, ThreadWatch *watch)
{
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), name);
  GstPad *pad = gst_element_get_static_pad (sink, "sink");

  gst_pad_add_probe (
      pad, GST_PAD_PROBE_TYPE_BUFFER, watch_threads, watch, NULL);
  gst_object_unref (pad);
  gst_object_unref (sink);
}

/* Two sources, so two streaming threads, and seven elements that would
 * each have started threads of their own. */
static gchar *
many_elements_launch (const gchar *root, gint epochs)
{
  return g_strdup_printf (
      "datasetsrc location=%s seed=3 num-epochs=%d ! imagedec "
      "! augment width=32 height=24 seed=1 ! batcher batch-size=4 "
      "! fakesink name=a "
      "datasetsrc location=%s seed=4 num-epochs=%d ! imagedec "
      "! augment width=40 height=30 seed=2 n-threads=4 "
      "! augment width=32 height=24 seed=3 ! fakesink name=b",
      root, epochs, root, epochs);
}

/* Runs the two-chain pipeline under a budget of @budget; returns the most
 * threads the process ran (and of them pool workers) while data flowed,
 * above what it ran before. */
static void
run_watched (const gchar *root, guint budget, guint *extra_total,
    guint *max_workers, guint *eos_workers)
{
  gchar *launch = many_elements_launch (root, 2);
  gchar *value = g_strdup_printf ("%u", budget);
  GstElement *pipeline;
  ThreadWatch watch = { 0 };
  guint before, workers, eos_total;
  guint64 tasks_before = fixture_pool_worker_tasks (), tasks;
  gchar *error;

  g_setenv ("GST_TRAIN_THREADS", value, TRUE);
  pipeline = gst_parse_launch (launch, NULL);
  fail_unless (pipeline != NULL);
  watch_sink (pipeline, "a", &watch);
  watch_sink (pipeline, "b", &watch);
  count_threads (&before, &workers);
  fail_unless_equals_int (workers, 0);
  error = fixture_play_to_eos (pipeline, 0, NULL, NULL);
  fail_unless (error == NULL, "%s", error);
  /* at EOS, before the stop: the pool returned only once each worker ran,
   * so each carries its name in /proc */
  count_threads (&eos_total, eos_workers);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  g_unsetenv ("GST_TRAIN_THREADS");

  fail_unless (watch.buffers > 0);
  /* The workers did some of the work: a pool whose workers start but
   * never take a task has the right thread count too. (Which thread runs
   * which task is up to the scheduler, but a worker that slept through the
   * few hundred reads, decodes and crops of this run would be a bug;
   * test_every_worker_takes_tasks shows each worker taking one.) */
  tasks = fixture_pool_worker_tasks () - tasks_before;
  if (budget == 1) {
    fail_unless_equals_int (tasks, 0);
  } else {
    fail_unless (tasks > 0, "budget %u: the workers ran no task", budget);
  }
  /* Stopped: the last element let go of the pool, which joined its
   * threads. */
  fail_unless_equals_int (fixture_pool_n_workers (), 0);
  count_threads (&before, &workers);
  fail_unless_equals_int (workers, 0);

  *extra_total = watch.max_total > before ? watch.max_total - before : 0;
  *max_workers = watch.max_workers;
  g_free (value);
  g_free (launch);
}

GST_START_TEST (test_workers_within_budget_whatever_elements)
{
  gchar *root = write_tree (24);
  guint budgets[] = { 1, 2, 3, 5 };
  guint i, extra, workers, eos_workers;

  /* Once before counting: GStreamer's own threads (the streaming threads'
   * pool) start on first use and stay. */
  run_watched (root, 2, &extra, &workers, &eos_workers);
  for (i = 0; i < G_N_ELEMENTS (budgets); i++) {
    run_watched (root, budgets[i], &extra, &workers, &eos_workers);
    /* One pool for all seven elements: budget - 1 workers, not one set
     * per element; while data flowed never more. (Before the pool waited
     * for its workers to start, a worker on two busy cores could still be
     * unnamed at EOS and this count came short.) */
    fail_unless_equals_int (eos_workers, budgets[i] - 1);
    fail_unless (workers <= budgets[i] - 1, "budget %u: %u train-pool threads",
        budgets[i], workers);
    /* Besides the workers, at most the two streaming threads. */
    fail_unless (extra <= budgets[i] - 1 + 2, "budget %u: %u more threads",
        budgets[i], extra);
  }
  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

GST_START_TEST (test_budget_from_environment)
{
  GstTrainPool *pool;

  g_setenv ("GST_TRAIN_THREADS", "3", TRUE);
  pool = gst_train_pool_get ();
  fail_unless_equals_int (gst_train_pool_get_budget (pool), 3);
  fail_unless_equals_int (gst_train_pool_get_n_workers (), 2);
  gst_train_pool_unref (pool);
  fail_unless_equals_int (gst_train_pool_get_n_workers (), 0);

  /* Unset: the cores this process may run on (its affinity mask). */
  g_unsetenv ("GST_TRAIN_THREADS");
  pool = gst_train_pool_get ();
  fail_unless_equals_int (
      gst_train_pool_get_budget (pool), g_get_num_processors ());
  gst_train_pool_unref (pool);
}

GST_END_TEST;

typedef struct
{
  GstTrainTask task;
  guint value;
  guint result;
} SquareTask;

static void
square (GstTrainTask *task)
{
  SquareTask *t = (SquareTask *)task;

  t->result = t->value * t->value;
}

GST_START_TEST (test_tasks_run_once_waited_or_cancelled)
{
  guint budgets[] = { 1, 4 };
  guint b, i;

  for (b = 0; b < G_N_ELEMENTS (budgets); b++) {
    gchar *value = g_strdup_printf ("%u", budgets[b]);
    SquareTask tasks[64];
    GstTrainPool *pool;
    guint ran = 0;

    g_setenv ("GST_TRAIN_THREADS", value, TRUE);
    pool = gst_train_pool_get ();
    for (i = 0; i < G_N_ELEMENTS (tasks); i++) {
      tasks[i].task.func = square;
      tasks[i].value = i + 1;
      tasks[i].result = 0;
      gst_train_pool_push (pool, &tasks[i].task);
    }
    /* Waiting for the last runs the queue in this thread (with a budget of
     * one, nothing else would). */
    gst_train_pool_wait (pool, &tasks[63].task);
    fail_unless_equals_int (tasks[63].result, 64 * 64);
    for (i = 0; i < 32; i++) {
      gst_train_pool_wait (pool, &tasks[i].task);
      fail_unless (gst_train_pool_is_done (pool, &tasks[i].task));
      fail_unless_equals_int (tasks[i].result, (i + 1) * (i + 1));
    }
    /* The rest: cancelled before they ran, or done once. */
    for (i = 32; i < 63; i++) {
      if (gst_train_pool_cancel (pool, &tasks[i].task)) {
        fail_unless_equals_int (tasks[i].result, (i + 1) * (i + 1));
        ran++;
      } else {
        fail_unless_equals_int (tasks[i].result, 0);
      }
    }
    if (budgets[b] == 1)
      fail_unless_equals_int (ran, 0);
    gst_train_pool_unref (pool);
    g_unsetenv ("GST_TRAIN_THREADS");
    g_free (value);
  }
}

GST_END_TEST;

/* Tasks that hold whoever runs them until @n of them run at once, or
 * until released. */
typedef struct
{
  GMutex lock;
  GCond cond;
  guint n;
  guint arrived;
  gboolean released;
} Barrier;

typedef struct
{
  GstTrainTask task;
  Barrier *barrier;
  GThread *thread;
} BarrierTask;

static void
meet_at_barrier (GstTrainTask *task)
{
  BarrierTask *t = (BarrierTask *)task;
  Barrier *b = t->barrier;

  g_mutex_lock (&b->lock);
  t->thread = g_thread_self ();
  b->arrived++;
  g_cond_broadcast (&b->cond);
  while (b->arrived < b->n && !b->released)
    g_cond_wait (&b->cond, &b->lock);
  g_mutex_unlock (&b->lock);
}

/* Every worker takes tasks: budget - 1 tasks that each hold their thread
 * until all of them run at once can only all run if each worker took one.
 * This thread does not wait through the pool (which would run them
 * itself) until they met, or until a minute passed, when it releases
 * them and fails. */
GST_START_TEST (test_every_worker_takes_tasks)
{
  guint budgets[] = { 2, 3, 5 };
  guint b, i, j;

  for (b = 0; b < G_N_ELEMENTS (budgets); b++) {
    guint n = budgets[b] - 1;
    gchar *value = g_strdup_printf ("%u", budgets[b]);
    BarrierTask tasks[4];
    Barrier barrier = { .n = n };
    gint64 deadline = g_get_monotonic_time () + 60 * G_TIME_SPAN_SECOND;
    guint64 tasks_before = gst_train_pool_get_worker_tasks ();
    guint arrived;
    GstTrainPool *pool;

    g_setenv ("GST_TRAIN_THREADS", value, TRUE);
    g_mutex_init (&barrier.lock);
    g_cond_init (&barrier.cond);
    pool = gst_train_pool_get ();
    for (i = 0; i < n; i++) {
      tasks[i].task.func = meet_at_barrier;
      tasks[i].barrier = &barrier;
      tasks[i].thread = NULL;
      gst_train_pool_push (pool, &tasks[i].task);
    }
    g_mutex_lock (&barrier.lock);
    while (barrier.arrived < n
        && g_cond_wait_until (&barrier.cond, &barrier.lock, deadline))
      ;
    arrived = barrier.arrived;
    barrier.released = TRUE;
    g_cond_broadcast (&barrier.cond);
    g_mutex_unlock (&barrier.lock);
    /* now each runs (here, if no worker took it) and returns */
    for (i = 0; i < n; i++)
      gst_train_pool_wait (pool, &tasks[i].task);
    gst_train_pool_unref (pool);
    g_unsetenv ("GST_TRAIN_THREADS");
    g_mutex_clear (&barrier.lock);
    g_cond_clear (&barrier.cond);
    g_free (value);

    fail_unless (arrived == n,
        "budget %u: %u of the %u workers took a task within a minute",
        budgets[b], arrived, n);
    for (i = 0; i < n; i++) {
      fail_unless (tasks[i].thread != g_thread_self ());
      for (j = 0; j < i; j++)
        fail_unless (tasks[i].thread != tasks[j].thread);
    }
    fail_unless_equals_int (
        gst_train_pool_get_worker_tasks () - tasks_before, n);
  }
}

GST_END_TEST;

static RunResult *
run_batches (const gchar *root, guint budget, const gchar *threads)
{
  gchar *value = g_strdup_printf ("%u", budget);
  gchar *launch = g_strdup_printf (
      "datasetsrc location=%s seed=5 num-epochs=2 %s ! imagedec %s "
      "! augment width=48 height=40 seed=9 %s ! batcher batch-size=5 "
      "! fakesink name=sink",
      root, threads, threads, threads);
  RunResult *r;

  g_setenv ("GST_TRAIN_THREADS", value, TRUE);
  r = fixture_run (launch);
  g_unsetenv ("GST_TRAIN_THREADS");
  fail_unless (r->error == NULL, "%s", r->error);
  g_free (launch);
  g_free (value);
  return r;
}

GST_START_TEST (test_same_batches_whatever_budget)
{
  gchar *root = write_tree (27);
  /* Everything in the streaming thread: the reference. */
  RunResult *serial = run_batches (root, 1, "n-threads=1");
  guint budgets[] = { 1, 2, 3, 8 };
  guint i;

  /* 54 images in batches of 5: 10 whole batches, the rest dropped. */
  fail_unless_equals_int (serial->samples->len, 10);
  for (i = 0; i < G_N_ELEMENTS (budgets); i++) {
    RunResult *r = run_batches (root, budgets[i], "");
    RunResult *r2 = run_batches (root, budgets[i], "n-threads=2");

    fail_unless (run_result_same_outputs (serial, r), "budget %u", budgets[i]);
    fail_unless (run_result_same_outputs (serial, r2), "budget %u", budgets[i]);
    run_result_free (r);
    run_result_free (r2);
  }
  run_result_free (serial);
  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

GST_START_TEST (test_stop_mid_stream_with_tasks_in_flight)
{
  gchar *root = write_tree (24);
  /* Endless epochs: stopped while data flows, never at EOS. */
  gchar *launch = many_elements_launch (root, -1);

  g_setenv ("GST_TRAIN_THREADS", "3", TRUE);
  fixture_stop_mid_stream (GST_STATE_READY, 3, "%s", launch);
  fixture_stop_mid_stream (GST_STATE_NULL, 2, "%s", launch);
  g_unsetenv ("GST_TRAIN_THREADS");
  fail_unless_equals_int (fixture_pool_n_workers (), 0);
  g_free (launch);
  fixture_remove_tree (root);
  g_free (root);
}

GST_END_TEST;

#define THREADS_TESTS(test)                                                    \
  test (test_budget_from_environment);                                         \
  test (test_tasks_run_once_waited_or_cancelled);                              \
  test (test_every_worker_takes_tasks);                                        \
  test (test_workers_within_budget_whatever_elements);                         \
  test (test_same_batches_whatever_budget);                                    \
  test (test_stop_mid_stream_with_tasks_in_flight);

CHECK_MAIN (threads, "threads", THREADS_TESTS);
