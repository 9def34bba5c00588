-- Per-entry ACL rows: extra rights on one entry (row `entry_id` of table e<collection_id>) for a
-- user or a group. Rows are removed with their entry (in the same transaction), their
-- collection, or the user or group they name.
CREATE TABLE entry_acls (
    collection_id BIGINT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    entry_id      BIGINT NOT NULL,
    principal     TEXT NOT NULL,
    is_group      BOOLEAN NOT NULL,
    rights        BIGINT NOT NULL,
    PRIMARY KEY (collection_id, entry_id, principal, is_group)
);
CREATE INDEX entry_acls_principal ON entry_acls(principal);
