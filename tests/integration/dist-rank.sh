#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# dist-rank.sh 'COMMAND LINE': one rank of a test job (see dist-common.sh).
# The launcher says which rank this is; $SRC, $DEC and $SINK take this
# rank's RANKr_SRC, RANKr_DEC and RANKr_SINK (properties for datasetsrc,
# imagedec and cudatrainsink), so that one rank can be given other data, a
# bad location, another error policy or another normalisation. Writes
# $DIST_WORK/rank-r.pid (the pid of the command itself: exec keeps it) and
# $DIST_WORK/rank-r.log.
r=${OMPI_COMM_WORLD_RANK:?not started by mpirun}
eval "SRC=\${RANK${r}_SRC:-} DEC=\${RANK${r}_DEC:-} SINK=\${RANK${r}_SINK:-}"
echo $$ >"$DIST_WORK/rank-$r.pid"
# a command line written over several lines is one command
command=$(printf '%s' "$1" | tr '\n' ' ')
eval "exec $command" >"$DIST_WORK/rank-$r.log" 2>&1
