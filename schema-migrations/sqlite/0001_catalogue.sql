-- System tables of the catalogue (SQLite dialect). Entry tables e<collection id> are created at run time.
CREATE TABLE collections (
    id        INTEGER PRIMARY KEY,
    parent_id INTEGER REFERENCES collections(id),
    path      TEXT NOT NULL UNIQUE,
    name      TEXT NOT NULL,
    owner     TEXT NOT NULL,
    grp       TEXT NOT NULL,
    perms     INTEGER NOT NULL,
    created   TEXT NOT NULL
) STRICT;
CREATE INDEX collections_parent ON collections(parent_id, name);

CREATE TABLE attributes (
    id            INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    name_key      TEXT NOT NULL,
    type          TEXT NOT NULL,
    indexed       INTEGER NOT NULL DEFAULT 0,
    UNIQUE (collection_id, name_key)
) STRICT;

CREATE TABLE users (
    name          TEXT PRIMARY KEY,
    password_hash TEXT,
    created       TEXT NOT NULL
) STRICT;

CREATE TABLE user_subjects (
    user_name TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,
    subject   TEXT NOT NULL UNIQUE
) STRICT;

CREATE TABLE user_groups (
    name  TEXT PRIMARY KEY,
    owner TEXT NOT NULL
) STRICT;

CREATE TABLE group_members (
    grp       TEXT NOT NULL REFERENCES user_groups(name) ON DELETE CASCADE,
    user_name TEXT NOT NULL,
    PRIMARY KEY (grp, user_name)
) STRICT;

CREATE TABLE acls (
    collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    principal     TEXT NOT NULL,
    is_group      INTEGER NOT NULL,
    rights        INTEGER NOT NULL,
    PRIMARY KEY (collection_id, principal, is_group)
) STRICT;

CREATE TABLE sequences (
    collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    increment     INTEGER NOT NULL,
    next_value    INTEGER NOT NULL,
    PRIMARY KEY (collection_id, name)
) STRICT;

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

INSERT INTO collections (id, parent_id, path, name, owner, grp, perms, created)
VALUES (1, NULL, '/', '', 'root', 'root', 493, '1970-01-01 00:00:00.000000');

CREATE TABLE e1 (
    id       INTEGER PRIMARY KEY,
    file     TEXT NOT NULL UNIQUE,
    owner    TEXT NOT NULL,
    grp      TEXT NOT NULL,
    perms    INTEGER NOT NULL,
    created  TEXT NOT NULL,
    modified TEXT NOT NULL
) STRICT;
