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

use crate::hlo::workspace::{Lookup, Meaning, Target};
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
    /// The text each HLO definition was written in, to show a name: a computation's name
    /// or a loose instruction's → (offset of the text in its statement's source, text).
    pub hlo_source: BTreeMap<String, (usize, String)>,
    /// Notes on the statement being run (a name that now means something else), moved
    /// into its outcome.
    notes: Vec<String>,
    /// The files `load` is reading, outermost first (canonical paths): a file that loads
    /// itself, directly or through others, is an error, not an endless recursion.
    pub loading: Vec<std::path::PathBuf>,
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

    /// Executes one statement of a file the running statement reads (`load`): a statement
    /// of its own, numbered within the file by the caller, that does not advance the
    /// session's count, so `--json` numbers the `load` and the statements after it as the
    /// script has them (`load F` first was reported as statement 3 after F's two).
    pub fn execute_nested(&mut self, src: &str, piece: &syntax::Piece) -> Vec<Outcome> {
        let outer = self.executed;
        let notes = std::mem::take(&mut self.notes);
        // An interrupt asked for the statement running the file stops the file: not
        // cleared here, as a statement of its own clears it.
        let out = self.execute_statement(src, piece);
        self.executed = outer;
        self.notes = notes;
        out
    }

    /// Executes one statement of `src` (a piece from [`syntax::split`]).
    pub fn execute_piece(&mut self, src: &str, piece: &syntax::Piece) -> Vec<Outcome> {
        crate::clear_interrupt();
        self.execute_statement(src, piece)
    }

    fn execute_statement(&mut self, src: &str, piece: &syntax::Piece) -> Vec<Outcome> {
        self.executed += 1;
        self.notes.clear();
        let span = Span::new(piece.start, piece.end);
        let mut command = None;
        let (bound, result) = if let Some(r) = self.inspection(src, piece) {
            // `?`, `CMD?`, `NAME?` and an HLO name alone inspect; they are not saved
            command = Some("help".to_string());
            (None, r)
        } else {
            match syntax::parse_statement(src, piece) {
                Ok(stmt) => {
                    if let StmtKind::Eval(Rhs::Command(c)) = &stmt.kind {
                        command = Some(c.name.clone());
                    }
                    self.run(stmt)
                }
                Err(d) => (None, Err(d)),
            }
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
        let notes = if result.is_ok() {
            std::mem::take(&mut self.notes)
        } else {
            Vec::new()
        };
        vec![Outcome {
            stmt: 1,
            span,
            bound,
            result,
            notes,
        }]
    }

    /// The statements that look at something rather than compute: `?` (help), `CMD?` or
    /// `?CMD` (help on a command or topic), `NAME?` (a bound value, or an HLO name's text),
    /// and an HLO name written alone (`fused`, `fused.p0`, `add.1`), which `parse` would
    /// read as a command. None for any other statement.
    fn inspection(
        &mut self,
        src: &str,
        piece: &syntax::Piece,
    ) -> Option<Result<Value, Diagnostic>> {
        let raw = syntax::blank_comments(&src[piece.start..piece.end]);
        let lead = raw.len() - raw.trim_start().len();
        let t = raw.trim();
        let at = |a: usize, b: usize| Span::new(piece.start + lead + a, piece.start + lead + b);
        let is_name = |w: &str| {
            let w = w.strip_prefix('%').unwrap_or(w);
            w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        };
        let help = |w: Option<(&str, Span)>, q: Span| syntax::CommandCall {
            name: "help".into(),
            name_span: q,
            groups: w
                .map(|(w, sp)| syntax::ArgGroup {
                    items: vec![syntax::Arg::Word(w.to_string(), sp)],
                    span: sp,
                })
                .into_iter()
                .collect(),
            span: at(0, t.len()),
        };
        if t == "?" {
            return Some(self.call(&help(None, at(0, 1))));
        }
        let (word, wspan, asked) = if let Some(w) = t.strip_suffix('?') {
            let w = w.trim_end();
            let w2 = w.strip_prefix('?').unwrap_or(w);
            let off = w.len() - w2.len();
            (w2, at(off, off + w2.len()), true)
        } else if let Some(w) = t.strip_prefix('?') {
            (
                w.trim_start(),
                at(t.len() - w.trim_start().len(), t.len()),
                true,
            )
        } else {
            (t, at(0, t.len()), false)
        };
        if !is_name(word) {
            return None;
        }
        let is_command = commands::find(word).is_some();
        if let Some(v) = self.values.get(word).filter(|_| !is_command) {
            // `NAME?` is the value; `NAME` alone runs as any statement
            return asked.then(|| Ok(v.clone()));
        }
        if !is_command && !matches!(self.hlo.lookup(word), Lookup::Missing) {
            return Some(self.show_hlo(word, wspan));
        }
        if asked && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Some(self.call(&help(Some((word, wspan)), at(t.len() - 1, t.len()))));
        }
        None
    }

    /// An HLO name's text as it was defined: a computation's block, an instruction's line.
    pub fn show_hlo(&self, name: &str, span: Span) -> Result<Value, Diagnostic> {
        let target = match self.hlo.lookup(name) {
            Lookup::Found(t) => t,
            Lookup::Ambiguous(ms) => return Err(ambiguous(name, span, &ms)),
            Lookup::Missing => return Err(self.unknown_name(name, span)),
        };
        Ok(Value::Hlo(match target {
            Target::Computation(c) => {
                let root = &c.instrs[c.root];
                crate::value::HloShown {
                    kind: "computation",
                    name: c.name.clone(),
                    computation: None,
                    shape: root.shape.to_string(),
                    text: self
                        .hlo_source
                        .get(&c.name)
                        .map(|(_, t)| t.clone())
                        .unwrap_or_else(|| {
                            c.instrs
                                .iter()
                                .map(instr_line)
                                .collect::<Vec<_>>()
                                .join("; ")
                        }),
                }
            }
            Target::Instr(c, id) => {
                let i = &c.instrs[id];
                let loose = std::ptr::eq(c, &self.hlo.scratch);
                let key = if loose { &i.name } else { &c.name };
                // the instruction's own text: a slice of its definition's
                let text = self
                    .hlo_source
                    .get(key)
                    .and_then(|(base, t)| {
                        let a = i.span.start.checked_sub(*base)?;
                        let b = i.span.end.checked_sub(*base)?;
                        t.get(a..b).filter(|x| x.contains('='))
                    })
                    .map(|x| x.trim().to_string())
                    .unwrap_or_else(|| instr_line(i));
                crate::value::HloShown {
                    kind: "instruction",
                    name: i.name.clone(),
                    computation: (!loose).then(|| c.name.clone()),
                    shape: i.shape.to_string(),
                    text,
                }
            }
        }))
    }

    /// Before a command runs: its first argument, where the declaration takes HLO
    /// (`FUSION`, `OP`, `COMPUTATION`), names one thing, and a `FUSION` is not a module's
    /// ENTRY computation that launches fusions (those are listed instead).
    fn check_hlo_argument(
        &self,
        call: &syntax::CommandCall,
        sig: &args::Signature,
    ) -> Result<(), Diagnostic> {
        let Some(slot) = sig.slots.first() else {
            return Ok(());
        };
        let parts: Vec<&str> = slot.name.split('|').collect();
        if !parts
            .iter()
            .any(|p| matches!(*p, "FUSION" | "OP" | "COMPUTATION"))
        {
            return Ok(());
        }
        let Some(syntax::Arg::Word(w, span)) = call.groups.first().and_then(|g| g.items.first())
        else {
            return Ok(());
        };
        if self.values.contains_key(w) && parts.contains(&"MAP") {
            return Ok(());
        }
        match self.hlo.lookup(w) {
            Lookup::Ambiguous(ms) => Err(ambiguous(w, *span, &ms)),
            Lookup::Found(Target::Computation(c)) if c.is_entry && parts.contains(&"FUSION") => {
                let fusions: Vec<String> = c
                    .instrs
                    .iter()
                    .filter(|i| i.opcode == "fusion")
                    .map(|i| match &i.attrs.calls {
                        Some(f) => format!("`{} {}` ({f})", call.name, i.name),
                        None => format!("`{} {}`", call.name, i.name),
                    })
                    .collect();
                if fusions.is_empty() {
                    return Ok(());
                }
                let n = fusions.len();
                let shown = if n > 8 {
                    format!("{} and {} more", fusions[..8].join(", "), n - 8)
                } else {
                    fusions.join(", ")
                };
                Err(Diagnostic::at(
                    format!(
                        "`{w}` is the module's ENTRY computation, not a fusion: it launches {n} fusion{}",
                        if n == 1 { "" } else { "s" }
                    ),
                    *span,
                )
                .with_label("the entry, which calls the fusions")
                .with_help(format!("name one of its fusions: {shown}")))
            }
            _ => Ok(()),
        }
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
                        if let Some(what) = self.hlo_meaning(&name) {
                            self.notes.push(format!(
                                "`{name}` also names {what}: `{name}` alone is now this {}, and commands that take HLO still read the {}",
                                v.kind(),
                                if what.starts_with("the computation") { "computation" } else { "instruction" }
                            ));
                        }
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
        let v = cmd_hlo::define(self, h)?;
        if let Value::Defined(d) = &v {
            if matches!(d.kind, "computation" | "instruction") {
                // what a name of the new definition now shadows (or is shadowed by)
                let mut names = vec![d.name.clone()];
                if let Some(c) = self
                    .hlo
                    .module
                    .computation(&d.name)
                    .filter(|_| d.kind == "computation")
                {
                    names.extend(c.instrs.iter().map(|i| i.name.clone()));
                }
                if d.kind == "instruction" {
                    // a loose line's name is the session's: it hides a computation's
                    // instruction of that name, which stays reachable by its full name
                    let inner: Vec<String> = self
                        .hlo
                        .module
                        .computations
                        .iter()
                        .filter(|c| c.find(&d.name).is_some())
                        .map(|c| format!("`{}.{}`", c.name, d.name))
                        .collect();
                    if !inner.is_empty() {
                        self.notes.push(format!(
                            "`{}` now names this instruction; the one{} of the same name in a computation: {}",
                            d.name,
                            if inner.len() == 1 { "" } else { "s" },
                            inner.join(", ")
                        ));
                    }
                }
                for n in names {
                    let Some(v) = self.values.get(&n) else {
                        continue;
                    };
                    if !matches!(self.hlo.lookup(&n), Lookup::Missing) {
                        self.notes.push(format!(
                            "`{n}` is also a {} bound in this session: `{n}` alone still shows it, and commands that take HLO read the {}",
                            v.kind(),
                            if n == d.name { d.kind } else { "instruction" }
                        ));
                    }
                }
            }
        }
        Ok(v)
    }

    /// What an HLO name means, in words (`the instruction `fused.r` (f32[4] negate)`),
    /// when it names HLO.
    fn hlo_meaning(&self, name: &str) -> Option<String> {
        match self.hlo.lookup(name) {
            Lookup::Found(Target::Computation(c)) => Some(format!("the computation `{}`", c.name)),
            Lookup::Found(Target::Instr(c, id)) => {
                let i = &c.instrs[id];
                let q = if std::ptr::eq(c, &self.hlo.scratch) {
                    i.name.clone()
                } else {
                    format!("{}.{}", c.name, i.name)
                };
                Some(format!("the instruction `{q}` ({} {})", i.shape, i.opcode))
            }
            Lookup::Ambiguous(ms) => Some(format!("instructions of {} computations", ms.len())),
            Lookup::Missing => None,
        }
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
                    self.check_hlo_argument(call, &sig)?;
                }
                let args = Args::new(call);
                (cmd.run)(self, &args)
            }
            None if call.groups.is_empty()
                && !matches!(self.hlo.lookup(&call.name), Lookup::Missing) =>
            {
                self.show_hlo(&call.name, call.name_span)
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

/// An instruction as one line, for one whose text is not kept (generated by ixmap).
fn instr_line(i: &crate::hlo::Instr) -> String {
    format!("{} = {} {}(...)", i.name, i.shape, i.opcode)
}

/// "`p0` names instructions in 2 computations", with the qualified names that tell them
/// apart.
pub fn ambiguous(name: &str, span: Span, meanings: &[Meaning<'_>]) -> Diagnostic {
    let each: Vec<String> = meanings
        .iter()
        .map(|m| match m.target {
            Target::Instr(c, id) => {
                let i = &c.instrs[id];
                format!("`{}` ({} {})", m.qualified, i.shape, i.opcode)
            }
            Target::Computation(c) => format!("`{}` (a computation)", c.name),
        })
        .collect();
    Diagnostic::at(
        format!(
            "`{name}` is ambiguous: it names an instruction in {} computations",
            meanings.len()
        ),
        span,
    )
    .with_label("which one?")
    .with_help(format!("write one of {}", each.join(", ")))
}
