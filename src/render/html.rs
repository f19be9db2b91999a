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
use crate::map::{IndexingMap, Status, VarKind};
use crate::syntax::Diagnostic;
use crate::value::{Bench, Indexing, Table, Value};
use std::fmt::Write;

const TABLE: &str = r#"<table style="border-collapse: collapse; margin: 2px 0 6px 0">"#;
const TH: &str =
    r#"<th style="text-align: left; padding: 1px 10px 1px 0; border-bottom: 1px solid #999">"#;
const TD: &str =
    r#"<td style="text-align: left; padding: 1px 10px 1px 0; font-family: monospace">"#;

fn row(out: &mut String, cells: &[String]) {
    out.push_str("<tr>");
    for c in cells {
        let _ = write!(out, "{TD}{c}</td>");
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
    let _ = writeln!(out, "<code>{}</code>", escape(&map_head(m)));
    match m.status {
        Status::Undefined => return out + "</div>",
        Status::KnownEmpty => {
            return out + "<div><b>KNOWN EMPTY</b>: no point satisfies the domain</div></div>"
        }
        Status::Defined => {}
    }
    let bounded: Vec<usize> = (0..m.num_vars())
        .filter(|&i| !m.var(i).bounds.is_full())
        .collect();
    if !bounded.is_empty() || !m.constraints.is_empty() {
        out += TABLE;
        head(&mut out, &["domain", "kind", "range"]);
        for i in bounded {
            let v = m.var(i);
            let kind = match m.var_kind(i) {
                VarKind::Dim => "dimension",
                VarKind::Range => "range variable",
                VarKind::Runtime => "runtime variable",
            };
            row(
                &mut out,
                &[escape(&v.name), kind.into(), v.bounds.to_string()],
            );
        }
        for &(e, iv) in &m.constraints {
            row(
                &mut out,
                &[escape(&m.show_expr(e)), "constraint".into(), iv.to_string()],
            );
        }
        out += "</table>";
    }
    if m.is_simplified {
        out += "<div style=\"color: #666\">is_simplified: true</div>";
    }
    out + "</div>"
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
            let s = m.to_string();
            let domain = s
                .split_once(", domain: ")
                .map_or(String::new(), |(_, d)| d.to_string());
            row(
                &mut out,
                &[escape(&map_head(m)), escape(&domain).replace(", ", ",<br>")],
            );
        }
        out += "</table>\n";
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
    let mut t = Table {
        title: Some(format!("{} on {}", b.name, b.device)),
        headers: vec!["figure".into(), "value".into()],
        ..Table::default()
    };
    let mut add = |k: &str, v: String| t.rows.push(vec![k.into(), v]);
    add(
        "verified",
        if b.verified {
            "yes".into()
        } else {
            "NO".into()
        },
    );
    add(
        "median",
        format!("{} ms", crate::gpu::bench::ms(b.median_s)),
    );
    add("min", format!("{} ms", crate::gpu::bench::ms(b.min_s)));
    add("max", format!("{} ms", crate::gpu::bench::ms(b.max_s)));
    add("bytes moved", b.bytes.to_string());
    add("bandwidth", format!("{:.2} GB/s", b.gbps));
    add("of copy bandwidth", format!("{:.1}%", b.roofline_pct));
    for (k, v) in &b.extra {
        add(k, v.clone());
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
        Value::Kernel(k) => format!(
            "<details open><summary>kernel <code>{}</code> ({})</summary><pre>{}</pre></details>",
            escape(&k.name),
            escape(&k.target),
            escape(&k.source)
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
        Value::Text(t) => format!("<pre>{}</pre>", escape(t)),
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
            Some(line) => format!("<div style=\"color: #57606a\">{}</div>", escape(&line)),
            None => String::new(),
        },
        Value::Help(_) | Value::Loaded(_) => {
            format!(
                "<pre>{}</pre>",
                escape(&super::text::text(v, super::Style::Plain))
            )
        }
    }
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
