#!/usr/bin/env bash
# Builds the Debian package postgresql-15-zklock from a copy of the tree
# (dpkg-buildpackage -us -uc -b, as the unprivileged run user), checks what
# it holds and that META.json, debian/changelog and zklock.control agree on
# the version, installs it into the system's PostgreSQL 15 with apt-get (as
# root, or through sudo), and runs the REGRESS suite with make installcheck
# against a private cluster and ZooKeeper that use only the package's files.
# Then it stops every server by pid, removes the package, and puts back the
# zklock files that were in the system before (what `make install` had put
# there, if anything), checking they are the same as before.
#
# Each check prints one "test NAME ... ok|FAILED" line, as pg_regress does
# for its tests (test/run_all.sh counts both alike); the last line printed
# is "package: N passed, N failed" and the exit status is non-zero if
# anything failed.  The work directory is kept on failure, or with
# ZKLOCK_KEEP_WORK=1.  A system where postgresql-15-zklock is already
# installed is refused, since the test would have to remove it.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
ZKSERVER=$TOP/test/zkserver.sh
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
. "$TOP/test/lib/common.sh"

PKG=postgresql-15-zklock
PASSED=0
FAILED=0
WORK=
INSTALLED=0     # 1 while the package may be in the system
BACKED_UP=0     # 1 once the system's zklock files are saved

say() { printf '\n==== %s ====\n' "$*"; }

# check NAME COMMAND...: one pg_regress-style result line for COMMAND.
check() {
	local name=$1
	shift
	if "$@"; then
		echo "test $name ... ok"
		PASSED=$((PASSED + 1))
	else
		echo "test $name ... FAILED"
		FAILED=$((FAILED + 1))
	fi
}

fail_line() {
	echo "test $1 ... FAILED"
	FAILED=$((FAILED + 1))
}

# A failure after which nothing else can be checked.
fail_now() {
	fail_line "$1"
	finish
}

finish() {
	echo "package: $PASSED passed, $FAILED failed"
	if [ "$FAILED" -eq 0 ]; then exit 0; else exit 1; fi
}

# However the script ends: end what run_logged runs, stop every server under
# WORK by pid, take the package out and put the system's files back, then
# remove WORK unless the run failed or ZKLOCK_KEEP_WORK=1.
# shellcheck disable=SC2317 # run by the EXIT trap
package_exit() {
	local rc=$?
	trap - EXIT INT TERM HUP
	kill_current
	if [ -n "$WORK" ]; then
		stop_all_under "$WORK"
		restore_system || rc=1
		if [ "$rc" -eq 0 ] && [ "${ZKLOCK_KEEP_WORK:-0}" != 1 ]; then
			rm -rf "$WORK"
		else
			echo "work directory kept: $WORK" >&2
		fi
	fi
	exit "$rc"
}
trap package_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

LIBDIR=$("$PG_CONFIG" --pkglibdir)
EXTDIR=$("$PG_CONFIG" --sharedir)/extension

# The zklock files in the system (relative to /, for tar): what `make
# install` puts there, and the package too.
system_files() {
	local f
	for f in "$LIBDIR"/zklock.so "$LIBDIR"/bitcode/zklock "$LIBDIR"/bitcode/zklock.index.bc \
		"$EXTDIR"/zklock.control "$EXTDIR"/zklock--*.sql; do
		[ -e "$f" ] && echo "${f#/}"
	done
	return 0
}

# One line per file (path, mode, owner, checksum) of the system's zklock
# files: equal before and after means the system is as it was.
fingerprint() {
	local files
	mapfile -t files < <(system_files)
	[ ${#files[@]} -gt 0 ] || return 0
	(cd / && find "${files[@]}" -type f -printf '%p %m %u:%g ' -exec md5sum {} \; | sort)
}

# Take the package out (if in) and put the saved files back.
restore_system() {
	local ok=0
	if [ "$INSTALLED" = 1 ]; then
		say "removing $PKG"
		"${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive dpkg --purge "$PKG" || ok=1
		INSTALLED=0
	fi
	if [ "$BACKED_UP" = 1 ]; then
		if [ -s "$WORK/before.list" ]; then
			"${AS_ROOT[@]}" tar -C / -xpf "$WORK/before.tar" || ok=1
		fi
		fingerprint >"$WORK/after.fp" || ok=1
		if cmp -s "$WORK/before.fp" "$WORK/after.fp"; then
			echo "the system's zklock files are as before the test"
		else
			echo "the system's zklock files differ from before the test:" >&2
			diff "$WORK/before.fp" "$WORK/after.fp" >&2 || true
			ok=1
		fi
		BACKED_UP=0
	fi
	return $ok
}

# Every installed file of the package has the checksum the package records.
# shellcheck disable=SC2317 # called through check
package_intact() {
	local out
	out=$(dpkg --verify "$PKG") || return 1
	[ -z "$out" ] || { echo "$out"; return 1; }
}

say "dependencies"
bash "$TOP/test/install-deps.sh"

if dpkg-query -W -f='${db:Status-Status}' "$PKG" 2>/dev/null | grep -qx installed; then
	echo "$PKG is installed; this test installs and removes it: remove it first" >&2
	fail_now "$PKG not installed before the test"
fi

WORK=$(make_workdir zklock-package)
echo "work directory: $WORK (builds and servers run as $RUN_USER)"

# dpkg-buildpackage writes the .deb files to the parent of the tree: WORK.
TREE=$WORK/zklock
copy_tree "$TOP" "$TREE"

say "META.json, debian/changelog and zklock.control"
check "META.json is valid PGXN meta-spec 1.0.0" /usr/bin/python3 - "$TREE" <<'EOF'
import json, os, re, sys
tree = sys.argv[1]
try:
    meta = json.load(open(os.path.join(tree, "META.json")))
except ValueError as e:
    sys.exit("META.json: not JSON: %s" % e)
errors = []
semver = re.compile(r"^\d+\.\d+\.\d+$")
for key in ("name", "abstract", "maintainer", "license", "provides", "meta-spec", "version"):
    if key not in meta:
        errors.append("no %s" % key)
if meta.get("meta-spec", {}).get("version") != "1.0.0":
    errors.append("meta-spec version is not 1.0.0")
if meta.get("name") != "zklock":
    errors.append("name is not zklock")
if meta.get("license") != "postgresql":
    errors.append("license is not postgresql")
if not semver.match(str(meta.get("version", ""))):
    errors.append("version is not a semantic version")
for ext, p in meta.get("provides", {}).items():
    for key in ("file", "version"):
        if key not in p:
            errors.append("provides.%s has no %s" % (ext, key))
    if "file" in p and not os.path.isfile(os.path.join(tree, p["file"])):
        errors.append("provides.%s.file %s is not in the tree" % (ext, p["file"]))
    if not semver.match(str(p.get("version", ""))):
        errors.append("provides.%s.version is not a semantic version" % ext)
if "zklock" not in meta.get("provides", {}):
    errors.append("provides has no zklock")
pg = meta.get("prereqs", {}).get("runtime", {}).get("requires", {}).get("PostgreSQL")
if not pg or "15" not in pg:
    errors.append("prereqs do not name PostgreSQL 15")
for e in errors:
    print("META.json: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
EOF

META_VERSION=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$TREE/META.json")
META_PROVIDES=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["provides"]["zklock"]["version"])' "$TREE/META.json")
DEB_VERSION=$(dpkg-parsechangelog -l "$TREE/debian/changelog" -S Version)
CONTROL_VERSION=$(sed -nE "s/^default_version *= *'([^']*)'.*/\1/p" "$TREE/zklock.control")
echo "META.json $META_VERSION (provides zklock $META_PROVIDES), debian/changelog $DEB_VERSION, zklock.control $CONTROL_VERSION"
check "META.json's version is its provided zklock's" test "$META_VERSION" = "$META_PROVIDES"
# A native package's version is the upstream one; a -N revision would follow it.
check "debian/changelog's version is META.json's" test "${DEB_VERSION%-*}" = "$META_VERSION"
check "zklock.control's default_version is META.json's major.minor" \
	test -n "$CONTROL_VERSION" -a "$CONTROL_VERSION.0" = "$META_VERSION"

say "dpkg-buildpackage -us -uc -b"
rc=0
# shellcheck disable=SC2016 # $1 is the inner shell's
run_logged "$WORK/build.log" bash -c 'cd "$1" && dpkg-buildpackage -us -uc -b' _ "$TREE" >/dev/null || rc=$?
tail -n 25 "$WORK/build.log"
DEB=$WORK/${PKG}_${DEB_VERSION}_$(dpkg --print-architecture).deb
if [ "$rc" -ne 0 ] || [ ! -f "$DEB" ]; then
	fail_now "dpkg-buildpackage builds $(basename "$DEB")"
fi
check "dpkg-buildpackage builds $(basename "$DEB")" true

say "contents of $(basename "$DEB")"
dpkg-deb -f "$DEB" Package Version Depends
dpkg-deb -c "$DEB" | awk '{print $NF}' | sed 's|^\./|/|' >"$WORK/deb.list"
grep -vE '/$|/bitcode/' "$WORK/deb.list"
for f in "$LIBDIR/zklock.so" "$EXTDIR/zklock.control" "$EXTDIR/zklock--1.0.sql" \
	"$EXTDIR/zklock--1.0--1.1.sql" "$EXTDIR/zklock--1.1--1.2.sql" "$EXTDIR/zklock--1.2--1.3.sql" \
	"$EXTDIR/zklock--1.3--1.4.sql" "$EXTDIR/zklock--1.4--1.5.sql" \
	"$EXTDIR/zklock--$CONTROL_VERSION.sql"; do
	check "package holds $f" grep -qxF "$f" "$WORK/deb.list"
done
check "package's version is debian/changelog's" test "$(dpkg-deb -f "$DEB" Version)" = "$DEB_VERSION"
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
check "package depends on postgresql-15" grep -qE '(^|, )postgresql-15( |,|$)' <<<"$DEPENDS"
check "package depends on the ZooKeeper C client library" grep -qE '(^|, )libzookeeper-st[0-9]' <<<"$DEPENDS"

say "saving the system's zklock files"
system_files >"$WORK/before.list"
fingerprint >"$WORK/before.fp"
if [ -s "$WORK/before.list" ]; then
	# shellcheck disable=SC2046 # one path per line, none with spaces
	"${AS_ROOT[@]}" tar -C / -cpf "$WORK/before.tar" $(cat "$WORK/before.list")
	sed 's|^|/|' "$WORK/before.list"
else
	echo "(none)"
fi
BACKED_UP=1

say "apt-get install ./$(basename "$DEB")"
INSTALLED=1
rc=0
"${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$DEB" || rc=$?
[ "$rc" -eq 0 ] || fail_now "apt-get installs $(basename "$DEB")"
check "apt-get installs $(basename "$DEB")" true
owner=$(dpkg -S "$LIBDIR/zklock.so" 2>/dev/null | cut -d: -f1 || true)
echo "dpkg -S $LIBDIR/zklock.so: $owner"
check "the installed zklock.so is the package's (dpkg -S)" test "$owner" = "$PKG"
# Every file of the package, as installed, has the checksum the package records.
check "the installed files match the package (dpkg --verify)" package_intact

say "ZooKeeper and PostgreSQL for make installcheck"
# A second, unbuilt copy of the tree: its make installcheck can only use
# the installed files (PGXS's installcheck builds nothing; checked below).
CHECK=$WORK/check
copy_tree "$TOP" "$CHECK"
# The settings run_all.sh gives its installcheck cluster.
if ! ZK_CONNECT=$("${AS_USER[@]}" bash "$ZKSERVER" start "$WORK/zk" 1) ||
	! pg_init "$WORK/pg" "$ZK_CONNECT" zklock_package \
		"zklock.session_timeout = '10s'" "max_prepared_transactions = 10" ||
	! pg_start "$WORK/pg"; then
	fail_now "ZooKeeper and PostgreSQL start"
fi
echo "ZooKeeper at $ZK_CONNECT; PostgreSQL on 127.0.0.1:$(cat "$WORK/pg/port"), socket in $WORK/pg"
PSQL=(env PGHOST="$WORK/pg" PGPORT="$(cat "$WORK/pg/port")" PGUSER=postgres "$PGBIN/psql" -X -At -d postgres)
dlpath=$("${AS_USER[@]}" "${PSQL[@]}" -c "SELECT setting FROM pg_settings WHERE name = 'dynamic_library_path'")
echo "dynamic_library_path = $dlpath, \$libdir = $LIBDIR"
# shellcheck disable=SC2016 # $libdir is PostgreSQL's
check "the server loads libraries from the package's directory only" test "$dlpath" = '$libdir'

say "pg_regress against the installed package"
rc=0
run_logged "$WORK/regress.log" env PGHOST="$WORK/pg" PGPORT="$(cat "$WORK/pg/port")" PGUSER=postgres \
	PATH="$PATH" make -C "$CHECK" PG_CONFIG="$PG_CONFIG" installcheck ISOLATION= TAP_TESTS= || rc=$?
# pg_regress printed its own result lines; count them in.
p=$(grep -cE '\.\.\. (ok|failed \(ignored\))( |$)' "$WORK/regress.log" || true)
f=$(grep -cE '\.\.\. FAILED' "$WORK/regress.log" || true)
PASSED=$((PASSED + p))
FAILED=$((FAILED + f))
if [ "$rc" -ne 0 ]; then
	[ "$f" -gt 0 ] || fail_line "make installcheck runs the suite (exit $rc)"
	if [ -f "$CHECK/regression.diffs" ]; then
		say "regression.diffs"
		head -n 300 "$CHECK/regression.diffs"
	fi
	say "tail of the PostgreSQL log"
	tail -n 40 "$WORK/pg/server.log" || true
elif [ "$p" -eq 0 ]; then
	fail_line "make installcheck ran a test"
fi
built=$(cd "$CHECK" && find . \( -name '*.so' -o -name '*.o' -o -name '*.bc' -o -name "zklock--$CONTROL_VERSION.sql" \) -print)
[ -z "$built" ] || echo "built in the test's tree: $built"
check "make installcheck built nothing (the server ran the package's files)" test -z "$built"
check "the installed files still match the package (dpkg --verify)" package_intact

pg_stop "$WORK/pg"
bash "$ZKSERVER" stop "$WORK/zk"

if restore_system; then
	check "the system's zklock files are as before the test" true
else
	check "the system's zklock files are as before the test" false
fi
finish
