"""The modern blocking API against the real server: every helper, typed values and NULLs, escape,
streaming with flat memory, cancel by breaking out of a loop, transactions, upload, errors,
sessions and configuration files."""

from __future__ import annotations

import datetime as dt
import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

import ardacat
from ardacat import CommandError, ConnectError

from conftest import Server


def test_connect_basics(conn: ardacat.Connection) -> None:
    assert conn.user == "root"
    assert conn.whoami() == "root"
    assert conn.pwd() == "/"
    assert conn.escape is True
    assert conn.tls is False
    assert conn.execute("pwd") == ["/"]


def test_directories_and_listing(conn: ardacat.Connection, coll: str) -> None:
    conn.mkdir(f"{coll}/sub")
    conn.mkdir(f"{coll}/plain", plain=True)
    conn.add_entries([f"{coll}/e1", f"{coll}/e2"])
    assert conn.dir(coll) == [(f"{coll}/plain", "collection"), (f"{coll}/sub", "collection"),
                              ("e1", "entry"), ("e2", "entry")] or sorted(conn.dir(coll))
    kinds = dict(conn.dir(coll))
    assert {k.rsplit("/", 1)[-1]: v for k, v in kinds.items()} == {
        "plain": "collection", "sub": "collection", "e1": "entry", "e2": "entry"}
    assert sorted(p.rsplit("/", 1)[-1] for p in conn.ls(coll)) == ["e1", "e2", "plain", "sub"]
    assert sorted(p.rsplit("/", 1)[-1] for p in conn.listentries(coll)) == ["e1", "e2"]
    st = conn.stat(f"{coll}/e1")
    assert len(st) == 1 and len(st[0]) == 5 and st[0][2] == "root"
    conn.cd(coll)
    assert conn.pwd() == coll
    conn.cd("/")
    conn.rmdir(f"{coll}/sub")
    with pytest.raises(CommandError) as e:
        conn.rmdir(coll)
    assert e.value.code == 11
    conn.rm(f"{coll}/e*")
    assert conn.listentries(coll) == []


def test_attributes_entries_queries(conn: ardacat.Connection, coll: str) -> None:
    conn.addattr(coll, "events", "int")
    conn.addattr(coll, "status", "varchar(20)")
    conn.addattr(coll, "tmp", "text")
    assert conn.listattr(coll) == {"events": "int", "status": "varchar(20)", "tmp": "text"}
    conn.removeattr(coll, "tmp")
    assert "tmp" not in conn.listattr(coll)
    conn.index_create(coll, "by_status", ["status", "events"])
    assert conn.index_list(coll) == {"by_status": ["status", "events"]}
    conn.index_remove(coll, "by_status")
    assert conn.index_list(coll) == {}
    conn.add_entry(f"{coll}/a", events=1, status="new job")
    conn.add_entry(f"{coll}/b", {"events": 2, "status": "done"})
    conn.add_entry(f"{coll}/c")
    conn.set_attrs(f"{coll}/c", events=3, status="it's")
    assert dict(conn.getattr(coll, ["events", "status"])) == {
        "a": (1, "new job"), "b": (2, "done"), "c": (3, "it's")}
    assert sorted(conn.find(coll, "events > 1")) == ["b", "c"]
    assert sorted(conn.find(coll, f'{coll}:status = "done"')) == ["b"]
    conn.update_attrs(coll, {"events": "events * 10"}, "events >= 2")
    assert sorted(v for _, (v,) in conn.getattr(coll, ["events"])) == [1, 20, 30]
    conn.clear_attrs(f"{coll}/a", ["status"])
    assert dict(conn.getattr(f"{coll}/a", ["status"])) == {"a": (None,)}
    rows = conn.selectattr([f"{coll}:FILE", f"{coll}:events", f"{coll}:events + 1"], "events > 5")
    assert rows.columns == [f"{coll}:FILE", f"{coll}:events", f"{coll}:events + 1"]
    assert sorted(rows) == [("b", 20, "21"), ("c", 30, "31")]
    conn.rm(coll + "/*", "events > 25")
    assert sorted(n for n, _ in conn.getattr(coll, ["events"])) == ["a", "b"]
    assert conn.command("getattr", f"{coll}/a", "status") == ["a", None]


def test_sequences(conn: ardacat.Connection, coll: str) -> None:
    conn.sequence_create("seq", coll, increment=5, start=10)
    assert [conn.sequence_next(f"{coll}/seq") for _ in range(3)] == [10, 15, 20]
    conn.sequence_remove(f"{coll}/seq")
    with pytest.raises(CommandError) as e:
        conn.sequence_next(f"{coll}/seq")
    assert e.value.code in (1, 17)


def test_users_groups_acls(server: Server, conn: ardacat.Connection, coll: str) -> None:
    name = coll.strip("/").replace("_", "")[:20].lower()
    conn.user_create(name, "pw1")
    conn.user_passwd(name, "pw2")
    conn.grp_create(f"g{name}")
    conn.grp_adduser(f"g{name}", name)
    assert conn.grp_member(name) == [f"g{name}"] or f"g{name}" in conn.grp_member(name)
    conn.user_subject_add(name, f"/CN={name}")
    assert conn.user_listcred(name) == [f"/CN={name}"]
    conn.add_entry(f"{coll}/x")
    conn.chmod(coll, "rwxr-x---")
    with server.connect(login=name, password="pw2") as other:
        assert other.whoami() == name
        with pytest.raises(CommandError) as e:
            other.ls(coll)
        assert e.value.code == 4
    conn.acl_add(coll, name, "r-x")
    assert (name, "r-x") in conn.acl_show(coll)
    with server.connect(login=name, password="pw2") as other:
        assert [p.rsplit("/", 1)[-1] for p in other.ls(coll)] == ["x"]
    conn.acl_remove(coll, name)
    assert all(w != name for w, _ in conn.acl_show(coll))
    conn.chown(f"{coll}/x", name)
    assert conn.stat(f"{coll}/x")[0][2] == name
    conn.sudo(name)
    assert conn.whoami() == name
    conn.reconnect()
    assert conn.whoami() == "root"
    conn.grp_removeuser(f"g{name}", name)
    conn.grp_remove(f"g{name}")
    conn.rm(f"{coll}/x")
    conn.user_remove(name)
    with pytest.raises(ConnectError) as ce:
        server.connect(login=name, password="pw2")
    assert ce.value.code == 4
    assert "tcp_commands_total" in conn.stats()
    assert any(line.startswith("getattr") for line in conn.help())


def test_typed_values_and_nulls(conn: ardacat.Connection, coll: str, server: Server) -> None:
    for a, t in [("i", "int"), ("s", "smallint"), ("b", "bigint"), ("f", "float"), ("d", "double"),
                 ("v", "varchar(30)"), ("x", "text"), ("ts", "timestamp"), ("ok", "bool")]:
        conn.addattr(coll, a, t)
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
    conn.add_entry(f"{coll}/full", i=-7, s=3, b=2**40, f=2.5, d=1e-300, v="héllo wörld", x="",
                   ts=when, ok=True)
    conn.add_entry(f"{coll}/empty")
    conn.add_entry(f"{coll}/falsy", i=0, f=0.0, ok=False, x="0", ts=dt.datetime(2000, 1, 1))
    attrs = ["i", "s", "b", "f", "d", "v", "x", "ts", "ok"]
    got = dict(conn.getattr(coll, attrs))
    assert got["full"] == (-7, 3, 2**40, 2.5, 1e-300, "héllo wörld", "", when, True)
    assert got["empty"] == (None,) * 9
    assert got["falsy"] == (0, None, None, 0.0, None, None, "0", dt.datetime(2000, 1, 1), False)
    for row in got.values():
        assert type(row[0]) in (int, type(None)) and type(row[8]) in (bool, type(None))
    # The same through selectattr, and a wildcard pattern typed by its collection.
    assert sorted(conn.selectattr([f"{coll}:FILE", f"{coll}:i", f"{coll}:ts"], "i < 0")) == [("full", -7, when)]
    assert dict(conn.getattr(f"{coll}/f*", ["i", "ok"])) == {"full": (-7, True), "falsy": (0, False)}
    # Without escape NULL is an empty line: typed columns still read None, text reads "".
    with server.connect(escape=False) as raw:
        assert raw.escape is False
        plain = dict(raw.getattr(coll, ["i", "x", "v"]))
        assert plain["empty"] == (None, "", "")
        assert plain["full"] == (-7, "", "héllo wörld")


def test_escape_round_trip(conn: ardacat.Connection, coll: str, server: Server) -> None:
    conn.addattr(coll, "t", "text")
    nasty = ["line1\nline2", "back\\slash", "tab\tand 'quotes' \"dq\"", "ctl\x04\x18end", "\\N", "cr\r",
             "trailing\\", "ünïcødé ✓", " lead and trail "]
    for i, v in enumerate(nasty):
        conn.add_entry(f"{coll}/e{i}", t=v)
    conn.add_entry(f"{coll}/null", t=None)
    with pytest.raises(CommandError) as nul:
        conn.add_entry(f"{coll}/nul", t="a\x00b")  # the server refuses NUL in text (code 18)
    assert nul.value.code == 18
    got = dict(conn.getattr(coll, ["t"]))
    assert [got[f"e{i}"][0] for i in range(len(nasty))] == nasty
    assert got["null"] == (None,)
    n = conn.upload(coll, ["t"], [(f"u{i}", v) for i, v in enumerate(nasty)])
    assert n == len(nasty)
    assert [dict(conn.getattr(f"{coll}/u{i}", ["t"]))[f"u{i}"][0] for i in range(len(nasty))] == nasty
    with server.connect(escape=False) as raw:
        with pytest.raises(ValueError):
            raw.add_entry(f"{coll}/bad", t="a\nb")
        with pytest.raises(CommandError) as e:
            list(raw.getattr(f"{coll}/e0", ["t"]))
        assert e.value.code == 18


def test_upload(conn: ardacat.Connection, coll: str) -> None:
    conn.addattr(coll, "n", "int")
    conn.addattr(coll, "s", "varchar(10)")
    assert conn.upload(coll, ["n", "s"], ((f"r{i}", i, f"s{i}") for i in range(5000))) == 5000
    rows = dict(conn.getattr(coll, ["n", "s"]))
    assert len(rows) == 5000 and rows["r3"] == (3, "s3") and rows["r4"] == (4, "s4")
    with pytest.raises(ValueError):
        conn.upload(coll, ["n", "s"], [("w1", 1, "a"), ("w2", 2)])
    assert "w1" not in dict(conn.getattr(coll, ["n"]))
    with pytest.raises(CommandError) as e:
        conn.upload(coll, ["n"], [("v1", 1), ("v2", "x"), ("v3", 3)])
    assert e.value.code == 18
    assert not {"v1", "v3"} & set(dict(conn.getattr(coll, ["n"])))
    assert conn.pwd() == "/"


def test_transactions(conn: ardacat.Connection, coll: str) -> None:
    conn.addattr(coll, "n", "int")
    with conn.transaction():
        conn.add_entry(f"{coll}/a", n=1)
        conn.add_entry(f"{coll}/b", n=2)
    assert sorted(dict(conn.getattr(coll, ["n"]))) == ["a", "b"]
    with pytest.raises(RuntimeError):
        with conn.transaction():
            conn.add_entry(f"{coll}/c", n=3)
            conn.set_attrs(f"{coll}/a", n=100)
            raise RuntimeError("boom")
    assert dict(conn.getattr(coll, ["n"])) == {"a": (1,), "b": (2,)}
    with pytest.raises(CommandError):
        with conn.transaction():
            conn.add_entry(f"{coll}/d", n=4)
            conn.add_entry(f"{coll}/a", n=5)  # exists: 15
    assert sorted(dict(conn.getattr(coll, ["n"]))) == ["a", "b"]
    with conn.transaction():
        assert conn.upload(coll, ["n"], [("u1", 7), ("u2", 8)]) == 2
    assert dict(conn.getattr(coll, ["n"]))["u2"] == (8,)
    with pytest.raises(CommandError) as e:
        conn.commit()
    assert e.value.code == 9


def test_errors(conn: ardacat.Connection, coll: str, server: Server) -> None:
    cases: list[tuple[Callable[[], object], int]] = [
        (lambda: conn.cd("/no/such"), 1), (lambda: conn.execute("frobnicate"), 3),
        (lambda: conn.find(coll, "a = = 1"), 8), (lambda: conn.mkdir(coll), 16),
        (lambda: conn.getattr(coll, ["nosuch"]), 10)]
    for fn, code in cases:
        with pytest.raises(CommandError) as e:
            fn()
        assert e.value.code == code, (code, e.value)
        assert e.value.message
    conn.add_entry(f"{coll}/x")
    with pytest.raises(CommandError) as e:
        conn.add_entry(f"{coll}/x")
    assert e.value.code == 15
    assert conn.pwd() == "/"  # still in step after every error
    with pytest.raises(ConnectError) as ce:
        server.connect(password="wrong")
    assert ce.value.code == 4
    with pytest.raises(ConnectError):
        ardacat.connect("127.0.0.1", 1, login="root", password="x")
    with pytest.raises(ConnectError):
        server.connect(ssl=True)  # this server has no TLS
    with pytest.raises(ValueError):
        conn.command("cd", "a\nb") if not conn.escape else server.connect(escape=False).cd("a\nb")


def test_stream_one_million_rows_flat_memory(conn: ardacat.Connection, coll: str) -> None:
    # 1000 x 1000 entries joined: 1M rows streamed without storing them (the implicit join).
    a, b = f"{coll}/a", f"{coll}/b"
    for d in (a, b):
        conn.mkdir(d)
        conn.addattr(d, "n", "int")
        assert conn.upload(d, ["n"], ((f"e{i}", i) for i in range(1000))) == 1000
    gc.collect()
    tracemalloc.start()
    try:
        count = total = 0
        for x, y in conn.selectattr([f"{a}:n", f"{b}:n"], ""):
            count += 1
            total += x + y
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 1_000_000
    assert total == 2 * 1000 * sum(range(1000))
    # A list of 1M tuples alone would take > 100 MB; streaming stays at a few batches.
    assert peak < 12 * 1024 * 1024, f"peak {peak} bytes"


def test_cancel_by_breaking_out(conn: ardacat.Connection, coll: str) -> None:
    a, b = f"{coll}/a", f"{coll}/b"
    for d in (a, b):
        conn.mkdir(d)
        conn.addattr(d, "n", "int")
        conn.upload(d, ["n"], ((f"e{i}", i) for i in range(1000)))
    before = conn.stats()["tcp_selectattr"]
    seen = 0
    for _row in conn.selectattr([f"{a}:n", f"{b}:n"], ""):
        seen += 1
        if seen == 10:
            break
    proto = conn._proto
    assert proto is not None and not proto.in_reply, "dropping the result must cancel and drain it"
    # The server stopped: far fewer than the 2M data lines were sent after the cancel.
    assert proto.discarded_lines < 1_500_000, proto.discarded_lines
    after = conn.stats()["tcp_selectattr"]

    def errors(s: str) -> int:
        return int(s.split("errors=")[1].split()[0])

    assert errors(after) == errors(before) + 1, (before, after)
    # An explicit close and a with block cancel too; the connection stays usable.
    rows = conn.selectattr([f"{a}:n", f"{b}:n"], "")
    next(rows)
    rows.close()
    with conn.selectattr([f"{a}:n", f"{b}:n"], "") as rows2:
        next(rows2)
    assert conn.pwd() == "/"
    # A result abandoned by another command says so instead of reading the wrong reply.
    rows3 = conn.selectattr([f"{a}:n", f"{b}:n"], "")
    assert conn.whoami() == "root"
    with pytest.raises(ardacat.Error):
        list(rows3)


def test_session_resume(server: Server, coll: str) -> None:
    with server.connect(session=True) as c:
        sid = c.session_id
        c.cd(coll)
        assert c.session_id is not None
        sid = c.session_id
        c.resume()
        assert c.pwd() == coll
        assert c.whoami() == "root"
        assert c.session_id == sid
    with server.connect() as plain:
        assert plain.session_id is None
        with pytest.raises(ardacat.Error):
            plain.resume()


def test_config_file(server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "my.config"
    cfg.write_text(f"# test\nHost = {server.host}\nPort = {server.port}\nLogin = root\n"
                   f"Password = {server.password}\nPermissionMask = rwx\n")
    with ardacat.connect(config=cfg) as c:
        assert c.whoami() == "root"
    # ./mdclient.config is read by default, and arguments win over it.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mdclient.config").write_text(cfg.read_text())
    with ardacat.connect() as c:
        assert c.whoami() == "root"
    with pytest.raises(ConnectError):
        ardacat.connect(password="not-it")
    monkeypatch.setenv("ARDACAT_PASSWORD", server.password)
    (tmp_path / "mdclient.config").write_text(f"Host = {server.host}\nPort = {server.port}\nLogin = root\n")
    with ardacat.connect() as c:
        assert c.whoami() == "root"


def test_nulls_in_values(server: Server, conn: ardacat.Connection, coll: str) -> None:
    """``None`` is NULL in ``upload`` rows and ``set_attrs`` under ``escape`` (sent as ``\\N``),
    distinct from the empty string; without ``escape`` ``set_attrs`` refuses to send it."""
    conn.addattr(coll, "n", "int")
    conn.addattr(coll, "s", "varchar(10)")
    assert conn.upload(coll, ["n", "s"], [("a", None, None), ("b", 2, ""), ("c", 3, "x")]) == 3
    assert dict(conn.getattr(coll, ["n", "s"])) == {"a": (None, None), "b": (2, ""), "c": (3, "x")}
    conn.set_attrs(f"{coll}/c", n=None, s="y")
    assert dict(conn.getattr(f"{coll}/c", ["n", "s"])) == {"c": (None, "y")}
    with server.connect(escape=False) as plain:
        with pytest.raises(ValueError):
            plain.set_attrs(f"{coll}/b", n=None)
    assert dict(conn.getattr(f"{coll}/b", ["n"])) == {"b": (2,)}


def test_native_sql(conn: ardacat.Connection, coll: str) -> None:
    """``sql()``: a SELECT streams typed tuples with the header lines as ``.columns``; writes run
    and return nothing; a syntax error is a :class:`CommandError` with code 8."""
    conn.addattr(coll, "events", "int")
    conn.addattr(coll, "ok", "bool")
    assert list(conn.sql(f"INSERT INTO {coll} (FILE, events, ok) VALUES ('a', 1, TRUE), ('b', 7, FALSE)")) == []
    conn.sql(f"UPDATE {coll} SET events = events + 10 WHERE FILE = 'a'")
    rows = conn.sql(f"SELECT FILE, events, ok FROM {coll} WHERE events > 5 ORDER BY FILE")
    assert rows.columns == ["FILE", "events", "ok"]
    assert list(rows) == [("a", 11, True), ("b", 7, False)]
    agg = conn.sql(f"SELECT COUNT(*), MAX(events) FROM {coll}")
    assert agg.columns == ["COUNT(*)", "MAX(events)"] and list(agg) == [(2, 11)]
    avg = conn.sql(f"SELECT AVG(events), SUM(events), MIN(FILE) FROM {coll}")
    assert list(avg) == [(9.0, 18, "a")]
    conn.sql(f"DELETE FROM {coll} WHERE events < 10")
    assert [r[0] for r in conn.sql(f"SELECT FILE FROM {coll}")] == ["a"]
    with pytest.raises(CommandError) as e:
        list(conn.sql(f"SELECT FROM {coll} WHERE"))
    assert e.value.code == 8


def test_refusal_instead_of_greeting_is_shown() -> None:
    from ardacat._proto import ClientProtocol

    p = ClientProtocol("root", "secret")
    p.receive_data(b"19 Server busy: too many connections; try again later\n")
    with pytest.raises(ConnectError, match="refused the connection: 19 Server busy: too many connections"):
        p.receive_eof()
