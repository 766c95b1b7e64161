/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* backend.h: what a backend (cpu/, cuda/) provides to trainer.c.
 *
 * The trainer owns the model description and the schedule; a backend owns
 * the flat buffers (parameters, gradients, momentum, running statistics)
 * and runs steps on them. Host access goes through sync_to_host and
 * sync_from_host, so that a device backend copies only when the caller
 * reads or writes state (checkpoints, tests), never per step. */
#ifndef GT_BACKEND_H
#define GT_BACKEND_H

#include "model.h"

/* What both backends keep for a convolution and the batch-norm after it
 * (its sizes are the conv's plan): the activations, as floats on the CPU
 * and in the working precision on CUDA, and the batch statistics of the
 * last training forward pass. */
typedef struct
{
  const GtConvSpec *conv;
  const GtNormSpec *norm;
  void *conv_out; /* before the norm, kept for its backward pass */
  void *out;      /* after the norm (+ residual) (+ ReLU) */
  float *mean;
  float *invstd;
} GtUnit;

/* A residual block's units: the main path, and the projection of the
 * shortcut when the block has one. */
typedef struct
{
  const GtBlockSpec *spec;
  int num_units;
  GtUnit units[GT_MAX_BLOCK_UNITS];
  GtUnit down;
} GtBlock;

/* Host views of a backend's state, current after sync_to_host. */
typedef struct
{
  float *params;
  float *grads;
  float *momentum;
  float *stats;
  int64_t *num_batches_tracked;
} GtHostState;

typedef struct
{
  const char *name;
  void *(*create) (const GtModelSpec *spec, const GtTrainerConfig *config,
      char *why, size_t why_size);
  void (*destroy) (void *backend);
  /* Starts a training step with learning rate @lr. */
  int (*step_begin) (void *backend, const GtBatch *batch, float lr, char *why,
      size_t why_size);
  int (*step_end) (
      void *backend, GtStepResult *result, char *why, size_t why_size);
  int (*eval) (void *backend, const GtBatch *batch, GtEvalTotals *totals,
      char *why, size_t why_size);
  size_t (*read_logits) (void *backend, float *out, size_t count);
  int (*sync_to_host) (void *backend, GtHostState *state);
  /* The caller changed the host state: push it to the device. */
  int (*sync_from_host) (void *backend);
  /* Host memory the backend copies from fastest (pinned for CUDA); NULL
   * for plain malloc and free. */
  void *(*host_alloc) (void *backend, size_t size);
  void (*host_free) (void *backend, void *memory);
  /* Data-parallel: take part in the peers' step without data, as
   * gt_trainer_leave says: the same collectives as a step, contributing
   * nothing and GT_DIST_ACTIVE 0. Returns GT_ERROR_STOPPED when it went
   * as expected. */
  int (*leave) (void *backend, char *why, size_t why_size);
  /* Fills @report (zeroed by the caller); NULL: nothing to report. */
  void (*report) (void *backend, GtBackendReport *report);
} GtBackendOps;

/* ---- Data-parallel steps (dist.c), for the backends ----
 *
 * Every step of a data-parallel trainer sums one buffer over the ranks:
 * the flat gradients, then this trailer, so that a step costs one
 * reduction and every rank learns, in it, the global loss and counts,
 * whether any rank's loss was not finite, and whether any rank left. */
typedef enum
{
  GT_DIST_LOSS_SUM, /* this rank's loss summed over its samples */
  GT_DIST_TOP1,
  GT_DIST_TOP5,
  GT_DIST_SAMPLES,
  GT_DIST_NONFINITE, /* 1 when this rank's loss was not finite */
  GT_DIST_ACTIVE,    /* 1 for a step, 0 for gt_trainer_leave */
  GT_DIST_TRAILER    /* the number of slots */
} GtDistSlot;

void gt_dist_trailer_fill (float *trailer, double loss_sum, int top1, int top5,
    int num_samples, int nonfinite, int active);
/* Reads a summed trailer into @result (loss, correct counts and
 * global_samples over all ranks). GT_OK when the step applies;
 * GT_ERROR_NONFINITE or GT_ERROR_STOPPED, with the rank named in @why,
 * when it does not (naming it takes one more small collective, which
 * every rank makes, since every rank sees the same trailer). */
int gt_dist_trailer_read (GtComm *comm, const float *summed,
    int local_nonfinite, int local_active, GtStepResult *result, char *why,
    size_t why_size);
/* The MPI path: sums @buffer (@num_grads gradients, then the trailer) in
 * place, reads the trailer, and on GT_OK scales the gradients to the mean
 * over the ranks. Adds the time it took to result->comm_seconds. */
int gt_dist_reduce_step (GtComm *comm, float *buffer, size_t num_grads,
    int local_nonfinite, int local_active, GtStepResult *result, char *why,
    size_t why_size);

extern const GtBackendOps gt_cpu_backend;
/* The CUDA backend lives in a module opened at run time: cuda-module.h. */

#endif /* GT_BACKEND_H */
