# The checker's tables and functions, made in every cluster by _setup (the
# hold table zkc_hold, the peers' connection strings zkc_peer, and
# zkc_read(), which reads the shared counter through dblink), the
# postgresql.conf lines the checker needs (checker_conf) and _lit (an SQL
# string literal).  What is committed where and why: test/README.md.
package ZklockChecker::Schema;

use strict;
use warnings FATAL => 'all';

use Carp;
use Exporter 'import';

our @EXPORT = qw(checker_conf);
our @EXPORT_OK = qw(_lit _setup);

=head1 ZklockChecker::Schema

=over

=item checker_conf()

postgresql.conf lines the checker needs (commit timestamps); pass them as
C<< zklock_node($name, $zk, conf => checker_conf()) >>.

=back

=cut

sub checker_conf
{
	return "track_commit_timestamp = on\n";
}

sub _lit
{
	my ($s) = @_;
	$s =~ s/'/''/g;
	return "'$s'";
}

# Tables and functions in every cluster; the hold tables start empty.
sub _setup
{
	my ($nodes) = @_;
	for my $node (@$nodes)
	{
		my $tct = $node->safe_psql('postgres', 'SHOW track_commit_timestamp');
		croak 'ZklockChecker: ' . $node->name
		  . ' needs track_commit_timestamp = on (use checker_conf())'
		  unless $tct eq 'on';
		my $peers = join(",\n",
			map { '(' . _lit('zkc_' . $_->name) . ', ' . _lit($_->connstr('postgres')) . ')' }
			  grep { $_ != $node } @$nodes);
		$peers = "INSERT INTO zkc_peer VALUES\n$peers;" if $peers ne '';
		$node->safe_psql('postgres', qq{
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
DROP FUNCTION IF EXISTS zkc_read();
DROP TABLE IF EXISTS zkc_hold, zkc_peer;
CREATE TABLE zkc_hold (
	cluster text NOT NULL,
	session int NOT NULL,
	iter int NOT NULL,
	token bigint NOT NULL,
	read_value bigint NOT NULL,
	written_value bigint NOT NULL,
	seen_token bigint NOT NULL,
	t_request timestamptz NOT NULL,
	t_start timestamptz NOT NULL,
	t_end timestamptz NOT NULL,
	PRIMARY KEY (session, iter));
CREATE INDEX ON zkc_hold (written_value);
CREATE INDEX ON zkc_hold (token);
CREATE TABLE zkc_peer (name text PRIMARY KEY, connstr text NOT NULL);
$peers
-- The shared counter: the largest increment committed in any cluster, and
-- the largest token committed with one (what a fencing store would hold).
-- A peer's query runs on the connection this session keeps for it; when
-- that fails (fail_on_error false: a NOTICE and no row), the peer most
-- likely restarted since, so the connection is opened again and the query
-- run once more, now raising its error: a peer is never skipped, and while
-- it is down the read fails and the transaction rolls back.
CREATE FUNCTION zkc_read(OUT read_value bigint, OUT seen_token bigint)
LANGUAGE plpgsql AS \$f\$
DECLARE
	p record;
	w bigint;
	t bigint;
	q constant text := 'SELECT coalesce(max(written_value), 0), coalesce(max(token), 0) FROM zkc_hold';
BEGIN
	SELECT coalesce(max(h.written_value), 0), coalesce(max(h.token), 0)
	  INTO read_value, seen_token FROM zkc_hold h;
	FOR p IN SELECT * FROM zkc_peer ORDER BY name LOOP
		IF p.name <> ALL (coalesce(dblink_get_connections(), '{}')) THEN
			PERFORM dblink_connect(p.name, p.connstr);
		END IF;
		SELECT r.w, r.t INTO w, t FROM dblink(p.name, q, false) AS r(w bigint, t bigint);
		IF NOT FOUND THEN
			PERFORM dblink_disconnect(p.name);
			PERFORM dblink_connect(p.name, p.connstr);
			SELECT r.w, r.t INTO STRICT w, t FROM dblink(p.name, q) AS r(w bigint, t bigint);
		END IF;
		read_value := greatest(read_value, w);
		seen_token := greatest(seen_token, t);
	END LOOP;
END
\$f\$;
});
	}
	return;
}

1;
