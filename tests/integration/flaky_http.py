#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A file server that misbehaves on purpose, for datasetsrc's HTTP tests:
the first FAILURES requests of each file (every one with -1) are answered
in MODE: "close" sends the status and the full Content-Length, then half
the body, and closes the connection; "cut" the same without any of the
body (no progress at all); "503" answers 503 Service Unavailable. Other
requests are served whole, with Range (206) support, 4 KiB at a time DELAY
seconds apart, so that transfers overlap.

MODE "hold" sends every file but its last HOLD bytes (8 KiB, more than a
sample of the tests' shards and the zero blocks after it), then waits for
the file PORT-FILE.release to exist before it sends them, so that nothing
is ever complete before the client shows what it did with the rest; with
LOG, "ID done" once a transfer was sent whole.

MODE "halves" cuts where the bytes a client still needs are half read
instead, whatever byte its request starts at: a request is cut once it sent
half of the bytes from its first one to the end of its range (without a
range end, of a tar shard: to the end of its last member, before the zero
blocks a reader stops at; of another file: to its end), so that the
client must ask again from the byte where it was cut; that request is cut
the same way, FAILURES cuts in a row (-1: until half is nothing). A
request for a range it was asked for before (the same file, first byte
and end) is served whole: a client that asks again from a byte it already
had gets the bytes again, as a real server would send them.

The most transfers it served at once goes to STATS (a number, rewritten
after each one): a transfer counts from its request to the start of its
last write, which comes before the client can have it whole, so that a
client that asks for a shard only after the last one arrived never counts
twice. With LOG, each request is written there as it arrives, "ID PATH
RANGE" (RANGE the Range header as sent, "-" without one), and each cut
before the connection closes, "ID cut BYTES" (the body bytes it sent). It
writes its port to PORT-FILE once it listens.

Usage: flaky_http.py ROOT PORT-FILE MODE FAILURES DELAY STATS [LOG]
       flaky_http.py check LOG
The second form checks a LOG: the next request for the same file and range
end after each cut asks for the byte where the cut was, and at least one
cut of each kind happened (of a transfer that starts at byte 0, of one
that starts past it without an end, of a range with an end: each counted
from the first request of its run of retries); it prints the counts, or
what a retry asked for instead and exits 1."""
import http.server
import os
import re
import sys
import tarfile
import threading
import time


def parse_range(header):
    """(first byte, end or None) of a Range header; (0, None) without one."""
    match = re.match(r"bytes=(\d+)-(\d*)$", header or "")
    if not match:
        return 0, None
    return (int(match.group(1)),
            int(match.group(2)) + 1 if match.group(2) else None)


def shown(header):
    return header if header != "-" else "the whole file (no Range)"


def check(log):
    requests = {}  # id: (path, range header, first byte, end)
    order = []     # ids, as they arrived
    cuts = []      # (id, bytes sent)
    with open(log) as f:
        for line in f:
            fields = line.split()
            if fields[1] == "cut":
                cuts.append((fields[0], int(fields[2])))
            else:
                start, end = parse_range(fields[2] if fields[2] != "-" else "")
                requests[fields[0]] = (fields[1], fields[2], start, end)
                order.append(fields[0])
    root = {}  # id: the first byte of the first request of its retries
    kinds = {"transfers from byte 0": 0, "transfers from past byte 0": 0,
             "ranges with an end": 0}
    for cut_id, sent in cuts:
        path, header, start, end = requests[cut_id]
        first = root.get(cut_id, start)
        kinds["ranges with an end" if end is not None
              else "transfers from byte 0" if first == 0
              else "transfers from past byte 0"] += 1
        later = order[order.index(cut_id) + 1:]
        retry = next((r for r in later
                      if requests[r][0] == path and requests[r][3] == end), None)
        want = f"bytes={start + sent}-" + ("" if end is None else str(end - 1))
        if retry is None:
            sys.exit(f"{path}: the transfer of {shown(header)} was cut after "
                     f"{sent} bytes and never asked for again ({want})")
        if requests[retry][1] != want:
            got = requests[retry][1]
            sys.exit(f"{path}: the transfer of {shown(header)} was cut after "
                     f"{sent} bytes (at byte {start + sent}), and its retry "
                     f"asked for {shown(got)} instead of {want}")
        root[retry] = first
    missing = [kind for kind, n in kinds.items() if n == 0]
    if missing:
        sys.exit("no cut of " + ", ".join(missing))
    print(", ".join(f"{n} cuts of {kind}"
                    for kind, n in kinds.items()))


if len(sys.argv) == 3 and sys.argv[1] == "check":
    check(sys.argv[2])
    sys.exit(0)

root, port_file, mode, failures, delay, stats = sys.argv[1:7]
log = sys.argv[7] if len(sys.argv) > 7 else None
failures, delay = int(failures), float(delay)
HOLD = 8192
lock = threading.Lock()
counts = {}
spans = []  # (request, start of its last write) of each whole transfer
asked = set()   # (path, first byte, end) of every request, for "halves"
cuts_in_a_row = {}  # (path, first byte, end) a cut sends the client to: cuts
members_end = {}  # path: the end of a tar shard's last member
requests_seen = 0


def most_at_once():
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    now = most = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def write_log(line):
    if log:
        with open(log, "a") as f:
            f.write(line + "\n")


def needed_end(path, size):
    """Where a reader of all of @path stops: a tar's last member's end."""
    if path not in members_end:
        try:
            with tarfile.open(path) as tar:
                members_end[path] = max(
                    (m.offset_data + m.size for m in tar.getmembers()),
                    default=size)
        except tarfile.TarError:
            members_end[path] = size
    return members_end[path]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        global requests_seen
        with lock:
            n = counts.get(self.path, 0)
            counts[self.path] = n + 1
            requests_seen += 1
            self.id = requests_seen
            write_log(f"{self.id} {self.path} "
                      f"{self.headers.get('Range') or '-'}")
        self.serve(failures < 0 or n < failures, time.monotonic())

    def halves_cut(self, path, start, end, size):
        """How many bytes of the body to send before cutting; None: all."""
        stop = end if end is not None else needed_end(path, size)
        key = (self.path, start, end)
        with lock:
            if key in asked:
                return None
            asked.add(key)
            in_a_row = cuts_in_a_row.get(key, 0)
            half = (stop - start) // 2
            if (failures >= 0 and in_a_row >= failures) or half <= 0:
                return None
            cuts_in_a_row[(self.path, start + half, end)] = in_a_row + 1
            return half

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
        header = self.headers.get("Range", "")
        if re.match(r"bytes=(\d+)-(\d*)$", header):
            start, range_end = parse_range(header)
            end = range_end if range_end is not None else len(data)
            self.send_response(206)
            self.send_header("Content-Range",
                             f"bytes {start}-{end - 1}/{len(data)}")
        else:
            range_end = None
            self.send_response(200)
        body = data[start:end]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cut = None
        if mode == "halves":
            cut = self.halves_cut(path, start, range_end, len(data))
        elif misbehave and mode in ("close", "cut"):
            cut = len(body) // 2 if mode == "close" else 0
        if cut is not None:
            self.wfile.write(body[:cut])
            self.wfile.flush()
            with lock:
                write_log(f"{self.id} cut {cut}")
            self.close_connection = True
            self.connection.shutdown(2)
            return
        last = begun
        held = max(len(body) - HOLD, 0) if mode == "hold" else len(body)
        for at in range(0, held, 4096):
            if at > 0 and delay:
                time.sleep(delay)
            last = time.monotonic()
            self.wfile.write(body[at:min(at + 4096, held)])
        if held < len(body):
            self.wfile.flush()
            while not os.path.exists(port_file + ".release"):
                time.sleep(0.02)
            last = time.monotonic()
            self.wfile.write(body[held:])
            self.wfile.flush()
            with lock:
                write_log(f"{self.id} done")
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
