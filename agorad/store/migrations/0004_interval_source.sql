-- An agent's expected heartbeat interval may now come from the operator
-- (agents.add, agents.update), from the agent itself (`interval` in hub.hello
-- or agents.heartbeat), or from the hub's default (domain/intervals.py has
-- the precedence). interval_s stays the effective interval, so the dormant
-- rule still reads one column.
ALTER TABLE agents ADD COLUMN interval_source TEXT NOT NULL DEFAULT 'operator'
    CHECK (interval_source IN ('operator', 'agent', 'default'));

-- The agent's most recent declaration, kept while an operator's setting wins,
-- so that unsetting the operator's setting falls back to it.
ALTER TABLE agents ADD COLUMN declared_interval_s REAL CHECK (declared_interval_s >= 1);

-- Until now `agora agent add` sent 30m whenever --interval was not given, so
-- an interval of exactly 1800 s is taken as the default, not as an operator's
-- choice (an operator who meant it pins it with `agora agent set ID --interval 30m`).
UPDATE agents SET interval_source = 'default' WHERE interval_s = 1800;
