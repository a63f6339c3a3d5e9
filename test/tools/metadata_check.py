#!/usr/bin/env python3
"""The package metadata agrees with the project: `make check-static` runs this.

- META.json's PostgreSQL prerequisite is the range of majors that doc/majors.md's table
  lists (">= 15.0.0, < 19.0.0" for 15 to 18), so that PGXN tooling neither refuses a
  supported major nor offers an unsupported one;
- META.json's version and its provided extension's version are zklock.control's
  default_version (x.y as x.y.0), and so is the version of debian/changelog's first entry;
- every version that has an update script (zklock--a--b.sql) has an entry in
  debian/changelog.

usage: metadata_check.py [TREE]   (default .)
Prints each disagreement and "metadata: ... 0 disagreements"; exits 1 on any.
"""
import glob
import json
import os
import re
import sys


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad = []
    with open(os.path.join(root, "doc", "majors.md"), encoding="utf-8") as f:
        majors = sorted(int(m) for m in re.findall(r"^\| (\d+) \|", f.read(), re.M))
    if not majors:
        bad.append("doc/majors.md: no table of majors")
        majors = [0]
    with open(os.path.join(root, "META.json"), encoding="utf-8") as f:
        meta = json.load(f)
    want = ">= %d.0.0, < %d.0.0" % (majors[0], majors[-1] + 1)
    got = meta.get("prereqs", {}).get("runtime", {}).get("requires", {}).get("PostgreSQL")
    if got != want:
        bad.append("META.json: PostgreSQL %r, doc/majors.md lists %d to %d: %r"
                   % (got, majors[0], majors[-1], want))
    with open(os.path.join(root, "zklock.control"), encoding="utf-8") as f:
        default = re.search(r"^default_version\s*=\s*'([^']+)'", f.read(), re.M).group(1)
    full = default + ".0"
    if meta.get("version") != full:
        bad.append("META.json: version %r, zklock.control's is %r" % (meta.get("version"), full))
    for name, p in meta.get("provides", {}).items():
        if p.get("version") != full:
            bad.append("META.json: provides %s %r, zklock.control's is %r" % (name, p.get("version"), full))
    with open(os.path.join(root, "debian", "changelog"), encoding="utf-8") as f:
        changelog = f.read()
    entries = re.findall(r"^zklock \(([^)]+)\)", changelog, re.M)
    if not entries or entries[0].split("-")[0] != full:
        bad.append("debian/changelog: first entry %r, zklock.control's version is %r"
                   % (entries[0] if entries else None, full))
    for script in glob.glob(os.path.join(root, "zklock--*--*.sql")):
        version = re.search(r"--([\d.]+)\.sql$", script).group(1) + ".0"
        if not any(e.split("-")[0] == version for e in entries):
            bad.append("debian/changelog: no entry for %s (%s)" % (version, os.path.basename(script)))
    for b in bad:
        print(b)
    print("metadata: PostgreSQL %d to %d, version %s, %d changelog entries, %d disagreements"
          % (majors[0], majors[-1], full, len(entries), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
