#!/usr/bin/env python3
"""SOAP interop scenario with Python suds (suds-community), a third independent toolkit: it
loads ardacat's WSDL from the live server and runs every operation over the SOAP 1.1 port,
including faults (the MetadataFault detail code) and paging through a query (soap_scenario.py,
the checks zeep_scenario.py runs too). suds speaks SOAP 1.1 only (it sends a 1.1 envelope even
to a 1.2 port), so the 1.2 port is left to the other toolkits.

    python suds_scenario.py --url http://127.0.0.1:8823 --user root --password secret

Ends with the line `N passed, M failed`; exits 1 if anything failed.
"""

import sys

from suds import WebFault
from suds.client import Client
from suds.transport import TransportError
from suds.transport.http import HttpAuthenticated

from soap_scenario import Toolkit, check, parse_args, report, scenario


def fault_code(fault):
    """The MetadataFault code of a suds WebFault, or None."""
    detail = getattr(fault.fault, "detail", None)
    mf = getattr(detail, "MetadataFault", None)
    code = getattr(mf, "code", None)
    return int(code) if code is not None else None


SUDS = Toolkit(WebFault, fault_code, lambda e: str(e.fault.faultcode))


def main():
    args = parse_args()

    wsdl = f"{args.url}/soap?wsdl"
    client = Client(wsdl, transport=HttpAuthenticated(username=args.user, password=args.password), timeout=120)
    scenario(client.service, "11", "1.1", "suds", SUDS)

    # Wrong credentials: refused (HTTP 401 carrying an AuthorizationException fault).
    bad = Client(wsdl, transport=HttpAuthenticated(username=args.user, password=args.password + "-wrong"))
    try:
        bad.service.ping()
        check("wrong password", False, "ping succeeded")
    except WebFault as e:
        check("wrong password", fault_code(e) == 4, repr(e.fault))
    except TransportError as e:
        check("wrong password", e.httpcode == 401, repr(e))
    except Exception as e:  # noqa: BLE001 - suds reports an HTTP status other than 200/500 so
        check("wrong password", e.args[:1] == ((401, "Unauthorized"),), repr(e))

    return report()


if __name__ == "__main__":
    sys.exit(main())
