/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* gt-launcher.h: where a launcher (mpirun, srun, a PMI launcher) placed
 * this process, read from the environment alone, with no MPI call. The
 * data elements use it to pick their rank's part without linking MPI; the
 * trainer uses it to decide whether to join a job (distributed=auto), after
 * which MPI's own answer is the one that counts.
 *
 * Header-only, no GLib: both the GStreamer elements and the trainer
 * include it. */
#ifndef GT_LAUNCHER_H
#define GT_LAUNCHER_H

#include <stdlib.h>
#include <string.h>

typedef struct
{
  int rank;
  int size;
  int local_rank;
  const char *source; /* the variables it came from, or "none" */
} GtLauncherPosition;

/* A non-negative integer from variable @name, else -1. */
static inline int
gt_launcher_env_int (const char *name)
{
  const char *text = getenv (name);
  char *end;
  long value;

  if (text == NULL || *text == '\0')
    return -1;
  value = strtol (text, &end, 10);
  if (*end != '\0' || value < 0 || value > 1 << 24)
    return -1;
  return (int)value;
}

/* The source of a position read from Slurm's variables alone. */
#define GT_LAUNCHER_SLURM_SOURCE "SLURM_PROCID/SLURM_NTASKS"

/* Fills @position from the first launcher whose variables are set:
 * Open MPI (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK), then PMI (PMI_RANK,
 * PMI_SIZE, MPI_LOCALRANKID), then PMIx (PMIX_RANK, with the size and
 * local rank of Slurm or Open MPI when set), then Slurm (SLURM_PROCID,
 * SLURM_NTASKS, SLURM_LOCALID). Returns 1 when one was found, else 0 with
 * rank 0, size 1, local rank 0. A rank not below the size counts as not
 * found. */
static inline int
gt_launcher_position (GtLauncherPosition *position)
{
  static const struct
  {
    const char *rank, *size, *local_rank, *source;
  } launchers[] = {
    { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
        "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_*" },
    { "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_RANK/PMI_SIZE" },
    { "PMIX_RANK", "SLURM_NTASKS", "SLURM_LOCALID", "PMIX_RANK" },
    { "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
        GT_LAUNCHER_SLURM_SOURCE },
  };
  unsigned i;

  for (i = 0; i < sizeof (launchers) / sizeof (launchers[0]); i++) {
    int rank = gt_launcher_env_int (launchers[i].rank);
    int size = gt_launcher_env_int (launchers[i].size);
    int local_rank = gt_launcher_env_int (launchers[i].local_rank);

    if (rank >= 0 && size > rank) {
      position->rank = rank;
      position->size = size;
      position->local_rank = local_rank >= 0 ? local_rank : 0;
      position->source = launchers[i].source;
      return 1;
    }
  }
  position->rank = 0;
  position->size = 1;
  position->local_rank = 0;
  position->source = "none";
  return 0;
}

/* 1 when @position came from Slurm's variables alone, for a job of more
 * than one task: srun started this process without PMIx or PMI (no
 * --mpi=pmix or --mpi=pmi2, and MpiDefault=none), so MPI has no rank
 * information to start from and would make each task a job of its own. */
static inline int
gt_launcher_slurm_without_pmi (const GtLauncherPosition *position)
{
  return position->size > 1
      && strcmp (position->source, GT_LAUNCHER_SLURM_SOURCE) == 0;
}

#endif /* GT_LAUNCHER_H */
