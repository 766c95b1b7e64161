/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-pool.c: the data elements' shared worker threads (train-pool.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "train-pool.h"

#include <stdlib.h>

enum
{
  TASK_IDLE,
  TASK_QUEUED,
  TASK_RUNNING,
  TASK_DONE,
};

struct _GstTrainPool
{
  guint budget;
  guint n_workers;
  guint n_running; /* workers that have entered their loop */
  GThread **workers;

  GMutex lock;
  GCond work; /* a task was queued, or quit */
  GCond done; /* a task finished, or a worker started */
  GQueue queue;
  gboolean quit;

  /* GST_TRAIN_POOL_STATS: microseconds that threads slept in the pool (the
   * workers for work, waiting threads for a task that runs elsewhere), and
   * tasks run by the workers and by waiting threads; printed at the end.
   * Time spent runnable but preempted is not in them, so they tell how
   * well the pool keeps its threads busy whatever else runs. */
  gboolean stats;
  gint64 worker_sleep_us;
  gint64 waiter_sleep_us;
  guint64 worker_tasks; /* counted with or without stats, for tests */
  guint64 waiter_tasks;
  gint64 started_us;
};

/* The process's pool and its users, the live and peak worker counts, and
 * the tasks that the workers of the pools already gone ran. */
static GMutex the_lock;
static GstTrainPool *the_pool;
static guint the_refs;
static guint live_workers;
static guint peak_workers;
static guint64 past_worker_tasks;

static guint
gst_train_pool_read_budget (void)
{
  const gchar *env = g_getenv ("GST_TRAIN_THREADS");

  if (env != NULL && *env != '\0') {
    gchar *end;
    guint64 n = g_ascii_strtoull (env, &end, 10);

    if (*end == '\0' && n >= 1 && n <= 1024)
      return (guint)n;
    g_warning ("GST_TRAIN_THREADS=\"%s\" is not a number of threads "
               "from 1 to 1024; using the cores this process may run on",
        env);
  }
  /* The CPUs of this process's affinity mask (taskset, cgroups cpusets). */
  return MAX (g_get_num_processors (), 1);
}

/* Runs @task with @pool->lock held on entry and on return. */
static void
gst_train_pool_run_locked (GstTrainPool *pool, GstTrainTask *task)
{
  task->state = TASK_RUNNING;
  g_mutex_unlock (&pool->lock);
  task->func (task);
  g_mutex_lock (&pool->lock);
  task->state = TASK_DONE;
  g_cond_broadcast (&pool->done);
}

static gpointer
gst_train_pool_worker (gpointer data)
{
  GstTrainPool *pool = data;

  g_mutex_lock (&pool->lock);
  /* GLib has named this thread by now (before calling us). */
  pool->n_running++;
  g_cond_broadcast (&pool->done);
  for (;;) {
    GstTrainTask *task = g_queue_pop_head (&pool->queue);

    if (task != NULL) {
      gst_train_pool_run_locked (pool, task);
      pool->worker_tasks++;
      continue;
    }
    if (pool->quit)
      break;
    if (pool->stats) {
      gint64 start = g_get_monotonic_time ();

      g_cond_wait (&pool->work, &pool->lock);
      pool->worker_sleep_us += g_get_monotonic_time () - start;
    } else {
      g_cond_wait (&pool->work, &pool->lock);
    }
  }
  g_mutex_unlock (&pool->lock);
  return NULL;
}

static GstTrainPool *
gst_train_pool_new (void)
{
  GstTrainPool *pool = g_new0 (GstTrainPool, 1);
  guint i;

  g_mutex_init (&pool->lock);
  g_cond_init (&pool->work);
  g_cond_init (&pool->done);
  g_queue_init (&pool->queue);
  pool->budget = gst_train_pool_read_budget ();
  pool->stats = g_getenv ("GST_TRAIN_POOL_STATS") != NULL;
  pool->started_us = g_get_monotonic_time ();
  pool->workers = g_new0 (GThread *, MAX (pool->budget, 1));
  for (i = 0; i + 1 < pool->budget; i++) {
    GError *error = NULL;
    GThread *thread =
        g_thread_try_new ("train-pool", gst_train_pool_worker, pool, &error);

    if (thread == NULL) {
      /* Fewer workers only make the waiting threads do more. */
      g_warning ("gst-train: started %u of %u pool threads: %s", i,
          pool->budget - 1, error->message);
      g_error_free (error);
      break;
    }
    pool->workers[pool->n_workers++] = thread;
  }
  /* Returned only once every worker runs: a pool's threads are then all
   * there and named "train-pool", however busy the cores are (on two
   * loaded cores a new thread may otherwise wait a whole short run for
   * its first time slice). */
  g_mutex_lock (&pool->lock);
  while (pool->n_running < pool->n_workers)
    g_cond_wait (&pool->done, &pool->lock);
  g_mutex_unlock (&pool->lock);
  return pool;
}

static void
gst_train_pool_free (GstTrainPool *pool)
{
  guint i;

  g_mutex_lock (&pool->lock);
  g_warn_if_fail (g_queue_is_empty (&pool->queue));
  pool->quit = TRUE;
  g_cond_broadcast (&pool->work);
  g_mutex_unlock (&pool->lock);
  for (i = 0; i < pool->n_workers; i++)
    g_thread_join (pool->workers[i]);
  /* (under the_lock, held by the caller) */
  past_worker_tasks += pool->worker_tasks;
  if (pool->stats)
    g_printerr ("train-pool: budget %u, %u workers, %.3f s: workers slept "
                "%.3f s, waiting threads slept %.3f s; tasks run by workers "
                "%" G_GUINT64_FORMAT ", by waiting threads %" G_GUINT64_FORMAT
                "\n",
        pool->budget, pool->n_workers,
        (g_get_monotonic_time () - pool->started_us) / 1e6,
        pool->worker_sleep_us / 1e6, pool->waiter_sleep_us / 1e6,
        pool->worker_tasks, pool->waiter_tasks);
  g_free (pool->workers);
  g_mutex_clear (&pool->lock);
  g_cond_clear (&pool->work);
  g_cond_clear (&pool->done);
  g_free (pool);
}

GstTrainPool *
gst_train_pool_get (void)
{
  GstTrainPool *pool;

  g_mutex_lock (&the_lock);
  if (the_pool == NULL) {
    the_pool = gst_train_pool_new ();
    live_workers = the_pool->n_workers;
    peak_workers = MAX (peak_workers, live_workers);
  }
  the_refs++;
  pool = the_pool;
  g_mutex_unlock (&the_lock);
  return pool;
}

void
gst_train_pool_unref (GstTrainPool *pool)
{
  g_mutex_lock (&the_lock);
  g_assert (pool == the_pool && the_refs > 0);
  if (--the_refs > 0) {
    g_mutex_unlock (&the_lock);
    return;
  }
  the_pool = NULL;
  /* Joined under the lock: a new pool starts only once these are gone, so
   * the process never runs more workers than one budget. */
  gst_train_pool_free (pool);
  live_workers = 0;
  g_mutex_unlock (&the_lock);
}

guint
gst_train_pool_get_budget (GstTrainPool *pool)
{
  return pool->budget;
}

guint
gst_train_pool_get_window (GstTrainPool *pool)
{
  /* Without workers a task runs when it is waited for: run each at once,
   * while its input is still in the cache. */
  if (pool->n_workers == 0)
    return 1;
  return MIN (8 * pool->budget, 2 * pool->budget + 64);
}

void
gst_train_pool_push (GstTrainPool *pool, GstTrainTask *task)
{
  g_mutex_lock (&pool->lock);
  task->state = TASK_QUEUED;
  g_queue_push_tail (&pool->queue, task);
  g_cond_signal (&pool->work);
  g_mutex_unlock (&pool->lock);
}

void
gst_train_pool_wait (GstTrainPool *pool, GstTrainTask *task)
{
  g_mutex_lock (&pool->lock);
  while (task->state != TASK_DONE) {
    GstTrainTask *next;

    /* Our own task first (it is what we wait for), else the oldest. */
    if (task->state == TASK_QUEUED) {
      g_queue_remove (&pool->queue, task);
      next = task;
    } else {
      next = g_queue_pop_head (&pool->queue);
    }
    if (next != NULL) {
      gst_train_pool_run_locked (pool, next);
      pool->waiter_tasks++;
    } else if (pool->stats) {
      gint64 start = g_get_monotonic_time ();

      g_cond_wait (&pool->done, &pool->lock);
      pool->waiter_sleep_us += g_get_monotonic_time () - start;
    } else {
      g_cond_wait (&pool->done, &pool->lock);
    }
  }
  g_mutex_unlock (&pool->lock);
}

gboolean
gst_train_pool_is_done (GstTrainPool *pool, GstTrainTask *task)
{
  gboolean done;

  g_mutex_lock (&pool->lock);
  done = task->state == TASK_DONE;
  g_mutex_unlock (&pool->lock);
  return done;
}

gboolean
gst_train_pool_cancel (GstTrainPool *pool, GstTrainTask *task)
{
  gboolean ran;

  g_mutex_lock (&pool->lock);
  if (task->state == TASK_QUEUED) {
    g_queue_remove (&pool->queue, task);
    task->state = TASK_IDLE;
  }
  while (task->state == TASK_RUNNING)
    g_cond_wait (&pool->done, &pool->lock);
  ran = task->state == TASK_DONE;
  g_mutex_unlock (&pool->lock);
  return ran;
}

guint
gst_train_pool_get_n_workers (void)
{
  guint n;

  g_mutex_lock (&the_lock);
  n = live_workers;
  g_mutex_unlock (&the_lock);
  return n;
}

guint
gst_train_pool_get_peak_workers (void)
{
  guint n;

  g_mutex_lock (&the_lock);
  n = peak_workers;
  g_mutex_unlock (&the_lock);
  return n;
}

guint64
gst_train_pool_get_worker_tasks (void)
{
  guint64 n;

  g_mutex_lock (&the_lock);
  n = past_worker_tasks;
  if (the_pool != NULL) {
    g_mutex_lock (&the_pool->lock);
    n += the_pool->worker_tasks;
    g_mutex_unlock (&the_pool->lock);
  }
  g_mutex_unlock (&the_lock);
  return n;
}
