# TLS to ZooKeeper through a local tunnel (issue 47), as doc/operations.md,
# "TLS to ZooKeeper", sets it up: Debian's libzookeeper_st has no TLS, so
# the worker talks plain ZooKeeper to stunnel4 on loopback, which talks TLS
# to the ensemble and checks its certificate.
#  (1) A ZooKeeper that accepts only TLS: secureClientPort and no
#      clientPort, with a keystore the test makes with keytool.  A plain
#      "ruok" to it gets no answer; the same over TLS gets "imok".
#  (2) Two clusters whose zklock.hosts is the tunnel: connected; one holds
#      a lock, the other's try fails and its acquire waits, and the lock is
#      handed over at the release; zk_lock_contenders names the holder
#      through the tunnel; stunnel logged the server's certificate as
#      accepted.
#  (3) The tunnel down: the worker's session is no longer connected, and a
#      user's acquire fails with ZK001 "ZooKeeper is not reachable" and a
#      hint naming zklock.hosts, the tunnel's address.  The tunnel back
#      within the session timeout: the same session, the hold still held.
#  (4) A tunnel that does not trust the server's certificate never
#      connects: the user sees the same ZK001, stunnel's log says why.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::RealBin/../lib";
use ZklockTest;
use ZklockTest::Cleanup qw(@holders);
use Test::More;
use PostgreSQL::Test::Utils;
use POSIX ();

my $stunnel = '/usr/bin/stunnel4';
for ($stunnel, '/usr/bin/keytool', '/usr/bin/openssl')
{
	plan skip_all => "$_ is not installed (test/install-deps.sh installs it)" unless -x $_;
}

my $dir = PostgreSQL::Test::Utils::tempdir('zktls');
my $zk_port = PostgreSQL::Test::Cluster::get_free_port();
my $tunnel_port = PostgreSQL::Test::Cluster::get_free_port();
my $pass = 'zklock-test-' . int(rand(1_000_000));

# A child process, stopped by pid however the test ends
# (ZklockTest::Cleanup calls ->crash on what is in @holders).
{

	package ChildProcess;

	sub crash
	{
		my ($self) = @_;
		return unless $self->{pid};
		kill 'TERM', $self->{pid};
		waitpid($self->{pid}, 0);
		$self->{pid} = 0;
		return;
	}
}

sub spawn
{
	my ($log, @cmd) = @_;
	my $pid = fork // die "fork: $!";
	if ($pid == 0)
	{
		open(STDIN, '<', '/dev/null') or POSIX::_exit(126);
		open(STDOUT, '>>', $log) or POSIX::_exit(126);
		open(STDERR, '>&', \*STDOUT) or POSIX::_exit(126);
		exec(@cmd) or POSIX::_exit(127);
	}
	my $p = bless { pid => $pid }, 'ChildProcess';
	push @holders, $p;
	return $p;
}

# ---------------------------------------------------------------------
# (1) The server's key and certificate, and a ZooKeeper on TLS only.
# ---------------------------------------------------------------------
run_command(
	[
		'keytool', '-genkeypair', '-alias', 'zk', '-keyalg', 'RSA', '-keysize', '2048',
		'-keystore', "$dir/zk.p12", '-storetype', 'PKCS12', '-storepass', $pass, '-keypass', $pass,
		'-dname', 'CN=127.0.0.1', '-ext', 'SAN=ip:127.0.0.1', '-validity', '2'
	]);
run_command([ 'keytool', '-exportcert', '-rfc', '-alias', 'zk', '-keystore', "$dir/zk.p12",
	'-storepass', $pass, '-file', "$dir/zk.pem" ]);
ok(-s "$dir/zk.pem", '(1) keytool made the server\'s key and exported its certificate');

mkdir "$dir/data" or die $!;
append_to_file(
	"$dir/zoo.cfg", "tickTime=500
initLimit=20
syncLimit=10
dataDir=$dir/data
secureClientPort=$zk_port
secureClientPortAddress=127.0.0.1
minSessionTimeout=1000
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=*
");
append_to_file(
	"$dir/log4j.properties", "log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$dir/zk.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] %m%n
");
# The jars of Debian's zookeeper, as test/zkserver.sh puts them together.
my $cp = join(':',
	grep { -r $_ }
	map { "/usr/share/java/$_.jar" }
	  qw(zookeeper zookeeper-jute slf4j-api slf4j-log4j12 log4j-1.2 netty-buffer netty-codec
	  netty-common netty-handler netty-resolver netty-transport netty-transport-native-epoll
	  netty-transport-native-unix-common metrics-core snappy-java commons-cli commons-io
	  jackson-annotations jackson-core jackson-databind));
spawn(
	"$dir/zk.out", 'java', '-Xmx256m', '-XX:+UseSerialGC', '-Djava.net.preferIPv4Stack=true',
	'-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory',
	"-Dzookeeper.ssl.keyStore.location=$dir/zk.p12", "-Dzookeeper.ssl.keyStore.password=$pass",
	'-Dzookeeper.ssl.clientAuth=none', "-Dlog4j.configuration=file:$dir/log4j.properties",
	'-cp', $cp, 'org.apache.zookeeper.server.quorum.QuorumPeerMain', "$dir/zoo.cfg");

# "ruok" over TLS (openssl s_client) or in plain text; the answer or ''.
sub ruok_tls
{
	my ($out) = run_command([ 'bash', '-c',
		"echo ruok | timeout 5 openssl s_client -quiet -connect 127.0.0.1:$zk_port 2>/dev/null" ]);
	return $out;
}

sub ruok_plain
{
	my ($out) = run_command([ 'bash', '-c',
		"exec 3<>/dev/tcp/127.0.0.1/$zk_port && printf ruok >&3 && timeout 3 cat <&3" ]);
	return $out;
}

wait_until(sub { ruok_tls() eq 'imok' }, 60, 'ZooKeeper answers over TLS')
  or BAIL_OUT("ZooKeeper on TLS did not start; see $dir/zk.log");
is(ruok_tls(), 'imok', '(1) over TLS, ZooKeeper answers ruok with imok');
is(ruok_plain(), '', '(1) in plain text, the same port answers nothing');
unlike(slurp_file("$dir/zoo.cfg"), qr/^clientPort/m, '(1) and there is no plain client port');

# ---------------------------------------------------------------------
# (2) The tunnel, and two clusters through it.
# ---------------------------------------------------------------------
sub tunnel_conf
{
	my ($name, $cafile) = @_;
	my $conf = "$dir/stunnel-$name.conf";
	unlink $conf;
	append_to_file(
		$conf, "foreground = yes
pid =
output = $dir/stunnel-$name.log
debug = notice
[zookeeper]
client = yes
accept = 127.0.0.1:$tunnel_port
connect = 127.0.0.1:$zk_port
CAfile = $cafile
verifyPeer = yes
checkIP = 127.0.0.1
");
	return $conf;
}

sub start_tunnel
{
	my ($conf) = @_;
	my $t = spawn("$dir/stunnel.out", $stunnel, $conf);
	wait_until(sub { my ($o) = run_command([ 'bash', '-c', "exec 3<>/dev/tcp/127.0.0.1/$tunnel_port && echo up" ]); $o eq 'up' },
		15, 'stunnel listens');
	return $t;
}

my $tunnel = start_tunnel(tunnel_conf('good', "$dir/zk.pem"));
my $tz = { connect => "127.0.0.1:$tunnel_port" };

my $a = zklock_node('a', $tz, session_timeout => '20s');
my $b = zklock_node('b', $tz, session_timeout => '20s');
for my $n ($a, $b)
{
	wait_until(sub { zk_status_of($n)->{state} eq 'connected' }, 30, $n->name . ' connects');
	is(zk_status_of($n)->{state}, 'connected', '(2) ' . $n->name . ': connected through the tunnel');
}

my $sa = bg_session($a);
my $sa_pid = $sa->query_safe('SELECT pg_backend_pid()');
is($sa->query_safe("SELECT zk_lock_acquire('tls-deploy', '10s') > 0"), 't', '(2) A holds tls-deploy');
is($b->safe_psql('postgres', "SELECT zk_lock_try('tls-deploy')"), 'f', '(2) B\'s try fails: A holds it');
is( $b->safe_psql('postgres', "SELECT holder->>'port', holder->>'pid' FROM zk_lock_contenders('tls-deploy') WHERE state = 'held'"),
	$a->port . "|$sa_pid",
	'(2) zk_lock_contenders on B names A\'s backend as the holder');
my $w = queue_waiter($b, $tz, 'tls-deploy', '30s');
$sa->query_safe("SELECT zk_lock_release('tls-deploy')");
my ($at, $out, $err) = waiter_grant($w);
ok(defined $at, '(2) A released: B\'s waiting acquire is granted') or diag($out, $err);
like(slurp_file("$dir/stunnel-good.log"), qr/Certificate accepted at depth=0: CN=127\.0\.0\.1/,
	'(2) stunnel checked the server\'s certificate');

# ---------------------------------------------------------------------
# (3) The tunnel down, then back.
# ---------------------------------------------------------------------
my $session_b = zk_status_of($b)->{session_id};
$tunnel->crash;
wait_until(sub { zk_status_of($a)->{state} ne 'connected' }, 30, 'A notices the tunnel is down');
my $state = zk_status_of($a)->{state};
isnt($state, 'connected', "(3) tunnel down: A's session is $state");
my ($ret, $o, $e) = $a->psql('postgres', "SELECT zk_lock_acquire('tls-other', '1s')");
like($e, qr/could not obtain ZooKeeper lock "tls-other": ZooKeeper is not reachable/,
	'(3) an acquire fails: ZooKeeper is not reachable');
like($e, qr/HINT:.*zklock\.hosts \("127\.0\.0\.1:$tunnel_port"\)/, '(3) the hint names zklock.hosts, the tunnel');
note "what the user sees: $e";

$tunnel = start_tunnel(tunnel_conf('good', "$dir/zk.pem"));
wait_until(sub { zk_status_of($b)->{state} eq 'connected' }, 30, 'B reconnects');
is(zk_status_of($b)->{session_id}, $session_b, '(3) tunnel back: B has the same session');
is(lock_state($b, $w->{pid}, 'tls-deploy'), 'held', '(3) and still holds tls-deploy');
$w->{s}->query_safe("SELECT zk_lock_release('tls-deploy')");
$w->{s}->quit;
wait_until(sub { zk_status_of($a)->{state} eq 'connected' }, 30, 'A reconnects');
is($sa->query_safe("SELECT zk_lock_try('tls-deploy')"), 't', '(3) A takes the lock again');
$sa->quit;
$tunnel->crash;

# ---------------------------------------------------------------------
# (4) A tunnel that trusts another certificate.
# ---------------------------------------------------------------------
run_command(
	[
		'openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1',
		'-keyout', "$dir/other.key", '-out', "$dir/other.pem", '-days', '2'
	]);
$tunnel = start_tunnel(tunnel_conf('wrong', "$dir/other.pem"));
wait_until(sub { slurp_file("$dir/stunnel-wrong.log") =~ /certificate verify failed|Rejected by CERT/ },
	30, 'stunnel refuses the server');
like(slurp_file("$dir/stunnel-wrong.log"), qr/certificate verify failed|Rejected by CERT/,
	'(4) a tunnel with the wrong CA file refuses the server\'s certificate');
($ret, $o, $e) = $a->psql('postgres', "SELECT zk_lock_acquire('tls-other', '1s')");
like($e, qr/ZooKeeper is not reachable/, '(4) and the user sees ZK001, ZooKeeper is not reachable');
isnt(zk_status_of($a)->{state}, 'connected', '(4) A is not connected');
$tunnel->crash;

done_testing();
