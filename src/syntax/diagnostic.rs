//! Diagnostics: what went wrong, where (line:column, with the source line and a caret),
//! and what might help.
//!
//! ```text
//! error: unknown variable `d7`
//!  --> 1:14
//!   |
//! 1 | m = (d0) -> (d7), domain: d0 in [0, 7]
//!   |              ^^ not among the variables (d0)
//!   = help: did you mean `d0`?
//! ```

use super::ast::Span;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub message: String,
    pub span: Option<Span>,
    pub label: Option<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn new(message: impl Into<String>) -> Diagnostic {
        Diagnostic { message: message.into(), span: None, label: None, help: None }
    }
    pub fn at(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic { message: message.into(), span: Some(span), label: None, help: None }
    }
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = Some(label.into());
        self
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }
    /// Attaches a span if the diagnostic has none yet.
    pub fn or_at(mut self, span: Span) -> Diagnostic {
        if self.span.is_none() {
            self.span = Some(span);
        }
        self
    }

    /// 1-based line and column (in characters) of the span's start in `source`.
    pub fn line_col(&self, source: &str) -> Option<(usize, usize)> {
        let span = self.span?;
        Some(line_col(source, span.start))
    }

    /// The diagnostic as text, with the source line and a caret under the span.
    pub fn render(&self, source: &str) -> String {
        let mut out = format!("error: {}", self.message);
        if let Some(span) = self.span {
            let start = span.start.min(source.len());
            let (line, col) = line_col(source, start);
            let line_text = source.lines().nth(line - 1).unwrap_or("");
            let width = line.to_string().len();
            let pad = " ".repeat(width);
            // The caret covers the span, clipped to its first line.
            let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
            let line_end = line_start + line_text.len();
            let end = span.end.clamp(start, line_end.max(start));
            let n = source.get(start..end).map_or(1, |s| s.chars().count()).max(1);
            out += &format!("\n{pad}--> {line}:{col}\n{pad} |\n{line} | {line_text}\n{pad} | ");
            out += &" ".repeat(col - 1);
            out += &"^".repeat(n);
            if let Some(label) = &self.label {
                out += &format!(" {label}");
            }
        }
        if let Some(help) = &self.help {
            out += &format!("\n  = help: {help}");
        }
        out
    }
}

/// 1-based (line, column) of byte offset `pos`; the column counts characters.
pub fn line_col(source: &str, pos: usize) -> (usize, usize) {
    let pos = pos.min(source.len());
    let before = source.get(..pos).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

/// The closest of `candidates` to `name`, if any is close enough to suggest.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(name, c);
        if score > 0.7 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c.to_string())
}
