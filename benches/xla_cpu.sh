#!/usr/bin/env bash
# ixmap's CPU kernels against XLA:CPU (JAX) and numpy, interleaved, in one command:
#   benches/xla_cpu.sh [--rounds N] [--quick] [--only add_reshape,softmax1024,...]
# Sets up a venv of its own (target/xla-venv: jax[cpu] and numpy from PyPI; CI's test-all
# does not install it), builds ixmap in release mode, and prints the ratio table.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/xla-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import jax, numpy' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r benches/xla_cpu_requirements.txt
fi
cargo build --release --bins -q
exec "$venv/bin/python" benches/xla_cpu.py "$@"
