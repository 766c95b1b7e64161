#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A file server that misbehaves on purpose, for datasetsrc's HTTP tests:
the first FAILURES requests of each file (every one with -1) are answered
in MODE: "close" sends the status and the full Content-Length, then half
the body, and closes the connection; "cut" the same without any of the
body (no progress at all); "503" answers 503 Service Unavailable. Other requests are served whole, with Range (206) support,
4 KiB at a time DELAY seconds apart, so that transfers overlap. The most
transfers it served at once goes to STATS (a number, rewritten after each
one): a transfer counts from its request to the start of its last write,
which comes before the client can have it whole, so that a client that
asks for a shard only after the last one arrived never counts twice. It
writes its port to PORT-FILE once it listens.

Usage: flaky_http.py ROOT PORT-FILE MODE FAILURES DELAY STATS"""
import http.server
import os
import re
import sys
import threading
import time

root, port_file, mode, failures, delay, stats = sys.argv[1:7]
failures, delay = int(failures), float(delay)
lock = threading.Lock()
counts = {}
spans = []  # (request, start of its last write) of each whole transfer


def most_at_once():
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    now = most = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        with lock:
            n = counts.get(self.path, 0)
            counts[self.path] = n + 1
        self.serve(failures < 0 or n < failures, time.monotonic())

    def serve(self, misbehave, begun):
        path = os.path.join(root, self.path.lstrip("/"))
        if misbehave and mode == "503":
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(path, "rb") as f:
            data = f.read()
        start, end = 0, len(data)
        match = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if match:
            start = int(match.group(1))
            end = int(match.group(2)) + 1 if match.group(2) else len(data)
            self.send_response(206)
            self.send_header("Content-Range",
                             f"bytes {start}-{end - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:end]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if misbehave and mode in ("close", "cut"):
            self.wfile.write(body[:len(body) // 2 if mode == "close" else 0])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        last = begun
        for at in range(0, len(body), 4096):
            if at > 0 and delay:
                time.sleep(delay)
            last = time.monotonic()
            self.wfile.write(body[at:at + 4096])
        with lock:
            spans.append((begun, last))
            with open(stats + ".tmp", "w") as f:
                f.write(str(most_at_once()))
            os.rename(stats + ".tmp", stats)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
