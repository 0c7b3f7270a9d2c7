-- Every agent has a delivery head from its creation (`last_id` 0, `last_seq` 0 until its first
-- delivery), so a DM's delivery moves its head with a plain UPDATE, not an upsert (store/messages.py;
-- issue #10's send cost). A first delivery's `prev` is therefore 0, or NULL for rows from 0009's
-- upgrade: no row has seq 0, so either ends the walk back (store/messages.deliveries_after).
INSERT INTO delivery_heads (agent_pk, last_id, last_seq)
    SELECT pk, 0, 0 FROM agents WHERE pk NOT IN (SELECT agent_pk FROM delivery_heads);
CREATE TRIGGER agents_have_a_head AFTER INSERT ON agents BEGIN
    INSERT INTO delivery_heads (agent_pk, last_id, last_seq) VALUES (new.pk, 0, 0);
END;
