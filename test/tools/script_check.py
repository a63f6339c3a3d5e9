#!/usr/bin/env python3
"""The extension scripts follow PostgreSQL's rules for extension scripts: `make check-static`
runs this.

An extension script runs as the role that installs or updates the extension (a superuser,
as a rule) with search_path set to the target schema (pg_catalog implicitly first).  A role
that may CREATE in that schema can plant there an operator or a function that matches a
call's argument types more exactly than pg_catalog's does (`oid <> integer` has no exact
match in pg_catalog: a planted `<>(oid, integer)` wins), and it then runs as the superuser.
PostgreSQL's documentation ("Security Considerations for Extension Scripts") and its contrib
scripts qualify every operator and function for that reason; so must zklock's.  A database
at 1.0 that updates today runs every update script, old ones included: all are checked.

Checked in every zklock--*.sql of the tree (comments and quoted strings aside; the bodies of
DO blocks and of EXECUTE $create$ ... $create$ are code and checked too):

- every operator is written OPERATOR(pg_catalog.op); the only bare ones are syntax, not
  operators: `=` after SET name (a setting, or an UPDATE's column) and in RAISE's USING
  options, `*` of SELECT * and
  count(*), `:=` of PL/pgSQL, `=>` of named arguments;
- the constructs that look an operator up by name are not used: IN (...), NOT IN, LIKE,
  ILIKE, SIMILAR TO, BETWEEN, IS [NOT] DISTINCT FROM, NULLIF, a simple CASE x WHEN;
- every function call is pg_catalog.name(...), or names one of the extension's own objects
  (created by these scripts: its schema is the target schema, searched right after
  pg_catalog, where an exact match already exists), or is one of the grammar's constructs
  in ALLOWED (with the reason);
- every cast x::type names pg_catalog.type.

usage: script_check.py [TREE]   (default .)
Prints each breach as file:line: what, and "scripts: N files, M statements checked, 0
breaches"; exits 1 on any breach.
"""
import glob
import os
import re
import sys

# Words followed by "(" that are not calls of a function looked up on search_path.
ALLOWED = {
    "coalesce": "a grammar construct (CoalesceExpr), no function or operator lookup",
    "greatest": "a grammar construct (MinMaxExpr), compares with the type's default btree opclass",
    "least": "a grammar construct (MinMaxExpr), compares with the type's default btree opclass",
    "exists": "a sublink, no lookup",
    "values": "a VALUES list",
    "key": "PRIMARY KEY (columns)",
    "unique": "UNIQUE (columns)",
    "check": "CHECK (expression): the expression is checked as any other",
    "references": "REFERENCES table (columns)",
    "array": "ARRAY[...] or ARRAY(subquery)",
    "row": "ROW(...) constructor",
    "as": "AS (subquery) or a column list",
    "on": "ON (expression)",
    "using": "USING (columns)",
    "from": "FROM (subquery)",
    "join": "JOIN (subquery)",
    "where": "WHERE (expression)",
    "and": "AND (expression)",
    "or": "OR (expression)",
    "not": "NOT (expression)",
    "select": "SELECT (expression)",
    "returns": "RETURNS TABLE(...)",
    "table": "RETURNS TABLE(...)",
    "then": "THEN (expression)",
    "else": "ELSE (expression)",
    "when": "WHEN (expression)",
    "if": "IF (expression), PL/pgSQL",
    "return": "RETURN (expression), PL/pgSQL",
    "into": "INSERT INTO table (columns)",
    "by": "ORDER/GROUP BY (expression): default btree opclass, no lookup by name",
    "distinct": "SELECT DISTINCT (expression): default opclass",
    "lateral": "LATERAL (subquery)",
    "filter": "FILTER (WHERE ...)",
    "over": "OVER (window)",
    "with": "WITH (options)",
    "set": "SET (columns)",
    "default": "DEFAULT (expression)",
    "operator": "OPERATOR(pg_catalog.op), checked apart",
    "any": "op ANY (array): the operator is the one written before it, checked apart",
    "all": "op ALL (array): the same",
}
# Type names that take a modifier in parentheses.
TYPMOD_TYPES = {"numeric", "decimal", "varchar", "char", "character", "varying", "bit", "varbit",
                "timestamp", "timestamptz", "time", "timetz", "interval"}
# Keywords that look an operator up by name (an equality or an ordering operator).
LOOKUP_KEYWORDS = {
    "like": "~~", "ilike": "~~*", "similar": "SIMILAR TO", "between": ">= and <=",
    "nullif": "=", "distinct_from": "= (IS DISTINCT FROM)",
}
RAISE_OPTIONS = {"message", "detail", "hint", "errcode", "column", "constraint", "datatype",
                 "table", "schema"}
OP_CHARS = set("+-*/<>=~!@#%^&|`?")

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<dollar>\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$)
  | (?P<string>[EeBbXx]?'(?:[^']|'')*')
  | (?P<qident>"(?:[^"]|"")*")
  | (?P<ident>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+)
  | (?P<param>\$\d+)
  | (?P<punct>::|:=|=>|\.\.|[(),;\[\].:])
  | (?P<op>[+\-*/<>=~!@\#%^&|`?]+)
""", re.S | re.X)


def tokens(text):
    """(kind, value, line) of every token that counts: comments, strings' contents and
    psql's backslash lines dropped, dollar-quote delimiters dropped (their bodies, DO
    blocks and EXECUTE's statements, are code)."""
    pos, line = 0, 1
    while pos < len(text):
        if text[pos] == "\\" and (pos == 0 or text[pos - 1] == "\n"):
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            pos = end
            continue
        m = TOKEN.match(text, pos)
        if not m:
            raise ValueError("line %d: cannot read %r" % (line, text[pos:pos + 20]))
        kind = m.lastgroup
        value = m.group(kind)
        if kind not in ("space", "comment", "dollar"):
            yield kind, value, line
        line += value.count("\n")
        pos = m.end()


def own_objects(texts):
    names = set()
    for text in texts:
        for m in re.finditer(r"\b(?:CREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|TABLE|VIEW|EVENT\s+TRIGGER)"
                             r"|RENAME\s+TO)\s+([A-Za-z_][A-Za-z0-9_]*)", text, re.I):
            names.add(m.group(1).lower())
    return names


def check(path, text, own):
    breaches = []
    toks = list(tokens(text))
    statements = sum(1 for t in toks if t[1] == ";")

    def at(i):
        return toks[i] if 0 <= i < len(toks) else ("eof", "", 0)

    def word(i):
        k, v, _ = at(i)
        return v.lower() if k == "ident" else None

    i = 0
    while i < len(toks):
        kind, value, line = toks[i]
        low = value.lower()
        prev = at(i - 1)
        where = "%s:%d" % (os.path.basename(path), line)
        if kind == "ident" and low == "operator" and at(i + 1)[1] == "(":
            # OPERATOR(pg_catalog.op)
            if word(i + 2) != "pg_catalog" or at(i + 3)[1] != "." or at(i + 4)[0] != "op" \
                    or at(i + 5)[1] != ")":
                breaches.append("%s: OPERATOR(...) not of pg_catalog" % where)
            i += 6
            continue
        if kind == "op":
            syntax = False
            if value == "=" and word(i - 2) == "set" and prev[0] in ("ident", "qident"):
                syntax = True    # SET name = value
            elif value == "=" and word(i - 1) in RAISE_OPTIONS and (word(i - 2) == "using" or at(i - 2)[1] == ","):
                syntax = True    # RAISE ... USING HINT = value
            elif value == "*" and (prev[1] in ("(", ",", ".") or word(i - 1) == "select"):
                syntax = True    # SELECT *, t.*, count(*)
            if not syntax:
                breaches.append("%s: bare operator %s (write OPERATOR(pg_catalog.%s))" % (where, value, value))
        elif kind == "punct" and value == "::":
            if word(i + 1) != "pg_catalog" or at(i + 2)[1] != ".":
                breaches.append("%s: cast to %s not qualified (write ::pg_catalog.%s)"
                                % (where, at(i + 1)[1], at(i + 1)[1]))
        elif kind == "ident":
            if low in LOOKUP_KEYWORDS:
                breaches.append("%s: %s looks up operator %s by name" % (where, value.upper(), LOOKUP_KEYWORDS[low]))
            elif low == "in" and at(i + 1)[1] == "(" and word(i - 1) != "tag":
                # (CREATE EVENT TRIGGER ... WHEN TAG IN (...) is a list of
                # command tags, no operator)
                breaches.append("%s: IN (...) looks up = by name (write OPERATOR(pg_catalog.=) ANY ...)" % where)
            elif low == "is" and (word(i + 1) == "distinct" or (word(i + 1) == "not" and word(i + 2) == "distinct")):
                breaches.append("%s: IS DISTINCT FROM looks up = by name" % where)
            elif low == "case" and word(i + 1) != "when":
                breaches.append("%s: a simple CASE x WHEN looks up = by name (write CASE WHEN ...)" % where)
            elif at(i + 1)[1] == "(" and prev[1] != ".":
                qualified_next = False
                if low in own or low in ALLOWED or low in TYPMOD_TYPES:
                    pass
                elif low == "in" and word(i - 1) == "tag":
                    pass    # WHEN TAG IN (...) of CREATE EVENT TRIGGER: command tags
                elif word(i - 1) in ("function", "procedure", "aggregate", "table", "view", "into", "type"):
                    pass    # the name of an object being created, altered or filled
                else:
                    breaches.append("%s: call of %s() not qualified (write pg_catalog.%s)" % (where, value, value))
            elif at(i + 1)[1] == "." and at(i + 3)[1] == "(" and prev[1] != ".":
                # schema.function(
                if low != "pg_catalog" and word(i + 2) not in own:
                    breaches.append("%s: call of %s.%s() not of pg_catalog" % (where, value, at(i + 2)[1]))
        i += 1
    return breaches, statements


# Lines the check must refuse (it runs them first, so that a check that can no longer fail
# fails), and lines it must let pass.
MUST_REFUSE = [
    "SELECT 1 FROM pg_catalog.pg_proc p WHERE p.oid = 0;",
    "SELECT a.grantee <> 0 FROM t a;",
    "SELECT now();",
    "SELECT 'x'::regclass;",
    "SELECT 1 WHERE 'a' IN ('a');",
    "SELECT 1 WHERE 'a' LIKE 'a';",
    "SELECT nullif(1, 2);",
    "SELECT CASE 1 WHEN 1 THEN 2 END;",
    "SELECT OPERATOR(public.=) 1;",
    "DO $do$ BEGIN PERFORM x - 1; END $do$;",
    "SELECT public.f(1);",
]
MUST_PASS = [
    "SELECT p.oid OPERATOR(pg_catalog.=) 0 FROM pg_catalog.pg_proc p;",
    "CREATE FUNCTION zk_x(a int) RETURNS int LANGUAGE C SET search_path = pg_catalog, pg_temp;",
    "SELECT * FROM zk_x(1); SELECT pg_catalog.count(*), coalesce(1, 2), 'a = b'::pg_catalog.text;",
    "UPDATE pg_catalog.pg_init_privs SET initprivs = NULL; -- a = b",
]


def self_test():
    bad = [s for s in MUST_REFUSE if not check("self-test", s, {"zk_x"})[0]]
    bad += [s for s in MUST_PASS if check("self-test", s, {"zk_x"})[0]]
    for s in bad:
        print("self-test: the check misjudges: %s" % s)
    return not bad


def main():
    if not self_test():
        return 1
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    # The script of the newest version is built from the others (Makefile): not checked apart.
    built = set()
    for f in glob.glob(os.path.join(root, "zklock--*.sql")):
        if re.search(r"zklock--[\d.]+\.sql$", f) and not f.endswith("zklock--1.0.sql"):
            built.add(f)
    paths = sorted(set(glob.glob(os.path.join(root, "zklock--*.sql"))) - built)
    texts = {p: open(p, encoding="utf-8").read() for p in paths}
    own = own_objects(texts.values())
    total, statements = [], 0
    for p in paths:
        b, n = check(p, texts[p], own)
        total += b
        statements += n
    for b in total:
        print(b)
    print("scripts: %d files, %d statements checked, %d breaches" % (len(paths), statements, len(total)))
    return 1 if total or not paths else 0


if __name__ == "__main__":
    sys.exit(main())
