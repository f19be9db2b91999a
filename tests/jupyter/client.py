"""Drives the real ixmap kernel with jupyter_client, as a notebook front end would.

Usage: python client.py TEST   (TEST: one of the functions named in TESTS below)
Environment: IXMAP_BIN, the ixmap binary. Each test installs the kernelspec with
`ixmap kernel install --prefix` into a temporary folder, points JUPYTER_PATH at it, starts
a kernel through jupyter_client's KernelManager, and asserts on the messages it gets back.
Prints `ok TEST` and exits 0, or raises.
"""
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import time

from jupyter_client.manager import KernelManager
from jupyter_client.session import Session

IXMAP = os.environ["IXMAP_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = 60

MAP = "m = (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]"
# Seconds of work that polls the interrupt flag: 4M-point walks the simplifier cannot skip,
# one after another (a single walk takes under a second since the compiled evaluator).
LONG = "\n".join(
    "is_bijection (d0, d1) -> (d0, (d1 + d0 * d0 + %d) mod 2000), "
    "domain: d0 in [0, 1999], d1 in [0, 1999]" % i
    for i in range(40)
)


def install(tmp):
    out = subprocess.run([IXMAP, "kernel", "install", "--prefix", tmp], capture_output=True, text=True, check=True)
    assert "installed the ixmap kernelspec" in out.stdout, out
    os.environ["JUPYTER_PATH"] = os.path.join(tmp, "share", "jupyter")


class Kernel:
    """A started kernel and a client with its channels running."""

    def __init__(self, tmp):
        install(tmp)
        self.log_path = os.path.join(tmp, "kernel.log")
        self.log = open(self.log_path, "w")
        self.km = KernelManager(kernel_name="ixmap")
        self.km.start_kernel(stderr=self.log)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=TIMEOUT)

    def close(self):
        self.kc.stop_channels()
        if self.km.is_alive():
            self.km.shutdown_kernel(now=True)
        self.log.close()

    def iopub_until_idle(self, parent_id):
        msgs = []
        while True:
            m = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if m["parent_header"].get("msg_id") != parent_id:
                continue
            msgs.append(m)
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                return msgs

    def execute(self, code):
        """(reply, iopub messages of the request up to idle)."""
        msg_id = self.kc.execute(code)
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        assert reply["parent_header"]["msg_id"] == msg_id
        return reply, self.iopub_until_idle(msg_id)

    def ok(self, code):
        reply, io = self.execute(code)
        assert reply["content"]["status"] == "ok", (code, reply["content"])
        return io


def by_type(io, t):
    return [m for m in io if m["msg_type"] == t]


def test_kernel_info(k):
    k.kc.kernel_info()
    r = k.kc.get_shell_msg(timeout=TIMEOUT)
    c = r["content"]
    assert r["msg_type"] == "kernel_info_reply"
    assert c["status"] == "ok" and c["protocol_version"] == "5.3" and c["implementation"] == "ixmap"
    assert c["language_info"]["name"] == "ixmap" and c["language_info"]["file_extension"] == ".ixm"
    assert c["help_links"] and all(l["url"].startswith("https://") for l in c["help_links"])
    # The kernelspec is visible to Jupyter.
    from jupyter_client.kernelspec import KernelSpecManager
    spec = KernelSpecManager().get_kernel_spec("ixmap")
    assert spec.argv[0] == os.path.realpath(IXMAP) and spec.language == "ixmap"
    assert os.path.isfile(os.path.join(spec.resource_dir, "logo-64x64.png"))


def test_execute(k):
    reply, io = k.execute(MAP + "\ninverse m")
    assert reply["content"]["status"] == "ok" and reply["content"]["execution_count"] == 1
    types = [m["msg_type"] for m in io]
    assert types[0] == "status" and io[0]["content"]["execution_state"] == "busy", types
    assert types[1] == "execute_input", types
    assert types[-1] == "status", types
    assert types[2:-1] == ["display_data", "execute_result"], types
    result = by_type(io, "execute_result")[0]["content"]
    assert result["execution_count"] == 1
    data = result["data"]
    assert data["text/plain"].startswith("(d0, d1) -> (d1, d0), domain: d0 in [0, 4], d1 in [0, 3]"), data
    assert "<table" in data["text/html"] and ">d1</td>" in data["text/html"], data["text/html"]
    assert "\\mapsto" in data["text/latex"]


def test_error(k):
    reply, io = k.execute("a = (d0) -> (d0), domain: d0 in [0, 3]\nb = (d0) -> (d0 + d7)")
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "Error", c
    assert "d7" in c["evalue"], c
    err = by_type(io, "error")[0]["content"]
    tb = "\n".join(err["traceback"])
    # Points at line 2, column of `d7` (1-based: "b = (d0) -> (d0 + " is 18 characters).
    assert "--> 2:19" in tb, tb
    assert "b = (d0) -> (d0 + d7)" in tb and "^^" in tb, tb
    # The kernel survives, and `a` (bound before the error) persists.
    io = k.ok("a")
    assert by_type(io, "execute_result")[0]["content"]["data"]["text/plain"] == "(d0) -> (d0), domain: d0 in [0, 3]"


def test_state(k):
    k.ok(MAP)
    k.ok("t = inverse m")
    io = k.ok("c = compose m, t")
    text = by_type(io, "execute_result")[0]["content"]["data"]["text/plain"]
    assert text.startswith("(d0, d1) -> (d0, d1), domain: d0 in [0, 3], d1 in [0, 4]"), text
    io = k.ok("equal c, (d0, d1) -> (d0, d1), domain: d0 in [0, 3], d1 in [0, 4]")
    assert by_type(io, "execute_result")[0]["content"]["data"]["text/plain"] == "true"
    # History has the cells in order.
    k.kc.history(hist_access_type="tail", n=2)
    h = k.kc.get_shell_msg(timeout=TIMEOUT)["content"]["history"]
    assert [e[2] for e in h] == ["c = compose m, t", "equal c, (d0, d1) -> (d0, d1), domain: d0 in [0, 3], d1 in [0, 4]"], h


def test_complete_inspect(k):
    k.ok("my_map = (d0) -> (d0 * 2), domain: d0 in [0, 3]")
    code = "x = compose my_m, my_map"
    k.kc.complete(code, cursor_pos=16)
    c = k.kc.get_shell_msg(timeout=TIMEOUT)["content"]
    assert c["matches"] == ["my_map"] and (c["cursor_start"], c["cursor_end"]) == (12, 16), c
    k.kc.complete("simp", cursor_pos=4)
    assert k.kc.get_shell_msg(timeout=TIMEOUT)["content"]["matches"] == ["simplify", "simplify_file"]
    k.kc.complete("p = f32[4] bro", cursor_pos=14)
    assert "broadcast" in k.kc.get_shell_msg(timeout=TIMEOUT)["content"]["matches"]
    k.kc.inspect(code, cursor_pos=6)
    c = k.kc.get_shell_msg(timeout=TIMEOUT)["content"]
    assert c["found"] and c["data"]["text/plain"].startswith("compose A, B"), c
    k.kc.inspect(code, cursor_pos=len(code))
    c = k.kc.get_shell_msg(timeout=TIMEOUT)["content"]
    assert c["found"] and "(d0) -> (d0 * 2)" in c["data"]["text/plain"], c
    k.kc.inspect("nothing_here", cursor_pos=3)
    assert not k.kc.get_shell_msg(timeout=TIMEOUT)["content"]["found"]


def test_is_complete(k):
    for code, want in [
        ("m = (d0, d1) -> (d1, d0)", "complete"),
        ("m = (d0, d1) -> (d1,", "incomplete"),
        ("m = (d0) -> (d0),\ndomain:", "incomplete"),
        ("m = (d0) -> (d0))", "invalid"),
    ]:
        k.kc.is_complete(code)
        c = k.kc.get_shell_msg(timeout=TIMEOUT)["content"]
        assert c["status"] == want, (code, c)


def test_interrupt(k):
    k.ok(MAP)
    msg_id = k.kc.execute(LONG)
    time.sleep(0.5)
    t0 = time.monotonic()
    k.km.interrupt_kernel()  # interrupt_mode "message": an interrupt_request on control
    reply = k.kc.get_shell_msg(timeout=TIMEOUT)
    waited = time.monotonic() - t0
    c = reply["content"]
    assert reply["parent_header"]["msg_id"] == msg_id
    assert c["status"] == "error" and c["ename"] == "Interrupted", c
    assert waited < 10, f"interrupt took {waited:.1f} s"
    k.iopub_until_idle(msg_id)
    io = k.ok("inverse m")  # the session is usable and kept its names
    assert by_type(io, "execute_result")
    print(f"interrupt answered in {waited * 1000:.0f} ms")


def test_bad_signature(k):
    # A correctly framed execute_request signed with the wrong key must never run.
    wrong = Session(key=b"not-the-key", username="intruder")
    wrong.send(k.kc.shell_channel.socket, "execute_request",
               {"code": "evil = (d0) -> (d0)", "silent": False, "store_history": True,
                "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    try:
        m = k.kc.get_shell_msg(timeout=1.5)
        raise AssertionError(f"the kernel answered a badly signed message: {m['msg_type']}")
    except queue.Empty:
        pass
    reply, io = k.execute("evil")
    assert reply["content"]["status"] == "error" and "unknown command or name `evil`" in reply["content"]["evalue"]
    k.log.flush()
    log = open(k.log_path).read()
    assert "dropped a message on shell: bad signature" in log, log


def test_plot(k):
    io = k.ok("plot (d0) -> (d0 floordiv 2), domain: d0 in [0, 7]")
    shown = by_type(io, "display_data")
    assert shown, [m["msg_type"] for m in io]
    data = shown[0]["content"]["data"]
    assert data["image/svg+xml"].startswith("<svg") and "</svg>" in data["image/svg+xml"]
    assert "text/plain" in data


def test_shutdown(k):
    msg = k.kc.session.msg("shutdown_request", {"restart": False})
    k.kc.control_channel.send(msg)
    reply = k.kc.get_control_msg(timeout=TIMEOUT)
    assert reply["msg_type"] == "shutdown_reply" and reply["content"]["status"] == "ok"
    deadline = time.monotonic() + 10
    while k.km.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not k.km.is_alive(), "the kernel process did not exit after shutdown_reply"
    assert k.km.provisioner.process.returncode == 0 if k.km.provisioner and k.km.provisioner.process else True


def test_exit(k):
    """`exit` and `quit` ask the front end to close, as IPython's do (jupyter console honours it)."""
    for word in ["exit", "quit"]:
        reply, io = k.execute(word)
        c = reply["content"]
        assert c["status"] == "ok", c
        assert c["payload"] == [{"source": "ask_exit", "keepkernel": False}], c


def test_definitions_and_names(k):
    """A definition reports its one line (as the REPL, scripts and transcripts do); an HLO name
    is shown by `NAME?` and by Shift-Tab; a name of two computations is an error naming both."""
    io = k.ok("fused {\n  p0 = f32[4,8] parameter(0)\n  ROOT n = f32[4,8] negate(p0)\n}")
    text = by_type(io, "execute_result")[0]["content"]["data"]["text/plain"]
    assert text == "defined computation fused: f32[4,8] (2 instructions, root n)", text
    io = k.ok("n?")
    text = by_type(io, "execute_result")[0]["content"]["data"]["text/plain"]
    assert text == "ROOT n = f32[4,8] negate(p0)  // in fused", text
    k.kc.inspect("indexing fused.n", cursor_pos=14)
    c = k.kc.get_shell_msg(timeout=TIMEOUT)["content"]
    assert c["found"] and "negate(p0)" in c["data"]["text/plain"], c
    k.ok("g {\n  p0 = f32[4] parameter(0)\n  ROOT e = f32[4] exponential(p0)\n}")
    reply, io = k.execute("indexing p0")
    c = reply["content"]
    assert c["status"] == "error" and "ambiguous" in c["evalue"], c
    tb = "\n".join(by_type(io, "error")[0]["content"]["traceback"])
    assert "`fused.p0`" in tb and "`g.p0`" in tb, tb


def test_progress(k):
    """A long command updates one progress display in place (display_data with a display id,
    then update_display_data), ending at its last figures."""
    io = k.ok("p = f32[256,256] parameter(0)\ne = f32[256,256] exponential(p)\nbench e device=cpu reps=10")
    shown = [m for m in by_type(io, "display_data")
             if m["content"].get("transient", {}).get("display_id", "").startswith("ixmap-progress")]
    assert len(shown) == 1, [m["msg_type"] for m in io]
    did = shown[0]["content"]["transient"]["display_id"]
    updates = [m for m in by_type(io, "update_display_data") if m["content"]["transient"]["display_id"] == did]
    assert updates, [m["msg_type"] for m in io]
    last = updates[-1]["content"]["data"]
    import re
    m = re.fullmatch(r"timing rounds: (\d+)/(\d+)", last["text/plain"])
    assert m and m.group(1) == m.group(2), last
    assert "<progress" in last["text/html"], last
    # the result comes after the display, and a later cell without long work shows none
    types = [m["msg_type"] for m in io]
    assert types.index("display_data") < types.index("execute_result"), types
    io = k.ok("inverse (d0) -> (d0), domain: d0 in [0, 3]")
    assert not by_type(io, "update_display_data"), [m["msg_type"] for m in io]


def test_parent_exit(k):
    """The kernel ends when the process named by JPY_PARENT_PID ends (a client that crashed
    leaves no kernel behind), and not before."""
    from jupyter_client.connect import write_connection_file
    tmp = tempfile.mkdtemp(prefix="ixmap-parent-")
    cf, _ = write_connection_file(os.path.join(tmp, "kernel.json"))
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    log = open(os.path.join(tmp, "kernel.log"), "w")
    kernel = subprocess.Popen([IXMAP, "kernel", "--connection-file", cf],
                              env=dict(os.environ, JPY_PARENT_PID=str(parent.pid)), stderr=log)
    try:
        time.sleep(2)
        assert kernel.poll() is None, "the kernel ended while its parent lives"
        parent.kill()
        parent.wait()
        t0 = time.monotonic()
        kernel.wait(timeout=20)
        took = time.monotonic() - t0
        log.close()
        said = open(os.path.join(tmp, "kernel.log")).read()
        assert kernel.returncode == 0, (kernel.returncode, said)
        assert "is gone" in said, said
        print(f"parent_exit: the kernel ended {took * 1000:.0f} ms after its parent")
    finally:
        for p in (kernel, parent):
            if p.poll() is None:
                p.kill()


def test_connection_loss(k):
    """Without a parent to watch, the kernel ends once every client connection has been gone
    for the grace period (IXMAP_KERNEL_ORPHAN_SECS), and not before a client came."""
    from jupyter_client.connect import write_connection_file
    from jupyter_client import BlockingKernelClient
    tmp = tempfile.mkdtemp(prefix="ixmap-orphan-")
    cf, _ = write_connection_file(os.path.join(tmp, "kernel.json"))
    env = dict(os.environ, IXMAP_KERNEL_ORPHAN_SECS="1")
    env.pop("JPY_PARENT_PID", None)
    log = open(os.path.join(tmp, "kernel.log"), "w")
    kernel = subprocess.Popen([IXMAP, "kernel", "--connection-file", cf], env=env, stderr=log)
    kc = None
    try:
        time.sleep(2.5)
        assert kernel.poll() is None, "the kernel ended before any client connected"
        kc = BlockingKernelClient(connection_file=cf)
        kc.load_connection_file()
        kc.start_channels()
        kc.wait_for_ready(timeout=TIMEOUT)
        time.sleep(2.5)
        assert kernel.poll() is None, "the kernel ended while a client is connected"
        kc.stop_channels()
        kc = None
        t0 = time.monotonic()
        kernel.wait(timeout=30)
        took = time.monotonic() - t0
        log.close()
        said = open(os.path.join(tmp, "kernel.log")).read()
        assert kernel.returncode == 0, (kernel.returncode, said)
        assert "no client has been connected" in said, said
        assert took >= 0.9, f"ended {took:.2f} s after the client left, before the grace period"
        print(f"connection_loss: the kernel ended {took * 1000:.0f} ms after its last client left (grace 1 s)")
    finally:
        if kc is not None:
            kc.stop_channels()
        if kernel.poll() is None:
            kernel.kill()


def test_latency(k):
    """Execute round trip over 200 simple cells; start-up to kernel_info_reply."""
    k.ok(MAP)
    trips, idles = [], []
    for i in range(200):
        t0 = time.perf_counter()
        msg_id = k.kc.execute(f"eval m at ({i % 4}, {i % 5})")
        reply = k.kc.get_shell_msg(timeout=TIMEOUT)
        trips.append(time.perf_counter() - t0)
        assert reply["content"]["status"] == "ok"
        k.iopub_until_idle(msg_id)
        idles.append(time.perf_counter() - t0)
    trips.sort()
    idles.sort()
    med, p99 = statistics.median(trips) * 1e3, trips[int(len(trips) * 0.99) - 1] * 1e3
    imed, ip99 = statistics.median(idles) * 1e3, idles[int(len(idles) * 0.99) - 1] * 1e3
    # Start-up: process launch to the kernel_info_reply, over 5 fresh kernels.
    starts = []
    for _ in range(5):
        km = KernelManager(kernel_name="ixmap")
        t0 = time.perf_counter()
        km.start_kernel(stderr=subprocess.DEVNULL)
        kc = km.client()
        kc.start_channels()
        while True:
            kc.kernel_info()
            try:
                r = kc.get_shell_msg(timeout=0.05)
                if r["msg_type"] == "kernel_info_reply":
                    break
            except queue.Empty:
                continue
        starts.append(time.perf_counter() - t0)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    start_med = statistics.median(starts) * 1e3
    report = {"execute_reply_median_ms": round(med, 2), "execute_reply_p99_ms": round(p99, 2),
              "execute_idle_median_ms": round(imed, 2), "execute_idle_p99_ms": round(ip99, 2),
              "startup_to_kernel_info_reply_median_ms": round(start_med, 1),
              "startup_runs_ms": [round(s * 1e3, 1) for s in starts]}
    print("latency " + json.dumps(report))
    # Loose bounds that a loaded CI machine still meets; the goals (5 ms, 20 ms, 200 ms)
    # are reported above and in the note.
    assert med < 50 and p99 < 250 and start_med < 2000, report


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
