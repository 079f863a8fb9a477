-- The journal: what happened in each conversation (messages, turns, tool calls and results, approvals, how each
-- request ended), for people to read. `seq` numbers the entries across all conversations; `data` is JSON text.

CREATE TABLE conversation_journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    external_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);

CREATE INDEX conversation_journal_by_conversation ON conversation_journal (external_id, seq);
