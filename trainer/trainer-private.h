/* trainer-private.h: the GtTrainer object, shared by trainer.c and
 * checkpoint.c. */
#ifndef GT_TRAINER_PRIVATE_H
#define GT_TRAINER_PRIVATE_H

#include "backend.h"
#include "gt-error.h"
#include "gt-random.h"

typedef struct
{
  char *key;
  char *value;
} GtMetadataEntry;

struct GtTrainer
{
  GtTrainerConfig config;
  GtModelSpec spec;
  const GtBackendOps *ops;
  void *backend;
  int64_t step; /* steps applied so far: the schedule's position */
  GtRandom rng; /* saved and restored with checkpoints */
  int step_pending;
  GtMetadataEntry *metadata;
  int num_metadata;
  char error[512];
};

/* Records a failure of @trainer and returns its status. */
#define gt_trainer_fail(trainer, status, ...)                                  \
  gt_error_set (                                                               \
      (trainer)->error, sizeof ((trainer)->error), (status), __VA_ARGS__)

#endif /* GT_TRAINER_PRIVATE_H */
