/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mpi-module.h: the contract between the training library and its MPI
 * module (libgsttrain-mpi.so, trainer/dist-mpi.c), which dist.c opens the
 * first time a process joins a job. Only the module links libmpi, so the
 * library, the sink plugin and single-process training load on machines
 * without Open MPI (a GPU host that never trains data-parallel, say). */
#ifndef GT_MPI_MODULE_H
#define GT_MPI_MODULE_H

#include "trainer.h"

/* Raise when GtMpiModule or what it points to changes meaning. */
#define GT_MPI_MODULE_ABI 2
#define GT_MPI_MODULE_SYMBOL "gt_mpi_module"

typedef struct
{
  int abi; /* GT_MPI_MODULE_ABI */
  GtComm *(*comm_new) (char *why, size_t why_size);
  void (*comm_free) (GtComm *comm);
  int (*rank) (const GtComm *comm);
  int (*size) (const GtComm *comm);
  int (*local_rank) (const GtComm *comm);
  int (*local_size) (const GtComm *comm);
  int (*allreduce) (GtComm *comm, void *values, size_t count, GtCommType type,
      GtCommOp op, char *why, size_t why_size);
  int (*broadcast) (GtComm *comm, void *data, size_t bytes, int root, char *why,
      size_t why_size);
  void (*abort) (GtComm *comm, int code, const char *message);
  /* a trainer of this process joined or left a job (the exit handler
   * aborts the job when one has not left) */
  void (*trainer_joined) (void);
  void (*trainer_left) (void);
  /* collective-timeout: the bound of every collective (0: none), what
   * this rank's next ones are for, and the round that names the ranks that
   * did not arrive after a wait outside MPI (NCCL's) gave up (trainer.h) */
  void (*set_timeout) (GtComm *comm, double seconds);
  double (*timeout) (const GtComm *comm);
  void (*set_activity) (GtComm *comm, const char *what, int64_t step);
  int (*gave_up) (GtComm *comm, char *why, size_t why_size);
  int (*timed_out) (const GtComm *comm);
} GtMpiModule;

#endif /* GT_MPI_MODULE_H */
