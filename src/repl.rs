//! The interactive REPL (rustyline), a thin front end over [`Session`]:
//!
//! - **history** persists in the user's data folder (`~/.local/share/ixmap/history` on
//!   Linux; `IXMAP_HISTORY` overrides the path) and is appended after every statement, so a
//!   crash loses nothing; a history that cannot be written is a warning, never fatal;
//! - **Tab** completes commands, names bound in the session and the language's keywords;
//! - **highlighting** of keywords, numbers, variables and bracket errors (on a terminal);
//! - **multi-line input**: a statement continues while [`crate::syntax::is_complete`] says
//!   so, with the continuation prompt `   ...> `; a pasted multi-line block is validated as a
//!   whole by the [`Validator`];
//! - **Up** (or Ctrl-P) on a `   ...> ` line brings the statement's earlier lines back into
//!   the editor, as one buffer with the line being typed, cursor at the end of the line
//!   above: the block is edited as a whole (Up and Down move between its lines, Enter runs
//!   it once complete) instead of the line being replaced by a history entry;
//! - **Ctrl-C** cancels the line being typed, or interrupts a running command
//!   ([`crate::request_interrupt`]); lines typed ahead while the command ran are kept
//!   (the terminal's `NOFLSH` is set while a statement runs); **Ctrl-D** exits;
//! - **bad input** never ends the session: a line that is not valid UTF-8 is skipped with
//!   an error, and a panic in a statement (a bug) is reported as an internal error;
//! - **standard input that is not a terminal** (`ixmap < FILE`, a pipe) runs as a script
//!   ([`run_piped`]): no prompts, no history, errors name its lines where the REPL's own
//!   numbering would not (an invalid line, input ending inside a statement), and the exit
//!   code is 1 when anything failed.
//!
//! ```text
//! ixmap> m = (d0, d1) -> (d1, d0),
//!    ...> domain: d0 in [0, 3], d1 in [0, 4]
//! (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]
//! ```
#![allow(clippy::print_stdout, clippy::print_stderr)]

use crate::render::Style;
use crate::session::Session;
use colored::Colorize;
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};
use std::borrow::Cow;
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

pub const PROMPT: &str = "ixmap> ";
pub const CONTINUATION: &str = "   ...> ";

/// Words of the language that are neither commands nor names.
pub const KEYWORDS: &[&str] = &[
    "domain",
    "in",
    "floordiv",
    "ceildiv",
    "mod",
    "is_simplified",
    "true",
    "false",
    "KNOWN",
    "EMPTY",
    "UNDEFINED",
    "affine_map",
    "at",
    "as",
    "mlir",
    "xla",
    "raw",
    "explain",
];

/// What the line editor needs from the session: the names to complete, and the text typed
/// so far in an unfinished statement.
#[derive(Default)]
struct Shared {
    names: Vec<String>,
    /// Bound names with their kinds (`map`, `table`...) and HLO names (kind `hlo`).
    kinds: Vec<(String, String)>,
    pending: String,
}

/// Names and kinds for completion by context.
pub fn name_kinds(session: &Session) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = session
        .values
        .iter()
        .map(|(k, v)| (k.clone(), v.kind().to_string()))
        .collect();
    // HLO names as a command finds them (a computation's instruction as
    // `COMPUTATION.NAME`, and alone where unambiguous), beside a value of the same name
    for n in session.hlo.reachable_names() {
        v.push((n, "hlo".to_string()));
    }
    v
}

/// Completions of the word `prefix` that ends `before` (the line up to the cursor), by
/// context: at the start of a statement, commands and names; after `help`, commands, groups
/// and topics; after a command, the names its usage takes (maps for `MAP`, HLO names for
/// `FUSION`/`OP`) and its own options; inside a map literal, the language's keywords.
pub fn complete_in_context(before: &str, prefix: &str, kinds: &[(String, String)]) -> Vec<String> {
    use crate::session::commands;
    // the statement being typed: after the last `;`, or the last line break that ends a
    // complete statement; comments blanked (same offsets)
    let blanked = crate::syntax::blank_comments(before);
    let before = blanked.as_str();
    let mut stmt_start = before.rfind(';').map_or(0, |i| i + 1);
    if let Some(nl) = before.rfind('\n').filter(|&nl| nl >= stmt_start) {
        if crate::syntax::is_complete(&before[stmt_start..nl]) {
            stmt_start = nl + 1;
        }
    }
    let mut stmt = &before[stmt_start..before.len() - prefix.len()];
    // `NAME = ` before a command
    if let Some((lhs, rhs)) = stmt.split_once('=') {
        let lhs = lhs.trim();
        if !lhs.is_empty()
            && lhs.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !rhs.starts_with('=')
        {
            stmt = rhs;
        }
    }
    let stmt = stmt.trim_start();
    let mut words: Vec<String> = Vec::new();
    let first = stmt
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    let names_of = |pred: &dyn Fn(&str) -> bool| -> Vec<String> {
        kinds
            .iter()
            .filter(|(_, k)| pred(k))
            .map(|(n, _)| n.clone())
            .collect()
    };
    if stmt.is_empty() {
        words.extend(commands::all().map(|c| c.name.to_string()));
        words.extend(names_of(&|_| true));
    } else if stmt.starts_with('(') || stmt.starts_with("affine_map") {
        words.extend(KEYWORDS.iter().map(|k| k.to_string()));
    } else if first == "help" {
        words.extend(commands::all().map(|c| c.name.to_string()));
        words.extend(commands::groups().into_iter().map(|g| g.0.to_string()));
        words.extend(commands::TOPICS.iter().map(|t| t.0.to_string()));
        words.push("all".to_string());
    } else if let Some(c) = commands::find(first) {
        let usage = c.usage;
        let sig = crate::session::args::Signature::parse(usage).unwrap_or_default();
        // after `key=` or a keyword that takes a choice (`as`): its values only
        let tail = stmt.trim_end_matches(|ch: char| ch.is_whitespace());
        let last = tail
            .rsplit(|ch: char| ch.is_whitespace() || ch == ',')
            .next()
            .unwrap_or("");
        if stmt.ends_with('=') {
            let key =
                last.trim_start_matches(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'));
            words.extend(sig.values_after(key));
            if key == "mapping=" {
                words.extend(names_of(&|k| k == "mapping" || k == "layout"));
            }
        } else if stmt.ends_with(char::is_whitespace)
            && sig.keyword(last).is_some_and(|k| !k.values().is_empty())
        {
            words.extend(sig.values_after(last));
        } else {
            let takes_map = sig
                .slots
                .iter()
                .any(|s| s.evaluated && s.name.split('|').any(|p| matches!(p, "MAP" | "A" | "B")));
            let takes_hlo = sig
                .slots
                .iter()
                .any(|s| s.evaluated && !s.name.split('|').any(|p| matches!(p, "MAP" | "A" | "B")));
            let at_slot = !stmt[first.len()..].contains(|ch: char| !ch.is_whitespace())
                || tail.ends_with(',');
            if at_slot && takes_map {
                words.extend(names_of(&|k| k != "hlo"));
                // a nested command that returns a map
                words.extend(commands::all().map(|c| c.name.to_string()));
            }
            if at_slot && takes_hlo {
                words.extend(names_of(&|k| k == "hlo" || k == "mapping"));
            }
            if !at_slot || sig.slots.first().is_none_or(|s| s.optional) {
                words.extend(sig.words());
            }
        }
    } else {
        words.extend(names_of(&|_| true));
        words.extend(KEYWORDS.iter().map(|k| k.to_string()));
    }
    let mut out: Vec<String> = Vec::new();
    for w in words {
        if w.starts_with(prefix) && !out.contains(&w) {
            out.push(w);
        }
    }
    out.sort();
    out
}

struct IxHelper {
    shared: Rc<RefCell<Shared>>,
    color: bool,
    files: rustyline::completion::FilenameCompleter,
}

impl Helper for IxHelper {}

/// Byte offset where the word ending at `pos` starts (a word may be an HLO name:
/// `fused.p0`, `get-tuple-element.3`).
fn word_start(line: &str, pos: usize) -> usize {
    line[..pos]
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '%')))
        .map_or(0, |i| i + 1)
}

/// Completions of `prefix`: commands, then bound names, then keywords, each sorted.
pub fn complete_word(prefix: &str, names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let commands = crate::session::commands::all().map(|c| c.name.to_string());
    for group in [
        commands.collect::<Vec<_>>(),
        names.to_vec(),
        KEYWORDS
            .iter()
            .map(|k| k.to_string())
            .chain(crate::session::commands::argument_keys())
            .collect(),
    ] {
        let mut g: Vec<String> = group
            .into_iter()
            .filter(|w| w.starts_with(prefix) && !out.contains(w))
            .collect();
        g.sort();
        g.dedup();
        out.extend(g);
    }
    out
}

/// After `load` or `save`, file names as a shell completes them (in a `"..."` argument
/// too): the byte offset where the replaced text starts, and the candidates. `None`
/// where the cursor is not in such an argument. The terminal's Tab and the notebook's
/// completion both use it.
pub fn complete_file_name(
    files: &rustyline::completion::FilenameCompleter,
    line: &str,
    pos: usize,
) -> Option<(usize, Vec<Pair>)> {
    let before = line.get(..pos)?;
    let first = before.split_whitespace().next().unwrap_or("");
    if !((first == "load" || first == "save") && before.trim_end() != first) {
        return None;
    }
    let (start, v) = files.complete_path(line, pos).ok()?;
    Some((start.min(pos), v))
}

impl Completer for IxHelper {
    type Candidate = Pair;
    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let start = word_start(line, pos);
        let prefix = &line[start..pos];
        let shared = self.shared.borrow();
        let before = &line[..pos];
        if let Some(files) = complete_file_name(&self.files, line, pos) {
            return Ok(files);
        }
        let _ = &shared.names;
        let words = complete_in_context(before, prefix, &shared.kinds);
        Ok((
            start,
            words
                .into_iter()
                .map(|w| Pair {
                    display: w.clone(),
                    replacement: w,
                })
                .collect(),
        ))
    }
}

impl Hinter for IxHelper {
    type Hint = String;
    /// After a command name and a space, the rest of its usage, dimmed.
    fn hint(&self, line: &str, pos: usize, _: &Context<'_>) -> Option<String> {
        if pos != line.len() || !line.ends_with(' ') || !self.shared.borrow().pending.is_empty() {
            return None;
        }
        let word = line.trim();
        if word.contains(' ') {
            return None;
        }
        let c = crate::session::commands::find(word)?;
        c.usage
            .strip_prefix(c.name)
            .map(|rest| rest.trim_start().to_string())
            .filter(|s| !s.is_empty())
    }
}

/// The kinds of token the highlighter colours.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Token {
    Keyword,
    Command,
    Number,
    Name,
    Comment,
    Error,
    Other,
}

/// Splits `line` into coloured runs. Closing brackets without an opener are errors.
pub fn tokens(line: &str) -> Vec<(Token, &str)> {
    let mut out = Vec::new();
    let mut depth: i64 = 0;
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        let (kind, len) = if c == '#' || rest.starts_with("//") {
            (Token::Comment, rest.len())
        } else if c.is_ascii_digit() {
            (
                Token::Number,
                rest.find(|ch: char| !ch.is_ascii_digit())
                    .unwrap_or(rest.len()),
            )
        } else if c.is_ascii_alphabetic() || c == '_' {
            let n = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            let w = &rest[..n];
            let kind = if KEYWORDS.contains(&w) || w == "floorDiv" || w == "ceilDiv" {
                Token::Keyword
            } else if crate::session::commands::find(w).is_some() {
                Token::Command
            } else {
                Token::Name
            };
            (kind, n)
        } else {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
            let kind = if depth < 0 {
                Token::Error
            } else {
                Token::Other
            };
            if depth < 0 {
                depth = 0;
            }
            (kind, c.len_utf8())
        };
        out.push((kind, &rest[..len]));
        rest = &rest[len..];
    }
    out
}

impl Highlighter for IxHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        if !self.color {
            return Cow::Borrowed(line);
        }
        let mut s = String::with_capacity(line.len() * 2);
        for (kind, t) in tokens(line) {
            let painted = match kind {
                Token::Keyword => t.blue().to_string(),
                Token::Command => t.cyan().bold().to_string(),
                Token::Number => t.yellow().to_string(),
                Token::Name => t.green().to_string(),
                Token::Comment => t.dimmed().to_string(),
                Token::Error => t.red().bold().to_string(),
                Token::Other => t.to_string(),
            };
            s.push_str(&painted);
        }
        Cow::Owned(s)
    }
    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        if self.color {
            Cow::Owned(hint.dimmed().to_string())
        } else {
            Cow::Borrowed(hint)
        }
    }
    fn highlight_char(&self, _line: &str, _pos: usize, _forced: bool) -> bool {
        self.color
    }
}

impl Validator for IxHelper {
    /// Complete input is accepted. Incomplete input typed line by line is accepted too, and
    /// the loop asks for the next line with the continuation prompt; a pasted block (the
    /// buffer already holds a newline) stays in the editor until it is complete.
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        let pending = &self.shared.borrow().pending;
        let whole = if pending.is_empty() {
            input.to_string()
        } else {
            format!("{pending}\n{input}")
        };
        if crate::syntax::is_complete(&whole) || !input.contains('\n') {
            Ok(ValidationResult::Valid(None))
        } else {
            Ok(ValidationResult::Incomplete)
        }
    }
}

/// What the Up handler and the read loop share: whether the line being typed continues a
/// statement, and whether Up ended it to rejoin the statement.
#[derive(Default)]
struct Block {
    continuing: bool,
    rejoin: bool,
}

/// Up (and Ctrl-P) on a continuation line whose cursor is on its first row: instead of
/// recalling history into this one line (which would lose the statement's shape), end this
/// `readline`, marked as a rejoin, so the loop puts the whole statement back into one
/// editable buffer.
struct BlockUp(Arc<Mutex<Block>>);

impl rustyline::ConditionalEventHandler for BlockUp {
    fn handle(
        &self,
        _: &rustyline::Event,
        _: rustyline::RepeatCount,
        _: bool,
        ctx: &rustyline::EventContext,
    ) -> Option<rustyline::Cmd> {
        let mut b = self.0.lock().ok()?;
        let on_first_row = !ctx.line()[..ctx.pos()].contains('\n');
        if b.continuing && on_first_row {
            b.rejoin = true;
            // Accept, not Interrupt: rustyline keeps the keys already read ahead (typed
            // after Up) only for a line that is submitted.
            Some(rustyline::Cmd::AcceptLine)
        } else {
            None
        }
    }
}

/// The buffer that rejoins a statement: its earlier lines (`pending`) and the interrupted
/// line, split at the end of the line above the cursor (where Up puts it).
fn rejoined(pending: &str, line: &str) -> (String, String) {
    (pending.to_string(), format!("\n{line}"))
}

/// Screen rows a statement's lines took, each behind its prompt, on a terminal `width`
/// columns wide (a line fills at least one row; longer lines wrap).
fn rows_taken(pending: &str, line: &str, width: usize) -> usize {
    let width = width.max(1);
    let shown = std::iter::once(format!(
        "{PROMPT}{}",
        pending.split('\n').next().unwrap_or("")
    ))
    .chain(
        pending
            .split('\n')
            .skip(1)
            .map(|l| format!("{CONTINUATION}{l}")),
    )
    .chain(std::iter::once(format!("{CONTINUATION}{line}")));
    shown
        .map(|l| l.chars().count().div_ceil(width).max(1))
        .sum()
}

/// Whether output should be coloured: a terminal, and `NO_COLOR` unset (or empty).
pub fn use_color() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether error output should be coloured: standard error is a terminal, `NO_COLOR` unset.
pub fn use_color_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A rendered diagnostic with `error:` in red when `color`.
pub fn paint_error(rendered: &str, color: bool) -> String {
    match rendered.strip_prefix("error:") {
        Some(rest) if color => format!("{}{rest}", "error:".red().bold()),
        _ => rendered.to_string(),
    }
}

/// Where history is kept: `$IXMAP_HISTORY`, else `<data dir>/ixmap/history`.
pub fn history_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IXMAP_HISTORY") {
        return (!p.is_empty()).then(|| PathBuf::from(p));
    }
    dirs::data_dir().map(|d| d.join("ixmap").join("history"))
}

#[cfg(unix)]
mod sigint {
    //! While a statement runs, Ctrl-C (SIGINT) asks it to stop instead of killing the
    //! process. At the prompt the terminal is in raw mode and rustyline reads Ctrl-C itself.
    extern "C" fn on_sigint(_: libc::c_int) {
        crate::request_interrupt(); // an atomic store: async-signal-safe
    }
    pub fn install() {
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
        }
    }
}

/// Runs the REPL until Ctrl-D; the exit code. With standard input not a terminal
/// (`ixmap < FILE`, a pipe) the lines are read as a script: see [`run_piped`].
pub fn run() -> i32 {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return run_piped(std::io::stdin().lock());
    }
    let color = use_color();
    let style = if color { Style::Ansi } else { Style::Plain };
    let err_color = use_color_stderr();
    let config = rustyline::Config::builder()
        .auto_add_history(false)
        .max_history_size(10_000)
        .and_then(|b| {
            Ok(b.history_ignore_dups(true)?
                .completion_type(rustyline::CompletionType::List))
        });
    let config = match config {
        Ok(b) => b.build(),
        Err(_) => rustyline::Config::default(),
    };
    let mut rl =
        match rustyline::Editor::<IxHelper, rustyline::history::DefaultHistory>::with_config(config)
        {
            Ok(rl) => rl,
            Err(e) => {
                eprintln!("error: cannot start the line editor: {e}");
                return 1;
            }
        };
    let shared = Rc::new(RefCell::new(Shared::default()));
    rl.set_helper(Some(IxHelper {
        shared: shared.clone(),
        color,
        files: rustyline::completion::FilenameCompleter::new(),
    }));
    let history = history_path();
    let mut history_ok = true;
    if let Some(p) = &history {
        if let Some(dir) = p.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if p.exists() {
            if let Err(e) = rl.load_history(p) {
                eprintln!("warning: cannot read history from {}: {e}", p.display());
            }
        }
    }
    #[cfg(unix)]
    sigint::install();
    let mut session = Session::new();
    shared.borrow_mut().names = session.completion_names();
    shared.borrow_mut().kinds = name_kinds(&session);
    {
        use std::io::IsTerminal;
        if std::io::stdin().is_terminal() {
            println!(
                "ixmap {} — indexing maps workbench. `help` lists the commands, Tab completes, Ctrl-D exits.",
                env!("CARGO_PKG_VERSION")
            );
        }
    }
    let block = Arc::new(Mutex::new(Block::default()));
    for key in [
        rustyline::KeyEvent(rustyline::KeyCode::Up, rustyline::Modifiers::NONE),
        rustyline::KeyEvent::ctrl('P'),
    ] {
        rl.bind_sequence(
            key,
            rustyline::EventHandler::Conditional(Box::new(BlockUp(block.clone()))),
        );
    }
    // A statement brought back into one buffer by Up: the text before and after the cursor.
    let mut initial: Option<(String, String)> = None;
    loop {
        let continuing = !shared.borrow().pending.is_empty();
        if let Ok(mut b) = block.lock() {
            b.continuing = continuing;
            b.rejoin = false;
        }
        let prompt = if continuing { CONTINUATION } else { PROMPT };
        let read = match initial.take() {
            Some((left, right)) => rl.readline_with_initial(PROMPT, (&left, &right)),
            None => rl.readline(prompt),
        };
        match read {
            Ok(line) => {
                let rejoin = block
                    .lock()
                    .is_ok_and(|mut b| std::mem::take(&mut b.rejoin));
                if rejoin {
                    // Up on a continuation line: erase the statement's rows and edit it
                    // again as one buffer, the cursor at the end of the line above.
                    let pending = std::mem::take(&mut shared.borrow_mut().pending);
                    use std::io::{IsTerminal, Write};
                    if std::io::stdout().is_terminal() {
                        let up = rows_taken(&pending, &line, terminal_width());
                        let mut out = std::io::stdout();
                        let moves = if up > 0 {
                            format!("\x1b[{up}A")
                        } else {
                            String::new()
                        };
                        let _ = write!(out, "{moves}\r\x1b[J");
                        let _ = out.flush();
                    }
                    initial = Some(rejoined(&pending, &line));
                    continue;
                }
                let input = {
                    let mut sh = shared.borrow_mut();
                    if sh.pending.is_empty() {
                        sh.pending = line;
                    } else {
                        sh.pending.push('\n');
                        sh.pending.push_str(&line);
                    }
                    if !crate::syntax::is_complete(&sh.pending) {
                        continue;
                    }
                    std::mem::take(&mut sh.pending)
                };
                if input.trim().is_empty() {
                    continue;
                }
                if rl.add_history_entry(input.as_str()).is_ok() && history_ok {
                    if let Some(p) = &history {
                        if let Err(e) = rl.append_history(p) {
                            eprintln!("warning: cannot save history to {}: {e} (history is off for this session)", p.display());
                            history_ok = false;
                        }
                    }
                }
                if matches!(input.trim(), "exit" | "quit" | "exit()" | "quit()") {
                    break;
                }
                execute(&mut session, &input, style, err_color, 1);
                shared.borrow_mut().names = session.completion_names();
                shared.borrow_mut().kinds = name_kinds(&session);
            }
            Err(ReadlineError::Interrupted) => {
                // Ctrl-C: drop the line (and any unfinished statement), keep the session.
                shared.borrow_mut().pending.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                // A byte that is not UTF-8 (a terminal set to Latin-1, a paste): the line
                // editor gives up on the line being typed; the session goes on. An
                // unfinished statement above it is dropped as Ctrl-C drops it (running it
                // without that line would run something else), but it is kept in the
                // history, so Up brings it back.
                let pending = std::mem::take(&mut shared.borrow_mut().pending);
                if pending.trim().is_empty() {
                    eprintln!("error: the line is not valid UTF-8; it was skipped");
                } else {
                    eprintln!(
                        "error: the line is not valid UTF-8; it was skipped, and the unfinished statement above it was not run (Up brings it back)"
                    );
                    if rl.add_history_entry(pending.as_str()).is_ok() && history_ok {
                        if let Some(p) = &history {
                            if let Err(e) = rl.append_history(p) {
                                eprintln!("warning: cannot save history to {}: {e} (history is off for this session)", p.display());
                                history_ok = false;
                            }
                        }
                    }
                }
                continue;
            }
            // a resized window or a signal that arrived while reading: read again
            Err(ReadlineError::WindowResized) => continue,
            Err(ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("error: cannot read the terminal: {e}");
                return 1;
            }
        }
    }
    0
}

/// The REPL over standard input that is not a terminal (`ixmap < FILE`, a pipe): the
/// lines run as they arrive, statement by statement, without prompts and without
/// touching the history file. Bad input never ends the run: a line that is not valid
/// UTF-8 is skipped with an error naming its line (a statement that contains it is not
/// run), and input that ends inside a statement is an error naming the line where it
/// started. The exit code is 1 when anything failed (as `ixmap run --keep-going` gives),
/// else 0.
pub fn run_piped(mut input: impl std::io::BufRead) -> i32 {
    let style = if use_color() {
        Style::Ansi
    } else {
        Style::Plain
    };
    let err_color = use_color_stderr();
    #[cfg(unix)]
    sigint::install();
    let mut session = Session::new();
    let mut failed = false;
    // the statement being read, the line it starts on, and its first line that was not
    // valid UTF-8
    let mut pending = String::new();
    let mut start = 0_usize;
    let mut bad: Option<usize> = None;
    let mut n = 0_usize;
    let mut buf: Vec<u8> = Vec::new();
    let not_run = |start: usize, n: usize, b: usize| {
        eprintln!(
            "error: the statement on lines {start}-{n} of standard input was not run: its line {b} is not valid UTF-8"
        );
    };
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("error: cannot read standard input after line {n}: {e}");
                failed = true;
                break;
            }
        }
        n += 1;
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        }
        let line = match std::str::from_utf8(&buf) {
            Ok(s) => s,
            Err(e) => {
                let valid = e.valid_up_to();
                let col = String::from_utf8_lossy(&buf[..valid]).chars().count() + 1;
                eprintln!(
                    "error: line {n} of standard input is not valid UTF-8 (byte 0x{:02X} at column {col}); it was skipped",
                    buf[valid]
                );
                failed = true;
                if pending.is_empty() {
                    continue;
                }
                bad.get_or_insert(n);
                ""
            }
        };
        // a byte-order mark before the first line is no part of it
        let line = if n == 1 {
            line.strip_prefix('\u{feff}').unwrap_or(line)
        } else {
            line
        };
        if pending.is_empty() {
            start = n;
            pending = line.to_string();
        } else {
            pending.push('\n');
            pending.push_str(line);
        }
        if !crate::syntax::is_complete(&pending) {
            continue;
        }
        let statement = std::mem::take(&mut pending);
        if let Some(b) = bad.take() {
            not_run(start, n, b);
            continue;
        }
        if statement.trim().is_empty() {
            continue;
        }
        if matches!(statement.trim(), "exit" | "quit" | "exit()" | "quit()") {
            return i32::from(failed);
        }
        failed |= execute(&mut session, &statement, style, err_color, start);
    }
    if !pending.trim().is_empty() {
        // Input ended inside a statement: what is wrong with it (an open bracket, a
        // string never closed), at its place in the input.
        failed = true;
        match bad {
            Some(b) => not_run(start, n, b),
            None => {
                eprintln!(
                    "error: standard input ended inside the statement that starts at line {start}"
                );
                execute(&mut session, &pending, style, err_color, start);
            }
        }
    }
    i32::from(failed)
}

/// The terminal's width in columns (80 when unknown).
pub fn terminal_width() -> usize {
    #[cfg(unix)]
    {
        // SAFETY: TIOCGWINSZ fills a winsize struct; nothing else is touched.
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
        if ok && ws.ws_col > 0 {
            return usize::from(ws.ws_col);
        }
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(crate::render::text::WIDTH)
}

/// The message of a caught panic's payload.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(no message)".to_string())
}

/// Runs every statement of `input`, printing each result; stops after an interrupt, which
/// is said once. `first_line` is the line of the input where `input` starts (1 in the
/// terminal, where each entry is its own source), so that errors name lines of a piped
/// script. A panic in a statement (a bug) is said, and the session goes on. Whether
/// anything failed.
fn execute(
    session: &mut Session,
    input: &str,
    style: Style,
    err_color: bool,
    first_line: usize,
) -> bool {
    let width = terminal_width();
    // Lines typed while the statement runs stay queued even when Ctrl-C stops it.
    let _keep = typeahead::KeepOnInterrupt::new();
    let mut failed = false;
    for piece in crate::syntax::split(input) {
        let mut said_interrupted = false;
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            session.execute_piece(input, &piece)
        }));
        let outcomes = match run {
            Ok(o) => o,
            Err(p) => {
                eprintln!(
                    "{}",
                    paint_error(
                        &format!(
                            "error: internal error: ixmap panicked: {}; the statement was abandoned and the session goes on (this is a bug in ixmap)",
                            panic_message(p.as_ref())
                        ),
                        err_color
                    )
                );
                crate::clear_interrupt();
                return true;
            }
        };
        for o in outcomes {
            failed |= o.failed();
            match &o.result {
                Ok(v) => {
                    let s = crate::render::text::with_notes(
                        crate::render::text::interactive(v, style, width),
                        &o,
                    );
                    if !s.is_empty() {
                        println!("{s}");
                    }
                }
                Err(d) if crate::interrupted() && d.message.contains("interrupted") => {
                    said_interrupted = true;
                    eprintln!("interrupted");
                }
                Err(d) => eprintln!(
                    "{}",
                    paint_error(&d.render_from_line(input, first_line), err_color)
                ),
            }
        }
        if crate::interrupted() {
            if !said_interrupted {
                eprintln!("interrupted");
            }
            crate::clear_interrupt();
            return true;
        }
    }
    failed
}

/// Typed-ahead input and Ctrl-C. While a statement runs the terminal is in its normal
/// (canonical) mode, and by default the terminal driver throws away the lines typed
/// ahead when Ctrl-C sends SIGINT. With `NOFLSH` set for the statement's duration they
/// stay queued and are read at the next prompt.
mod typeahead {
    pub struct KeepOnInterrupt {
        #[cfg(unix)]
        saved: Option<libc::termios>,
    }

    impl KeepOnInterrupt {
        #[cfg(unix)]
        pub fn new() -> KeepOnInterrupt {
            use std::io::IsTerminal;
            if !std::io::stdin().is_terminal() {
                return KeepOnInterrupt { saved: None };
            }
            // SAFETY: tcgetattr/tcsetattr on standard input with a termios they fill.
            unsafe {
                let mut t: libc::termios = std::mem::zeroed();
                if libc::tcgetattr(libc::STDIN_FILENO, &mut t) != 0 || t.c_lflag & libc::NOFLSH != 0
                {
                    return KeepOnInterrupt { saved: None };
                }
                let saved = t;
                t.c_lflag |= libc::NOFLSH;
                if libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t) != 0 {
                    return KeepOnInterrupt { saved: None };
                }
                KeepOnInterrupt { saved: Some(saved) }
            }
        }
        #[cfg(not(unix))]
        pub fn new() -> KeepOnInterrupt {
            KeepOnInterrupt {}
        }
    }

    impl Drop for KeepOnInterrupt {
        fn drop(&mut self) {
            #[cfg(unix)]
            if let Some(saved) = &self.saved {
                // Only the flag is put back: TCSANOW, so nothing typed is discarded.
                // SAFETY: as in `new`.
                unsafe {
                    let mut t: libc::termios = std::mem::zeroed();
                    if libc::tcgetattr(libc::STDIN_FILENO, &mut t) == 0 {
                        t.c_lflag = (t.c_lflag & !libc::NOFLSH) | (saved.c_lflag & libc::NOFLSH);
                        libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_commands_names_and_keywords() {
        let names = vec!["m".to_string(), "mine".to_string()];
        assert_eq!(
            complete_word("comp", &names),
            vec!["complement", "compose", "composition"]
        );
        assert_eq!(complete_word("mi", &names), vec!["mine"]);
        assert!(complete_word("m", &names).contains(&"mod".to_string()));
        assert!(complete_word("is_", &names).contains(&"is_permutation".to_string()));
        assert!(complete_word("dom", &names).contains(&"domain".to_string()));
    }

    #[test]
    fn a_statement_rejoined_by_up_keeps_its_lines_and_rows() {
        let (l, r) = rejoined("m = (d0) -> (d0),", "domain: d0 in [0, 3]");
        assert_eq!(format!("{l}{r}"), "m = (d0) -> (d0),\ndomain: d0 in [0, 3]");
        assert!(l.ends_with(','), "the cursor ends the line above");
        // one row per line on a wide terminal; a line longer than the terminal wraps
        assert_eq!(rows_taken("a,\nb,", "c", 80), 3);
        assert_eq!(rows_taken("a,", "", 80), 2);
        let long = "x".repeat(100);
        assert_eq!(rows_taken(&long, "c", 80), 3);
        assert_eq!(
            rows_taken("a", "c", 0),
            17,
            "a column of one character a row"
        );
    }

    #[test]
    fn mapping_completes_mappings_and_layouts() {
        let kinds: Vec<(String, String)> = [("best", "mapping"), ("tri", "layout"), ("m", "map")]
            .iter()
            .map(|(n, k)| (n.to_string(), k.to_string()))
            .collect();
        let words = complete_in_context("emit add0 mapping=", "", &kinds);
        assert!(words.contains(&"best".to_string()), "{words:?}");
        assert!(words.contains(&"tri".to_string()), "{words:?}");
        assert!(!words.contains(&"m".to_string()), "{words:?}");
    }

    #[test]
    fn highlighter_tokens() {
        let t = tokens("inverse m) # note");
        assert_eq!(t[0], (Token::Command, "inverse"));
        assert_eq!(t[2], (Token::Name, "m"));
        assert_eq!(t[3], (Token::Error, ")"));
        assert_eq!(t.last().map(|x| x.0), Some(Token::Comment));
        let t = tokens("(d0) -> (d0 mod 8)");
        assert!(t.contains(&(Token::Keyword, "mod")));
        assert!(t.contains(&(Token::Number, "8")));
    }

    #[test]
    fn a_panic_mid_statement_leaves_the_session_usable() {
        let mut session = Session::new();
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            session.execute("a = (d0) -> (d0 * 2), domain: d0 in [0, 3]");
            panic!("boom {}", 7);
        }));
        let p = run.expect_err("it panicked");
        assert_eq!(panic_message(p.as_ref()), "boom 7");
        // the session (and its interior state) is usable after unwinding
        let o = session.execute("inverse a");
        assert!(
            o.iter().all(|o| !o.failed()),
            "the session works after a panic"
        );
        assert!(session.values.contains_key("a"));
    }

    #[test]
    fn file_names_complete_after_load_and_save_only() {
        let dir = std::env::temp_dir().join(format!("ixmap-repl-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("folder");
        std::fs::write(dir.join("alpha.ixs"), "").expect("file");
        let files = rustyline::completion::FilenameCompleter::new();
        let d = dir.display().to_string();
        for line in [format!("load {d}/al"), format!("save \"{d}/al")] {
            let (start, v) = complete_file_name(&files, &line, line.len()).expect("a file slot");
            let words: Vec<String> = v.into_iter().map(|p| p.replacement).collect();
            assert_eq!(words.len(), 1, "{line}: {words:?}");
            let done = format!("{}{}", &line[..start], words[0]);
            assert!(done.contains(&format!("{d}/alpha.ixs")), "{done}");
            // a quoted path keeps its quote
            assert_eq!(done.contains('"'), line.contains('"'), "{done}");
        }
        assert!(complete_file_name(&files, "load", 4).is_none());
        assert!(complete_file_name(&files, "inverse m", 9).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn words_start_after_separators() {
        assert_eq!(word_start("compose m, ab", 13), 11);
        assert_eq!(word_start("inv", 3), 0);
    }
}
