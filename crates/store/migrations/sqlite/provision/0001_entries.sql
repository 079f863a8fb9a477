-- The provisioning store: one JSON value per key. Values are canonical JSON text (object keys sorted, no
-- whitespace), so equal JSON is equal text and compare-and-swap compares in SQL.
CREATE TABLE provision_entries (
    key TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
) WITHOUT ROWID;
