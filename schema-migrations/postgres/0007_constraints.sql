-- Constraints on the entries of a collection (`constraint_add_*`): one row per constraint, and one
-- row per attribute it uses (so `removeattr` can refuse to remove a used attribute). `kind` is
-- not_null, unique, reference or check. A reference points at `ref_collection_id`'s attribute
-- `ref_attribute_id`, or at its entry names (FILE) when that is NULL. A check keeps the condition as
-- the user wrote it (`condition`, for constraint_list) and as compiled for this database
-- (`check_sql`, for entry tables created later). On PostgreSQL the constraint itself is the table
-- constraint e<collection_id>_k<id> (CHECK, UNIQUE or FOREIGN KEY), created with the entry table if
-- the collection has none yet.
CREATE TABLE entry_constraints (
    id                BIGSERIAL PRIMARY KEY,
    collection_id     BIGINT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    name_key          TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('not_null', 'unique', 'reference', 'check')),
    attribute_id      BIGINT REFERENCES attributes(id),
    ref_collection_id BIGINT REFERENCES collections(id),
    ref_attribute_id  BIGINT REFERENCES attributes(id),
    condition         TEXT,
    check_sql         TEXT,
    UNIQUE (collection_id, name_key)
);
CREATE INDEX entry_constraints_ref ON entry_constraints(ref_collection_id);

CREATE TABLE entry_constraint_columns (
    constraint_id BIGINT NOT NULL REFERENCES entry_constraints(id) ON DELETE CASCADE,
    attribute_id  BIGINT NOT NULL REFERENCES attributes(id),
    PRIMARY KEY (constraint_id, attribute_id)
);
CREATE INDEX entry_constraint_columns_attribute ON entry_constraint_columns(attribute_id);
