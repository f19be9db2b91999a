#!/usr/bin/env python3
"""ixmap's simplifier against isl (islpy) on benches/data/simplify-corpus.txt, in one run.

Run it through `scripts/bench-isl` (it makes the venv `target/isl-venv` with islpy from PyPI
and builds the bench in release mode); options:

    scripts/bench-isl [--rounds N] [--chunk K] [--only GROUP,...] [--smoke [--strict]]
                      [--baseline OLD_BENCH_BIN] [--warm N]

(`--baseline`: another build's bench binary, `target/release/deps/simplify-HASH` copied
aside before rebuilding, is a third side of the same interleaving: the table then also
gives before/after per group, and how many outputs differ.)

(`--warm N`: a diagnostic table besides: each map N times in a row on each side, the median,
so the warm cost of both sides sits beside the interleaved one; their quotient is what a cold
start costs each side.)

(`--smoke` is what scripts/test-all runs, with `--strict`: 3 maps per group in a debug build,
every isl output converted back and checked, seconds.)

Two persistent processes, one per side, each timing only the simplification of an already
parsed map:

- ixmap: `cargo bench --bench simplify -- --isl-worker` (benches/simplify.rs) parses the
  corpus once and, per request, times one `simplify` of each map of a batch;
- isl: this process parses each map's results once into a MultiPwAff over the universe,
  intersects it with the domain (bounds and constraints, symbols as input dimensions) and
  times `gist` with the domain; also `gist` then `coalesce`, and, for scale, the whole of
  parse + intersect + gist from the text.

The two sides alternate batch by batch (a chunk of maps on one side, then the same chunk on
the other; which side goes first alternates by round), so load on a shared machine hits
both alike. Per map, the time is the median over rounds; per group the table gives the
median, p99 and max of those, and the ratio isl / ixmap (of the medians, of the p99s, and
the median of the per-map ratios).

Cost, the same for both outputs: `(div, ops)` summed over the results, compared
lexicographically, where `div` counts floordiv/ceildiv/mod nodes and `ops` every operation
node, both counted on the map as ixmap parses the printed text (ixmap's output printed and
parsed back; isl's output converted from isl's `floor()`/`mod` syntax to ours and parsed).
A result isl leaves piecewise (several pieces: min/max) costs the sum of its pieces plus one
select per extra piece. Each converted isl output is checked equal to the input by brute
force over the domain (every point up to 2M, else 200,000 drawn from the box) in the ixmap
worker; piecewise outputs are checked by isl itself (`is_equal`), and say so. isl's exact
division `(x)/2` (x a multiple of 2 on the domain) becomes `x floordiv 2`; a result with no
piece at all means isl found the domain empty (ixmap prints KNOWN EMPTY): cost 0 for both.

A second table splits each group by where isl did its simplifying (`isl_stage`): maps whose
domain isl finds empty while building it (untimed), maps whose built function the timed
gist leaves with as many integer divisions as it had (the construction cancelled them, or
none could go), and maps where gist removes one. ixmap's timed `simplify` starts from the
parsed text in every case (it finds the emptiness, cancels the divisions and rewrites the
constraints itself), so this says which of isl's work the ratio leaves out.

The table goes to stdout; the per-map details (both outputs, times, costs) to
target/simplify-isl-report.txt and target/simplify-isl.json.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

import islpy as isl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------- isl output -> our syntax

TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|(.))")


def tokens(text):
    out = []
    for num, name, ch in TOKEN.findall(text):
        if num:
            out.append(("int", int(num)))
        elif name:
            out.append(("name", name))
        elif ch.strip():
            out.append(("op", ch))
    return out


class IslExprParser:
    """isl's printed quasi-affine expressions: `2d0 - 3*((d1) mod 16)`,
    `floor((-64d0 + d1)/160)`, `ceil(...)`, `min(a, b)`, `max(a, b)`; to a tree of tuples
    ("int", n) | ("var", name) | ("+", a, b) | ("-", a, b) | ("neg", a) | ("*", a, b) |
    ("floordiv", a, n) | ("ceildiv", a, n) | ("mod", a, n) | ("min"/"max", a, b)."""

    def __init__(self, text):
        self.t = tokens(text)
        self.i = 0
        self.in_floor = False  # directly inside floor(...): `/` ends the numerator

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else ("end", None)

    def take(self, kind=None, val=None):
        tok = self.peek()
        if (kind and tok[0] != kind) or (val is not None and tok[1] != val):
            raise ValueError(f"isl output: expected {val or kind} at token {self.i}: {self.t}")
        self.i += 1
        return tok

    def parse(self):
        e = self.sum()
        if self.peek()[0] != "end":
            raise ValueError(f"isl output: trailing tokens {self.t[self.i:]}")
        return e

    def sum(self):
        if self.peek() == ("op", "-"):
            self.take()
            e = ("neg", self.term())
        else:
            e = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            e = (op, e, self.term())
        return e

    def starts_factor(self):
        k, v = self.peek()
        return k in ("int", "name") and v != "mod" or (k, v) == ("op", "(")

    def term(self):
        e = self.factor()
        while True:
            if self.peek() == ("op", "*"):
                self.take()
                e = ("*", e, self.factor())
            elif self.starts_factor():  # isl writes `2d0` for 2 * d0
                e = ("*", e, self.factor())
            else:
                return e

    def factor(self):
        e = self.primary()
        while self.peek() == ("name", "mod") or (
                self.peek() == ("op", "/") and not self.in_floor):
            # `(x)/2`: isl's exact division, where the domain makes x a multiple of 2; as
            # floordiv (the brute-force check confirms it on the domain).
            op = "mod" if self.take()[1] == "mod" else "floordiv"
            e = (op, e, self.take("int")[1])
        return e

    def primary(self):
        k, v = self.peek()
        if k == "int":
            self.take()
            return ("int", v)
        if k == "name" and v in ("floor", "ceil"):
            self.take()
            self.take("op", "(")
            outer, self.in_floor = self.in_floor, True
            x = self.sum()
            self.in_floor = outer
            self.take("op", "/")
            d = self.take("int")[1]
            self.take("op", ")")
            return ("floordiv" if v == "floor" else "ceildiv", x, d)
        if k == "name" and v in ("min", "max"):
            self.take()
            self.take("op", "(")
            outer, self.in_floor = self.in_floor, False
            a = self.sum()
            self.in_floor = outer
            self.take("op", ",")
            outer, self.in_floor = self.in_floor, False
            b = self.sum()
            self.in_floor = outer
            self.take("op", ")")
            return (v, a, b)
        if k == "name":
            self.take()
            return ("var", v)
        if (k, v) == ("op", "-"):
            self.take()
            return ("neg", self.primary())
        self.take("op", "(")
        outer, self.in_floor = self.in_floor, False
        e = self.sum()
        self.in_floor = outer
        self.take("op", ")")
        return e


def ours(e):
    """A tree of IslExprParser in ixmap's syntax (fully parenthesized)."""
    k = e[0]
    if k == "int":
        return str(e[1])
    if k == "var":
        return e[1]
    if k == "neg":
        return f"(-{ours(e[1])})"
    if k in ("+", "-", "*"):
        return f"({ours(e[1])} {k} {ours(e[2])})"
    if k in ("floordiv", "ceildiv", "mod"):
        return f"({ours(e[1])} {k} {e[2]})"
    if k in ("min", "max"):
        return f"{k}({ours(e[1])}, {ours(e[2])})"
    raise ValueError(k)


def aff_body(aff):
    """`(d0 + floor((d1)/16))` from `{ [d0, d1] -> [(d0 + floor((d1)/16))] }`."""
    s = aff.to_str()
    body = s[s.index("->") + 2:].strip()
    assert body.startswith("[") and body.endswith("}"), s
    return body[1:body.rindex("]")]


def convert(mpa):
    """isl's MultiPwAff as our syntax: ([expr per result], pieces per result); a result of
    several pieces becomes a list of (set text, expr)."""
    exprs, pieces = [], []
    for i in range(mpa.dim(isl.dim_type.out)):
        ps = mpa.get_pw_aff(i).get_pieces()
        pieces.append(len(ps))
        if len(ps) == 1:
            exprs.append(ours(IslExprParser(aff_body(ps[0][1])).parse()))
        else:
            exprs.append([(str(st), ours(IslExprParser(aff_body(a)).parse())) for st, a in ps])
    return exprs, pieces


# ---------------------------------------------------------------------------- the sides


class Worker:
    def __init__(self, smoke, no_prepass=False, binary=None):
        cmd = ["cargo", "bench", "-q", "--bench", "simplify", "--", "--isl-worker"]
        if smoke:
            # A debug build (what CI has built already), the first 3 maps of each group.
            cmd = ["cargo", "test", "-q", "--bench", "simplify", "--", "--isl-worker", "--smoke"]
        if no_prepass:
            cmd.append("--no-prepass")
        binary = binary or os.environ.get("IXMAP_ISL_WORKER_BIN")
        if binary:
            # The bench binary itself (e.g. target/release/deps/simplify-HASH), without
            # cargo: no cargo lock held while the benchmark runs.
            cmd = [binary, "--isl-worker"] + cmd[cmd.index("--isl-worker") + 1:]
        self.p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        self.maps = json.loads(self.p.stdout.readline())["maps"]

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        self.p.wait()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round((len(xs) - 1) * p)))]


def us(ns):
    return f"{ns / 1000:.1f}" if ns < 1_000_000 else f"{ns / 1000:.0f}"



def isl_divs(mpa):
    """Integer divisions (floor, and mod as x - c*floor(x/c)) in the pieces' expressions of a
    MultiPwAff, as isl keeps them: the local divisions of every piece's affine expression."""
    n = 0
    for k in range(mpa.dim(isl.dim_type.out)):
        for _, aff in mpa.get_at(k).get_pieces():
            n += aff.dim(isl.dim_type.div)
    return n


def isl_stage(mpa, dom, gist):
    """Where isl simplified a map: `empty` (the domain is empty once built), `gist` (the timed
    gist removed a division the built function still had), `built` (it removed none: the
    untimed construction had cancelled them, or none could go)."""
    if dom.is_empty():
        return "empty"
    return "gist" if isl_divs(gist) < isl_divs(mpa) else "built"

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--chunk", type=int, default=16)
    ap.add_argument("--only", default="")
    ap.add_argument("--smoke", action="store_true",
                    help="3 maps per group, 2 rounds, a debug build (seconds)")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 unless every isl output converts and checks equal (CI)")
    ap.add_argument("--no-prepass", action="store_true",
                    help="ixmap without its pre-pass (simplify/fold.rs): the e-graph alone")
    ap.add_argument("--baseline", default="",
                    help="another build's bench binary (target/release/deps/simplify-HASH, "
                         "copied aside): timed in the same interleaving, before/after table")
    ap.add_argument("--report", default="",
                    help="diagnostic: time every group of --only, but tabulate only these "
                         "groups (GROUP,...); with --idle-side, the maps of the other groups "
                         "run on one side only")
    ap.add_argument("--idle-side", choices=["ixmap", "isl"], default=None,
                    help="diagnostic (with --report): the side that skips the maps outside "
                         "the reported groups (which side's work on them slows the rest)")
    ap.add_argument("--warm", type=int, default=0, metavar="N",
                    help="diagnostic: after the interleaved rounds, each map also timed warm, "
                         "N times in a row on each side (median), and a table of warm times "
                         "beside the interleaved ones: what of the interleaved time is the "
                         "cost of starting cold (code and caches left by the other side)")
    args = ap.parse_args()
    if args.smoke:
        args.rounds = 2

    t0 = time.time()
    w = Worker(args.smoke, args.no_prepass)
    maps = w.maps
    wb = Worker(args.smoke, args.no_prepass, args.baseline) if args.baseline else None
    if wb is not None:
        assert [m["src"] for m in wb.maps] == [m["src"] for m in maps], "different corpora"
    idx = list(range(len(maps)))
    if args.only:
        keep = set(args.only.split(","))
        idx = [i for i in idx if maps[i]["group"] in keep]

    # isl objects, built once (untimed): results over the universe, then over the domain.
    isl_obj = {}
    skipped = {}
    for i in idx:
        m = maps[i]
        if m["isl_err"]:
            skipped[i] = m["isl_err"]
            continue
        try:
            mpa = isl.MultiPwAff(m["isl_in"])
            dom = isl.Set(m["isl_dom"])
            isl_obj[i] = (mpa.intersect_domain(dom), dom, m["isl_in"], m["isl_dom"])
        except isl.Error as e:
            skipped[i] = f"isl rejects it: {e}"
    run = [i for i in idx if i in isl_obj]

    t_ix = {i: [] for i in run}
    t_base = {i: [] for i in run}
    t_gist = {i: [] for i in run}
    t_coal = {i: [] for i in run}
    t_full = {i: [] for i in run}
    t_call = []
    out_gist, out_coal = {}, {}

    def isl_batch(batch):
        pc = time.perf_counter_ns
        for i in batch:
            mpa, dom, txt, dtxt = isl_obj[i]
            a = pc()
            g = mpa.gist(dom)
            b = pc()
            c = mpa.gist(dom).coalesce()
            d = pc()
            full = isl.MultiPwAff(txt).intersect_domain(isl.Set(dtxt)).gist(isl.Set(dtxt))
            e = pc()
            dom.is_empty()  # the cost of one islpy call that does next to nothing
            f = pc()
            t_gist[i].append(b - a)
            t_coal[i].append(d - b)
            t_full[i].append(e - d)
            t_call.append(f - e)
            out_gist[i], out_coal[i] = g, c
            del full

    def ix_batch(batch, worker=w, times=t_ix):
        # One request per contiguous run of indices (the worker takes ranges).
        j = 0
        while j < len(batch):
            k = j
            while k + 1 < len(batch) and batch[k + 1] == batch[k] + 1:
                k += 1
            ns = worker.ask(f"time {batch[j]} {batch[k] + 1}")
            for i, t in zip(batch[j:k + 1], ns):
                times[i].append(t)
            j = k + 1

    def base_batch(batch):
        if wb is not None:
            ix_batch(batch, wb, t_base)

    for r in range(args.rounds):
        for c in range(0, len(run), args.chunk):
            batch = run[c:c + args.chunk]
            # the order of the sides rotates by round, so load hits each side alike
            ib = xb = batch
            if args.report and args.idle_side:
                rep = [i for i in batch if maps[i]["group"] in args.report.split(",")]
                if args.idle_side == "ixmap":
                    xb = rep
                else:
                    ib = rep
            sides = [lambda: ix_batch(xb), lambda: isl_batch(ib), lambda: base_batch(xb)]
            for f in sides[r % 3:] + sides[:r % 3]:
                f()
        print(f"round {r + 1}/{args.rounds} done ({time.time() - t0:.0f} s)", file=sys.stderr)

    # Warm times (--warm N): each map N times in a row on one side, then on the other; the
    # median per map. Not interleaved (that is the point): the other side's work never runs
    # between two timings of a map.
    w_ix, w_gist = {}, {}
    if args.warm:
        for i in run:
            w_ix[i] = w.ask(f"warm {i} {i + 1} {args.warm}")[0]
            mpa, dom = isl_obj[i][0], isl_obj[i][1]
            mpa.gist(dom)
            ts = []
            for _ in range(args.warm):
                a = time.perf_counter_ns()
                mpa.gist(dom)
                ts.append(time.perf_counter_ns() - a)
            w_gist[i] = statistics.median(ts)

    if args.report:
        run = [i for i in run if maps[i]["group"] in args.report.split(",")]
    # Outputs: convert, check, cost.
    rows = []
    for i in run:
        m = maps[i]
        row = {"i": i, "group": m["group"], "src": m["src"], "ixmap": m["ixmap_out"],
               "w_ixmap": w_ix.get(i), "w_gist": w_gist.get(i),
               "ixmap_cost": m["ixmap_cost"], "limit_hit": m["limit_hit"],
               "nodes": m.get("nodes", 0),
               "t_ixmap": statistics.median(t_ix[i]), "t_gist": statistics.median(t_gist[i]),
               "t_coalesce": statistics.median(t_coal[i]),
               "t_parse_gist": statistics.median(t_full[i]),
               "isl_stage": isl_stage(isl_obj[i][0], isl_obj[i][1], out_gist[i])}
        if wb is not None:
            row["t_base"] = statistics.median(t_base[i])
            row["base"] = wb.maps[i]["ixmap_out"]
            row["base_cost"] = wb.maps[i]["ixmap_cost"]
        best = None
        for name, res in (("gist", out_gist[i]), ("gist+coalesce", out_coal[i])):
            v = {"text": res.to_str()}
            try:
                exprs, pieces = convert(res)
            except (ValueError, AssertionError) as e:
                v["err"] = f"cannot convert: {e}"
                row[name] = v
                continue
            v["pieces"] = pieces
            if pieces and all(p == 0 for p in pieces):
                # No piece at all: isl found the domain empty (ixmap: KNOWN EMPTY, cost 0).
                v["ours"] = "KNOWN EMPTY"
                v["cost"] = [0, 0]
                v["equal"] = bool(isl_obj[i][1].is_empty())
                v["checked_by"] = "isl is_empty (empty domain)"
            elif all(p == 1 for p in pieces):
                chk = w.ask(f"check {i} " + ";".join(exprs))
                v["ours"] = ", ".join(exprs)
                if "err" in chk:
                    v["err"] = chk["err"]
                else:
                    v["cost"] = chk["cost"]
                    v["equal"] = chk["equal"]
                    v["points"] = chk["points"]
                    v["sampled"] = chk["sampled"]
            else:
                # Piecewise: cost every piece, one select per extra piece; isl checks itself.
                div = ops = 0
                for e, p in zip(exprs, pieces):
                    for piece in (e if p > 1 else [(None, e)]):
                        chk = w.ask(f"check {i} {piece[1]}")
                        if "cost" not in chk:
                            v["err"] = chk.get("err", "no cost")
                            break
                        div += chk["cost"][0]
                        ops += chk["cost"][1]
                    ops += max(p - 1, 0)
                v["ours"] = str(exprs)
                v["cost"] = [div, ops]
                mpa, dom = isl_obj[i][0], isl_obj[i][1]
                v["equal"] = bool(res.intersect_domain(dom).is_equal(mpa))
                v["checked_by"] = "isl is_equal (piecewise)"
            row[name] = v
            if "cost" in v and v.get("equal") and (best is None or v["cost"] < best[1]):
                best = (name, v["cost"])
        row["isl_best"] = best
        rows.append(row)
    w.close()
    if wb is not None:
        wb.close()

    # ------------------------------------------------------------------------ the table
    groups = []
    for r in rows:
        if r["group"] not in groups:
            groups.append(r["group"])
    lines = []
    say = lines.append

    def table(hdr, line):
        """A table: the header, a rule, then `line(group, its rows)` per group and for all."""
        say(hdr)
        say("-" * len(hdr))
        for g in groups + ["all"]:
            say(line(g, [r for r in rows if g == "all" or r["group"] == g]))

    def cols(rs, *keys):
        """Per key, the list of that field over the rows."""
        return [[r[k] for r in rs] for k in keys]
    say(f"ixmap simplify vs isl (islpy {isl_version()}), {args.rounds} rounds interleaved "
        f"in chunks of {args.chunk}; per-map time = median over rounds; times in µs")
    say(f"isl = MultiPwAff over the domain, gist(domain); islpy call overhead "
        f"(a no-op call) median {us(statistics.median(t_call))} µs, included in isl's times")
    say("")
    hdr = (f"{'group':>8} {'maps':>4} | {'ixmap med':>9} {'p99':>8} {'max':>8} | "
           f"{'isl med':>8} {'p99':>8} {'max':>8} | {'ratio med':>9} {'p99':>5} {'/map':>5} | "
           f"{'+coal med':>9} {'parse+gist':>10} | {'cheaper: ixmap':>14} {'equal':>5} "
           f"{'isl':>3} | {'isl chk':>7}")

    def main_line(g, rs):
        ix, gi, co, fu = cols(rs, "t_ixmap", "t_gist", "t_coalesce", "t_parse_gist")
        ratios = [b / a for a, b in zip(ix, gi)]
        cheaper = {"ixmap": 0, "equal": 0, "isl": 0, "n/a": 0}
        for r in rs:
            cheaper[who_cheaper(r)] += 1
        ok = sum(1 for r in rs if r["gist"].get("equal") is True)
        return (f"{g:>8} {len(rs):>4} | {us(pct(ix, .5)):>9} {us(pct(ix, .99)):>8} {us(max(ix)):>8} | "
                f"{us(pct(gi, .5)):>8} {us(pct(gi, .99)):>8} {us(max(gi)):>8} | "
                f"{pct(gi, .5) / pct(ix, .5):>8.1f}x {pct(gi, .99) / pct(ix, .99):>4.1f}x "
                f"{statistics.median(ratios):>4.1f}x | {us(pct(co, .5)):>9} {us(pct(fu, .5)):>10} | "
                f"{cheaper['ixmap']:>14} {cheaper['equal']:>5} {cheaper['isl']:>3} | "
                f"{ok:>3}/{len(rs):<3}" + (f" (n/a {cheaper['n/a']})" if cheaper["n/a"] else ""))

    table(hdr, main_line)
    say("")
    say("where isl simplifies (untimed: parsing the map and its domain and intersecting them, "
        "before the timed gist): ixmap / isl medians in µs per kind of map; ixmap's timed "
        "call does all of it")
    hdr = (f"{'group':>8} | {'empty once built: maps':>22} {'ixmap':>7} {'isl':>6} | "
           f"{'gist removes none: maps':>23} {'ixmap':>7} {'isl':>6} | "
           f"{'gist removes a division: maps':>29} {'ixmap':>7} {'isl':>6}")

    def stage_line(g, rs):
        cells = []
        for stage, width in (("empty", 22), ("built", 23), ("gist", 29)):
            sub = [r for r in rs if r["isl_stage"] == stage]
            if sub:
                ix, gi = cols(sub, "t_ixmap", "t_gist")
                cells.append(f"{len(sub):>{width}} {us(pct(ix, .5)):>7} {us(pct(gi, .5)):>6}")
            else:
                cells.append(f"{0:>{width}} {'':>7} {'':>6}")
        return f"{g:>8} | " + " | ".join(cells)

    table(hdr, stage_line)
    if args.warm:
        say("")
        say(f"warm (--warm {args.warm}): each map {args.warm} times in a row per side, median; "
            f"beside the interleaved medians above (cold/warm: what starting cold costs each side)")
        hdr = (f"{'group':>8} {'maps':>4} | {'ixmap warm':>10} {'isl warm':>8} {'ratio':>6} | "
               f"{'ixmap cold/warm':>15} {'isl cold/warm':>13}")

        def warm_line(g, rs):
            wi, wg, ix, gi = cols(rs, "w_ixmap", "w_gist", "t_ixmap", "t_gist")
            return (f"{g:>8} {len(rs):>4} | {us(pct(wi, .5)):>10} {us(pct(wg, .5)):>8} "
                    f"{pct(wg, .5) / pct(wi, .5):>5.1f}x | {pct(ix, .5) / pct(wi, .5):>14.1f}x "
                    f"{pct(gi, .5) / pct(wg, .5):>12.1f}x")

        table(hdr, warm_line)
    if wb is not None:
        say("")
        say(f"before/after: the baseline build ({args.baseline}) timed in the same "
            f"interleaving; times in µs")
        hdr = (f"{'group':>8} {'maps':>4} | {'before med':>10} {'p99':>8} {'max':>8} | "
               f"{'after med':>9} {'p99':>8} {'max':>8} | {'speed-up med':>12} {'p99':>5} "
               f"{'/map':>5} | {'outputs: same':>13} {'cheaper':>7} {'dearer':>6}")

        def base_line(g, rs):
            a, b = cols(rs, "t_base", "t_ixmap")
            same = sum(1 for r in rs if r["base"] == r["ixmap"])
            cheaper = sum(1 for r in rs if r["base"] != r["ixmap"] and r["ixmap_cost"] is not None
                          and r["base_cost"] is not None
                          and tuple(r["ixmap_cost"]) < tuple(r["base_cost"]))
            dearer = sum(1 for r in rs if r["base"] != r["ixmap"] and r["ixmap_cost"] is not None
                         and r["base_cost"] is not None
                         and tuple(r["ixmap_cost"]) > tuple(r["base_cost"]))
            return (f"{g:>8} {len(rs):>4} | {us(pct(a, .5)):>10} {us(pct(a, .99)):>8} {us(max(a)):>8} | "
                    f"{us(pct(b, .5)):>9} {us(pct(b, .99)):>8} {us(max(b)):>8} | "
                    f"{pct(a, .5) / pct(b, .5):>11.2f}x {pct(a, .99) / pct(b, .99):>4.2f}x "
                    f"{statistics.median([x / y for x, y in zip(a, b)]):>4.2f}x | "
                    f"{same:>13} {cheaper:>7} {dearer:>6}")

        table(hdr, base_line)
    say("")
    say("cheaper: whose output has the lower (div, ops) cost; isl's best of gist and "
        "gist+coalesce, among its outputs that check equal to the input")
    say("isl chk: isl (gist) outputs checked equal to the input (brute force, or isl's own "
        "is_equal for piecewise ones)")
    if skipped:
        say(f"not given to isl: {len(skipped)} maps ({sorted(set(skipped.values()))[:3]})")
    bad = [r for r in rows if r["gist"].get("equal") is False]
    if bad:
        say(f"WARNING: {len(bad)} isl outputs differ from the input at some point "
            f"(a conversion bug?): corpus lines {[r['i'] + 1 for r in bad][:20]}")
    pw = sum(1 for r in rows if any(p > 1 for p in r["gist"].get("pieces", [1])))
    say(f"isl outputs left piecewise: {pw}; ixmap runs stopped by a bound: "
        f"{sum(1 for r in rows if r['limit_hit'])}")

    # Goals (issue 33).
    ix = [r["t_ixmap"] for r in rows]
    gi = [r["t_gist"] for r in rows]
    reshape = [r for r in rows if r["group"] == "reshape"]
    rnd = [r for r in rows if r["group"] == "random"]
    say("")
    say("goals (issue 33; all maps unless said):")
    goal = lambda name, ok, got: say(f"  [{'met' if ok else 'NOT MET'}] {name}: {got}")
    goal("ixmap >= 3x faster than isl at the median", pct(gi, .5) >= 3 * pct(ix, .5),
         f"{pct(gi, .5) / pct(ix, .5):.2f}x")
    goal("ixmap not slower than isl at p99", pct(gi, .99) >= pct(ix, .99),
         f"isl p99 {us(pct(gi, .99))} µs, ixmap p99 {us(pct(ix, .99))} µs")
    goal("median <= 40 µs", pct(ix, .5) <= 40_000, f"{us(pct(ix, .5))} µs")
    goal("max <= 10 ms", max(ix) <= 10_000_000, f"{us(max(ix))} µs")
    if rnd:
        ri = [r["t_ixmap"] for r in rnd]
        rg = [r["t_gist"] for r in rnd]
        goal("random: ixmap not slower than isl at the median", pct(rg, .5) >= pct(ri, .5),
             f"ixmap {us(pct(ri, .5))} µs, isl {us(pct(rg, .5))} µs")
    n_isl = sum(1 for r in reshape if who_cheaper(r) == "isl")
    goal("reshape: ixmap's output as cheap as isl's on every map", n_isl == 0,
         f"isl cheaper on {n_isl} of {len(reshape)}")
    n_all = sum(1 for r in rows if who_cheaper(r) == "isl")
    goal("isl's output cheaper on at most 5 maps", n_all <= 5, f"{n_all} of {len(rows)}")

    isl_cheaper = sorted((r for r in rows if who_cheaper(r) == "isl"),
                         key=lambda r: (r["group"] != "reshape", r["i"]))
    isl_faster = sorted((r for r in rows if r["t_gist"] < r["t_ixmap"]),
                        key=lambda r: r["t_gist"] / r["t_ixmap"])
    say("")
    say(f"maps where isl's output is cheaper ({len(isl_cheaper)}; ixmap cost vs isl cost, "
        f"(div, ops)):")
    for r in isl_cheaper[:25]:
        name, c = r["isl_best"]
        say(f"  line {r['i'] + 1} {r['group']}: {tuple(r['ixmap_cost'])} vs {tuple(c)} ({name})  "
            f"isl: {short(r[name]['ours'])}")
    slowest = sorted(rows, key=lambda r: -r["t_ixmap"])[:10]
    say(f"slowest maps for ixmap (top {len(slowest)}; µs, e-nodes of the largest e-graph, "
        f"bound hit):")
    for r in slowest:
        say(f"  line {r['i'] + 1} {r['group']}: ixmap {us(r['t_ixmap'])} (nodes {r['nodes']}"
            f"{', ' + r['limit_hit'] if r['limit_hit'] else ''}) vs isl {us(r['t_gist'])}  "
            f"{short(r['src'], 110)}")
    say(f"maps where isl is faster than ixmap ({len(isl_faster)}; ixmap µs vs isl µs):")
    for r in isl_faster[:25]:
        say(f"  line {r['i'] + 1} {r['group']}: {us(r['t_ixmap'])} vs {us(r['t_gist'])}  "
            f"{short(r['src'])}")
    say(f"(every map, both outputs and times: target/simplify-isl-report.txt; "
        f"{time.time() - t0:.0f} s)")
    text = "\n".join(lines)
    print(text)

    os.makedirs(os.path.join(ROOT, "target"), exist_ok=True)
    with open(os.path.join(ROOT, "target", "simplify-isl.json"), "w") as f:
        json.dump({"rows": rows, "skipped": skipped}, f, indent=1, default=str)
    with open(os.path.join(ROOT, "target", "simplify-isl-report.txt"), "w") as f:
        f.write(text + "\n\nEvery map (line in the corpus, group, times in µs: ixmap / "
                "isl gist; costs (div, ops)):\n")
        for r in rows:
            best = r["isl_best"]
            f.write(f"\nline {r['i'] + 1} {r['group']}  ixmap {us(r['t_ixmap'])} (nodes {r['nodes']})  isl "
                    f"{us(r['t_gist'])}  cost ixmap {r['ixmap_cost']} isl "
                    f"{best[1] if best else None} ({best[0] if best else 'no checked output'})"
                    f"  -> {who_cheaper(r)}\n  in:    {r['src']}\n  ixmap: {r['ixmap']}\n"
                    f"  isl:   {r['gist'].get('ours', r['gist'].get('err'))}\n")
            if r["gist+coalesce"].get("ours") != r["gist"].get("ours"):
                f.write(f"  isl+c: {r['gist+coalesce'].get('ours', r['gist+coalesce'].get('err'))}\n")
        for i, why in sorted(skipped.items()):
            f.write(f"\nline {i + 1} not given to isl: {why}\n  in: {maps[i]['src']}\n")
    if args.strict:
        failed = [r["i"] for r in rows
                  if any(r[v].get("equal") is not True for v in ("gist", "gist+coalesce"))]
        if failed or not rows:
            print(f"FAILED: isl outputs not converted or not equal to the input: maps {failed}"
                  f" (details in target/simplify-isl-report.txt)", file=sys.stderr)
            sys.exit(1)


def who_cheaper(r):
    """"ixmap", "equal", "isl", or "n/a" (no checked isl output, or no ixmap cost)."""
    if r["isl_best"] is None or r["ixmap_cost"] is None:
        return "n/a"
    a, b = tuple(r["ixmap_cost"]), tuple(r["isl_best"][1])
    return "ixmap" if a < b else "isl" if b < a else "equal"


def short(s, n=150):
    s = str(s)
    return s if len(s) <= n else s[:n - 3] + "..."


def isl_version():
    try:
        from importlib.metadata import version
        return version("islpy")
    except Exception:
        return "?"


if __name__ == "__main__":
    main()
