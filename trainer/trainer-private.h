/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* trainer-private.h: the GtTrainer object (trainer.c), and what the
 * data-parallel code (dist.c) tells trainer.c. */
#ifndef GT_TRAINER_PRIVATE_H
#define GT_TRAINER_PRIVATE_H

#include "backend.h"
#include "checkpoint.h"
#include "gt-error.h"
#include "gt-random.h"

struct GtTrainer
{
  GtTrainerConfig config;
  GtModelSpec spec;
  const GtBackendOps *ops;
  void *backend;
  int64_t step; /* steps applied so far: the schedule's position */
  GtRandom rng; /* saved and restored with checkpoints */
  int step_pending;
  int64_t samples_seen; /* over every rank */
  int in_job;           /* data-parallel, and not left */
  GtMetadataEntry *metadata;
  int num_metadata;
  char error[512];
};

/* Records a failure of @trainer and returns its status. */
#define gt_trainer_fail(trainer, status, ...)                                  \
  gt_error_set (                                                               \
      (trainer)->error, sizeof ((trainer)->error), (status), __VA_ARGS__)

/* dist.c: counts this process's trainers in a job, for the exit handler */
void gt_dist_trainer_joined (void);
void gt_dist_trainer_left (void);

#endif /* GT_TRAINER_PRIVATE_H */
