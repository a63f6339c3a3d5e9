-- security: no access for PUBLIC; credentials hidden from non-superusers
CREATE ROLE zkl_regress_user;
SET ROLE zkl_regress_user;
SELECT zk_lock_try('sec');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM zk_locks;
\echo :LAST_ERROR_SQLSTATE
SELECT zk_status();
\echo :LAST_ERROR_SQLSTATE
SHOW zklock.auth;
\echo :LAST_ERROR_SQLSTATE
SELECT current_setting('zklock.auth');
\echo :LAST_ERROR_SQLSTATE
SET zklock.auth = 'u:p';
\echo :LAST_ERROR_SQLSTATE
SET zklock.max_locks_per_backend = 1000;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS visible_auth FROM pg_settings WHERE name = 'zklock.auth';
SELECT current_setting('zklock.hosts') <> '' AS hosts_visible;
RESET ROLE;
-- what the README shows an administrator
GRANT EXECUTE ON FUNCTION zk_lock_try(text), zk_lock_release(text) TO zkl_regress_user;
SET ROLE zkl_regress_user;
SELECT zk_lock_try('sec');
SELECT zk_lock_release('sec');
RESET ROLE;
SELECT count(*) AS visible_to_superuser FROM pg_settings WHERE name = 'zklock.auth';
REVOKE EXECUTE ON FUNCTION zk_lock_try(text), zk_lock_release(text) FROM zkl_regress_user;
DROP ROLE zkl_regress_user;
