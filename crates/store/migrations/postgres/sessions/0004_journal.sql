-- The journal: what happened in each conversation (messages, turns, tool calls and results, approvals, how each
-- request ended), for people to read. `seq` numbers the entries across all conversations; `data` is JSON text.

CREATE TABLE conversation_journal (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    external_id TEXT COLLATE "C" NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    at_ms BIGINT NOT NULL
);

CREATE INDEX conversation_journal_by_conversation ON conversation_journal (external_id, seq);
