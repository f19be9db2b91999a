//! Text to syntax trees: the only code that knows pest.
//!
//! Input is first cut into statements ([`split`]): a statement ends at a newline outside
//! brackets unless the line ends with `,`, `->` or `:`, and at a `;` outside brackets.
//! Comments (`#` or `//` to the end of the line, outside strings) are blanked, keeping byte
//! offsets. Each statement is then parsed by the grammar in `grammar.pest`.

pub mod ast;
pub mod diagnostic;
mod grammar;
mod lower;

pub use ast::*;
pub use diagnostic::{line_col, suggest, Diagnostic};

/// A statement's text with its byte range in the source.
#[derive(Clone, Debug)]
pub struct Piece {
    pub start: usize,
    pub end: usize,
}

/// The source with comments replaced by spaces (same length, same offsets).
pub fn blank_comments(src: &str) -> String {
    let bytes = src.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut in_str = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_str {
            if c == b'"' {
                in_str = false;
            }
            // `\"` inside a string (HLO's escaped backend configs) does not end it.
            i += if c == b'\\' { 2 } else { 1 };
            continue;
        }
        if c == b'"' {
            in_str = true;
            i += 1;
            continue;
        }
        // A block comment (`/*index=5*/`, which the grammar reads) is skipped whole: the
        // `*//*` of two in a row is no line comment.
        if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            if let Some(end) = src[i + 2..].find("*/") {
                i += 2 + end + 2;
                continue;
            }
        }
        // `%fusion#2` (an element of a tuple-shaped instruction, as XLA prints operands) is
        // no comment: a `#` right after a name character and before a digit.
        let tuple_ref = c == b'#'
            && i > 0
            && (bytes[i - 1].is_ascii_alphanumeric() || matches!(bytes[i - 1], b'_' | b'.' | b'-'))
            && bytes.get(i + 1).is_some_and(|d| d.is_ascii_digit());
        let starts_comment =
            (c == b'#' && !tuple_ref) || (c == b'/' && bytes.get(i + 1) == Some(&b'/'));
        if starts_comment {
            while i < bytes.len() && bytes[i] != b'\n' {
                out[i] = b' ';
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    // Only ASCII bytes were replaced by ASCII spaces, so this stays valid UTF-8; multi-byte
    // characters inside comments are blanked byte by byte.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn continues(line: &str) -> bool {
    let t = line.trim_end();
    t.ends_with(',') || t.ends_with("->") || t.ends_with(':')
}

/// Whether the next line starts with `->`: the second line of a map printed as
/// `(d0, d1)\n-> (d1, d0)` belongs to the first. Looks at the next line only, so the
/// split stays linear.
fn next_line_continues(rest: &str) -> bool {
    let line = rest.split('\n').next().unwrap_or("");
    line.trim_start().starts_with("->")
}

/// Cuts `src` into statements. Blank statements are dropped.
pub fn split(src: &str) -> Vec<Piece> {
    let clean = blank_comments(src);
    let bytes = clean.as_bytes();
    let mut pieces = Vec::new();
    let mut depth: i64 = 0;
    let mut start = 0;
    let mut line_start = 0;
    let mut in_str = false;
    let mut escaped = false;
    let push = |s: usize, e: usize, pieces: &mut Vec<Piece>| {
        if clean[s..e].trim().is_empty() {
            return;
        }
        pieces.push(Piece { start: s, end: e });
    };
    for (i, &c) in bytes.iter().enumerate() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_str = false;
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b';' if depth <= 0 => {
                push(start, i, &mut pieces);
                start = i + 1;
            }
            b'\n' => {
                let line = &clean[line_start..i];
                if depth <= 0 && !continues(line) && !next_line_continues(&clean[i + 1..]) {
                    push(start, i, &mut pieces);
                    start = i + 1;
                    depth = 0;
                }
                line_start = i + 1;
            }
            _ => {}
        }
    }
    push(start, bytes.len(), &mut pieces);
    pieces
}

/// Source bytes as text; invalid UTF-8 is an error naming its 1-based line and column
/// (in characters) and the offending byte: `invalid UTF-8 at 3:7 (byte 0xff)`.
pub fn decode_utf8(bytes: Vec<u8>) -> Result<String, String> {
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let bytes = e.as_bytes();
            let valid = std::str::from_utf8(&bytes[..at]).unwrap_or("");
            let (line, col) = line_col(valid, valid.len());
            Err(format!(
                "invalid UTF-8 at {line}:{col} (byte 0x{:02x})",
                bytes[at]
            ))
        }
    }
}

/// A source file's text: `cannot read PATH: why`, or `PATH: invalid UTF-8 at LINE:COL
/// (byte 0x..)` naming the place ([`decode_utf8`]). A leading byte-order mark, which
/// Windows editors write, is no part of it ([`without_bom`]).
pub fn read_source(path: &str) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    decode_utf8(bytes)
        .map(without_bom)
        .map_err(|e| format!("{path}: {e}"))
}

/// `text` without a leading UTF-8 byte-order mark (U+FEFF): an invisible character that
/// Windows editors put first, which the parser would refuse as an unexpected token.
/// (Transcripts keep theirs: `ixmap test --bless` writes a file back as it was.)
pub fn without_bom(text: String) -> String {
    match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    }
}

/// Whether `src` is a complete input: no open bracket, no line ending in `,`, `->` or `:`.
/// The REPL's validator and the Jupyter `is_complete` request ask this.
pub fn is_complete(src: &str) -> bool {
    let clean = blank_comments(src);
    let mut depth: i64 = 0;
    let mut in_str = false;
    let mut escaped = false;
    for c in clean.bytes() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else {
                in_str = c != b'"';
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            _ => {}
        }
    }
    let last = clean.lines().last().unwrap_or("");
    depth <= 0 && !in_str && !continues(last)
}

/// Parses one statement: `src[piece.start..piece.end]`, with spans into `src`.
///
/// Only the piece is blanked, so a run over many statements stays linear: a piece starts
/// outside strings and comments ([`split`] cuts only there), so blanking it alone gives the
/// same text as blanking the whole source.
pub fn parse_statement(src: &str, piece: &Piece) -> Result<Stmt, Diagnostic> {
    let clean = blank_comments(&src[piece.start..piece.end]);
    lower::statement(&clean, piece.start)
}

/// Splits and parses every statement of `src`.
pub fn parse(src: &str) -> Vec<Result<Stmt, Diagnostic>> {
    split(src).iter().map(|p| parse_statement(src, p)).collect()
}

/// Parses a lone map literal (for tests and the library API).
pub fn parse_map_lit(src: &str) -> Result<MapLit, Diagnostic> {
    match lower::statement(src, 0)?.kind {
        StmtKind::Eval(Rhs::Map(m)) => Ok(m),
        _ => Err(Diagnostic::at(
            "expected an indexing map",
            Span::new(0, src.len()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_comments_in_a_row_are_no_line_comment() {
        let src = "r = f32[5] add(/*index=0*//*x*/p0, p0) // a note\nnext";
        let clean = blank_comments(src);
        assert!(clean.starts_with("r = f32[5] add(/*index=0*//*x*/p0, p0) "));
        assert!(!clean.contains("a note") && clean.ends_with("\nnext"));
        assert_eq!(clean.len(), src.len());
        // an unclosed block comment leaves the rest to the grammar, a `//` after it blanked
        assert_eq!(blank_comments("a /* b // c"), "a /* b     ");
    }

    #[test]
    fn splits_at_newlines_outside_brackets_and_continuations() {
        let src = "m = (d0) -> (d0),\ndomain:\nd0 in [0, 3]\ninverse m; compose m, m # c\n";
        let pieces: Vec<&str> = split(src).iter().map(|p| &src[p.start..p.end]).collect();
        assert_eq!(pieces.len(), 3);
        assert!(pieces[0].ends_with("d0 in [0, 3]"));
        assert_eq!(pieces[1], "inverse m");
    }

    #[test]
    fn completeness_follows_brackets_and_trailing_tokens() {
        assert!(is_complete("(d0) -> (d0)"));
        assert!(!is_complete("(d0) -> ("));
        assert!(!is_complete("(d0) -> (d0),"));
        assert!(!is_complete("f {\n p0 = f32[2] parameter(0)"));
    }
}
