# The session file and every setting at its bounds (issue 33, point 4): a
# clear log line, a fresh session when the file cannot be trusted, a lock
# that still works, never a crash.
#
# (1) zklock.session, the record of the running incarnation's ZooKeeper
#     session, replaced between a `pg_ctl stop -m immediate` and the start
#     (which would otherwise close the dead incarnation's session) by: a
#     truncated record, an empty file, a record with a byte more, a record
#     of another version (1, and 3), a corrupted magic number, 96 bytes of
#     garbage, a record with a corrupted boot id, one with a corrupted data
#     directory inode, the record of another cluster (b's), a directory of
#     that name, and an unreadable file (mode 000; the server runs as an
#     ordinary user, whom mode 000 keeps out).  Each time the log says why
#     the file is ignored (or could not be read), the worker opens a
#     session of its own and does not close the one recorded (which stays
#     alive in ZooKeeper until it expires: the file was not trusted), a
#     lock is taken, and the file then holds the new session's record.
#     A record of this incarnation with a corrupted session id, and one
#     with a corrupted password, are trusted (nothing tells them from a
#     good one) but name no session ZooKeeper lets the worker have: it logs
#     that it found the session expired and opens its own, and the live
#     session the record was made from is not closed by the wrong password.
# (2) A read-only data directory: the worker cannot write the file.  The
#     data directory is made read-only (mode 0500) while the cluster runs,
#     then a backend is killed (SIGKILL): in the crash restart the new
#     worker closes the previous incarnation's session (the file could be
#     read), logs that it could not remove the file and could not write the
#     new session's, and works: a lock is taken.  With the directory
#     writable again, a later immediate stop and start finds the stale
#     record (of the session closed before), finds that session expired,
#     and works.
# (3) Every zklock.* integer setting at its bounds: ALTER SYSTEM accepts the
#     minimum and the maximum and refuses one below and one above with
#     SQLSTATE 22023 ("outside the valid range"); the settings a session
#     may SET (zklock.connect_timeout, zklock.max_hold_time, and as
#     superuser zklock.max_locks_per_backend, zklock.max_locks_per_role,
#     zklock.max_hold_time_limit) are SET to each bound and a lock is taken
#     and released under them; the server starts with every setting read
#     at start or reload (zklock.session_timeout, zklock.max_locks,
#     zklock.stats_max) at its minimum, takes a lock, and with each at its
#     maximum (zklock.max_locks 1,000,000 asks for 2.4 GB of shared memory:
#     postgres -C shared_memory_size shows it, and the server is started
#     with it only where that and 1 GB more are free), takes a lock; a
#     value out of range in postgresql.conf is refused with a clear line and
#     the server still starts, with the default.  The string and enum
#     settings: zklock.root of 255 bytes and "/" are accepted (and a server
#     with each takes a lock whose node is under it), one of 256 bytes, a
#     relative one, one with a trailing slash and an empty one are refused;
#     zklock.hosts ports 1 and 65535 are accepted, 0, 65536 and an empty
#     list refused; zklock.auth without its colon, and enum values that are
#     none of the choices, are refused (22023).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;
use Time::HiRes qw(sleep);

my $IGNORES = qr/ignoring the ZooKeeper session recorded in "zklock\.session"/;
my $PREVIOUS = qr/of the previous server incarnation/;
my $REC_LEN = 96;    # sizeof(zkl_session_record)

my $zk = zk_start(1);
# A 60 s session timeout: the session of an incarnation stopped with -m
# immediate stays alive long enough to tell "closed" from "left alone".
my $a = zklock_node('a', $zk, session_timeout => '60s', conf => "restart_after_crash = on\n");
my $b = zklock_node('b', $zk, session_timeout => '60s');
my $file = $a->data_dir . '/zklock.session';

sub session_id { return zk_status_of($_[0])->{session_id} }

sub connected
{
	my ($node) = @_;
	my ($ret, $st) = $node->psql('postgres', 'SELECT state FROM zk_status()');
	return $ret == 0 && $st eq 'connected';
}

sub read_bytes
{
	my ($path) = @_;
	open(my $fh, '<:raw', $path) or die "$path: $!";
	local $/;
	my $bytes = <$fh>;
	close $fh;
	return $bytes;
}

sub write_bytes
{
	my ($path, $bytes) = @_;
	open(my $fh, '>:raw', $path) or die "$path: $!";
	print $fh $bytes;
	close $fh or die "$path: $!";
	return;
}

sub lock_works
{
	my ($node, $what) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($node->safe_psql('postgres', "SELECT zk_lock_acquire('sf_probe', '10s') > 0, zk_lock_release('sf_probe')"),
		't|t', "$what: a lock is taken and released");
	return;
}

wait_until(sub { connected($a) && connected($b) }, 30, 'a and b are connected');
ok(-s $file == $REC_LEN, "a's worker recorded its session in zklock.session ($REC_LEN bytes)");
my $b_record = read_bytes($b->data_dir . '/zklock.session');

# A holder in the current incarnation's session, of a lock of its own
# (sf_w1, sf_w2, ...): its node shows whether that session is still alive
# after the restart (an immediate stop leaves it to expire).
my ($holder, $witness, $nwitness) = (undef, '', 0);

sub hold_in_current_session
{
	$witness = '/zklock/sf_w' . ++$nwitness;
	$holder = bg_session($a);
	$holder->query_safe("SELECT zk_lock_acquire('sf_w$nwitness')");
	wait_until(sub { zk_nchildren($zk, $witness) == 1 }, 15, "$witness is held");
	return;
}

# Immediate stop, $prepare->() on the data directory, start; then the
# checks of (1).  Returns the log written since the stop.
sub restart_with
{
	my ($what, $prepare, %opts) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	hold_in_current_session();
	my $old = session_id($a);
	my $record = read_bytes($file);
	my $off = -s $a->logfile;
	$a->stop('immediate');
	eval { $holder->quit; 1 };
	$prepare->($record);
	$a->start;
	ok(wait_until(sub { connected($a) }, 60, "$what: a is connected"), "$what: the server starts and connects");
	my $new = session_id($a);
	isnt($new, $old, "$what: a new ZooKeeper session ($old -> $new)");
	my $log = slurp_file($a->logfile, $off);
	like($log, $opts{log}, "$what: the log says so") if $opts{log};
	if ($opts{trusted})
	{
		like($log, qr/found expired ZooKeeper session 0x[0-9a-f]+ $PREVIOUS/,
			"$what: the worker found the recorded session expired");
	}
	else
	{
		unlike($log, qr/(?:reattaching to|closed|found expired) ZooKeeper session 0x[0-9a-f]+ $PREVIOUS/,
			"$what: the worker did not act on the recorded session");
	}
	# The session of the stopped incarnation is not closed: its node stays.
	is(zk_nchildren($zk, $witness), 1,
		"$what: the stopped incarnation's session is still alive (its lock node stays)");
	lock_works($a, $what);
	if ($opts{no_rewrite})
	{
		like($log, $opts{no_rewrite}, "$what: the log says the new session could not be recorded");
	}
	else
	{
		ok(wait_until(sub { -f $file && -s $file == $REC_LEN && -r $file }, 15, "$what: file rewritten"),
			"$what: zklock.session holds the new session's record");
		isnt(read_bytes($file), $record, "$what: ... not the old one") if -f $file && -r $file;
	}
	return $log;
}

my $format = qr/$IGNORES: its format is not this version's/;

# ---------------------------------------------------------------------
# (1) Untrusted files
# ---------------------------------------------------------------------
restart_with('truncated (40 bytes)', sub { write_bytes($file, substr($_[0], 0, 40)) }, log => $format);
restart_with('empty', sub { write_bytes($file, '') }, log => $format);
restart_with('a byte more', sub { write_bytes($file, $_[0] . 'x') }, log => $format);
for my $v (1, 3)
{
	restart_with("version $v", sub { my $r = $_[0]; substr($r, 4, 4) = pack('L', $v); write_bytes($file, $r) },
		log => $format);
}
restart_with('corrupted magic', sub { my $r = $_[0]; substr($r, 0, 4) = "\xde\xad\xbe\xef"; write_bytes($file, $r) },
	log => $format);
restart_with('garbage', sub { write_bytes($file, join('', map { chr(int(rand(256))) } 1 .. $REC_LEN)) },
	log => qr/$IGNORES: /);
restart_with('corrupted boot id', sub {
	my $r = $_[0];
	substr($r, 32, 1) = substr($r, 32, 1) eq 'f' ? 'e' : 'f';
	write_bytes($file, $r);
}, log => qr/$IGNORES: it was written by another machine, or before this machine booted/);
restart_with('corrupted inode', sub {
	my $r = $_[0];
	substr($r, 24, 8) = pack('Q', unpack('Q', substr($r, 24, 8)) ^ 0x5a5a);
	write_bytes($file, $r);
}, log => qr/$IGNORES: it was written in another data directory: this one is a copy/);
restart_with("another cluster's record", sub { write_bytes($file, $b_record) },
	log => qr/$IGNORES: it belongs to another database system/);
# A directory cannot be removed by unlink nor replaced by the new record.
restart_with('a directory', sub { unlink $file; mkdir $file or die "mkdir: $!" },
	log => qr/$IGNORES: its format is not this version's|could not (?:open|read) file "zklock\.session"/,
	no_rewrite => qr/could not save the ZooKeeper session in "zklock\.session"/);
ok(-d $file, 'the directory named zklock.session is still there');
rmdir($file) or die "rmdir: $!";
# Its record could not be written: put one there for the next case.
$a->restart;
wait_until(sub { connected($a) }, 60, 'a is connected');
ok(-s $file == $REC_LEN, 'after a restart zklock.session holds a record again');
restart_with('unreadable (mode 000)', sub { chmod 0000, $file or die "chmod: $!" },
	log => qr/could not open file "zklock\.session": Permission denied/);

# Trusted, but naming no session the worker may have.
restart_with('corrupted session id', sub {
	my $r = $_[0];
	substr($r, 72, 8) = pack('q', unpack('q', substr($r, 72, 8)) ^ 0x0f0f0f);
	write_bytes($file, $r);
}, trusted => 1);
restart_with('corrupted password', sub {
	my $r = $_[0];
	substr($r, 80, 16) = join('', map { chr(ord($_) ^ 0xff) } split //, substr($r, 80, 16));
	write_bytes($file, $r);
}, trusted => 1);

# ---------------------------------------------------------------------
# (2) A read-only data directory
# ---------------------------------------------------------------------
{
	my $dir = $a->data_dir;
	hold_in_current_session();
	my $old = session_id($a);
	my $s = bg_session($a);
	my $pid = $s->query_safe('SELECT pg_backend_pid()');
	my $off = -s $a->logfile;
	chmod 0500, $dir or die "chmod: $!";
	expect_crash_restart($a, qr/(?:server process|client backend) \(PID $pid\) was terminated by signal 9: Killed/, 1);
	kill 'KILL', $pid;
	# Until its postmaster has reaped the backend, a still answers: wait for
	# the crash restart to begin first.
	wait_until(sub { slurp_file($a->logfile, $off) =~ /all server processes terminated; reinitializing/ }, 60,
		'a begins its crash restart');
	my $up = wait_until(sub { connected($a) }, 60, 'a is connected after its crash restart');
	ok($up, '(2) read-only data directory: the crash restart comes up and connects');
	my $new = session_id($a);
	isnt($new, $old, "(2) a new ZooKeeper session ($old -> $new)");
	my $log = slurp_file($a->logfile, $off);
	like($log, qr/closed ZooKeeper session \Q$old\E $PREVIOUS/,
		'(2) the new worker closed the previous incarnation\'s session (the file could be read)');
	like($log, qr/could not remove file "zklock\.session": Permission denied/,
		'(2) the log says the file could not be removed');
	# Once: the file that could not be removed is not read again (it was,
	# at every session the worker opened, which it never did then).
	my $n = () = $log =~ /reattaching to ZooKeeper session 0x[0-9a-f]+ $PREVIOUS/g;
	is($n, 1, '(2) the worker reattached to the previous incarnation\'s session once');
	like($log, qr/could not write file "zklock\.session\.tmp": Permission denied/,
		'(2) the log says the new session could not be recorded');
	lock_works($a, '(2) read-only data directory');
	chmod 0700, $dir or die "chmod: $!";
	eval { $holder->quit; 1 };
	eval { $s->quit; 1 };
	ok(wait_until(sub { zk_nchildren($zk, $witness) == 0 }, 15, 'the closed session\'s node is gone'),
		'(2) the closed session\'s lock node is gone');
	# The file still names the session closed in the crash restart.
	restart_with('(2) stale record of a closed session', sub { }, trusted => 1);
}

# ---------------------------------------------------------------------
# (3) Settings at their bounds
# ---------------------------------------------------------------------
my $INT_MAX = 2147483647;
my %bounds = (
	'zklock.session_timeout'      => [ 1000, 600000 ],
	'zklock.connect_timeout'      => [ 0, 3600000 ],
	'zklock.max_locks'            => [ 16, 1000000 ],
	'zklock.max_locks_per_backend' => [ -1, 1000000 ],
	'zklock.max_locks_per_role'   => [ -1, 1000000 ],
	'zklock.max_hold_time'        => [ 0, $INT_MAX ],
	'zklock.max_hold_time_limit'  => [ 0, $INT_MAX ],
	'zklock.stats_max'            => [ 10, 1000000 ],
);
is($a->safe_psql('postgres',
		"SELECT string_agg(name || ' ' || min_val || ' ' || max_val, ',' ORDER BY name) FROM pg_settings"
		  . " WHERE name LIKE 'zklock.%' AND vartype = 'integer'"),
	join(',', map { "$_ $bounds{$_}[0] $bounds{$_}[1]" } sort keys %bounds),
	'(3) the integer settings and their bounds are the ones this test knows');

for my $g (sort keys %bounds)
{
	my ($min, $max) = @{ $bounds{$g} };
	for my $v ($min, $max)
	{
		is(sql_sqlstate($a, "ALTER SYSTEM SET $g = $v"), 'ok', "(3) ALTER SYSTEM SET $g = $v is accepted");
	}
	for my $v ($min - 1, $max + 1)
	{
		my $st = sql_sqlstate($a, "ALTER SYSTEM SET $g = $v");
		my ($ret, $out, $stderr) = $a->psql('postgres', "ALTER SYSTEM SET $g = $v");
		# Past INT_MAX the value is no integer at all.
		like($stderr, $v > $INT_MAX
			? qr/invalid value for parameter "\Q$g\E": "\Q$v\E".*\n.*Value exceeds integer range/
			: qr/\Q$v\E(?: ms)? is outside the valid range for parameter "\Q$g\E" \(\Q$min\E(?: ms)? \.\. \Q$max\E(?: ms)?\)/,
			"(3) ALTER SYSTEM SET $g = $v is refused: outside the valid range");
		is($st, '22023', "(3) ... with SQLSTATE 22023");
	}
	$a->safe_psql('postgres', "ALTER SYSTEM RESET $g");
}

# The string settings' bounds: zklock.root of 255 bytes, not 256, and "/";
# zklock.hosts ports 1 to 65535; zklock.auth needs its colon.
my $root255 = '/' . ('r' x 254);
for my $ok ("zklock.root = '$root255'", "zklock.root = '/'", "zklock.hosts = '127.0.0.1:65535,127.0.0.1:1'",
	"zklock.auth = 'u:'")
{
	is(sql_sqlstate($a, "ALTER SYSTEM SET $ok"), 'ok', '(3) ALTER SYSTEM SET ' . substr($ok, 0, 60) . ' is accepted');
}
for my $bad ("zklock.root = '${root255}r'", "zklock.root = 'r'", "zklock.root = '/r/'", "zklock.root = ''",
	"zklock.hosts = '127.0.0.1:65536'", "zklock.hosts = '127.0.0.1:0'", "zklock.hosts = ''",
	"zklock.auth = 'nocolon'", "zklock.on_lock_lost = 'sometimes'", "zklock.on_revoke = 'maybe'",
	"zklock.exclusive_layout = 'other'")
{
	is(sql_sqlstate($a, "ALTER SYSTEM SET $bad"), '22023', '(3) ALTER SYSTEM SET ' . substr($bad, 0, 60) . ' is refused (22023)');
}
$a->safe_psql('postgres', 'ALTER SYSTEM RESET ALL');

# What a session may SET, at each bound, then a lock.
for my $g (qw(zklock.connect_timeout zklock.max_hold_time zklock.max_locks_per_backend
	zklock.max_locks_per_role zklock.max_hold_time_limit))
{
	for my $v (@{ $bounds{$g} })
	{
		is($a->safe_psql('postgres',
				"SET $g = $v; SELECT zk_lock_acquire('sf_bound', '10s') > 0, zk_lock_release('sf_bound')"),
			't|t', "(3) SET $g = $v: a lock is taken and released");
	}
}
# The longest hold limit is not a hold limit of no time.
is($a->safe_psql('postgres',
		"SET zklock.max_hold_time = $INT_MAX; SELECT zk_lock_acquire('sf_bound', '10s') > 0, pg_sleep(1),"
		  . " zk_lock_check('sf_bound'), zk_lock_release('sf_bound')"),
	"t||t|t", '(3) zklock.max_hold_time at its maximum: the hold is still held a second later');

# What is read at start: every one at its minimum, then at its maximum.
sub restart_with_conf
{
	my ($what, $conf) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	$a->append_conf('postgresql.conf', $conf);
	my $off = -s $a->logfile;
	$a->restart;
	ok(wait_until(sub { connected($a) }, 60, "$what: connected"), "$what: the server starts and connects");
	lock_works($a, $what);
	return slurp_file($a->logfile, $off);
}

restart_with_conf('(3) minimums', "zklock.session_timeout = 1000\nzklock.max_locks = 16\nzklock.stats_max = 10\n");
is($a->safe_psql('postgres', "SELECT current_setting('zklock.session_timeout'), current_setting('zklock.max_locks'),"
	  . " current_setting('zklock.stats_max')"),
	'1s|16|10', '(3) minimums: in force');
# zklock.max_locks = 1,000,000 asks for 2.4 GB of shared memory.
$a->stop;
$a->append_conf('postgresql.conf', "zklock.session_timeout = 600000\nzklock.max_locks = 1000000\nzklock.stats_max = 1000000\n");
my ($out, $err) = run_command([ 'postgres', '-D', $a->data_dir, '-C', 'shared_memory_size' ]);
chomp $out;
like($out, qr/^\d+(?:MB)?$/, "(3) maximums: postgres -C shared_memory_size answers (${out} MB)") or diag($err);
my ($mb) = $out =~ /^(\d+)/;
cmp_ok($mb, '>', 2400, '(3) maximums: 1,000,000 lock slots take more than 2.4 GB of shared memory');
my ($avail_kb) = slurp_file('/proc/meminfo') =~ /^MemAvailable:\s+(\d+)/m;
SKIP:
{
	skip "only ${\ int($avail_kb / 1024)} MB of memory available, $mb MB and 1 GB more needed", 3
	  if !$avail_kb || $avail_kb / 1024 < $mb + 1024;
	$a->start;
	ok(wait_until(sub { connected($a) }, 120, 'maximums: connected'), '(3) maximums: the server starts and connects');
	lock_works($a, '(3) maximums');
	is($a->safe_psql('postgres', "SELECT current_setting('zklock.session_timeout'), current_setting('zklock.max_locks'),"
		  . " current_setting('zklock.stats_max')"),
		'10min|1000000|1000000', '(3) maximums: in force');
	$a->stop;
}

# The longest root, and the root "/": locks work, their nodes where they belong.
for my $root ($root255, '/')
{
	$a->append_conf('postgresql.conf',
		"zklock.session_timeout = 10000\nzklock.max_locks = 1024\nzklock.stats_max = 1000\nzklock.root = '$root'\n");
	$a->start;
	my $what = '(3) zklock.root = ' . (length($root) > 1 ? '255 bytes' : "'/'");
	ok(wait_until(sub { connected($a) }, 60, "$what: connected"), "$what: the server starts and connects");
	my $s = bg_session($a);
	$s->query_safe("SELECT zk_lock_acquire('sf_root')");
	my $dir = $root eq '/' ? '/sf_root' : "$root/sf_root";
	is(zk_nchildren($zk, $dir), 1, "$what: the lock's node is under $dir" =~ s/r{20,}/r.../r);
	$s->quit;
	$a->stop;
}

# Out of range in postgresql.conf.
$a->append_conf('postgresql.conf', "zklock.session_timeout = 999\nzklock.max_locks = 15\nzklock.stats_max = 1000001\n");
my $off = -s $a->logfile;
$a->start;
ok(wait_until(sub { connected($a) }, 60, 'out of range: connected'), '(3) out of range in postgresql.conf: the server starts');
my $log = slurp_file($a->logfile, $off);
for (['zklock.session_timeout', 999], ['zklock.max_locks', 15], ['zklock.stats_max', 1000001])
{
	my ($g, $v) = @$_;
	like($log, qr/\Q$v\E(?: ms)? is outside the valid range for parameter "\Q$g\E"/, "(3) out of range: the log refuses $g = $v");
}
is($a->safe_psql('postgres', "SELECT current_setting('zklock.session_timeout'), current_setting('zklock.max_locks'),"
	  . " current_setting('zklock.stats_max')"),
	'10s|1024|1000', '(3) out of range: the defaults are in force');
lock_works($a, '(3) out of range in postgresql.conf');

done_testing();
