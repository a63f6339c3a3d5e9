"""zkbench.results: the rows the shapes measure, and what is made of them:
each row's ratio to Curator's, with its spread over the interleaved rounds
(round i of a contender against round i of Curator: the min and max of
those ratios), whether it met its target, the printed table with its
notes, and results.csv.  Targets sit on one row each (the TCP row where a
shape has one), so "targets met" counts each target once.
"""

import csv
import math

from .cpu import usage_view

CURATOR = "Curator"


class Results:
    def __init__(self):
        self.rows = []
        self.errors = []

    def add(self, shape, metric, contender, value, unit, target=None, cpu=None, n=None,
            note=None, rounds=None):
        """rounds: the figure of each interleaved round, in order, when the
        row has them (the ratio's spread pairs them with Curator's)."""
        row = {"shape": shape, "metric": metric, "contender": contender, "value": value,
               "unit": unit, "target": target, "cpu": cpu or {}, "n": n, "note": note,
               "rounds": [x for x in rounds] if rounds else None}
        self.rows.append(row)
        return row

    def error(self, shape, contender, exc):
        msg = "%s %s: %s" % (shape, contender, exc)
        print("  ERROR " + msg, flush=True)
        self.errors.append(msg)

    def curator_row(self, row):
        for r in self.rows:
            if (r["shape"], r["metric"], r["contender"]) == (row["shape"], row["metric"], CURATOR):
                return r
        return None

    def curator(self, row):
        r = self.curator_row(row)
        if r is None:
            return None
        return r["value"] if isinstance(r["value"], (int, float)) else None

    def round_ratios(self, row):
        """Round i of row over round i of Curator's row, for every round
        both have a figure for; [] when either has no rounds."""
        c = self.curator_row(row)
        if c is None or not row["rounds"] or not c["rounds"] or row is c:
            return []
        out = []
        for v, cv in zip(row["rounds"], c["rounds"]):
            if isinstance(v, (int, float)) and isinstance(cv, (int, float)) and cv and \
                    not math.isnan(v) and not math.isnan(cv):
                out.append(v / cv)
        return out

    def spread(self, row):
        """(min, max) of the round-by-round ratios, or None."""
        r = self.round_ratios(row)
        return (min(r), max(r)) if r else None

    def ratio_text(self, row):
        ratio = self.ratio(row)
        if ratio is None:
            return ""
        sp = self.spread(row)
        return "%.2fx" % ratio + ("" if sp is None else " [%.2f-%.2f]" % sp)

    def ratio(self, row):
        c = self.curator(row)
        v = row["value"]
        if c is None or not isinstance(v, (int, float)) or c == 0 or math.isnan(v):
            return None
        return v / c

    def met(self, row):
        t = row["target"]
        if t is None:
            return None
        kind, bound = t
        v = row["value"]
        if kind == "ratio<=":
            r = self.ratio(row)
            return None if r is None else r <= bound
        if kind == "ratio>=":
            r = self.ratio(row)
            return None if r is None else r >= bound
        if not isinstance(v, (int, float)) or math.isnan(v):
            return None if kind != "is" else v == bound
        if kind == "<=":
            return v <= bound
        if kind == ">=":
            return v >= bound
        return v == bound

    @staticmethod
    def target_text(t):
        if t is None:
            return ""
        kind, bound = t
        return {"ratio<=": "<= %gx Curator", "ratio>=": ">= %gx Curator",
                "<=": "<= %g", ">=": ">= %g", "is": "%s"}[kind] % (bound,)

    @staticmethod
    def fmt(v, unit):
        if not isinstance(v, (int, float)):
            return str(v)
        if math.isnan(v):
            return "n/a"
        if unit in ("ms",):
            return "%.3f" % v
        if unit in ("/s", "bytes"):
            return "{:,.0f}".format(v)
        if unit in ("s", "MB"):
            return "%.2f" % v
        if unit == "us":
            return "%.0f" % v
        if unit == "x":
            return "%.3f" % v
        return "%.2f" % v

    @staticmethod
    def cpu_text(cpu):
        v = usage_view(cpu)
        busy = "%.1f" % v["busy"] if "busy" in v else ""
        per_op = ""
        if "zk" in v or "lock" in v:
            per_op = "%s/%s" % ("%.3f" % v["zk"] if "zk" in v else "-",
                                "%.3f" % v["lock"] if "lock" in v else "-")
        return busy, per_op

    def table(self):
        head = ["shape", "metric", "contender", "value", "unit", "vs Curator [rounds]", "target",
                "met?", "busy", "cpu ms/op zk/lock"]
        lines, notes = [], []
        for r in self.ordered():
            ratio = self.ratio(r)
            met = self.met(r)
            mark = ""
            if r["note"]:
                notes.append(r["note"])
                mark = " [%d]" % len(notes)
            lines.append([r["shape"], r["metric"], r["contender"] + mark,
                          self.fmt(r["value"], r["unit"]), r["unit"],
                          self.ratio_text(r),
                          self.target_text(r["target"]),
                          "" if r["target"] is None else ("n/a" if met is None else
                                                          ("yes" if met else "NO")),
                          *self.cpu_text(r["cpu"])])
        width = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
        right = {3, 5, 8}
        out = []

        def fmt_line(cells):
            return "  ".join(str(c).rjust(width[i]) if i in right else str(c).ljust(width[i])
                             for i, c in enumerate(cells)).rstrip()

        out.append(fmt_line(head))
        out.append(fmt_line(["-" * w for w in width]))
        prev = None
        for cells in lines:
            if prev is not None and cells[0] != prev:
                out.append("")
            prev = cells[0]
            out.append(fmt_line(cells))
        if notes:
            out.append("")
            for i, n in enumerate(notes, 1):
                out.append("[%d] %s" % (i, n))
        return "\n".join(out)

    def ordered(self):
        """The rows by shape ((f) runs right after (a), while conditions are
        those of (a)); within a shape, in the order they were added."""
        return sorted(self.rows, key=lambda r: r["shape"])

    def write_csv(self, path):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["shape", "metric", "contender", "value", "unit", "vs_curator",
                        "vs_curator_min", "vs_curator_max", "target",
                        "met", "cpu_cores_busy", "zk_cpu_ms_per_op", "lock_cpu_ms_per_op",
                        "lock_ctxsw_per_op", "samples", "rounds", "note"])
            for r in self.ordered():
                ratio = self.ratio(r)
                sp = self.spread(r)
                met = self.met(r)
                v = r["value"]
                u = usage_view(r["cpu"])
                w.writerow([r["shape"], r["metric"], r["contender"],
                            ("%.6g" % v) if isinstance(v, float) else v, r["unit"],
                            "" if ratio is None else "%.4f" % ratio,
                            "" if sp is None else "%.4f" % sp[0],
                            "" if sp is None else "%.4f" % sp[1],
                            self.target_text(r["target"]),
                            "" if met is None else ("yes" if met else "no"),
                            *("%.4g" % u[k] if k in u else "" for k in ("busy", "zk", "lock", "cs")),
                            "" if r["n"] is None else r["n"],
                            " ".join("%.6g" % x for x in r["rounds"]) if r["rounds"] else "",
                            r["note"] or ""])

    def targets_table(self, title):
        """The rows that carry a target (each target sits on one row: the
        TCP row where the shape has one), one line each: the figure,
        Curator's, the ratio with its spread over the rounds, the target and
        whether it is met."""
        head = ["shape", "metric", "contender", "zklock", CURATOR, "ratio [rounds min-max]",
                "target", "met?"]
        lines = []
        for r in self.ordered():
            if r["target"] is None:
                continue
            met = self.met(r)
            ratio = self.ratio(r)
            c = self.curator(r)
            lines.append([r["shape"], r["metric"], r["contender"],
                          "%s %s" % (self.fmt(r["value"], r["unit"]), r["unit"]),
                          "" if c is None else "%s %s" % (self.fmt(c, r["unit"]), r["unit"]),
                          self.ratio_text(r),
                          self.target_text(r["target"]),
                          "n/a" if met is None else ("yes" if met else "NO")])
        width = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
        out = [title]
        for cells in [head, ["-" * w for w in width]] + lines:
            out.append("  ".join(str(c).rjust(width[i]) if i in (3, 4, 5) else
                                 str(c).ljust(width[i]) for i, c in enumerate(cells)).rstrip())
        return "\n".join(out)

    def targets_summary(self):
        met = [self.met(r) for r in self.rows if r["target"] is not None]
        return sum(1 for m in met if m), sum(1 for m in met if m is False), \
            sum(1 for m in met if m is None)

    def missing_figures(self, shapes):
        """What the run should have measured and did not: each of shapes
        that has no figure at all, and each row whose value is not a number
        (n/a: no cycles were measured)."""
        out = []
        for shape in shapes:
            if not any(r["shape"] == shape and isinstance(r["value"], (int, float))
                       and not math.isnan(r["value"]) for r in self.rows):
                out.append("%s: no figure" % shape)
        for r in self.ordered():
            v = r["value"]
            if isinstance(v, float) and math.isnan(v):
                out.append("%s %s, %s: no figure (n/a)" % (r["shape"], r["contender"],
                                                          r["metric"]))
        return out
