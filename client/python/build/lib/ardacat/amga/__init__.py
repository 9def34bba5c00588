"""Drop-in replacement for the original AMGA Python client (``mdclient``, ``mdinterface``):
``from ardacat.amga import mdclient, mdinterface`` instead of ``import mdclient, mdinterface``.
"""

from . import mdclient, mdinterface

__all__ = ["mdclient", "mdinterface"]
