//! What the kernel does with requests, free of sockets: execute a cell, complete and
//! inspect at a cursor, say whether input is complete, keep the history. The server
//! ([`super::server`]) runs one `Engine` on its own thread and turns its answers into
//! messages, so everything here is testable with plain calls.
//!
//! ```text
//! let mut e = Engine::new();
//! e.execute("m = (d0) -> (d0 * 2), domain: d0 in [0, 3]\ninverse m", true)
//!   -> outputs: [Display(m's bundle), Result(error: not a bijection ...)] ...
//! ```

use crate::render::{self, Style};
use crate::session::{commands, Session};
use crate::syntax;
use crate::value::Value;
use serde_json::{json, Map, Value as Json};

/// What a statement sends to the notebook.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// `execute_result`: the last value of the cell.
    Result(Json),
    /// `display_data`: values before the last, and pictures.
    Display(Json),
}

/// An error, as the `error` message carries it.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorReport {
    pub ename: String,
    pub evalue: String,
    pub traceback: Vec<String>,
}

/// The outcome of one cell.
#[derive(Clone, Debug)]
pub struct Executed {
    pub execution_count: u64,
    pub outputs: Vec<Output>,
    pub error: Option<ErrorReport>,
    /// `exit` or `quit`: the reply asks the front end to close (`jupyter console` does).
    pub ask_exit: bool,
}

/// The interpreter state behind one kernel.
pub struct Engine {
    pub session: Session,
    pub execution_count: u64,
    /// (execution count, input) of every cell stored in history.
    pub history: Vec<(u64, String)>,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

/// The MIME bundle of a value: text/plain always (a definition's confirmation line), text/html, text/latex for maps,
/// image/svg+xml for pictures.
pub fn bundle(v: &Value) -> Json {
    let mut data = Map::new();
    // A definition is confirmed in one line, as the REPL does.
    data.insert(
        "text/plain".into(),
        json!(render::text::interactive(
            v,
            Style::Plain,
            render::text::WIDTH
        )),
    );
    let html = render::html(v);
    if !html.is_empty() {
        data.insert("text/html".into(), json!(html));
    }
    if let Some(tex) = render::latex(v) {
        data.insert("text/latex".into(), json!(tex));
    }
    match v {
        Value::Plot(p) => {
            data.insert("image/svg+xml".into(), json!(render::svg::plot(p)));
        }
        Value::Svg(s) => {
            data.insert("image/svg+xml".into(), json!(s.svg));
        }
        _ => {}
    }
    Json::Object(data)
}

/// The notebook's progress display for long work: `what: done/total` as text, a progress
/// bar in HTML.
pub fn progress_bundle(done: u64, total: u64, what: &str) -> Json {
    let text = format!("{what}: {done}/{total}");
    json!({
        "text/plain": text,
        "text/html": format!(
            "<div class=\"ixmap-progress\" style=\"font-family: monospace\"><progress value=\"{done}\" max=\"{}\"></progress> {}</div>",
            total.max(1),
            render::svg::escape(&text)
        ),
    })
}

/// [`bundle`] with a statement's notes after the value (`note: ...`), in text and HTML.
pub fn bundle_with_notes(v: &Value, notes: &[String]) -> Json {
    let mut b = bundle(v);
    if notes.is_empty() {
        return b;
    }
    let lines: Vec<String> = notes.iter().map(|n| format!("note: {n}")).collect();
    if let Some(t) = b.get_mut("text/plain") {
        let before = t.as_str().unwrap_or("");
        let joined = lines.join("\n");
        *t = json!(if before.is_empty() {
            joined
        } else {
            format!("{before}\n{joined}")
        });
    }
    let html: String = lines
        .iter()
        .map(|l| {
            format!(
                "<div style=\"color: #9a6700; font-family: monospace\">{}</div>",
                render::svg::escape(l)
            )
        })
        .collect();
    match b.get_mut("text/html") {
        Some(h) => *h = json!(format!("{}{html}", h.as_str().unwrap_or(""))),
        None => {
            if let Json::Object(m) = &mut b {
                m.insert("text/html".into(), json!(html));
            }
        }
    }
    b
}

const RED: &str = "\x1b[1;31m";
const RESET: &str = "\x1b[0m";

/// A diagnostic as traceback lines: the message in red, then where (line:column in the
/// cell), the line with a caret, and any help.
fn traceback(d: &syntax::Diagnostic, src: &str) -> Vec<String> {
    let text = d.render(src);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if let Some(first) = lines.first_mut() {
        if let Some(rest) = first.strip_prefix("error:") {
            *first = format!("{RED}error{RESET}:{rest}");
        }
    }
    lines
}

/// Characters of a word at the cursor: names, HLO names (`fused.p0`, `add.1`, `%p`).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '%')
}

/// Byte offset of code-point position `pos` (Jupyter counts cursors in code points).
fn byte_at(code: &str, pos: usize) -> usize {
    code.char_indices().nth(pos).map_or(code.len(), |(b, _)| b)
}

fn chars_before(code: &str, byte: usize) -> usize {
    code[..byte].chars().count()
}

/// The word that ends at `byte` (its start byte).
fn word_start(code: &str, byte: usize) -> usize {
    let mut start = byte;
    for (i, c) in code[..byte].char_indices().rev() {
        if is_word_char(c) {
            start = i;
        } else {
            break;
        }
    }
    start
}

impl Engine {
    pub fn new() -> Engine {
        Engine {
            session: Session::new(),
            execution_count: 0,
            history: Vec::new(),
        }
    }

    /// Runs a cell statement by statement. Each value is displayed; the last one is the
    /// cell's result. The first error (or an interrupt) stops the cell; the session keeps
    /// every binding made before it. A panic is caught and reported, never fatal.
    pub fn execute(&mut self, code: &str, store_history: bool) -> Executed {
        if store_history {
            self.execution_count += 1;
            self.history.push((self.execution_count, code.to_string()));
        }
        if matches!(code.trim(), "exit" | "quit" | "exit()" | "quit()") {
            return Executed {
                execution_count: self.execution_count,
                outputs: vec![],
                error: None,
                ask_exit: true,
            };
        }
        // (`CMD?`, `NAME?` are statements the session reads, as in the terminal)
        let mut values: Vec<(Value, Vec<String>)> = Vec::new();
        let mut error = None;
        for piece in syntax::split(code) {
            let session = &mut self.session;
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                session.execute_piece(code, &piece)
            }));
            let outcomes = match run {
                Ok(o) => o,
                Err(p) => {
                    crate::clear_interrupt();
                    let what = crate::repl::panic_message(p.as_ref());
                    error = Some(ErrorReport {
                        ename: "InternalError".into(),
                        evalue: format!("ixmap panicked: {what}"),
                        traceback: vec![
                            format!("{RED}internal error{RESET}: ixmap panicked: {what}"),
                            "this is a bug in ixmap; the session is still usable".into(),
                        ],
                    });
                    break;
                }
            };
            for o in outcomes {
                match o.result {
                    Ok(v) => values.push((v, o.notes)),
                    Err(d) => {
                        let interrupted = crate::interrupted() || d.message == "interrupted";
                        error = Some(ErrorReport {
                            ename: if interrupted {
                                "Interrupted".into()
                            } else {
                                "Error".into()
                            },
                            evalue: d.message.clone(),
                            traceback: traceback(&d, code),
                        });
                        break;
                    }
                }
            }
            if error.is_none() && crate::interrupted() {
                error = Some(ErrorReport {
                    ename: "Interrupted".into(),
                    evalue: "interrupted".into(),
                    traceback: vec![format!(
                        "{RED}interrupted{RESET}: the rest of the cell was not run"
                    )],
                });
            }
            if error.is_some() {
                break;
            }
        }
        values.retain(|(v, notes)| !matches!(v, Value::None) || !notes.is_empty());
        let last = if error.is_none() {
            values.len().checked_sub(1)
        } else {
            None
        };
        let outputs = values
            .iter()
            .enumerate()
            .map(|(i, (v, notes))| {
                let b = bundle_with_notes(v, notes);
                let picture = matches!(v, Value::Plot(_) | Value::Svg(_));
                if Some(i) == last && !picture {
                    Output::Result(b)
                } else {
                    Output::Display(b)
                }
            })
            .collect();
        Executed {
            execution_count: self.execution_count,
            outputs,
            error,
            ask_exit: false,
        }
    }

    /// Evaluates `user_expressions` of an execute request: name → bundle or error.
    pub fn user_expressions(&mut self, exprs: &Map<String, Json>) -> Json {
        let mut out = Map::new();
        for (k, code) in exprs {
            let code = code.as_str().unwrap_or("");
            let session = &mut self.session;
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                session.execute(code).pop().map(|o| o.result)
            }));
            let run = match run {
                Ok(r) => r,
                Err(p) => {
                    crate::clear_interrupt();
                    let what = crate::repl::panic_message(p.as_ref());
                    out.insert(
                        k.clone(),
                        json!({"status": "error", "ename": "InternalError", "evalue": format!("ixmap panicked: {what}"), "traceback": [format!("internal error: ixmap panicked: {what}")]}),
                    );
                    continue;
                }
            };
            let r = match run {
                Some(Ok(v)) => json!({"status": "ok", "data": bundle(&v), "metadata": {}}),
                Some(Err(d)) => {
                    json!({"status": "error", "ename": "Error", "evalue": d.message, "traceback": traceback(&d, code)})
                }
                None => json!({"status": "ok", "data": {"text/plain": ""}, "metadata": {}}),
            };
            out.insert(k.clone(), r);
        }
        Json::Object(out)
    }

    /// Completions for the word before the cursor: commands, bound names, keywords, HLO
    /// opcodes, in that order. Returns (matches, cursor_start, cursor_end) in code points,
    /// and each match's type.
    pub fn complete(
        &self,
        code: &str,
        cursor_pos: usize,
    ) -> (Vec<(String, &'static str)>, usize, usize) {
        let end = byte_at(code, cursor_pos);
        let start = word_start(code, end);
        let prefix = &code[start..end];
        // after `load`/`save`, file names (relative to the kernel's folder), as Tab does
        let files = rustyline::completion::FilenameCompleter::new();
        if let Some((from, names)) = crate::repl::complete_file_name(&files, code, end) {
            let names = names.into_iter().map(|n| (n.replacement, "path")).collect();
            return (names, chars_before(code, from), chars_before(code, end));
        }
        let mut out: Vec<(String, &'static str)> = Vec::new();
        // the same words as the terminal's Tab, by context (the command's declaration)
        let kinds = crate::repl::name_kinds(&self.session);
        for w in crate::repl::complete_in_context(&code[..end], prefix, &kinds) {
            let kind = if commands::find(&w).is_some() {
                "command"
            } else if kinds.iter().any(|(n, _)| *n == w) {
                "name"
            } else {
                "keyword"
            };
            out.push((w, kind));
        }
        let rank = |k: &str| ["command", "name", "keyword"].iter().position(|x| *x == k);
        out.sort_by_key(|(_, k)| rank(k));
        // in HLO text (a line that is not a command), the opcodes
        let line_start = code[..start].rfind('\n').map_or(0, |i| i + 1);
        let line = code[line_start..start].trim_start();
        let first = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        if commands::find(first).is_none() && line.contains('=') {
            for op in crate::hlo::ops::known_opcodes() {
                if op.starts_with(prefix) && !out.iter().any(|(x, _)| x == op) {
                    out.push((op.to_string(), "opcode"));
                }
            }
        }
        (out, chars_before(code, start), chars_before(code, end))
    }

    /// Help for the word at the cursor: a command's usage, summary and example, or the
    /// value of a bound name. `None` when the word is neither.
    pub fn inspect(&self, code: &str, cursor_pos: usize) -> Option<Json> {
        let at = byte_at(code, cursor_pos);
        let start = word_start(code, at);
        let end = code[at..]
            .char_indices()
            .find(|&(_, c)| !is_word_char(c))
            .map_or(code.len(), |(i, _)| at + i);
        // A cursor just after a word inspects that word.
        let word = &code[start..end];
        if word.is_empty() {
            return None;
        }
        if let Some(v) = self.session.values.get(word) {
            let mut b = bundle(v);
            if let Some(t) = b.get_mut("text/plain") {
                *t = json!(format!(
                    "{word}: {}\n{}",
                    v.kind(),
                    t.as_str().unwrap_or("")
                ));
            }
            return Some(b);
        }
        let is_hlo = !matches!(
            self.session.hlo.lookup(word),
            crate::hlo::workspace::Lookup::Missing
        );
        if is_hlo && commands::find(word).is_none() {
            let span = syntax::Span::new(0, word.len());
            return Some(match self.session.show_hlo(word, span) {
                Ok(v) => bundle(&v),
                // an ambiguous name: the error says which names tell its meanings apart
                Err(d) => {
                    let t = d.render(word);
                    json!({"text/plain": t, "text/html": format!("{}{}</pre>", render::html::PRE, render::svg::escape(&t))})
                }
            });
        }
        let c = commands::find(word)?;
        let text = format!("{}\n  {}\nexample:\n  {}", c.usage, c.summary, c.example);
        let html = format!(
            "<div><code><b>{}</b></code><br>{}<br>example: <code>{}</code></div>",
            render::svg::escape(c.usage),
            render::svg::escape(c.summary),
            render::svg::escape(c.example)
        );
        Some(json!({"text/plain": text, "text/html": html}))
    }

    /// `complete`, `incomplete` (an open bracket, or a last line ending in `,`, `->`, `:`)
    /// or `invalid` (complete but does not parse).
    pub fn is_complete(&self, code: &str) -> &'static str {
        if !syntax::is_complete(code) {
            return "incomplete";
        }
        if syntax::parse(code).iter().all(|r| r.is_ok()) {
            "complete"
        } else {
            "invalid"
        }
    }

    /// History entries `[session, line, input]` for a history request.
    pub fn history_reply(&self, content: &Json) -> Vec<Json> {
        let entries: Vec<&(u64, String)> =
            match content["hist_access_type"].as_str().unwrap_or("tail") {
                "range" => {
                    let start = content["start"].as_i64().unwrap_or(0);
                    let stop = content["stop"].as_i64().unwrap_or(i64::MAX);
                    self.history
                        .iter()
                        .filter(|(n, _)| (*n as i64) >= start && (*n as i64) < stop)
                        .collect()
                }
                "search" => {
                    let pattern = content["pattern"].as_str().unwrap_or("*");
                    let mut found: Vec<&(u64, String)> = self
                        .history
                        .iter()
                        .filter(|(_, s)| glob(pattern, s))
                        .collect();
                    if content["unique"].as_bool().unwrap_or(false) {
                        let mut seen = std::collections::HashSet::new();
                        found.retain(|(_, s)| seen.insert(s.as_str()));
                    }
                    let n = content["n"].as_u64().unwrap_or(found.len() as u64) as usize;
                    let skip = found.len().saturating_sub(n);
                    found.into_iter().skip(skip).collect()
                }
                _ => {
                    let n = content["n"].as_u64().unwrap_or(self.history.len() as u64) as usize;
                    let skip = self.history.len().saturating_sub(n);
                    self.history.iter().skip(skip).collect()
                }
            };
        entries.into_iter().map(|(n, s)| json!([1, n, s])).collect()
    }
}

/// Glob match with `*` and `?` (history search patterns).
fn glob(pattern: &str, s: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = s.chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(sp) = star {
            pi = sp + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(o: &Output) -> &str {
        match o {
            Output::Result(b) | Output::Display(b) => b["text/plain"].as_str().unwrap_or(""),
        }
    }

    #[test]
    fn state_persists_across_cells_and_the_last_value_is_the_result() {
        let mut e = Engine::new();
        let r = e.execute(
            "m = (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]",
            true,
        );
        assert!(r.error.is_none());
        assert_eq!(r.execution_count, 1);
        let r = e.execute("m\ninverse m", true);
        assert_eq!(r.outputs.len(), 2);
        assert!(matches!(r.outputs[0], Output::Display(_)));
        assert!(matches!(r.outputs[1], Output::Result(_)));
        assert_eq!(
            plain(&r.outputs[1]),
            "(d0, d1) -> (d1, d0), domain: d0 in [0, 4], d1 in [0, 3], is_simplified: true"
        );
        if let Output::Result(b) = &r.outputs[1] {
            assert!(b["text/html"].as_str().unwrap_or("").contains("<table"));
            assert!(b["text/latex"].as_str().unwrap_or("").contains("\\mapsto"));
        }
        assert_eq!(e.execution_count, 2);
    }

    #[test]
    fn an_error_stops_the_cell_points_at_line_and_column_and_keeps_the_session() {
        let mut e = Engine::new();
        let r = e.execute(
            "a = (d0) -> (d0), domain: d0 in [0, 3]\nb = (d0) -> (d7)\nc = a",
            true,
        );
        let err = r.error.expect("d7 is unknown");
        assert_eq!(err.ename, "Error");
        assert!(
            err.traceback.iter().any(|l| l.contains("--> 2:")),
            "{:?}",
            err.traceback
        );
        assert!(err.traceback.iter().any(|l| l.contains("b = (d0) -> (d7)")));
        assert_eq!(r.outputs.len(), 1, "a was displayed, c never ran");
        assert!(e.session.values.contains_key("a"));
        assert!(!e.session.values.contains_key("c"));
        assert!(e.execute("a", true).error.is_none());
    }

    #[test]
    fn completion_offers_commands_names_keywords_and_opcodes_at_the_cursor() {
        let mut e = Engine::new();
        e.execute("simple_map = (d0) -> (d0), domain: d0 in [0, 1]", true);
        let (m, start, end) = e.complete("x = simp", 8);
        let words: Vec<&str> = m.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(words, ["simplify", "simplify_file", "simple_map"]);
        assert_eq!((start, end), (4, 8));
        let (m, ..) = e.complete("p1 = f32[4] dynamic-s", 21);
        assert_eq!(m[0].0, "dynamic-slice");
        // Opcodes come from the HLO op table: every known opcode completes from its first
        // letters, and an opcode outside the table is not offered.
        for op in crate::hlo::ops::known_opcodes() {
            let code = format!("x = f32[4] {}", &op[..op.len().min(4)]);
            let (m, ..) = e.complete(&code, code.chars().count());
            // (`parameter` is also a keyword, and is offered once, as the keyword.)
            assert!(m.iter().any(|(w, _)| w == op), "{op} not offered: {m:?}");
        }
        assert!(crate::hlo::ops::family("log-plus-one").is_some());
        let (m, ..) = e.complete("x = f32[4] log-p", 16);
        assert_eq!(m, [("log-plus-one".to_string(), "opcode")]);
        let (m, ..) = e.complete("x = f32[4] custom-c", 19);
        assert!(m.is_empty(), "{m:?}");
        let (m, ..) = e.complete("simplify m expl", 15);
        assert_eq!(m[0], ("explain".to_string(), "keyword"));
        // The cursor counts code points, not bytes.
        let (m, start, _) = e.complete("# é\ninv", 7);
        assert_eq!((m[0].0.as_str(), start), ("inverse", 4));
    }

    #[test]
    fn question_marks_and_exit_work_as_in_the_terminal() {
        let mut e = Engine::new();
        e.execute("m = (d0) -> (d0), domain: d0 in [0, 3]", true);
        let r = e.execute("simplify?", true);
        assert!(r.error.is_none() && !r.ask_exit);
        let text = |r: &Executed| format!("{:?}", r.outputs);
        assert!(text(&r).contains("usage: simplify MAP"), "{}", text(&r));
        let r = e.execute("m?", true);
        assert!(r.error.is_none(), "{:?}", r.error.map(|x| x.evalue));
        assert!(text(&r).contains("(d0) -> (d0)"), "{}", text(&r));
        assert!(e.execute("exit", true).ask_exit);
        assert!(e.execute("quit()", true).ask_exit);
    }

    #[test]
    fn completion_offers_file_names_after_load_and_save() {
        let dir = std::env::temp_dir().join(format!("ixmap-nb-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("folder");
        std::fs::write(dir.join("été.ixs"), "").expect("file");
        let e = Engine::new();
        let code = format!("load \"{}/ét", dir.display());
        let n = code.chars().count();
        let (matches, start, end) = e.complete(&code, n);
        assert_eq!(end, n);
        assert_eq!(matches.len(), 1, "{matches:?}");
        assert_eq!(matches[0].1, "path");
        // the replacement goes after the quote, counted in code points
        assert_eq!(start, "load \"".chars().count());
        assert!(matches[0].0.ends_with("/été.ixs"), "{matches:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn completion_follows_the_command_declaration_as_the_terminal_does() {
        let mut e = Engine::new();
        e.execute("m = (d0) -> (d0), domain: d0 in [0, 3]", true);
        e.execute(
            "fused {\n  p0 = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p0)\n}",
            true,
        );
        let words = |code: &str| -> Vec<String> {
            e.complete(code, code.chars().count())
                .0
                .into_iter()
                .map(|(w, _)| w)
                .collect()
        };
        // after `key=`, the values the declaration allows, and nothing else
        assert_eq!(words("emit fused target="), ["cpu", "cuda"]);
        assert_eq!(words("bench fused device=g"), ["gpu"]);
        assert_eq!(
            words("show m as "),
            ["cute", "linear_layout", "mlir", "xla"]
        );
        // after the argument, the command's own words: no opcodes, no other commands
        assert_eq!(words("simplify m ex"), ["explain"]);
        // HLO names where a fusion goes, the same list in both front ends, an instruction
        // of a computation by its full name
        assert!(words("threads f").contains(&"fused".to_string()));
        assert_eq!(words("indexing fused."), ["fused.n", "fused.p0"]);
        let kinds = crate::repl::name_kinds(&e.session);
        assert_eq!(
            words("threads fused bl"),
            crate::repl::complete_in_context("threads fused bl", "bl", &kinds)
        );
    }

    #[test]
    fn inspect_explains_commands_and_shows_bound_values() {
        let mut e = Engine::new();
        e.execute("m = (d0) -> (d0 * 2), domain: d0 in [0, 3]", true);
        let b = e.inspect("compose m, m", 3).expect("compose is a command");
        assert!(b["text/plain"]
            .as_str()
            .unwrap_or("")
            .starts_with("compose A, B"));
        let b = e.inspect("compose m, m", 9).expect("m is bound");
        assert!(b["text/plain"]
            .as_str()
            .unwrap_or("")
            .contains("(d0) -> (d0 * 2)"));
        assert!(e.inspect("compose zz, m", 9).is_none());
    }

    #[test]
    fn completeness_follows_brackets_and_parsing() {
        let e = Engine::new();
        assert_eq!(e.is_complete("m = (d0) -> (d0"), "incomplete");
        assert_eq!(e.is_complete("m = (d0) -> (d0),\ndomain:"), "incomplete");
        assert_eq!(e.is_complete("m = (d0) -> (d0)"), "complete");
        assert_eq!(e.is_complete("m = (d0) -> (d0))"), "invalid");
    }

    #[test]
    fn history_tail_range_and_search() {
        let mut e = Engine::new();
        for c in ["help", "m = (d0) -> (d0)", "help simplify", "help"] {
            e.execute(c, true);
        }
        let tail = e.history_reply(&json!({"hist_access_type": "tail", "n": 2}));
        assert_eq!(
            tail,
            vec![json!([1, 3, "help simplify"]), json!([1, 4, "help"])]
        );
        let range = e.history_reply(&json!({"hist_access_type": "range", "start": 2, "stop": 3}));
        assert_eq!(range, vec![json!([1, 2, "m = (d0) -> (d0)"])]);
        let search = e.history_reply(
            &json!({"hist_access_type": "search", "pattern": "help*", "unique": true}),
        );
        assert_eq!(search.len(), 2);
    }
}
