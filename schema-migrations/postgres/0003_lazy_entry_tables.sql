-- Entry tables are created with a collection's first entry, not with the collection: a tree of
-- 100k empty or attribute-only collections then costs rows, not 100k tables (each PostgreSQL table
-- is several catalogue rows and files). Collections that exist already have their table.
ALTER TABLE collections ADD COLUMN has_table BOOLEAN NOT NULL DEFAULT TRUE;
