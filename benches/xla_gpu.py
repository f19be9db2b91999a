#!/usr/bin/env python3
"""ixmap's GPU kernels side by side with XLA:GPU (JAX), on the same device, in one run.

For a machine with a GPU (CUDA driver, JAX with CUDA, optionally CuPy and Nsight Compute);
no Rust needed: give it the release binary.

    python3 benches/xla_gpu.py --ixmap ./ixmap                # the whole comparison
    python3 benches/xla_gpu.py --ixmap ./ixmap --dry-run      # CPU smoke test, no GPU

What it does, in order (a few minutes on an H100):

1. The benchmark set (issue 28): eleven fusions of the first GPU run (elementwise after
   reshapes, broadcasts, transposes, row and column sums, softmaxes, a reshape chain) and
   those where simplified index arithmetic pays (`bc`, `g`: broadcasts read through reshape
   chains with non-power-of-two divisions; a gather). Each is run by
   `ixmap bench NAME device=gpu` (ixmap's default launch, XLA's rules; every output element
   checked against ixmap's reference; many launches per sample with inputs rotated past the
   L2, interleaved with a copy of the same bytes) and by JAX (`jax.jit` of the same
   computation).
2. Kernel times the way the field measures them. With `ncu` on the PATH: ixmap's kernel
   (the CUDA source `ixmap emit NAME` writes, launched through CuPy with the grid and block
   it states) and XLA's kernels are profiled in one process by Nsight Compute
   (`--metrics gpu__time_duration.sum --cache-control all --clock-control none`, caches
   flushed before each kernel), each call inside an NVTX range that names it
   (`--print-nvtx-rename kernel`), several calls each, interleaved. Without ncu: CUDA
   events (CuPy) around batches of calls over input sets rotated past the L2, interleaved.
   The table: per fusion, ixmap's and XLA's median kernel time and the median of the
   per-round ratios ixmap / XLA with a sign-test interval (~95 %).
3. The shared dumps (`--dumps DIR`, default `../shared/xla-dumps/h100-jax-0.11.2`): every
   loop/input fusion of each `*after_optimizations.txt` that ixmap adapts, benchmarked by
   `ixmap bench` on the GPU, against XLA's kernel of the same name timed by ncu while the
   dump's own `models.py` runs in the same job (or, without ncu, the dump's
   `xla-kernel-times-ncu.csv`, measured on the same kind of card).

`--dry-run`: everything that does not need a GPU, on the CPU: each benchmark fusion's
`ixmap bench device=cpu reps=1` (verified against the reference), its CUDA source and
launch parsed, and the JAX side run on the CPU when jax is importable (outputs compared
with ixmap's known inputs where the computation allows), the dumps' fusions listed. It is
what `tests/gpu_sweep.rs`'s `xla_gpu_script_dry_run` runs.
"""

import argparse
import csv
import glob
import io
import math
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
T_START = time.time()

ADD = """add_{n} {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
max_{n} {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}}
"""


def softmax_hlo(n, rows, cols):
    return ADD.format(n=n) + f"""{n} {{
  p0 = f32[{rows},{cols}] parameter(0)
  c = f32[] constant(-inf)
  mx = f32[{rows}] reduce(p0, c), dimensions={{1}}, to_apply=max_{n}
  b = f32[{rows},{cols}] broadcast(mx), dimensions={{0}}
  sub = f32[{rows},{cols}] subtract(p0, b)
  e = f32[{rows},{cols}] exponential(sub)
  z = f32[] constant(0)
  sum = f32[{rows}] reduce(e, z), dimensions={{1}}, to_apply=add_{n}
  bs = f32[{rows},{cols}] broadcast(sum), dimensions={{0}}
  ROOT d = f32[{rows},{cols}] divide(e, bs)
}}
"""


def cases(scale):
    """The benchmark set: name, HLO, JAX function, inputs (shape, dtype). `scale` divides
    the leading extents (the dry run's small shapes)."""
    s = lambda x: max(1, x // scale)
    out = []

    def case(name, hlo, fn, inputs, optional=False):
        out.append(dict(name=name, hlo=hlo, fn=fn, inputs=inputs, optional=optional))

    r, c = s(8192), 4096
    case("add_reshape", f"""add_reshape {{
  p0 = f32[{r},16,256] parameter(0)
  p1 = f32[{r},{c}] parameter(1)
  r = f32[{r},{c}] reshape(p0)
  ROOT a = f32[{r},{c}] add(r, p1)
}}
""", lambda jnp, a, b: a.reshape(b.shape) + b, [((r, 16, 256), "float32"), ((r, c), "float32")])
    case("bcast_mul", f"""bcast_mul {{
  p0 = f32[{r},{c}] parameter(0)
  p1 = f32[{c}] parameter(1)
  b = f32[{r},{c}] broadcast(p1), dimensions={{1}}
  ROOT m = f32[{r},{c}] multiply(p0, b)
}}
""", lambda jnp, a, b: a * b[None, :], [((r, c), "float32"), ((c,), "float32")])
    case("exp_reshape_add", f"""exp_reshape_add {{
  p0 = f32[{r},64,64] parameter(0)
  p1 = f32[{r},{c}] parameter(1)
  r = f32[{r},{c}] reshape(p0)
  e = f32[{r},{c}] exponential(r)
  ROOT a = f32[{r},{c}] add(e, p1)
}}
""", lambda jnp, a, b: jnp.exp(a.reshape(b.shape)) + b, [((r, 64, 64), "float32"), ((r, c), "float32")])
    case("reshape_chain", f"""reshape_chain {{
  p0 = f32[{r},{c}] parameter(0)
  a = f32[{r},64,64] reshape(p0)
  b = f32[{r * 64},64] reshape(a)
  n = f32[{r * 64},64] negate(b)
  ROOT o = f32[{r},{c}] reshape(n)
}}
""", lambda jnp, a: -a, [((r, c), "float32")])
    case("transpose", f"""transpose {{
  p0 = f32[{r},{c}] parameter(0)
  ROOT t = f32[{c},{r}] transpose(p0), dimensions={{1,0}}
}}
""", lambda jnp, a: a.T, [((r, c), "float32")])
    t0 = s(64)
    case("transpose3d", f"""transpose3d {{
  p0 = f32[{t0},512,512] parameter(0)
  ROOT t = f32[{t0},512,512] transpose(p0), dimensions={{0,2,1}}
}}
""", lambda jnp, a: jnp.swapaxes(a, 1, 2), [((t0, 512, 512), "float32")])
    case("row_sum", ADD.format(n="row_sum") + f"""row_sum {{
  p0 = f32[{r},{c}] parameter(0)
  z = f32[] constant(0)
  ROOT s = f32[{r}] reduce(p0, z), dimensions={{1}}, to_apply=add_row_sum
}}
""", lambda jnp, a: a.sum(axis=1), [((r, c), "float32")])
    case("col_sum", ADD.format(n="col_sum") + f"""col_sum {{
  p0 = f32[{r},{c}] parameter(0)
  z = f32[] constant(0)
  ROOT s = f32[{c}] reduce(p0, z), dimensions={{0}}, to_apply=add_col_sum
}}
""", lambda jnp, a: a.sum(axis=0), [((r, c), "float32")])

    def softmax(jnp, x):
        m = jnp.max(x, axis=1, keepdims=True)
        e = jnp.exp(x - m)
        return e / jnp.sum(e, axis=1, keepdims=True)

    case("softmax_1024", softmax_hlo("softmax_1024", r, 1024), softmax, [((r, 1024), "float32")])
    case("softmax_128", softmax_hlo("softmax_128", s(65536), 128), softmax, [((s(65536), 128), "float32")])
    # Where simplification pays: broadcasts read through reshape chains (issue 28's `bc`, `g`).
    b0 = s(60)
    case("bc", f"""bc {{
  p0 = f32[{b0},250] parameter(0)
  b = f32[{b0},250,1000] broadcast(p0), dimensions={{0,1}}
  r1 = f32[{b0 * 250},1000] reshape(b)
  r2 = f32[{b0 * 50},5000] reshape(r1)
  t = f32[5000,{b0 * 50}] transpose(r2), dimensions={{1,0}}
  ROOT e = f32[5000,{b0 * 50}] exponential(t)
}}
""", lambda jnp, a: jnp.exp(jnp.broadcast_to(a[:, :, None], a.shape + (1000,)).reshape(-1, 5000).T),
        [((b0, 250), "float32")])
    g0 = 7 if scale == 1 else 1
    case("g", f"""g {{
  p0 = f32[{g0},11,13,17] parameter(0)
  b = f32[{g0},11,13,17,300] broadcast(p0), dimensions={{0,1,2,3}}
  r = f32[{g0 * 143},5100] reshape(b)
  ROOT n = f32[{g0 * 143},5100] negate(r)
}}
""", lambda jnp, a: -jnp.broadcast_to(a[..., None], a.shape + (300,)).reshape(-1, 5100), [((g0, 11, 13, 17), "float32")])
    rows, idx = s(65536), s(16384)
    case("gather", f"""gather {{
  p0 = f32[{rows},256] parameter(0)
  p1 = s32[{idx},1] parameter(1)
  ROOT g = f32[{idx},256] gather(p0, p1), offset_dims={{1}}, collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim=1, slice_sizes={{1,256}}
}}
""", lambda jnp, a, i: a[jnp.clip(i[:, 0], 0, a.shape[0] - 1)], [((rows, 256), "float32"), ((idx, 1), "int32")],
         optional=True)
    return out


def ixmap_bin(arg):
    for p in [arg, os.environ.get("IXMAP"), os.path.join(ROOT, "target", "release", "ixmap"),
              os.path.join(ROOT, "target", "debug", "ixmap"), shutil.which("ixmap")]:
        if p and os.path.exists(p):
            return p
    sys.exit("no ixmap binary: give --ixmap PATH (or set IXMAP=)")


def ixmap_run(ixmap, script, timeout=300):
    r = subprocess.run([ixmap, "run", "-"], input=script, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


MEDIAN = re.compile(r" on (.*?): median ([0-9.e+-]+) ms .*?([0-9.]+)% of copy bandwidth, (verified|NOT verified)")


def ixmap_bench(ixmap, hlo, name, device, reps):
    """ixmap's own figure: (median seconds, % of copy, device, the whole output) or an error."""
    rc, out = ixmap_run(ixmap, hlo + f"bench {name} device={device} reps={reps}\n")
    m = MEDIAN.search(out)
    if not m or m.group(4) != "verified":
        return None, out
    return dict(median_s=float(m.group(2)) / 1e3, copy_pct=float(m.group(3)), device=m.group(1)), out


LAUNCH = re.compile(r"// grid \((\d+), (\d+), (\d+)\), block \((\d+), (\d+), (\d+)\)")


def ixmap_cuda(ixmap, hlo, name):
    """The CUDA source of ixmap's default launch for `name`, its entry and launch shape."""
    rc, out = ixmap_run(ixmap, hlo + f"emit {name}\n")
    lines = out.splitlines()
    try:
        # `emit FUSION` names the kernel after the fused computation it calls.
        start = next(i for i, l in enumerate(lines) if re.match(r"kernel \S+ \(cuda", l))
    except StopIteration:
        raise RuntimeError(f"ixmap emit {name} failed:\n{out}")
    body = []
    for l in lines[start + 1:]:
        if l and not l.startswith("  "):
            break
        body.append(l[2:])
    src = "\n".join(body) + "\n"
    m = LAUNCH.search(src)
    if not m:
        raise RuntimeError(f"no launch shape in ixmap's CUDA for {name}")
    g = tuple(int(x) for x in m.groups()[:3])
    b = tuple(int(x) for x in m.groups()[3:])
    entry = re.search(r"__global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(", src)
    if not entry:
        raise RuntimeError(f"no kernel in ixmap's CUDA for {name}")
    head = [l for l in body if l.startswith("// launch:")]
    return dict(source=src, grid=g, block=b, entry=entry.group(1), launch=head[0][11:] if head else "")


def ratio_ci(a, b):
    """Median of a/b over paired rounds and the sign-test interval (~95 %)."""
    r = sorted(x / y for x, y in zip(a, b) if y > 0)
    n = len(r)
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    med = r[n // 2] if n % 2 else (r[n // 2 - 1] + r[n // 2]) / 2
    pmf = lambda k: math.comb(n, k) * 0.5 ** n
    j, below = 1, pmf(0)
    while j < n // 2 and below + pmf(j) <= 0.025:
        below += pmf(j)
        j += 1
    return med, r[j - 1], r[n - j]


def median(xs):
    s = sorted(xs)
    n = len(s)
    return float("nan") if n == 0 else (s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2)


def inner(args):
    """The profiled process: ixmap's kernels (CuPy) and XLA's (JAX), each call in an NVTX
    range `ix|NAME|ROUND` or `xla|NAME|ROUND`, interleaved round by round; without ncu the
    same calls timed by CUDA events over rotated input sets. Prints `TIME kind name round s`."""
    import cupy as cp
    import jax
    import jax.numpy as jnp
    import numpy as np
    nvtx = cp.cuda.nvtx
    ixmap = ixmap_bin(args.ixmap)
    l2 = cp.cuda.runtime.getDeviceProperties(0)["l2CacheSize"]
    todo = []
    for c in cases(1):
        if args.only and c["name"] not in args.only:
            continue
        try:
            k = ixmap_cuda(ixmap, c["hlo"], c["name"])
        except Exception as e:  # noqa: BLE001 - reported, the rest go on
            print(f"SKIP {c['name']} {e}".replace("\n", " "), flush=True)
            continue
        mod = cp.RawModule(code=k["source"], options=("-std=c++17",), name_expressions=None)
        f = mod.get_function(k["entry"])
        rng = np.random.default_rng(0)
        per = sum(math.prod(s) * np.dtype(d).itemsize for s, d in c["inputs"])
        sets = 1 if args.ncu else max(1, min(64, (2 * l2) // max(per, 1) + 1))
        host = [(rng.standard_normal(s).astype(d) if d.startswith("float") else
                 rng.integers(0, s[0] if len(s) else 1, size=s).astype(d)) for s, d in c["inputs"]]
        jfn = jax.jit(lambda *xs, fn=c["fn"]: fn(jnp, *xs))
        jin = [[jnp.asarray(h) for h in host] for _ in range(sets)]
        want = jfn(*jin[0])
        want.block_until_ready()
        cin = [[cp.asarray(h) for h in host] for _ in range(sets)]
        couts = [(cp.empty(want.shape, dtype=want.dtype),) for _ in range(sets)]
        todo.append((c, k, f, jfn, jin, cin, couts, sets, want))

    # The dumps' fusions: ixmap's kernel only (XLA's time is the dump's CSV, matched by
    # `ixmap dump`), under the same profiler, interleaved with the rest.
    if args.dumps:
        for path, name in dump_fusions(args.dumps):
            text = open(path).read()
            sig = fusion_signature(text, name)
            key = dump_key(path, name)
            try:
                if sig is None:
                    raise RuntimeError("no signature found")
                k = ixmap_cuda(ixmap, text + "\n", name)
            except Exception as e:  # noqa: BLE001 - reported, the rest go on
                print(f"SKIP {key} {e}".replace("\n", " ")[:300], flush=True)
                continue
            mod = cp.RawModule(code=k["source"], options=("-std=c++17",), name_expressions=None)
            f = mod.get_function(k["entry"])
            rng = np.random.default_rng(0)
            ins, outs = sig
            host = [host_array(np, rng, t, d) for t, d in ins]
            for i, a in scatter_indices(np, rng, text, name, ins, outs[0][1]).items():
                host[i] = a
            per = sum(h.nbytes for h in host)
            sets = 1 if args.ncu else max(1, min(64, (2 * l2) // max(per, 1) + 1))
            cin = [[cp.asarray(h) for h in host] for _ in range(sets)]
            odt = lambda t: "uint16" if t == "bf16" else NP_TYPE[t]
            couts = [tuple(cp.empty(d, dtype=odt(t)) for t, d in outs) for _ in range(sets)]
            todo.append((dict(name=key, dump=True), k, f, None, None, cin, couts, sets, None))

    # The dumps' models themselves (the dump's models.py, its functions and inputs), run by
    # JAX in this process: XLA's kernels for the dumps' fusions timed beside ixmap's, round
    # by round, under the same profiler (compiled with autotuning off, as the dumps were).
    models = []
    if args.dumps and args.ncu and os.path.exists(os.path.join(args.dumps, "models.py")):
        src = open(os.path.join(args.dumps, "models.py")).read()
        cut = src.find("for f, args in runs:")
        if cut > 0:
            space = {}
            try:
                exec(compile(src[:cut], "models.py", "exec"), space)
                for fn, margs in space["runs"]:
                    name = getattr(fn, "__name__", "model").replace("<lambda>", "_lambda")
                    jf = jax.jit(fn)
                    jax.block_until_ready(jf(*margs))
                    models.append((name, jf, margs))
            except Exception as e:  # noqa: BLE001 - the dump's CSV stays XLA's side
                print(f"SKIP models.py {e}".replace("\n", " ")[:300], flush=True)
                models = []

    def ix_call(k, f, cin, couts, i):
        f(k["grid"], k["block"], tuple(cin[i]) + couts[i])

    for c, k, f, jfn, jin, cin, couts, sets, want in todo:
        ix_call(k, f, cin, couts, 0)
        cp.cuda.runtime.deviceSynchronize()
        if want is None:
            continue  # a dump's fusion: verified by `ixmap dump`/`bench`, not here
        got = cp.asnumpy(couts[0][0]).astype(np.float64)
        ref = np.asarray(want).astype(np.float64)
        # ‖ixmap − XLA‖ / ‖XLA‖: float32 sums in different orders differ far under 1e-5
        # (ixmap's own bench checks each element against an f64 reference with its bound).
        rel = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
        ok = bool(np.isfinite(got).all()) and rel <= 1e-5
        print(f"CHECK {c['name']} {'ok' if ok else 'MISMATCH'} (relative error {rel:.1e}) {k['launch']}", flush=True)
    # Under ncu, XLA's kernels may be launched from a thread of JAX's own, outside the NVTX
    # range of this one: a one-thread marker kernel, launched in a `mark|NAME|ROUND` range
    # just before each XLA call, claims the unnamed kernels that follow it (`parse_ranges`).
    marker = cp.RawKernel('extern "C" __global__ void ixmap_marker() {}', "ixmap_marker")

    def mark(name, rnd):
        cp.cuda.runtime.deviceSynchronize()
        nvtx.RangePush(f"mark|{name}|{rnd}")
        marker((1,), (1,), ())
        cp.cuda.runtime.deviceSynchronize()
        nvtx.RangePop()
    t_rounds = time.time()
    for rnd in range(args.rounds):
        # Under ncu nothing is written until the process ends: a run killed by a time limit
        # measured nothing (2026-11-27). With a budget, no round starts that would not end
        # within it (judged by the rounds so far), so the process ends in time.
        if args.budget and rnd > 0:
            spent = time.time() - t_rounds
            if (time.time() - T_START) + spent / rnd > args.budget:
                print(f"BUDGET {rnd} of {args.rounds} rounds run ({spent:.0f} s): the rest left out", flush=True)
                break
        for c, k, f, jfn, jin, cin, couts, sets, want in todo:
            kinds = ("ix",) if jfn is None else ("ix", "xla") if rnd % 2 == 0 else ("xla", "ix")
            for kind in kinds:
                if args.ncu:
                    if kind == "xla":
                        mark(c["name"], rnd)
                    nvtx.RangePush(f"{kind}|{c['name']}|{rnd}")
                    if kind == "ix":
                        ix_call(k, f, cin, couts, 0)
                        cp.cuda.runtime.deviceSynchronize()
                    else:
                        jfn(*jin[0]).block_until_ready()
                    nvtx.RangePop()
                    continue
                batch = max(sets, 20)
                cp.cuda.runtime.deviceSynchronize()
                if kind == "xla":
                    t0 = time.perf_counter()
                    for i in range(batch):
                        y = jfn(*jin[i % sets])
                    y.block_until_ready()
                    dt = (time.perf_counter() - t0) / batch
                else:
                    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                    e0.record()
                    for i in range(batch):
                        ix_call(k, f, cin, couts, i % sets)
                    e1.record()
                    e1.synchronize()
                    dt = cp.cuda.get_elapsed_time(e0, e1) / 1e3 / batch
                print(f"TIME {kind} {c['name']} {rnd} {dt}", flush=True)
        # XLA's side of the dumps: each model once a round, its kernels claimed by the marker.
        for name, jf, margs in models:
            mark(f"model:{name}", rnd)
            nvtx.RangePush(f"xla|model:{name}|{rnd}")
            jax.block_until_ready(jf(*margs))
            nvtx.RangePop()


def parse_ncu(text):
    """Rows of ncu's raw CSV: (NVTX-renamed kernel name, the kernel's own name, ns)."""
    lines = [l for l in text.splitlines() if l.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 3:
        return []
    head = rows[0]
    kn = head.index("Kernel Name")
    t = head.index("gpu__time_duration.sum")
    fn = head.index("Function Name") if "Function Name" in head else None
    out = []
    for r in rows[2:]:
        try:
            ns = float(r[t].replace(",", ""))
        except ValueError:
            continue
        out.append((r[kn], r[fn] if fn is not None else r[kn], ns))
    return out


def parse_ranges(rows):
    """(kind, name) -> round -> seconds from ncu's rows in launch order: a kernel renamed
    `ix|NAME|ROUND` or `xla|NAME|ROUND` counts there; an unnamed kernel (one XLA launched
    from another thread) counts for the XLA call of the last `mark|NAME|ROUND` marker, until
    the next named kernel of ixmap's."""
    per = {}
    current = None
    for renamed, _, ns in rows:
        parts = renamed.split("|")
        # ncu writes a renamed kernel as `RANGE/KERNEL`.
        kernel = renamed.rsplit("/", 1)[-1]
        if len(parts) == 3:
            parts[2] = parts[2].split("/")[0]
        if len(parts) == 3 and parts[0] == "mark":
            current = ("xla", parts[1], int(parts[2]))
            continue
        if len(parts) == 3 and not parts[1].startswith("model:"):
            key = (parts[0], parts[1], int(parts[2]))
            if parts[0] == "ix":
                current = None
        elif current is not None:
            key = current
        else:
            continue
        if key[1].startswith("model:"):
            # A dump model's kernel: counted under `MODEL:KERNEL` (the fusion's name with
            # `.` written `_`, as XLA names its kernels), see `model_key`.
            key = ("xla", f"{key[1][len('model:'):]}:{kernel}", key[2])
        per.setdefault(key[:2], {}).setdefault(key[2], 0.0)
        per[key[:2]][key[2]] += ns / 1e9
    return per


def dump_fusions(dumps):
    """(file, fusion instruction name) for every loop/input/Triton (non-GEMM) fusion of the dumps."""
    out = []
    for path in sorted(glob.glob(os.path.join(dumps, "*after_optimizations.txt"))):
        for line in open(path):
            m = re.match(r"\s*(?:ROOT )?%?([\w.\-]+) = .* fusion\(.*kind=(kLoop|kInput|kCustom)", line)
            # Triton's own fusions (softmax-like rows) too; its GEMMs are `dump`'s.
            if m and (m.group(2) != "kCustom" or '"kind":"__triton"' in line):
                out.append((path, m.group(1)))
    return out


SHAPE = re.compile(r"\b(pred|s8|s16|s32|s64|u8|u16|u32|u64|f16|bf16|f32|f64)\[([\d,]*)\]")
NP_TYPE = {"pred": "uint8", "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64", "u8": "uint8",
           "u16": "uint16", "u32": "uint32", "u64": "uint64", "f16": "float16", "bf16": "bf16",
           "f32": "float32", "f64": "float64"}


def fusion_signature(text, name):
    """The (type, shape) of the parameters and of the outputs of fusion instruction `name`'s
    computation, from the module's text: `(ins, outs)`, one output or the elements of a tuple
    (a multi-output fusion, whose kernel ixmap emits with one pointer per element, after the
    parameters); None where it is not found or a tuple nests."""
    m = re.search(rf"%?{re.escape(name)} = [^\n]*? fusion\([^\n]*?calls=%?([\w.\-]+)", text)
    if not m:
        return None
    h = re.search(rf"^%?{re.escape(m.group(1))} \((.*?)\) -> (.*?) {{", text, re.M)
    if not h:
        return None
    res = h.group(2).strip()
    if res.startswith("(") and "(" in res[1:]:
        return None
    shape = lambda t, d: (t, tuple(int(x) for x in d.split(",") if x))
    ins = [shape(t, d) for t, d in SHAPE.findall(h.group(1))]
    outs = [shape(t, d) for t, d in SHAPE.findall(res)]
    if not outs or (not res.startswith("(") and len(outs) != 1):
        return None
    return ins, outs


def host_array(np, rng, ty, dims):
    """Random contents for a parameter: normal floats (bf16 as their bit patterns), small
    non-negative integers (indices stay in range), booleans as bytes."""
    if ty == "bf16":
        return (rng.standard_normal(dims).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    d = NP_TYPE[ty]
    if d.startswith("float"):
        return rng.standard_normal(dims).astype(d)
    if ty == "pred":
        return rng.integers(0, 2, size=dims).astype(d)
    return rng.integers(0, 8, size=dims).astype(d)


def scatter_indices(np, rng, text, name, ins, odims):
    """Index inputs for a scatter fusion like the model's own: {parameter number: array}.
    Random small integers (`host_array`) send a max-pool gradient's 524288 updates to 4096
    places, 128 atomic adds each, where the model's argmax indices are distinct: XLA's time
    in the dump is for distinct places. When the scatter's indices are a concatenate of
    parameters (one per output dimension, through bitcasts) of the output's rank, entry k
    of window w is w's coordinate k times the output's extent over the index array's, plus a
    random offset below that ratio: every window its own place, as an argmax gives. {}
    otherwise (the random contents stay)."""
    m = re.search(rf"%?{re.escape(name)} = [^\n]*? fusion\([^\n]*?calls=%?([\w.\-]+)", text)
    if not m:
        return {}
    body = re.search(rf"^%?{re.escape(m.group(1))} \(.*?\n}}", text, re.M | re.S)
    if not body:
        return {}
    lines = {}
    for l in body.group(0).splitlines():
        d = re.match(r"\s*(?:ROOT )?%?([\w.\-]+) = \S+ (\w+)\(([^)]*)\)", l)
        if d:
            lines[d.group(1)] = (d.group(2), [a.strip().lstrip("%") for a in d.group(3).split(",") if a.strip()])
    sc = next((v for v in lines.values() if v[0] == "scatter"), None)
    if not sc or len(sc[1]) < 2:
        return {}

    def through_bitcasts(n):
        while n in lines and lines[n][0] in ("bitcast", "reshape"):
            n = lines[n][1][0]
        return n

    cat = through_bitcasts(sc[1][1])
    if cat not in lines or lines[cat][0] != "concatenate":
        return {}
    out = {}
    for k, a in enumerate(lines[cat][1]):
        pn = re.match(r"param_(\d+)", through_bitcasts(a))
        if not pn or k >= len(odims):
            return {}
        i = int(pn.group(1))
        ty, dims = ins[i]
        if len(dims) != len(odims) or not ty.startswith(("s", "u")) or odims[k] % max(dims[k], 1):
            return {}
        ratio = odims[k] // dims[k]
        coord = np.indices(dims)[k]
        out[i] = (coord * ratio + rng.integers(0, ratio, size=dims)).astype(NP_TYPE[ty])
    return out


def model_key(key):
    """A dump fusion's key (`MODEL:FUSION`) as XLA's kernel of it is counted by
    `parse_ranges` (`.` written `_`)."""
    model, name = key.split(":", 1)
    return f"{model}:{name.replace('.', '_')}"


def dump_key(path, name):
    """A dump fusion's name in NVTX ranges and tables: the model, then the fusion."""
    model = os.path.basename(path).split(".")[1].removeprefix("jit_")
    return f"{model}:{name}"


def xla_dump_times(ixmap, path):
    """XLA's kernel time (µs) for each fusion of one dumped module, as `ixmap dump` matches
    the dump's xla-kernel-times-ncu.csv to the module's schedule (fusion names repeat across
    modules, and the random-number kernels of models.py share them)."""
    r = subprocess.run([ixmap, "dump", path, "--no-check"], capture_output=True, text=True, timeout=300)
    out, cur = {}, None
    for l in r.stdout.splitlines():
        h = re.match(r"^  (\S+) \(", l)
        if h:
            cur = h.group(1)
        t = re.search(r"time: XLA ([0-9.]+) µs", l)
        if t and cur:
            out[cur] = float(t.group(1))
    return out


def xla_csv_times(dumps):
    path = os.path.join(dumps, "xla-kernel-times-ncu.csv")
    if not os.path.exists(path):
        return {}
    times = {}
    for kernel, _, ns in parse_ncu(open(path).read()):
        times.setdefault(kernel, []).append(ns / 1e3)
    return {k: median(v) for k, v in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ixmap", help="the ixmap binary (default: $IXMAP, target/release/ixmap, PATH)")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds the profiled process may take: rounds that would not end in time are left out")
    ap.add_argument("--dumps", default=os.path.join(os.path.dirname(ROOT), "shared", "xla-dumps", "h100-jax-0.11.2"))
    ap.add_argument("--no-dumps", action="store_true")
    ap.add_argument("--only", nargs="*", help="benchmark fusions to run (default: all)")
    ap.add_argument("--dry-run", action="store_true", help="CPU smoke test: no GPU, small shapes")
    ap.add_argument("--skip-own", action="store_true", help="leave out step 1 (ixmap's own bench figures)")
    ap.add_argument("--save", help="a folder for ncu's raw output")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ncu", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.no_dumps or not os.path.isdir(args.dumps or ""):
        args.dumps = None
    if args.inner:
        return inner(args)
    ixmap = ixmap_bin(args.ixmap)
    t_start = time.time()
    device = "cpu" if args.dry_run else "gpu"
    print(f"# ixmap: {ixmap}; device: {device}; rounds: {args.rounds}")
    # 1. ixmap's own verified figures (and, in a dry run, the CUDA it would launch).
    failed = 0
    own = {}
    for c in cases(64 if args.dry_run else 1):
        if args.only and c["name"] not in args.only or args.skip_own and not args.dry_run:
            continue
        r, out = ixmap_bench(ixmap, c["hlo"], c["name"], device, 1 if args.dry_run else 5)
        if r is None and c["optional"] and "no emitter" in out:
            # A kind ixmap does not emit yet (gathers, in this build): said, not a failure.
            why = next((l.strip() for l in out.splitlines() if "no emitter" in l), "no emitter")
            print(f"{c['name']}: not emitted by this ixmap ({why})")
            continue
        if r is None:
            failed += 1
            print(f"{c['name']}: ixmap bench FAILED\n{out}")
            continue
        own[c["name"]] = r
        line = f"{c['name']}: ixmap bench {r['median_s'] * 1e6:.1f} µs, {r['copy_pct']:.0f}% of copy ({r['device']})"
        if args.dry_run:
            k = ixmap_cuda(ixmap, c["hlo"], c["name"])
            line += f"; CUDA {k['entry']} grid {k['grid']} block {k['block']} ({k['launch']})"
            try:
                import numpy as np
                os.environ.setdefault("JAX_PLATFORMS", "cpu")
                import jax
                import jax.numpy as jnp
                xs = [np.ones(s, dtype=d) for s, d in c["inputs"]]
                y = jax.jit(lambda *a, fn=c["fn"]: fn(jnp, *a))(*xs)
                line += f"; JAX (cpu) {tuple(y.shape)}"
            except ImportError:
                line += "; JAX not installed: its side skipped"
        print(line, flush=True)
    if args.dry_run:
        if args.dumps:
            fs = dump_fusions(args.dumps)
            xt = xla_csv_times(args.dumps)
            print(f"dumps: {len(fs)} loop/input/Triton fusions in {args.dumps}; XLA's ncu times for {len(xt)} kernels")
            # What the profiled process launches for each: the kernel, its launch, its inputs.
            times = {}
            for path, name in fs:
                key = dump_key(path, name)
                sig = fusion_signature(open(path).read(), name)
                if path not in times:
                    times[path] = xla_dump_times(ixmap, path)
                try:
                    if sig is None:
                        raise RuntimeError("no signature")
                    k = ixmap_cuda(ixmap, open(path).read() + "\n", name)
                    outs = f"; {len(sig[1])} outputs" if len(sig[1]) > 1 else ""
                    print(f"  {key}: {k['entry']} grid {k['grid']} block {k['block']} ({k['launch']}); "
                          f"inputs {sig[0]}{outs}; XLA {times[path].get(name, '-')} µs")
                except Exception as e:  # noqa: BLE001
                    print(f"  {key}: SKIP {str(e).splitlines()[0][:120]}")
        print(f"dry run done in {time.time() - t_start:.0f} s; {failed} failed")
        return 1 if failed else 0
    # 2. Kernel times, both sides in one profiled process.
    ncu = shutil.which("ncu")
    cmd = [sys.executable, os.path.abspath(__file__), "--inner", "--ixmap", ixmap, "--rounds", str(args.rounds)]
    if args.budget:
        cmd += ["--budget", str(max(1.0, args.budget - (time.time() - t_start)))]
    if args.only:
        cmd += ["--only", *args.only]
    if args.dumps:
        cmd += ["--dumps", args.dumps]
    else:
        cmd += ["--no-dumps"]
    env = dict(os.environ)
    if ncu and args.dumps:
        # As the dumps were made: under ncu, XLA's autotuner's delay kernel times out and
        # JAX aborts ("pure virtual method called", 2026-11-26).
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_gpu_autotune_level=0").strip()
    if ncu:
        # Only the Python process is profiled: the `ixmap emit` runs it starts are not
        # kernels of interest, and ncu attaching to each made the run slower.
        cmd = [ncu, "--target-processes", "application-only", "--nvtx", "--print-nvtx-rename", "kernel", "--metrics", "gpu__time_duration.sum",
               "--cache-control", "all", "--clock-control", "none", "--csv", "--page", "raw"] + cmd + ["--ncu"]
    print("# " + " ".join(cmd), flush=True)
    if args.save:
        # Written as it comes: what a run cut off by a time limit measured stays.
        os.makedirs(args.save, exist_ok=True)
        path = os.path.join(args.save, "ncu-side.csv")
        with open(path, "w") as f:
            p = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, text=True, env=env)
        text = open(path).read()
    else:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        text = p.stdout
    for l in text.splitlines():
        if l.startswith(("CHECK", "SKIP", "BUDGET")):
            print(l)
    if p.returncode != 0:
        print(p.stderr[-4000:])
    per = {}  # (kind, name) -> round -> seconds
    if ncu:
        per = parse_ranges(parse_ncu(text))
    else:
        for l in text.splitlines():
            if l.startswith("TIME "):
                _, kind, name, rnd, s = l.split()
                per.setdefault((kind, name), {})[int(rnd)] = float(s)
    how = "Nsight Compute gpu__time_duration.sum, caches flushed" if ncu else "CUDA events over batches, inputs rotated past the L2"
    print(f"\nkernel times ({how}); ratio = ixmap / XLA, median of {args.rounds} rounds [~95% interval]")
    print(f"{'fusion':<18} {'ixmap µs':>10} {'XLA µs':>10} {'ratio':>7}  interval        ixmap bench (% of copy)")
    for c in cases(1):
        n = c["name"]
        ix, xla = per.get(("ix", n), {}), per.get(("xla", n), {})
        rounds = sorted(set(ix) & set(xla))
        if not rounds:
            print(f"{n:<18} {'-':>10} {'-':>10}")
            continue
        a = [ix[r] for r in rounds]
        b = [xla[r] for r in rounds]
        med, lo, hi = ratio_ci(a, b)
        verdict = "slower" if lo > 1 else ("faster" if hi < 1 else "same")
        o = own.get(n)
        pct = f"{o['copy_pct']:.0f}%" if o else "-"
        print(f"{n:<18} {median(a) * 1e6:>10.1f} {median(b) * 1e6:>10.1f} {med:>7.2f}  [{lo:.2f}, {hi:.2f}] {verdict:<6} {pct}")
    # 3. The dumps' fusions: ixmap's kernels were profiled above with the benchmark set;
    # XLA's times are the dump's CSV (measured by ncu on an H100 with caches flushed),
    # matched to each module's schedule by `ixmap dump`.
    if args.dumps:
        print(f"\nshared dumps ({args.dumps}): ixmap's default launch ({how}) vs XLA's kernel: "
              f"the dump's models run by JAX in the same process, round by round (`same`), where "
              f"it ran; else the dump's xla-kernel-times-ncu.csv matched by `ixmap dump` (`csv`)")
        print(f"{'fusion':<40} {'ixmap µs':>10} {'XLA µs':>10} {'ratio':>7}  interval      XLA from")
        ratios = []
        xla_by_file = {}
        for path, name in dump_fusions(args.dumps):
            key = dump_key(path, name)
            if path not in xla_by_file:
                xla_by_file[path] = xla_dump_times(ixmap, path)
            x = xla_by_file[path].get(name)
            ix = per.get(("ix", key), {})
            xs = per.get(("xla", model_key(key)), {})
            if not ix:
                print(f"{key:<40} {'-':>10} {x if x else '-':>10}  (not run: see SKIP above)")
                continue
            us = median(list(ix.values())) * 1e6
            rounds = sorted(set(ix) & set(xs))
            if rounds:
                med, lo, hi = ratio_ci([ix[r] for r in rounds], [xs[r] for r in rounds])
                ratios.append(med)
                verdict = "slower" if lo > 1 else ("faster" if hi < 1 else "same")
                print(f"{key:<40} {us:>10.1f} {median([xs[r] for r in rounds]) * 1e6:>10.1f} {med:>7.2f}  "
                      f"[{lo:.2f}, {hi:.2f}] {verdict:<6} same")
                continue
            ratio = us / x if x else float("nan")
            if x:
                ratios.append(ratio)
            print(f"{key:<40} {us:>10.1f} {x if x else float('nan'):>10.1f} {ratio:>7.2f}  {'':<21}csv")
        if ratios:
            print(f"dump fusions: {len(ratios)} compared, median ratio {median(ratios):.2f}, "
                  f"worst {max(ratios):.2f}, at most 1.0: {sum(r <= 1.0 for r in ratios)}")
    print(f"\ndone in {time.time() - t_start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
