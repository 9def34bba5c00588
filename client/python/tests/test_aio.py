"""The asyncio front against the real server: the same helpers, typed streams, cancel, upload,
transactions, errors, and 100 concurrent tasks on one event loop (own connections, and one
shared connection)."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
from typing import Any

import pytest

import ardacat
import ardacat.aio

from pathlib import Path

from conftest import Databases, Server

_n = itertools.count()


def run(coro: "asyncio.Future[None] | object") -> None:
    asyncio.run(coro)  # type: ignore[arg-type]


async def aconnect(server: Server, **kw: object) -> ardacat.aio.Connection:
    args: dict[str, Any] = dict(login="root", password=server.password)
    args.update(kw)
    return await ardacat.aio.connect(server.host, server.port, **args)


def test_aio_helpers_and_streams(server: Server) -> None:
    async def main() -> None:
        async with await aconnect(server) as c:
            coll = f"/aio_{next(_n)}"
            assert c.user == "root" and await c.pwd() == "/"
            await c.mkdir(coll)
            await c.addattr(coll, "n", "int")
            await c.addattr(coll, "ts", "timestamp")
            await c.addattr(coll, "s", "text")
            when = dt.datetime(2021, 2, 3, 4, 5, 6)
            await c.add_entry(f"{coll}/a", n=1, ts=when, s="x\ny")
            await c.add_entry(f"{coll}/b", {"n": 2})
            assert await c.listattr(coll) == {"n": "int", "ts": "timestamp", "s": "text"}
            rows = await c.getattr(coll, ["n", "ts", "s"])
            assert dict([r async for r in rows]) == {"a": (1, when, "x\ny"), "b": (2, None, None)}
            assert sorted(await c.find(coll, "n > 0")) == ["a", "b"]
            sel = await c.selectattr([f"{coll}:FILE", f"{coll}:n"], "n = 2")
            assert await sel.fetchall() == [("b", 2)]
            await c.set_attrs(f"{coll}/b", n=5)
            await c.update_attrs(coll, {"n": "n + 1"}, "n > 1")
            await c.clear_attrs(f"{coll}/a", ["s"])
            got = await (await c.getattr(coll, ["n", "s"])).fetchall()
            assert dict(got) == {"a": (1, None), "b": (6, None)}
            await c.sequence_create("q", coll)
            assert [await c.sequence_next(f"{coll}/q") for _ in range(2)] == [1, 2]
            assert await c.upload(coll, ["n"], ((f"u{i}", i) for i in range(3000))) == 3000
            async with c.transaction():
                await c.add_entry(f"{coll}/t1", n=9)
            with pytest.raises(KeyError):
                async with c.transaction():
                    await c.add_entry(f"{coll}/t2", n=9)
                    raise KeyError("x")
            names = set(await c.find(coll, ""))
            assert "t1" in names and "t2" not in names
            with pytest.raises(ardacat.CommandError) as e:
                await c.cd("/no/such/dir")
            assert e.value.code == 1
            # Breaking out of async for: CAN goes at once; the next command finds the reply over.
            rows = await c.getattr(coll, ["n"])
            async for _ in rows:
                break
            del rows
            assert await c.whoami() == "root"
            async with await c.getattr(coll, ["n"]) as r2:
                await r2.__anext__()
            assert len(await c.ls(coll)) == 3003
            await c.rm(f"{coll}/*")
            await c.sequence_remove(f"{coll}/q")
            await c.rmdir(coll)
        with pytest.raises(ardacat.ConnectError) as ce:
            await aconnect(server, password="nope")
        assert ce.value.code == 4

    run(main())


def test_aio_100_concurrent_tasks(databases: Databases, tmp_path: Path) -> None:
    # Its own server with a larger database pool: 100 streams at once on a loaded machine must
    # not hit the pool's acquire timeout (code 19), which is the server's limit, not the client's.
    cfg = tmp_path / "server.toml"
    cfg.write_text("db_pool_size = 32\n")
    server = Server(databases.fresh(), ["--config", str(cfg)])
    try:
        _many(server)
    finally:
        server.stop()


def _many(server: Server) -> None:
    # Logins are let in 20 at a time (each costs the server a password hash); the work after
    # it runs in all 100 tasks at once.
    gate = asyncio.Semaphore(20)

    async def worker(i: int, coll: str) -> int:
        async with gate:
            c = await aconnect(server)
        try:
            await c.add_entry(f"{coll}/w{i}", n=i)
            total = 0
            async for _name, (n,) in await c.getattr(coll, ["n"]):
                total += 1 if n is not None else 0
            assert await c.pwd() == "/"
            return total
        finally:
            await c.close()

    async def shared_worker(c: ardacat.aio.Connection, i: int, coll: str) -> None:
        await c.set_attrs(f"{coll}/w{i}", n=i * 2)
        got = await (await c.getattr(f"{coll}/w{i}", ["n"])).fetchall()
        assert got == [(f"w{i}", (i * 2,))]
        assert await c.whoami() == "root"

    async def main() -> None:
        coll = f"/aio_many_{next(_n)}"
        async with await aconnect(server) as admin:
            await admin.mkdir(coll)
            await admin.addattr(coll, "n", "int")
            seen = await asyncio.gather(*(worker(i, coll) for i in range(100)))
            assert all(1 <= s <= 100 for s in seen)
            assert len(await admin.ls(coll)) == 100
            # 100 tasks sharing one connection: commands are serialised, none out of step.
            await asyncio.gather(*(shared_worker(admin, i, coll) for i in range(100)))
            values = dict(await (await admin.getattr(coll, ["n"])).fetchall())
            assert values == {f"w{i}": (i * 2,) for i in range(100)}

    run(main())


def test_aio_session_resume(server: Server) -> None:
    async def main() -> None:
        c = await aconnect(server, session=True)
        await c.cd("/")
        sid = c.session_id
        assert sid is not None
        await c.mkdir(f"/aio_sess_{sid}")
        await c.cd(f"/aio_sess_{sid}")
        await c.resume()
        assert await c.pwd() == f"/aio_sess_{sid}"
        await c.close()

    run(main())
