/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lr-policy.c: the learning-rate policy as a user states it (peak rate,
 * schedule, warmup, length, or only how many steps the run takes), turned
 * into the schedule fields of GtTrainerConfig that gt_lr_schedule reads.
 * Callers (the training sink, tools) pass their settings as they are, so
 * that what a schedule means is decided here alone. */
#include "trainer.h"

/* The step schedule multiplies the rate by this at 30%, 60% and 90% of the
 * steps after the warmup, as torchvision's ResNet recipe does at epochs 30,
 * 60 and 90 of 100. */
#define LR_STEP_GAMMA 0.1f
#define LR_STEP_TENTHS 3

void
gt_trainer_config_set_lr_policy (GtTrainerConfig *config, float lr,
    GtLrSchedule schedule, int64_t warmup_steps, int64_t total_steps,
    int64_t max_steps)
{
  int64_t span;

  config->lr = lr;
  config->lr_schedule = schedule;
  config->warmup_steps = warmup_steps;
  config->total_steps = total_steps ? total_steps : max_steps;
  if (schedule != GT_LR_STEP)
    return;
  /* no steps after the warmup: the rate never drops */
  span = config->total_steps - warmup_steps;
  if (span > 0) {
    config->lr_step_size = span * LR_STEP_TENTHS / 10;
    if (config->lr_step_size < 1)
      config->lr_step_size = 1;
  } else {
    config->lr_step_size = INT64_MAX;
  }
  config->lr_gamma = LR_STEP_GAMMA;
}
