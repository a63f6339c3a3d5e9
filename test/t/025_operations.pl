# Everyday DBA operations keep working in a cluster with zklock preloaded,
# while sessions hold zklock locks.
#  (1) With a session-scope lock held by one session and a transaction-scope
#      lock held by another session's open transaction: CREATE DATABASE,
#      CREATE TABLESPACE, ALTER DATABASE ... SET TABLESPACE, DROP DATABASE
#      and DROP TABLESPACE finish (each under statement_timeout = 60s, so a
#      hang is a failure: the tablespace and DROP DATABASE commands wait for
#      every process with a ProcSignal slot, the zklock worker included, to
#      absorb a ProcSignalBarrier).  The locks are still held afterwards and
#      the log has no "still waiting for backend" line.
#  (2) DROP EXTENSION zklock while a session holds a lock, then CREATE
#      EXTENSION zklock: the lock stays held (another cluster cannot take it)
#      and its holder releases it by name; its ZooKeeper directory empties.
#  (3) pg_dump -Fc of a database with zklock and grants on its functions and
#      view, restored with pg_restore into a new database: no errors, the
#      extension and the grants (and the REVOKE from PUBLIC) are there, and
#      locks work from the restored database.
#  (4) DISCARD ALL, as poolers run it between clients, drops every
#      session-scope zklock hold of the session (exclusive, reentrant and
#      shared), exactly as it drops pg_advisory_lock's holds; DISCARD PLANS,
#      TEMP and SEQUENCES leave them alone, and DISCARD ALL inside a
#      transaction block fails (25001) and leaves them too.
#  (5) Databases of another encoding: a lock whose name holds bytes that are
#      invalid UTF-8, taken in a SQL_ASCII database, reads from the UTF-8
#      database as valid UTF-8 with those bytes (and '%') as %XX; and the
#      holder description of a lock taken from a SQL_ASCII database whose
#      name, and role whose name, hold a high byte is valid UTF-8 in the
#      UTF-8 database (the node data is pure ASCII).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use PostgreSQL::Test::Utils;
use Test::More;
use Cwd ();
use Encode ();
use Time::HiRes qw(time);

my $zk = zk_start(1);
my $a = zklock_node('a', $zk);
my $b = zklock_node('b', $zk);

# True if $bytes (a byte string) is well-formed UTF-8.
sub valid_utf8
{
	my ($bytes) = @_;
	my $copy = $bytes;
	return eval { Encode::decode('UTF-8', $copy, Encode::FB_CROAK); 1 } ? 1 : 0;
}

# Bytes as printable text for messages: non-ASCII as \xHH.
sub show_bytes
{
	my ($bytes) = @_;
	return ($bytes // '(undef)') =~ s/([^\x20-\x7e\n])/sprintf('\\x%02X', ord $1)/ger;
}

# Children of each lock's directory and every zk_locks entry of A, for a
# failed test.
sub diag_state { diag_locks($_[0], $zk, $_[1], $a) }

# ---------------------------------------------------------------------------
# (1) Database and tablespace commands with locks held by other sessions.
# ---------------------------------------------------------------------------

my $holder = bg_session($a);
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
is($holder->query_safe("SELECT zk_lock_acquire('ops-session', '10s') > 0"), 't',
	'(1) a session holds ops-session in session scope');
my $xact = bg_session($a);
my $xact_pid = $xact->query_safe('SELECT pg_backend_pid()');
is($xact->query_safe("BEGIN; SELECT zk_lock_acquire_xact('ops-xact', '10s') > 0"), 't',
	'(1) another session holds ops-xact in an open transaction');
is($a->safe_psql('postgres', "SELECT scope FROM zk_locks WHERE pid = $xact_pid AND name = 'ops-xact'"),
	'transaction', '(1) zk_locks shows the open transaction\'s hold in transaction scope');

my $log_offset = -s $a->logfile;
my %elapsed;

# Run one command with a 60 s statement_timeout (a hang fails instead of
# hanging the suite); a test that it exited 0.
sub ddl_ok
{
	my ($sql) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $timed_out = 0;
	my $t0 = time;
	my ($ret, $out, $err) = $a->psql('postgres', "SET statement_timeout = '60s';\n$sql",
		timeout => 300, timed_out => \$timed_out);
	my $what = $sql =~ s/ LOCATION .*//r;
	$elapsed{$what} = time - $t0;
	note sprintf('%s took %.2f s', $what, $elapsed{$what});
	$ret = -1 if $timed_out;
	return ok(defined $ret && $ret == 0, "(1) $sql finishes while other sessions hold zklock locks")
	  || diag("psql exit " . ($ret // 'undef') . ($timed_out ? ' (psql itself timed out)' : '') . ": $err");
}

# Absolute: from 17 on tempdir() is relative to the test's directory.
my $ts_dir = Cwd::abs_path(PostgreSQL::Test::Utils::tempdir('ts'));
ddl_ok('CREATE DATABASE ops_db');
ddl_ok("CREATE TABLESPACE ops_ts LOCATION '$ts_dir'");
ddl_ok('ALTER DATABASE ops_db SET TABLESPACE ops_ts');
is($a->safe_psql('postgres',
	"SELECT t.spcname FROM pg_database d JOIN pg_tablespace t ON t.oid = d.dattablespace WHERE d.datname = 'ops_db'"),
	'ops_ts', '(1) ops_db now lives in tablespace ops_ts');
ddl_ok('DROP DATABASE ops_db');
is($a->safe_psql('postgres', "SELECT count(*) FROM pg_database WHERE datname = 'ops_db'"), '0',
	'(1) ops_db is gone');
# A dropped table leaves its first segment file behind until the next
# checkpoint: DROP TABLESPACE then finds the directory not empty and takes
# the path that checkpoints and waits for a ProcSignalBarrier.
$a->safe_psql('postgres', 'CREATE TABLE ts_probe (v int) TABLESPACE ops_ts; INSERT INTO ts_probe VALUES (1); DROP TABLE ts_probe');
my $ts_offset = -s $a->logfile;
ddl_ok('DROP TABLESPACE ops_ts');
note 'DROP TABLESPACE ' . (slurp_file($a->logfile, $ts_offset) =~ /checkpoint starting/ ? 'took' : 'did not take')
  . ' the checkpoint and barrier path';
is($a->safe_psql('postgres', "SELECT count(*) FROM pg_tablespace WHERE spcname = 'ops_ts'"), '0',
	'(1) ops_ts is gone');

is(lock_state($a, $holder_pid, 'ops-session'), 'held', '(1) ops-session is still held by its session afterwards');
is(lock_state($a, $xact_pid, 'ops-xact'), 'held', '(1) ops-xact is still held by the open transaction afterwards');
is($a->safe_psql('postgres', "SELECT zk_lock_try('ops-session') OR zk_lock_try('ops-xact')"), 'f',
	'(1) another session of A cannot take either lock');
is($b->safe_psql('postgres', "SELECT zk_lock_try('ops-session') OR zk_lock_try('ops-xact')"), 'f',
	'(1) cluster B cannot take either lock');
my $log1 = slurp_file($a->logfile, $log_offset);
my @waiting_lines = grep { /still waiting for backend/ } split /\n/, $log1;
is(scalar @waiting_lines, 0, '(1) the log has no "still waiting for backend" line')
  or diag(join("\n", @waiting_lines[ 0 .. ($#waiting_lines < 4 ? $#waiting_lines : 4) ]));

is($xact->query_safe('COMMIT; SELECT 1'), '1', '(1) the open transaction commits');
is($holder->query_safe("SELECT zk_lock_release('ops-session')"), 't', '(1) the session releases ops-session');
for my $name (qw(ops-session ops-xact))
{
	wait_until(sub { !zk_ls($zk, "/zklock/$name") }, 30, "the directory of $name to empty");
}
$xact->quit;

# ---------------------------------------------------------------------------
# (2) DROP EXTENSION and CREATE EXTENSION while a session holds a lock.
# ---------------------------------------------------------------------------

is($holder->query_safe("SELECT zk_lock_acquire('ext-lock', '10s') > 0"), 't', '(2) a session holds ext-lock');
my @ext_nodes = zk_ls($zk, '/zklock/ext-lock');
is(scalar @ext_nodes, 1, '(2) ext-lock has one node in ZooKeeper');
my ($ret, $out, $err) = $a->psql('postgres', "SET statement_timeout = '60s';\nDROP EXTENSION zklock");
is($ret, 0, '(2) DROP EXTENSION zklock succeeds while another session holds a lock') or diag($err);
is($b->safe_psql('postgres', "SELECT zk_lock_try('ext-lock')"), 'f',
	'(2) with the extension dropped, cluster B still cannot take ext-lock');
is_deeply([ zk_ls($zk, '/zklock/ext-lock') ], \@ext_nodes, '(2) the holder\'s node is still in ZooKeeper');
($ret, $out, $err) = $a->psql('postgres', "SET statement_timeout = '60s';\nCREATE EXTENSION zklock");
is($ret, 0, '(2) CREATE EXTENSION zklock succeeds again') or diag($err);
is(lock_state($a, $holder_pid, 'ext-lock'), 'held', '(2) zk_locks of the new extension shows ext-lock held');
is($b->safe_psql('postgres', "SELECT zk_lock_try('ext-lock')"), 'f',
	'(2) after CREATE EXTENSION, cluster B still cannot take ext-lock');
is($holder->query_safe("SELECT zk_lock_release('ext-lock')"), 't',
	'(2) the holding session releases ext-lock through the re-created function');
wait_until(sub { !zk_ls($zk, '/zklock/ext-lock') }, 30, 'the directory of ext-lock to empty');
is(join(',', zk_ls($zk, '/zklock/ext-lock')), '', '(2) ext-lock\'s ZooKeeper directory is empty');
is($b->safe_psql('postgres', "SELECT zk_lock_try('ext-lock')"), 't', '(2) cluster B now takes ext-lock');
$holder->quit;

# ---------------------------------------------------------------------------
# (3) pg_dump -Fc and pg_restore into a new database.
# ---------------------------------------------------------------------------

$a->safe_psql('postgres', 'CREATE ROLE ops_app LOGIN; CREATE ROLE ops_none LOGIN; CREATE DATABASE dumpsrc');
$a->safe_psql('dumpsrc', q{
CREATE EXTENSION zklock;
GRANT EXECUTE ON FUNCTION zk_lock_acquire(text, interval), zk_lock_release(text) TO ops_app;
GRANT SELECT ON zk_locks TO ops_app;
-- The view's function is checked against the caller (README: grant both).
GRANT EXECUTE ON FUNCTION zk_locks_internal() TO ops_app;
CREATE TABLE guarded (v int);
INSERT INTO guarded VALUES (1), (2);
});
my $dump = PostgreSQL::Test::Utils::tempdir('dump') . '/dumpsrc.dump';
$a->command_checks_all(
	[ 'pg_dump', '-Fc', '-f', $dump, '-p', $a->port, '-h', $a->host, '-d', 'dumpsrc' ],
	0, [qr/^$/], [qr/^$/], '(3) pg_dump -Fc of a database with zklock');
$a->safe_psql('postgres', 'CREATE DATABASE dumprest');
$a->command_checks_all(
	[ 'pg_restore', '-p', $a->port, '-h', $a->host, '-d', 'dumprest', $dump ],
	0, [qr/^$/], [qr/^$/], '(3) pg_restore into a new database');
is($a->safe_psql('dumprest', "SELECT extversion FROM pg_extension WHERE extname = 'zklock'"),
	$a->safe_psql('postgres', "SELECT default_version FROM pg_available_extensions WHERE name = 'zklock'"),
	'(3) the restored database has the version of the dumped one, the newest');
is($a->safe_psql('dumprest', 'SELECT count(*) FROM guarded'), '2', '(3) the restored database has the table rows');
is($a->safe_psql('dumprest',
	"SELECT has_function_privilege('ops_app', 'zk_lock_acquire(text, interval)', 'EXECUTE')"
	  . " AND has_function_privilege('ops_app', 'zk_lock_release(text)', 'EXECUTE')"
	  . " AND has_table_privilege('ops_app', 'zk_locks', 'SELECT')"
	  . " AND has_function_privilege('ops_app', 'zk_locks_internal()', 'EXECUTE')"),
	't', '(3) the grants to ops_app survived the restore');
is($a->safe_psql('dumprest',
	"SELECT has_function_privilege('ops_app', 'zk_lock_try(text)', 'EXECUTE')"
	  . " OR has_function_privilege('ops_none', 'zk_lock_acquire(text, interval)', 'EXECUTE')"
	  . " OR has_table_privilege('ops_none', 'zk_locks', 'SELECT')"),
	'f', '(3) nothing more was granted: the REVOKE from PUBLIC survived the restore');

my $rs = bg_session($a, dbname => 'dumprest');
my $rs_pid = $rs->query_safe('SELECT pg_backend_pid()');
is($rs->query_safe("SET ROLE ops_app; SELECT zk_lock_acquire('dump-lock', '10s') > 0"), 't',
	'(3) ops_app takes dump-lock from the restored database');
is($rs->query_safe("SELECT state FROM zk_locks WHERE pid = $rs_pid AND name = 'dump-lock'"), 'held',
	'(3) ops_app sees its hold in zk_locks of the restored database');
is($b->safe_psql('postgres', "SELECT zk_lock_try('dump-lock')"), 'f', '(3) cluster B cannot take dump-lock');
is($rs->query_safe("SELECT zk_lock_release('dump-lock')"), 't', '(3) ops_app releases dump-lock');
wait_until(sub { !zk_ls($zk, '/zklock/dump-lock') }, 30, 'the directory of dump-lock to empty');
is($b->safe_psql('postgres', "SELECT zk_lock_try('dump-lock')"), 't', '(3) cluster B then takes dump-lock');
$rs->quit;

# ---------------------------------------------------------------------------
# (4) DISCARD.
# ---------------------------------------------------------------------------

my $s = bg_session($a);
my $s_pid = $s->query_safe('SELECT pg_backend_pid()');
is($s->query_safe("SELECT zk_lock_acquire('d-excl', '10s') > 0 AND zk_lock_acquire('d-excl', '10s') > 0"),
	't', '(4) a session takes d-excl twice (reentrant)');
is($s->query_safe("SELECT zk_lock_acquire_shared('d-shared', '10s') > 0"), 't', '(4) and d-shared shared');
$s->query_safe('SELECT pg_advisory_lock(4242)');

sub s_holds
{
	return $a->safe_psql('postgres',
		"SELECT string_agg(name || ':' || mode || ':' || scope || ':' || state, ' ' ORDER BY name)"
		  . " FROM zk_locks WHERE pid = $s_pid");
}

sub s_advisory
{
	return $a->safe_psql('postgres',
		"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $s_pid AND granted");
}

my $all_held = 'd-excl:exclusive:session:held d-shared:shared:session:held';
is(s_holds(), $all_held, '(4) zk_locks shows both session holds');
is(s_advisory(), '1', '(4) pg_locks shows the advisory lock taken alongside');
my %nodes_before = map { $_ => join(',', zk_ls($zk, "/zklock/$_")) } qw(d-excl d-shared);

for my $cmd ('DISCARD PLANS', 'DISCARD TEMP', 'DISCARD SEQUENCES')
{
	$s->query_safe($cmd);
	is(s_holds(), $all_held, "(4) $cmd leaves the zklock holds");
	is(s_advisory(), '1', "(4) $cmd leaves the advisory lock (reference)");
	is_deeply({ map { $_ => join(',', zk_ls($zk, "/zklock/$_")) } qw(d-excl d-shared) }, \%nodes_before,
		"(4) after $cmd the nodes are still in ZooKeeper");
}
is($b->safe_psql('postgres', "SELECT zk_lock_try('d-excl') OR zk_lock_try('d-shared')"), 'f',
	'(4) cluster B cannot take d-excl or d-shared (exclusive)');

$s->{stderr} = '';
my (undef, $failed) = $s->query("\\set VERBOSITY verbose\nBEGIN;\nDISCARD ALL;");
ok($failed, '(4) DISCARD ALL inside BEGIN fails');
like($s->{stderr}, qr/25001: DISCARD ALL cannot run inside a transaction block/,
	'(4) ... with PostgreSQL\'s own error, SQLSTATE 25001');
$s->{stderr} = '';
$s->query_safe("ROLLBACK;\n\\set VERBOSITY default");
is(s_holds(), $all_held, '(4) the failed DISCARD ALL left the zklock holds');
is(s_advisory(), '1', '(4) the failed DISCARD ALL left the advisory lock (reference)');

$s->query_safe('DISCARD ALL');
is(s_advisory(), '0', '(4) DISCARD ALL released the advisory lock (reference)');
wait_until(sub { s_holds() eq '' }, 30, 'zk_locks to show no entry of the session after DISCARD ALL');
is(s_holds(), '', '(4) DISCARD ALL dropped every zklock hold of the session: zk_locks has no entry for it')
  or diag_state('after DISCARD ALL', [qw(d-excl d-shared)]);
for my $name (qw(d-excl d-shared))
{
	wait_until(sub { !zk_ls($zk, "/zklock/$name") }, 30, "the directory of $name to empty after DISCARD ALL");
	is(join(',', zk_ls($zk, "/zklock/$name")), '', "(4) after DISCARD ALL the directory of $name is empty");
}
is($b->safe_psql('postgres', "SELECT zk_lock_try('d-excl') AND zk_lock_try('d-shared')"), 't',
	'(4) after DISCARD ALL cluster B takes d-excl and d-shared (exclusive)');
$s->{stderr} = '';
is($s->query("SELECT zk_lock_release('d-excl')"), 'f',
	'(4) after DISCARD ALL the session holds no d-excl to release (as pg_advisory_unlock)');
like($s->{stderr}, qr/WARNING/, '(4) ... with a WARNING');
$s->{stderr} = '';
is($s->query_safe("SELECT zk_lock_acquire('d-excl', '30s') > 0 AND zk_lock_release('d-excl')"), 't',
	'(4) the session takes d-excl again and one release gives it back');
wait_until(sub { s_holds() eq '' }, 30, 'zk_locks to show no entry of the session at the end');
$s->quit;

# ---------------------------------------------------------------------------
# (5) Databases of other encodings.
# ---------------------------------------------------------------------------

# The UTF-8 database: postgres, unless initdb chose another encoding.
my $u8 = 'postgres';
if ($a->safe_psql('postgres', 'SELECT getdatabaseencoding()') ne 'UTF8')
{
	$u8 = 'u8';
	$a->safe_psql('postgres', "CREATE DATABASE u8 TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'");
	$a->safe_psql('u8', 'CREATE EXTENSION zklock');
}
note "UTF-8 database: $u8";

# Clients of the SQL_ASCII databases send and receive raw bytes.
my $asc_db = 'asc';
my $hi_db = "db\xe9";
my $hi_role = "r\xe9";
{
	local $ENV{PGCLIENTENCODING} = 'SQL_ASCII';
	$a->safe_psql('postgres',
		q{CREATE DATABASE "asc" TEMPLATE template0 ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C'});
	$a->safe_psql($asc_db, 'CREATE EXTENSION zklock');
	$a->safe_psql($asc_db,
		qq{CREATE DATABASE "$hi_db" TEMPLATE template0 ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C';\n}
		  . qq{CREATE ROLE "$hi_role"});
	$a->safe_psql($hi_db,
		qq{CREATE EXTENSION zklock;\n}
		  . qq{GRANT EXECUTE ON FUNCTION zk_lock_acquire(text, interval), zk_lock_release(text) TO "$hi_role"});
}
is($a->safe_psql($hi_db, 'SELECT getdatabaseencoding() || length(current_database())'), 'SQL_ASCII3',
	'(5) the database whose name holds byte 0xE9 is SQL_ASCII');

my ($c, $c_pid, $d, $d_pid);
{
	local $ENV{PGCLIENTENCODING} = 'SQL_ASCII';
	$c = bg_session($a, dbname => $asc_db);
	$d = bg_session($a, dbname => $hi_db);
}
$c_pid = $c->query_safe('SELECT pg_backend_pid()');
$d_pid = $d->query_safe('SELECT pg_backend_pid()');

my $bad_name_sql = q{E'caf\xe9' || '-' || E'\xff'};
is($c->query_safe("SELECT octet_length($bad_name_sql), zk_lock_acquire($bad_name_sql, '10s') > 0"), '6|t',
	'(5) a session of SQL_ASCII database "asc" holds a lock named caf<0xE9>-<0xFF>');
is($c->query_safe("SELECT zk_lock_path($bad_name_sql)"), '/zklock/caf%E9-%FF',
	'(5) its ZooKeeper directory is /zklock/caf%E9-%FF');
is(scalar(my @n = zk_ls($zk, '/zklock/caf%E9-%FF')), 1, '(5) that directory holds one node');
is($c->query_safe("SELECT name = $bad_name_sql FROM zk_locks WHERE pid = $c_pid"), 't',
	'(5) in its own database, zk_locks shows the name as it was given');

($ret, $out, $err) = $a->psql($u8, "SELECT name, convert_to(name, 'UTF8') FROM zk_locks WHERE pid = $c_pid");
is($ret, 0, "(5) SELECT name, convert_to(name, 'UTF8') FROM zk_locks succeeds in the UTF-8 database")
  or diag(show_bytes($err));
($ret, $out, $err) = $a->psql($u8, "SELECT encode(convert_to(name, 'UTF8'), 'hex') FROM zk_locks WHERE pid = $c_pid");
my $name_bytes = $ret == 0 ? pack('H*', $out) : undef;
ok(defined $name_bytes && valid_utf8($name_bytes), '(5) the name read in the UTF-8 database is valid UTF-8')
  or diag('name bytes: ' . show_bytes($name_bytes) . ' ' . show_bytes($err));
is(show_bytes($name_bytes), 'caf%E9-%FF', '(5) ... and reads caf%E9-%FF (the bytes of another encoding as %XX)');

# A lock with an ASCII name, taken by role r<0xE9> in database db<0xE9>: its
# holder description names both.
is($d->query_safe(qq{SET ROLE "$hi_role";\nSELECT zk_lock_acquire('ascii-lock', '10s') > 0}), 't',
	'(5) role r<0xE9> in SQL_ASCII database db<0xE9> holds ascii-lock');
is($a->safe_psql($u8, "SELECT name FROM zk_locks WHERE pid = $d_pid"), 'ascii-lock',
	'(5) an ASCII name reads unchanged in the UTF-8 database');
my @ascii_nodes = zk_ls($zk, '/zklock/ascii-lock');
is(scalar @ascii_nodes, 1, '(5) ascii-lock has one node in ZooKeeper');
my $node_data = @ascii_nodes ? zk_get($zk, "/zklock/ascii-lock/$ascii_nodes[0]") : undef;
note 'node data: ' . show_bytes($node_data);
ok(defined $node_data && $node_data =~ /\A[\x00-\x7f]*\z/, '(5) the node data (holder JSON) is pure ASCII')
  or diag('node data: ' . show_bytes($node_data));

($ret, $out, $err) = $a->psql($u8, "SELECT holder, data FROM zk_lock_contenders('ascii-lock')");
is($ret, 0, '(5) SELECT holder, data FROM zk_lock_contenders(\'ascii-lock\') succeeds in the UTF-8 database')
  or diag(show_bytes($err));
# psql drops invalid bytes from what it prints: look at the bytes the
# server returns (textsend does no conversion between UTF-8 and UTF-8).
($ret, $out, $err) = $a->psql($u8,
	"SELECT client, holder IS NOT NULL, encode(textsend(holder::text), 'hex'), encode(textsend(coalesce(data, '')), 'hex')"
	  . " FROM zk_lock_contenders('ascii-lock')");
my ($client, $has_holder, $holder_hex, $data_hex) = split /\|/, $out, 4;
my $holder_bytes = pack('H*', $holder_hex // '');
my $data_bytes = pack('H*', $data_hex // '');
note 'holder as the UTF-8 database returns it: ' . show_bytes($holder_bytes);
is(($client // '') . '|' . ($has_holder // ''), 'zklock|t',
	'(5) the UTF-8 database reads the holder of ascii-lock as zklock\'s JSON')
  or diag(show_bytes("$out $err"));
ok(valid_utf8($holder_bytes) && valid_utf8($data_bytes), '(5) holder and data of ascii-lock are valid UTF-8')
  or diag('holder: ' . show_bytes($holder_bytes) . ' data: ' . show_bytes($data_bytes));
($ret, $out, $err) = $a->psql($u8,
	"SELECT convert_to(holder::text, 'UTF8') IS NOT NULL AND convert_to(coalesce(data, ''), 'UTF8') IS NOT NULL"
	  . " FROM zk_lock_contenders('ascii-lock')");
is($out, 't', "(5) the server's own UTF-8 check (convert_to) accepts holder and data of ascii-lock")
  or diag(show_bytes($err));
($ret, $out, $err) = $a->psql($u8,
	"SELECT holder->>'database' LIKE 'db_%' AND holder->>'user' LIKE 'r_%' FROM zk_lock_contenders('ascii-lock')");
is($out, 't', '(5) the holder names database db<0xE9> and user r<0xE9> (with something for the high byte)')
  or diag(show_bytes("$out $err"));

# Every byte value as a one-byte name, taken in the SQL_ASCII database (chr(n)
# is byte n there), read from the UTF-8 one: 255 distinct valid names.
is($c->query_safe("SET zklock.max_locks_per_backend = 300;\n"
	  . "SELECT count(*) FILTER (WHERE zk_lock_acquire(chr(n), '10s') > 0) FROM generate_series(1, 255) AS n"),
	'255', '(5) a SQL_ASCII session holds 255 locks, one named by each byte value');
($ret, $out, $err) = $a->psql($u8,
	"SELECT count(*), count(DISTINCT name), bool_and(convert_to(name, 'UTF8') IS NOT NULL),"
	  . " count(*) FILTER (WHERE name LIKE '\\%__' ESCAPE '\\')"
	  . " FROM zk_locks WHERE pid = $c_pid AND octet_length(name) <= 3");
is($ret, 0, '(5) the UTF-8 database reads the names of every byte value from zk_locks')
  or diag(show_bytes($err));
is($out, '255|255|t|128', '(5) ... 255 distinct valid names, the 128 high bytes written %XX');
is($c->query_safe("SELECT count(*) FILTER (WHERE zk_lock_release(chr(n))) FROM generate_series(1, 255) AS n"),
	'255', '(5) the 255 one-byte locks are released');

is($d->query_safe("SELECT zk_lock_release('ascii-lock')"), 't', '(5) ascii-lock is released');
is($c->query_safe("SELECT zk_lock_release($bad_name_sql)"), 't', '(5) caf<0xE9>-<0xFF> is released');
for my $dir ('ascii-lock', 'caf%E9-%FF')
{
	wait_until(sub { !zk_ls($zk, "/zklock/$dir") }, 30, "the directory /zklock/$dir to empty");
}
$c->quit;
$d->quit;

is($a->safe_psql('postgres', 'SELECT count(*) FROM zk_locks'), '0', 'no lock entry left in A');
my @waiting_all = grep { /still waiting for backend/ } split /\n/, slurp_file($a->logfile);
is(scalar @waiting_all, 0, 'A\'s whole log has no "still waiting for backend" line')
  or diag(join("\n", @waiting_all[ 0 .. ($#waiting_all < 4 ? $#waiting_all : 4) ]));
diag('elapsed: ' . join(', ', map { sprintf('%s %.1f s', $_, $elapsed{$_}) } sort keys %elapsed));

done_testing();
