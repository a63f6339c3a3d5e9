#!/usr/bin/env python3
"""The targets of several full runs of `make bench`, side by side.

    python3 bench/targets.py bench/out/run1/results.csv bench/out/run2/results.csv

Prints one Markdown table: per target (a row of results.csv with a
`target`), each run's zklock figure, Curator's, the ratio with the rounds'
min-max, whether it was met, and the CSV line the figures come from (line 1
is the header), so that every figure quoted in README.md and
bench/README.md can be found in the committed CSV it comes from.  A run is
named by its directory when that is runN (bench/out/run19/results.csv:
"run 19"), else by its place on the command line.
"""
import csv
import os
import re
import sys


def fmt(value, unit):
    """A figure as the bench prints it: thousands grouped for rates."""
    try:
        v = float(value)
    except ValueError:
        return value
    if unit == '/s':
        return f'{v:,.0f} /s'
    if unit == 'ms':
        return f'{v:.3f} ms'
    if unit == 'us':
        return f'{v:.0f} µs'
    return f'{v:.2f} {unit}'.strip()


def curator_value(rows, target):
    """Curator's figure for the same shape and metric, if it has one."""
    for row in rows:
        if (row['shape'], row['metric'], row['contender']) == (target['shape'], target['metric'], 'Curator'):
            return row
    return None


def ratio(row):
    if not row['vs_curator']:
        return ''
    spread = ''
    if row['vs_curator_min'] and row['vs_curator_max']:
        spread = f" [{float(row['vs_curator_min']):.2f}-{float(row['vs_curator_max']):.2f}]"
    return f"{float(row['vs_curator']):.2f}x{spread}"


def run_name(path, n):
    """'run N' from a directory runN, else 'run n' (n: its place, from 1)."""
    m = re.fullmatch(r'run(\d+)', os.path.basename(os.path.dirname(os.path.abspath(path))))
    return f'run {m.group(1)}' if m else f'run {n}'


def main(paths):
    runs = []
    for path in paths:
        with open(path, newline='') as f:
            rows = list(csv.DictReader(f))
        runs.append({(r['shape'], r['metric'], r['contender']): (i, r, rows)
                     for i, r in enumerate(rows, start=2) if r['target']})
    keys = list(runs[0])
    for run in runs[1:]:
        keys += [k for k in run if k not in keys]
    head = ['shape', 'metric', 'target']
    for n, path in enumerate(paths, start=1):
        head += [f'{run_name(path, n)}: zklock', 'Curator', 'ratio [rounds min-max]', 'met',
                 'CSV line']
    print('| ' + ' | '.join(head) + ' |')
    print('|' + '---|' * len(head))
    for key in keys:
        cells = [key[0], key[1], ''] + [''] * (5 * len(runs))
        for n, run in enumerate(runs):
            if key not in run:
                continue
            line, row, rows = run[key]
            cells[2] = row['target']
            cur = curator_value(rows, row)
            cells[3 + 5 * n:8 + 5 * n] = [
                fmt(row['value'], row['unit']),
                fmt(cur['value'], cur['unit']) if cur else '',
                ratio(row),
                row['met'],
                str(line),
            ]
        print('| ' + ' | '.join(cells) + ' |')


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit('usage: targets.py RESULTS.csv [RESULTS.csv ...]')
    main(sys.argv[1:])
