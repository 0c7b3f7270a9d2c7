-- Agents, their rename aliases, and the key/value knowledge base.
-- Agents have an integer pk so that a rename changes one column and every
-- row that points at the agent follows it.
CREATE TABLE agents (
    pk            INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: history and DMs point at pks
    id            TEXT NOT NULL UNIQUE,
    key_hash      TEXT NOT NULL,
    liveness_mode TEXT NOT NULL CHECK (liveness_mode IN ('ephemeral', 'async', 'always-on')),
    interval_s    REAL NOT NULL CHECK (interval_s >= 1),
    status        TEXT NOT NULL DEFAULT 'idle'
                  CHECK (status IN ('idle', 'busy', 'error', 'working', 'dormant')),
    task          TEXT,
    meta          TEXT NOT NULL DEFAULT '{}',
    created_at    REAL NOT NULL,
    last_seen     REAL,
    expired_at    REAL
);

CREATE TABLE aliases (
    old_id     TEXT PRIMARY KEY,
    agent_pk   INTEGER NOT NULL REFERENCES agents(pk) ON DELETE CASCADE,
    reason     TEXT NOT NULL,
    renamed_at REAL NOT NULL
);
CREATE INDEX aliases_by_agent ON aliases(agent_pk);

CREATE TABLE kb (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    author     TEXT NOT NULL,
    updated_at REAL NOT NULL
);
