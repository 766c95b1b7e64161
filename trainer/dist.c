/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dist.c: data-parallel jobs: gt_comm_* through the MPI module
 * (mpi-module.h, trainer/dist-mpi.c, opened by the first gt_comm_new), and
 * the reduction of a step's gradients and trailer (backend.h). */
#include "gt-clock.h"
#include "gt-log.h"
#include "mpi-module.h"
#include "module-loader.h"
#include "trainer-private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The MPI module (mpi-module.h), opened by the first gt_comm_new. */
static GtModule mpi_module =
    GT_MODULE_INIT (GT_ENV_MPI_MODULE, GT_MPI_MODULE_FILE, "the MPI module",
        "the MPI module", GT_MPI_MODULE_SYMBOL, GT_MPI_MODULE_ABI, NULL,
        "this build has no MPI (rebuild with libopenmpi-dev installed, meson "
        "-Dmpi=enabled)");

/* The module's table: a communicator exists only once it is loaded. */
static const GtMpiModule *
mpi (void)
{
  return mpi_module.table;
}

int
gt_dist_built (void)
{
#ifdef GT_HAVE_MPI_MODULE
  return 1;
#else
  return 0;
#endif
}

GtComm *
gt_comm_new (char *why, size_t why_size)
{
  const GtMpiModule *loaded = gt_module_get (&mpi_module, why, why_size);

  return loaded ? loaded->comm_new (why, why_size) : NULL;
}

/* A communicator exists only once the module is loaded. */
void
gt_comm_free (GtComm *comm)
{
  if (comm != NULL)
    mpi ()->comm_free (comm);
}

int
gt_comm_rank (const GtComm *comm)
{
  return comm ? mpi ()->rank (comm) : 0;
}

int
gt_comm_size (const GtComm *comm)
{
  return comm ? mpi ()->size (comm) : 1;
}

int
gt_comm_local_rank (const GtComm *comm)
{
  return comm ? mpi ()->local_rank (comm) : 0;
}

int
gt_comm_local_size (const GtComm *comm)
{
  return comm ? mpi ()->local_size (comm) : 1;
}

int
gt_comm_allreduce (GtComm *comm, void *values, size_t count, GtCommType type,
    GtCommOp op, char *why, size_t why_size)
{
  if (comm == NULL) {
    snprintf (why, why_size, "no communicator");
    return -1;
  }
  return mpi ()->allreduce (comm, values, count, type, op, why, why_size);
}

int
gt_comm_broadcast (GtComm *comm, void *data, size_t bytes, int root, char *why,
    size_t why_size)
{
  if (comm == NULL) {
    snprintf (why, why_size, "no communicator");
    return -1;
  }
  return mpi ()->broadcast (comm, data, bytes, root, why, why_size);
}

void
gt_comm_abort (GtComm *comm, int code, const char *message)
{
  if (comm == NULL || mpi () == NULL) {
    gt_log (NULL, GT_LOG_ERROR, "%s", message);
    exit (code);
  }
  mpi ()->abort (comm, code, message);
}

void
gt_comm_set_timeout (GtComm *comm, double seconds)
{
  if (comm != NULL)
    mpi ()->set_timeout (comm, seconds);
}

double
gt_comm_timeout (const GtComm *comm)
{
  return comm ? mpi ()->timeout (comm) : 0;
}

void
gt_comm_set_activity (GtComm *comm, const char *what, int64_t step)
{
  if (comm != NULL)
    mpi ()->set_activity (comm, what, step);
}

int
gt_comm_gave_up (GtComm *comm, char *why, size_t why_size)
{
  if (comm == NULL) {
    snprintf (why, why_size, "no communicator");
    return GT_ERROR_INVALID;
  }
  return mpi ()->gave_up (comm, why, why_size);
}

int
gt_comm_timed_out (const GtComm *comm)
{
  return comm ? mpi ()->timed_out (comm) : 0;
}

/* Only trainers with a communicator call these: the module is loaded. */
void
gt_dist_trainer_joined (void)
{
  mpi ()->trainer_joined ();
}

void
gt_dist_trainer_left (void)
{
  mpi ()->trainer_left ();
}

/* ---- the steps (backend.h) ---- */

void
gt_dist_trailer_fill (float *trailer, double loss_sum, int top1, int top5,
    int num_samples, int nonfinite, int active)
{
  trailer[GT_DIST_LOSS_SUM] = nonfinite ? 0.f : (float)loss_sum;
  trailer[GT_DIST_TOP1] = (float)top1;
  trailer[GT_DIST_TOP5] = (float)top5;
  trailer[GT_DIST_SAMPLES] = (float)num_samples;
  trailer[GT_DIST_NONFINITE] = nonfinite ? 1.f : 0.f;
  trailer[GT_DIST_ACTIVE] = active ? 1.f : 0.f;
}

int
gt_dist_trailer_read (GtComm *comm, const float *summed, int local_nonfinite,
    int local_active, GtStepResult *result, char *why, size_t why_size)
{
  int size = gt_comm_size (comm);
  /* the lowest rank that left and the lowest whose loss was not finite */
  int64_t culprits[2];
  char reason[768];
  int status;

  result->global_samples = (int64_t)summed[GT_DIST_SAMPLES];
  result->correct_top1 = (int)summed[GT_DIST_TOP1];
  result->correct_top5 = (int)summed[GT_DIST_TOP5];
  if (result->global_samples > 0)
    result->loss = summed[GT_DIST_LOSS_SUM] / (float)result->global_samples;
  if (summed[GT_DIST_ACTIVE] >= (float)size - 0.5f
      && summed[GT_DIST_NONFINITE] < 0.5f)
    return GT_OK;

  culprits[0] = local_active ? size : gt_comm_rank (comm);
  culprits[1] = local_nonfinite ? gt_comm_rank (comm) : size;
  status = gt_comm_allreduce (
      comm, culprits, 2, GT_COMM_INT64, GT_COMM_MIN, reason, sizeof (reason));
  if (status < 0) {
    snprintf (why, why_size, "finding the rank that stopped: %s", reason);
    return status == GT_ERROR_TIMEOUT ? status : GT_ERROR_DEVICE;
  }
  if (summed[GT_DIST_ACTIVE] < (float)size - 0.5f) {
    snprintf (why, why_size,
        "rank %lld left the job (no more data, a stop or an error): every "
        "rank stops here, nothing applied",
        (long long)culprits[0]);
    return GT_ERROR_STOPPED;
  }
  snprintf (why, why_size,
      "the loss of rank %lld%s was not finite: the step was not applied on "
      "any rank",
      (long long)culprits[1],
      summed[GT_DIST_NONFINITE] > 1.5f ? " (and others)" : "");
  result->loss = NAN;
  return GT_ERROR_NONFINITE;
}

int
gt_dist_reduce_step (GtComm *comm, float *buffer, size_t num_grads,
    int local_nonfinite, int local_active, GtStepResult *result, char *why,
    size_t why_size)
{
  double start = gt_seconds_now ();
  char reason[768];
  int status;

  status = gt_comm_allreduce (comm, buffer, num_grads + GT_DIST_TRAILER,
      GT_COMM_FLOAT, GT_COMM_SUM, reason, sizeof (reason));
  if (status < 0) {
    snprintf (why, why_size, "reducing the gradients: %s", reason);
    return status == GT_ERROR_TIMEOUT ? status : GT_ERROR_DEVICE;
  }
  status = gt_dist_trailer_read (comm, buffer + num_grads, local_nonfinite,
      local_active, result, why, why_size);
  if (status == GT_OK) {
    float scale = 1.f / (float)gt_comm_size (comm);
    size_t i;

    for (i = 0; i < num_grads; i++)
      buffer[i] *= scale;
  }
  result->comm_seconds += gt_seconds_now () - start;
  return status;
}
