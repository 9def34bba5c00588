#!/usr/bin/env python3
"""A small job repository on ardacat: register jobs, update their status, query them.

Run it against a server (settings from ./mdclient.config or ~/.mdclient.config, the password
from ARDACAT_PASSWORD):

    ARDACAT_PASSWORD=... python3 examples/jobs.py
"""

import datetime as dt

import ardacat

JOBS = "/jobs"

with ardacat.connect(login="root") as conn:
    # The schema: one collection, one attribute per field (run once).
    if JOBS not in conn.ls("/"):
        conn.mkdir(JOBS)
        conn.addattr(JOBS, "submitter", "varchar(32)")
        conn.addattr(JOBS, "status", "varchar(16)")
        conn.addattr(JOBS, "events", "int")
        conn.addattr(JOBS, "submitted", "timestamp")
        conn.index_create(JOBS, "by_status", ["status"])
        conn.sequence_create("ids", JOBS, increment=10)  # each run takes a block of 10 ids

    # Register a batch of jobs in one round trip (upload), ids from a sequence.
    now = dt.datetime(2025, 1, 1, 12, 0, 0)
    first = conn.sequence_next(f"{JOBS}/ids")
    batch = [(f"job{first + i}", "alice" if i % 2 else "bob", "queued", 0, now + dt.timedelta(minutes=i))
             for i in range(10)]
    print("registered", conn.upload(JOBS, ["submitter", "status", "events", "submitted"], batch), "jobs")

    # Jobs start and finish: status updates, atomically per step.
    with conn.transaction():
        conn.set_attrs(f"{JOBS}/job{first}", status="running")
        conn.set_attrs(f"{JOBS}/job{first + 1}", status="done", events=5000)
    conn.update_attrs(JOBS, {"status": '"done"', "events": "1000"}, 'submitter = "bob" and status = "queued"')

    # Queries: typed values stream back.
    for name, (owner, status, events, submitted) in conn.getattr(JOBS, ["submitter", "status", "events", "submitted"]):
        print(f"{name:8} {owner:6} {status:8} {events:6} {submitted:%H:%M}")
    done = conn.find(JOBS, 'status = "done"')
    print("done:", ", ".join(sorted(done)))
    for owner, events in conn.selectattr([f"{JOBS}:submitter", f"{JOBS}:events"], f'{JOBS}:events > 0 order by {JOBS}:events desc limit 3'):
        print("top:", owner, events)
