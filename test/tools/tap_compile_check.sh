#!/bin/bash
# Every TAP script compiles: `perl -c` with the test library and PostgreSQL's
# own test modules on the include path.  A script that dies while it is
# compiled (a subroutine of its own that the library now exports, under
# "use warnings FATAL") prints no plan and no line of its own, so that only
# prove's "No plan found" would say so, at the end of a run; this says which
# script and why, in seconds.
# Usage: tap_compile_check.sh SRCDIR PGXS_PERL_DIR
set -u
srcdir=$1
pgperl=$2
status=0
for f in "$srcdir"/test/t/*.pl; do
	out=$(perl -I "$srcdir/test/lib" -I "$pgperl" -c "$f" 2>&1) ||
		{ echo "$out" | grep -v ' syntax OK$'; echo "a TAP script does not compile: $f"; status=1; }
done
exit $status
