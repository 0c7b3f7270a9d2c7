-- A DM follows a rename of either agent: it takes the new `dm:<a>--<b>` name and
-- keeps each old name here, so refs written before (`dm:a1--b1#3`) still find it.
CREATE TABLE channel_aliases (
    old_name   TEXT PRIMARY KEY,
    channel_pk INTEGER NOT NULL REFERENCES channels(pk) ON DELETE CASCADE,
    renamed_at REAL NOT NULL
);

-- DMs whose agents were renamed before this migration still carry an old id.
-- Those whose two agents both exist take their canonical name, unless another
-- channel holds it (then the DM keeps the name it has).
INSERT INTO channel_aliases (old_name, channel_pk, renamed_at)
    SELECT name, pk, CAST(strftime('%s', 'now') AS REAL) FROM (
        SELECT c.name, c.pk, 'dm:' || MIN(lo.id, hi.id) || '--' || MAX(lo.id, hi.id) AS canonical
        FROM channels c JOIN agents lo ON lo.pk = c.dm_low JOIN agents hi ON hi.pk = c.dm_high
        WHERE c.kind = 'dm')
    WHERE name != canonical AND NOT EXISTS (SELECT 1 FROM channels o WHERE o.name = canonical);
UPDATE channels SET name = (
        SELECT 'dm:' || MIN(lo.id, hi.id) || '--' || MAX(lo.id, hi.id)
        FROM agents lo, agents hi WHERE lo.pk = channels.dm_low AND hi.pk = channels.dm_high)
    WHERE pk IN (SELECT channel_pk FROM channel_aliases);
