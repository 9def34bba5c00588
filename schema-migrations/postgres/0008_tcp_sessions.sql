-- Resumable TCP sessions (AMGA `Sessions = allow|force`) shared by every server process on one
-- database: who the session is, its current directory and escape mode (`escaped`). The id is signed
-- (service/sessions.rs); rows past `expires` (epoch seconds) are refused and may be purged.
CREATE TABLE tcp_sessions (
    id        BIGINT PRIMARY KEY,
    user_name TEXT NOT NULL,
    cwd       TEXT NOT NULL,
    escaped   BOOLEAN NOT NULL,
    expires   BIGINT NOT NULL
);
CREATE INDEX tcp_sessions_expires ON tcp_sessions (expires);
