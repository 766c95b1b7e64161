/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train-pool.h: the one pool of worker threads that the data elements of a
 * process share.
 *
 * Each element used to start its own pool of one thread per core, so a
 * pipeline of three of them ran three threads per core and the trainer's on
 * top. Now the process has one thread budget, by default the cores this
 * process may run on (its CPU affinity: `taskset -c 0` gives a budget of
 * one), or GST_TRAIN_THREADS when set. The pool runs budget - 1 worker
 * threads: the last core belongs to the streaming thread, which does the
 * serial part of the pipeline (pushing buffers on, the batcher's copy) and,
 * whenever it would wait for a task, runs queued tasks itself
 * (gst_train_pool_wait). With a budget of one there is no worker at all and
 * every task runs in the streaming thread that waits for it.
 *
 * Tasks run in the order they were pushed; an element keeps its own output
 * order by waiting for its tasks in input order. A task must not block on
 * anything but memory and file reads: a waiting thread may run any task.
 *
 * The pool exists while at least one element holds it (between its start
 * and stop): the last gst_train_pool_unref joins the workers.
 */
#ifndef __GST_TRAIN_POOL_H__
#define __GST_TRAIN_POOL_H__

#include <glib.h>

G_BEGIN_DECLS

typedef struct _GstTrainPool GstTrainPool;
typedef struct _GstTrainTask GstTrainTask;

typedef void (*GstTrainTaskFunc) (GstTrainTask *task);

/* Embedded in the caller's job; only @func is the caller's to set. */
struct _GstTrainTask
{
  GstTrainTaskFunc func;
  /* < private > under the pool's lock */
  gint state;
};

/* The process's pool, started on first use with the thread budget. */
GstTrainPool *gst_train_pool_get (void);
void gst_train_pool_unref (GstTrainPool *pool);

/* The thread budget: cores the process may use, or GST_TRAIN_THREADS. */
guint gst_train_pool_get_budget (GstTrainPool *pool);

/* How many tasks an element keeps in flight by default: enough that the
 * workers keep busy while the streaming thread that feeds them is preempted
 * for a few milliseconds (2 x budget left them idle a third of the time on
 * a loaded two-core machine), bounded for large budgets: 8 x budget, at
 * most 2 x budget + 64; 1 with a budget of one (no worker). */
guint gst_train_pool_get_window (GstTrainPool *pool);

/* Queues @task; it runs once, on a worker or in a thread that waits. */
void gst_train_pool_push (GstTrainPool *pool, GstTrainTask *task);

/* Returns once @task has run, running queued tasks (its own first) while it
 * waits. @task must have been pushed. */
void gst_train_pool_wait (GstTrainPool *pool, GstTrainTask *task);

/* TRUE once @task has run. */
gboolean gst_train_pool_is_done (GstTrainPool *pool, GstTrainTask *task);

/* Takes @task off the queue if it has not started (it then never runs) or
 * waits for it to finish; TRUE when it ran. */
gboolean gst_train_pool_cancel (GstTrainPool *pool, GstTrainTask *task);

/* For tests: worker threads of the process's pool now (0 without one), and
 * the most that were ever running at once. */
guint gst_train_pool_get_n_workers (void);
guint gst_train_pool_get_peak_workers (void);

/* For tests: tasks that worker threads (not the threads that waited) have
 * run in this process, every pool so far: a pool whose workers take no
 * work runs it all in the streaming threads, with the right thread count
 * and the right bytes. */
guint64 gst_train_pool_get_worker_tasks (void);

G_END_DECLS

#endif
