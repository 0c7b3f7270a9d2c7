-- Channels, membership with ack cursors, messages, per-agent deliveries, and the owed ledger.
-- History outlives agents: messages keep the sender's id as text, and DM
-- channels keep their name, so removing an agent never rewrites the past.
CREATE TABLE channels (
    pk         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    kind       TEXT NOT NULL CHECK (kind IN ('commons', 'named', 'dm')),
    dm_low     INTEGER,          -- for a DM: the two agents' pks, low < high
    dm_high    INTEGER,
    head       INTEGER NOT NULL DEFAULT 0,   -- the newest seq; seqs are gapless from 1
    created_at REAL NOT NULL,
    created_by TEXT
);
CREATE UNIQUE INDEX channels_dm_pair ON channels(dm_low, dm_high) WHERE kind = 'dm';
INSERT INTO channels (name, kind, created_at) VALUES ('commons', 'commons', CAST(strftime('%s', 'now') AS REAL));

CREATE TABLE members (
    agent_pk   INTEGER NOT NULL REFERENCES agents(pk) ON DELETE CASCADE,
    channel_pk INTEGER NOT NULL REFERENCES channels(pk) ON DELETE CASCADE,
    acked      INTEGER NOT NULL DEFAULT 0,   -- every seq <= acked is handled
    joined_at  REAL NOT NULL,
    PRIMARY KEY (agent_pk, channel_pk)
) WITHOUT ROWID;
CREATE INDEX members_by_channel ON members(channel_pk, agent_pk);
INSERT INTO members (agent_pk, channel_pk, acked, joined_at)
    SELECT pk, (SELECT pk FROM channels WHERE name = 'commons'), 0, created_at FROM agents;

-- Acks of single messages above the cursor; the cursor swallows them when it reaches them.
CREATE TABLE acks_above (
    agent_pk   INTEGER NOT NULL REFERENCES agents(pk) ON DELETE CASCADE,
    channel_pk INTEGER NOT NULL REFERENCES channels(pk) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (agent_pk, channel_pk, seq)
) WITHOUT ROWID;

CREATE TABLE messages (
    pk         INTEGER PRIMARY KEY,
    channel_pk INTEGER NOT NULL REFERENCES channels(pk),
    seq        INTEGER NOT NULL,
    sender_pk  INTEGER,
    sender     TEXT NOT NULL,
    title      TEXT NOT NULL,
    body       TEXT NOT NULL,
    ask        INTEGER NOT NULL DEFAULT 0,
    reply_to   INTEGER REFERENCES messages(pk),
    urgency    TEXT NOT NULL DEFAULT 'normal' CHECK (urgency IN ('normal', 'next_turn')),
    created_at REAL NOT NULL,
    UNIQUE (channel_pk, seq)
);
CREATE INDEX messages_by_sender ON messages(channel_pk, sender_pk, seq);

CREATE TABLE addressees (
    message_pk INTEGER NOT NULL REFERENCES messages(pk),
    agent_pk   INTEGER NOT NULL REFERENCES agents(pk) ON DELETE CASCADE,
    PRIMARY KEY (message_pk, agent_pk)
) WITHOUT ROWID;

-- One row per (agent, notify event). `id` counts up per agent: it is the notify line's id.
CREATE TABLE deliveries (
    agent_pk   INTEGER NOT NULL REFERENCES agents(pk) ON DELETE CASCADE,
    id         INTEGER NOT NULL,
    message_pk INTEGER NOT NULL REFERENCES messages(pk),
    flags      TEXT NOT NULL,
    owed       INTEGER NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (agent_pk, id)
) WITHOUT ROWID;
ALTER TABLE agents ADD COLUMN last_delivery INTEGER NOT NULL DEFAULT 0;
-- Deliveries known to be in the notify file; used when the file itself is gone.
ALTER TABLE agents ADD COLUMN notified_upto INTEGER NOT NULL DEFAULT 0;

CREATE TABLE debts (
    message_pk    INTEGER NOT NULL REFERENCES messages(pk),
    debtor_pk     INTEGER NOT NULL REFERENCES agents(pk) ON DELETE CASCADE,
    asker_pk      INTEGER NOT NULL,   -- the ask's sender, so "owed to me" is an index lookup
    created_at    REAL NOT NULL,
    level         INTEGER NOT NULL DEFAULT 0,   -- escalations so far
    due_at        REAL,                          -- next escalation; NULL when the schedule is done
    discharged_at REAL,
    discharged_by INTEGER REFERENCES messages(pk),
    PRIMARY KEY (message_pk, debtor_pk)
);
CREATE INDEX debts_open_by_debtor ON debts(debtor_pk) WHERE discharged_at IS NULL;
CREATE INDEX debts_open_due ON debts(due_at) WHERE discharged_at IS NULL AND due_at IS NOT NULL;
CREATE INDEX debts_open_by_asker ON debts(asker_pk) WHERE discharged_at IS NULL;
