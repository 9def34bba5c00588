"""Bytes on the wire per operation: the AMGA TCP protocol vs SOAP over HTTP, with and without
`Accept-Encoding: gzip` on SOAP.

What is counted is the application payload a client writes and reads for one operation on an
already open, logged-in connection (TCP) or keep-alive HTTP connection (SOAP): command line or
HTTP request (headers + envelope) out, reply or HTTP response (headers + body, as sent: chunk
framing and gzip included) in. TCP/IP headers are not counted. The login handshake is counted
once separately. Each operation is sent twice and the second exchange is reported.

Usable standalone:
    python3 bench/wire.py --tcp-port P --http-port H --password PW [--login root]
(needs the `ardacat bench --setup` data set: /bench/e0 and /bench1k).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import socket

NAMESPACE = "urn:ardacat:metadata:1"
ATTRS = [f"a{i}" for i in range(60)]


class Counter:
    """A socket wrapper that counts bytes in both directions and reads by delimiters."""

    def __init__(self, host: str, port: int, timeout: float = 60.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.sent = 0
        self.received = 0

    def reset(self) -> None:
        self.sent = 0
        self.received = 0

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)
        self.sent += len(data)

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed by the server")
        self.received += len(chunk)
        self.buf += chunk

    def read_until(self, delim: bytes) -> bytes:
        while True:
            at = self.buf.find(delim)
            if at >= 0:
                out, self.buf = self.buf[: at + len(delim)], self.buf[at + len(delim):]
                return out
            self._fill()

    def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def close(self) -> None:
        self.sock.close()


# --- AMGA TCP protocol -------------------------------------------------------------------------


def tcp_login(host: str, port: int, login: str, password: str) -> tuple[Counter, int]:
    """Greeting, `plain` option, login block; returns the connection and the handshake bytes."""
    c = Counter(host, port)
    for _ in range(3):  # banner, protocol, options offered
        c.read_until(b"\n")
    c.send(b"plain\n\n")
    ok = c.read_until(b"\n")
    if ok != b"OK\n":
        raise RuntimeError(f"unexpected handshake answer {ok!r}")
    block = f"0 {login}\n" + (f"5 {password}\n" if password else "") + "\n"
    c.send(block.encode())
    return c, c.sent + c.received


def tcp_exchange(c: Counter, command: str) -> tuple[int, int, bytes]:
    """One command; returns (request bytes, response bytes, reply without the end marker)."""
    c.reset()
    c.send(command.encode() + b"\n")
    reply = c.read_until(b"\x04\x04")
    if not reply.startswith(b"0\n"):
        raise RuntimeError(f"{command.split()[0]} failed: {reply[:200]!r}")
    return c.sent, c.received, reply


# --- SOAP over HTTP/1.1 -------------------------------------------------------------------------


def envelope(body: str) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">'
        f"<soap:Body>{body}</soap:Body></soap:Envelope>"
    )


def soap_request(host: str, port: int, path: str, login: str, password: str, action: str, body: str,
                 gzip_ok: bool) -> bytes:
    """The request the load generator's SOAP client sends (same headers), optionally asking for gzip."""
    env = envelope(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: text/xml; charset=utf-8\r\n"
        f'SOAPAction: "{NAMESPACE}#{action}"\r\nContent-Length: {len(env)}\r\nConnection: keep-alive\r\n'
    )
    if login:
        token = base64.b64encode(f"{login}:{password}".encode()).decode()
        head += f"Authorization: Basic {token}\r\n"
    if gzip_ok:
        head += "Accept-Encoding: gzip\r\n"
    return head.encode() + b"\r\n" + env


def soap_exchange(c: Counter, request: bytes) -> tuple[int, int, bytes, str]:
    """One request on a keep-alive connection; returns (request bytes, response bytes, decoded body,
    content encoding)."""
    c.reset()
    c.send(request)
    head = c.read_until(b"\r\n\r\n").decode("latin-1")
    lines = head.split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = b""
        while True:
            size = int(c.read_until(b"\r\n").split(b";")[0].strip(), 16)
            if size == 0:
                while c.read_until(b"\r\n") != b"\r\n":
                    pass
                break
            body += c.read_exact(size)
            c.read_until(b"\r\n")
    else:
        body = c.read_exact(int(headers.get("content-length", "0")))
    encoding = headers.get("content-encoding", "identity")
    if encoding == "gzip":
        body = gzip.decompress(body)
    if not 200 <= status < 300:
        raise RuntimeError(f"HTTP {status}: {body[:300]!r}")
    return c.sent, c.received, body, encoding


def get_attributes_body(entry: str, attrs: list[str]) -> str:
    names = "".join(f"<attributeName>{a}</attributeName>" for a in attrs)
    return f'<getAttributes xmlns="{NAMESPACE}"><entryName>{entry}</entryName>{names}</getAttributes>'


# --- the measurement ----------------------------------------------------------------------------


def measure(host: str, tcp_port: int, http_port: int, login: str, password: str,
            soap_path: str = "/soap") -> list[dict]:
    """Per-operation byte counts for ping, get and bulkget over TCP, SOAP and SOAP with gzip."""
    ops = {
        "ping": ("pwd", "ping", f'<ping xmlns="{NAMESPACE}"/>', 1),
        "get": (f"getattr /bench/e0 {' '.join(ATTRS)}", "getAttributes", get_attributes_body("/bench/e0", ATTRS), 1),
        "bulkget": (f"getattr /bench1k {' '.join(ATTRS)}", "getAttributes",
                    get_attributes_body("/bench1k", ATTRS), 1000),
    }
    out: list[dict] = []
    tcp, handshake = tcp_login(host, tcp_port, login, password)
    out.append({"operation": "login", "protocol": "tcp", "request_bytes": None, "response_bytes": None,
                "total_bytes": handshake, "entries": 0})
    try:
        for op, (command, _, _, expect) in ops.items():
            tcp_exchange(tcp, command)
            sent, received, reply = tcp_exchange(tcp, command)
            entries = reply.count(b"\n") // (len(ATTRS) + 1) if op != "ping" else 0
            if op != "ping" and entries != expect:
                raise RuntimeError(f"tcp {op}: {entries} entries, expected {expect}")
            out.append({"operation": op, "protocol": "tcp", "request_bytes": sent, "response_bytes": received,
                        "total_bytes": sent + received, "entries": entries})
    finally:
        tcp.close()
    for gzip_ok in (False, True):
        label = "soap+gzip" if gzip_ok else "soap"
        conn = Counter(host, http_port)
        try:
            for op, (_, action, body, expect) in ops.items():
                request = soap_request(host, http_port, soap_path, login, password, action, body, gzip_ok)
                soap_exchange(conn, request)
                sent, received, decoded, encoding = soap_exchange(conn, request)
                entries = decoded.count(b"</entry>") if op != "ping" else 0
                if op != "ping" and entries != expect:
                    raise RuntimeError(f"{label} {op}: {entries} entries, expected {expect}")
                out.append({"operation": op, "protocol": label, "request_bytes": sent, "response_bytes": received,
                            "total_bytes": sent + received, "entries": entries,
                            "decoded_body_bytes": len(decoded), "content_encoding": encoding})
        finally:
            conn.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--tcp-port", type=int, required=True)
    p.add_argument("--http-port", type=int, required=True)
    p.add_argument("--login", default="root")
    p.add_argument("--password", required=True)
    a = p.parse_args()
    for row in measure(a.host, a.tcp_port, a.http_port, a.login, a.password):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
