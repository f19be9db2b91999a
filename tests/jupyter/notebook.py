"""Runs the tour notebook (kernel/tour.ipynb) on the ixmap kernel.

Usage: python notebook.py execute|html   (IXMAP_BIN: the ixmap binary)
- execute: nbclient runs every cell top to bottom; no cell may produce an error, and every
  code cell shows something.
- html: `python -m nbconvert --to html --execute`, as a user would run it; the page must
  contain the plots as inline SVG and the maps' domain tables. IXMAP_TOUR_HTML, if set,
  receives a copy of the page.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import nbformat
from nbclient import NotebookClient

IXMAP = os.environ["IXMAP_BIN"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOUR = os.path.join(ROOT, "kernel", "tour.ipynb")


def install(tmp):
    subprocess.run([IXMAP, "kernel", "install", "--prefix", tmp], check=True, capture_output=True)
    os.environ["JUPYTER_PATH"] = os.path.join(tmp, "share", "jupyter")


def execute(tmp):
    nb = nbformat.read(TOUR, as_version=4)
    NotebookClient(nb, kernel_name="ixmap", timeout=120, allow_errors=False).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    silent = [c.source for c in code if not c.outputs]
    assert not silent, f"cells without output: {silent}"
    kinds = {k for c in code for o in c.outputs for k in o.get("data", {})}
    assert {"text/plain", "text/html", "text/latex", "image/svg+xml"} <= kinds, kinds
    print(f"{len(code)} code cells ran, output kinds: {sorted(kinds)}")


def html(tmp):
    out = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--execute", TOUR, "--output-dir", tmp,
         "--ExecutePreprocessor.kernel_name=ixmap", "--ExecutePreprocessor.timeout=120"],
        capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    page = open(os.path.join(tmp, "tour.html"), encoding="utf-8").read()
    if os.environ.get("IXMAP_TOUR_HTML"):
        shutil.copy(os.path.join(tmp, "tour.html"), os.environ["IXMAP_TOUR_HTML"])
    # nbconvert re-serialises output HTML (attribute order may change), so count tags.
    svgs = page.count("<svg ")
    tables = page.count("<table ")
    assert svgs >= 5, f"{svgs} plots in the page"
    assert tables >= 5, f"{tables} tables in the page"
    assert 'class="ixmap-map"' in page and ">range variable</td>" in page
    assert "Traceback" not in page and "ename" not in page
    # Issue 17's notebook items, on the page as a user gets it:
    # domain entries never break inside `[lo, hi]`, and unit launch ids share one entry;
    assert not re.search(r",\s*<br\s*/?>", page), "a domain entry breaks after a comma"
    assert "white-space: nowrap" in page
    # (bl_x too when the launch has one block: the tour's small transpose runs as a loop of
    # 3 blocks since XLA's tiling rule of issue 14, so bl_x has its own entry there)
    assert re.search(r"th_y, th_z, (bl_x, )?bl_y, bl_z in \[0, 0\]", page), "unit ids grouped"
    # kernels are monospace, highlighted, and never wrap (a long comment scrolls);
    assert 'class="ixmap-code"' in page and "white-space: pre;" in page
    assert "__global__</span>" in page
    # help, MLIR and maps in a fixed-width font whatever the page's CSS (issue 29);
    mono_pre = r'<pre (?=[^>]*ixmap-text)(?=[^>]*font-family: monospace)[^>]*>'
    assert re.search(mono_pre + r"usage: simplify MAP", page), "help is not monospace"
    assert re.search(mono_pre + r"affine_map&lt;", page), "MLIR is not monospace"
    assert re.search(r'<code style="font-family: monospace">\(d0, d1\) -&gt; \(d1, d0\)', page), "maps"
    # a long command (bench, tune) leaves its progress display at its last figures;
    # (nbconvert may reorder attributes: the text beside each bar says the figures)
    bars = re.findall(r'<progress [^>]*></progress> timing rounds: (\d+)/(\d+)', page)
    assert bars and all(v == m for v, m in bars), bars
    # plots are sized to what they show: none is taller than a screen.
    heights = [float(h) for h in re.findall(r'<svg [^>]*?height="([0-9.]+)"', page)]
    assert heights and max(heights) < 700, heights
    print(f"tour.html: {len(page)} bytes, {svgs} SVG plots, {tables} tables")


if __name__ == "__main__":
    mode = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="ixmap-tour-") as tmp:
        install(tmp)
        {"execute": execute, "html": html}[mode](tmp)
    print(f"ok {mode}")
