"""A bare TCP server on 127.0.0.1 for the tests of what bootccm sends and
how long it waits: it records every byte it receives and counts the
connections, and each connection is then answered by its mode:

  "401"     a 401 with an empty body (a plain-HTTP API server refusing)
  "silent"  nothing, ever
  "drip"    a 200 whose body comes one byte a second
  "close"   closed at once, unanswered
"""

import socket
import threading
import time


class RawServer(object):

    def __init__(self, mode):
        self.mode = mode
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.received = b""
        self.lock = threading.Lock()
        self.conns = []
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                self.conns.append(c)
            if self.mode == "close":
                c.close()
            else:
                threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            c.settimeout(30)
            data = c.recv(65536)
            with self.lock:
                self.received += data
            if self.mode == "401":
                c.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n"
                          b"Connection: close\r\n\r\n")
                c.close()
            elif self.mode == "drip":
                head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                        b"Content-Length: 100000\r\n\r\n")
                for b in head + b"x" * 100000:
                    c.sendall(bytes([b]))
                    time.sleep(1)
        except OSError:
            pass

    def close(self):
        self.sock.close()
        with self.lock:
            for c in self.conns:
                c.close()
