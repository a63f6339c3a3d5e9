#!/usr/bin/env bash
# ci_run_check.sh: .ci/run, the CI entry point, must let no variable through
# that picks, shortens or keeps a part of the suite.  Every such name the
# suite reads is set: the SOAK_, FUZZ_, EXPLORE_, ZKLOCK_ and PROVE_
# variables written in the text files under test/ and .ci/ and in the
# Makefile (grep -I: the fuzz targets built under test/ are no text), and
# PG_CONFIG and HARNESS_OPTIONS.  .ci/run is then run with its last line,
# the start of the suite, replaced by a listing of the environment, and
# none may be left.  Run by `make check-static`.
set -euo pipefail

top=${1:-.}
names=$(grep -rIhoE '\b(SOAK|FUZZ|EXPLORE|ZKLOCK|PROVE)_[A-Z0-9_]*[A-Z0-9]\b' \
	"$top/test" "$top/.ci" "$top/Makefile" | LC_ALL=C sort -u)
names="$names PG_CONFIG HARNESS_OPTIONS"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/.ci"
sed 's#^exec bash test/run_all.sh$#exec env#' "$top/.ci/run" > "$work/.ci/run"
if ! grep -q '^exec env$' "$work/.ci/run"; then
	echo ".ci/run: its last line is no longer 'exec bash test/run_all.sh' (update $0)"
	exit 1
fi

settings=()
for n in $names; do
	settings+=("$n=1")
done
left=$(env "${settings[@]}" bash "$work/.ci/run" | sed -n 's/=.*//p' | grep -Fx -f <(printf '%s\n' $names) || true)
if [ -n "$left" ]; then
	echo ".ci/run lets through what shortens the suite:" $left
	exit 1
fi
