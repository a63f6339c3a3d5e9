# Two limits an ordinary role cannot get around (issue 28, points 3 and 5),
# with the roles of README's privileges section (app_role):
#  (1) The longest zklock.root (255 bytes) and the longest lock names:
#      two semaphores named 253 and 255 slashes (each escaped to three
#      bytes, so the second's directory with "/locks" is the longest path
#      a slot holds) are two semaphores: with one permit each, app_role
#      holds the first and takes the second too, each lease in its own
#      leases/ directory; a mutex of the longest name is held at its path.
#  (2) zklock.max_hold_time_limit, the administrator's cap on
#      zklock.max_hold_time: app_role cannot set it (42501); with the cap
#      at 2s (ALTER SYSTEM, reload), a hold of app_role with
#      zklock.max_hold_time turned off (0) and one with it raised (1h) are
#      both given up (lost, ZK002 at the next call); with the cap at 1h,
#      app_role's own lower limit (1s) still applies.
#  (3) The psql guard (issue 28, point 4): every zklock script installed
#      (the full script of each version and every update) stops psql with
#      an \echo ... \quit line before its first statement, and psql -f of
#      the newest full script creates nothing.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use Test::More;
use PostgreSQL::Test::Utils;

my $root = '/' . ('r' x 254);
my $zk = zk_start(1);
my $a = zklock_node('a', $zk, root => $root, session_timeout => '3s');
readme_roles($a);

sub app_session
{
	my $s = bg_session($a);
	$s->query_safe('SET ROLE app_role');
	return ($s, $s->query_safe('SELECT pg_backend_pid()'));
}

# --- (1) the longest root and names

is(length($a->safe_psql('postgres', 'SHOW zklock.root')), 255, 'zklock.root is 255 bytes long');
my ($s1, $s1_pid) = app_session();
my ($s2, $s2_pid) = app_session();
my $short = "repeat('/', 253)";
my $long = "repeat('/', 255)";
like($s1->query_safe("SELECT zk_semaphore_acquire($short, 1, '10s')"), qr/^\d+$/,
	'app_role holds the one permit of the semaphore of 253 slashes');
is(bg_result($s2, "SELECT zk_semaphore_try($long, 1)"), 't',
	'... and another session takes the one permit of the semaphore of 255 slashes');
my $enc_short = '%2F' x 253;
my $enc_long = '%2F' x 255;
is(scalar(zk_ls($zk, "$root/$enc_short/leases")), 1, 'the first semaphore has one lease in its leases/');
is(scalar(zk_ls($zk, "$root/$enc_long/leases")), 1, '... and the second one in its own');
is($s1->query_safe("SELECT zk_semaphore_release($short)"), 't', 'the first semaphore is released');
is(bg_result($s2, "SELECT zk_semaphore_release($long)"), 't', '... and the second');
is(bg_result($s1, "SELECT zk_lock_acquire($long, '10s') > 0"), 't', 'a mutex of 255 slashes is held');
like(held_znode($a, $s1_pid, '/' x 255), qr{^\Q$root/$enc_long/\E_c_}, '... at its path under the root');
$s1->query_safe("SELECT zk_lock_release($long)");

# --- (2) the administrator's cap on hold time

is(sql_sqlstate($a, "SET ROLE app_role; SET zklock.max_hold_time_limit = '1h'"), '42501',
	'app_role cannot set zklock.max_hold_time_limit (42501)');
$a->safe_psql('postgres', "ALTER SYSTEM SET zklock.max_hold_time_limit = '2s'; SELECT pg_reload_conf()");
wait_until(sub { $s1->query_safe('SHOW zklock.max_hold_time_limit') eq '2s' }, 15, 'the cap to be read by app_role\'s session');

sub given_up
{
	my ($s, $pid, $setting, $name) = @_;
	$s->query_safe("SET zklock.max_hold_time = '$setting'");
	$s->query_safe("SELECT zk_lock_acquire('$name', '10s')");
	my $gone = wait_until(sub { lock_state($a, $pid, $name) eq 'lost' }, 30, "the hold of $name to be lost");
	my $st = bg_sqlstate($s, "SELECT zk_lock_token('$name')");
	bg_sqlstate($s, "SELECT zk_lock_release_all()");
	return $gone ? "lost $st" : 'held';
}

is(given_up($s1, $s1_pid, '0', 'capped-off'), 'lost ZK002',
	'cap 2s: a hold with zklock.max_hold_time turned off is given up (ZK002)');
is(given_up($s2, $s2_pid, '1h', 'capped-raised'), 'lost ZK002',
	'cap 2s: a hold with zklock.max_hold_time raised to 1h is given up (ZK002)');
$a->safe_psql('postgres', "ALTER SYSTEM SET zklock.max_hold_time_limit = '1h'; SELECT pg_reload_conf()");
wait_until(sub { $s1->query_safe('SHOW zklock.max_hold_time_limit') eq '1h' }, 15, 'the new cap to be read');
is(given_up($s1, $s1_pid, '1s', 'lowered'), 'lost ZK002',
	"cap 1h: app_role's own lower limit (1s) still gives its hold up");

# --- (3) the psql guard of every script installed

my $extdir = `$ENV{PG_CONFIG} --sharedir`;
chomp $extdir;
$extdir .= '/extension';
my @scripts = sort glob("$extdir/zklock--*.sql");
cmp_ok(scalar(@scripts), '>=', 5, 'the full scripts and updates are installed: ' . join(' ', map { s{.*/}{}r } @scripts));
for my $f (@scripts)
{
	my $base = $f =~ s{.*/}{}r;
	my $text = slurp_file($f);
	my ($before) = $text =~ /\A(.*?)^\\echo Use "(?:CREATE EXTENSION zklock|ALTER EXTENSION zklock UPDATE TO '[\d.]+')" to load this file\. \\quit$/ms;
	ok(defined $before && $before !~ /^\s*(?:CREATE|ALTER|GRANT|REVOKE|SELECT|DO|INSERT|DELETE|DROP)\b/mi,
		"$base: the guard comes before any statement");
}
my $default = $a->safe_psql('postgres', "SELECT default_version FROM pg_available_extensions WHERE name = 'zklock'");
$a->safe_psql('postgres', 'CREATE DATABASE guard');
my ($ret, $out, $err) = $a->psql('guard', slurp_file("$extdir/zklock--$default.sql") . "\nSELECT 'went on';");
like($out, qr/Use "CREATE EXTENSION zklock" to load this file/, "psql -f of zklock--$default.sql prints the guard's message");
unlike($out, qr/went on/, '... and stops psql');
is($a->safe_psql('guard', q{SELECT count(*) FROM pg_proc WHERE proname LIKE 'zk\_%'}), '0', '... having created nothing');

$s1->quit;
$s2->quit;
done_testing();
