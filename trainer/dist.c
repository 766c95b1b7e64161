/* dist.c: data-parallel jobs over MPI. The communicator, the reduction of a
 * step's gradients and trailer (backend.h), and what happens to MPI when
 * the process ends.
 *
 * MPI is initialised by the first gt_comm_new and finalised at exit, after
 * every trainer has left its job. A process that exits while one of its
 * trainers is still in a job (it never reached gt_trainer_free: a crash
 * path, an exit() from an error handler) aborts the job instead: its peers
 * would otherwise wait in their next reduction for ever. */
#include "trainer-private.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef GT_HAVE_MPI
#include <mpi.h>
#endif

#ifdef GT_HAVE_MPI
struct GtComm
{
  MPI_Comm world;
  int rank;
  int size;
  int local_rank;
};

/* Trainers of this process in a job they have not left. */
static int trainers_in_job;
static int exit_handler_set;

static void
finish_at_exit (void)
{
  int initialized = 0, finalized = 0;

  MPI_Initialized (&initialized);
  MPI_Finalized (&finalized);
  if (!initialized || finalized)
    return;
  if (trainers_in_job > 0) {
    int rank = -1;

    MPI_Comm_rank (MPI_COMM_WORLD, &rank);
    fprintf (stderr,
        "gst-train: rank %d: exiting while still in a training job: "
        "aborting the job\n",
        rank);
    MPI_Abort (MPI_COMM_WORLD, 1);
  }
  MPI_Finalize ();
}

int
gt_dist_built (void)
{
  return 1;
}

static void
mpi_message (int code, const char *what, char *why, size_t why_size)
{
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;

  if (MPI_Error_string (code, text, &length) != MPI_SUCCESS)
    snprintf (text, sizeof (text), "MPI error %d", code);
  snprintf (why, why_size, "%s: %s", what, text);
}

GtComm *
gt_comm_new (char *why, size_t why_size)
{
  int initialized = 0, finalized = 0, provided = 0, code;
  MPI_Comm node;
  GtComm *comm;

  MPI_Finalized (&finalized);
  if (finalized) {
    snprintf (why, why_size, "MPI was finalised: a process joins one job");
    return NULL;
  }
  MPI_Initialized (&initialized);
  if (!initialized) {
    code = MPI_Init_thread (NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    if (code != MPI_SUCCESS) {
      mpi_message (code, "MPI_Init_thread", why, why_size);
      return NULL;
    }
    if (provided < MPI_THREAD_SERIALIZED) {
      snprintf (why, why_size,
          "this MPI offers thread level %d, below MPI_THREAD_SERIALIZED: "
          "the pipeline calls it from its streaming thread",
          provided);
      return NULL;
    }
  } else {
    MPI_Query_thread (&provided);
    if (provided < MPI_THREAD_SERIALIZED) {
      snprintf (why, why_size,
          "MPI was initialised by the application at thread level %d: "
          "gst-train needs MPI_THREAD_SERIALIZED or above",
          provided);
      return NULL;
    }
  }
  if (!exit_handler_set) {
    atexit (finish_at_exit);
    exit_handler_set = 1;
  }
  comm = calloc (1, sizeof (GtComm));
  if (comm == NULL) {
    snprintf (why, why_size, "out of memory");
    return NULL;
  }
  /* errors come back as codes with messages, not as an abort */
  code = MPI_Comm_dup (MPI_COMM_WORLD, &comm->world);
  if (code != MPI_SUCCESS) {
    mpi_message (code, "MPI_Comm_dup", why, why_size);
    free (comm);
    return NULL;
  }
  MPI_Comm_set_errhandler (comm->world, MPI_ERRORS_RETURN);
  MPI_Comm_rank (comm->world, &comm->rank);
  MPI_Comm_size (comm->world, &comm->size);
  if (MPI_Comm_split_type (
          comm->world, MPI_COMM_TYPE_SHARED, comm->rank, MPI_INFO_NULL, &node)
      == MPI_SUCCESS) {
    MPI_Comm_rank (node, &comm->local_rank);
    MPI_Comm_free (&node);
  }
  return comm;
}

void
gt_comm_free (GtComm *comm)
{
  if (comm == NULL)
    return;
  MPI_Comm_free (&comm->world);
  free (comm);
}

int
gt_comm_rank (const GtComm *comm)
{
  return comm ? comm->rank : 0;
}

int
gt_comm_size (const GtComm *comm)
{
  return comm ? comm->size : 1;
}

int
gt_comm_local_rank (const GtComm *comm)
{
  return comm ? comm->local_rank : 0;
}

int
gt_comm_allreduce (GtComm *comm, void *values, size_t count, GtCommType type,
    GtCommOp op, char *why, size_t why_size)
{
  static const MPI_Op ops[] = { MPI_SUM, MPI_MAX, MPI_MIN };
  MPI_Datatype datatype = type == GT_COMM_FLOAT ? MPI_FLOAT
      : type == GT_COMM_DOUBLE                  ? MPI_DOUBLE
                                                : MPI_INT64_T;
  size_t element = type == GT_COMM_FLOAT ? sizeof (float) : 8, done = 0;

  /* MPI counts are int: large buffers go in pieces */
  while (done < count) {
    size_t piece = count - done > (1u << 30) ? (1u << 30) : count - done;
    int code = MPI_Allreduce (MPI_IN_PLACE, (char *)values + done * element,
        (int)piece, datatype, ops[op], comm->world);

    if (code != MPI_SUCCESS) {
      mpi_message (code, "MPI_Allreduce", why, why_size);
      return -1;
    }
    done += piece;
  }
  return 0;
}

int
gt_comm_broadcast (GtComm *comm, void *data, size_t bytes, int root, char *why,
    size_t why_size)
{
  size_t done = 0;

  while (done < bytes) {
    size_t piece = bytes - done > (1u << 30) ? (1u << 30) : bytes - done;
    int code = MPI_Bcast (
        (char *)data + done, (int)piece, MPI_BYTE, root, comm->world);

    if (code != MPI_SUCCESS) {
      mpi_message (code, "MPI_Bcast", why, why_size);
      return -1;
    }
    done += piece;
  }
  return 0;
}

void
gt_comm_abort (GtComm *comm, int code, const char *message)
{
  fprintf (stderr, "gst-train: rank %d: %s\n", gt_comm_rank (comm), message);
  fflush (stderr);
  MPI_Abort (comm ? comm->world : MPI_COMM_WORLD, code);
}

void
gt_dist_trainer_joined (void)
{
  trainers_in_job++;
}

void
gt_dist_trainer_left (void)
{
  trainers_in_job--;
}

#else /* !GT_HAVE_MPI */

int
gt_dist_built (void)
{
  return 0;
}

GtComm *
gt_comm_new (char *why, size_t why_size)
{
  snprintf (why, why_size,
      "this build has no MPI (rebuild with libopenmpi-dev installed, meson "
      "-Dmpi=enabled)");
  return NULL;
}

void
gt_comm_free (GtComm *comm)
{
  (void)comm;
}

int
gt_comm_rank (const GtComm *comm)
{
  (void)comm;
  return 0;
}

int
gt_comm_size (const GtComm *comm)
{
  (void)comm;
  return 1;
}

int
gt_comm_local_rank (const GtComm *comm)
{
  (void)comm;
  return 0;
}

int
gt_comm_allreduce (GtComm *comm, void *values, size_t count, GtCommType type,
    GtCommOp op, char *why, size_t why_size)
{
  (void)comm;
  (void)values;
  (void)count;
  (void)type;
  (void)op;
  snprintf (why, why_size, "this build has no MPI");
  return -1;
}

int
gt_comm_broadcast (GtComm *comm, void *data, size_t bytes, int root, char *why,
    size_t why_size)
{
  (void)comm;
  (void)data;
  (void)bytes;
  (void)root;
  snprintf (why, why_size, "this build has no MPI");
  return -1;
}

void
gt_comm_abort (GtComm *comm, int code, const char *message)
{
  (void)comm;
  fprintf (stderr, "gst-train: %s\n", message);
  exit (code);
}

void
gt_dist_trainer_joined (void)
{}

void
gt_dist_trainer_left (void)
{}

#endif /* GT_HAVE_MPI */

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
  char reason[256];

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
  if (gt_comm_allreduce (comm, culprits, 2, GT_COMM_INT64, GT_COMM_MIN, reason,
          sizeof (reason))
      < 0) {
    snprintf (why, why_size, "finding the rank that stopped: %s", reason);
    return GT_ERROR_DEVICE;
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
  struct timespec start, end;
  char reason[256];
  int status;

  clock_gettime (CLOCK_MONOTONIC, &start);
  if (gt_comm_allreduce (comm, buffer, num_grads + GT_DIST_TRAILER,
          GT_COMM_FLOAT, GT_COMM_SUM, reason, sizeof (reason))
      < 0) {
    snprintf (why, why_size, "reducing the gradients: %s", reason);
    return GT_ERROR_DEVICE;
  }
  status = gt_dist_trailer_read (comm, buffer + num_grads, local_nonfinite,
      local_active, result, why, why_size);
  if (status == GT_OK) {
    float scale = 1.f / (float)gt_comm_size (comm);
    size_t i;

    for (i = 0; i < num_grads; i++)
      buffer[i] *= scale;
  }
  clock_gettime (CLOCK_MONOTONIC, &end);
  result->comm_seconds += (double)(end.tv_sec - start.tv_sec)
      + (double)(end.tv_nsec - start.tv_nsec) * 1e-9;
  return status;
}
