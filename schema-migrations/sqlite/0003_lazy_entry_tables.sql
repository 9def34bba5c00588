-- Entry tables are created with a collection's first entry, not with the collection: a tree of
-- 100k empty or attribute-only collections then costs rows, not 100k tables (SQLite re-reads its
-- whole schema after every CREATE TABLE). Collections that exist already have their table.
ALTER TABLE collections ADD COLUMN has_table INTEGER NOT NULL DEFAULT 1;
