/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dist-state.h: what the data-parallel tests (dist-parity.c,
 * dist-trainer.c) read of a trainer's state and compare across ranks.
 * Header-only: each test is one program run by mpirun. */
#ifndef GT_TEST_DIST_STATE_H
#define GT_TEST_DIST_STATE_H

#include "trainer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum
{
  DIST_PARAMS = 1 << 0,   /* the weights and biases */
  DIST_MOMENTUM = 1 << 1, /* their momentum */
  DIST_STATS = 1 << 2,    /* running statistics and num_batches_tracked */
} DistParts;

/* The chosen parts of every tensor, in the trainer's order, as one float
 * array (malloc'd; its length in *@count). */
static inline float *
dist_state_read (GtTrainer *trainer, unsigned parts, size_t *count)
{
  size_t total = 0, at = 0;
  float *values = NULL;
  int i, pass;

  for (pass = 0; pass < 2; pass++) {
    for (i = 0; i < gt_trainer_num_tensors (trainer); i++) {
      GtTensorInfo info;

      gt_trainer_tensor_info (trainer, i, &info);
      if (info.is_parameter && (parts & DIST_PARAMS)) {
        if (pass)
          gt_trainer_read_tensor (trainer, info.name, GT_TENSOR_VALUE,
              values + at, (size_t)info.numel);
        at += (size_t)info.numel;
      }
      if (info.is_parameter && (parts & DIST_MOMENTUM)) {
        if (pass)
          gt_trainer_read_tensor (trainer, info.name, GT_TENSOR_MOMENTUM,
              values + at, (size_t)info.numel);
        at += (size_t)info.numel;
      }
      if (!info.is_parameter && (parts & DIST_STATS)) {
        if (pass)
          gt_trainer_read_tensor (trainer, info.name, GT_TENSOR_VALUE,
              values + at, (size_t)info.numel);
        at += (size_t)info.numel;
      }
    }
    if (pass == 0) {
      total = at;
      at = 0;
      values = malloc ((total ? total : 1) * sizeof (float));
      if (values == NULL) {
        fprintf (stderr, "out of memory reading the trainer's state\n");
        exit (1);
      }
    }
  }
  *count = total;
  return values;
}

/* FNV-1a over the bytes of the chosen parts: equal hashes on two ranks
 * mean bitwise equal state (up to a 2^-64 chance). */
static inline int64_t
dist_state_hash (GtTrainer *trainer, unsigned parts)
{
  size_t count, i;
  float *values = dist_state_read (trainer, parts, &count);
  const unsigned char *bytes = (const unsigned char *)values;
  uint64_t hash = 1469598103934665603ull;

  for (i = 0; i < count * sizeof (float); i++)
    hash = (hash ^ bytes[i]) * 1099511628211ull;
  free (values);
  return (int64_t)hash;
}

/* 1 when every rank passed the same @value, 0 when they differ, -1 when
 * the reduction failed (the reason on stderr). A collective. */
static inline int
dist_same_on_all_ranks (GtComm *comm, int64_t value)
{
  int64_t low = value, high = value;
  char why[256];

  if (gt_comm_allreduce (
          comm, &low, 1, GT_COMM_INT64, GT_COMM_MIN, why, sizeof (why))
      || gt_comm_allreduce (
          comm, &high, 1, GT_COMM_INT64, GT_COMM_MAX, why, sizeof (why))) {
    fprintf (stderr, "rank %d: %s\n", gt_comm_rank (comm), why);
    return -1;
  }
  return low == high;
}

/* The sum over the ranks of @value (failures, so that every rank ends with
 * the job's verdict); -1 when the reduction failed. A collective. */
static inline int64_t
dist_sum (GtComm *comm, int64_t value)
{
  char why[256];

  if (gt_comm_allreduce (
          comm, &value, 1, GT_COMM_INT64, GT_COMM_SUM, why, sizeof (why))) {
    fprintf (stderr, "rank %d: %s\n", gt_comm_rank (comm), why);
    return -1;
  }
  return value;
}

/* `PROGRAM --built`: exit status 0 when this build has MPI, else 77 (the
 * test wrappers skip with it before starting mpirun). */
static inline void
dist_exit_if_asked_built (int argc, char **argv)
{
  if (argc == 2 && strcmp (argv[1], "--built") == 0) {
    if (!gt_dist_built ())
      printf ("this build has no MPI (meson -Dmpi)\n");
    exit (gt_dist_built () ? 0 : 77);
  }
}

#endif /* GT_TEST_DIST_STATE_H */
