"""The exceptions of the ardacat package. No I/O and no protocol logic here."""

from __future__ import annotations

from typing import Optional


class Error(Exception):
    """Base class of everything this package raises on purpose."""


class ConnectError(Error):
    """The connection could not be made: network, handshake, TLS, or a refused login.

    ``code`` is the server's error code when the server gave one (4 for a wrong password),
    else ``None``.
    """

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        super().__init__(message)
        self.code = code


class ProtocolError(Error):
    """The server's bytes do not follow the protocol; the connection is closed and unusable."""


class CommandError(Error):
    """A command failed on the server: ``code`` and ``message`` as on the status line.

    Codes are those of docs/protocol.md (1 no such file or directory, 4 permission denied,
    8 illegal query, 15 exists, 20 cancelled, …).
    """

    def __init__(self, code: int, message: str, command: str = "") -> None:
        super().__init__(f"{code} {message}" if message else str(code))
        self.code = code
        self.message = message
        self.command = command
