-- setup: create the extension and wait for the worker's ZooKeeper session
CREATE EXTENSION zklock;
DO $$
BEGIN
	FOR i IN 1..200 LOOP
		EXIT WHEN (SELECT state FROM zk_status()) = 'connected';
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;
SELECT state, session_id IS NOT NULL AS has_session, negotiated_timeout > 0 AS negotiated,
       slots_total >= 16 AS has_slots
FROM zk_status();
