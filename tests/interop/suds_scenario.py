#!/usr/bin/env python3
"""SOAP interop scenario with Python suds (suds-community), a third independent toolkit: it
loads ardacat's WSDL from the live server and runs every operation over the SOAP 1.1 port,
including faults (the MetadataFault detail code) and paging through a query. suds speaks SOAP
1.1 only (it sends a 1.1 envelope even to a 1.2 port), so the 1.2 port is zeep's and gSOAP's.

    python suds_scenario.py --url http://127.0.0.1:8823 --user root --password secret

Ends with the line `N passed, M failed`; exits 1 if anything failed.
"""

import argparse
import sys
import traceback

from suds import WebFault
from suds.client import Client
from suds.transport import TransportError
from suds.transport.http import HttpAuthenticated

PASSED = 0
FAILED = 0


def check(name, cond, detail=""):
    global PASSED, FAILED
    if cond:
        PASSED += 1
    else:
        FAILED += 1
        print(f"FAIL {name}: {detail}", flush=True)


def fault_code(fault):
    """The MetadataFault code of a suds WebFault, or None."""
    detail = getattr(fault.fault, "detail", None)
    mf = getattr(detail, "MetadataFault", None)
    code = getattr(mf, "code", None)
    return int(code) if code is not None else None


def expect_fault(name, code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except WebFault as e:
        got = fault_code(e)
        check(name, got == code, f"expected MetadataFault code {code}, got {got} ({e.fault!r})")
        return e
    check(name, False, f"expected a fault with code {code}, the call succeeded")
    return None


def items(x, field):
    """A repeated element of a suds object as a list (suds leaves an absent one out)."""
    return list(getattr(x, field, None) or []) if x is not None else []


def step(name, fn):
    """Runs one part of the scenario; an unexpected exception fails it and the run goes on."""
    try:
        fn()
    except Exception:  # noqa: BLE001 - report and continue
        check(name, False, traceback.format_exc())


def scenario(svc):
    base = "/suds"

    def basics():
        check("ping", svc.ping() is None)
        v = svc.getVersion()
        check("getVersion", "ardacat" in str(v), repr(v))

    def schema():
        svc.createSchema(
            schemaName=base,
            attribute=[
                {"name": "size", "type": "int"},
                {"name": "label", "type": "varchar(64)"},
                {"name": "w", "type": "float"},
            ],
        )
        attrs = svc.describeSchema(schemaName=base) or []
        check(
            "describeSchema",
            [(a.name, a.type) for a in attrs] == [("size", "int"), ("label", "varchar(64)"), ("w", "float")],
            repr(attrs),
        )
        check("listSchemas", base in (svc.listSchemas() or []), repr(svc.listSchemas()))
        svc.addSchemaAttributes(schemaName=base, attribute=[{"name": "extra", "type": "text"}])
        check("addSchemaAttributes", len(svc.describeSchema(schemaName=base)) == 4)
        svc.removeSchemaAttributes(schemaName=base, attributeName=["extra"])
        check("removeSchemaAttributes", len(svc.describeSchema(schemaName=base)) == 3)
        svc.createSchema(schemaName=f"{base}/sub", plain=True)
        sub = svc.listSchemas(path=base) or []
        check("listSchemas(path)", list(sub) == [f"{base}/sub"], repr(sub))
        check("plain schema", not svc.describeSchema(schemaName=f"{base}/sub"))
        svc.dropSchema(schemaName=f"{base}/sub")
        check("dropSchema", not svc.listSchemas(path=base))

    def entries():
        batch = []
        for i in range(50):
            attrs = [{"name": "size", "value": str(i)}]
            if i % 2 == 0:
                attrs.append({"name": "label", "value": f"even <{i}> & 'q'"})
            batch.append({"name": f"f{i:03d}", "attribute": attrs})
        created = svc.createEntry(schemaName=base, entry=batch)
        check("createEntry", created == 50, repr(created))
        got = svc.getAttributes(entryName=[f"{base}/f002", f"{base}/f001"], attributeName=["label", "size"])
        check(
            "getAttributes",
            [(e.name, [(a.name, a.value) for a in items(e, "attribute")]) for e in got]
            == [
                (f"{base}/f002", [("label", "even <2> & 'q'"), ("size", "2")]),
                (f"{base}/f001", [("label", None), ("size", "1")]),
            ],
            repr(got),
        )
        listed = svc.listAttributes(entryName=f"{base}/f001")
        check("listAttributes", [a.name for a in listed] == ["size", "label", "w"], repr(listed))
        n = svc.setAttributes(
            pattern=f"{base}/f00*", condition="size < 5", attribute=[{"name": "label", "value": 'say "hi" \\o/'}]
        )
        check("setAttributes(condition)", n == 5, repr(n))
        got = svc.getAttributes(entryName=[f"{base}/f003"], attributeName=["label"])
        check("setAttributes value", got[0].attribute[0].value == 'say "hi" \\o/', repr(got))
        n = svc.setAttributes(pattern=f"{base}/f003", attribute=[{"name": "w", "value": "0.5"}])
        check("setAttributes", n == 1, repr(n))
        n = svc.clearAttributes(pattern=f"{base}/f003", attributeName=["label", "w"])
        check("clearAttributes", n == 1, repr(n))
        got = svc.getAttributes(entryName=[f"{base}/f003"], attributeName=["label", "w"])
        check("cleared", [a.value for a in got[0].attribute] == [None, None], repr(got))

    def paging():
        r = svc.query(
            select=[f"{base}:FILE", f"{base}:size"], condition=f"{base}:size >= 0", orderBy=f"{base}:size", pageSize=7
        )
        check("query columns", items(r, "column") == [f"{base}:FILE", f"{base}:size"], repr(r))
        rows = [items(row, "value") for row in items(r, "row")]
        pages = 1
        while r.more:
            r = svc.nextQuery(token=r.token, pageSize=7)
            rows.extend(items(row, "value") for row in items(r, "row"))
            pages += 1
        check("paging", rows == [[f"f{i:03d}", str(i)] for i in range(50)], repr(rows[:3]))
        check("pages", pages == 8, repr(pages))
        r = svc.query(select=[f"{base}:size"], pageSize=3)
        check("token", bool(r.token) and r.more, repr(r))
        svc.endQuery(token=r.token)
        expect_fault("nextQuery after endQuery", 1, svc.nextQuery, token=r.token)
        expect_fault("second endQuery", 1, svc.endQuery, token=r.token)
        # Native SQL, paged like query: the columns are the header names.
        r = svc.sqlQuery(statement=f"SELECT FILE, size AS s FROM {base} WHERE size < 10 ORDER BY size DESC", pageSize=4)
        check("sqlQuery columns", items(r, "column") == ["FILE", "s"], repr(r))
        rows = [items(row, "value") for row in items(r, "row")]
        while r.more:
            r = svc.nextQuery(token=r.token, pageSize=4)
            rows.extend(items(row, "value") for row in items(r, "row"))
        check("sqlQuery rows", rows == [[f"f{i:03d}", str(i)] for i in range(9, -1, -1)], repr(rows[:3]))
        expect_fault("sqlQuery INSERT", 8, svc.sqlQuery, statement=f"INSERT INTO {base} (FILE) VALUES ('x')")
        # Composite indexes.
        svc.indexCreate(schemaName=base, indexName="by_size", attributeName=["size", "FILE"])
        got = [(ix.name, items(ix, "attributeName")) for ix in (svc.indexList(schemaName=base) or [])]
        check("indexList", got == [("by_size", ["size", "FILE"])], repr(got))
        expect_fault("indexCreate exists", 15, svc.indexCreate, schemaName=base, indexName="BY_SIZE", attributeName=["size"])
        svc.indexRemove(schemaName=base, indexName="by_size")
        check("indexList empty", not svc.indexList(schemaName=base), "")

    def faults():
        e = expect_fault("exists", 16, svc.createSchema, schemaName=base)
        if e is not None:
            check("fault code", str(e.fault.faultcode).endswith("Client"), repr(e.fault.faultcode))
        expect_fault("entry exists", 15, svc.createEntry, schemaName=base, entry=[{"name": "f001"}])
        expect_fault("not exists", 1, svc.getAttributes, entryName=["/nope/x"], attributeName=["a"])
        expect_fault("no attribute", 10, svc.getAttributes, entryName=[f"{base}/f001"], attributeName=["nosuch"])
        expect_fault("bad query", 8, svc.query, select=[f"{base}:size"], condition="size >")
        expect_fault("forged token", 8, svc.nextQuery, token="not-a-token")
        expect_fault(
            "bad value", 18, svc.createEntry, schemaName=base, entry=[{"name": "g1", "attribute": [{"name": "size", "value": "x"}]}]
        )
        check("nothing created", not svc.getAttributes(entryName=[f"{base}/g*"], attributeName=["size"]))

    def cleanup():
        removed = svc.removeEntry(pattern=f"{base}/*", condition="size >= 25")
        check("removeEntry(condition)", removed == 25, repr(removed))
        removed = svc.removeEntry(pattern=f"{base}/*")
        check("removeEntry", removed == 25, repr(removed))
        svc.dropSchema(schemaName=base)
        check("gone", base not in (svc.listSchemas() or []))

    for name, fn in [("basics", basics), ("schema", schema), ("entries", entries), ("paging", paging), ("faults", faults), ("cleanup", cleanup)]:
        step(name, fn)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="base URL of the server's HTTP port, e.g. http://127.0.0.1:8823")
    ap.add_argument("--user", default="root")
    ap.add_argument("--password", required=True)
    args = ap.parse_args()

    wsdl = f"{args.url}/soap?wsdl"
    client = Client(wsdl, transport=HttpAuthenticated(username=args.user, password=args.password), timeout=120)
    scenario(client.service)

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

    print(f"{PASSED} passed, {FAILED} failed", flush=True)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
