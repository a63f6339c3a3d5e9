#!/usr/bin/env bash
# The PostgreSQL majors that Debian 12 does not package, for the suite:
#
#   bash test/pgcache.sh 18   builds PostgreSQL 18 from Debian's postgresql-18
#                             source package (upstream tarball), with TAP
#                             support, and prints its pg_config;
#   bash test/pgcache.sh 17   unpacks Debian 13's postgresql-server-dev-17
#                             (headers and PGXS only: its programs need a
#                             newer C library) and prints its include dir.
#
# Both live in a cache outside the clone (ZKLOCK_PG_CACHE, default
# /var/cache/zklock as root, else ~/.cache/zklock) that later runs reuse:
# with the cache complete this only prints, and never touches the network.
# Packages come through a private sources list and private package lists
# under the cache, never through the machine's own apt sources, whose
# Debian mirror is only read to name the same mirror.  All the progress goes
# to stderr; stdout has the one path.
set -euo pipefail

major=${1:?usage: pgcache.sh 17|18}
if [ "$(id -u)" -eq 0 ]; then
	CACHE=${ZKLOCK_PG_CACHE:-/var/cache/zklock}
else
	CACHE=${ZKLOCK_PG_CACHE:-$HOME/.cache/zklock}
fi
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
say() { echo "pgcache.sh: $*" >&2; }

# One run at a time fills the cache; the others wait for it.
exec 9>"$CACHE/.lock-$major"
flock 9

# The Debian mirror the machine uses (deb822 or one-line sources).
mirror() {
	local m
	m=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	[ -n "$m" ] || m=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; exit } }' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
	[ -n "$m" ] || { say "no Debian mirror in the machine's apt sources"; return 1; }
	echo "${m%/}"
}

# private_apt NAME LINE: apt options for a private sources list holding LINE,
# with its own package lists, updated once a day at most.
APT=()
private_apt() {
	local name=$1 line=$2 dir=$CACHE/apt/$1
	mkdir -p "$dir/lists/partial" "$dir/archives/partial"
	echo "$line" >"$dir/sources.list"
	APT=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache::Archives=$dir/archives"
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
	if [ -z "$(find "$dir/lists" -maxdepth 1 -name '*_InRelease' -mmin -1440 2>/dev/null)" ]; then
		say "updating the private package lists ($name)"
		apt-get "${APT[@]}" -q update >&2
	fi
}

KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# What the suite needs of 18 besides the server, from its contrib: dblink
# (018, 040) and postgres_fdw (084).  (Not pg_cron: Debian 12 packages it
# for 15 only, and Debian's pg-cron source package is not on the mirror;
# 040 runs on 15 only, README says so.)  A cache built before is completed,
# not rebuilt, when it can be: the source is fetched again and only the
# modules built.
CONTRIB18='dblink postgres_fdw'
RECIPE18="server, $CONTRIB18"
# How the server itself is configured: a server built another way is built
# again (032 needs ICU, as Debian's own 18 has it).
SERVER18='--with-icu --with-zlib --with-readline --enable-tap-tests'

# Download and unpack the postgresql-18 source package into $1; print the
# source directory.
fetch18() {
	local src=$1 tarball
	private_apt unstable-src "deb-src [signed-by=$KEYRING] $(mirror) unstable main"
	rm -rf "$src"
	mkdir -p "$src"
	say "downloading the postgresql-18 source package"
	(cd "$src" && apt-get "${APT[@]}" -q source --download-only postgresql-18 >&2)
	tarball=$(find "$src" -maxdepth 1 -name 'postgresql-18_*.orig.tar.*' | head -n 1)
	[ -n "$tarball" ] || { say "no upstream tarball in the source package"; return 1; }
	tar -C "$src" -xf "$tarball"
	find "$src" -maxdepth 1 -type d -name 'postgresql-18*' | head -n 1
}

build18() {
	local prefix=$CACHE/pg18 src=$CACHE/pg18-src stamp start=$SECONDS jobs dir m server
	stamp=$prefix/.zklock-complete
	if [ -f "$stamp" ] && [ -x "$prefix/bin/pg_config" ] &&
		grep -qxF "recipe: $RECIPE18" "$stamp" &&
		grep -qxF "configure: $SERVER18" "$prefix/.zklock-server"; then
		echo "$prefix/bin/pg_config"
		return 0
	fi
	jobs=$(nproc)
	dir=$(fetch18 "$src") || return 1
	if [ -f "$prefix/.zklock-server" ] && [ -x "$prefix/bin/pg_config" ] &&
		grep -qxF "configure: $SERVER18" "$prefix/.zklock-server"; then
		# The same configuration: the modules alone, against the installed
		# server.
		say "completing the cached PostgreSQL 18 ($CONTRIB18)"
		server=no
	else
		rm -rf "$prefix"
		say "building PostgreSQL 18 into $prefix with $jobs jobs (log: $src/build.log)"
		server=yes
	fi
	# Debian's own patches move files to its per-major layout; the upstream
	# layout under one prefix is what a private installation wants.  No
	# documentation, no contrib module but those the suite runs.  -g stays:
	# the tests' gdb reads zklock's variables, and PGXS builds zklock with
	# the server's CFLAGS.  Without the server, only the headers the modules
	# need are generated.
	if ! (
		cd "$dir" &&
			# shellcheck disable=SC2086 # the options are words
			./configure -q --prefix="$prefix" $SERVER18 CFLAGS='-O2 -g' &&
			if [ "$server" = yes ]; then
				make -s -j"$jobs" && make -s install
			else
				make -s -j"$jobs" -C src/backend generated-headers
			fi &&
			for m in $CONTRIB18; do
				make -s -j"$jobs" -C "contrib/$m" && make -s -C "contrib/$m" install || exit 1
			done
	) >"$src/build.log" 2>&1; then
		tail -n 40 "$src/build.log" >&2
		say "build failed"
		return 1
	fi
	if [ "$server" = yes ]; then
		{ "$prefix/bin/pg_config" --version; echo "configure: $SERVER18"; } >"$prefix/.zklock-server"
		say "PostgreSQL 18 built in $((SECONDS - start)) s"
	fi
	# The tests run PostgreSQL as another user than root: all of it readable.
	chmod -R a+rX "$prefix"
	{ "$prefix/bin/pg_config" --version; echo "recipe: $RECIPE18"; } >"$stamp"
	say "PostgreSQL 18 ready in $((SECONDS - start)) s"
	rm -rf "$src"
	echo "$prefix/bin/pg_config"
}

headers17() {
	local dir=$CACHE/pg17 stamp deb
	stamp=$dir/.zklock-complete
	if [ -f "$stamp" ]; then
		echo "$dir/usr/include/postgresql/17/server"
		return 0
	fi
	private_apt trixie "deb [signed-by=$KEYRING] $(mirror) trixie main"
	rm -rf "$dir" "$CACHE/pg17-deb"
	mkdir -p "$CACHE/pg17-deb"
	say "downloading Debian 13's postgresql-server-dev-17 and libpq-dev"
	(cd "$CACHE/pg17-deb" && apt-get "${APT[@]}" -q download postgresql-server-dev-17 libpq-dev >&2)
	for deb in "$CACHE"/pg17-deb/*.deb; do
		dpkg-deb -x "$deb" "$dir"
	done
	rm -rf "$CACHE/pg17-deb"
	chmod -R a+rX "$dir"
	touch "$stamp"
	echo "$dir/usr/include/postgresql/17/server"
}

case "$major" in
18) build18 ;;
17) headers17 ;;
*) say "unknown major $major (17 or 18)"; exit 2 ;;
esac
