# The roles and grants of README's privileges section, for the tests of
# what an ordinary role can do.
package ZklockTest::Roles;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use File::Basename qw(dirname);

our @EXPORT = qw(readme_roles);

=head1 Roles

=over

=item readme_roles($node, $dbname)

Creates the login roles app_role, ops_role and monitoring_role in $node
and runs, in database $dbname (default postgres), where zklock is
installed, the GRANT statements of README's "Installing" section, read
from README.md itself: a test of an ordinary role then has exactly the
rights README gives it.

=back

=cut

sub readme_roles
{
	my ($node, $dbname) = @_;
	my $readme = dirname(__FILE__) . '/../../../README.md';
	open(my $fh, '<', $readme) or die "cannot read $readme: $!";
	my $text = do { local $/; <$fh> };
	close($fh);
	$text =~ /^CREATE EXTENSION zklock;\n(.*?)^```/ms
	  or die "README.md: no privileges block after CREATE EXTENSION zklock";
	my $grants = $1;
	die "README.md: the privileges block grants nothing" unless $grants =~ /^GRANT /m;
	$node->safe_psql($dbname // 'postgres',
		"CREATE ROLE app_role LOGIN; CREATE ROLE ops_role LOGIN; CREATE ROLE monitoring_role LOGIN;\n"
		  . $grants);
	return;
}

1;
