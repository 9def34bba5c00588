"""ardacat: a Python client for the ardacat metadata catalogue (and any AMGA server).

``ardacat.connect(...)`` gives a blocking :class:`Connection`; ``await ardacat.aio.connect(...)``
an asyncio one with the same methods; ``ardacat.amga`` is a drop-in replacement for the original
AMGA ``mdclient``/``mdinterface`` modules. See docs/python.md.
"""

from .client import Connection, Rows, connect
from .errors import CommandError, ConnectError, Error, ProtocolError

__all__ = ["connect", "Connection", "Rows", "CommandError", "ConnectError", "Error", "ProtocolError"]
__version__ = "0.1.0"
