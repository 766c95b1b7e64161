/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dist-mpi.c: the MPI module (libgsttrain-mpi.so, mpi-module.h): the
 * communicator of a data-parallel job over Open MPI, its bounded
 * collectives, and what happens to MPI when the process ends.
 *
 * MPI is initialised by the first comm_new and finalised at exit, after
 * every trainer has left its job. A process that exits while one of its
 * trainers is still in a job (it never reached gt_trainer_free: a crash
 * path, an exit() from an error handler) aborts the job instead: its peers
 * would otherwise wait in their next reduction for ever. The module is
 * never closed (the exit handler lives here).
 *
 * With a timeout (collective-timeout, gt_comm_set_timeout) every
 * collective is MPI's non-blocking one (MPI_Iallreduce, MPI_Ibcast),
 * tested against a deadline. While it waits, a rank also answers the asks
 * of peers that gave up: each rank keeps a receive posted for them on a
 * communicator of its own (@watch), so nothing is exchanged while the job
 * is healthy. A rank whose deadline passes asks every peer where it is
 * (which collective of the job's order, for what, at which step), waits
 * ASK_SECONDS for the answers, and names the ranks that did not answer:
 * stopped, hung, or cut off. A rank that is asked while it waits gives up
 * too, at once, so that every rank still alive posts its error with the
 * same names. The communicator is broken from then on (a non-blocking
 * collective cannot be cancelled), MPI cannot be finalised without the
 * missing rank, so the job ends: MPI_Abort at exit, or END_SECONDS after
 * the timeout from a thread of its own when the application never exits.
 *
 * In the test build of the module only (GT_TEST_HOOKS, built as
 * libgsttrain-mpi-test.so and never installed; dist-timeout.sh opens it
 * through GT_MPI_MODULE), GT_TEST_DIST_STOP="RANK,N,before|during,WHAT"
 * stops rank RANK with SIGSTOP at its N-th collective for WHAT
 * (gt_comm_set_activity), before it enters it or right after: a rank that
 * stops answering, at a point a test can name. The installed module has
 * no such code. */
#include "gt-clock.h"
#include "gt-log.h"
#include "mpi-module.h"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_ASK 17
#define TAG_ANSWER 18
/* A rank waiting in a collective answers within milliseconds: one that
 * has not answered after this long is not coming. */
#define ASK_SECONDS 2.0
/* After a timeout the job ends this long after at the latest: the time the
 * application has to post the error and exit. */
#define END_SECONDS 5.0
/* A wait longer than this is a straggler, not a reduction: it is polled
 * with pauses, so that a rank waiting for seconds leaves the cores to the
 * ranks that compute. */
#define PATIENT_SECONDS 0.1

typedef enum
{
  POSITION_WAITING = 1,
  POSITION_GAVE_UP = 2,
} PositionState;

/* Where a rank is, as it tells a peer that asks (plain bytes: every rank
 * runs this module). */
typedef struct
{
  int64_t collective; /* the collectives it began, this one included */
  int64_t step;       /* of its activity; < 0: none */
  int32_t state;      /* PositionState */
  char what[44];      /* its activity */
} Position;
struct GtComm
{
  MPI_Comm world;
  MPI_Comm watch; /* the asks and answers after a timeout */
  int rank;
  int size;
  int local_rank;
  int local_size;
  double timeout;   /* seconds; 0: blocking calls */
  const char *what; /* the activity, for the messages */
  int64_t step;
  int64_t collectives; /* begun */
  /* the ask of a peer that gave up, received while waiting */
  MPI_Request ask;
  Position ask_in;
  Position *answers_out; /* what this rank answered, one per peer */
  int asked_by;          /* the first peer that gave up and asked, or -1 */
  /* after a timeout: the reason later collectives fail with */
  int broken;
  char broken_why[768];
#ifdef GT_TEST_HOOKS
  /* GT_TEST_DIST_STOP on this rank: collectives for @stop_what to go */
  int stop_left;
  int stop_here;
  int stop_before;
  char stop_what[64];
#endif
};

/* Trainers of this process in a job they have not left. */
static int trainers_in_job;
static int exit_handler_set;
/* A collective of this process timed out: the job cannot be finalised. */
static volatile int job_broken;

static void
finish_at_exit (void)
{
  int initialized = 0, finalized = 0;

  MPI_Initialized (&initialized);
  MPI_Finalized (&finalized);
  if (!initialized || finalized)
    return;
  if (job_broken || trainers_in_job > 0) {
    int rank = -1;

    MPI_Comm_rank (MPI_COMM_WORLD, &rank);
    gt_log (NULL, GT_LOG_ERROR, "rank %d: %s", rank,
        job_broken ? "a collective timed out (collective-timeout): ending the "
                     "job"
                   : "exiting while still in a training job: aborting the "
                     "job");
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

/* ---- time ---- */

static void
pause_seconds (double seconds)
{
  struct timespec pause = { (time_t)seconds,
    (long)((seconds - (double)(time_t)seconds) * 1e9) };

  while (nanosleep (&pause, &pause) != 0)
    ;
}

/* ---- the test's stop (GT_TEST_DIST_STOP) ---- */

#ifdef GT_TEST_HOOKS
static void
read_stop (GtComm *comm)
{
  const char *text = getenv ("GT_TEST_DIST_STOP");
  char when[16];
  int rank, count, used = 0;

  comm->stop_left = 0;
  if (text == NULL
      || sscanf (text, "%d,%d,%15[a-z],%n", &rank, &count, when, &used) < 3
      || used == 0 || rank != comm->rank || count < 1)
    return;
  comm->stop_left = count;
  comm->stop_before = strcmp (when, "before") == 0;
  snprintf (comm->stop_what, sizeof (comm->stop_what), "%s", text + used);
}

/* Stops this process (SIGSTOP) at the collective the test named: called
 * as it enters each collective (@before) and after it posted it. */
static void
maybe_stop (GtComm *comm, int before)
{
  if (before && comm->stop_left > 0 && comm->what != NULL
      && strcmp (comm->what, comm->stop_what) == 0 && --comm->stop_left == 0)
    comm->stop_here = 1;
  if (!comm->stop_here || before != comm->stop_before)
    return;
  comm->stop_here = 0;
  gt_log (NULL, GT_LOG_WARNING,
      "rank %d: GT_TEST_DIST_STOP: stopping (SIGSTOP) %s the %s", comm->rank,
      before ? "before" : "in", comm->what);
  raise (SIGSTOP);
}
#else /* the installed module: no stop, and not the variable's name */
static void
read_stop (GtComm *comm)
{
  (void)comm;
}

static void
maybe_stop (GtComm *comm, int before)
{
  (void)comm;
  (void)before;
}
#endif

/* ---- joining ---- */

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
    /* hwloc's GL component looks for X displays :0 to :9, falling back
     * to TCP port 6000 + N on this host, and waits for an answer for ever
     * (issue 43): whatever listens on 6006, TensorBoard's port, accepts
     * and never answers as an X server would. A process that joins
     * without a launcher (distributed=mpi alone) becomes an Open MPI
     * singleton whose MPI_Init starts a daemon that probes, and both hang
     * silently. The daemon inherits this environment. Ranks of mpirun or
     * srun --mpi=pmix take the topology from their launcher, which probed
     * before this code ran: the launch lines set it for that. A choice of
     * the user's stands (no overwrite); MPI_Init calls setenv itself, so
     * this adds no new race with other threads' getenv. */
    setenv ("HWLOC_COMPONENTS", "-gl", 0);
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
  code = MPI_Comm_dup (comm->world, &comm->watch);
  comm->answers_out = calloc ((size_t)comm->size, sizeof (Position));
  if (code != MPI_SUCCESS || comm->answers_out == NULL) {
    if (code != MPI_SUCCESS)
      mpi_message (code, "MPI_Comm_dup", why, why_size);
    else
      snprintf (why, why_size, "out of memory");
    free (comm->answers_out);
    MPI_Comm_free (&comm->world);
    free (comm);
    return NULL;
  }
  comm->asked_by = -1;
  comm->step = -1;
  MPI_Irecv (&comm->ask_in, sizeof (Position), MPI_BYTE, MPI_ANY_SOURCE,
      TAG_ASK, comm->watch, &comm->ask);
  read_stop (comm);
  return comm;
}

static void
mpi_free (GtComm *comm)
{
  if (comm == NULL)
    return;
  /* a collective that timed out is still posted on it, and the asks and
   * answers to peers that will not come: left to the abort that ends the
   * job */
  if (comm->broken)
    return;
  MPI_Cancel (&comm->ask);
  MPI_Wait (&comm->ask, MPI_STATUS_IGNORE);
  MPI_Comm_free (&comm->watch);
  MPI_Comm_free (&comm->world);
  free (comm->answers_out);
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

static void
mpi_set_timeout (GtComm *comm, double seconds)
{
  comm->timeout = seconds > 0 ? seconds : 0;
}

static double
mpi_timeout (const GtComm *comm)
{
  return comm ? comm->timeout : 0;
}

static void
mpi_set_activity (GtComm *comm, const char *what, int64_t step)
{
  comm->what = what;
  comm->step = step;
}

/* ---- timeouts ---- */

/* "the gradient all-reduce at step 5" */
static void
describe (const char *what, int64_t step, char *text, size_t size)
{
  if (step >= 0)
    snprintf (text, size, "the %s at step %lld", what ? what : "collective",
        (long long)step);
  else
    snprintf (text, size, "the %s", what ? what : "collective");
}

static void
fill_position (const GtComm *comm, PositionState state, Position *position)
{
  memset (position, 0, sizeof (*position));
  position->collective = comm->collectives;
  position->step = comm->step;
  position->state = state;
  snprintf (position->what, sizeof (position->what), "%s",
      comm->what ? comm->what : "collective");
}

/* Answers every ask that came (a peer gave up: it wants to know where this
 * rank is), noting the first peer that asked. */
static void
answer_asks (GtComm *comm, PositionState state)
{
  for (;;) {
    MPI_Status status;
    MPI_Request sent;
    int arrived = 0, peer;

    if (MPI_Test (&comm->ask, &arrived, &status) != MPI_SUCCESS || !arrived)
      return;
    peer = status.MPI_SOURCE;
    if (comm->asked_by < 0)
      comm->asked_by = peer;
    fill_position (comm, state, &comm->answers_out[peer]);
    if (MPI_Isend (&comm->answers_out[peer], sizeof (Position), MPI_BYTE, peer,
            TAG_ANSWER, comm->watch, &sent)
        == MPI_SUCCESS)
      MPI_Request_free (&sent);
    MPI_Irecv (&comm->ask_in, sizeof (Position), MPI_BYTE, MPI_ANY_SOURCE,
        TAG_ASK, comm->watch, &comm->ask);
  }
}

/* Appends ", " or " and " then "rank R" to @list. */
static void
list_rank (char *list, size_t size, int rank, int *count)
{
  size_t used = strlen (list);

  snprintf (list + used, size - used, "%s%d", *count ? ", " : "", rank);
  (*count)++;
}

/* This rank gives up the collective it waits in (after @waited seconds):
 * asks every peer where it is, waits up to ASK_SECONDS for the answers
 * (answering the asks of others meanwhile), and writes into @why the
 * collective, its step and the ranks that did not arrive. Breaks @comm and
 * makes sure the job ends. */
static void end_job_later (void);

static int
give_up (GtComm *comm, double waited, char *why, size_t why_size)
{
  /* the asks and answers stay posted after this returns: kept for the life
   * of the process, as the broken communicator is */
  Position *answers = calloc ((size_t)comm->size, sizeof (Position));
  MPI_Request *requests = calloc ((size_t)comm->size * 2, sizeof (MPI_Request));
  Position *mine = calloc (1, sizeof (Position));
  int *answered = calloc ((size_t)comm->size, sizeof (int));
  char where[128], missing[256] = "", elsewhere[512] = "", there[256] = "";
  int pending = 0, n_missing = 0, n_there = 0, peer;
  double deadline;

  comm->broken = 1;
  job_broken = 1;
  describe (comm->what, comm->step, where, sizeof (where));
  if (answers == NULL || requests == NULL || mine == NULL || answered == NULL) {
    snprintf (comm->broken_why, sizeof (comm->broken_why),
        "%s did not complete within collective-timeout=%g s", where,
        comm->timeout);
    snprintf (why, why_size, "%s", comm->broken_why);
    end_job_later ();
    return GT_ERROR_TIMEOUT;
  }
  fill_position (comm, POSITION_GAVE_UP, mine);
  for (peer = 0; peer < comm->size; peer++) {
    requests[2 * peer] = requests[2 * peer + 1] = MPI_REQUEST_NULL;
    if (peer == comm->rank)
      continue;
    MPI_Isend (mine, sizeof (Position), MPI_BYTE, peer, TAG_ASK, comm->watch,
        &requests[2 * peer]);
    if (MPI_Irecv (&answers[peer], sizeof (Position), MPI_BYTE, peer,
            TAG_ANSWER, comm->watch, &requests[2 * peer + 1])
        == MPI_SUCCESS)
      pending++;
  }
  deadline = gt_seconds_now () + ASK_SECONDS;
  while (pending > 0 && gt_seconds_now () < deadline) {
    for (peer = 0; peer < comm->size; peer++) {
      int done = 0;

      if (peer == comm->rank || answered[peer])
        continue;
      MPI_Test (&requests[2 * peer + 1], &done, MPI_STATUS_IGNORE);
      if (done) {
        answered[peer] = 1;
        pending--;
      }
    }
    answer_asks (comm, POSITION_GAVE_UP);
    pause_seconds (0.001);
  }
  for (peer = 0; peer < comm->size; peer++) {
    if (peer == comm->rank)
      continue;
    if (!answered[peer]) {
      list_rank (missing, sizeof (missing), peer, &n_missing);
    } else if (answers[peer].collective != comm->collectives) {
      char theirs[128];
      size_t used = strlen (elsewhere);

      answers[peer].what[sizeof (answers[peer].what) - 1] = '\0';
      describe (
          answers[peer].what, answers[peer].step, theirs, sizeof (theirs));
      snprintf (elsewhere + used, sizeof (elsewhere) - used, "; rank %d %s %s",
          peer,
          answers[peer].collective > comm->collectives ? "went on to"
                                                       : "is still in",
          theirs);
    } else {
      list_rank (there, sizeof (there), peer, &n_there);
    }
  }
  if (comm->asked_by >= 0 && waited < comm->timeout)
    snprintf (comm->broken_why, sizeof (comm->broken_why),
        "rank %d gave up %s after collective-timeout=%g s", comm->asked_by,
        where, comm->timeout);
  else
    snprintf (comm->broken_why, sizeof (comm->broken_why),
        "%s did not complete within collective-timeout=%g s", where,
        comm->timeout);
  if (n_missing > 0) {
    size_t used = strlen (comm->broken_why);

    snprintf (comm->broken_why + used, sizeof (comm->broken_why) - used,
        ": rank%s %s did not arrive (no answer within %g s: stopped, hung, "
        "or cut off from rank %d)",
        n_missing > 1 ? "s" : "", missing, ASK_SECONDS, comm->rank);
  } else if (elsewhere[0] == '\0') {
    size_t used = strlen (comm->broken_why);

    snprintf (comm->broken_why + used, sizeof (comm->broken_why) - used,
        ": every rank answered from it: the transfer itself stalled");
  }
  if (elsewhere[0] != '\0') {
    size_t used = strlen (comm->broken_why);

    snprintf (comm->broken_why + used, sizeof (comm->broken_why) - used, "%s%s",
        n_missing > 0 ? "" : ":", elsewhere + (n_missing > 0 ? 0 : 1));
  }
  if (n_there > 0) {
    size_t used = strlen (comm->broken_why);

    snprintf (comm->broken_why + used, sizeof (comm->broken_why) - used,
        "; rank%s %s waited in it too", n_there > 1 ? "s" : "", there);
  }
  snprintf (why, why_size, "%s", comm->broken_why);
  free (answered);
  end_job_later ();
  return GT_ERROR_TIMEOUT;
}

static void *
end_job (void *data)
{
  (void)data;
  pause_seconds (END_SECONDS);
  gt_log (NULL, GT_LOG_ERROR,
      "a collective timed out %g s ago and this process is still running: "
      "ending the job",
      END_SECONDS);
  MPI_Abort (MPI_COMM_WORLD, 1);
  return NULL;
}

/* The job ends END_SECONDS from now at the latest, or when the process
 * exits (finish_at_exit), whichever comes first. */
static void
end_job_later (void)
{
  static int started;
  pthread_t thread;

  if (started)
    return;
  started = 1;
  if (pthread_create (&thread, NULL, end_job, NULL) == 0)
    pthread_detach (thread);
}

static int
mpi_timed_out (const GtComm *comm)
{
  return comm != NULL && comm->broken;
}

static int
mpi_gave_up (GtComm *comm, char *why, size_t why_size)
{
  if (comm->broken) {
    snprintf (why, why_size, "%s", comm->broken_why);
    return GT_ERROR_TIMEOUT;
  }
  return give_up (comm, comm->timeout, why, why_size);
}

/* Waits for @request, a collective that this rank entered, within the
 * timeout; GT_ERROR_TIMEOUT (after give_up) or -1 with the reason when it
 * does not complete. */
static int
wait_bounded (GtComm *comm, MPI_Request *request, const char *function,
    char *why, size_t why_size)
{
  double start = gt_seconds_now (), waited = 0;
  unsigned polls;

  for (polls = 0;; polls++) {
    int done = 0, code = MPI_Test (request, &done, MPI_STATUS_IGNORE);

    if (code != MPI_SUCCESS) {
      mpi_message (code, function, why, why_size);
      return -1;
    }
    if (done)
      return 0;
    answer_asks (comm, POSITION_WAITING);
    /* the clock every 64 polls: a poll is well under a microsecond */
    if ((polls & 63) == 0)
      waited = gt_seconds_now () - start;
    if (waited >= comm->timeout || comm->asked_by >= 0)
      return give_up (comm, waited, why, why_size);
    if (waited > PATIENT_SECONDS)
      pause_seconds (1e-4);
    else if ((polls & 63) == 63)
      sched_yield ();
  }
}

/* Refuses a collective on a broken communicator; counts it and stops the
 * test's rank before it, as asked. */
static int
enter (GtComm *comm, char *why, size_t why_size)
{
  if (comm->broken) {
    snprintf (why, why_size, "a collective of this job timed out earlier: %s",
        comm->broken_why);
    return GT_ERROR_TIMEOUT;
  }
  comm->collectives++;
  maybe_stop (comm, 1);
  return 0;
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
  int status = enter (comm, why, why_size);

  if (status < 0)
    return status;
  /* MPI counts are int: large buffers go in pieces */
  while (done < count) {
    size_t piece = count - done > (1u << 30) ? (1u << 30) : count - done;
    void *at = (char *)values + done * element;
    MPI_Request request;
    int code;

    if (comm->timeout <= 0) {
      code = MPI_Allreduce (
          MPI_IN_PLACE, at, (int)piece, datatype, ops[op], comm->world);
    } else {
      code = MPI_Iallreduce (MPI_IN_PLACE, at, (int)piece, datatype, ops[op],
          comm->world, &request);
      if (code == MPI_SUCCESS) {
        maybe_stop (comm, 0);
        status = wait_bounded (comm, &request, "MPI_Iallreduce", why, why_size);
        if (status < 0)
          return status;
      }
    }
    if (code != MPI_SUCCESS) {
      mpi_message (code,
          comm->timeout <= 0 ? "MPI_Allreduce" : "MPI_Iallreduce", why,
          why_size);
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
  int status = enter (comm, why, why_size);

  if (status < 0)
    return status;
  while (done < bytes) {
    size_t piece = bytes - done > (1u << 30) ? (1u << 30) : bytes - done;
    MPI_Request request;
    int code;

    if (comm->timeout <= 0) {
      code = MPI_Bcast (
          (char *)data + done, (int)piece, MPI_BYTE, root, comm->world);
    } else {
      code = MPI_Ibcast ((char *)data + done, (int)piece, MPI_BYTE, root,
          comm->world, &request);
      if (code == MPI_SUCCESS) {
        maybe_stop (comm, 0);
        status = wait_bounded (comm, &request, "MPI_Ibcast", why, why_size);
        if (status < 0)
          return status;
      }
    }
    if (code != MPI_SUCCESS) {
      mpi_message (
          code, comm->timeout <= 0 ? "MPI_Bcast" : "MPI_Ibcast", why, why_size);
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
  mpi_set_timeout,
  mpi_timeout,
  mpi_set_activity,
  mpi_gave_up,
  mpi_timed_out,
};
