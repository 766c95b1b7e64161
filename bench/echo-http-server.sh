#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Serves a folder over HTTP with Debian's nginx on the loopback, for the
# benchmarks that read shards over HTTP (bench/shards.sh and
# bench/echo-experiment --http-ratio):
#
#   bench/echo-http-server.sh ROOT PORT DIR [LIMIT_RATE]
#
# Writes DIR/nginx.conf (one process in the foreground, no access log, the
# pid, error log and temporary files in DIR) serving ROOT on
# 127.0.0.1:PORT, and then becomes nginx (exec): the caller's child is
# nginx itself, which stops on SIGTERM or SIGINT. With LIMIT_RATE (bytes
# per second) every connection is sent at most that fast (nginx's
# limit_rate, which is per connection: a client with N connections open
# gets up to N times it). The caller waits for the port to answer.
set -euo pipefail

die() { echo "echo-http-server.sh: error: $*" >&2; exit 2; }
[ $# = 3 ] || [ $# = 4 ] || die "usage: $0 ROOT PORT DIR [LIMIT_RATE]"
SERVE=$1 PORT=$2 NG=$3 RATE=${4:-0}
[ -d "$SERVE" ] || die "$SERVE is not a folder"
case $PORT in ''|*[!0-9]*) die "PORT must be a number, not '$PORT'" ;; esac
case $RATE in ''|*[!0-9]*) die "LIMIT_RATE must be a number of bytes per second, not '$RATE'" ;; esac
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || die "nginx not found (apt-get install nginx)"

mkdir -p "$NG/tmp"
# nginx takes paths in its config relative to -p: make both absolute
SERVE=$(cd "$SERVE" && pwd) NG=$(cd "$NG" && pwd)
cat >"$NG/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $NG/nginx.pid;
error_log $NG/error.log;
events { worker_connections 64; }
http {
  access_log off;
  sendfile on;
  limit_rate $RATE;
  client_body_temp_path $NG/tmp;
  proxy_temp_path $NG/tmp;
  fastcgi_temp_path $NG/tmp;
  uwsgi_temp_path $NG/tmp;
  scgi_temp_path $NG/tmp;
  server { listen 127.0.0.1:$PORT; root $SERVE; }
}
CONF
exec "$NGINX" -e "$NG/error.log" -p "$NG" -c "$NG/nginx.conf"
