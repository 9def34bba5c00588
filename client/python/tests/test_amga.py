"""The AMGA compatibility layer (``ardacat.amga``) running legacy-style code: the §8.3 scenario
of amga.md written the way scripts for the original ``mdclient`` were (``execute``/``eot``/
``fetchRow``/``getEntry`` loops, ``CommandException.errorCode``), with keepalive on and off and
against a server that issues a session with every reply."""

from __future__ import annotations

import itertools
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from ardacat.amga import mdclient, mdinterface
from ardacat.amga.mdclient import MDClient
from ardacat.amga.mdinterface import CommandException, MDInterface

from conftest import Databases, Server

_n = itertools.count()


def legacy_scenario(client: MDClient, base: str) -> None:
    """What an old job-system script does, unchanged but for the import."""
    P, L = f"/pytest{base}", f"/pylock{base}"
    client.createDir(P)
    client.addEntries([P + "/a", P + "/b", P + "/c"])
    client.addAttr(P, "events", "int")
    client.addAttr(P, "eventGen", "varchar(20)")
    client.addAttr(P, "sssin", "float")
    client.addAttr(P, "lumi", "int")
    names, types = client.listAttr(P)
    assert dict(zip(names, types)) == {"events": "int", "eventGen": "varchar(20)", "sssin": "float", "lumi": "int"}
    for i in range(10):
        client.addEntry(P + f"/t{i}", ["events", "eventGen", "sssin", "lumi"],
                        [f"{i}00", "myGen", i + 0.5, i])
    client.getattr(P, ["eventGen", "sssin", "events"])
    rows: Dict[Optional[str], List[Optional[str]]] = {}
    while not client.eot():
        name, values = client.getEntry()
        rows[name] = values
    assert rows["t3"] == ["myGen", "3.5", "300"] and rows["a"] == ["", "", ""] and len(rows) == 13
    client.createDir(P + "/testdir")
    client.listEntries(P)
    kinds = {}
    while not client.eot():
        name, (kind,) = client.getEntry()
        assert name is not None and kind is not None
        kinds[name.rsplit("/", 1)[-1]] = kind
    assert kinds["testdir"] == "collection" and kinds["t1"] == "entry"
    client.createDir(L)
    client.addAttr(L, "id", "int")
    client.addEntry(L + "/lock", ["id"], ["4711"])
    client.selectAttr([P + ":eventGen", P + ":sssin", P + ":events"], P + ':FILE="t1"')
    found = []
    while not client.eot():
        found.append(client.getSelectAttrEntry())
    assert found == [["myGen", "1.5", "100"]]
    client.setAttr(P + "/t5", ["events"], [4711])
    client.updateAttr(P, ["sssin 'sssin + 1'"], P + ":events = " + L + ":id")
    client.selectAttr([P + ":sssin"], P + ':FILE="t5"')
    assert client.getSelectAttrEntry() == ["6.5"] and client.eot()
    client.setAttr(P + "/t?", ["eventGen"], ["it's new"])
    client.getattr(P + "/t9", ["eventGen"])
    assert client.getEntry() == ("t9", ["it's new"])
    client.find(P, "events > 700")
    hits: List[str] = []
    while not client.eot():
        row = client.fetchRow()
        assert row is not None
        hits.append(row)
    assert sorted(hits) == ["t8", "t9"] or sorted(hits) == ["t5", "t8", "t9"]
    assert client.pwd() == "/"
    client.cd(P)
    assert client.pwd() == P
    client.cd("/")
    # sequences
    client.sequenceCreate("seq", P)
    assert [client.sequenceNext(P + "/seq") for _ in range(2)] == ["1", "2"]
    client.sequenceRemove(P + "/seq")
    # bulk load and transactions
    client.upload(P, ["events", "lumi"])
    for i in range(100):
        client.put(f"u{i}", [str(i), str(i * 2)])
    with pytest.raises(CommandException) as wrong:
        client.put("bad", ["1"])
    assert wrong.value.errorCode == 3
    client.commit()
    client.getattr(P + "/u42", ["lumi"])
    assert client.getEntry() == ("u42", ["84"])
    client.transaction()
    client.addEntry(P + "/inTx", ["events"], ["1"])
    client.abort()
    client.getattr(P, ["events"])
    names_after = []
    while not client.eot():
        names_after.append(client.getEntry()[0])
    assert "inTx" not in names_after and "u99" in names_after
    # errors, with the original's exception shape
    cases: List[Tuple[Callable[[], object], int]] = [
        (lambda: client.createDir(P), 16), (lambda: client.addAttr(P, "events", "int"), 15),
        (lambda: client.removeDir(P), 11), (lambda: client.cd(P + "/nope"), 1),
        (lambda: client.sequenceNext(P + "/t1"), 17)]
    for bad, code in cases:
        with pytest.raises(CommandException) as e:
            bad()
        assert e.value.errorCode == code, (code, str(e.value))
        assert "Command was: " in e.value.msg
        assert str(e.value).startswith(repr(code) + " - ")
    # clean up as the scenario does
    client.clearAttr(P + "/t1", "events")
    client.removeDir(P + "/testdir")
    client.rm(P + "/*")
    client.removeAttr(P, "lumi")
    client.rm(L + "/*")
    client.removeDir(P)
    client.removeDir(L)


def test_legacy_scenario_keepalive(server: Server) -> None:
    client = mdclient.MDClient(server.host, server.port, "root", server.password)
    assert not client.connected  # connects on its first command, as the original did
    legacy_scenario(client, f"_k{next(_n)}")
    assert client.connected and client.protocolVersion == 2
    client.disconnect()


def test_legacy_scenario_reconnect_per_command(server: Server) -> None:
    client = MDClient(server.host, server.port, "root", server.password, keepalive=False)
    client.createDir(f"/pynk{next(_n)}")
    client.execute("pwd")
    assert client.fetchRow() == "/" and client.eot()


def test_legacy_scenario_with_sessions(databases: Databases) -> None:
    s = Server(databases.fresh(), ["--sessions", "force"])
    try:
        client = MDClient(s.host, s.port, "root", s.password)
        legacy_scenario(client, f"_s{next(_n)}")
        # every reply carried a session: the client closed and resumed on the next command
        assert client.sessionID != 0 and not client.connected
        client.cd("/")
        client.execute("whoami")
        assert client.fetchRow() == "root"
    finally:
        s.stop()


def test_exception_and_interface(server: Server) -> None:
    e = CommandException(4, "permission denied")
    assert (e.errorCode, e.msg) == (4, "permission denied") and str(e) == "4 - 'permission denied'"
    assert issubclass(mdinterface.CommandException, Exception)
    assert issubclass(MDClient, MDInterface)
    with pytest.raises(NotImplementedError):
        MDInterface().pwd()
    assert MDInterface().splitUpdateClause("  sssin 'sssin + 1'") == ("sssin", "sssin + 1")
    with pytest.raises(CommandException):
        MDInterface().splitUpdateClause("novalue")
    bad = MDClient(server.host, server.port, "root", "wrong")
    with pytest.raises(CommandException) as e2:
        bad.pwd()
    assert e2.value.errorCode == 4
    nowhere = MDClient("127.0.0.1", 1)
    with pytest.raises(CommandException) as e3:
        nowhere.pwd()
    assert e3.value.errorCode == -1


def test_constraints(server: Server) -> None:
    client = MDClient(server.host, server.port, "root", server.password)
    d = f"/pycons{next(_n)}"
    client.createDir(d)
    client.addAttr(d, "n", "int")
    client.constraintAddNotNull(d, "n", "n_nn")
    assert any("n_nn" in line for line in client.constraintList(d))
    with pytest.raises(CommandException):
        client.addEntry(d + "/e", [], [])
    client.constraintDrop(d, "n_nn")
    assert not any("n_nn" in line for line in client.constraintList(d))


def test_sites_and_replicas(server: Server) -> None:
    client = MDClient(server.host, server.port, "root", server.password)
    site = f"site{next(_n)}"
    client.siteAdd(site, "srv.example.org")
    sites = client.siteList()
    assert site in sites
    client.replicaRegister([("guid-1", site)])
    assert client.replicaList(["guid-1"]) == {"guid-1": [site]}
    client.replicaUnregister("guid-1", site, delete=True)
    client.siteRemove(site)
    assert site not in client.siteList()


def test_update_is_updateattr(server: Server) -> None:
    """The original client's ``update`` (AMGA's alias of ``updateattr``)."""
    client = MDClient(server.host, server.port, "root", server.password)
    d = f"/pyupd{next(_n)}"
    client.createDir(d)
    client.addAttr(d, "n", "int")
    client.addEntry(d + "/a", ["n"], ["1"])
    client.addEntry(d + "/b", ["n"], ["5"])
    client.update(d + "/*", ["n 'n * 10'"], "n > 2")
    client.getattr(d + "/*", ["n"])
    got = {}
    while not client.eot():
        name, values = client.getEntry()
        got[name] = values
    assert got == {"a": ["1"], "b": ["50"]}


def test_remote_execute_is_refused(server: Server) -> None:
    """AMGA's ``execute`` is not a command of ardacat (docs/python.md): a clear code 3, and the
    connection still works."""
    client = MDClient(server.host, server.port, "root", server.password)
    with pytest.raises(CommandException) as e:
        client.remoteExecute("pwd")
    assert e.value.errorCode == 3 and "execute" in e.value.msg
    assert client.pwd() == "/"
