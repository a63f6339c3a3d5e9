-- security: no access for PUBLIC; credentials hidden from non-superusers
CREATE ROLE zkl_regress_user;
SET ROLE zkl_regress_user;
SELECT zk_lock_try('sec');
SELECT * FROM zk_locks;
SELECT zk_status();
SHOW zklock.auth;
SELECT current_setting('zklock.auth');
SET zklock.auth = 'u:p';
SET zklock.max_locks_per_backend = 1000;
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
