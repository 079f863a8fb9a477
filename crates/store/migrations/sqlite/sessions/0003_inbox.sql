-- The durable inbox: each message committed before it is run, with the state that says how far it got (pending,
-- taken, posted, answered, failed), how many requests took it up, and its result (JSON text) or error. `id`
-- orders the messages of a conversation.

CREATE TABLE inbox_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    external_id TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    result TEXT,
    error TEXT,
    enqueued_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);

-- The messages not yet final in commit order: what a claim walks (first come, first served).
CREATE INDEX inbox_messages_open ON inbox_messages (id) WHERE state IN ('pending', 'taken', 'posted');
CREATE INDEX inbox_messages_by_conversation ON inbox_messages (external_id, id);

-- The conversations a claim recovers or resumes (`running`, `awaiting_approval`).
CREATE INDEX conversations_by_status ON conversations (status);

-- A conversation woken from outside (a webhook: its session has work for the client) is claimed even with no
-- message waiting; the claim clears the flag.
ALTER TABLE conversation_leases ADD COLUMN wake INTEGER NOT NULL DEFAULT 0;
CREATE INDEX conversation_leases_woken ON conversation_leases (external_id) WHERE wake = 1;

-- Which conversation a session is (a webhook names the session).
CREATE INDEX conversations_by_session ON conversations (session_id);

-- Delivery ids seen (webhook ids), so that a retried or replayed delivery is recognised.
CREATE TABLE inbox_deliveries (
    delivery_id TEXT PRIMARY KEY,
    received_at_ms INTEGER NOT NULL
);
