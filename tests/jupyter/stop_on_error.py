"""The kernel honours execute_request's `stop_on_error` (the messaging spec; ipykernel does
this): after a cell fails or is interrupted, the execute_requests already queued behind it
are answered `aborted` without running; the next request after that runs again. With
`stop_on_error: false` the queued cells run.

Usage: python stop_on_error.py TEST   (error, interrupt, off, panic_free_handlers)
Environment: IXMAP_BIN, as for client.py, whose Kernel this uses.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Kernel, MAP, LONG, TIMEOUT, by_type  # noqa: E402


# A cell that works for a moment and then fails, so that the cells sent behind it have
# surely reached the kernel's queue when it fails.
FAILING = LONG.split("\n")[0] + "\ninverse nosuch"


def queue_cells(k, cells, stop_on_error=True):
    """Sends every cell before reading any reply; the replies' statuses in order."""
    ids = [k.kc.execute(c, stop_on_error=stop_on_error) for c in cells]
    return ids


def replies(k, ids):
    out = {}
    while len(out) < len(ids):
        r = k.kc.get_shell_msg(timeout=TIMEOUT)
        out[r["parent_header"]["msg_id"]] = r
    for i in ids:
        k.iopub_until_idle(i)
    return [out[i] for i in ids]


def test_error(k):
    ids = queue_cells(k, [FAILING, "a1 = (d0) -> (d0), domain: d0 in [0, 1]", "a1"])
    rs = replies(k, ids)
    assert [r["content"]["status"] for r in rs] == ["error", "aborted", "aborted"], [r["content"] for r in rs]
    assert all(r["msg_type"] == "execute_reply" for r in rs)
    # the aborted cells did not run: `a1` is not bound; requests run again afterwards
    reply, _ = k.execute("a1")
    assert reply["content"]["status"] == "error" and "a1" in reply["content"]["evalue"], reply["content"]
    k.ok("a1 = (d0) -> (d0), domain: d0 in [0, 1]")
    k.ok("a1")


def test_interrupt(k):
    k.ok(MAP)
    ids = queue_cells(k, [LONG, "b1 = inverse m"])
    time.sleep(0.5)
    k.km.interrupt_kernel()
    rs = replies(k, ids)
    c = [r["content"] for r in rs]
    assert c[0]["status"] == "error" and c[0]["ename"] == "Interrupted", c
    assert c[1]["status"] == "aborted", c
    reply, _ = k.execute("b1")
    assert reply["content"]["status"] == "error", reply["content"]


def test_off(k):
    ids = queue_cells(k, [FAILING, "a2 = (d0) -> (d0), domain: d0 in [0, 1]", "a2"], stop_on_error=False)
    rs = replies(k, ids)
    assert [r["content"]["status"] for r in rs] == ["error", "ok", "ok"], [r["content"] for r in rs]


def test_other_requests_are_served_while_aborting(k):
    # a complete_request queued between aborted cells is answered normally
    a = k.kc.execute(FAILING)
    b = k.kc.complete("simp", cursor_pos=4)
    c = k.kc.execute("(d0) -> (d0)")
    got = {}
    while len(got) < 3:
        r = k.kc.get_shell_msg(timeout=TIMEOUT)
        got[r["parent_header"]["msg_id"]] = r
    assert got[a]["content"]["status"] == "error"
    assert got[b]["content"]["matches"] == ["simplify", "simplify_file"], got[b]["content"]
    assert got[c]["content"]["status"] == "aborted", got[c]["content"]


TESTS = {name[5:]: f for name, f in globals().items() if name.startswith("test_")}

if __name__ == "__main__":
    name = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="ixmap-jupyter-") as tmp:
        k = Kernel(tmp)
        try:
            TESTS[name](k)
        finally:
            k.close()
    print(f"ok {name}")
