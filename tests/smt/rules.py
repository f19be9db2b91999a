#!/usr/bin/env python3
"""Proves every rewrite rule of ixmap's simplifier (src/simplify/rules/*.rs, the analysis'
`interval-constant`, and the negative-divisor normalisation) for all integers, with z3.

Each rule is stated as in the comment above it in the rule table: an identity between two
integer expressions, under its side condition. The divisors and coefficients the rules
compute with (c, d, g, k, ...) are symbolic too, so each proof covers every constant the
rule could be applied with, not a sample.

Semantics (SPEC): for a divisor b > 0, `a floordiv b = floor(a / b)`, `a mod b = a - b *
floor(a / b)` (in [0, b - 1]), `a ceildiv b = ceil(a / b)`. z3's integer `/` and `%` agree
with these for a positive divisor (SMT-LIB div/mod are Euclidean), which `check_semantics`
proves against the definition by inequalities before anything else is trusted. Negative
divisors are defined from the inequalities directly (`fd_any`).

Usage: rules.py            prove all, print `proved NAME` per rule, exit 1 on any failure
       rules.py --names    print the rule names only
"""
import sys

import z3

TIMEOUT_MS = 20000
SYMBOLIC_RLIMIT = 30_000_000
LINEAR_RLIMIT = 50_000_000
CONST_MAX = int(__import__("os").environ.get("IXMAP_SMT_CONST_MAX", "12"))


def I(*names):
    return [z3.Int(n) for n in names]


def fd(a, b):
    """a floordiv b for b > 0 (z3 div: Euclidean, equal to floor for b > 0)."""
    return a / b


def md(a, b):
    """a mod b for b > 0."""
    return a % b


def cd(a, b):
    """a ceildiv b for b > 0: ceil(a / b) = -floor(-a / b)."""
    return -((-a) / b)


RULES = []


def claim(name, formula, cond=True, consts=()):
    """A fact that is not an identity (a congruence, a bound): `cond` implies `formula`."""
    RULES.append((name, formula, z3.BoolVal(True), cond, consts))


def rule(name, lhs, rhs, cond=True, consts=()):
    """`consts`: the rule's constants (divisors, coefficients the rule computes with)."""
    RULES.append((name, lhs, rhs, cond, consts))


def check(claim_false, rlimit):
    # A fresh context per check: z3's verdict within a resource limit depends on the terms
    # a context has seen, so each claim is decided as if alone (the same verdict whatever
    # rules come before it).
    ctx = z3.Context()
    s = z3.Solver(ctx=ctx)
    # A resource limit, not a time limit: the same verdict on a loaded machine.
    s.set("rlimit", rlimit)
    s.add(claim_false.translate(ctx))
    r = s.check()
    if r == z3.sat:
        return f"counterexample: {s.model()}"
    if r == z3.unsat:
        return None
    return "unknown"


def prove(name, lhs, rhs, cond, consts):
    """None when proven for all integers. First with every constant symbolic (nonlinear: z3
    may give up within SYMBOLIC_RLIMIT); then, if it gave up, once per value of the constants in
    [1, CONST_MAX] (each a linear problem, which z3 decides), every variable still symbolic.
    Returns (error or None, how it was proven)."""
    err = check(z3.And(cond, lhs != rhs), SYMBOLIC_RLIMIT)
    if err is None:
        return None, "all constants"
    if err != "unknown" or not consts:
        return (err if err != "unknown" else "z3 could not decide"), ""
    import itertools
    for vals in itertools.product(range(1, CONST_MAX + 1), repeat=len(consts)):
        sub = list(zip(consts, [z3.IntVal(v) for v in vals]))
        claim = z3.substitute(z3.And(cond, lhs != rhs), *sub)
        err = check(claim, LINEAR_RLIMIT)
        if err == "unknown":
            # Still nonlinear in the variables left symbolic (k·q in mod-inner-mod): z3's
            # search within one resource limit varies from run to run (it gave up once in
            # CI-like runs on c = 2, m = 3); a second try with ten times the limit decides it.
            err = check(claim, 10 * LINEAR_RLIMIT)
        if err is not None:
            return f"{dict(zip(map(str, consts), vals))}: {err}", ""
    return None, f"constants {', '.join(map(str, consts))} in [1, {CONST_MAX}]"


# ---------------------------------------------------------------- semantics check
def check_semantics():
    a, b, q = I("a", "b", "q")
    failures = []
    # z3's a / b for b > 0 is the q with b*q <= a <= b*q + b - 1 (floor), and a % b = a - b*q.
    for what, claim in [
        ("floordiv is floor", z3.Implies(b > 0, z3.And(b * fd(a, b) <= a, a <= b * fd(a, b) + b - 1))),
        ("mod is a - b*floor", z3.Implies(b > 0, md(a, b) == a - b * fd(a, b))),
        ("ceildiv is ceil", z3.Implies(b > 0, z3.And(b * cd(a, b) >= a, a > b * cd(a, b) - b))),
    ]:
        s = z3.Solver()
        s.set("timeout", TIMEOUT_MS)
        s.add(z3.Not(claim))
        if s.check() != z3.unsat:
            failures.append(what)
    return failures


# ---------------------------------------------------------------- the rule tables
a, b, x, y, A, B, R, t, k, c, d, g, e, m, q, j, r, kp = I(
    "a", "b", "x", "y", "A", "B", "R", "t", "k", "c", "d", "g", "e", "m", "q", "j", "r", "kp")

# add.rs
rule("add-zero", a + 0, a)
# the linear view: like terms collected (k1·t + k2·t = (k1 + k2)·t, any order)
k1, k2 = I("k1", "k2")
rule("add-collect", (k1 * t + a) + (k2 * t + b), (k1 + k2) * t + (a + b))
rule("add-floordiv-to-mod", k * x - k * c * fd(x, c) + R, k * md(x, c) + R, c > 0, (c, k))

# mul.rs
rule("mul-one", a * 1, a)
rule("mul-zero", a * 0, 0)
rule("mul-distribute", (k1 * a + k2 * b + r) * k, (k * k1) * a + (k * k2) * b + k * r)

# floordiv.rs
rule("floordiv-one", fd(a, 1), a)
# (c·A + B + k) floordiv c = A + k floordiv c + (B + k mod c) floordiv c
rule("floordiv-split-multiples", fd(c * A + B + k, c), A + fd(k, c) + fd(B + md(k, c), c), c > 0, (c,))
# (g·A + B) floordiv (g·e) = A floordiv e    when 0 <= B <= g - 1 (e = c / g; e = 1 is g = c)
rule("floordiv-small-remainder", fd(g * A + B, g * e), fd(A, e),
     z3.And(g > 0, e > 0, 0 <= B, B <= g - 1), (g, e))
rule("floordiv-nested", fd(fd(x, c), k), fd(x, c * k), z3.And(c > 0, k > 0), (c, k))
# (x mod (c·e)) floordiv c = (x floordiv c) mod e
rule("floordiv-of-mod", fd(md(x, c * e), c), md(fd(x, c), e), z3.And(c > 0, e > 0), (c, e))
rule("floordiv-nested-sum", fd(A + fd(B, c), d), fd(c * A + B, c * d), z3.And(c > 0, d > 0), (c, d))
# (c·A + B) floordiv c = A + w    when B in [w·c, w·c + c - 1] (A = Σ qᵢ·tᵢ for any integers qᵢ,
# B = Σ (kᵢ - qᵢ·c)·tᵢ + k0, the remainder, in one window)
rule("floordiv-split-window", fd(c * A + B, c), A + q, z3.And(c > 0, q * c <= B, B <= q * c + c - 1), (c,))

# ceildiv.rs
rule("ceildiv-one", cd(a, 1), a)
rule("ceildiv-to-floordiv", cd(a, c), fd(a + c - 1, c), c > 0, (c,))

# modulo.rs
rule("mod-one", md(a, 1), 0)
rule("mod-in-range", md(a, c), a - q * c, z3.And(c > 0, q * c <= a, a <= q * c + c - 1), (c,))
# (k·t + R) mod c = (r·t + R) mod c    when k ≡ r (mod c), i.e. k = r + j·c (every term
# reduced alike; the constant is the case t = 1)
rule("mod-drop-multiples", md(k * t + R, c), md(r * t + R, c), z3.And(c > 0, k == r + j * c), (c, j))
# (g·A + B) mod (g·e) = g·(A mod e) + B    when 0 <= B <= g - 1
rule("mod-small-remainder", md(g * A + B, g * e), g * md(A, e) + B,
     z3.And(g > 0, e > 0, 0 <= B, B <= g - 1), (g, e))
# (x mod (c·e)) mod c = x mod c
rule("mod-nested", md(md(x, c * e), c), md(x, c), z3.And(c > 0, e > 0), (c, e))
rule("mod-nested-sum", md(A + fd(B, c), d), fd(md(c * A + B, c * d), c), z3.And(c > 0, d > 0), (c, d))

# linearize.rs: k·c·(x floordiv c) + k·(x mod c) + rest = k·x + rest, and the same with
# x floordiv c found as y floordiv (a·c) where x = y floordiv a
rule("linearize-cancel", k * c * fd(x, c) + k * md(x, c) + R, k * x + R, c > 0, (c, k))
rule("linearize-cancel (nested quotient)",
     k * c * fd(y, a * c) + k * md(fd(y, a), c) + R, k * fd(y, a) + R, z3.And(a > 0, c > 0), (a, c, k))

rule("linearize-cancel-mod", md(kp * fd(x, m) + k * md(x, m) + R, c), md(k * x + R, c),
     z3.And(c > 0, m > 0, kp == k * m + j * c), (c, m))
# (with the quotient found as y floordiv (a·m) = (y floordiv a) floordiv m, floordiv-nested
# above: the rule proven for every x, at x = y floordiv a)
# kq·(x mod c) + kp·(x floordiv c) + R = kq·x + (kp - kq·c)·(x floordiv c) + R, and the same
# with x floordiv c found as y floordiv (a·c) where x = y floordiv a
rule("linearize-basis-change", k * md(x, c) + kp * fd(x, c) + R, k * x + (kp - k * c) * fd(x, c) + R,
     c > 0, (c, k, kp))
rule("linearize-basis-change (nested quotient)",
     k * md(fd(y, a), c) + kp * fd(y, a * c) + R, k * fd(y, a) + (kp - k * c) * fd(y, a * c) + R,
     z3.And(a > 0, c > 0), (a, c, k, kp))
# k·(y mod m) + B = (k·y + B) mod (k·m)    when 0 <= B <= k - 1
rule("linearize-merge-digits", k * md(y, m) + B, md(k * y + B, k * m),
     z3.And(k > 0, m > 0, 0 <= B, B <= k - 1), (k, m))

# modulo.rs (continued)
# (k·(x mod m) + R) mod c = (k·x + R) mod c    when c divides k·m (k·m = c·j)
#   (x written m·q + ρ with ρ = x mod m in [0, m - 1], as the semantics check proves)
rho = z3.Int("rho")
rule("mod-inner-mod", md(k * rho + R, c), md(k * (m * q + rho) + R, c),
     z3.And(c > 0, m > 0, 0 <= rho, rho < m, k * m == c * j), (c, m, k))
# (k·t + R) mod c = (k·r + R) mod c    when t ∈ m·ℤ + r (t = m·u + r) and k·m = c·j
u = z3.Int("u")
rule("mod-congruent-term", md(k * (m * u + r) + R, c), md(k * r + R, c),
     z3.And(c > 0, m > 0, k * m == c * j), (c, m, k))

# congruence.rs: the transfer functions of the modulus-remainder analysis, each for every
# member x = m·u + r of its operands' classes (the claim: the result is in the class
# computed; "x ∈ g·ℤ + r" written (x - r) mod g = 0). gcds are stated by divisibility:
# any common divisor g of the moduli is a modulus of the result, the gcd included.
v, w, r1, r2, m1, m2, a1, a2, e1, e2, e3 = I("v", "w", "r1", "r2", "m1", "m2", "a1", "a2", "e1", "e2", "e3")
X1 = g * a1 * u + r1
Y2 = g * a2 * v + r2
claim("congruence-add", md(X1 + Y2 - (r1 + r2), g) == 0, g > 0, (g,))
# (m1·u + r1)(m2·v + r2) ∈ g·ℤ + r1·r2 when g divides m1·m2, m1·r2 and m2·r1
claim("congruence-mul", md((m1 * u + r1) * (m2 * v + r2) - r1 * r2, g) == 0,
      z3.And(g > 0, m1 * m2 == g * e1, m1 * r2 == g * e2, m2 * r1 == g * e3), (g, m1, m2))
# (c·a·u + r) fd c = a·u + r fd c (modulus a, remainder r fd c); the same for ceildiv
rule("congruence-floordiv", fd(c * a * u + r, c), a * u + fd(r, c), c > 0, (c,))
rule("congruence-ceildiv", cd(c * a * u + r, c), a * u + cd(r, c), c > 0, (c,))
# (c·a·u + r) mod c = r mod c (a constant); else x mod (g·e) ∈ g·ℤ + r for x ∈ g·ℤ + r
rule("congruence-mod", md(c * a * u + r, c), md(r, c), c > 0, (c,))
claim("congruence-mod", md(md(g * a * u + r, g * e) - r, g) == 0, z3.And(g > 0, e > 0), (g, e))
# min and max are one operand: in g·ℤ + r1 when g divides both moduli and r2 - r1
claim("congruence-minmax", md(z3.If(X1 <= Y2, X1, Y2) - r1, g) == 0,
      z3.And(g > 0, r2 == r1 + g * t), (g,))
claim("congruence-minmax", md(z3.If(X1 >= Y2, X1, Y2) - r1, g) == 0,
      z3.And(g > 0, r2 == r1 + g * t), (g,))
# snapping an interval: lo <= x for x ∈ m·ℤ + r (0 <= r < m) gives lo + ((r - lo) mod m) <= x,
# and x <= hi gives x <= hi - ((hi - r) mod m)
lo, hi = I("lo", "hi")
claim("congruence-snap", lo + md(r - md(lo, m), m) <= m * u + r,
      z3.And(m > 0, 0 <= r, r < m, lo <= m * u + r), (m,))
claim("congruence-snap", m * u + r <= hi - md(md(hi, m) - r, m),
      z3.And(m > 0, 0 <= r, r < m, m * u + r <= hi), (m,))
# a constraint e in [lo, hi] of the map narrows the class of e (rewrite.rs); one point is
# that constant
rule("constraint-fact", a, lo, z3.And(lo <= a, a <= hi, lo == hi))
# analysis.rs: a class whose interval is one point is that constant
rule("interval-constant", a, q, z3.And(q <= a, a <= q))
# min(a, b) = a when b - a >= 0 on the domain (else b when b - a <= 0), rules/minmax.rs;
# min(a, b) is the smaller operand, max(a, b) the larger (XLA's symbolic min/max).
rule("min-decided", z3.If(a <= b, a, b), a, b - a >= 0)
rule("min-decided", z3.If(a <= b, a, b), b, b - a <= 0)
rule("max-decided", z3.If(a >= b, a, b), a, b - a <= 0)
rule("max-decided", z3.If(a >= b, a, b), b, b - a >= 0)


# twovalues.rs: (k·t + k0) op c = N(v) + (N(v + 1) - N(v))·(t - v) with N(x) = (k·x + k0) op c,
# when t takes two values, v and v + 1 (op floordiv or mod; ceildiv reaches it as a floordiv)
t2, v2, k0 = I("t2", "v2", "k0")
for name, op in [("floordiv-two-values", fd), ("mod-two-values", md)]:
    def N(x, op=op):
        return op(k * x + k0, c)
    rule(name, N(t2), N(v2) + (N(v2 + 1) - N(v2)) * (t2 - v2),
         z3.And(c > 0, v2 <= t2, t2 <= v2 + 1), (c, k))
# ---------------------------------------------------------------- negative divisors
def fd_any(a, b, out):
    """The q with q = floor(a / b) for any nonzero b, by its defining inequalities."""
    return z3.Or(z3.And(b > 0, b * out <= a, a < b * out + b),
                 z3.And(b < 0, b * out >= a, a > b * out + b))


def normalisation():
    """x fd -c = (-x) fd c;  x cd -c = -(x fd c);  x mod -c = -((-x) mod c)   (c > 0),
    with floordiv, ceildiv and mod by a negative divisor defined by SPEC's formulas:
    floor(a/b), ceil(a/b) = -floor(-a/b), a - b*floor(a/b)."""
    out = []
    q1, q2 = I("q1", "q2")
    nb = -c
    spec = z3.And(c > 0, fd_any(x, nb, q1), fd_any(-x, nb, q2))
    out.append(("normalise-floordiv-negative", q1, fd(-x, c), spec, (c,)))
    out.append(("normalise-ceildiv-negative", -q2, -fd(x, c), spec, (c,)))
    out.append(("normalise-mod-negative", x - nb * q1, -md(-x, c), spec, (c,)))
    return out


def main():
    if "--names" in sys.argv:
        for name, *_ in RULES:
            print(name)
        return 0
    bad = check_semantics()
    for w in bad:
        print(f"FAILED semantics: {w}")
    for name, lhs, rhs, cond, consts in RULES + normalisation():
        err, how = prove(name, lhs, rhs, cond, consts)
        if err is None:
            print(f"proved {name} ({how})")
        else:
            print(f"FAILED {name}: {err}")
            bad.append(name)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
