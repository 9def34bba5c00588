-- Composite indexes over several columns of an entry table (`index_create`): one row per index,
-- one row per column in index order. A column is an attribute (`attribute_id`) or, when
-- `attribute_id` is NULL, the entry name (FILE). The SQL index itself is e<collection_id>_x<id>,
-- created with the entry table if the collection has none yet.
CREATE TABLE entry_indexes (
    id            BIGSERIAL PRIMARY KEY,
    collection_id BIGINT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    name_key      TEXT NOT NULL,
    UNIQUE (collection_id, name_key)
);

CREATE TABLE entry_index_columns (
    index_id     BIGINT NOT NULL REFERENCES entry_indexes(id) ON DELETE CASCADE,
    position     BIGINT NOT NULL,
    attribute_id BIGINT REFERENCES attributes(id),
    PRIMARY KEY (index_id, position)
);
CREATE INDEX entry_index_columns_attribute ON entry_index_columns(attribute_id);
