# SPDX-License-Identifier: MIT
# Checks the log 'proftool top' writes when its output is not a terminal: tables one after
# the other, each with a timestamped header, no escape sequence, and numbers that agree (the
# window's samples are the rows' self samples, shares and seconds follow from the counts, the
# rows are in the order the header names, times and totals only grow). Prints one line per
# table: "SECONDS-IN WINDOW-SAMPLES TOTAL-SAMPLES LEADER", LEADER being the function of the
# first row ("-" when it has none); exits 1 at the first fault.
# Usage: top_log.py LOG HZ   (HZ: top's -F; the rows must not be cut by --limit)
import re
import sys

HEAD = re.compile(r"proftool top at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC, (\d+\.\d) s in: (.+)$")
WINDOW = re.compile(r"(\d+) samples? (?:in the last|since the start,) (\d+\.\d) s \((\d+\.\d)/s\), "
                    r"(\d+) lost; (\d+) process(?:es)?, (\d+) threads?(?:, RSS [0-9.]+ MiB(?: in \d+ processes)?)?$")
TOTAL = re.compile(r"since the start: (\d+) samples, (\d+) lost, (\d+\.\d) s; (perf|ptrace) backend; by (.+)$")
COLUMNS = "       nsamples   tottime   tot%   cumtime   cum%  filename:lineno(function)"
ROW = re.compile(r" *(\d+)/(\d+) +(\d+\.\d{3}) +(\d+\.\d)% +(\d+\.\d{3}) +(\d+\.\d)%  (.+)$")


def fail(msg, n):
    print(f"top_log.py: line {n + 1}: {msg}", file=sys.stderr)
    sys.exit(1)


def leader(label):
    m = re.search(r"\(([^()]*)\)$", label)
    return m.group(1) if m else label


text = open(sys.argv[1], encoding="utf-8").read()
hz = float(sys.argv[2])
if "\x1b" in text or "\r" in text:
    fail("an escape sequence or a carriage return", text.find("\x1b" if "\x1b" in text else "\r"))
lines = text.split("\n")
i = 0
prev = None
tables = 0
while i < len(lines) and lines[i]:
    head = HEAD.match(lines[i]) or fail(f"not a table's first line: {lines[i]!r}", i)
    win = WINDOW.match(lines[i + 1]) or fail(f"not the window's line: {lines[i + 1]!r}", i + 1)
    tot = TOTAL.match(lines[i + 2]) or fail(f"not the totals' line: {lines[i + 2]!r}", i + 2)
    lines[i + 3] == "" or fail("no blank line after the header", i + 3)
    lines[i + 4] == COLUMNS or fail(f"not the column heads: {lines[i + 4]!r}", i + 4)
    n, total = int(win.group(1)), int(tot.group(1))
    n <= total or fail("more samples in the window than since the start", i + 1)
    int(win.group(4)) <= int(tot.group(2)) or fail("more lost in the window than since the start", i + 1)
    key = tot.group(5)
    rows = []
    i += 5
    while lines[i]:
        r = ROW.match(lines[i]) or fail(f"not a row: {lines[i]!r}", i)
        self_, cum = int(r.group(1)), int(r.group(2))
        self_ <= cum <= n or fail("self > cumulative, or cumulative > the window's samples", i)
        for count, share in ((self_, r.group(4)), (cum, r.group(6))):
            abs(100.0 * count / n - float(share)) <= 0.051 or fail(f"{share}% is not {count}/{n}", i)
        for count, secs in ((self_, r.group(3)), (cum, r.group(5))):
            abs(count / hz - float(secs)) <= 0.0015 or fail(f"{secs} s is not {count} samples at {hz} Hz", i)
        rows.append((self_, cum, r.group(7)))
        i += 1
    sum(s for s, _, _ in rows) == n or fail(f"the rows' self samples do not add up to {n}", i)
    order = {"self time": 0, "cumulative time": 1}.get(key)
    if order is not None:
        figures = [row[order] for row in rows]
        figures == sorted(figures, reverse=True) or fail(f"the rows are not in order of {key}", i)
    now = (head.group(1), float(head.group(2)), total, int(tot.group(2)))
    if prev:
        all(a <= b for a, b in zip(prev, now)) or fail("time or totals went back", i)
    prev = now
    print(head.group(2), n, total, leader(rows[0][2]) if rows else "-")
    tables += 1
    i += 1
i == len(lines) - 1 or fail(f"not a table: {lines[i]!r}", i)
tables or fail("no table", 0)
