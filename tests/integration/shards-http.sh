#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# datasetsrc on WebDataset shards over HTTP (libcurl), against servers this
# test starts on the loopback:
#   Debian's nginx: the samples (labels, sizes, epochs, order) are those of
#   the same shards read from files, shuffled, with fetch-ahead 0 and 3 and
#   without interleave, and from a start position (the held samples by
#   range requests); an exact resume over HTTP from places inside the first
#   rotation of the interleaved shards, where shards end, near an epoch's
#   end and in the next epoch, with fetch-ahead 0, 1 and 2, gives the
#   straight run's samples and bytes from there on; a missing shard is an
#   HTTP 404: an error that names the URL, no retries;
#   flaky_http.py: a server that closes mid-shard twice per shard (the
#   transfers start again from the byte reached: the same samples; with
#   GST_DEBUG=datasetsrc-fetch:5 the log shows each request with its URL
#   and byte range, and each retry with its cause and its pause), one
#   that always closes before sending anything and one that always answers
#   503 (errors naming the
#   URL and the attempts, after the retries), nothing listening at all;
#   (a server that cuts every transfer short but sends more each time
#   succeeds: only attempts in a row without progress count);
#   one that cuts every transfer, wherever it starts, where half of what
#   the client needs from it is sent, and its retry the same way: from a
#   start position (a shard read from the middle, the held samples by range
#   requests) each retry's Range asks for the byte where its transfer was
#   cut (whole shards from byte 0, transfers that start past it, ranges),
#   and the same bytes as from files come out (a server that answers a
#   range asked again sends it again, so a retry from the wrong byte gives
#   wrong bytes);
#   shards fetched ahead are fetched at once (3 transfers at a time with
#   fetch-ahead=2, 1 with 0);
#   and samples come out as their bytes arrive, from every shard being
#   fetched: with fetch-ahead=2 and a server that holds back the end of
#   every shard (3 of 200 samples, sent at about 400 KB/s a connection),
#   samples of all 3 come out before any shard is complete.
# Every comparison with files is of the samples (labels, sizes, order) and
# of their bytes.
# Usage: shards-http.sh DATASET-TOOL DUMP-SAMPLES
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/fashion-mnist-slice.sh"
fashion_mnist_slice "$1" shards-http 8 8
dump=$2
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx" ] || { echo "SKIP: nginx is not installed"; exit 77; }
"$1" fashion-mnist --output "$work/sh" --limit-train 48 --limit-test 8 \
  --shard-size 8 >/dev/null
pattern='train-{000000..000005}.tar'

pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
py() { /usr/bin/python3 "$@"; }
free_port() {
  py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_port() {
  py -c 'import socket, sys, time
for _ in range(200):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)' "$1" || fail "nothing listens on port $1"
}

# samples OUT LOCATION PROPS: what datasetsrc pushes, in dump-samples' lines,
# and their bytes one after the other in OUT.bytes
samples() {
  "$dump" "datasetsrc location=\"$2\" num-classes=10 $3 ! tee name=t
    ! queue ! fakesink name=sink t. ! queue ! filesink location=\"$1.bytes\"" \
    >"$1" 2>"$1.err" || { cat "$1.err"; fail "datasetsrc on $2 $3"; }
}
# fails COMMENT LOCATION PROPS PART...: datasetsrc fails, its error holds
# every PART
fails() {
  f_what=$1 f_location=$2 f_props=$3
  shift 3
  if "$dump" "datasetsrc location=\"$f_location\" num-classes=10 $f_props ! fakesink name=sink" \
    >"$work/out" 2>"$work/err"; then
    fail "$f_what: no error"
  fi
  for part in "$@"; do
    grep -qF "$part" "$work/err" || { cat "$work/err"; fail "$f_what: the error does not say \"$part\""; }
  done
}
# same_tail A B N WHAT: the samples of B (over HTTP at $url, from
# start-position N) are those of A (local, from the start) from the
# (N+1)-th on, and so are their bytes
same_tail() {
  grep '^sample' "$1" | sed "s|$work/sh/|$url/|" | tail -n "+$(($3 + 1))" \
    >"$1.tail"
  grep '^sample' "$2" >"$2.samples"
  cmp -s "$1.tail" "$2.samples" || {
    diff "$1.tail" "$2.samples" | head
    fail "over HTTP from start-position $3: not the straight run's samples ($4)"; }
  skip=$(grep '^sample' "$1" | head -n "$3" | awk -F '\t' '{ n += $6 } END { print n + 0 }')
  tail -c "+$((skip + 1))" "$1.bytes" | cmp -s - "$2.bytes" \
    || fail "over HTTP from start-position $3: not the straight run's bytes ($4)"
}
# same A B WHAT: the samples of A (local) and B (over HTTP at $url) are the
# same, and so are their bytes
same() {
  # the class lines come from the bus, at any place among the samples
  grep '^sample' "$1" | sed "s|$work/sh/|$url/|" >"$1.samples"
  grep '^sample' "$2" >"$2.samples"
  cmp -s "$1.samples" "$2.samples" || {
    diff "$1.samples" "$2.samples" | head
    fail "over HTTP: other samples than from files ($3)"; }
  cmp -s "$1.bytes" "$2.bytes" || {
    # the sample that holds the first byte that differs
    at=$(cmp "$1.bytes" "$2.bytes" 2>&1 | sed -n 's/.* \(byte\|char\) \([0-9]*\).*/\2/p')
    awk -F '\t' -v at="${at:-0}" '/^sample/ { total += $6
      if (total >= at) { print "the bytes differ from byte " at " on, in " $7; exit } }' \
      "$2.samples"
    fail "over HTTP: the samples' bytes are not those of the files ($3)"; }
}

# -- Debian's nginx
mkdir -p "$work/ng/tmp"
port=$(free_port)
url="http://127.0.0.1:$port"
cat >"$work/ng/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $work/ng/nginx.pid;
error_log $work/ng/error.log;
events { worker_connections 64; }
http {
  access_log $work/ng/access.log;
  client_body_temp_path $work/ng/tmp;
  proxy_temp_path $work/ng/tmp;
  fastcgi_temp_path $work/ng/tmp;
  uwsgi_temp_path $work/ng/tmp;
  scgi_temp_path $work/ng/tmp;
  server { listen 127.0.0.1:$port; root $work/sh; }
}
CONF
"$nginx" -e "$work/ng/error.log" -p "$work/ng" -c "$work/ng/nginx.conf" &
pids="$pids $!"
wait_port "$port"

props="seed=3 num-epochs=2 shuffle-buffer-size=5"
samples "$work/local" "$work/sh/$pattern" "$props"
[ "$(grep -c '^sample' "$work/local")" -eq 96 ] || fail "not 96 samples from files"
# fetch-ahead sets how many shards are interleaved: the same on both sides
for more in fetch-ahead=0 fetch-ahead=3 interleave=false; do
  samples "$work/local" "$work/sh/$pattern" "$props $more"
  samples "$work/http" "$url/$pattern" "$props $more"
  same "$work/local" "$work/http" "$more"
done
samples "$work/local" "$work/sh/$pattern" "$props start-position=13"
samples "$work/http" "$url/$pattern" "$props start-position=13"
same "$work/local" "$work/http" "start-position=13"
# exact resume across the interleave, on 6 shards of 7 and one of 2 (a
# shard that ends before the others gives its slot to the next one out of
# step): 3 shards open with fetch-ahead=2, the first ones ending at about
# sample 21 (the buffer holds 5); 44 an epoch
"$1" fashion-mnist --output "$work/sh/uneven" --limit-train 44 --limit-test 8 \
  --shard-size 7 >/dev/null
uneven='uneven/train-{000000..000006}.tar'
for ahead in 0 1 2; do
  samples "$work/local" "$work/sh/$uneven" "$props fetch-ahead=$ahead"
  for start in 1 10 19 23 43 50; do
    samples "$work/http" "$url/$uneven" \
      "$props fetch-ahead=$ahead start-position=$start"
    same_tail "$work/local" "$work/http" "$start" "fetch-ahead=$ahead"
  done
done
fails "a 404" "$url/train-{000000..000006}.tar" "shuffle=false retries=5" \
  "could not fetch \"$url/train-000006.tar\": not found (HTTP 404)"
[ "$(grep -c '^sample' "$work/out")" -eq 48 ] \
  || fail "a 404: the 48 samples before the missing shard did not go out"
[ "$(grep -c 'GET /train-000006.tar ' "$work/ng/access.log")" -eq 1 ] \
  || fail "a 404 was asked again"

# -- servers that misbehave: flaky_http.py ROOT PORT-FILE MODE FAILURES DELAY
# STATS LOG, its requests and cuts in $work/requests; ROOT $work/sh unless
# $flaky_root says
flaky() {
  rm -f "$work/port" "$work/port.release" "$work/requests"
  /usr/bin/python3 "$here/flaky_http.py" "${flaky_root:-$work/sh}" "$work/port" \
    "$1" "$2" "${3:-0}" "$work/most" "$work/requests" &
  pids="$pids $!"
  flaky_pid=$!
  for _ in $(seq 100); do [ -e "$work/port" ] && break; sleep 0.05; done
  [ -e "$work/port" ] || fail "flaky_http.py did not start"
  url="http://127.0.0.1:$(cat "$work/port")"
}
stop_flaky() { kill "$flaky_pid"; wait "$flaky_pid" 2>/dev/null || true; }

samples "$work/local" "$work/sh/$pattern" "$props"
flaky close 2
(export GST_DEBUG=datasetsrc-fetch:5 GST_DEBUG_NO_COLOR=1
  samples "$work/http" "$url/$pattern" "$props retries=3")
same "$work/local" "$work/http" "a server that closes mid-shard twice per shard"
stop_flaky
# log_has LOG PATTERN WHAT: the datasetsrc-fetch lines of LOG match PATTERN
shard='train-[0-9]+\.tar'
log_has() {
  grep 'datasetsrc-fetch' "$1" | grep -qE "$2" || {
    grep 'datasetsrc-fetch' "$1" | head -20
    fail "GST_DEBUG=datasetsrc-fetch:5 does not show $3"; }
}
# the log of that run: the first request of a shard, whole, then its retry
# after a cut, 0.2 s later, from the byte reached, with curl's cause
log_has "$work/http.err" "GET $url/$shard, the whole file" "a request"
log_has "$work/http.err" \
  "$url/$shard: retry 1 of 3 in 200 ms, from byte [1-9][0-9]*: .+ \\(HTTP 200\\)" \
  "a retry, its pause and its cause"
log_has "$work/http.err" "GET $url/$shard, bytes [1-9][0-9]*-\$" \
  "a retry's range request"
flaky cut -1
fails "a server that always closes at once" "$url/$pattern" "retries=2" \
  "could not fetch \"$url/train-0000" "(3 attempts)"
stop_flaky
flaky 503 1
samples "$work/http" "$url/$pattern" "$props retries=1"
same "$work/local" "$work/http" "a server that answers 503 once per shard"
stop_flaky
flaky 503 -1
(export GST_DEBUG=datasetsrc-fetch:5 GST_DEBUG_NO_COLOR=1
  fails "a server that always answers 503" "$url/$pattern" "retries=2" \
    "could not fetch \"$url/train-0000" "HTTP 503 (3 attempts)")
stop_flaky
# failures in a row: the pause doubles, then the retries are spent
log_has "$work/err" "$url/$shard: retry 1 of 2 in 200 ms, from byte 0: .*\\(HTTP 503\\)" \
  "the first retry of a 503"
log_has "$work/err" "$url/$shard: retry 2 of 2 in 400 ms, from byte 0: .*\\(HTTP 503\\)" \
  "the second retry's doubled pause"
log_has "$work/err" "$url/$shard: no retry after 3 attempts in a row \\(retries spent\\)" \
  "the end of the retries"
port=$(free_port)
fails "nothing listening" "http://127.0.0.1:$port/$pattern" "retries=1" \
  "could not fetch \"http://127.0.0.1:$port/train-0000" "(2 attempts)"

# -- cut where half of what the client needs from a transfer is sent,
# whatever byte it starts at, and its retry too (2 cuts in a row): from a
# start position, the shards before it counted from byte 0, the current one
# read from the middle, the held samples by range requests (1 epoch, so that
# the next request for a file and range end after a cut is its retry)
cut_props="seed=3 num-epochs=1 shuffle-buffer-size=5 start-position=13"
samples "$work/local" "$work/sh/$pattern" "$cut_props"
flaky halves 2
samples "$work/http" "$url/$pattern" "$cut_props retries=2"
stop_flaky
py "$here/flaky_http.py" check "$work/requests" >"$work/cuts" 2>&1 || {
  cat "$work/cuts"; fail "a retry after a cut did not ask for the byte where it was cut"; }
same "$work/local" "$work/http" "a server that cuts every transfer, from a start position"
echo "from a start position over a server that cuts: $(cat "$work/cuts")"

# -- fetched ahead, at once: 4 KiB every 20 ms, 3 transfers at a time
for ahead in 2 0; do
  flaky close 0 0.02
  samples "$work/http" "$url/$pattern" "shuffle=false fetch-ahead=$ahead"
  stop_flaky
  most=$(cat "$work/most")
  if [ "$ahead" = 2 ]; then
    [ "$most" -ge 3 ] || fail "fetch-ahead=2: at most $most transfers at a time"
  else
    [ "$most" -eq 1 ] || fail "fetch-ahead=0: $most transfers at a time"
  fi
done

# -- samples as their bytes arrive: 3 shards of 200 samples, every one
# held back before its last 8 KiB until the test has seen samples of all 3
# (interleave is the default); each sent 4 KiB every 10 ms before that
"$1" fashion-mnist --output "$work/st" --limit-train 600 --limit-test 8 \
  --shard-size 200 >/dev/null
flaky_root="$work/st" flaky hold 0 0.01
"$dump" "datasetsrc location=\"$url/train-{000000..000002}.tar\" num-classes=10
  fetch-ahead=2 ! fakesink name=sink" >"$work/stream" 2>"$work/stream.err" &
dump_pid=$!
shards_out=0
for _ in $(seq 400); do
  shards_out=$(grep '^sample' "$work/stream" | cut -f 7 | sed 's/#.*//' | sort -u | wc -l)
  [ "$shards_out" -ge 3 ] && break
  kill -0 "$dump_pid" 2>/dev/null || break
  sleep 0.05
done
completed=$(grep -c ' done$' "$work/requests" || true)
touch "$work/port.release"
wait "$dump_pid" || { cat "$work/stream.err"; fail "datasetsrc on shards held back"; }
stop_flaky
[ "$completed" -eq 0 ] || fail "a held-back shard was sent whole before the release"
[ "$shards_out" -ge 3 ] || fail "with fetch-ahead=2, samples of $shards_out of the 3 shards being fetched came out before any shard was complete (20 s): samples do not come out as their bytes arrive, from every shard"
[ "$(grep -c '^sample' "$work/stream")" -eq 600 ] || fail "not the 600 samples of the held-back shards"

echo "ok: over HTTP (nginx) the samples and their bytes are those from files, fetched ahead or not, from a start position; 404, servers that close mid-shard or answer 503, nothing listening: retried, then errors naming the URL; GST_DEBUG=datasetsrc-fetch:5 shows requests, ranges, retries, causes and pauses; a server that cuts transfers wherever they start: each retry asks for the byte where its transfer was cut, the same bytes come out; fetch-ahead fetches at once; resumes across the interleave are exact with fetch-ahead 0, 1, 2; samples of every shard being fetched come out before any shard is complete"
