-- The session store: conversations keyed by external id, their leases, pending tool approvals, and the tool
-- ledger. JSON is stored as text; times are milliseconds since the Unix epoch.

CREATE TABLE conversations (
    external_id TEXT PRIMARY KEY NOT NULL,
    provider TEXT NOT NULL,
    session_id TEXT,
    status TEXT NOT NULL,
    transcript TEXT,
    metadata TEXT NOT NULL,
    last_error TEXT,
    requests INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX conversations_by_age ON conversations (created_at_ms, external_id);

-- One row per metadata entry of a conversation, the value as canonical JSON text: what `list` filters on.
CREATE TABLE conversation_metadata (
    external_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (external_id, key)
) WITHOUT ROWID;

CREATE INDEX conversation_metadata_by_value ON conversation_metadata (key, value);

-- A conversation's lease. `token` is the last fencing token handed out; the row stays when the lease is given
-- up (`holder` NULL) so that the next token is larger still.
CREATE TABLE conversation_leases (
    external_id TEXT PRIMARY KEY NOT NULL,
    holder TEXT,
    token INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

-- Deferred tool approvals; `id` orders them oldest first.
CREATE TABLE conversation_approvals (
    id INTEGER PRIMARY KEY,
    external_id TEXT NOT NULL,
    tool_use_id TEXT NOT NULL,
    request TEXT NOT NULL,
    decision TEXT,
    created_at_ms INTEGER NOT NULL,
    UNIQUE (external_id, tool_use_id)
);

-- Each tool call's answer, recorded before it is posted.
CREATE TABLE tool_ledger (
    session_id TEXT NOT NULL,
    tool_use_id TEXT NOT NULL,
    entry TEXT NOT NULL,
    recorded_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, tool_use_id)
) WITHOUT ROWID;
