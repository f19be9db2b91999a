"""Runs the tour notebook (kernel/tour.ipynb) on the ixmap kernel.

Usage: python notebook.py execute|html   (IXMAP_BIN: the ixmap binary)
- execute: nbclient runs every cell top to bottom; no cell may produce an error, and every
  code cell shows something.
- html: `python -m nbconvert --to html --execute`, as a user would run it; the page must
  contain the plots as inline SVG and the maps' domain tables. IXMAP_TOUR_HTML, if set,
  receives a copy of the page.
"""
import os
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
    print(f"tour.html: {len(page)} bytes, {svgs} SVG plots, {tables} tables")


if __name__ == "__main__":
    mode = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="ixmap-tour-") as tmp:
        install(tmp)
        {"execute": execute, "html": html}[mode](tmp)
    print(f"ok {mode}")
