"""zkbench.results: the rows the shapes measure, and what is made of them:
each row's ratio to Curator's and whether it met its target, the printed
table with its notes, and results.csv.
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
            note=None):
        row = {"shape": shape, "metric": metric, "contender": contender, "value": value,
               "unit": unit, "target": target, "cpu": cpu or {}, "n": n, "note": note}
        self.rows.append(row)
        return row

    def error(self, shape, contender, exc):
        msg = "%s %s: %s" % (shape, contender, exc)
        print("  ERROR " + msg, flush=True)
        self.errors.append(msg)

    def curator(self, row):
        for r in self.rows:
            if (r["shape"], r["metric"], r["contender"]) == (row["shape"], row["metric"], CURATOR):
                return r["value"] if isinstance(r["value"], (int, float)) else None
        return None

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
        head = ["shape", "metric", "contender", "value", "unit", "vs Curator", "target",
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
                          "" if ratio is None else "%.2fx" % ratio,
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
            w.writerow(["shape", "metric", "contender", "value", "unit", "vs_curator", "target",
                        "met", "cpu_cores_busy", "zk_cpu_ms_per_op", "lock_cpu_ms_per_op",
                        "lock_ctxsw_per_op", "samples", "note"])
            for r in self.ordered():
                ratio = self.ratio(r)
                met = self.met(r)
                v = r["value"]
                u = usage_view(r["cpu"])
                w.writerow([r["shape"], r["metric"], r["contender"],
                            ("%.6g" % v) if isinstance(v, float) else v, r["unit"],
                            "" if ratio is None else "%.4f" % ratio,
                            self.target_text(r["target"]),
                            "" if met is None else ("yes" if met else "no"),
                            *("%.4g" % u[k] if k in u else "" for k in ("busy", "zk", "lock", "cs")),
                            "" if r["n"] is None else r["n"], r["note"] or ""])

    def targets_table(self, contender, title):
        """The rows of contender that carry a target, one line each: its
        figure, Curator's, the ratio, the target and whether it is met."""
        head = ["shape", "metric", contender, CURATOR, "ratio", "target", "met?"]
        lines = []
        for r in self.ordered():
            if r["contender"] != contender or r["target"] is None:
                continue
            met = self.met(r)
            ratio = self.ratio(r)
            c = self.curator(r)
            lines.append([r["shape"], r["metric"], "%s %s" % (self.fmt(r["value"], r["unit"]),
                                                              r["unit"]),
                          "" if c is None else "%s %s" % (self.fmt(c, r["unit"]), r["unit"]),
                          "" if ratio is None else "%.2fx" % ratio,
                          self.target_text(r["target"]),
                          "n/a" if met is None else ("yes" if met else "NO")])
        width = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
        out = [title]
        for cells in [head, ["-" * w for w in width]] + lines:
            out.append("  ".join(str(c).rjust(width[i]) if i in (2, 3, 4) else
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
