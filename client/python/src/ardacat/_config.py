"""Connection settings: AMGA's ``mdclient.config`` files (``Key = Value`` lines, ``#`` comments)
merged with the arguments of ``connect()``. The same keys and precedence as the Rust CLI
(client/src/mdconfig.rs): ``~/.mdclient.config``, then ``./mdclient.config`` (which wins), or
only the file given as ``config``; explicit arguments win over files. No I/O besides reading
those files.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Union

PathLike = Union[str, "os.PathLike[str]"]
DEFAULT_PORT = 8822
GRID_CA_DIR = "/etc/grid-security/certificates"


def _bool(value: str) -> Optional[bool]:
    v = value.strip().lower()
    if v in ("1", "yes", "true", "on"):
        return True
    if v in ("0", "no", "false", "off"):
        return False
    return None


def _path(value: str) -> str:
    return os.path.expanduser(value) if value.startswith("~/") else value


def parse_config(text: str, origin: str = "<config>") -> Dict[str, str]:
    """One file's settings, keys lower-cased. Bad lines warn (``UserWarning``) and are skipped."""
    out: Dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            warnings.warn(f"{origin}:{n}: expected `Key = Value`", stacklevel=3)
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "port" and not (value.isdigit() and 0 < int(value) < 65536):
            warnings.warn(f"{origin}:{n}: Port {value!r} is not a TCP port number", stacklevel=3)
            continue
        if key == "usessl" and value.lower() not in ("no", "0", "false", "try", "require", "yes", "1", "true"):
            warnings.warn(f"{origin}:{n}: UseSSL {value!r} is not one of no, try, require", stacklevel=3)
            continue
        if key in ("usegridproxy", "ignorecertificatenamemismatch") and _bool(value):
            warnings.warn(f"{origin}:{n}: {key} is not supported by this client; ignored", stacklevel=3)
            continue
        out[key] = value
    return out


def load_config(config: Optional[PathLike] = None) -> Dict[str, str]:
    """The merged settings of the standard files, or of ``config`` alone (which must exist)."""
    if config is not None:
        path = Path(config)
        return parse_config(path.read_text(encoding="utf-8"), str(path))
    merged: Dict[str, str] = {}
    paths: List[Path] = []
    home = os.environ.get("HOME")
    if home:
        paths.append(Path(home) / ".mdclient.config")
    paths.append(Path("mdclient.config"))
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        merged.update(parse_config(text, str(path)))
    return merged


class Settings(NamedTuple):
    host: str
    port: int
    login: Optional[str]  # None: an empty login (log in by certificate)
    password: Optional[str]
    tls: bool
    tls_optional: bool  # UseSSL = try: fall back to plain TCP if the server has no TLS
    ca: Optional[str]
    cert: Optional[str]
    key: Optional[str]
    session: bool
    escape: bool


def resolve(
    host: str,
    port: int,
    login: Optional[str],
    password: Optional[str],
    ssl: bool,
    ca: Optional[PathLike],
    cert: Optional[PathLike],
    key: Optional[PathLike],
    session: bool,
    escape: bool,
    config: Optional[PathLike],
) -> Settings:
    """Arguments left at their defaults take the files' values."""
    cfg = load_config(config)
    if host == "localhost" and "host" in cfg:
        host = cfg["host"]
    if port == DEFAULT_PORT and "port" in cfg:
        port = int(cfg["port"])
    use_ssl = cfg.get("usessl", "no").lower()
    cert_s = os.fspath(cert) if cert is not None else (_path(cfg["certfile"]) if "certfile" in cfg else None)
    key_s = os.fspath(key) if key is not None else (_path(cfg["keyfile"]) if "keyfile" in cfg else None)
    ca_s: Optional[str] = os.fspath(ca) if ca is not None else None
    if ca_s is None:
        ca_s = _path(cfg.get("cafile", "")) or _path(cfg.get("trustedcertdir", "")) or None
    tls = bool(ssl) or use_ssl in ("require", "yes", "1", "true") or ca is not None or cert is not None
    tls_optional = not tls and use_ssl == "try"
    if (tls or tls_optional) and ca_s is None and os.path.isdir(GRID_CA_DIR):
        ca_s = GRID_CA_DIR
    if (cert_s is None) != (key_s is None):
        raise ValueError("give both a client certificate and its key (cert= and key=)")
    by_cert = _bool(cfg.get("authenticatewithcertificate", "0")) is True
    if login is None:
        login = cfg.get("login")
        if by_cert:
            login = None
        elif login is None and cert_s is None:
            login = "anonymous"
    if password is None and not by_cert:
        password = cfg.get("password") or os.environ.get("ARDACAT_PASSWORD") or None
    return Settings(host, port, login, password, tls, tls_optional, ca_s, cert_s, key_s, session, escape)
