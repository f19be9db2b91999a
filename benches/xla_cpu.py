#!/usr/bin/env python3
"""ixmap's CPU kernels side by side with XLA:CPU (JAX) and numpy, in one run, interleaved.

    benches/xla_cpu.sh               # sets up target/xla-venv (jax[cpu], numpy) and runs this

or, with a Python that has jax and numpy:

    cargo build --release --bins && python3 benches/xla_cpu.py [--rounds N] [--quick]

For each fusion of issue 15, ixmap writes the kernel (`emit FUSION target=cpu`), which is
compiled exactly as `bench` compiles it (cc -O3 -march=native -fno-trapping-math -fopenmp) and called through
ctypes; XLA's is the same computation under `jax.jit` on the CPU with the output buffer
donated (each call reuses the previous output's buffer, so neither side allocates per call).

Before any timing, every fusion is verified twice: `ixmap bench FUSION reps=1` checks the
kernel against ixmap's reference interpreter element by element, and the script checks the
kernel's output against XLA's (relative 1e-5, 1e-4 for reductions). A fusion that fails
either check prints the failure and no figure.

The kernels run with OpenMP's dynamic adjustment (OMP_DYNAMIC=true unless set): fewer
threads when the machine's load leaves fewer cores idle, as `ixmap bench` runs them. The
report ends with the threads busy on each side.

Timing: warm-ups, then rounds; each round calls every variant of every fusion once, in a
rotating order (a sample shorter than 2 ms repeats the call and divides). The table shows the
median over rounds of the per-round ratio ixmap time / XLA time with a sign-test 95%
interval; "slower" or "faster" only when the interval excludes 1. The memcpy line compares
ixmap's baseline (a libc memcpy of the bytes, as its bench times) with numpy's copy of the
same bytes.
"""

import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# ixmap's kernels with OpenMP's dynamic adjustment, as `ixmap bench` runs them
# (bench::cpu::set_threads): a parallel loop gets fewer threads when the load average leaves
# fewer cores idle. XLA:CPU's pool adapts by itself (work stealing); a fixed OpenMP team on
# a loaded machine waits for its slowest thread: softmax f32[4096,1024] at load 5 to 6 took
# 5.8 ms on 2 threads without it, 1.6 ms with it. OMP_DYNAMIC=false in the environment
# measures the fixed team.
os.environ.setdefault("OMP_DYNAMIC", "true")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_SAMPLE_S = 2e-3

MAXF = """maxf {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
addf {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""


def softmax_hlo(name, rows, cols):
    return MAXF.replace("maxf", f"maxf_{name}").replace("addf", f"addf_{name}") + f"""{name} {{
  p0 = f32[{rows},{cols}] parameter(0)
  c = f32[] constant(-inf)
  mx = f32[{rows}] reduce(p0, c), dimensions={{1}}, to_apply=maxf_{name}
  b = f32[{rows},{cols}] broadcast(mx), dimensions={{0}}
  sub = f32[{rows},{cols}] subtract(p0, b)
  e = f32[{rows},{cols}] exponential(sub)
  z = f32[] constant(0)
  sum = f32[{rows}] reduce(e, z), dimensions={{1}}, to_apply=addf_{name}
  bs = f32[{rows},{cols}] broadcast(sum), dimensions={{0}}
  ROOT d = f32[{rows},{cols}] divide(e, bs)
}}
"""


def softmax_jax(x):
    m = jnp.max(x, axis=1, keepdims=True)
    e = jnp.exp(x - m)
    return e / jnp.sum(e, axis=1, keepdims=True)


def softmax_case(rows, cols):
    """The row softmax of f32[rows, cols], named softmax{cols}."""
    name = f"softmax{cols}"
    return dict(
        name=name,
        label=f"row softmax f32[{rows},{cols}]",
        kind="reduction",
        hlo=softmax_hlo(name, rows, cols),
        inputs=[(rows, cols)],
        out=(rows, cols),
        jax=softmax_jax,
        goal=1.0,
    )


def cases(quick):
    s = 4 if quick else 1  # --quick: smaller tensors, for a smoke test
    a, b, c = 64 // s, 256, 1024
    n = 4096 // s
    return [
        dict(
            name="add_reshape",
            label=f"add after reshape f32[{a},{b},{c}]->[{a*b},{c}]",
            kind="elementwise",
            hlo=f"""add_reshape {{
  p0 = f32[{a},{b},{c}] parameter(0)
  p1 = f32[{a*b},{c}] parameter(1)
  r = f32[{a*b},{c}] reshape(p0)
  ROOT o = f32[{a*b},{c}] add(r, p1)
}}
""",
            inputs=[(a, b, c), (a * b, c)],
            out=(a * b, c),
            jax=lambda p0, p1: jnp.reshape(p0, (a * b, c)) + p1,
            goal=1.0,
        ),
        dict(
            name="bcast_mul",
            label=f"broadcast multiply f32[{a*b},{c}] x f32[{c}]",
            kind="elementwise",
            hlo=f"""bcast_mul {{
  p0 = f32[{a*b},{c}] parameter(0)
  p1 = f32[{c}] parameter(1)
  b = f32[{a*b},{c}] broadcast(p1), dimensions={{1}}
  ROOT o = f32[{a*b},{c}] multiply(p0, b)
}}
""",
            inputs=[(a * b, c), (c,)],
            out=(a * b, c),
            jax=lambda p0, p1: p0 * p1[None, :],
            goal=1.0,
        ),
        dict(
            name="transpose",
            label=f"transpose f32[{n},{n}] (32x32 tiles)",
            kind="elementwise",
            hlo=f"""transpose {{
  p0 = f32[{n},{n}] parameter(0)
  ROOT t = f32[{n},{n}] transpose(p0), dimensions={{1,0}}
}}
""",
            inputs=[(n, n)],
            out=(n, n),
            jax=lambda p0: jnp.transpose(p0),
            goal=1.5,
        ),
        softmax_case(n, 32),
        softmax_case(n, 1024),
    ]


def input_value(k, shape):
    """ixmap's known inputs (gpu::reference::input_value), element i of input k."""
    n = math.prod(shape)
    i = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = (i * np.uint64(2654435761) + np.uint64(k * 97)) % np.uint64(1024)
    return (h.astype(np.float64) / 64.0 - 8.0).astype(np.float32).reshape(shape)


def ixmap_bin():
    # Where cargo put it: $CARGO_TARGET_DIR (as the .sh built it) or the repository's target/.
    target = os.path.abspath(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"))
    p = os.environ.get("IXMAP", os.path.join(target, "release", "ixmap"))
    if not os.path.exists(p):
        sys.exit(f"{p} not found: run `cargo build --release --bins` first (or set IXMAP=)")
    return p


def ixmap_run(script):
    r = subprocess.run(
        [ixmap_bin(), "run", "-"], input=script, capture_output=True, text=True
    )
    if r.returncode != 0:
        raise RuntimeError(f"ixmap failed:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def kernel_source(case):
    out = ixmap_run(case["hlo"] + f"emit {case['name']} target=cpu\n")
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(f"kernel {case['name']} (cpu):"))
    body = []
    for l in lines[start + 1 :]:
        if l and not l.startswith("  "):
            break
        body.append(l[2:])
    return "\n".join(body) + "\n"


def compile_kernel(src, tmp, name):
    c = os.path.join(tmp, f"{name}.c")
    so = os.path.join(tmp, f"{name}.so")
    with open(c, "w") as f:
        f.write(src)
    cc = os.environ.get("CC", "cc")
    subprocess.run(
        [cc, "-O3", "-march=native", "-fno-trapping-math", "-fPIC", "-shared", "-std=c11", "-fopenmp", "-o", so, c, "-lm"],
        check=True,
    )
    return ctypes.CDLL(so)


def entry_name(src):
    for l in src.splitlines():
        if l.startswith("void ") and "(void **args)" in l:
            return l[5 : l.index("(")]
    raise RuntimeError("no entry point in the emitted source")


def thread_ticks():
    """CPU time (clock ticks) and name of each thread of this process, by thread id; None
    where /proc is missing (not Linux)."""
    out = {}
    try:
        for t in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{t}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/self/task/{t}/comm") as f:
                name = f.read().strip()
            out[t] = (name, int(fields[11]) + int(fields[12]))
    except OSError:
        return None
    return out


def busy_threads(f, seconds=0.3):
    """The names of the threads of this process that ran while `f` was called repeatedly
    for `seconds`: each with at least a fifth of the busiest one's CPU time. XLA:CPU runs a
    fusion on its Eigen pool (threads `tf_XLAEigen`); ixmap's kernel on OpenMP's threads
    when its source has `omp parallel`, else on the caller's."""
    a = thread_ticks()
    if a is None:
        return None
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        f()
    b = thread_ticks() or {}
    d = {k: ticks - a.get(k, ("", 0))[1] for k, (_, ticks) in b.items()}
    top = max(d.values(), default=0)
    if top <= 0:
        return None
    return sorted(b[k][0] for k, x in d.items() if x >= top / 5)


def ratio_ci(base, other):
    """Median of base/other over rounds and the sign-test ~95% interval."""
    r = sorted(b / o for b, o in zip(base, other))
    n = len(r)
    med = r[n // 2] if n % 2 else (r[n // 2 - 1] + r[n // 2]) / 2
    pmf = lambda k: math.comb(n, k) * 0.5**n
    j, below = 1, pmf(0)
    while j < n // 2 and below + pmf(j) <= 0.025:
        below += pmf(j)
        j += 1
    return med, r[j - 1], r[n - j], 1 - 2 * below


def reads(med, lo, hi, conf):
    """ixmap/XLA time ratio in words: below 1 is faster (less time); no verdict from an
    interval of under 90% confidence (fewer than 5 rounds)."""
    if conf < 0.9:
        return "too few rounds to tell"
    if hi < 1.0:
        return f"{1/med:.2f}x faster"
    if lo > 1.0:
        return f"{med:.2f}x slower"
    return "no clear difference"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="smaller tensors (a smoke test)")
    ap.add_argument("--only", help="comma-separated case names")
    args = ap.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, numpy {np.__version__}, "
          f"{os.cpu_count()} cores, {args.rounds} rounds interleaved, "
          f"load average {os.getloadavg()[0]:.2f}, OMP_DYNAMIC={os.environ.get('OMP_DYNAMIC')}")
    tmp = tempfile.mkdtemp(prefix="ixmap-xla-")
    variants = []  # (case, "ixmap"/"xla", fn)
    ok = []
    for case in cases(args.quick):
        if args.only and case["name"] not in args.only.split(","):
            continue
        # 1. ixmap's own check against its reference interpreter.
        t0 = time.time()
        out = ixmap_run(case["hlo"] + f"bench {case['name']} device=cpu reps=1\n")
        line = next((l for l in out.splitlines() if l.startswith(case["name"])), "")
        if not line.rstrip().endswith("verified"):
            print(f"{case['label']}: ixmap's bench did not verify:\n{out}")
            continue
        print(f"  {case['label']}: verified by ixmap against its reference ({time.time()-t0:.1f} s)")
        # 2. The same kernel, compiled as bench compiles it, against XLA's output.
        src = kernel_source(case)
        lib = compile_kernel(src, tmp, case["name"])
        entry = getattr(lib, entry_name(src))
        xs = [input_value(k, s) for k, s in enumerate(case["inputs"])]
        out = np.zeros(case["out"], np.float32)
        ptrs = (ctypes.c_void_p * (len(xs) + 1))(*[x.ctypes.data for x in xs], out.ctypes.data)
        entry(ptrs)
        jf = jax.jit(lambda o, *a, f=case["jax"]: f(*a), donate_argnums=0)
        jxs = [jax.device_put(x) for x in xs]
        jout = [jf(jnp.zeros(case["out"], jnp.float32), *jxs)]
        want = np.asarray(jout[0])
        tol = 1e-4 if case["kind"] == "reduction" else 1e-5
        if not np.allclose(out, want, rtol=tol, atol=tol):
            bad = np.argmax(np.abs(out - want))
            print(f"{case['label']}: ixmap and XLA differ at flat {bad}: {out.flat[bad]} vs {want.flat[bad]}")
            continue
        print(f"  {case['label']}: ixmap's kernel matches XLA's output")

        # `ptrs` holds raw addresses only: the arrays must stay alive with it (the next
        # case rebinds xs and out; a freed input here was a segfault in the timing rounds).
        def run_ixmap(entry=entry, ptrs=ptrs, keep=(xs, out)):
            entry(ptrs)

        def run_xla(jf=jf, jxs=jxs, jout=jout):
            jout[0] = jf(jout[0], *jxs)
            jout[0].block_until_ready()

        ok.append(case)
        variants.append((case["name"], "ixmap", run_ixmap))
        variants.append((case["name"], "xla", run_xla))
    # memcpy: the bytes of the largest elementwise fusion (half read, half written).
    nbytes = 64 * 256 * 1024 * 4 * (1 if not args.quick else 1)
    src_b = np.ones(nbytes // 4, np.float32)
    dst_b = np.zeros_like(src_b)
    variants.append(("memcpy", "ixmap", lambda: ctypes.memmove(dst_b.ctypes.data, src_b.ctypes.data, nbytes)))
    variants.append(("memcpy", "numpy", lambda: np.copyto(dst_b, src_b)))

    # Warm up and calibrate each variant's calls per sample.
    calls = []
    for _, _, f in variants:
        for _ in range(2):
            f()
        t = time.perf_counter()
        f()
        one = time.perf_counter() - t
        calls.append(max(1, math.ceil(MIN_SAMPLE_S / max(one, 1e-9))) if one < MIN_SAMPLE_S else 1)
    samples = [[] for _ in variants]
    n = len(variants)
    for r in range(args.rounds):
        for j in range(n):
            k = (r + j) % n
            f = variants[k][2]
            t = time.perf_counter()
            for _ in range(calls[k]):
                f()
            samples[k].append((time.perf_counter() - t) / calls[k])
    by = {(c, w): s for (c, w, _), s in zip(variants, samples)}

    def med(xs):
        xs = sorted(xs)
        m = len(xs)
        return xs[m // 2] if m % 2 else (xs[m // 2 - 1] + xs[m // 2]) / 2

    print()
    print("| fusion | ixmap ms | XLA:CPU ms | ixmap / XLA:CPU time (95% CI) | reads | goal |")
    print("|---|---|---|---|---|---|")
    for case in ok:
        a, b = by[(case["name"], "ixmap")], by[(case["name"], "xla")]
        m, lo, hi, conf = ratio_ci(a, b)
        goal_ratio = 1 / case["goal"]  # ixmap time at most this fraction of XLA's
        met = "met" if hi <= goal_ratio else ("not met" if lo > goal_ratio else "unclear")
        print(f"| {case['label']} | {med(a)*1e3:.3g} | {med(b)*1e3:.3g} | {m:.2f} ({lo:.2f} to {hi:.2f}) "
              f"| {reads(m, lo, hi, conf)} | >= {case['goal']}x XLA speed: {met} |")
    a, b = by[("memcpy", "ixmap")], by[("memcpy", "numpy")]
    m, lo, hi, conf = ratio_ci(a, b)
    met = "met" if 0.9 <= lo and hi <= 1.1 else ("not met" if hi < 0.9 or lo > 1.1 else "unclear")
    print(f"| memcpy {nbytes >> 20} MiB (ixmap's baseline vs numpy copy) | {med(a)*1e3:.3g} | {med(b)*1e3:.3g} (numpy) "
          f"| {m:.2f} ({lo:.2f} to {hi:.2f}) | {reads(m, lo, hi, conf)} | within 10%: {met} |")
    print(f"\nratio: median over {args.rounds} rounds of ixmap time / other time in the same round; "
          f"interval: sign test, {conf*100:.0f}% confidence; load average {os.getloadavg()[0]:.2f} "
          f"at the end")
    # Threads: a comparison of one thread against several is not like for like.
    fns = {(c, w): f for c, w, f in variants}
    for case in ok:
        ix = busy_threads(fns[(case["name"], "ixmap")])
        xl = busy_threads(fns[(case["name"], "xla")])
        if ix is None or xl is None:
            continue
        pool = sum(1 for n in xl if n.startswith("tf_XLAEigen"))
        print(f"threads busy while calling {case['name']}: ixmap {len(ix)}, XLA:CPU {len(xl)} "
              f"({pool} of its Eigen pool)")


if __name__ == "__main__":
    main()
