#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A jittery link: serves a folder over HTTP on the loopback, sending at
RATE bytes a second during ON seconds and nothing during the OFF seconds
after, over and over (a server that alternates a second at full speed with
two seconds of nothing: issue 41's on/off source).

    bench/onoff-http-server.py ROOT PORT RATE [ON OFF]

RATE is shared by all connections (one budget, refilled only while on), so
the mean rate is RATE x ON / (ON + OFF) however many transfers datasetsrc
opens. GET with or without a Range header (bytes=A- or bytes=A-B); HEAD. It
prints "listening" once the port accepts, and stops on SIGTERM or SIGINT.
"""
import http.server
import os
import re
import signal
import socketserver
import sys
import threading
import time

CHUNK = 8192


class Link:
    """The shared budget: bytes that may go out, refilled at @rate while
    the clock is in an on phase."""

    def __init__(self, rate, on, off):
        self.rate, self.on, self.period = rate, on, on + off
        self.start = time.monotonic()
        self.lock = threading.Lock()
        self.budget = 0.0
        self.last = self.start

    def _on_seconds(self, a, b):
        """Seconds of on phase between monotonic times @a and @b."""
        total, t = 0.0, a
        while t < b:
            phase = (t - self.start) % self.period
            if phase < self.on:
                step = min(b, t + self.on - phase)
                total += step - t
            else:
                step = min(b, t + self.period - phase)
            t = step
        return total

    def take(self, n):
        """Blocks until @n bytes may go out."""
        while True:
            with self.lock:
                now = time.monotonic()
                self.budget = min(self.budget + self.rate * self._on_seconds(self.last, now),
                                  self.rate * 0.05 + n)
                self.last = now
                if self.budget >= n:
                    self.budget -= n
                    return
                want = (n - self.budget) / self.rate
            time.sleep(min(max(want, 0.001), 0.05))


def handler(root, link):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _open(self):
            path = os.path.join(root, os.path.basename(self.path.split("?")[0]))
            if not os.path.isfile(path):
                self.send_error(404)
                return None, 0, 0
            size = os.path.getsize(path)
            first, last = 0, size - 1
            match = re.match(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
            if match:
                first = int(match.group(1))
                if match.group(2):
                    last = min(int(match.group(2)), size - 1)
                if first >= size:
                    self.send_error(416)
                    return None, 0, 0
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(last - first + 1))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            return path, first, last

        def do_HEAD(self):
            self._open()

        def do_GET(self):
            path, first, last = self._open()
            if path is None:
                return
            with open(path, "rb") as f:
                f.seek(first)
                left = last - first + 1
                try:
                    while left > 0:
                        data = f.read(min(CHUNK, left))
                        link.take(len(data))
                        self.wfile.write(data)
                        left -= len(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

    return Handler


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    if len(sys.argv) not in (4, 6):
        sys.exit(__doc__.split("\n\n")[1])
    root, port, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    on, off = (float(sys.argv[4]), float(sys.argv[5])) if len(sys.argv) == 6 else (1.0, 2.0)
    server = Server(("127.0.0.1", port), handler(root, Link(rate, on, off)))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("listening", flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
