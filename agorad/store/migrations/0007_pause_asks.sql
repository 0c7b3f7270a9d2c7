-- Pause and resume (agora pause): one row per pause; the open one (resumed_at NULL) is the hub's
-- paused state, so it survives a restart. At most one is open.
CREATE TABLE pauses (
    pk             INTEGER PRIMARY KEY,
    paused_at      REAL NOT NULL,
    reason         TEXT NOT NULL DEFAULT '',
    operator_seats TEXT NOT NULL DEFAULT '[]',  -- JSON list of agent pks whose DMs stay open while paused
    resumed_at     REAL
);
CREATE UNIQUE INDEX pauses_one_open ON pauses((resumed_at IS NULL)) WHERE resumed_at IS NULL;

-- An ask's discharge rule, stored with each of its debts so that a later change of rules never
-- reopens what an old one settled: 'any' (the first reply from any addressee discharges them
-- all, every ask before this migration) or 'each' (every addressee owes its own reply).
ALTER TABLE debts ADD COLUMN rule TEXT NOT NULL DEFAULT 'any' CHECK (rule IN ('any', 'each'));

-- A debt discharged by a decline (`agora send --reply-to REF --decline`): settled on the record
-- without an answer; discharged_by is the declining message.
ALTER TABLE debts ADD COLUMN declined INTEGER NOT NULL DEFAULT 0;
CREATE INDEX debts_declined_by_asker ON debts(asker_pk, discharged_at) WHERE declined = 1;

-- Seconds of hub pause within the debt's life: its escalation clock stood still for them, so the
-- schedule runs from created_at + frozen_s.
ALTER TABLE debts ADD COLUMN frozen_s REAL NOT NULL DEFAULT 0;
