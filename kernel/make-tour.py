#!/usr/bin/env python3
"""Writes kernel/tour.ipynb (no outputs; run it in Jupyter or with nbconvert --execute).
Needs nbformat (kernel/requirements.txt). Run from the repository root."""
import nbformat
from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell
cells = []
md = lambda s: cells.append(new_markdown_cell(s))
code = lambda s: cells.append(new_code_cell(s))
md("""# A tour of ixmap

ixmap is a workbench for the *indexing maps* of ML compilers (XLA, MLIR): for every element of one
tensor, which element(s) of another it reads. This notebook runs on the `ixmap` kernel
(`ixmap kernel install`, then pick **ixmap** in Jupyter). Every cell is ixmap's statement language;
`help` lists the commands, Tab completes, Shift-Tab shows help for the command under the cursor.""")
md("""## Maps

A map is written exactly as XLA prints it. The notebook shows its results and its domain as a table
(and as LaTeX where HTML is not available). This one is a transpose of a 10x20 tensor.""")
code("m = (d0, d1) -> (d1, d0), domain: d0 in [0, 9], d1 in [0, 19]")
code("eval m at (3, 4)")
md("A transpose is a bijection, so it has an inverse; the domain moves with it.")
code("inverse m")
md("""Range variables (`s0`) make a map one-to-many: output element `(d0, d1)` reads a window of 8 input rows.""")
code("w = (d0, d1)[s0] -> (d0 * 8 + s0, d1), domain: d0 in [0, 9], d1 in [0, 15], s0 in [0, 7]\nshow w as mlir")
md("""## Composition and simplification

`compose A, B` is A then B, as XLA's `ComposeIndexingMaps`: a reshape of a [4, 8] output into a [32] input,
then a broadcast that reads element `d0 mod 8`. The result is simplified under its domain.""")
code("r = (d0, d1) -> (d0 * 8 + d1), domain: d0 in [0, 3], d1 in [0, 7]\nb = (d0) -> (d0 mod 8), domain: d0 in [0, 31]\ncompose r, b")
md("`simplify ... explain` lists every rewrite with the domain fact that allowed it.")
code("simplify (d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14] explain")
code("equal compose r, b, (d0, d1) -> (d1), domain: d0 in [0, 3], d1 in [0, 7]".replace("equal compose r, b,", "rb = compose r, b\nequal rb,"))
md("""## Pictures of access patterns

`plot` draws which input elements each output element reads, each reader in its own colour; a cell
outlined in black is read by several. `at (i, j)` fixes one output element, `DIM=v` fixes a dimension,
`color=VAR` colours by one variable, and in the REPL `plot ... to FILE.svg` writes the picture.""")
code("plot (d0) -> (d0 floordiv 2), domain: d0 in [0, 7]")
code("plot w at (1, 2)")
code("plot m color=d0")
md("""## HLO

Paste HLO as XLA prints it; `indexing` gives every operand's output-to-input map (a table per operand),
and `plot` draws an instruction through its indexing.""")
code("p0 = f32[20] parameter(0)\nbc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}\nindexing bc0")
code("plot bc0 d0=0 d2=0")
code("utilization (d0, d1, d2) -> (d1), domain: d0 in [0, 9], d1 in [0, 19], d2 in [0, 29]")
md("""## GPU launch mappings

`threads` gives the map from thread and block ids to output elements for a launch; `coalescing` counts
the memory sectors each warp touches against the ideal. Here a tiled transpose: the picture shows which
input elements the threads of block 0 read, coloured by warp (`color=th_x/32`), with the 32-byte sectors (8 floats) each warp touches marked and counted (`sector=8`).""")
code("q0 = f32[8, 12] parameter(0)\ntr = f32[12, 8] transpose(q0), dimensions={1,0}\nth = threads tr block=32\ncoalescing tr")
code("plot th operand=0 bl_x=0 color=th_x/32 sector=8")
md("""`emit` writes the kernel for a mapping (CUDA C, or C for the CPU), and `bench` runs it, checks every
element against a reference and compares it with a plain copy.""")
code("a0 = f32[64, 64] parameter(0)\na1 = f32[64, 64] parameter(1)\nadd0 = f32[64, 64] add(a0, a1)\ncoalescing add0 vector=4")
md("""`emit` prints the kernel with each load's map in a comment above it. The index arithmetic comes from the
*simplified* maps: in seed 002's pattern (exp, reshape, add) the loop index `i` is the output's linear offset,
and the load through the reshape simplifies back to `i` itself, so no delinearize-then-linearize is left.
`naive` emits what a straightforward lowering does: delinearize `i` into `(o0, o1)`, apply each map, and
linearize again (`(o0 / 2) * 16 + (o0 % 2) * 8 + o1` for the same load).""")
code("fused_reshape {\n  p0 = f32[8,16] parameter(0)\n  p1 = f32[16,8] parameter(1)\n  e = f32[8,16] exponential(p0)\n  r = f32[16,8] reshape(e)\n  ROOT a = f32[16,8] add(r, p1)\n}\nemit fused_reshape target=cpu")
code("emit fused_reshape target=cpu naive")
md("For CUDA, `target=cuda` (the default) emits a `__global__` kernel for the launch mapping; `vector=4` gives each thread 4 consecutive elements.")
code("emit add0 target=cuda vector=4")
code("bench add0 device=cpu reps=3")
nb = new_notebook(cells=cells, metadata={
    "kernelspec": {"name": "ixmap", "display_name": "ixmap", "language": "ixmap"},
    "language_info": {"name": "ixmap", "file_extension": ".ixm", "mimetype": "text/x-ixmap", "pygments_lexer": "text"},
})
for i, c in enumerate(nb.cells):
    c["id"] = f"tour-{i:02d}"
nbformat.validate(nb)
nbformat.write(nb, "kernel/tour.ipynb")
