"""The SOAP interop scenario shared by the Python toolkits (zeep_scenario.py, suds_scenario.py):
every operation of ardacat's WSDL on one port, including faults (the MetadataFault detail code)
and paging through a query, with the same checks whichever toolkit makes the calls. A toolkit's
script builds its client, runs `scenario` on each port it speaks, and ends with `report()`: the
line `N passed, M failed`, and exit status 1 if anything failed."""

import argparse
import traceback

PASSED = 0
FAILED = 0


class Toolkit:
    """How one toolkit reports a SOAP fault: its exception class, the MetadataFault code in the
    fault's detail (None if absent), and the SOAP fault code (`soap:Client`, `…Sender`)."""

    def __init__(self, fault, fault_code, soap_code):
        self.fault = fault
        self.fault_code = fault_code
        self.soap_code = soap_code


def check(name, cond, detail=""):
    global PASSED, FAILED
    if cond:
        PASSED += 1
    else:
        FAILED += 1
        print(f"FAIL {name}: {detail}", flush=True)


def expect_toolkit_fault(kit, name, code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except kit.fault as e:
        got = kit.fault_code(e)
        check(name, got == code, f"expected MetadataFault code {code}, got {got} ({e!r})")
        return e
    check(name, False, f"expected a fault with code {code}, the call succeeded")
    return None


def items(x, field):
    """A repeated element as a list: some toolkits leave an absent one out, or give None."""
    return list(getattr(x, field, None) or []) if x is not None else []


def step(name, fn):
    """Runs one part of the scenario; an unexpected exception fails it and the run goes on."""
    try:
        fn()
    except Exception:  # noqa: BLE001 - report and continue
        check(name, False, traceback.format_exc())


def scenario(svc, tag, version, prefix, kit):
    """Every operation on one port `svc`; `tag` names the checks, `version` is "1.1" or "1.2",
    `prefix` the toolkit's collection name, `kit` its faults ([`Toolkit`])."""
    base = f"/{prefix}{tag}"

    def expect_fault(name, code, fn, *args, **kwargs):
        return expect_toolkit_fault(kit, name, code, fn, *args, **kwargs)

    def basics():
        check(f"{tag} ping", svc.ping() is None)
        v = svc.getVersion()
        check(f"{tag} getVersion", isinstance(v, str) and "ardacat" in v, repr(v))

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
            f"{tag} describeSchema",
            [(a.name, a.type) for a in attrs] == [("size", "int"), ("label", "varchar(64)"), ("w", "float")],
            repr(attrs),
        )
        check(f"{tag} listSchemas", base in (svc.listSchemas() or []), repr(svc.listSchemas()))
        svc.addSchemaAttributes(schemaName=base, attribute=[{"name": "extra", "type": "text"}])
        check(f"{tag} addSchemaAttributes", len(svc.describeSchema(schemaName=base)) == 4)
        svc.removeSchemaAttributes(schemaName=base, attributeName=["extra"])
        check(f"{tag} removeSchemaAttributes", len(svc.describeSchema(schemaName=base)) == 3)
        svc.createSchema(schemaName=f"{base}/sub", plain=True)
        check(f"{tag} listSchemas(path)", list(svc.listSchemas(path=base) or []) == [f"{base}/sub"], repr(svc.listSchemas(path=base)))
        check(f"{tag} plain schema", not svc.describeSchema(schemaName=f"{base}/sub"))
        svc.dropSchema(schemaName=f"{base}/sub")
        check(f"{tag} dropSchema", not svc.listSchemas(path=base))

    def entries():
        batch = []
        for i in range(50):
            attrs = [{"name": "size", "value": str(i)}]
            if i % 2 == 0:
                attrs.append({"name": "label", "value": f"even <{i}> & 'q'"})
            batch.append({"name": f"f{i:03d}", "attribute": attrs})
        created = svc.createEntry(schemaName=base, entry=batch)
        check(f"{tag} createEntry", created == 50, repr(created))
        got = svc.getAttributes(entryName=[f"{base}/f002", f"{base}/f001"], attributeName=["label", "size"])
        check(
            f"{tag} getAttributes",
            [(e.name, [(a.name, a.value) for a in items(e, "attribute")]) for e in got]
            == [
                (f"{base}/f002", [("label", "even <2> & 'q'"), ("size", "2")]),
                (f"{base}/f001", [("label", None), ("size", "1")]),
            ],
            repr(got),
        )
        listed = svc.listAttributes(entryName=f"{base}/f001")
        check(f"{tag} listAttributes", [a.name for a in listed] == ["size", "label", "w"], repr(listed))
        n = svc.setAttributes(pattern=f"{base}/f00*", condition="size < 5", attribute=[{"name": "label", "value": 'say "hi" \\o/'}])
        check(f"{tag} setAttributes(condition)", n == 5, repr(n))
        got = svc.getAttributes(entryName=[f"{base}/f003"], attributeName=["label"])
        check(f"{tag} setAttributes value", got[0].attribute[0].value == 'say "hi" \\o/', repr(got))
        n = svc.setAttributes(pattern=f"{base}/f003", attribute=[{"name": "w", "value": "0.5"}])
        check(f"{tag} setAttributes", n == 1, repr(n))
        n = svc.clearAttributes(pattern=f"{base}/f003", attributeName=["label", "w"])
        check(f"{tag} clearAttributes", n == 1, repr(n))
        got = svc.getAttributes(entryName=[f"{base}/f003"], attributeName=["label", "w"])
        check(f"{tag} cleared", [a.value for a in got[0].attribute] == [None, None], repr(got))

    def paging():
        r = svc.query(select=[f"{base}:FILE", f"{base}:size"], condition=f"{base}:size >= 0", orderBy=f"{base}:size", pageSize=7)
        check(f"{tag} query columns", items(r, "column") == [f"{base}:FILE", f"{base}:size"], repr(r))
        rows = [items(row, "value") for row in items(r, "row")]
        pages = 1
        while r.more:
            r = svc.nextQuery(token=r.token, pageSize=7)
            rows.extend(items(row, "value") for row in items(r, "row"))
            pages += 1
        check(f"{tag} paging", rows == [[f"f{i:03d}", str(i)] for i in range(50)], repr(rows[:3]))
        check(f"{tag} pages", pages == 8, repr(pages))
        r = svc.query(select=[f"{base}:size"], pageSize=3)
        check(f"{tag} token", bool(r.token) and r.more, repr(r))
        svc.endQuery(token=r.token)
        expect_fault(f"{tag} nextQuery after endQuery", 1, svc.nextQuery, token=r.token)
        expect_fault(f"{tag} second endQuery", 1, svc.endQuery, token=r.token)
        # Native SQL, paged like query: the columns are the header names.
        r = svc.sqlQuery(statement=f"SELECT FILE, size AS s FROM {base} WHERE size < 10 ORDER BY size DESC", pageSize=4)
        check(f"{tag} sqlQuery columns", items(r, "column") == ["FILE", "s"], repr(r))
        rows = [items(row, "value") for row in items(r, "row")]
        while r.more:
            r = svc.nextQuery(token=r.token, pageSize=4)
            rows.extend(items(row, "value") for row in items(r, "row"))
        check(f"{tag} sqlQuery rows", rows == [[f"f{i:03d}", str(i)] for i in range(9, -1, -1)], repr(rows[:3]))
        expect_fault(f"{tag} sqlQuery INSERT", 8, svc.sqlQuery, statement=f"INSERT INTO {base} (FILE) VALUES ('x')")
        # Composite indexes.
        svc.indexCreate(schemaName=base, indexName="by_size", attributeName=["size", "FILE"])
        got = [(ix.name, items(ix, "attributeName")) for ix in (svc.indexList(schemaName=base) or [])]
        check(f"{tag} indexList", got == [("by_size", ["size", "FILE"])], repr(got))
        expect_fault(f"{tag} indexCreate exists", 15, svc.indexCreate, schemaName=base, indexName="BY_SIZE", attributeName=["size"])
        svc.indexRemove(schemaName=base, indexName="by_size")
        check(f"{tag} indexList empty", not svc.indexList(schemaName=base), "")

    def faults():
        e = expect_fault(f"{tag} exists", 16, svc.createSchema, schemaName=base)
        if e is not None:
            want = "Client" if version == "1.1" else "Sender"
            check(f"{tag} fault code", kit.soap_code(e).endswith(want), kit.soap_code(e))
        expect_fault(f"{tag} entry exists", 15, svc.createEntry, schemaName=base, entry=[{"name": "f001"}])
        expect_fault(f"{tag} not exists", 1, svc.getAttributes, entryName=["/nope/x"], attributeName=["a"])
        expect_fault(f"{tag} no attribute", 10, svc.getAttributes, entryName=[f"{base}/f001"], attributeName=["nosuch"])
        expect_fault(f"{tag} bad query", 8, svc.query, select=[f"{base}:size"], condition="size >")
        expect_fault(f"{tag} forged token", 8, svc.nextQuery, token="not-a-token")
        expect_fault(
            f"{tag} bad value", 18, svc.createEntry, schemaName=base, entry=[{"name": "g1", "attribute": [{"name": "size", "value": "x"}]}]
        )
        check(f"{tag} nothing created", not svc.getAttributes(entryName=[f"{base}/g*"], attributeName=["size"]))

    def cleanup():
        removed = svc.removeEntry(pattern=f"{base}/*", condition="size >= 25")
        check(f"{tag} removeEntry(condition)", removed == 25, repr(removed))
        removed = svc.removeEntry(pattern=f"{base}/*")
        check(f"{tag} removeEntry", removed == 25, repr(removed))
        svc.dropSchema(schemaName=base)
        check(f"{tag} gone", base not in (svc.listSchemas() or []))

    for name, fn in [("basics", basics), ("schema", schema), ("entries", entries), ("paging", paging), ("faults", faults), ("cleanup", cleanup)]:
        step(f"{tag} {name}", fn)


def parse_args():
    """The options every toolkit script takes: `--url` (the HTTP port's base URL), `--user`,
    `--password`."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="base URL of the server's HTTP port, e.g. http://127.0.0.1:8823")
    ap.add_argument("--user", default="root")
    ap.add_argument("--password", required=True)
    return ap.parse_args()


def report():
    """Prints the summary line; returns the exit status."""
    print(f"{PASSED} passed, {FAILED} failed", flush=True)
    return 1 if FAILED else 0
