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
    /// A place in the source that `help` names as `{at}`, written `LINE:COLUMN` of the
    /// whole source when the diagnostic is shown (the parser sees one statement at a time,
    /// so it cannot count the lines before it).
    pub help_at: Option<usize>,
}

impl Diagnostic {
    pub fn new(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span: None,
            label: None,
            help: None,
            help_at: None,
        }
    }
    pub fn at(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span: Some(span),
            label: None,
            help: None,
            help_at: None,
        }
    }
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = Some(label.into());
        self
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }
    /// A help that names the place `at` (a byte offset of the source) as `{at}`.
    pub fn with_help_at(mut self, help: impl Into<String>, at: usize) -> Diagnostic {
        self.help = Some(help.into());
        self.help_at = Some(at);
        self
    }
    /// The help as shown for `source`: `{at}` made `LINE:COLUMN`.
    pub fn help_text(&self, source: &str) -> Option<String> {
        let help = self.help.as_ref()?;
        Some(match self.help_at {
            Some(at) => {
                let (l, c) = line_col(source, at);
                help.replace("{at}", &format!("{l}:{c}"))
            }
            None => help.clone(),
        })
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
        self.render_from_line(source, 1)
    }

    /// [`Diagnostic::render`] for a `source` that starts on line `first_line` of its input
    /// (a statement of a script read line by line): the lines shown are the input's.
    pub fn render_from_line(&self, source: &str, first_line: usize) -> String {
        let shift = first_line.max(1) - 1;
        let mut out = format!("error: {}", self.message);
        if let Some(span) = self.span {
            let start = span.start.min(source.len());
            let (line, col) = line_col(source, start);
            let line_text = source.lines().nth(line - 1).unwrap_or("");
            let line = line + shift;
            let width = line.to_string().len();
            let pad = " ".repeat(width);
            // The caret covers the span, clipped to its first line.
            let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
            let line_end = line_start + line_text.len();
            let end = span.end.clamp(start, line_end.max(start));
            let n = source
                .get(start..end)
                .map_or(1, |s| s.chars().count())
                .max(1);
            let (shown, caret_at, caret_len) = echo_line(line_text, col - 1, n);
            out += &format!("\n{pad}--> {line}:{col}\n{pad} |\n{line} | {shown}\n{pad} | ");
            out += &" ".repeat(caret_at);
            out += &"^".repeat(caret_len);
            if let Some(label) = &self.label {
                out += &format!(" {label}");
            }
        }
        let help = match self.help_at {
            Some(at) if shift > 0 => self.help.as_ref().map(|h| {
                let (l, c) = line_col(source, at);
                h.replace("{at}", &format!("{}:{c}", l + shift))
            }),
            _ => self.help_text(source),
        };
        if let Some(help) = help {
            out += &format!("\n  = help: {help}");
        }
        out
    }
}

/// The widest echoed line, in terminal columns: a longer one is shown around the caret.
const ECHO_WIDTH: usize = 400;

/// How one character of an echoed source line is shown, and its width in terminal columns:
/// a tab as four spaces, a control character as its control picture (`␛` for escape, so
/// input cannot drive the terminal), a wide character as it is (two columns).
fn shown_char(c: char) -> (char, usize, usize) {
    use unicode_width::UnicodeWidthChar;
    match c {
        '\t' => (' ', 4, 4),
        c if (c as u32) < 0x20 => (char::from_u32(0x2400 + c as u32).unwrap_or('?'), 1, 1),
        '\u{7f}' => ('\u{2421}', 1, 1),
        c if ('\u{80}'..='\u{9f}').contains(&c) => ('\u{fffd}', 1, 1),
        c => (c, 1, c.width().unwrap_or(0)),
    }
}

/// An echoed source line as shown under a diagnostic, and where its caret goes: `line`
/// with tabs expanded and control characters made visible ([`shown_char`]), the caret's
/// start and length in terminal columns for the `n` characters from character `col0` (wide
/// characters count two). A line wider than [`ECHO_WIDTH`] is cut around the caret, `…`
/// marking what is left out.
pub fn echo_line(line: &str, col0: usize, n: usize) -> (String, usize, usize) {
    // Each character's shown text and its columns: [start, end).
    let mut cells: Vec<(char, usize, usize, usize)> = Vec::new();
    let mut x = 0;
    for c in line.chars() {
        let (s, reps, w) = shown_char(c);
        cells.push((s, reps, x, x + w));
        x += w;
    }
    let total = x;
    let at = |k: usize| cells.get(k).map_or(total, |c| c.2);
    let caret_at = at(col0);
    let caret_end = at(col0 + n).max(caret_at + 1);
    let (from, to) = if total <= ECHO_WIDTH {
        (0, total)
    } else {
        let from = caret_at.saturating_sub(ECHO_WIDTH / 3);
        (from, (from + ECHO_WIDTH).min(total))
    };
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    for &(s, reps, a, b) in &cells {
        if a >= from && b <= to {
            out.extend(std::iter::repeat_n(s, reps));
        }
    }
    if to < total {
        out.push('…');
    }
    let lead = usize::from(from > 0);
    let start = caret_at.saturating_sub(from) + lead;
    let len = caret_end.min(to.max(caret_at + 1)) - caret_at;
    (out, start, len.max(1))
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

/// The closest of `candidates` to `name`, if any is close enough to suggest: within a
/// small edit distance (one edit for short names, a third of the length for longer ones),
/// or very similar by Jaro-Winkler. Ties go to the most similar, then the first.
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut best: Option<(usize, f64, &str)> = None;
    let allowed = (name.chars().count() / 3).max(1);
    for c in candidates {
        if c == name {
            continue;
        }
        let dist = strsim::damerau_levenshtein(name, c);
        let sim = strsim::jaro_winkler(name, c);
        // Replacing every character is no suggestion (`b` is not a misspelt `a`).
        if (dist > allowed && sim < 0.85) || dist >= name.chars().count() {
            continue;
        }
        let better = match best {
            None => true,
            Some((d, s, _)) => dist < d || (dist == d && sim > s),
        };
        if better {
            best = Some((dist, sim, c));
        }
    }
    best.map(|(_, _, c)| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The caret stands under what it points at on a terminal: tabs expanded, wide
    /// characters two columns, control characters shown (never sent raw); a long line is
    /// cut around the caret.
    #[test]
    fn the_echoed_line_and_its_caret_line_up_on_a_terminal() {
        let src = "\tinverse q";
        let d = Diagnostic::at("no map `q`", Span::new(9, 10));
        let r = d.render(src);
        assert!(r.contains("1 |     inverse q\n  |             ^"), "{r}");
        let src = "save \"数数数数.txt\" bogus=1";
        let at = src.find("bogus").unwrap();
        let r = Diagnostic::at("unknown key", Span::new(at, at + 5)).render(src);
        let lines: Vec<&str> = r.lines().collect();
        let echoed = lines[3].trim_start_matches("1 | ");
        let caret = lines[4].trim_start_matches("  | ");
        use unicode_width::UnicodeWidthStr;
        assert_eq!(
            caret.find('^').unwrap(),
            echoed[..echoed.find("bogus").unwrap()].width()
        );
        assert_eq!(caret.trim(), "^^^^^");
        let r = Diagnostic::at("x", Span::new(0, 1)).render("a\u{1b}]0;title\u{7}b");
        assert!(!r.contains('\u{1b}') && r.contains('\u{241b}'), "{r}");
        let long = format!("{} oops {}", "x".repeat(3000), "y".repeat(3000));
        let at = long.find("oops").unwrap();
        let r = Diagnostic::at("x", Span::new(at, at + 4)).render(&long);
        assert!(r.len() < 1000, "{}", r.len());
        let lines: Vec<&str> = r.lines().collect();
        let (echoed, caret) = (&lines[3][4..], &lines[4][4..]);
        let c = caret.find('^').unwrap();
        assert_eq!(
            &echoed.chars().skip(c).take(4).collect::<String>(),
            "oops",
            "{r}"
        );
        assert!(echoed.starts_with('…') && echoed.ends_with('…'));
    }

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(
            suggest("compse", ["compose", "inverse"]),
            Some("compose".into())
        );
        assert_eq!(suggest("d1", ["d0"]), Some("d0".into()));
        assert_eq!(suggest("th_y", ["th_x", "bl_x"]), Some("th_x".into()));
        assert_eq!(suggest("zzz", ["compose", "inverse"]), None);
        assert_eq!(
            suggest("invers", ["inverse", "is_empty"]),
            Some("inverse".into())
        );
    }

    #[test]
    fn renders_line_column_and_caret() {
        let src = "m = (d0) -> (d0)\nx = (d0) -> (d7)";
        let d = Diagnostic::at("unknown variable `d7`", Span::new(30, 32)).with_label("here");
        assert_eq!(d.line_col(src), Some((2, 14)));
        assert_eq!(
            d.render(src),
            "error: unknown variable `d7`\n --> 2:14\n  |\n2 | x = (d0) -> (d7)\n  |              ^^ here"
        );
    }
}
