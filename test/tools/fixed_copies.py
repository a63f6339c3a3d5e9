#!/usr/bin/env python3
"""Every copy into a buffer in src/, and the length check that guards it: `make check-static` runs this.

A name, path or text that crosses a buffer of fixed size must either fit whole
or be refused whole before anything is sent: a value cut short is another
value (a lock node's name cut short is a path that does not exist, and a
watch on it answers ZNONODE at once).  This tool finds every call that copies
into a buffer (strlcpy, strncpy, strcpy, strcat, strlcat, memcpy, memmove,
snprintf, sprintf) in the C files under src/, and looks each up in
test/tools/fixed_copies.txt, which says for each what guards it.

fixed_copies.txt: one entry per copy, blank lines and lines starting with
'#' aside:

    FILE | CALL | GUARD

FILE is the path under the tree, CALL the call as written with its spaces
collapsed (from the function's name to its closing parenthesis), GUARD where
the length is checked, or why the source cannot be longer than the buffer.

usage: fixed_copies.py [TREE]   (default .)
Prints each copy with its line and guard; exits 1 when a copy has no entry
(add one, naming its guard) or an entry names a copy that no longer exists.
"""
import os
import re
import sys

FUNCS = ("strlcpy", "strncpy", "strcpy", "strlcat", "strcat", "memcpy", "memmove",
         "snprintf", "sprintf")
CALL = re.compile(r"(?<![A-Za-z0-9_])(%s)\s*\(" % "|".join(FUNCS))


def calls(text):
    """(line, call) of each copy in a C file's text, its spaces collapsed."""
    # Comments and strings could hold the names: blank the comments only
    # (a call's own string arguments are part of its text).
    blanked = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    for m in CALL.finditer(blanked):
        depth = 0
        i = m.end() - 1
        while i < len(blanked):
            c = blanked[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    break
            elif c == '"':
                i += 1
                while i < len(blanked) and blanked[i] != '"':
                    i += 2 if blanked[i] == "\\" else 1
            i += 1
        line = blanked.count("\n", 0, m.start()) + 1
        yield line, " ".join(blanked[m.start():i + 1].split())


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    registry = {}
    with open(os.path.join(root, "test", "tools", "fixed_copies.txt")) as f:
        for n, raw in enumerate(f, 1):
            raw = raw.strip()
            if not raw or raw.startswith("#"):
                continue
            parts = [p.strip() for p in raw.split(" | ")]
            if len(parts) != 3 or not parts[2]:
                print("fixed_copies.txt:%d: not FILE | CALL | GUARD" % n)
                return 1
            registry[(parts[0], " ".join(parts[1].split()))] = parts[2]
    found = set()
    breaches = 0
    count = 0
    for top, dirs, files in os.walk(os.path.join(root, "src")):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.relpath(os.path.join(top, name), root)
            with open(os.path.join(root, path)) as f:
                text = f.read()
            for line, call in calls(text):
                count += 1
                guard = registry.get((path, call))
                if guard is None:
                    print("%s:%d: %s: no guard named in test/tools/fixed_copies.txt" % (path, line, call))
                    breaches += 1
                else:
                    found.add((path, call))
                    print("%s:%d: %s\n\tguard: %s" % (path, line, call, guard))
    for key in sorted(set(registry) - found):
        print("fixed_copies.txt: %s | %s: no such copy any more" % key)
        breaches += 1
    print("fixed copies: %d copies, %d without a guard or stale" % (count, breaches))
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
