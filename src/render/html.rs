//! HTML for the notebook (text/html): every [`Value`] as a small, self-contained fragment.
//! Maps show their results as code and their domain as a table; `indexing` is one table
//! per operand; tables, benchmarks and rewrite steps are tables; plots are inline SVG.
//!
//! ```text
//! (d0, d1) -> (d1, d0), domain: d0 in [0, 9], d1 in [0, 19]
//!   <code>(d0, d1) -> (d1, d0)</code>
//!   <table> variable | kind | range
//!           d0       | dimension | [0, 9]
//!           d1       | dimension | [0, 19] </table>
//! ```

use super::svg::escape;
use crate::interval::Interval;
use crate::map::{IndexingMap, Status, VarKind};
use crate::syntax::Diagnostic;
use crate::value::{Bench, Indexing, Table, Value};
use std::fmt::Write;

const TABLE: &str = r#"<table style="border-collapse: collapse; margin: 2px 0 6px 0">"#;
const TH: &str =
    r#"<th style="text-align: left; padding: 1px 10px 1px 0; border-bottom: 1px solid #999">"#;
const TD: &str = r#"<td style="text-align: left; vertical-align: top; padding: 1px 10px 1px 0; font-family: monospace">"#;
/// A cell whose text never breaks: an interval `[lo, hi]`, a domain entry.
const TD_NOWRAP: &str = r#"<td style="text-align: left; vertical-align: top; padding: 1px 10px 1px 0; font-family: monospace; white-space: nowrap">"#;
/// An item that never breaks inside (`th_x in [0, 127]`), in a cell that may wrap between items.
const NOWRAP: &str = r#"<span style="white-space: nowrap">"#;

fn row(out: &mut String, cells: &[String]) {
    out.push_str("<tr>");
    for c in cells {
        let _ = write!(out, "{TD}{c}</td>");
    }
    out.push_str("</tr>\n");
}

/// A row whose cells at `nowrap` never break.
fn row_nowrap(out: &mut String, cells: &[String], nowrap: &[usize]) {
    out.push_str("<tr>");
    for (i, c) in cells.iter().enumerate() {
        let td = if nowrap.contains(&i) { TD_NOWRAP } else { TD };
        let _ = write!(out, "{td}{c}</td>");
    }
    out.push_str("</tr>\n");
}

fn head(out: &mut String, cells: &[&str]) {
    out.push_str("<thead><tr>");
    for c in cells {
        let _ = write!(out, "{TH}{}</th>", escape(c));
    }
    out.push_str("</tr></thead>\n");
}

/// The map's `(dims)[ranges]{runtimes} -> (results)` part.
pub fn map_head(m: &IndexingMap) -> String {
    let s = m.to_string();
    match s.split_once(", domain: ") {
        Some((h, _)) => h.to_string(),
        None => s,
    }
}

/// A map: its results as code, then its domain as a table (variables, then constraints).
pub fn map(m: &IndexingMap) -> String {
    let mut out = String::from(r#"<div class="ixmap-map">"#);
    let _ = writeln!(
        out,
        "<code style=\"font-family: monospace\">{}</code>",
        escape(&map_head(m))
    );
    match m.status {
        Status::Undefined => return out + "</div>",
        Status::KnownEmpty => {
            return out + "<div><b>KNOWN EMPTY</b>: no point satisfies the domain</div></div>"
        }
        Status::Defined => {}
    }
    let groups = var_groups(m);
    if !groups.is_empty() || !m.constraints.is_empty() {
        out += TABLE;
        head(&mut out, &["domain", "kind", "range"]);
        for (names, kind, bounds) in groups {
            let kind = match kind {
                VarKind::Dim if names.len() > 1 => "dimensions",
                VarKind::Dim => "dimension",
                VarKind::Range if names.len() > 1 => "range variables",
                VarKind::Range => "range variable",
                VarKind::Runtime if names.len() > 1 => "runtime variables",
                VarKind::Runtime => "runtime variable",
            };
            row_nowrap(
                &mut out,
                &[escape(&names.join(", ")), kind.into(), bounds.to_string()],
                &[2],
            );
        }
        for &(e, iv) in &m.constraints {
            row_nowrap(
                &mut out,
                &[escape(&m.show_expr(e)), "constraint".into(), iv.to_string()],
                &[2],
            );
        }
        out += "</table>";
    }
    if m.is_simplified {
        out += "<div style=\"color: #666\">is_simplified: true</div>";
    }
    out + "</div>"
}

/// The bounded variables, those of one kind with the same bounds together, in order of
/// their first member: a launch's `th_y, th_z, bl_y, bl_z` in `[0, 0]` make one entry.
fn var_groups(m: &IndexingMap) -> Vec<(Vec<String>, VarKind, Interval)> {
    let mut groups: Vec<(Vec<String>, VarKind, Interval)> = Vec::new();
    for i in (0..m.num_vars()).filter(|&i| !m.var(i).bounds.is_full()) {
        let (v, kind) = (m.var(i), m.var_kind(i));
        match groups
            .iter_mut()
            .find(|(_, k, b)| *k == kind && *b == v.bounds)
        {
            Some(g) => g.0.push(v.name.clone()),
            None => groups.push((vec![v.name.clone()], kind, v.bounds)),
        }
    }
    groups
}

/// The domain as items that never break inside (`d0 in [0, 9]`), one per line: variables
/// with the same bounds share a line, then the constraints.
pub fn domain_items(m: &IndexingMap) -> Vec<String> {
    let mut items: Vec<String> = var_groups(m)
        .into_iter()
        .map(|(names, _, b)| format!("{} in {b}", names.join(", ")))
        .collect();
    items.extend(
        m.constraints
            .iter()
            .map(|&(e, iv)| format!("{} in {iv}", m.show_expr(e))),
    );
    items
}

fn indexing(ix: &Indexing) -> String {
    let mut out = String::new();
    for op in &ix.operands {
        let caption = match &op.name {
            Some(n) => format!("{} ({})", op.label, n),
            None => op.label.clone(),
        };
        let _ = write!(
            out,
            "{TABLE}<caption style=\"text-align: left; font-weight: bold\">{}</caption>",
            escape(&caption)
        );
        head(&mut out, &["map", "domain"]);
        if op.maps.is_empty() {
            row(&mut out, &["UNDEFINED".into(), String::new()]);
        }
        for m in &op.maps {
            let domain = match m.status {
                Status::Undefined => String::new(),
                Status::KnownEmpty => "KNOWN EMPTY".into(),
                Status::Defined => domain_items(m)
                    .iter()
                    .map(|d| format!("{NOWRAP}{}</span>", escape(d)))
                    .collect::<Vec<_>>()
                    .join("<br>"),
            };
            row(&mut out, &[escape(&map_head(m)), domain]);
        }
        out += "</table>\n";
    }
    for n in &ix.notes {
        let _ = writeln!(out, "<p>{}</p>", escape(n));
    }
    out
}

/// A table with its title and notes.
pub fn table(t: &Table) -> String {
    let mut out = String::new();
    if let Some(title) = &t.title {
        let _ = writeln!(out, "<div><b>{}</b></div>", escape(title));
    }
    out += TABLE;
    if !t.headers.is_empty() {
        head(
            &mut out,
            &t.headers.iter().map(String::as_str).collect::<Vec<_>>(),
        );
    }
    for r in &t.rows {
        row(&mut out, &r.iter().map(|c| escape(c)).collect::<Vec<_>>());
    }
    out += "</table>";
    for n in &t.notes {
        let _ = write!(out, "<div>{}</div>", escape(n));
    }
    out
}

fn bench(b: &Bench) -> String {
    let h = super::gpu::bench_head(b);
    let mut t = Table {
        title: Some(format!("{} on {}", h.name, h.device)),
        headers: vec!["figure".into(), "value".into()],
        ..Table::default()
    };
    let mut add = |k: &str, v: String| t.rows.push(vec![k.into(), v]);
    add(
        "verified",
        if h.verified {
            "yes".into()
        } else {
            "NO".into()
        },
    );
    add(
        "median",
        format!("{} ms", crate::gpu::bench::ms(h.median_s)),
    );
    add("min", format!("{} ms", crate::gpu::bench::ms(h.min_s)));
    add("max", format!("{} ms", crate::gpu::bench::ms(h.max_s)));
    add("bytes moved", h.bytes.to_string());
    add("bandwidth", format!("{:.2} GB/s", h.gbps));
    add("of copy bandwidth", format!("{:.1}%", h.roofline_pct));
    for (k, v) in super::gpu::bench_lines(b) {
        add(&k, v);
    }
    table(&t)
}

/// HTML for a value (empty for [`Value::None`]).
pub fn html(v: &Value) -> String {
    match v {
        Value::None => String::new(),
        Value::Map(m) => map(m),
        Value::Maps(ms) => ms.iter().map(map).collect::<Vec<_>>().join("\n"),
        Value::Indexing(ix) => indexing(ix),
        Value::Bool(b) => {
            let c = if *b { "#1a7f37" } else { "#cf222e" };
            format!("<code style=\"color: {c}; font-weight: bold\">{b}</code>")
        }
        Value::Table(t) => table(t),
        Value::Coalescing(c) => table(&super::gpu::coalescing_table(c)),
        Value::TiledCoalescing(r) => table(&super::gpu::tiled_coalescing_table(r)),
        Value::Dump(r) => super::dump::html(r),
        Value::Fused(f) => format!("{}\n<div>{}</div>", map(&f.map), escape(&f.how)),
        Value::Groups(_)
        | Value::Shown(_)
        | Value::Written(_)
        | Value::NoOperands(_)
        | Value::Hlo(_) => {
            format!(
                "{PRE}{}</pre>",
                escape(&super::text::text(v, super::Style::Plain))
            )
        }
        Value::Kernel(k) => format!(
            "<details open><summary>kernel <code>{}</code> ({})</summary>{}</details>",
            escape(&k.name),
            escape(&k.target),
            code_block(&k.source)
        ),
        Value::Bench(b) => bench(b),
        Value::Mapping(m) => {
            let (head, rows) = super::text::mapping_lines(m);
            table(&Table {
                title: Some(head),
                headers: vec![],
                rows: rows.into_iter().map(|(k, v)| vec![k.into(), v]).collect(),
                ..Table::default()
            })
        }
        Value::Svg(s) => s.svg.clone(),
        Value::Text(t) => format!("{PRE}{}</pre>", escape(t)),
        Value::Layout(l) => super::layout::html(l),
        Value::Explained {
            map: m,
            steps,
            limit_hit,
        } => {
            let mut out = map(m);
            if steps.is_empty() {
                out += "<div>no rewrite applied</div>";
            } else {
                out += TABLE;
                head(&mut out, &["step", "rule", "before", "after", "because"]);
                for (i, s) in steps.iter().enumerate() {
                    row(
                        &mut out,
                        &[
                            (i + 1).to_string(),
                            escape(&s.rule),
                            escape(&s.before),
                            escape(&s.after),
                            escape(&s.why),
                        ],
                    );
                }
                out += "</table>";
            }
            if let Some(l) = limit_hit {
                let _ = write!(
                    out,
                    "<div>stopped early: {} (the result is sound, maybe not simplest)</div>",
                    escape(l)
                );
            }
            out
        }
        Value::Points(ps) => {
            let mut out = String::from(TABLE);
            let n = ps.first().map_or(0, |p| p.len());
            let names: Vec<String> = (0..n).map(|i| format!("result {i}")).collect();
            head(
                &mut out,
                &names.iter().map(String::as_str).collect::<Vec<_>>(),
            );
            for p in ps {
                row(
                    &mut out,
                    &p.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
                );
            }
            out + "</table>"
        }
        Value::Plot(p) => super::svg::plot(p),
        Value::Defined(_) => match super::text::confirmation(v) {
            Some(line) => format!(
                "<div style=\"color: #57606a; font-family: monospace\">{}</div>",
                escape(&line)
            ),
            None => String::new(),
        },
        Value::Help(_) | Value::Loaded(_) => {
            format!(
                "{PRE}{}</pre>",
                escape(&super::text::text(v, super::Style::Plain))
            )
        }
    }
}

/// A block of text in a fixed-width font whatever the page's style (a notebook's own CSS
/// may set `pre` in a proportional one): help, MLIR, HLO, reports.
pub const PRE: &str =
    r#"<pre class="ixmap-text" style="font-family: monospace; white-space: pre">"#;

/// Kernel source (C or CUDA C) as a monospace block with syntax highlighting. Lines never
/// wrap (a long comment scrolls instead of spilling under the code), whatever the page's
/// own style for `pre` says.
pub fn code_block(src: &str) -> String {
    let mut out = String::from(
        r#"<pre class="ixmap-code" style="font-family: monospace; white-space: pre; overflow-x: auto; word-wrap: normal; overflow-wrap: normal; background: #f6f8fa; padding: 6px; line-height: 1.35">"#,
    );
    out += &highlight_c(src);
    out + "</pre>"
}

const C_KEYWORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "const",
    "continue",
    "default",
    "do",
    "else",
    "extern",
    "for",
    "goto",
    "if",
    "inline",
    "register",
    "restrict",
    "return",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "volatile",
    "while",
    "__global__",
    "__device__",
    "__host__",
    "__shared__",
    "__restrict__",
    "__syncthreads",
    "__launch_bounds__",
];
const C_TYPES: &[&str] = &[
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "bool",
    "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
    "uint64_t", "float2", "float4", "int2", "int4", "half", "__half",
];

fn span(out: &mut String, style: &str, text: &str) {
    let _ = write!(out, "<span style=\"{style}\">{}</span>", escape(text));
}

/// C (and CUDA C) tokens coloured: comments, preprocessor lines, keywords, types, numbers,
/// strings. Everything else is escaped as is, so the text is the source exactly.
pub fn highlight_c(src: &str) -> String {
    const COMMENT: &str = "color: #6a737d; font-style: italic";
    const PREPROC: &str = "color: #6f42c1";
    const KEYWORD: &str = "color: #d73a49; font-weight: bold";
    const TYPE: &str = "color: #005cc5";
    const NUMBER: &str = "color: #098658";
    const STRING: &str = "color: #032f62";
    let mut out = String::new();
    let b = src.as_bytes();
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let rest = &src[i..];
        let c = b[i];
        let end_of =
            |from: usize, pat: &str| rest[from..].find(pat).map_or(rest.len(), |k| k + from);
        if rest.starts_with("//") {
            let n = end_of(0, "\n");
            span(&mut out, COMMENT, &rest[..n]);
            i += n;
        } else if rest.starts_with("/*") {
            let n = (end_of(2, "*/") + 2).min(rest.len());
            span(&mut out, COMMENT, &rest[..n]);
            i += n;
        } else if line_start && c == b'#' {
            let n = end_of(0, "\n");
            span(&mut out, PREPROC, &rest[..n]);
            i += n;
        } else if c == b'"' || c == b'\'' {
            let mut n = 1;
            while n < rest.len() && b[i + n] != c && b[i + n] != b'\n' {
                n += if b[i + n] == b'\\' { 2 } else { 1 };
            }
            let mut n = (n + 1).min(rest.len());
            while !rest.is_char_boundary(n) {
                n += 1;
            }
            span(&mut out, STRING, &rest[..n]);
            i += n;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let n = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(rest.len());
            let w = &rest[..n];
            if C_KEYWORDS.contains(&w) {
                span(&mut out, KEYWORD, w);
            } else if C_TYPES.contains(&w) {
                span(&mut out, TYPE, w);
            } else {
                out += &escape(w);
            }
            i += n;
        } else if c.is_ascii_digit() {
            let n = rest
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.'))
                .unwrap_or(rest.len());
            span(&mut out, NUMBER, &rest[..n]);
            i += n;
        } else {
            let ch = rest.chars().next().unwrap_or(' ');
            out += &escape(ch.encode_utf8(&mut [0; 4]));
            i += ch.len_utf8();
        }
        if i > 0 && b[i - 1] == b'\n' {
            line_start = true;
        } else if i > 0 && !b[i - 1].is_ascii_whitespace() {
            line_start = false;
        }
    }
    out
}

/// An error as HTML: the message, where, the source line with a caret, and the help.
pub fn diagnostic(d: &Diagnostic, source: &str) -> String {
    format!(
        "<pre style=\"color: #cf222e; background: #fff5f5; padding: 4px\">{}</pre>",
        escape(&d.render(source))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_headers_and_rows() {
        let t = Table {
            title: Some("t".into()),
            headers: vec!["a".into(), "b".into()],
            rows: vec![vec!["1".into(), "<2>".into()]],
            notes: vec!["n".into()],
        };
        let h = table(&t);
        assert!(
            h.contains(">a</th>") && h.contains(">&lt;2&gt;</td>") && h.contains("<div>n</div>")
        );
    }
}
