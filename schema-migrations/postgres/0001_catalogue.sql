-- System tables of the catalogue (PostgreSQL dialect). Entry tables e<collection id> are created at run time.
CREATE TABLE collections (
    id        BIGSERIAL PRIMARY KEY,
    parent_id BIGINT REFERENCES collections(id),
    path      TEXT COLLATE "C" NOT NULL UNIQUE,
    name      TEXT COLLATE "C" NOT NULL,
    owner     TEXT NOT NULL,
    grp       TEXT NOT NULL,
    perms     BIGINT NOT NULL,
    created   TIMESTAMP NOT NULL
);
CREATE INDEX collections_parent ON collections(parent_id, name);

CREATE TABLE attributes (
    id            BIGSERIAL PRIMARY KEY,
    collection_id BIGINT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    name_key      TEXT NOT NULL,
    type          TEXT NOT NULL,
    indexed       BOOLEAN NOT NULL DEFAULT FALSE,
    UNIQUE (collection_id, name_key)
);

CREATE TABLE users (
    name          TEXT PRIMARY KEY,
    password_hash TEXT,
    created       TIMESTAMP NOT NULL
);

CREATE TABLE user_subjects (
    user_name TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,
    subject   TEXT NOT NULL UNIQUE
);

CREATE TABLE user_groups (
    name  TEXT PRIMARY KEY,
    owner TEXT NOT NULL
);

CREATE TABLE group_members (
    grp       TEXT NOT NULL REFERENCES user_groups(name) ON DELETE CASCADE,
    user_name TEXT NOT NULL,
    PRIMARY KEY (grp, user_name)
);

CREATE TABLE acls (
    collection_id BIGINT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    principal     TEXT NOT NULL,
    is_group      BOOLEAN NOT NULL,
    rights        BIGINT NOT NULL,
    PRIMARY KEY (collection_id, principal, is_group)
);

CREATE TABLE sequences (
    collection_id BIGINT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    increment     BIGINT NOT NULL,
    next_value    BIGINT NOT NULL,
    PRIMARY KEY (collection_id, name)
);

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

INSERT INTO collections (id, parent_id, path, name, owner, grp, perms, created)
VALUES (1, NULL, '/', '', 'root', 'root', 493, '1970-01-01 00:00:00');
SELECT setval('collections_id_seq', 1);

CREATE TABLE e1 (
    id       BIGSERIAL PRIMARY KEY,
    file     TEXT COLLATE "C" NOT NULL UNIQUE,
    owner    TEXT NOT NULL,
    grp      TEXT NOT NULL,
    perms    BIGINT NOT NULL,
    created  TIMESTAMP NOT NULL,
    modified TIMESTAMP NOT NULL
);
