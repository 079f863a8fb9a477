-- The session store: conversations keyed by external id, their leases, pending tool approvals, and the tool
-- ledger. JSON is stored as text; times are milliseconds since the Unix epoch by the server's clock. External
-- ids compare by their bytes (collation "C"), as in SQLite and Rust.

CREATE TABLE conversations (
    external_id TEXT COLLATE "C" PRIMARY KEY,
    provider TEXT NOT NULL,
    session_id TEXT,
    status TEXT NOT NULL,
    transcript TEXT,
    metadata TEXT NOT NULL,
    last_error TEXT,
    requests BIGINT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);

CREATE INDEX conversations_by_age ON conversations (created_at_ms, external_id);

-- One row per metadata entry of a conversation, the value as canonical JSON text: what `list` filters on.
CREATE TABLE conversation_metadata (
    external_id TEXT COLLATE "C" NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (external_id, key)
);

CREATE INDEX conversation_metadata_by_value ON conversation_metadata (key, value);

-- A conversation's lease. `token` is the last fencing token handed out; the row stays when the lease is given
-- up (`holder` NULL) so that the next token is larger still.
CREATE TABLE conversation_leases (
    external_id TEXT COLLATE "C" PRIMARY KEY,
    holder TEXT,
    token BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);

-- Deferred tool approvals; `id` orders them oldest first.
CREATE TABLE conversation_approvals (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    external_id TEXT COLLATE "C" NOT NULL,
    tool_use_id TEXT NOT NULL,
    request TEXT NOT NULL,
    decision TEXT,
    created_at_ms BIGINT NOT NULL,
    UNIQUE (external_id, tool_use_id)
);

-- Each tool call's answer, recorded before it is posted.
CREATE TABLE tool_ledger (
    session_id TEXT NOT NULL,
    tool_use_id TEXT NOT NULL,
    entry TEXT NOT NULL,
    recorded_at_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, tool_use_id)
);
