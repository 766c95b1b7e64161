#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# datasetsrc on WebDataset shards over HTTP (libcurl), against servers this
# test starts on the loopback:
#   Debian's nginx: the samples (labels, sizes, epochs, order) are those of
#   the same shards read from files, shuffled, with fetch-ahead 0 and 3, and
#   from a start position (the held samples by range requests); a missing
#   shard is an HTTP 404: an error that names the URL, no retries;
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
#   and shards fetched ahead are fetched at once (3 transfers at a time with
#   fetch-ahead=2, 1 with 0).
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
for ahead in 0 3; do
  samples "$work/http" "$url/$pattern" "$props fetch-ahead=$ahead"
  same "$work/local" "$work/http" "fetch-ahead=$ahead"
done
samples "$work/local" "$work/sh/$pattern" "$props start-position=13"
samples "$work/http" "$url/$pattern" "$props start-position=13"
same "$work/local" "$work/http" "start-position=13"
fails "a 404" "$url/train-{000000..000006}.tar" "shuffle=false retries=5" \
  "could not fetch \"$url/train-000006.tar\": not found (HTTP 404)"
[ "$(grep -c '^sample' "$work/out")" -eq 48 ] \
  || fail "a 404: the 48 samples before the missing shard did not go out"
[ "$(grep -c 'train-000006.tar' "$work/ng/access.log")" -eq 1 ] \
  || fail "a 404 was asked again"

# -- servers that misbehave: flaky_http.py ROOT PORT-FILE MODE FAILURES DELAY
# STATS LOG, its requests and cuts in $work/requests
flaky() {
  rm -f "$work/port" "$work/requests"
  /usr/bin/python3 "$here/flaky_http.py" "$work/sh" "$work/port" "$1" "$2" "${3:-0}" \
    "$work/most" "$work/requests" &
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

echo "ok: over HTTP (nginx) the samples and their bytes are those from files, fetched ahead or not, from a start position; 404, servers that close mid-shard or answer 503, nothing listening: retried, then errors naming the URL; GST_DEBUG=datasetsrc-fetch:5 shows requests, ranges, retries, causes and pauses; a server that cuts transfers wherever they start: each retry asks for the byte where its transfer was cut, the same bytes come out; fetch-ahead fetches at once"
