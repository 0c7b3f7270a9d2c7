-- Claims (issue 14): work rows in a channel, each owned by one agent, that say
-- who is doing what. Referred to as `claim:<pk>`. `version` counts changes to
-- the row's declared fields (title, state, cadence, link): every change is a
-- compare-and-swap on it. Receipts are an append-only log beside the row and
-- do not change the version.
CREATE TABLE claims (
    pk              INTEGER PRIMARY KEY,
    channel_pk      INTEGER NOT NULL REFERENCES channels(pk),
    owner_pk        INTEGER NOT NULL REFERENCES agents(pk) ON DELETE CASCADE,
    title           TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'parked', 'done')),
    cadence_minutes INTEGER CHECK (cadence_minutes > 0),   -- NULL: no cadence, never a reminder
    version         INTEGER NOT NULL DEFAULT 1,
    link_pk         INTEGER REFERENCES claims(pk) ON DELETE SET NULL,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL,
    -- The cadence counts from here: the newest receipt, or when the claim was opened, reopened or
    -- given its cadence, whichever came last.
    quiet_since     REAL NOT NULL,
    last_receipt_at REAL,
    -- When the cadence falls due (quiet_since + cadence + the claim's jitter). NULL: no cadence,
    -- not open, or its one reminder went out. A stored time, so a hub pause can hold it and a
    -- resume shift it by the time paused.
    remind_at       REAL,
    reminder_pk     INTEGER REFERENCES messages(pk)        -- the newest reminder posted for it
);
CREATE INDEX claims_by_channel ON claims(channel_pk, state);
CREATE INDEX claims_by_owner ON claims(owner_pk, channel_pk);
CREATE INDEX claims_remind_due ON claims(remind_at) WHERE remind_at IS NOT NULL;
CREATE INDEX claims_by_reminder ON claims(reminder_pk) WHERE reminder_pk IS NOT NULL;

CREATE TABLE claim_receipts (
    claim_pk   INTEGER NOT NULL REFERENCES claims(pk) ON DELETE CASCADE,
    n          INTEGER NOT NULL,   -- 1, 2, ... per claim
    text       TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (claim_pk, n)
) WITHOUT ROWID;
