"""A small key-value store for rendezvous (the idea of torch's TCPStore), with authentication.

Rank 0 serves it on MASTER_ADDR:MASTER_PORT. Every connection must answer an HMAC-SHA256
challenge keyed by the job secret before it may read or write, so a stray connection can neither
join a job nor inject data. Values are bytes; `wait_get` blocks until a key appears.

Before a connection has proved the secret it can make the server hold no more than the one
fixed-size answer it expects (36 bytes), for no longer than HANDSHAKE_SECONDS in all however
slowly it trickles in, and only MAX_PENDING such connections at once; after it, a request is at
most MAX_FRAME bytes. MAX_CONNECTIONS bounds the threads serving connections.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import socket
import struct
import threading
import time

from .errors import DistError, DistTimeoutError

_CHALLENGE = b"funcgrad-store-v1"
PROOF_FRAME = 4 + 4 + 32  # the only frame a connection may send before it is authenticated
HANDSHAKE_SECONDS = 10.0
MAX_PENDING = 64
MAX_CONNECTIONS = 1024
MAX_FRAME = 16 << 20


def prove(secret: bytes, nonce: bytes, purpose: bytes = _CHALLENGE) -> bytes:
    return hmac.new(secret, purpose + nonce, hashlib.sha256).digest()


def send_frame(sock: socket.socket, *parts: bytes) -> None:
    payload = b"".join(struct.pack("!I", len(p)) + p for p in parts)
    sock.sendall(struct.pack("!I", len(payload)) + payload)


def recv_exact(sock: socket.socket, n: int, deadline: float | None = None) -> bytes:
    """n bytes; with a deadline (time.monotonic()) the whole read must end by then, so a peer that
    trickles a byte at a time cannot hold the connection open by resetting a per-read timeout."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConnectionError("timed out")
            sock.settimeout(left)
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError("connection closed")
        got += k
    return bytes(buf)


def recv_frame(sock: socket.socket, max_length: int = MAX_FRAME, deadline: float | None = None) -> list[bytes]:
    """One frame of length-prefixed parts; a length above max_length is refused before anything
    is allocated for it."""
    (length,) = struct.unpack("!I", recv_exact(sock, 4, deadline))
    if length > max_length:
        raise ConnectionError(f"a frame of {length} bytes, above the {max_length} allowed")
    payload = recv_exact(sock, length, deadline)
    parts, offset = [], 0
    while offset < length:
        (n,) = struct.unpack("!I", payload[offset:offset + 4])
        parts.append(payload[offset + 4:offset + 4 + n])
        offset += 4 + n
    return parts


def join_job(store: "StoreClient", rank: int, world_size: int, timeout: float) -> bytes:
    """Claim this rank, check WORLD_SIZE against rank 0's, and return the job's random id."""
    if store.add(f"rank/{rank}", 1) != 1:
        problem = f"RANK {rank} was claimed by two processes: duplicate ranks in one job"
        store.set("problem", problem.encode())  # the others then say why the ring broke
        raise DistError(problem)
    if rank == 0:
        store.set("job", os.urandom(16).hex().encode())
    store.set(f"world/{rank}", str(world_size).encode())
    theirs = int(store.wait_get("world/0", timeout))
    if theirs != world_size:
        raise DistError(f"rank {rank} has WORLD_SIZE {world_size} but rank 0 has {theirs}")
    return store.wait_get("job", timeout)


class Job:
    """What the process groups of one job share: the store connection (and, on rank 0, the
    server), the secret, the job's id, the point-to-point channels formed so far. The world group
    owns it and closes it."""

    def __init__(self, store: "StoreClient", secret: bytes, id_: bytes, server: "StoreServer | None"):
        self.store, self.secret, self.id, self.server = store, secret, id_, server
        self.channels: dict = {}

    @classmethod
    def join(cls, rank: int, world_size: int, timeout: float, master_addr: str, master_port: int,
             secret: bytes) -> "Job":
        """Serve the store on rank 0, connect to it, claim this rank (join_job)."""
        server = StoreServer(master_addr if master_addr != "localhost" else "127.0.0.1", master_port, secret) \
            if rank == 0 else None
        store = None
        try:
            store = StoreClient(master_addr, master_port, secret, timeout)
            return cls(store, secret, join_job(store, rank, world_size, timeout), server)
        except BaseException:
            for part in (store, server):
                if part is not None:
                    part.close()
            raise

    def first_fault(self, message: str) -> str:
        """message, with the job's first fault when another rank saw one before: in a ring a rank
        learns only that its neighbour left, and the neighbour may have left because its own
        neighbour died first. The first rank to report names the rank that failed."""
        with contextlib.suppress(DistError, OSError, ValueError):  # no store (rank 0 gone): say what we saw
            first = self.store.set_if_absent("fault", message.encode()).decode()
            return message if first == message else f"{message}; the first fault: {first}"
        return message

    def close(self) -> None:
        self.store.close()
        if self.server is not None:
            self.server.close()


class StoreServer:
    """Serves the store from a background thread; one thread per client connection (bounded)."""

    def __init__(self, host: str, port: int, secret: bytes):
        self.secret = secret
        self.data: dict[bytes, bytes] = {}
        self.cond = threading.Condition()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as e:
            self.sock.close()
            raise DistError(f"cannot serve the rendezvous store on {host}:{port} ({e.strerror}): is MASTER_PORT "
                            f"busy, or MASTER_ADDR not an address of this host?") from None
        self.sock.listen(128)
        self.closed = False
        self.connections = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.pending = threading.BoundedSemaphore(MAX_PENDING)
        threading.Thread(target=self._accept, daemon=True, name="funcgrad-store").start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if not self.connections.acquire(blocking=False):
                conn.close()  # more connections than any job has: refused, no thread started
                continue
            if not self.pending.acquire(blocking=False):
                self.connections.release()
                conn.close()  # too many still proving the secret; a real client retries
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket):
        proved = False
        try:
            with contextlib.suppress(ConnectionError, OSError, struct.error, ValueError):  # a broken or hostile
                proved = self._prove(conn)  # handshake leaves proved False: the connection is dropped below
        finally:
            self.pending.release()
        try:
            if proved:
                with contextlib.suppress(ConnectionError, OSError, struct.error, ValueError):  # the client left
                    self._converse(conn)
        finally:
            conn.close()
            self.connections.release()

    def _prove(self, conn: socket.socket) -> bool:
        """Challenge the client: one 36-byte answer within HANDSHAKE_SECONDS, nothing else read."""
        deadline = time.monotonic() + HANDSHAKE_SECONDS
        conn.settimeout(HANDSHAKE_SECONDS)
        nonce = os.urandom(32)
        send_frame(conn, nonce)
        parts = recv_frame(conn, max_length=PROOF_FRAME - 4, deadline=deadline)
        if len(parts) != 1 or not hmac.compare_digest(parts[0], prove(self.secret, nonce)):
            send_frame(conn, b"denied")
            return False
        send_frame(conn, b"ok")
        return True

    def _converse(self, conn: socket.socket):
        """Answer an authenticated client's requests until it hangs up."""
        conn.settimeout(None)
        while True:
            op, *args = recv_frame(conn)
            send_frame(conn, *self._handle(op, args))

    def _handle(self, op: bytes, args: list[bytes]) -> list[bytes]:
        with self.cond:
            if op == b"set":
                self.data[args[0]] = args[1]
                self.cond.notify_all()
                return [b"ok"]
            if op == b"setnx":  # the value the key holds: ours when it had none
                self.data.setdefault(args[0], args[1])
                self.cond.notify_all()
                return [self.data[args[0]]]
            if op == b"add":
                value = int(self.data.get(args[0], b"0")) + int(args[1])
                self.data[args[0]] = str(value).encode()
                self.cond.notify_all()
                return [str(value).encode()]
            if op == b"get":
                deadline = time.monotonic() + float(args[1])
                while args[0] not in self.data:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return [b"timeout"]
                    self.cond.wait(left)
                return [b"ok", self.data[args[0]]]
        return [b"bad request"]

    def close(self):
        self.closed = True
        self.sock.close()


class StoreClient:
    def __init__(self, host: str, port: int, secret: bytes, timeout: float):
        deadline = time.monotonic() + timeout
        while True:  # a server busy with other handshakes closes at once: try again until the deadline
            try:
                self.sock = socket.create_connection((host, port), timeout=min(timeout, 5))
                (nonce,) = recv_frame(self.sock, max_length=64)
                send_frame(self.sock, prove(secret, nonce))
                (status,) = recv_frame(self.sock, max_length=64)
                break
            except (ConnectionError, OSError, ValueError) as e:
                with contextlib.suppress(AttributeError, OSError):
                    self.sock.close()
                if time.monotonic() > deadline:
                    raise DistTimeoutError(f"cannot reach the rendezvous store at {host}:{port} within {timeout:g}s "
                                           f"({getattr(e, 'strerror', None) or e}): is rank 0 running, "
                                           f"MASTER_ADDR/MASTER_PORT right?") from None
                time.sleep(0.05)
        if status != b"ok":
            raise DistError(f"the rendezvous store at {host}:{port} rejected this process: FUNCGRAD_DIST_SECRET "
                            f"differs from the job's")
        self.sock.settimeout(None)
        self.lock = threading.Lock()

    def _call(self, *parts: bytes) -> list[bytes]:
        with self.lock:
            try:
                send_frame(self.sock, *parts)
                return recv_frame(self.sock)
            except (ConnectionError, OSError) as e:
                raise DistError(f"lost the rendezvous store (rank 0 gone?): {e}") from None

    def set(self, key: str, value: bytes) -> None:
        self._call(b"set", key.encode(), value)

    def set_if_absent(self, key: str, value: bytes) -> bytes:
        """Store value unless the key holds one already; returns what the key holds, in one step."""
        return self._call(b"setnx", key.encode(), value)[0]

    def add(self, key: str, amount: int) -> int:
        return int(self._call(b"add", key.encode(), str(amount).encode())[0])

    def wait_get(self, key: str, timeout: float) -> bytes:
        reply = self._call(b"get", key.encode(), str(timeout).encode())
        if reply[0] != b"ok":
            raise DistTimeoutError(f"waited {timeout:g}s for '{key}' in the rendezvous store")
        return reply[1]

    def problem(self) -> str | None:
        """What another rank reported to the store as the job's problem (a duplicate RANK), if any."""
        with contextlib.suppress(DistError):
            reply = self._call(b"get", b"problem", b"0")
            return reply[1].decode() if reply[0] == b"ok" else None
        return None

    def close(self):
        self.sock.close()
