# shellcheck shell=sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# netns-hosts.sh: two "hosts" on this machine for data-parallel jobs over
# TCP, sourced by tests/integration/dist-hosts.sh and bench/dist-hosts.sh
# (root: network namespaces, a bridge and veth pairs).
#
# hosts_up DIR
#   makes two network namespaces, each with its own address (HOST_A,
#   HOST_B in HOSTS_NET, a /24 that exists only inside them), joined by a
#   bridge made here that has no address itself: nothing is routed from or
#   to anywhere else. DIR gets the rsh agent ($HOSTS_AGENT) through which
#   Open MPI starts its daemon on a host: it runs the command in that
#   host's namespace. Exits 1, saying what was refused, where namespaces
#   cannot be made. Everything is removed by hosts_down, which the caller
#   runs at exit (trap), on failure too.
# hosts_mpirun ARGS...
#   Open MPI's mpirun from inside HOST_A's namespace, one rank on each host
#   (--host HOST_A,HOST_B), TCP only (btl tcp,self, pml ob1: no shared
#   memory between the ranks), its daemons' connections (oob) on HOSTS_NET
#   with TCP keepalives of 1 s, 3 probes, so that a host cut off ends the
#   job within seconds instead of leaving mpirun waiting for that host's
#   daemon. Run through $HOSTS_LAUNCHER where it is set (the tests set it
#   to bounded, of tests/bounded.sh).
# hosts_cut: takes HOST_B's link to the bridge down (the cable pulled).
# hosts_down: kills what still runs in the namespaces, removes them, the
#   bridge and the links.

hosts_up() {
  hosts_dir=$1
  # names of this run (interface names: 15 characters at most)
  hosts_tag=gt$$
  HOSTS_NS_A=$hosts_tag-a
  HOSTS_NS_B=$hosts_tag-b
  hosts_bridge=${hosts_tag}br
  hosts_link_a=${hosts_tag}va
  hosts_link_b=${hosts_tag}vb
  HOSTS_NET=10.213.7.0/24
  HOST_A=10.213.7.1
  HOST_B=10.213.7.2
  hosts_made=1
  hosts_try ip link add "$hosts_bridge" type bridge
  hosts_try ip link set "$hosts_bridge" up
  for h in a b; do
    eval "ns=\$HOSTS_NS_$(echo $h | tr ab AB) link=\$hosts_link_$h"
    eval "address=\$HOST_$(echo $h | tr ab AB)"
    hosts_try ip netns add "$ns"
    hosts_try ip link add "$link" type veth peer name eth0 netns "$ns"
    hosts_try ip link set "$link" master "$hosts_bridge" up
    hosts_try ip -n "$ns" addr add "$address/24" dev eth0
    hosts_try ip -n "$ns" link set eth0 up
    hosts_try ip -n "$ns" link set lo up
  done
  HOSTS_AGENT=$hosts_dir/netns-agent.sh
  cat >"$HOSTS_AGENT" <<EOF
#!/bin/sh
# plm_rsh_agent: HOST COMMAND... runs COMMAND in HOST's namespace, as ssh
# would run it on HOST
host=\$1
shift
case \$host in
  $HOST_A) ns=$HOSTS_NS_A ;;
  $HOST_B) ns=$HOSTS_NS_B ;;
  *) echo "netns-agent: no host \$host here" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
EOF
  chmod +x "$HOSTS_AGENT"
}

# hosts_try COMMAND...: runs it; a refusal ends the caller with status 1
hosts_try() {
  "$@" 2>"$hosts_dir/ip.err" && return 0
  echo "FAIL: cannot make the test's hosts: '$*' was refused: $(cat "$hosts_dir/ip.err")"
  echo "(network namespaces, bridges and veth pairs need root and a kernel that allows them)"
  exit 1
}

hosts_mpirun() {
  ${HOSTS_LAUNCHER:-} ip netns exec "$HOSTS_NS_A" mpirun -np 2 --host "$HOST_A,$HOST_B" \
    --mca plm_rsh_agent "$HOSTS_AGENT" \
    --mca btl tcp,self --mca pml ob1 \
    --mca btl_tcp_if_include "$HOSTS_NET" --mca oob_tcp_if_include "$HOSTS_NET" \
    --mca oob_tcp_keepalive_time 1 --mca oob_tcp_keepalive_intvl 1 \
    --mca oob_tcp_keepalive_probes 3 \
    ${GST_TRAIN_TEST_PRELOAD:+-x LD_PRELOAD="$GST_TRAIN_TEST_PRELOAD"} "$@"
}

hosts_cut() {
  ip link set "$hosts_link_b" down
}

hosts_down() {
  [ -n "${hosts_made:-}" ] || return 0
  for ns in "$HOSTS_NS_A" "$HOSTS_NS_B"; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
  done
  for ns in "$HOSTS_NS_A" "$HOSTS_NS_B"; do
    ip netns del "$ns" 2>/dev/null || true
  done
  for link in "$hosts_link_a" "$hosts_link_b" "$hosts_bridge"; do
    ip link del "$link" 2>/dev/null || true
  done
  hosts_made=
}
