//! The interpreter: statements in, typed [`Value`]s out. It knows nothing of terminals or
//! Jupyter; the front ends render what it returns.
//!
//! ```text
//! let mut s = Session::new();
//! s.execute("m = (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]; inverse m")
//!   -> [Outcome { stmt: 1, bound: Some("m"), .. }, Outcome { stmt: 2, value: Map(..) }]
//! ```

pub mod args;
pub mod build;
pub mod cmd_dump;
pub mod cmd_gemm;
pub mod cmd_gpu;
pub mod cmd_hlo;
mod cmd_layout;
mod cmd_map;
mod cmd_plot;
pub mod cmd_session;
mod cmd_tile;
pub mod commands;

pub use args::Args;

use crate::value::{Outcome, Value};

use crate::syntax::{self, Diagnostic, Rhs, Span, StmtKind};
use std::collections::BTreeMap;

/// A live session: the names bound so far and the HLO defined so far.
#[derive(Default)]
pub struct Session {
    pub values: BTreeMap<String, Value>,
    /// Statements executed so far, across calls (for `--json` numbering and history).
    pub executed: usize,
    /// HLO defined so far (instruction lines, computations, modules).
    pub hlo: crate::hlo::Workspace,
    /// The text of every statement that succeeded, in order (what `save` writes).
    pub statements: Vec<String>,
}

impl Session {
    pub fn new() -> Session {
        Session::default()
    }

    /// Executes every statement of `src`, in order; an error stops nothing: each statement
    /// gets its own outcome.
    pub fn execute(&mut self, src: &str) -> Vec<Outcome> {
        let mut out = Vec::new();
        for (i, piece) in syntax::split(src).iter().enumerate() {
            let mut o = self.execute_piece(src, piece);
            for x in &mut o {
                x.stmt = i + 1;
            }
            out.extend(o);
        }
        out
    }

    /// Executes one statement of `src` (a piece from [`syntax::split`]).
    pub fn execute_piece(&mut self, src: &str, piece: &syntax::Piece) -> Vec<Outcome> {
        crate::clear_interrupt();
        self.executed += 1;
        let span = Span::new(piece.start, piece.end);
        let mut command = None;
        let (bound, result) = match syntax::parse_statement(src, piece) {
            Ok(stmt) => {
                if let StmtKind::Eval(Rhs::Command(c)) = &stmt.kind {
                    command = Some(c.name.clone());
                }
                self.run(stmt)
            }
            Err(d) => (None, Err(d)),
        };
        if let Ok(v) = &result {
            let quiet = command
                .as_deref()
                .is_some_and(|c| cmd_session::NOT_SAVED.contains(&c));
            if !quiet {
                self.statements
                    .push(src[piece.start..piece.end].trim().to_string());
            }
            // `_` is the last result, as in Python's REPL.
            if !matches!(
                v,
                Value::None | Value::Defined(_) | Value::Help(_) | Value::Loaded(_)
            ) && !quiet
                && bound.is_none()
            {
                self.values.insert("_".to_string(), v.clone());
            }
        }
        vec![Outcome {
            stmt: 1,
            span,
            bound,
            result,
        }]
    }

    fn run(&mut self, stmt: syntax::Stmt) -> (Option<String>, Result<Value, Diagnostic>) {
        match stmt.kind {
            StmtKind::Bind {
                name,
                name_span,
                value,
            } => {
                if commands::find(&name).is_some() {
                    return (
                        None,
                        Err(Diagnostic::at(
                            format!("`{name}` is a command and cannot be rebound"),
                            name_span,
                        )
                        .with_help("choose another name")),
                    );
                }
                match self.eval_rhs(&value) {
                    Ok(v) => {
                        self.values.insert(name.clone(), v.clone());
                        (Some(name), Ok(v))
                    }
                    Err(d) => (None, Err(d)),
                }
            }
            StmtKind::Eval(rhs) => (None, self.eval_rhs(&rhs)),
            StmtKind::Hlo(h) => (None, self.define_hlo(&h)),
        }
    }

    fn define_hlo(&mut self, h: &syntax::HloText) -> Result<Value, Diagnostic> {
        cmd_hlo::define(self, h)
    }

    pub fn eval_rhs(&mut self, rhs: &Rhs) -> Result<Value, Diagnostic> {
        match rhs {
            Rhs::Map(lit) => Ok(Value::Map(build::build_map(lit)?)),
            Rhs::Command(call) => self.call(call),
        }
    }

    /// Runs a command, or returns the value of a bound name written alone.
    pub fn call(&mut self, call: &syntax::CommandCall) -> Result<Value, Diagnostic> {
        if call.groups.is_empty() {
            if let Some(v) = self.values.get(&call.name) {
                return Ok(v.clone());
            }
        }
        match commands::find(&call.name) {
            Some(cmd) => {
                // the declaration (the usage) is enforced before the command runs
                if let Ok(sig) = args::Signature::parse(cmd.usage) {
                    let values = &self.values;
                    sig.check(call, cmd.usage, &|w| values.contains_key(w))?;
                }
                let args = Args::new(call);
                (cmd.run)(self, &args)
            }
            None => Err(self.unknown_name(&call.name, call.name_span)),
        }
    }

    /// "unknown name" with the closest command or bound name as a suggestion.
    pub fn unknown_name(&self, name: &str, span: Span) -> Diagnostic {
        let known: Vec<&str> = commands::all()
            .map(|c| c.name)
            .chain(self.values.keys().map(|k| k.as_str()))
            .collect();
        let mut d = Diagnostic::at(format!("unknown command or name `{name}`"), span)
            .with_label("not a command and not bound in this session");
        if let Some(s) = syntax::suggest(name, known) {
            d = d.with_help(format!("did you mean `{s}`?"));
        } else {
            d = d.with_help("`help` lists the commands");
        }
        d
    }

    /// Names for completion: commands, bound names.
    pub fn completion_names(&self) -> Vec<String> {
        let mut v: Vec<String> = commands::all().map(|c| c.name.to_string()).collect();
        v.extend(self.values.keys().cloned());
        v
    }
}
