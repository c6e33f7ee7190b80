"""The tcp backend: rendezvous through the store, then a ring over persistent sockets.

Each rank sends to rank + 1 and receives from rank - 1. all_reduce is the bandwidth-optimal
ring (a reduce-scatter, then an all-gather, 2 (N - 1) / N of the data over each link), with a
sender thread so sending and receiving overlap, and the receiver reducing segment by segment
while later segments are still in flight. Peers prove they belong to the job (HMAC over a
nonce, the job id, the group and their rank) before the ring forms. A group of some of the ranks
(new_group, a mesh axis, a send/recv channel) forms its own ring among its members through the
world's store.
"""
from __future__ import annotations

import contextlib
import hmac
import os
import queue
import socket
import struct
import threading
import time
from typing import Sequence

import numpy as np

from .errors import DistError, DistTimeoutError
from .group import REDUCE_OPS, JobGroup, finish
from .store import Job, prove, recv_exact

SEGMENT = 1 << 18  # bytes reduced per receive while the next segment is on the wire
SOCKET_BUFFER = 4 << 20  # kernel buffers deep enough to keep a segment in flight both ways
INLINE = 64 << 10  # a message this small leaves from the calling thread: the kernel buffers it whole


def _bytes(a: np.ndarray) -> memoryview:
    """The raw bytes of a contiguous array, whatever its dtype (bfloat16 included)."""
    return memoryview(a.view(np.uint8))


class TCPGroup(JobGroup):
    backend = "tcp"

    def __init__(self, rank: int, ranks: Sequence[int], local_rank: int, timeout: float, job: Job, scope: str):
        super().__init__(rank, ranks, local_rank, timeout, job, scope)
        self.next_sock = self.prev_sock = None
        self._sends: queue.Queue = queue.Queue()
        self._last_queued: threading.Event | None = None  # done when the sender thread has sent all it was given
        self._send_error: BaseException | None = None
        try:
            self._rendezvous()
        except BaseException:
            self.close()
            raise
        threading.Thread(target=self._sender, daemon=True, name=f"funcgrad-tcp-send-{self.ranks[rank]}").start()

    # ---- rendezvous ---------------------------------------------------------------------------------
    def _rendezvous(self):
        n, r, t, store = self.world_size, self.rank, self.timeout, self.job.store
        proof_key = self.job.id + self.scope.encode()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((store.sock.getsockname()[0], 0))  # the address rank 0 sees us at
        listener.listen(8)
        host, port = listener.getsockname()
        store.set(f"{self.scope}addr/{r}", f"{host}:{port}".encode())
        nxt, prev = (r + 1) % n, (r - 1) % n
        try:
            peer = store.wait_get(f"{self.scope}addr/{nxt}", t).decode()
        except DistTimeoutError:
            raise DistTimeoutError(store.problem() or f"{self.who(nxt)} did not join within {t:g}s: the group has "
                                   f"{n} ranks ({self.ranks}); were fewer processes started?") from None
        peer_host, peer_port = peer.rsplit(":", 1)
        accepted: list = []  # accept from the previous rank while we introduce ourselves to the next
        acceptor = threading.Thread(target=lambda: accepted.append(self._try_accept(listener, prev, proof_key)),
                                    daemon=True)
        acceptor.start()
        self.next_sock = socket.create_connection((peer_host, int(peer_port)), timeout=t)
        try:
            nonce = recv_exact(self.next_sock, 32)
            self.next_sock.sendall(struct.pack("!I", r) + prove(self.job.secret, nonce + proof_key, b"funcgrad-peer"))
        except (OSError, ConnectionError) as e:
            raise DistError(store.problem() or f"{self.who(r)}: the handshake with {self.who(nxt)} failed: {e}") from None
        acceptor.join()
        listener.close()
        if isinstance(accepted[0], BaseException):
            problem = store.problem()
            raise DistError(problem) if problem else accepted[0]
        self.prev_sock = accepted[0]
        for s in (self.next_sock, self.prev_sock):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
            s.settimeout(t)

    def _try_accept(self, listener, expected: int, proof_key: bytes):
        try:
            return self._accept_peer(listener, expected, proof_key)
        except BaseException as e:  # noqa: BLE001  (re-raised by the rendezvous)
            return e

    def _accept_peer(self, listener, expected: int, proof_key: bytes) -> socket.socket:
        listener.settimeout(self.timeout)
        while True:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                raise DistTimeoutError(f"{self.who(expected)} did not connect to {self.who(self.rank)} within "
                                       f"{self.timeout:g}s") from None
            try:  # 36 bytes within 5 s in all, however slowly they trickle in, or the next connection
                deadline = time.monotonic() + 5.0
                conn.settimeout(5.0)
                nonce = os.urandom(32)
                conn.sendall(nonce)
                claimed = struct.unpack("!I", recv_exact(conn, 4, deadline))[0]
                proof = recv_exact(conn, 32, deadline)
            except (OSError, ConnectionError, struct.error):
                conn.close()
                continue
            if claimed == expected and hmac.compare_digest(proof, prove(self.job.secret, nonce + proof_key, b"funcgrad-peer")):
                return conn
            conn.close()  # a stray or unauthenticated connection: ignore it and keep waiting

    # ---- transport ----------------------------------------------------------------------------------
    def _sender(self):
        while True:
            item = self._sends.get()
            if item is None:
                return
            data, done = item
            try:
                self.next_sock.sendall(data)
            except BaseException as e:  # noqa: BLE001  (handed to the receiving thread)
                self._send_error = e
            done.set()

    def _send(self, data) -> threading.Event:
        """Send data behind what was sent before; the event is set once it is out. Small messages
        skip the sender thread (two thread switches, most of a small collective's time) when
        nothing is queued before them: one thread per group sends, so order is kept."""
        done = threading.Event()
        if len(data) <= INLINE and (self._last_queued is None or self._last_queued.is_set()):
            try:
                self.next_sock.sendall(data)
            except BaseException as e:  # noqa: BLE001  (reported by _wait_sent, as the thread's are)
                self._send_error = e
            done.set()
            return done
        self._last_queued = done
        self._sends.put((data, done))
        return done

    def _wait_sent(self, done: threading.Event, what: str):
        if not done.wait(self.timeout):
            raise DistTimeoutError(f"{self.who(self.rank)}: timed out after {self.timeout:g}s in {what} sending to "
                                   f"{self.who((self.rank + 1) % self.world_size)}")
        if self._send_error is not None:
            error, self._send_error = self._send_error, None
            gone = self.who((self.rank + 1) % self.world_size)
            raise DistError(self.job.first_fault(f"{self.who(self.rank)}: {gone} is gone ({error}) during {what}"))

    def _recv_into(self, view: memoryview, what: str):
        got, n = 0, len(view)
        me, prev = self.who(self.rank), self.who((self.rank - 1) % self.world_size)
        while got < n:
            try:
                k = self.prev_sock.recv_into(view[got:], n - got)
            except socket.timeout:
                raise DistTimeoutError(f"{me}: timed out after {self.timeout:g}s in {what} waiting for "
                                       f"{prev} (did it skip the collective?)") from None
            except OSError as e:
                raise DistError(self.job.first_fault(f"{me}: connection to {prev} failed during {what}: {e}")) from None
            if k == 0:
                raise DistError(self.job.first_fault(f"{me}: {prev} closed its connection during {what} "
                                                     f"(it exited or was killed)"))
            got += k

    def _exchange(self, send_view, recv_view, what: str):
        done = self._send(send_view)
        self._recv_into(recv_view, what)
        self._wait_sent(done, what)

    # ---- collectives ----------------------------------------------------------------------------------
    def _all_gather_bytes(self, data: bytes, what: str) -> list[bytes]:
        n, r = self.world_size, self.rank
        blocks: list[bytes | None] = [None] * n
        blocks[r] = data
        for step in range(n - 1):
            out = blocks[(r - step) % n]
            done = self._send(struct.pack("!Q", len(out)) + out)
            length = bytearray(8)
            self._recv_into(memoryview(length), what)
            body = bytearray(struct.unpack("!Q", length)[0])
            self._recv_into(memoryview(body), what)
            self._wait_sent(done, what)
            blocks[(r - step - 1) % n] = bytes(body)
        return blocks

    def _all_reduce(self, src: np.ndarray, out: np.ndarray, op: str, what: str) -> None:
        n, r = self.world_size, self.rank
        bounds = np.linspace(0, src.size, n + 1).astype(np.int64)
        chunk = lambda a, i: a[bounds[i % n]:bounds[i % n + 1]]  # noqa: E731
        reduce = REDUCE_OPS[op]
        seg = max(SEGMENT // src.itemsize, 1)
        scratch = np.empty(min(seg, int(np.max(np.diff(bounds)))), src.dtype)
        # reduce-scatter: at step s the partial sum of chunk r - s - 1 arrives from rank r - 1; this
        # rank adds its own input, so each chunk is written to out once, and rank r ends owning
        # chunk r + 1, complete.
        for step in range(n - 1):
            done = self._send(_bytes(chunk(src if step == 0 else out, r - step)))
            mine, target = chunk(src, r - step - 1), chunk(out, r - step - 1)
            for start in range(0, target.size, seg):
                part = scratch[:min(seg, target.size - start)]
                self._recv_into(_bytes(part), what)
                piece = target[start:start + part.size]
                reduce(mine[start:start + part.size], part, out=piece)
                if step == n - 2:
                    finish(piece, op, n)
            self._wait_sent(done, what)
        for step in range(n - 1):  # all-gather of the reduced chunks
            self._exchange(_bytes(chunk(out, r + 1 - step)), _bytes(chunk(out, r - step)), what)

    def _all_gather_into(self, src: np.ndarray, out: np.ndarray, what: str) -> None:
        """The ring, each block received straight into its row of out (no framing, no copies)."""
        n, r = self.world_size, self.rank
        out[r] = src
        for step in range(n - 1):
            self._exchange(_bytes(out[(r - step) % n]), _bytes(out[(r - step - 1) % n]), what)

    def _broadcast_into(self, flat: np.ndarray, src: int, what: str) -> None:
        """Along the ring from src: each rank receives, then forwards (pipelined in segments). A
        pair (send/recv's channel) forwards nothing: one message."""
        n, r = self.world_size, self.rank
        last = (src - 1) % n
        view = _bytes(flat)
        if n == 2:
            if r == src:
                self._wait_sent(self._send(view), what)
            else:
                self._recv_into(view, what)
            return
        seg = SEGMENT
        pending = []
        for start in range(0, len(view), seg):
            part = view[start:start + seg]
            if r != src:
                self._recv_into(part, what)
            if r != last:
                pending.append(self._send(part))
        for done in pending:
            self._wait_sent(done, what)

    def close(self) -> None:
        super().close()
        self._sends.put(None)
        for s in (self.next_sock, self.prev_sock):
            if s is not None:
                with contextlib.suppress(OSError):  # closing a broken socket may fail; it is closed anyway
                    s.close()

