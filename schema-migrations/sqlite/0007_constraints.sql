-- Constraints on the entries of a collection (`constraint_add_*`): one row per constraint, and one
-- row per attribute it uses (so `removeattr` can refuse to remove a used attribute). `kind` is
-- not_null, unique, reference or check. A reference points at `ref_collection_id`'s attribute
-- `ref_attribute_id`, or at its entry names (FILE) when that is NULL. A check keeps the condition as
-- the user wrote it (`condition`, for constraint_list) and as compiled for this database
-- (`check_sql`, for entry tables created later). On SQLite the constraint itself is made of
-- triggers e<collection_id>_k<id>_* (and an index e<collection_id>_k<id>), created with the entry
-- table if the collection has none yet.
CREATE TABLE entry_constraints (
    id                INTEGER PRIMARY KEY,
    collection_id     INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    name_key          TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('not_null', 'unique', 'reference', 'check')),
    attribute_id      INTEGER REFERENCES attributes(id),
    ref_collection_id INTEGER REFERENCES collections(id),
    ref_attribute_id  INTEGER REFERENCES attributes(id),
    condition         TEXT,
    check_sql         TEXT,
    UNIQUE (collection_id, name_key)
) STRICT;
CREATE INDEX entry_constraints_ref ON entry_constraints(ref_collection_id);

CREATE TABLE entry_constraint_columns (
    constraint_id INTEGER NOT NULL REFERENCES entry_constraints(id) ON DELETE CASCADE,
    attribute_id  INTEGER NOT NULL REFERENCES attributes(id),
    PRIMARY KEY (constraint_id, attribute_id)
) STRICT;
CREATE INDEX entry_constraint_columns_attribute ON entry_constraint_columns(attribute_id);
