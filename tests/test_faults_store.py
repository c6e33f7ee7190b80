"""The rendezvous store under hostile connections: nothing is allocated or held for a connection
that has not proved the job secret, and an authenticated request has a size limit."""
import os
import socket
import struct
import threading
import time

import pytest

from funcgrad.dist import store as S
from funcgrad.dist.errors import DistError

SECRET = b"s" * 32


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setattr(S, "HANDSHAKE_SECONDS", 1.0)
    monkeypatch.setattr(S, "MAX_PENDING", 4)
    srv = S.StoreServer("127.0.0.1", 0, SECRET)
    yield srv, srv.sock.getsockname()[1]
    srv.close()


def _raw(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    (nonce,) = S.recv_frame(sock)
    assert len(nonce) == 32
    return sock


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
        return True
    except socket.timeout:
        return False
    except OSError:
        return True


def test_a_huge_frame_before_authentication_is_refused_unread(server):
    srv, port = server
    sock = _raw(port)
    sock.sendall(struct.pack("!I", 1 << 30))  # claims 1 GiB: the server must not allocate it
    assert _closed_within(sock, 2.0)
    http = _raw(port)
    http.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # 'GET ' read as a length would be 1.1 GiB
    assert _closed_within(http, 2.0)


def test_a_trickling_handshake_is_cut_at_the_deadline(server):
    srv, port = server
    sock = _raw(port)
    start = time.monotonic()
    frame = struct.pack("!I", 36) + struct.pack("!I", 32) + b"x" * 32
    closed = False
    for byte in frame:
        try:
            sock.send(bytes([byte]))
        except OSError:
            closed = True
            break
        time.sleep(0.25)
        if time.monotonic() - start > 3:
            break
    assert closed or _closed_within(sock, 2.0)
    assert time.monotonic() - start < 4.5  # HANDSHAKE_SECONDS (1 s here) for the whole proof


def test_pending_connections_are_bounded_and_a_real_client_still_joins(server):
    srv, port = server
    idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(12)]
    time.sleep(0.3)
    threads = threading.active_count()
    assert threads < 4 + 12  # a thread for at most MAX_PENDING (4) of the idle connections
    client = S.StoreClient("127.0.0.1", port, SECRET, timeout=10)  # retries until a slot is free
    client.set("k", b"v")
    assert client.wait_get("k", 1) == b"v"
    for sock in idle:
        sock.close()
    client.close()


def test_wrong_secret_and_oversized_requests(server):
    srv, port = server
    with pytest.raises(DistError, match="rejected this process"):
        S.StoreClient("127.0.0.1", port, b"x" * 32, timeout=3)
    client = S.StoreClient("127.0.0.1", port, SECRET, timeout=3)
    client.sock.sendall(struct.pack("!I", S.MAX_FRAME + 1))  # after authentication: still bounded
    assert _closed_within(client.sock, 2.0)
