-- Each delivery moves its agent's head inside its own INSERT (issue #10's send cost): the store's second
-- statement per insert was ~2% of a DM send's instructions, and the schema now holds the rule itself.
-- Every agent has a head row from its creation, so the move is a plain UPDATE (an upsert in a trigger
-- made SQLite journal the statement).
INSERT INTO delivery_heads (agent_pk, last_id, last_seq)
    SELECT pk, 0, 0 FROM agents WHERE pk NOT IN (SELECT agent_pk FROM delivery_heads);
CREATE TRIGGER agents_have_a_head AFTER INSERT ON agents BEGIN
    INSERT INTO delivery_heads (agent_pk, last_id, last_seq) VALUES (new.pk, 0, 0);  -- 0: no delivery yet
END;
CREATE TRIGGER deliveries_move_head AFTER INSERT ON deliveries BEGIN
    UPDATE delivery_heads SET last_id = new.id, last_seq = new.seq WHERE agent_pk = new.agent_pk;
END;
-- A first delivery's `prev` is therefore 0 (the head's last_seq before it), or NULL for rows from 0009's
-- upgrade: no row has seq 0, so either ends the walk back (store/messages.deliveries_after).
