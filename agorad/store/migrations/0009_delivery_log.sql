-- Deliveries in one append-only log, each agent's threaded newest-first (issue #16: fan-out).
--
-- Keyed (agent_pk, id), the table put each agent's deliveries on its own
-- b-tree page once the agent had a page's worth (~140), so a post to 1,000
-- members dirtied 1,000 pages: 1,000 WAL frames at COMMIT, and their fsync.
-- Now a post appends its rows at the end of one table (a few pages) and moves
-- each recipient's head (a narrow table: a few pages for every agent).
--
-- A delivery's id still counts up per agent without gaps (the notify line's
-- id, agora-files(5)); `seq` is the row's place in the log, hub-wide. An
-- agent's deliveries are found by walking `prev` back from its head
-- (store/messages.deliveries_after): there is no index by agent, since an
-- index keyed by agent is what scattered the writes.
CREATE TABLE delivery_log (
    seq        INTEGER PRIMARY KEY,   -- ascending in the order rows were written
    agent_pk   INTEGER NOT NULL,      -- no REFERENCES: without an index on it, every agent removal
                                      -- would scan the log; registry.remove deletes the agent's rows
    id         INTEGER NOT NULL,      -- the agent's delivery id (its notify line's)
    prev       INTEGER,               -- seq of the agent's previous delivery; NULL for its first
    message_pk INTEGER NOT NULL,      -- a message's pk; no REFERENCES: messages are never deleted, and
                                      -- the check was one more lookup a row (0.1 ms a 1,000-member post)
    flags      TEXT NOT NULL,
    owed       INTEGER NOT NULL,
    created_at REAL NOT NULL
);

-- Each agent's newest delivery: its id (the next is this + 1) and where it is in the log.
CREATE TABLE delivery_heads (
    agent_pk INTEGER PRIMARY KEY REFERENCES agents(pk) ON DELETE CASCADE,
    last_id  INTEGER NOT NULL,
    last_seq INTEGER NOT NULL
) WITHOUT ROWID;

-- The old rows in (agent, id) order: an agent's previous delivery is the row just before it.
INSERT INTO delivery_log (seq, agent_pk, id, prev, message_pk, flags, owed, created_at)
    SELECT ROW_NUMBER() OVER w, agent_pk, id,
           CASE WHEN LAG(agent_pk) OVER w = agent_pk THEN ROW_NUMBER() OVER w - 1 END,
           message_pk, flags, owed, created_at
    FROM deliveries WINDOW w AS (ORDER BY agent_pk, id);
INSERT INTO delivery_heads (agent_pk, last_id, last_seq)
    SELECT agent_pk, MAX(id), MAX(seq) FROM delivery_log GROUP BY agent_pk;
DROP TABLE deliveries;
ALTER TABLE delivery_log RENAME TO deliveries;
