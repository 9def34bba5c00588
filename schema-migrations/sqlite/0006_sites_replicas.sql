-- Sites and replicas (AMGA 2.x `site_*` and `replica_*` commands): a site is a named place that
-- holds copies of files, with an optional server; a replica file is a GUID with the user who
-- registered it; a replica row says that a copy of the GUID's file is at a site. A site with
-- replicas cannot be removed (the catalogue refuses, the foreign key backs it).
CREATE TABLE sites (
    id     INTEGER PRIMARY KEY,
    name   TEXT NOT NULL UNIQUE,
    server TEXT NOT NULL
) STRICT;

CREATE TABLE replica_files (
    guid  TEXT PRIMARY KEY,
    owner TEXT NOT NULL
) STRICT;

CREATE TABLE replicas (
    guid    TEXT NOT NULL REFERENCES replica_files(guid) ON DELETE CASCADE,
    site_id INTEGER NOT NULL REFERENCES sites(id),
    PRIMARY KEY (guid, site_id)
) STRICT;
CREATE INDEX replicas_site ON replicas(site_id);
