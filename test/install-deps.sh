#!/usr/bin/env bash
# Installs what zklock needs to build and test on Debian 12, if missing:
# PostgreSQL 15 with PGXS, the ZooKeeper C client and Java server, IPC::Run
# for the TAP tests, a C toolchain, and the peer clients that the interop
# tests and the benchmark drive: Apache Curator (with a JDK to compile the
# small Java programs) and kazoo; gnuplot draws the benchmark's chart; gdb
# lets a test make a backend forget its slots, as a bug would;
# pg-bsd-indent and cppcheck keep the C sources in PostgreSQL's form
# (make check-static); linux-perf samples the benchmark's profile
# (bench/profile.sh).  The integration tests drive the programs users run
# around PostgreSQL: pgbouncer, pg_cron, alembic (with psycopg2), the
# Prometheus exporter and promtool (Debian's prometheus, for `promtool
# check rules` and `promtool test rules` of monitoring/zklock_rules.yaml),
# stunnel4 (the TLS tunnel to a ZooKeeper that accepts only TLS), Django
# (its migrate, with the recipe of examples/django);
# debhelper and postgresql-server-dev-all build the Debian package.
# bison, flex, readline, zlib and ICU build PostgreSQL 18 from source
# (test/pgcache.sh), which Debian 12 does not package.  clang and
# its runtime libraries (libFuzzer, the sanitizers) build the fuzz targets
# (test/fuzz).  Idempotent:
# with everything present it only checks, and never touches the network.
#
# install-deps.sh --demo installs only what the demo (test/demo.sh) needs:
# PostgreSQL 15 with its server headers, the ZooKeeper C client (headers
# from libzookeeper-mt-dev, the single-threaded library the worker links
# from libzookeeper-st2) and server,
# and a compiler.  It never upgrades a package that is already installed:
# it asks apt-get for its plan first (-s) and stops, naming them, when the
# plan would upgrade any (on a host with a live cluster, an upgrade of
# PostgreSQL's packages is the DBA's decision, not the demo's).
set -euo pipefail

DEMO=no
[ "${1:-}" != --demo ] || DEMO=yes

PACKAGES=(postgresql-15 postgresql-server-dev-15 libzookeeper-mt-dev libzookeeper-st2 zookeeper
	libipc-run-perl default-jdk-headless build-essential
	libcurator-recipes-java libpostgresql-jdbc-java python3-kazoo gnuplot-nox gdb
	pg-bsd-indent cppcheck linux-perf
	pgbouncer postgresql-15-cron python3-alembic python3-psycopg2 python3-django python3-hypothesis
	prometheus-postgres-exporter prometheus stunnel4 debhelper dpkg-dev postgresql-server-dev-all
	bison flex libreadline-dev zlib1g-dev libicu-dev pkg-config
	clang libclang-rt-14-dev)
DEMO_PACKAGES=(postgresql-15 postgresql-server-dev-15 libzookeeper-mt-dev libzookeeper-st2 zookeeper
	build-essential)
[ "$DEMO" = no ] || PACKAGES=("${DEMO_PACKAGES[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -eq 0 ]; then
		SUDO=()
	elif command -v sudo >/dev/null; then
		SUDO=(sudo)
	else
		echo "install-deps.sh: missing ${missing[*]}, and not root and no sudo" >&2
		exit 1
	fi
	echo "install-deps.sh: installing ${missing[*]}" >&2

	# Package scripts would start Debian's own PostgreSQL cluster and a
	# system ZooKeeper listening on all interfaces.  The tests need neither
	# (they run private servers on loopback), so forbid service starts for
	# the duration of the install, unless the machine already has a policy.
	policy=/usr/sbin/policy-rc.d
	if [ ! -e "$policy" ]; then
		trap '"${SUDO[@]}" rm -f "$policy"' EXIT
		printf '#!/bin/sh\n# Temporary, from zklock test/install-deps.sh\nexit 101\n' |
			"${SUDO[@]}" tee "$policy" >/dev/null
		"${SUDO[@]}" chmod 755 "$policy"
	fi

	"${SUDO[@]}" apt-get update
	if [ "$DEMO" = yes ]; then
		# "Inst NAME [OLD] (NEW ...)": an installed package would be upgraded.
		upgrades=$(apt-get -s install --no-upgrade "${missing[@]}" | awk '$1 == "Inst" && $3 ~ /^\[/ { print $2 }')
		if [ -n "$upgrades" ]; then
			echo "install-deps.sh: installing ${missing[*]} would upgrade installed packages:" \
				$upgrades >&2
			echo "install-deps.sh: the demo upgrades nothing; upgrade them yourself, or install" \
				"${missing[*]} by hand, then run the demo again" >&2
			exit 1
		fi
	fi
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-upgrade "${missing[@]}"
fi

# Builds and tests use the pg_config they are given (PG_CONFIG, by default
# Debian's 15) explicitly; a pg_config earlier on PATH from another major
# would make a plain `make` build against the wrong server headers.
PG15_CONFIG=/usr/lib/postgresql/15/bin/pg_config
[ -x "$PG15_CONFIG" ] || { echo "install-deps.sh: $PG15_CONFIG not found" >&2; exit 1; }
WANT_CONFIG=${PG_CONFIG:-$PG15_CONFIG}
WANT_BIN=$(dirname "$WANT_CONFIG")
if ! command -v pg_config >/dev/null; then
	echo "install-deps.sh: no pg_config on PATH; add $WANT_BIN to PATH" >&2
	exit 1
fi
if [ "$(pg_config --version)" != "$("$WANT_CONFIG" --version)" ]; then
	echo "install-deps.sh: pg_config on PATH ($(command -v pg_config)) is" \
		"'$(pg_config --version)', not $("$WANT_CONFIG" --version);" \
		"put $WANT_BIN first on PATH" >&2
	exit 1
fi

# Debian's auto-created cluster (15/main) is not used: the tests initdb
# their own clusters on free loopback ports, and nothing here starts it.
exit 0
