#!/usr/bin/env python3
"""SOAP interop scenario with Python zeep: an independent SOAP toolkit loads ardacat's WSDL from
the live server and runs every operation over the SOAP 1.1 and the SOAP 1.2 port, including
faults (checking the MetadataFault detail code) and paging through a query (soap_scenario.py).

    python zeep_scenario.py --url http://127.0.0.1:8823 --user root --password secret

Ends with the line `N passed, M failed`; exits 1 if anything failed.
"""

import sys

import requests
import zeep
from zeep.exceptions import Fault
from zeep.transports import Transport

from soap_scenario import Toolkit, check, parse_args, report, scenario

NS = "urn:ardacat:metadata:1"


def fault_code(fault):
    """The MetadataFault code of a zeep Fault, or None."""
    detail = fault.detail
    if detail is None:
        return None
    node = detail.find(f".//{{{NS}}}code")
    return int(node.text) if node is not None else None


ZEEP = Toolkit(Fault, fault_code, lambda e: str(e.code))


def main():
    args = parse_args()

    wsdl = f"{args.url}/soap?wsdl"
    session = requests.Session()
    session.auth = requests.auth.HTTPBasicAuth(args.user, args.password)
    client = zeep.Client(wsdl, transport=Transport(session=session, timeout=60, operation_timeout=120))

    svc11 = client.service
    svc12 = client.bind("MetadataCatalog", "MetadataCatalogPort12")
    scenario(svc11, "11", "1.1", "zeep", ZEEP)
    scenario(svc12, "12", "1.2", "zeep", ZEEP)

    # Wrong credentials: refused (HTTP 401 carrying an AuthorizationException fault).
    bad = requests.Session()
    bad.auth = requests.auth.HTTPBasicAuth(args.user, args.password + "-wrong")
    bad_client = zeep.Client(wsdl, transport=Transport(session=bad))
    try:
        bad_client.service.ping()
        check("wrong password", False, "ping succeeded")
    except Fault as e:
        check("wrong password", fault_code(e) == 4, repr(e))
    except Exception as e:  # noqa: BLE001 - a transport error is also a refusal
        check("wrong password", "401" in str(e), repr(e))

    return report()


if __name__ == "__main__":
    sys.exit(main())
