-- Charters (the rules a seat works under) and phases (where a track of work stands in a channel).
-- Neither is a delivery: setting one writes no notify line and rings nobody; a seat meets both at
-- its next inbox check (domain/inbox.py). This migration reads no table of 0006 or 0007.

-- Every version of every charter, kept. `scope` is 0 for the hub's charter, else the pk of the
-- channel it governs (channels are never deleted; 0 names none, so no foreign key). A rowid table:
-- a body may be up to the hub's body limit, too large for a WITHOUT ROWID row.
CREATE TABLE charter_versions (
    pk       INTEGER PRIMARY KEY,
    scope    INTEGER NOT NULL,
    version  INTEGER NOT NULL CHECK (version >= 1),
    body     TEXT NOT NULL,
    set_by   TEXT NOT NULL,
    set_at   REAL NOT NULL,
    UNIQUE (scope, version)
);

-- The current version of each charter: one small row per scope that has one. An inbox check
-- reads this table, never the versions.
CREATE TABLE charters (
    scope   INTEGER PRIMARY KEY,
    version INTEGER NOT NULL
);

-- The newest version of each charter each seat has read (a charters.get of the current version).
CREATE TABLE charter_receipts (
    agent_pk INTEGER NOT NULL REFERENCES agents(pk) ON DELETE CASCADE,
    scope    INTEGER NOT NULL,
    version  INTEGER NOT NULL,
    read_at  REAL NOT NULL,
    PRIMARY KEY (agent_pk, scope)
) WITHOUT ROWID;

-- `phase:<track>` rows: one per (channel, track), its stage and a version for compare-and-swap.
CREATE TABLE phases (
    channel_pk INTEGER NOT NULL REFERENCES channels(pk) ON DELETE CASCADE,
    track      TEXT NOT NULL,
    stage      TEXT NOT NULL CHECK (stage IN ('propose', 'open', 'work', 'gate', 'complete')),
    version    INTEGER NOT NULL CHECK (version >= 1),
    set_by     TEXT NOT NULL,
    set_at     REAL NOT NULL,
    PRIMARY KEY (channel_pk, track)
) WITHOUT ROWID;
-- The open phases (every stage but complete), which an inbox check lists: completed tracks pile
-- up over time, the open ones stay few.
CREATE INDEX phases_open ON phases(channel_pk, track) WHERE stage != 'complete';
