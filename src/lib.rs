//! ixmap: a workbench for XLA-style indexing maps.
//!
//! The engine behind every front end (REPL, `ixmap run`, transcripts, the Jupyter kernel).
//! Modules are declared in the order data flows through them; a module uses only modules
//! above it.
#![deny(clippy::print_stdout, clippy::print_stderr)]

// 1. text → AST
pub mod syntax;

// 2. the algebra
pub mod expr;
pub mod interval;
pub mod layout;
pub mod map;

// 3. analysis and simplification
pub mod hlo;
pub mod simplify;

// 4. GPU: mappings, kernels, measurements
/// `dump`: a survey of an XLA dump directory (every fusion indexed, launched, emitted, verified).
pub mod dump;
pub mod gpu;
pub mod tile;

// 5. values (what statements return; below both the interpreter and the renderers)
pub mod value;

// 6. the interpreter
pub mod session;

// 7. rendering
pub mod render;

// 8. front ends (the only code that prints)
pub mod jupyter;
pub mod repl;
pub mod transcript;

pub use map::{IndexingMap, Limits, Variable};
pub use session::Session;
pub use value::{Outcome, Value};

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPT: AtomicBool = AtomicBool::new(false);

/// Asks long-running work (enumeration, simplification, benchmarks) to stop soon.
pub fn request_interrupt() {
    INTERRUPT.store(true, Ordering::SeqCst);
}
/// Clears a pending interrupt (done before each statement).
pub fn clear_interrupt() {
    INTERRUPT.store(false, Ordering::SeqCst);
}
/// Whether an interrupt was requested; long loops poll this.
pub fn interrupted() -> bool {
    INTERRUPT.load(Ordering::Relaxed)
}

/// The stack of the threads that interpret input: the command line's, the notebook
/// engine's and a dump's workers. A fusion's body is a tree walked recursively (adapting,
/// simplifying, emitting, the reference), as deep as its longest chain of instructions, so
/// the default 2-8 MiB overflowed (and aborted the process) at a few hundred chained
/// instructions. This is address space reserved, touched only as deep as the recursion goes.
pub const STACK_BYTES: usize = 1 << 30;

/// Runs `f` on a thread with a [`STACK_BYTES`] stack and returns its result (a panic in it
/// goes on in the caller). Where such a thread cannot be made (address space limited), `f`
/// runs here.
pub fn on_big_stack<T: Send, F: FnOnce() -> T + Send>(f: F) -> T {
    let job = std::sync::Mutex::new(Some(f));
    let take = || job.lock().ok().and_then(|mut j| j.take());
    let spawned = std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("ixmap".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, || take().map(|f| f()));
        match handle {
            Ok(h) => match h.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(_) => None,
        }
    });
    match spawned {
        Some(r) => r,
        None => take().expect("the job runs once, here or on the big stack")(),
    }
}

/// Who watches the progress of long work (the notebook's progress display): called with
/// (done, total, what) as work proceeds.
pub type ProgressHook = Box<dyn Fn(u64, u64, &str) + Send + Sync>;

static PROGRESS: std::sync::RwLock<Option<ProgressHook>> = std::sync::RwLock::new(None);

/// Installs (or with `None` removes) the watcher of [`report_progress`].
pub fn set_progress_hook(hook: Option<ProgressHook>) {
    if let Ok(mut h) = PROGRESS.write() {
        *h = hook;
    }
}

/// Long work (benchmark rounds, tuning, an XLA dump's modules) says how far it is; the
/// front end that installed a hook shows it (terminals draw their own bars).
pub fn report_progress(done: u64, total: u64, what: &str) {
    if let Ok(h) = PROGRESS.read() {
        if let Some(f) = h.as_ref() {
            f(done, total, what);
        }
    }
}

/// Why an operation on maps failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("the map is UNDEFINED")]
    Undefined,
    #[error("variable `{0}` has no bounds, so its values cannot be enumerated")]
    Unbounded(String),
    /// `points` counts the box of the variables' bounds (after narrowing by the
    /// constraints), not the domain; `u64::MAX` stands for "at least that many".
    #[error(
        "the domain lies in a box of {}{points} points, more than the limit of {limit} for exact enumeration",
        if *.points == u64::MAX { "at least " } else { "" }
    )]
    TooLarge { points: u64, limit: u64 },
    #[error(
        "cannot compose: the first map has {results} result{} but the second has {dims} dimension{}",
        if *.results == 1 { "" } else { "s" },
        if *.dims == 1 { "" } else { "s" }
    )]
    ComposeArity { results: usize, dims: usize },
    #[error("not a bijection: {0}")]
    NotBijective(String),
    #[error("integer overflow in {0}")]
    Overflow(String),
    #[error("{0}")]
    Eval(#[from] expr::EvalError),
    #[error("interrupted")]
    Interrupted,
    /// A kernel's output differs from the reference where the HLO leaves the value
    /// undetermined (a sum whose order alone may move it, an initial value that is not an
    /// identity of its reducer): neither wrong nor verified.
    #[error("{0}")]
    Undetermined(String),
    #[error("{0}")]
    Other(String),
}
