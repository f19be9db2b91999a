#!/usr/bin/env python3
"""Writes simplify-corpus.txt: the maps `benches/simplify.rs` times, one per line as
`KIND<TAB>MAP`. Deterministic (fixed seed); rerun to regenerate.

Kinds: seed (the seed examples), reshape (reshape chains, composed by substitution; at
the end of the file, chains of 2-5 reshapes with transposes and issue 12's two maps),
thread (thread-id -> tensor maps like seed 001's), random (random trees with nested
floordiv/mod/ceildiv by small constants, negative bounds, constraints), dumps (kept from
the file as it is: 200 maps of real fusions, made by the simplify bench's --dumps-corpus).
"""
import random, re, math, os

rng = random.Random(20261123)
out = []

SEEDS = [
    "(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14]",
    "(d0, d1, d2) -> ((100 * d0 + 10 * d1 + d2) floordiv 100, ((100 * d0 + 10 * d1 + d2) mod 100) floordiv 10, d2 mod 10), domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]",
    "(d0, d1, d2) -> ((16 * d0 + 4 * d1 + d2) floordiv 8, (16 * d0 + 4 * d1 + d2) mod 8), domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]",
    "(d0, d1) -> (-((-11 * d0 - d1 + 109) floordiv 11) + 9), domain: d0 in [0, 9], d1 in [0, 10]",
    "(d0, d1) -> (-((d0 * -11 - d1 + 109) floordiv 11) + 9, d0 * 11 + d1 + ((d0 * -11 - d1 + 109) floordiv 11) * 11 - 99), domain: d0 in [0, 7], d1 in [0, 8]",
    "(d0) -> (d0 mod 16), domain: d0 in [0, 7]",
    "(d0)[s0, s1] -> (s1 mod 3, 2 * d0, s1, s0), domain: d0 in [0, 9], s0 in [0, 69], s1 in [0, 19], d0 + s1 in [0, 20], d0 mod 8 in [0, 0], s0 mod 3 in [1, 1]",
    "(d0)[s0] -> (d0 + s0), domain: d0 in [0, 5], s0 in [1, 3], d0 + s0 in [0, 20]",
    "(d0, d1) -> ((d0 - 1) floordiv 2, d1 - 4), domain: d0 in [1, 7], d1 in [4, 7], (d0 - 1) mod 2 in [0, 0]",
    "(th_x, th_y, th_z, bl_x, bl_y, bl_z)[vector_elem] -> ((bl_x * 128 + th_x) floordiv 3000, ((bl_x * 128 + th_x) floordiv 75) mod 40, ((bl_x * 128 + th_x) mod 75) * 4 + vector_elem), domain: th_x in [0, 127], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 468], bl_y in [0, 0], bl_z in [0, 0], vector_elem in [0, 3], bl_x * 128 + th_x in [0, 59999]",
    "(d0) -> ((d0 floordiv 8) * 8 + d0 mod 8), domain: d0 in [0, 100]",
]
for s in SEEDS:
    out.append(("seed", s))

def domain(names, extents):
    return ", ".join(f"{n} in [0, {e - 1}]" for n, e in zip(names, extents))

def linear(names, extents):
    terms, stride = [], 1
    for n, e in reversed(list(zip(names, extents))):
        terms.append(n if stride == 1 else f"{n} * {stride}")
        stride *= e
    return " + ".join(reversed(terms))

def delinearize(lin, extents):
    res, stride = [], 1
    strides = []
    for e in reversed(extents):
        strides.append(stride)
        stride *= e
    strides = list(reversed(strides))
    for i, (e, st) in enumerate(zip(extents, strides)):
        x = f"({lin})" if st == 1 else f"({lin}) floordiv {st}"
        if i > 0:
            x = f"({x}) mod {e}" if st != 1 else f"({lin}) mod {e}"
        res.append(x)
    return res

def reshape_exprs(out_shape, in_shape, names):
    """Output-to-input indexing of a reshape: output index -> operand index."""
    return delinearize(linear(names, out_shape), in_shape)

def substitute(expr, exprs):
    return re.sub(r"\bd(\d+)\b", lambda m: f"({exprs[int(m.group(1))]})", expr)

def factorizations(n, k):
    if k == 1:
        return [[n]]
    out = []
    for f in range(2, n):
        if n % f == 0:
            for rest in factorizations(n // f, k - 1):
                out.append([f] + rest)
    return out

shapes = {}
for n in [24, 60, 120, 240, 360, 1000, 4096]:
    shapes[n] = [s for k in (1, 2, 3) for s in factorizations(n, k)]
count = 0
while count < 110:
    n = rng.choice(list(shapes))
    chain = [rng.choice(shapes[n]) for _ in range(rng.choice([2, 3]))]
    if any(len(s) == 1 for s in chain[:1]):
        continue
    out_shape = chain[0]
    names = [f"d{i}" for i in range(len(out_shape))]
    exprs = names
    # output-to-input through the chain: out_shape <- chain[1] <- chain[2] ...
    prev = out_shape
    for shape in chain[1:]:
        step = reshape_exprs(prev, shape, [f"d{i}" for i in range(len(prev))])
        exprs = [substitute(e, exprs) for e in step]
        prev = shape
    if rng.random() < 0.5:  # round trip back to the start
        step = reshape_exprs(prev, out_shape, [f"d{i}" for i in range(len(prev))])
        exprs = [substitute(e, exprs) for e in step]
    out.append(("reshape", f"({', '.join(names)}) -> ({', '.join(exprs)}), domain: {domain(names, out_shape)}"))
    count += 1

count = 0
while count < 60:
    shape = [rng.choice([2, 3, 5, 8, 10, 16, 20, 32, 40, 64, 300]) for _ in range(rng.choice([1, 2, 3]))]
    total = math.prod(shape)
    block = rng.choice([32, 64, 128, 256])
    vec = rng.choice([1, 2, 4])
    if shape[-1] % vec:
        continue
    threads = total // vec
    blocks = -(-threads // block)
    lin = f"(bl_x * {block} + th_x) * {vec} + v" if vec > 1 else f"bl_x * {block} + th_x"
    exprs = delinearize(lin, shape)
    dom = f"th_x in [0, {block - 1}], bl_x in [0, {blocks - 1}]"
    syms = "[v]" if vec > 1 else ""
    if vec > 1:
        dom += f", v in [0, {vec - 1}]"
    if threads % block:
        dom += f", bl_x * {block} + th_x in [0, {threads - 1}]"
    out.append(("thread", f"(th_x, bl_x){syms} -> ({', '.join(exprs)}), domain: {dom}"))
    count += 1

def rand_leaf(vs):
    terms = [f"{v} * {rng.randint(-17, 17)}" for v in rng.sample(vs, rng.randint(1, min(3, len(vs))))]
    return " + ".join(terms) + f" + {rng.randint(-30, 30)}"

def rand_expr(vs, depth):
    if depth == 0 or rng.random() < 0.25:
        return rand_leaf(vs) if rng.random() < 0.75 else rng.choice(vs)
    a = rand_expr(vs, depth - 1)
    op = rng.choice(["+", "*", "floordiv", "mod", "ceildiv", "lin", "modfloor"])
    if op == "+":
        return f"({a}) + ({rand_expr(vs, depth - 1)})"
    if op == "*":
        return f"({a}) * {rng.randint(-9, 9)}"
    if op == "lin":
        c, k = rng.randint(1, 12), rng.randint(-3, 3)
        return f"(({a}) floordiv {c}) * {c * k} + (({a}) mod {c}) * {k}"
    if op == "modfloor":
        c, k = rng.randint(1, 6), rng.randint(1, 6)
        return f"(({a}) mod {c * k}) floordiv {c}"
    return f"({a}) {op} {rng.randint(1, 12)}"

count = 0
while count < 160:
    nd, ns = rng.randint(1, 3), rng.randint(0, 2)
    dims = [f"d{i}" for i in range(nd)]
    syms = [f"s{i}" for i in range(ns)]
    vs = dims + syms
    bounds = []
    for v in vs:
        lo = rng.randint(-8, 6)
        bounds.append(f"{v} in [{lo}, {lo + rng.randint(0, 40)}]")
    results = [rand_expr(vs, rng.randint(1, 4)) for _ in range(rng.randint(1, 3))]
    cons = []
    for _ in range(rng.randint(0, 2)):
        lo = rng.randint(-20, 20)
        e = rand_expr(vs, rng.randint(0, 2))
        if e in vs:
            e = f"{e} + {rng.choice(vs)}"
        cons.append(f"{e} in [{lo}, {lo + rng.randint(0, 60)}]")
    head = f"({', '.join(dims)})" + (f"[{', '.join(syms)}]" if syms else "")
    out.append(("random", f"{head} -> ({', '.join(results)}), domain: {', '.join(bounds + cons)}"))
    count += 1

# Reshape/bitcast chains as fusions produce them (issue 12): 2-5 reshapes between random
# factorizations of the same element count, some with transposes of whole dimensions in
# between, composed output-to-input by substitution (unsimplified, as composition leaves
# them). Half end with a reshape back to the output shape (the identity when no transpose
# intervenes). A generator of its own, so the maps above stay as they were.
crng = random.Random(20261124)

def transpose_exprs(exprs, perm):
    """Operand index of `y = transpose(x, dimensions=perm)` at y's index `exprs`:
    x's dimension perm[i] is y's dimension i."""
    res = [None] * len(exprs)
    for i, p in enumerate(perm):
        res[p] = exprs[i]
    return res

def random_factorization(primes, rank):
    ps = primes[:]
    crng.shuffle(ps)
    rank = min(rank, len(ps))
    cuts = sorted(crng.sample(range(1, len(ps)), rank - 1))
    groups = [ps[a:b] for a, b in zip([0] + cuts, cuts + [len(ps)])]
    return [math.prod(g) for g in groups]

def prime_factors(n):
    out, f = [], 2
    while n > 1:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 1
    return out

CHAIN_DIMS = [2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 64, 128]
out.append(("reshape", "(d0, d1) -> ((d0 * 3 + d1 floordiv 32) floordiv 5), domain: d0 in [0, 99], d1 in [0, 255]"))
out.append(("reshape", "(d0, d1) -> (((d0 * 96 + d1) floordiv 160) * 160 + ((d0 * 3 + d1 floordiv 32) mod 5) * 32 + d1 mod 32), domain: d0 in [0, 99], d1 in [0, 255]"))
count = 0
while count < 90:
    start = [crng.choice(CHAIN_DIMS) for _ in range(crng.randint(2, 4))]
    n = math.prod(start)
    if n > 65536 or n < 24:
        continue
    primes = prime_factors(n)
    n_reshapes = crng.randint(2, 5)
    ops = ["reshape"] * n_reshapes
    n_transposes = crng.choice([0, 0, 1, 1, 2])
    for _ in range(n_transposes):
        ops.insert(crng.randint(0, len(ops)), "transpose")
    round_trip = crng.random() < 0.5
    names = [f"d{i}" for i in range(len(start))]
    exprs, prev = names, start
    for k, op in enumerate(ops):
        last = k == len(ops) - 1
        if op == "transpose":
            if len(prev) < 2:
                continue
            perm = list(range(len(prev)))
            while perm == sorted(perm):
                crng.shuffle(perm)
            exprs = transpose_exprs(exprs, perm)
            shape = [None] * len(prev)
            for i, p in enumerate(perm):
                shape[p] = prev[i]
            prev = shape
            continue
        shape = start if (last and round_trip) else random_factorization(primes, crng.randint(1, 4))
        step = reshape_exprs(prev, shape, [f"d{i}" for i in range(len(prev))])
        exprs = [substitute(e, exprs) for e in step]
        prev = shape
    text = f"({', '.join(names)}) -> ({', '.join(exprs)}), domain: {domain(names, start)}"
    if len(text) > 6000:
        continue
    out.append(("reshape", text))
    count += 1

here = os.path.dirname(os.path.abspath(__file__))
path = os.path.join(here, "simplify-corpus.txt")
# The `dumps` group is not generated here: it comes from the XLA dumps through ixmap's own
# fusion indexing (`cargo bench --bench simplify -- --dumps-corpus DIR...`, see
# benches/simplify.rs), and is kept as the file has it, at the end.
dumps = []
if os.path.exists(path):
    dumps = [l.rstrip("\n").split("\t", 1) for l in open(path) if l.startswith("dumps\t")]
with open(path, "w") as f:
    for kind, m in out + [tuple(d) for d in dumps]:
        f.write(f"{kind}\t{m}\n")
print(len(out), "maps generated,", len(dumps), "dumps maps kept")
