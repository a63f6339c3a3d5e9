#!/usr/bin/env bash
# make soak: builds zklock from this checkout in a private work tree,
# installs it into the PostgreSQL of PG_CONFIG (default Debian's 15), and
# runs the soak (test/soak/soak.pl) for SOAK_SECONDS seconds (default 1800)
# through prove, as test/run_all.sh runs the TAP tests; see the top of
# soak.pl for what it does and checks.  The last lines printed are the
# soak's figures and prove's verdict; the exit status is prove's.  The work
# directory, with the servers' logs, is kept when the soak fails (or with
# ZKLOCK_KEEP_WORK=1); every server started is stopped by pid at exit.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
. "$TOP/test/lib/common.sh"

SOAK_SECONDS=${SOAK_SECONDS:-1800}
PGXS_SRC=$(dirname "$(dirname "$("$PG_CONFIG" --pgxs)")")
WORK=$(make_workdir zklock-soak)
cleanup_on_exit
TREE=$WORK/tree
copy_tree "$TOP" "$TREE"
echo "work directory: $WORK (the soak runs as $RUN_USER for $SOAK_SECONDS s)"
"${AS_USER[@]}" make -s -C "$TREE" PG_CONFIG="$PG_CONFIG" -j"$(nproc)" >/dev/null
"${AS_ROOT[@]}" make -s -C "$TREE" PG_CONFIG="$PG_CONFIG" install >/dev/null
"${AS_USER[@]}" make -s -C "$TREE/test/tools" >/dev/null
cd "$TREE"
# The stage timeout of run_logged: the soak and ten minutes.
ZKLOCK_STAGE_TIMEOUT=$((SOAK_SECONDS + 600)) run_logged "$WORK/soak.log" \
	env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE \
	PATH="$PATH" PERL5LIB="$PGXS_SRC/test/perl:$TREE/test/lib" \
	PG_REGRESS="$PGXS_SRC/test/regress/pg_regress" TESTDIR="$TREE" PG_CONFIG="$PG_CONFIG" \
	SOAK_SECONDS="$SOAK_SECONDS" prove -v --timer test/soak/soak.pl
