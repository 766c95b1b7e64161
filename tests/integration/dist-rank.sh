#!/bin/sh
# dist-rank.sh 'COMMAND LINE': one rank of a test job (see dist-common.sh).
# The launcher says which rank this is; $SRC and $SINK take this rank's
# RANKr_SRC and RANKr_SINK, so that one rank can be given other data, a
# bad location or another normalisation. Writes $DIST_WORK/rank-r.pid (the
# pid of the command itself: exec keeps it) and $DIST_WORK/rank-r.log.
r=${OMPI_COMM_WORLD_RANK:?not started by mpirun}
eval "SRC=\${RANK${r}_SRC:-} SINK=\${RANK${r}_SINK:-}"
echo $$ >"$DIST_WORK/rank-$r.pid"
eval "exec $1" >"$DIST_WORK/rank-$r.log" 2>&1
