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
md("Every command documents itself: `help COMMAND` (or `COMMAND?`) gives its usage, what it does and an example with its output.")
code("help simplify")
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
the memory sectors each warp touches against the ideal. Here a small transpose, which XLA launches as a loop
(its 32x32 tiles are for larger ones): the picture shows which
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
# The tiles section, as it stands in tour.ipynb (added there by 75b5d8b).
md("## Tiles and tuning\n\n`tile` cuts the output into tiles and gives each operand's tile: offsets, sizes, strides. A *named* size makes\nit symbolic: the seed's reshape tiles as whole rows when `ts` is a multiple of 8, and inside a row when `ts`\ndivides 8. Every case is checked by enumerating both sides at every size.")
code('tile (d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31] sizes=(ts)')
md('`tune` benchmarks the valid tilings of a fusion (each kernel verified against the reference) and binds the\nbest *mapping* to `NAME_best`, which `emit` and `bench` take as `mapping=NAME`.')
code('g0 = f32[256, 256] parameter(0)\ntg = f32[256, 256] transpose(g0), dimensions={1,0}\ntune tg device=cpu reps=2 max=4')
code('tg_best')
code('bench tg mapping=tg_best device=cpu reps=3')
md("""## Layouts: CuTe, Triton and XLA

Kernel authors describe which thread holds which element in three notations: XLA's thread maps,
CUTLASS's CuTe layouts (`Shape:Stride`) and Triton's linear layouts (behind `#ttg.blocked<...>`).
Each is an indexing map, so ixmap reads all three, pictures them and compares them. One 4 x 32 f32
tile: XLA's loop emitter with 32 threads and vector 4, a Triton blocked layout, and CuTe's
thread/value layout over the tile (offsets column-major, as CuTe draws them). Layout text goes in quotes.""")
code("xla = (th_x, th_y, th_z, bl_x, bl_y, bl_z)[unroll_id] -> (th_x floordiv 8, (th_x mod 8) * 4 + unroll_id), domain: th_x in [0, 31], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 0], bl_y in [0, 0], bl_z in [0, 0], unroll_id in [0, 3]\npicture xla")
code('tri = layout "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>" shape=(4, 32) tv\npicture tri')
code('tv = layout "((8,4),4):((16,1),4)" tile=(4, 32)\npicture tv')
md("""`equal` decides exactly that they are one function. XLA's map has six thread/block ids and a range
variable, so it is compared through the map that keeps `th_x` and `unroll_id`.""")
code("equal tri, tv\nt = (th_x, th_y, th_z, bl_x, bl_y, bl_z)[unroll_id] -> (th_x, unroll_id), domain: th_x in [0, 31], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 0], bl_y in [0, 0], bl_z in [0, 0], unroll_id in [0, 3]\nequal xla, (compose t, tri)")
md("""CuTe's layout algebra is computed from its definitions (`composition`, `complement`, `logical_divide`,
`blocked_product`, ...), and any map that is a layout prints back in CuTe notation. A Triton layout's
bit-level map (XOR as addition mod 2) simplifies to the mixed-radix form when its bases are distinct
powers of two, and `access` counts a warp's global sectors and shared-memory bank wavefronts.""")
code('composition "(6,2):(8,2)", "(4,3):(3,1)"')
code("simplify tri\nshow (d0, d1) -> (d0 * 2 + d1 * 8), domain: d0 in [0, 3], d1 in [0, 2] as cute")
code("access tri")
md("An MMA accumulator tile of 128 x 32 (mma.m16n8, 4 x 2 warps), each element labelled with its thread and register:")
code('picture "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 2], instrShape = [16, 8]}>" shape=(128, 32)')
md("""A layout is also a launch. Given as `mapping=NAME`, its threads make a block, its values each thread's
elements, and block b computes tile b of the output (masked where the tile sticks out); the layout must
cover its tile exactly once. `threads`, `emit`, `check`, `bench` and `coalescing` take it, and every
element is checked against the reference. CuTe's `(128,4):(4,1)` is XLA's loop with block=128 vector=4.""")
code('blk = layout "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [1, 32], warpsPerCTA = [2, 2], order = [1, 0]}>" shape=(2, 256)\ne0 = f32[64, 300] parameter(0)\nneg = f32[64, 300] negate(e0)\nthreads neg mapping=blk')
code('check neg mapping=blk\nbench neg mapping=blk device=cpu reps=3')
code('tvl = layout "(128,4):(4,1)"\nequal (threads neg block=128 vector=4 output), (threads neg mapping=tvl output)')
nb = new_notebook(cells=cells, metadata={
    "kernelspec": {"name": "ixmap", "display_name": "ixmap", "language": "ixmap"},
    "language_info": {"name": "ixmap", "file_extension": ".ixm", "mimetype": "text/x-ixmap", "pygments_lexer": "text"},
})
for i, c in enumerate(nb.cells):
    c["id"] = f"tour-{i:02d}"
nbformat.validate(nb)
nbformat.write(nb, "kernel/tour.ipynb")
