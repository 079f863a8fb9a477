-- The provisioning store: one JSON value per key. Values are canonical JSON text (object keys sorted, no
-- whitespace), so equal JSON is equal text and compare-and-swap compares in SQL. Keys compare by their bytes
-- (collation "C"), as in SQLite and Rust, so a prefix is a range of the primary key.
CREATE TABLE provision_entries (
    key TEXT COLLATE "C" PRIMARY KEY,
    value TEXT NOT NULL
);
