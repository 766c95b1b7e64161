/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpu-pool.c: worker threads that sleep on a condition between tasks. */
#include "cpu-pool.h"

#include <pthread.h>
#include <stdlib.h>

struct GtCpuPool
{
  int num_threads;
  pthread_t *threads;
  pthread_mutex_t lock;
  pthread_cond_t start;
  pthread_cond_t done;
  GtCpuTask task;
  void *context;
  unsigned long generation; /* bumped for every task */
  int pending;              /* workers still running the current task */
  int quit;
};

typedef struct
{
  GtCpuPool *pool;
  int thread;
} WorkerArgs;

static void *
worker_main (void *data)
{
  WorkerArgs *args = data;
  GtCpuPool *pool = args->pool;
  int thread = args->thread;
  unsigned long seen = 0;

  free (args);
  pthread_mutex_lock (&pool->lock);
  for (;;) {
    while (!pool->quit && pool->generation == seen)
      pthread_cond_wait (&pool->start, &pool->lock);
    if (pool->quit)
      break;
    seen = pool->generation;
    pthread_mutex_unlock (&pool->lock);
    pool->task (pool->context, thread, pool->num_threads);
    pthread_mutex_lock (&pool->lock);
    if (--pool->pending == 0)
      pthread_cond_signal (&pool->done);
  }
  pthread_mutex_unlock (&pool->lock);
  return NULL;
}

GtCpuPool *
gt_cpu_pool_new (int num_threads)
{
  GtCpuPool *pool = calloc (1, sizeof (GtCpuPool));
  int i;

  if (pool == NULL)
    return NULL;
  pool->num_threads = num_threads < 1 ? 1 : num_threads;
  pthread_mutex_init (&pool->lock, NULL);
  pthread_cond_init (&pool->start, NULL);
  pthread_cond_init (&pool->done, NULL);
  pool->threads = calloc (pool->num_threads, sizeof (pthread_t));
  if (pool->threads == NULL) {
    gt_cpu_pool_free (pool);
    return NULL;
  }
  /* Thread 0 is the caller's: only the others are started. */
  for (i = 1; i < pool->num_threads; i++) {
    WorkerArgs *args = malloc (sizeof (WorkerArgs));

    if (args == NULL) {
      pool->num_threads = i;
      gt_cpu_pool_free (pool);
      return NULL;
    }
    args->pool = pool;
    args->thread = i;
    if (pthread_create (&pool->threads[i], NULL, worker_main, args) != 0) {
      free (args);
      pool->num_threads = i;
      gt_cpu_pool_free (pool);
      return NULL;
    }
  }
  return pool;
}

void
gt_cpu_pool_free (GtCpuPool *pool)
{
  int i;

  if (pool == NULL)
    return;
  pthread_mutex_lock (&pool->lock);
  pool->quit = 1;
  pthread_cond_broadcast (&pool->start);
  pthread_mutex_unlock (&pool->lock);
  for (i = 1; pool->threads && i < pool->num_threads; i++)
    pthread_join (pool->threads[i], NULL);
  pthread_cond_destroy (&pool->start);
  pthread_cond_destroy (&pool->done);
  pthread_mutex_destroy (&pool->lock);
  free (pool->threads);
  free (pool);
}

int
gt_cpu_pool_size (const GtCpuPool *pool)
{
  return pool->num_threads;
}

void
gt_cpu_pool_run (GtCpuPool *pool, GtCpuTask task, void *context)
{
  if (pool->num_threads == 1) {
    task (context, 0, 1);
    return;
  }
  pthread_mutex_lock (&pool->lock);
  pool->task = task;
  pool->context = context;
  pool->pending = pool->num_threads - 1;
  pool->generation++;
  pthread_cond_broadcast (&pool->start);
  pthread_mutex_unlock (&pool->lock);

  task (context, 0, pool->num_threads);

  pthread_mutex_lock (&pool->lock);
  while (pool->pending > 0)
    pthread_cond_wait (&pool->done, &pool->lock);
  pthread_mutex_unlock (&pool->lock);
}
