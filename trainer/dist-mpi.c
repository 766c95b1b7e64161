/* dist-mpi.c: the MPI module (libgsttrain-mpi.so, mpi-module.h): the
 * communicator of a data-parallel job over Open MPI, and what happens to
 * MPI when the process ends.
 *
 * MPI is initialised by the first comm_new and finalised at exit, after
 * every trainer has left its job. A process that exits while one of its
 * trainers is still in a job (it never reached gt_trainer_free: a crash
 * path, an exit() from an error handler) aborts the job instead: its peers
 * would otherwise wait in their next reduction for ever. The module is
 * never closed (the exit handler lives here). */
#include "gt-log.h"
#include "mpi-module.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

struct GtComm
{
  MPI_Comm world;
  int rank;
  int size;
  int local_rank;
  int local_size;
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
    gt_log (NULL, GT_LOG_ERROR,
        "rank %d: exiting while still in a training job: aborting the job",
        rank);
    MPI_Abort (MPI_COMM_WORLD, 1);
  }
  MPI_Finalize ();
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

static GtComm *
mpi_new (char *why, size_t why_size)
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
    MPI_Comm_size (node, &comm->local_size);
    MPI_Comm_free (&node);
  }
  return comm;
}

static void
mpi_free (GtComm *comm)
{
  if (comm == NULL)
    return;
  MPI_Comm_free (&comm->world);
  free (comm);
}

static int
mpi_rank (const GtComm *comm)
{
  return comm ? comm->rank : 0;
}

static int
mpi_size (const GtComm *comm)
{
  return comm ? comm->size : 1;
}

static int
mpi_local_rank (const GtComm *comm)
{
  return comm ? comm->local_rank : 0;
}

static int
mpi_local_size (const GtComm *comm)
{
  return comm && comm->local_size > 0 ? comm->local_size : 1;
}

static int
mpi_allreduce (GtComm *comm, void *values, size_t count, GtCommType type,
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

static int
mpi_broadcast (GtComm *comm, void *data, size_t bytes, int root, char *why,
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

static void
mpi_abort (GtComm *comm, int code, const char *message)
{
  gt_log (NULL, GT_LOG_ERROR, "rank %d: %s", mpi_rank (comm), message);
  MPI_Abort (comm ? comm->world : MPI_COMM_WORLD, code);
}

static void
mpi_trainer_joined (void)
{
  trainers_in_job++;
}

static void
mpi_trainer_left (void)
{
  trainers_in_job--;
}

const GtMpiModule gt_mpi_module = {
  GT_MPI_MODULE_ABI,
  mpi_new,
  mpi_free,
  mpi_rank,
  mpi_size,
  mpi_local_rank,
  mpi_local_size,
  mpi_allreduce,
  mpi_broadcast,
  mpi_abort,
  mpi_trainer_joined,
  mpi_trainer_left,
};
