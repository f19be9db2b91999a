//! The five sockets and their loops.
//!
//! - shell (ROUTER): requests, handled one at a time in arrival order; each is bracketed by
//!   `status: busy` / `status: idle` on iopub.
//! - control (ROUTER): `interrupt`, `shutdown`, `kernel_info`, served by its own task, so
//!   they are answered while a long cell runs on shell.
//! - iopub (PUB): everything broadcast, sent by one task from a channel so messages from
//!   both loops and the engine thread keep their order.
//! - stdin (ROUTER): bound as the protocol requires; ixmap never asks for input.
//! - heartbeat (REP): echoes.
//!
//! The kernel ends with its client: when the process named by `JPY_PARENT_PID` ends (as
//! ipykernel does), and when every client connection has been gone for a grace period
//! (`IXMAP_KERNEL_ORPHAN_SECS`, 60 s by default, `off` to keep it), counted from the
//! sockets' connect and disconnect events. A kernel no client has reached yet waits.
//!
//! The [`Engine`] (the ixmap session) lives on its own OS thread; the loops send it jobs
//! and await the answers, so a cell that runs for seconds blocks neither control nor the
//! heartbeat. An interrupt sets the library's flag ([`crate::request_interrupt`]), which
//! enumeration, simplification and benchmarks poll; the cell ends with an `Interrupted`
//! error and the session stays as it was before the interrupted statement.

use super::connection::Connection;
use super::engine::{Engine, Output};
use super::message::{Message, Signer, PROTOCOL_VERSION};
use bytes::Bytes;
use serde_json::{json, Value as Json};
use std::sync::mpsc as std_mpsc;
use tokio::sync::{mpsc, oneshot};
use zeromq::{Socket, SocketRecv, SocketSend, ZmqMessage};

type Job = Box<dyn FnOnce(&mut Engine) + Send>;

/// Sends jobs to the engine thread.
#[derive(Clone)]
struct EngineHandle {
    tx: std_mpsc::Sender<Job>,
}

impl EngineHandle {
    fn start() -> EngineHandle {
        let (tx, rx) = std_mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("ixmap-engine".into())
            .stack_size(crate::STACK_BYTES)
            .spawn(move || {
                let mut engine = Engine::new();
                while let Ok(job) = rx.recv() {
                    // A job that panics (a bug) loses its answer, never the thread: the
                    // kernel keeps serving. (`call_json` turns the panic into an error
                    // reply first.)
                    let run =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut engine)));
                    if let Err(p) = run {
                        log(&format!(
                            "a request panicked: {}",
                            crate::repl::panic_message(p.as_ref())
                        ));
                        crate::clear_interrupt();
                    }
                }
            })
            .expect("the OS can start the engine thread");
        EngineHandle { tx }
    }

    async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Engine) -> R + Send + 'static,
    ) -> Option<R> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Box::new(move |e: &mut Engine| {
                let _ = tx.send(f(e));
            }))
            .ok()?;
        rx.await.ok()
    }

    /// [`EngineHandle::call`] for a reply's content: a panic in `f` (a bug) becomes an
    /// error reply, and the engine goes on serving.
    async fn call_json(
        &self,
        f: impl FnOnce(&mut Engine) -> Json + Send + 'static,
    ) -> Option<Json> {
        self.call(move |e| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(e)))
                .unwrap_or_else(|p| internal_error(&crate::repl::panic_message(p.as_ref())))
        })
        .await
    }
}

/// The error reply for a request whose handler panicked.
fn internal_error(what: &str) -> Json {
    crate::clear_interrupt();
    json!({
        "status": "error",
        "ename": "InternalError",
        "evalue": format!("ixmap panicked: {what}"),
        "traceback": [
            format!("internal error: ixmap panicked: {what}"),
            "this is a bug in ixmap; the session is still usable",
        ],
    })
}

/// Broadcasts on iopub (through the iopub task).
#[derive(Clone)]
struct Publisher {
    tx: mpsc::UnboundedSender<Message>,
}

impl Publisher {
    fn publish(&self, parent: &Message, msg_type: &str, content: Json) {
        let mut m = Message::child(parent, msg_type, content);
        m.identities = vec![format!("kernel.ixmap.{msg_type}").into_bytes()];
        let _ = self.tx.send(m);
    }
    fn status(&self, parent: &Message, state: &str) {
        self.publish(parent, "status", json!({"execution_state": state}));
    }
}

fn to_zmq(frames: Vec<Vec<u8>>) -> Option<ZmqMessage> {
    ZmqMessage::try_from(frames.into_iter().map(Bytes::from).collect::<Vec<_>>()).ok()
}

fn log(what: &str) {
    #[allow(clippy::print_stderr)]
    {
        eprintln!("ixmap kernel: {what}");
    }
}

pub fn kernel_info() -> Json {
    let version = env!("CARGO_PKG_VERSION");
    json!({
        "status": "ok",
        "protocol_version": PROTOCOL_VERSION,
        "implementation": "ixmap",
        "implementation_version": version,
        "language_info": {
            "name": "ixmap",
            "version": version,
            "mimetype": "text/x-ixmap",
            "file_extension": ".ixm",
            "pygments_lexer": "text",
        },
        "banner": format!("ixmap {version}: a workbench for XLA-style indexing maps. `help` lists the commands."),
        "help_links": [
            {"text": "ixmap commands (type `help`)", "url": "https://openxla.org/xla/indexing"},
            {"text": "XLA indexing analysis", "url": "https://openxla.org/xla/indexing"},
        ],
        "debugger": false,
    })
}

/// Binds the sockets of `conn` and serves until a shutdown request.
pub fn run(conn: Connection) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    rt.block_on(serve(conn))
}

async fn bind<S: Socket>(
    socket: &mut S,
    conn: &Connection,
    port: u16,
    name: &str,
) -> Result<(), String> {
    let ep = conn.endpoint(port);
    socket
        .bind(&ep)
        .await
        .map(|_| ())
        .map_err(|e| format!("cannot bind the {name} socket to {ep}: {e}"))
}

async fn serve(conn: Connection) -> Result<(), String> {
    let signer = Signer::new(&conn.key);
    let mut shell = zeromq::RouterSocket::new();
    let mut control = zeromq::RouterSocket::new();
    let mut stdin = zeromq::RouterSocket::new();
    let mut iopub = zeromq::PubSocket::new();
    let mut heartbeat = zeromq::RepSocket::new();
    // Monitors before binding, so that no connection goes uncounted.
    let monitors = vec![
        shell.monitor(),
        control.monitor(),
        stdin.monitor(),
        iopub.monitor(),
        heartbeat.monitor(),
    ];
    bind(&mut shell, &conn, conn.shell_port, "shell").await?;
    bind(&mut control, &conn, conn.control_port, "control").await?;
    bind(&mut stdin, &conn, conn.stdin_port, "stdin").await?;
    bind(&mut iopub, &conn, conn.iopub_port, "iopub").await?;
    bind(&mut heartbeat, &conn, conn.hb_port, "heartbeat").await?;

    let (tx, mut rx) = mpsc::unbounded_channel::<Message>();
    let publisher = Publisher { tx };
    let iopub_signer = signer.clone();
    tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            if let Some(z) = to_zmq(m.encode(&iopub_signer)) {
                if let Err(e) = iopub.send(z).await {
                    log(&format!("iopub send failed: {e}"));
                }
            }
        }
    });
    tokio::spawn(async move {
        while let Ok(m) = heartbeat.recv().await {
            if heartbeat.send(m).await.is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        // Keep stdin bound; drain anything a client sends.
        while stdin.recv().await.is_ok() {}
    });
    tokio::spawn(async {
        loop {
            if tokio::signal::ctrl_c().await.is_err() {
                break;
            }
            crate::request_interrupt();
        }
    });

    let engine = EngineHandle::start();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<()>();
    // The kernel ends with the process that started it (JPY_PARENT_PID, as ipykernel
    // does): a client that crashed leaves no kernel behind.
    if let Some(parent) = parent::from_env() {
        let done = done_tx.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                if parent.gone() {
                    log(&format!(
                        "the parent process {} is gone; shutting down",
                        parent.pid
                    ));
                    let _ = done.send(());
                    break;
                }
            }
        });
    }
    if let Some(grace) = orphan_grace() {
        tokio::spawn(watch_clients(monitors, grace, done_tx.clone()));
    }
    let control_task = {
        let (signer, publisher, done) = (signer.clone(), publisher.clone(), done_tx.clone());
        let engine = engine.clone();
        tokio::spawn(async move {
            serve_router(control, "control", signer, publisher, engine, done).await
        })
    };
    let shell_task = tokio::spawn(serve_router(
        shell, "shell", signer, publisher, engine, done_tx,
    ));
    done_rx.recv().await;
    // Let the reply and the final status leave before the process ends.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    control_task.abort();
    shell_task.abort();
    Ok(())
}

/// How long the kernel outlives its last client connection: `IXMAP_KERNEL_ORPHAN_SECS`
/// (seconds, fractions allowed; `off` for ever), 60 s when unset. Long enough for a client
/// to reconnect after a restart or a network hiccup; a kernel started by a client that
/// crashed is gone within it even when no `JPY_PARENT_PID` names that client.
fn orphan_grace() -> Option<std::time::Duration> {
    const DEFAULT: std::time::Duration = std::time::Duration::from_secs(60);
    let Ok(v) = std::env::var("IXMAP_KERNEL_ORPHAN_SECS") else {
        return Some(DEFAULT);
    };
    let v = v.trim();
    if v.eq_ignore_ascii_case("off") {
        return None;
    }
    match v.parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=1e9).contains(&s) => {
            Some(std::time::Duration::from_secs_f64(s))
        }
        _ => {
            log(&format!(
                "IXMAP_KERNEL_ORPHAN_SECS={v:?} is not a number of seconds or `off`; using {} s",
                DEFAULT.as_secs()
            ));
            Some(DEFAULT)
        }
    }
}

/// Counts the clients' connections on every socket (accepted minus disconnected); once a
/// client has connected and then every connection has been gone for `grace`, asks the
/// kernel to end. A connection that comes back within `grace` cancels the count-down.
async fn watch_clients(
    monitors: Vec<futures::channel::mpsc::Receiver<zeromq::SocketEvent>>,
    grace: std::time::Duration,
    done: mpsc::UnboundedSender<()>,
) {
    use futures::StreamExt;
    use zeromq::SocketEvent;
    let mut events = futures::stream::select_all(monitors);
    let (mut peers, mut seen) = (0_u64, false);
    loop {
        let event = if seen && peers == 0 {
            match tokio::time::timeout(grace, events.next()).await {
                Ok(e) => e,
                Err(_) => {
                    log(&format!(
                        "no client has been connected for {:.1} s; shutting down",
                        grace.as_secs_f64()
                    ));
                    let _ = done.send(());
                    return;
                }
            }
        } else {
            events.next().await
        };
        match event {
            Some(SocketEvent::Accepted(..) | SocketEvent::Connected(..)) => {
                peers = peers.saturating_add(1);
                seen = true;
            }
            Some(SocketEvent::Disconnected(_)) => peers = peers.saturating_sub(1),
            Some(_) => {}
            None => return, // the sockets are closed: the kernel is ending anyway
        }
    }
}

/// The process a kernel belongs to: `JPY_PARENT_PID`, which Jupyter's clients set.
mod parent {
    pub struct Parent {
        pub pid: i32,
        /// Whether the parent was this process's parent when it started (then being
        /// adopted by another process means it ended).
        was_ppid: bool,
    }

    pub fn from_env() -> Option<Parent> {
        let pid: i32 = std::env::var("JPY_PARENT_PID").ok()?.trim().parse().ok()?;
        // PID 1 (init) never goes away; 0 and negatives are not processes
        if pid <= 1 {
            return None;
        }
        Some(Parent {
            pid,
            was_ppid: ppid() == Some(pid),
        })
    }

    #[cfg(unix)]
    fn ppid() -> Option<i32> {
        // SAFETY: getppid has no preconditions and cannot fail.
        Some(unsafe { libc::getppid() })
    }
    #[cfg(not(unix))]
    fn ppid() -> Option<i32> {
        None
    }

    impl Parent {
        /// Whether the parent has ended: it no longer exists, or this process was adopted.
        #[cfg(unix)]
        pub fn gone(&self) -> bool {
            if self.was_ppid && ppid() != Some(self.pid) {
                return true;
            }
            // SAFETY: signal 0 only checks that the process exists.
            let r = unsafe { libc::kill(self.pid, 0) };
            r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        }
        #[cfg(not(unix))]
        pub fn gone(&self) -> bool {
            false
        }
    }
}

/// Receives, verifies and answers requests on a ROUTER socket (shell or control).
async fn serve_router(
    mut socket: zeromq::RouterSocket,
    channel: &'static str,
    signer: Signer,
    publisher: Publisher,
    engine: EngineHandle,
    done: mpsc::UnboundedSender<()>,
) {
    // After an execute_request with `stop_on_error` (the default) fails or is interrupted,
    // the execute_requests already queued behind it are answered `aborted` without
    // running, as ipykernel does ("Run All" stops at the first error). The queue is taken
    // before the failed request's reply and idle status go out, so a request a client
    // sends after seeing them always runs.
    let mut backlog: std::collections::VecDeque<zeromq::ZmqResult<ZmqMessage>> =
        std::collections::VecDeque::new();
    loop {
        let (received, queued_at_error) = match backlog.pop_front() {
            Some(r) => (r, true),
            None => (socket.recv().await, false),
        };
        let frames: Vec<Vec<u8>> = match received {
            Ok(z) => z.into_vec().into_iter().map(|b| b.to_vec()).collect(),
            Err(e) => {
                log(&format!("{channel} receive failed: {e}"));
                continue;
            }
        };
        let msg = match Message::decode(frames, &signer) {
            Ok(m) => m,
            Err(e) => {
                log(&format!("dropped a message on {channel}: {e}"));
                continue;
            }
        };
        publisher.status(&msg, "busy");
        let is_execute = msg.msg_type() == "execute_request";
        let (reply, shutdown) = if queued_at_error && is_execute {
            (Some(json!({"status": "aborted"})), false)
        } else {
            handle(&msg, &publisher, &engine).await
        };
        let c = &msg.content;
        if is_execute
            && !queued_at_error
            && reply.as_ref().is_some_and(|r| r["status"] == "error")
            && c["stop_on_error"].as_bool().unwrap_or(true)
            && !c["silent"].as_bool().unwrap_or(false)
        {
            // let what has arrived reach the socket's queue, then take all that is there
            tokio::task::yield_now().await;
            // (an error, such as no client left, ends the taking: it would come again)
            while let Some(r) = futures::FutureExt::now_or_never(socket.recv()) {
                let end = r.is_err();
                backlog.push_back(r);
                if end {
                    break;
                }
            }
        }
        if let Some(content) = reply {
            if let Some(z) = to_zmq(msg.reply(content).encode(&signer)) {
                if let Err(e) = socket.send(z).await {
                    log(&format!("{channel} send failed: {e}"));
                }
            }
        }
        publisher.status(&msg, "idle");
        if shutdown {
            let _ = done.send(());
            return;
        }
    }
}

/// The reply content for one request (None: no reply), and whether to shut down.
async fn handle(
    msg: &Message,
    publisher: &Publisher,
    engine: &EngineHandle,
) -> (Option<Json>, bool) {
    let c = &msg.content;
    match msg.msg_type() {
        "kernel_info_request" => (Some(kernel_info()), false),
        "execute_request" => (execute(msg, publisher, engine).await, false),
        "complete_request" => {
            let code = c["code"].as_str().unwrap_or("").to_string();
            let pos = c["cursor_pos"]
                .as_u64()
                .unwrap_or(code.chars().count() as u64) as usize;
            let reply = engine
                .call_json(move |e| {
                    let (matches, start, end) = e.complete(&code, pos);
                    let types: Vec<Json> = matches
                        .iter()
                        .map(|(w, t)| json!({"start": start, "end": end, "text": w, "type": t}))
                        .collect();
                    json!({
                        "status": "ok",
                        "matches": matches.iter().map(|(w, _)| w).collect::<Vec<_>>(),
                        "cursor_start": start,
                        "cursor_end": end,
                        "metadata": {"_jupyter_types_experimental": types},
                    })
                })
                .await;
            (reply, false)
        }
        "inspect_request" => {
            let code = c["code"].as_str().unwrap_or("").to_string();
            let pos = c["cursor_pos"].as_u64().unwrap_or(0) as usize;
            let reply = engine
                .call_json(move |e| match e.inspect(&code, pos) {
                    Some(data) => {
                        json!({"status": "ok", "found": true, "data": data, "metadata": {}})
                    }
                    None => json!({"status": "ok", "found": false, "data": {}, "metadata": {}}),
                })
                .await;
            (reply, false)
        }
        "is_complete_request" => {
            let code = c["code"].as_str().unwrap_or("").to_string();
            let reply = engine
                .call_json(move |e| match e.is_complete(&code) {
                    "incomplete" => json!({"status": "incomplete", "indent": ""}),
                    s => json!({"status": s}),
                })
                .await;
            (reply, false)
        }
        "history_request" => {
            let content = c.clone();
            let reply = engine
                .call_json(move |e| json!({"status": "ok", "history": e.history_reply(&content)}))
                .await;
            (reply, false)
        }
        "comm_info_request" => (Some(json!({"status": "ok", "comms": {}})), false),
        "interrupt_request" => {
            crate::request_interrupt();
            (Some(json!({"status": "ok"})), false)
        }
        "shutdown_request" => {
            let restart = c["restart"].as_bool().unwrap_or(false);
            (Some(json!({"status": "ok", "restart": restart})), true)
        }
        other => {
            log(&format!("ignored a `{other}` message"));
            (None, false)
        }
    }
}

/// The progress display of one cell: a `display_data` with a display id the first time
/// long work reports, then `update_display_data` at most every 200 ms, and once more with
/// the last figures when the cell ends.
struct Progress {
    state: std::sync::Arc<std::sync::Mutex<ProgressState>>,
    publisher: Publisher,
    parent: Message,
}

#[derive(Default)]
struct ProgressState {
    shown: bool,
    last: Option<std::time::Instant>,
    latest: Option<(u64, u64, String)>,
}

impl Progress {
    fn display_id(parent: &Message) -> String {
        format!(
            "ixmap-progress-{}",
            parent.header["msg_id"].as_str().unwrap_or("cell")
        )
    }

    fn publish(
        publisher: &Publisher,
        parent: &Message,
        update: bool,
        figures: &(u64, u64, String),
    ) {
        let (done, total, what) = figures;
        publisher.publish(
            parent,
            if update {
                "update_display_data"
            } else {
                "display_data"
            },
            json!({
                "data": super::engine::progress_bundle(*done, *total, what),
                "metadata": {},
                "transient": {"display_id": Progress::display_id(parent)},
            }),
        );
    }

    fn install(publisher: &Publisher, parent: &Message) -> Progress {
        let state = std::sync::Arc::new(std::sync::Mutex::new(ProgressState::default()));
        let (st, p, m) = (state.clone(), publisher.clone(), parent.clone());
        crate::set_progress_hook(Some(Box::new(move |done, total, what| {
            let Ok(mut s) = st.lock() else { return };
            let figures = (done, total, what.to_string());
            let now = std::time::Instant::now();
            let due = s
                .last
                .is_none_or(|t| now.duration_since(t) >= std::time::Duration::from_millis(200));
            if due {
                Progress::publish(&p, &m, s.shown, &figures);
                s.shown = true;
                s.last = Some(now);
            }
            s.latest = Some(figures);
        })));
        Progress {
            state,
            publisher: publisher.clone(),
            parent: parent.clone(),
        }
    }

    fn finish(self) {
        crate::set_progress_hook(None);
        if let Ok(s) = self.state.lock() {
            if let (true, Some(f)) = (s.shown, &s.latest) {
                Progress::publish(&self.publisher, &self.parent, true, f);
            }
        }
    }
}

async fn execute(msg: &Message, publisher: &Publisher, engine: &EngineHandle) -> Option<Json> {
    let c = &msg.content;
    let code = c["code"].as_str().unwrap_or("").to_string();
    let silent = c["silent"].as_bool().unwrap_or(false);
    let store_history = c["store_history"].as_bool().unwrap_or(true) && !silent;
    let user_expressions = c["user_expressions"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let (msg, publisher) = (msg.clone(), publisher.clone());
    // The engine thread publishes as it goes, so execute_input precedes the outputs.
    engine
        .call_json(move |e| {
            let count = e.execution_count + u64::from(store_history);
            if !silent {
                publisher.publish(&msg, "execute_input", json!({"code": code, "execution_count": count}));
            }
            // long work reports its progress: one display, updated in place
            let progress = (!silent).then(|| Progress::install(&publisher, &msg));
            let r = e.execute(&code, store_history);
            if let Some(p) = progress {
                p.finish();
            }
            if !silent {
                for o in &r.outputs {
                    match o {
                        Output::Result(data) => publisher.publish(
                            &msg,
                            "execute_result",
                            json!({"execution_count": r.execution_count, "data": data, "metadata": {}}),
                        ),
                        Output::Display(data) => publisher.publish(
                            &msg,
                            "display_data",
                            json!({"data": data, "metadata": {}, "transient": {}}),
                        ),
                    }
                }
            }
            match r.error {
                Some(err) => {
                    if !silent {
                        publisher.publish(
                            &msg,
                            "error",
                            json!({"ename": err.ename, "evalue": err.evalue, "traceback": err.traceback}),
                        );
                    }
                    json!({
                        "status": "error",
                        "execution_count": r.execution_count,
                        "ename": err.ename,
                        "evalue": err.evalue,
                        "traceback": err.traceback,
                    })
                }
                None => json!({
                    "status": "ok",
                    "execution_count": r.execution_count,
                    "user_expressions": e.user_expressions(&user_expressions),
                    // `exit`: IPython's payload, which jupyter console honours
                    "payload": if r.ask_exit {
                        json!([{"source": "ask_exit", "keepkernel": false}])
                    } else {
                        json!([])
                    },
                }),
            }
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_request_is_an_error_reply_and_the_engine_goes_on() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let engine = EngineHandle::start();
            let r = engine
                .call_json(|_| -> Json { panic!("boom in a handler") })
                .await
                .expect("a reply");
            assert_eq!(r["status"], "error");
            assert_eq!(r["ename"], "InternalError");
            assert!(r["evalue"]
                .as_str()
                .is_some_and(|s| s.contains("boom in a handler")));
            // a panic that escapes a job loses its answer, not the engine thread
            assert!(engine.call(|_| -> u8 { panic!("escaped") }).await.is_none());
            let r = engine
                .call_json(|e| json!({"status": e.is_complete("m = (d0) -> (d0)")}))
                .await
                .expect("the engine still serves");
            assert_eq!(r["status"], "complete");
        });
    }
}
