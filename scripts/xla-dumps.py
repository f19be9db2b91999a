#!/usr/bin/env python3
"""Makes XLA dumps of small JAX models for ixmap's regression corpus (tests/data/xla-dumps/).

    python3 scripts/xla-dumps.py OUT_DIR

Run with `jax[cpu]` installed it dumps XLA:CPU's optimized HLO (any machine); with a CUDA
jaxlib on a GPU machine, XLA:GPU's. Every module is dumped before and after optimization
as text (`--xla_dump_hlo_as_text`), exactly as XLA writes it; nothing is edited. The models
are the shapes real programs have: normalizations, attention, convolution, pooling and its
gradient, MLP gradients, random bits, argmax, cumulative sums, embedding gathers and
scatters, dynamic slices with computed offsets, padding and iota.
"""
import os, sys

out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "xla-dumps")
os.makedirs(out, exist_ok=True)
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={out} --xla_dump_hlo_as_text"
)
import jax, jax.numpy as jnp, numpy as np  # noqa: E402  (after XLA_FLAGS)


def mlp(x, w1, w2):
    return jnp.tanh(jax.nn.gelu(x @ w1) @ w2)


def layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b


def rmsnorm_bf16(x, g):
    xf = x.astype(jnp.float32)
    y = xf * jax.lax.rsqrt((xf * xf).mean(-1, keepdims=True) + 1e-6)
    return y.astype(jnp.bfloat16) * g


def attention(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 8.0
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)


def conv(x, w):
    y = jax.lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    return jax.nn.relu(y)


def logsumexp_rows(x):
    return jax.nn.logsumexp(x, axis=-1)


def pool_grad(x):
    f = lambda y: jax.lax.reduce_window(
        y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"
    ).sum()
    return jax.grad(f)(x)


def avg_pool_padded(x):
    s = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    return s / 9.0


def cumsum_rows(x):
    return jnp.cumsum(x, axis=-1)


def argmax_rows(x):
    return jnp.argmax(x, axis=-1), jnp.max(x, axis=-1)


def random_bits(raw):
    key = jax.random.wrap_key_data(raw)
    return jax.random.uniform(key, (512, 256)), jax.random.bits(key, (1024,), jnp.uint32)


def embed(table, ids):
    return jnp.take(table, ids, axis=0) * 2.0


def embed_grad(table, ids, g):
    return jnp.zeros_like(table).at[ids].add(g)


def window(x, i):
    return jax.lax.dynamic_slice(x, (i * 2, 0), (64, 128)) + 1.0


def update(x, y, i):
    return jax.lax.dynamic_update_slice(x, jnp.exp(y), (i + 1, 3))


def pad_iota(x):
    p = jnp.pad(x, ((1, 2), (3, 0)), constant_values=-1.0)
    return p + jnp.arange(p.shape[1], dtype=jnp.float32)


def bits_ops(a, b):
    return (
        (a << 3) ^ (b >> 2),
        jax.lax.population_count(a),
        jax.lax.clz(b),
        jnp.where(jnp.isfinite(a.astype(jnp.float32) / b.astype(jnp.float32)), a & b, a | b),
    )


def transcend(x, y):
    return (
        jnp.sin(x) * jnp.cos(y) + jnp.arctan2(x, y),
        jnp.expm1(x) - jnp.log1p(jnp.abs(y)) + jnp.cbrt(x),
        jax.nn.sigmoid(x) * jax.lax.erf(y) + jnp.power(jnp.abs(x), y) + jnp.sign(y),
        jnp.round(x) + jnp.floor(y) + jnp.ceil(x) + jnp.clip(y, -1.0, 1.0) + jnp.remainder(x, 3.0),
    )


def transpose_add(x, y):
    return x.T * 2.0 + y, (x + 1.0).reshape(64, 4, 128).transpose(1, 0, 2)


def col_and_multi_reduce(x):
    return x.sum(0), jnp.max(x, axis=(0, 2)), (x * x).sum(axis=(1, 2))


# Inputs from numpy, so the dumps hold the models' modules, not those of making inputs.
rng = np.random.default_rng(0)


def r(*s, dtype=np.float32):
    return rng.standard_normal(s, dtype=np.float32).astype(dtype)


def ints(*s, hi=1 << 20, dtype=np.int32):
    return rng.integers(0, hi, s).astype(dtype)


runs = [
    (mlp, (r(256, 128), r(128, 512), r(512, 128))),
    (layernorm, (r(512, 256), r(256), r(256))),
    (rmsnorm_bf16, (r(512, 256, dtype=jnp.bfloat16), r(256, dtype=jnp.bfloat16))),
    (attention, (r(2, 4, 64, 32), r(2, 4, 64, 32), r(2, 4, 64, 32))),
    (conv, (r(4, 16, 16, 8), r(3, 3, 8, 16))),
    (logsumexp_rows, (r(512, 300),)),
    (pool_grad, (r(4, 16, 16, 8),)),
    (avg_pool_padded, (r(4, 15, 15, 8),)),
    (cumsum_rows, (r(64, 200),)),
    (argmax_rows, (r(256, 300),)),
    (random_bits, (np.array([0, 7], dtype=np.uint32),)),
    (embed, (r(1000, 64), ints(128, hi=1000))),
    (embed_grad, (r(1000, 64), ints(128, hi=1000), r(128, 64))),
    (window, (r(512, 256), np.int32(5))),
    (update, (r(256, 256), r(32, 64), np.int32(9))),
    (pad_iota, (r(100, 60),)),
    (bits_ops, (ints(4096, dtype=np.uint32), ints(4096, dtype=np.uint32) + 1)),
    (transcend, (r(64, 256), r(64, 256))),
    (transpose_add, (r(256, 128), r(128, 256))),
    (col_and_multi_reduce, (r(32, 48, 40),)),
    (
        jax.grad(lambda x, w1, w2: mlp(x, w1, w2).sum(), argnums=(1, 2)),
        (r(256, 128), r(128, 512), r(512, 128)),
    ),
]
for f, args in runs:
    jax.block_until_ready(jax.jit(f)(*args))
print(f"{len(runs)} models ran; dumps in {out} ({jax.devices()[0].platform}, jax {jax.__version__})")
