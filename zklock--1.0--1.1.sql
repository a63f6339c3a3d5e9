/* zklock--1.0--1.1.sql: what zklock 1.1 adds to 1.0 */

\echo Use "ALTER EXTENSION zklock UPDATE TO '1.1'" to load this file. \quit

-- Semaphores: at most "permits" holders at once, in the layout of Curator's
-- InterProcessSemaphoreV2 (a mutex in locks/, a lease per holder in
-- leases/), so that Curator programs and SQL sessions share one semaphore.
CREATE FUNCTION zk_semaphore_acquire(name text, permits integer, timeout interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_semaphore_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_semaphore_acquire_xact(name text, permits integer, timeout interval DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'zk_semaphore_acquire_xact'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_semaphore_try(name text, permits integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_semaphore_try'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_semaphore_try_xact(name text, permits integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_semaphore_try_xact'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION zk_semaphore_release(name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_semaphore_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- role: "lease" (in leases/: a holder, or the request being counted) or
-- "mutex" (queued in the semaphore's own mutex, locks/).
CREATE FUNCTION zk_semaphore_contenders(name text,
	OUT "position" integer,
	OUT role text,
	OUT state text,
	OUT znode text,
	OUT czxid bigint,
	OUT client text,
	OUT holder jsonb,
	OUT data text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zk_semaphore_contenders'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- Fencing: the highest token accepted so far for each resource of this
-- database.  Dumped and restored with the database.
CREATE TABLE zk_fence_tokens (
	resource text PRIMARY KEY,
	token bigint NOT NULL,
	accepted_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
SELECT pg_catalog.pg_extension_config_dump('zk_fence_tokens', '');

-- Run as the extension's owner, so that a role granted zk_fence needs no
-- right on zk_fence_tokens; the C code names the table with its schema.
CREATE FUNCTION zk_fence(resource text, token bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'zk_fence'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION zk_fence_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'zk_fence_trigger'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

-- Whether the contender whose czxid is token holds the lock now, by
-- ZooKeeper's word (any client's contender: zklock, Curator, kazoo).
CREATE FUNCTION zk_lock_verify(name text, token bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'zk_lock_verify'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

-- Ask the holders of a lock to give it up (Curator's revocation protocol).
CREATE FUNCTION zk_lock_revoke(name text)
RETURNS integer
AS 'MODULE_PATHNAME', 'zk_lock_revoke'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

REVOKE ALL ON FUNCTION zk_semaphore_acquire(text, integer, interval),
	zk_semaphore_acquire_xact(text, integer, interval), zk_semaphore_try(text, integer),
	zk_semaphore_try_xact(text, integer), zk_semaphore_release(text),
	zk_semaphore_contenders(text), zk_fence(text, bigint), zk_fence_trigger(),
	zk_lock_verify(text, bigint), zk_lock_revoke(text) FROM PUBLIC;
REVOKE ALL ON zk_fence_tokens FROM PUBLIC;
