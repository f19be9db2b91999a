//! Plain and ANSI text. Transcripts and `--json` use [`Style::Plain`]; the REPL uses
//! [`Style::Ansi`] on a terminal when `NO_COLOR` is unset.

use crate::value::{Bench, Indexing, Table, Value};
use colored::Colorize;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Style {
    Plain,
    Ansi,
}

fn paint(s: &str, style: Style, f: fn(&str) -> colored::ColoredString) -> String {
    match style {
        Style::Plain => s.to_string(),
        Style::Ansi => f(s).to_string(),
    }
}

/// Indents every line by two spaces (code in output never starts a line with `#`).
pub fn indent(s: &str) -> String {
    s.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("  {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The width help text is wrapped to when the output is not a terminal (transcripts).
pub const WIDTH: usize = 80;

/// Plain or coloured text, help wrapped to [`WIDTH`] columns.
pub fn text(v: &Value, style: Style) -> String {
    text_width(v, style, WIDTH)
}

/// Plain or coloured text, help wrapped to `width` columns (the REPL passes the terminal's).
pub fn text_width(v: &Value, style: Style, width: usize) -> String {
    match v {
        Value::Help(h) => help(h, style, width),
        // A definition says what it defined, in one line, wherever it runs (SPEC §3).
        Value::Defined(_) => confirmation(v).unwrap_or_default(),
        Value::Loaded(l) => loaded(l, style),
        _ => text_plain(v, style),
    }
}

/// What an interactive front end (the REPL, the notebook) shows for a value: its text at
/// `width` columns, the same as scripts, transcripts and `--json` print (definitions
/// included), only wrapped to the terminal.
pub fn interactive(v: &Value, style: Style, width: usize) -> String {
    text_width(v, style, width)
}

/// An outcome's notes, one `note: ...` line each, as every front end prints them after the
/// value.
pub fn notes(o: &crate::value::Outcome) -> String {
    o.notes
        .iter()
        .map(|n| format!("note: {n}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A value's text followed by its outcome's notes.
pub fn with_notes(value_text: String, o: &crate::value::Outcome) -> String {
    let n = notes(o);
    match (value_text.is_empty(), n.is_empty()) {
        (_, true) => value_text,
        (true, false) => n,
        (false, false) => format!("{value_text}\n{n}"),
    }
}

/// The one line every front end prints when an HLO statement defines something.
pub fn confirmation(v: &Value) -> Option<String> {
    match v {
        Value::Defined(d) if d.shape.is_empty() => Some(format!("defined {} {}", d.kind, d.name)),
        Value::Defined(d) => Some(format!(
            "defined {} {}: {} ({})",
            d.kind, d.name, d.shape, d.detail
        )),
        _ => None,
    }
}

/// A diagnostic as the plain run prints it: its location names `file` when the source came
/// from one (` --> FILE:LINE:COL`).
pub fn error_text(d: &crate::syntax::Diagnostic, source: &str, file: Option<&str>) -> String {
    let r = d.render(source);
    match file {
        Some(f) => r.replacen("--> ", &format!("--> {f}:"), 1),
        None => r,
    }
}

fn loaded(l: &crate::value::Loaded, style: Style) -> String {
    let mut out: Vec<String> = Vec::new();
    for o in &l.outcomes {
        match &o.result {
            // a loaded module's definitions are summed up by the last line, not listed
            Ok(Value::Defined(_)) => {}
            Ok(v) => {
                let s = with_notes(text(v, style), o);
                if !s.is_empty() {
                    out.push(s);
                }
            }
            Err(d) => out.push(error_text(d, &l.source, Some(&l.file))),
        }
    }
    let n = l.outcomes.len();
    // a load inside that stopped, or a dump that failed, stops this file too
    let failed = l.outcomes.iter().any(crate::value::Outcome::failed);
    out.push(format!(
        "{} {n} statement{} of {}",
        if failed { "stopped after" } else { "ran" },
        if n == 1 { "" } else { "s" },
        l.file
    ));
    out.join("\n")
}

/// Words of `s` filled into lines of at most `width` columns (a longer word gets its own).
pub fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for w in s.split_whitespace() {
        if !cur.is_empty() && cur.chars().count() + 1 + w.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

fn help(h: &crate::value::Help, style: Style, width: usize) -> String {
    use crate::value::Help;
    let width = width.max(40);
    let bold = |s: &str| paint(s, style, |x| x.bold());
    // `usage  summary`, the summary wrapped in its column; a long usage gets its own line.
    let entry = |usage: &str, summary: &str| -> String {
        const COL: usize = 26;
        let room = width.saturating_sub(COL + 4).max(20);
        let lines = wrap(summary, room);
        let mut s = if usage.chars().count() <= COL {
            format!("  {usage:COL$}  {}\n", lines[0])
        } else {
            format!("  {usage}\n  {:COL$}  {}\n", "", lines[0])
        };
        for l in &lines[1..] {
            s += &format!("  {:COL$}  {l}\n", "");
        }
        s
    };
    match h {
        Help::Index { groups, topics } => {
            let mut s = bold("commands, by group (`help GROUP` for their usage):");
            s.push('\n');
            let key_w = groups.iter().map(|g| g.key.len()).max().unwrap_or(0);
            for g in groups {
                let names: Vec<&str> = g.entries.iter().map(|e| e.name.as_str()).collect();
                let room = width.saturating_sub(key_w + 4).max(20);
                let lines = wrap(&names.join(" "), room);
                s += &format!("  {:key_w$}  {}\n", g.key, lines[0]);
                for l in &lines[1..] {
                    s += &format!("  {:key_w$}  {l}\n", "");
                }
            }
            s += &bold("statements:");
            s.push('\n');
            s += &entry(
                "NAME = MAP | COMMAND ...",
                "binds a name; `_` is the last result",
            );
            s += &entry("MAP", "prints the map in canonical form");
            s += &bold("help topics:");
            s.push('\n');
            for (t, summary) in topics {
                s += &entry(&format!("help {t}"), summary);
            }
            s += "`help COMMAND` (or `COMMAND?`) shows an example; `help all` lists every usage.";
            s
        }
        Help::Groups(groups) => {
            let mut s = String::new();
            for g in groups {
                s += &bold(&format!("{}:", g.title));
                s.push('\n');
                for e in &g.entries {
                    s += &entry(&e.usage, &e.summary);
                }
            }
            s.trim_end().to_string()
        }
        Help::Command {
            entry: e,
            example,
            output,
        } => {
            let mut s = format!("usage: {}\n", e.usage);
            for l in wrap(&e.summary, width.saturating_sub(2)) {
                s += &format!("  {l}\n");
            }
            if example.is_empty() {
                return s.trim_end().to_string();
            }
            s += &format!("example:\n  ixmap> {example}");
            let out = match output.as_deref().map(|o| &o.result) {
                Some(Ok(v)) => text(v, Style::Plain),
                Some(Err(d)) => d.render(example),
                None => String::new(),
            };
            if !out.is_empty() {
                s += "\n";
                s += &indent(&out);
            }
            s
        }
        Help::Topic { text, .. } => text.clone(),
    }
}

fn text_plain(v: &Value, style: Style) -> String {
    match v {
        Value::None => String::new(),
        Value::Map(m) => m.to_string(),
        Value::Maps(ms) => ms
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Indexing(ix) => indexing(ix, style),
        Value::Bool(b) => {
            let s = b.to_string();
            if *b {
                paint(&s, style, |x| x.green())
            } else {
                paint(&s, style, |x| x.red())
            }
        }
        Value::Table(t) => table(t, style),
        Value::Coalescing(c) => table(&super::gpu::coalescing_table(c), style),
        Value::TiledCoalescing(r) => table(&super::gpu::tiled_coalescing_table(r), style),
        Value::Dump(r) => super::dump::text(r, style),
        Value::Groups(g) => groups(g),
        Value::Fused(f) => format!("{}\n  {}", f.map, f.how),
        Value::Shown(sh) => match sh.syntax {
            crate::value::Syntax::Mlir => crate::map::mlir::to_mlir(&sh.map),
            crate::value::Syntax::Xla => sh.map.to_multiline(),
        },
        Value::Written(w) => format!("wrote {} ({} bytes)", w.path, w.bytes),
        Value::NoOperands(n) => format!(
            "`{}` ({}) has no operands: each output element depends only on its index\n  {}",
            n.name, n.opcode, n.domain
        ),
        Value::Kernel(k) => format!("kernel {} ({}):\n{}", k.name, k.target, indent(&k.source)),
        Value::Bench(b) => bench(b),
        Value::Mapping(m) => mapping(m),
        Value::Svg(s) => format!("svg: {} ({} bytes)", s.title, s.svg.len()),
        Value::Text(t) => t.clone(),
        Value::Layout(l) => super::layout::text(l),
        Value::Hlo(h) => hlo(h),
        Value::Explained {
            map,
            steps,
            limit_hit,
        } => {
            let mut s = map.to_string();
            if steps.is_empty() {
                s += "\nno rewrite applied";
            } else {
                s += "\nsteps:";
                for (i, st) in steps.iter().enumerate() {
                    s += &format!(
                        "\n  {}. {}: {}  =>  {}",
                        i + 1,
                        paint(&st.rule, style, |x| x.cyan()),
                        st.before,
                        st.after
                    );
                    if !st.why.is_empty() {
                        s += &format!("\n       because {}", st.why);
                    }
                }
            }
            if let Some(l) = limit_hit {
                s += &format!("\nstopped early: {l} (the result is sound, maybe not simplest)");
            }
            s
        }
        Value::Points(ps) => ps
            .iter()
            .map(|p| {
                format!(
                    "({})",
                    p.iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Plot(p) => plot(p),
        Value::Defined(_) | Value::Help(_) | Value::Loaded(_) => text_width(v, style, WIDTH),
    }
}

/// An HLO name's text: a computation's block as it was written (its indentation made
/// common), an instruction's line, ending `// in COMPUTATION` when it belongs to one (a
/// comment, so the line still reads as HLO).
pub fn hlo(h: &crate::value::HloShown) -> String {
    let lines: Vec<&str> = h.text.lines().map(str::trim_end).collect();
    let lines: Vec<&str> = {
        let a = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
        let b = lines
            .iter()
            .rposition(|l| !l.trim().is_empty())
            .map_or(0, |b| b + 1);
        lines[a..b.max(a)].to_vec()
    };
    // the first line from its first character; the lines inside a block two spaces in,
    // keeping their indentation relative to each other; the closing brace alone
    let n = lines.len();
    let closing = n > 1 && lines[n - 1].trim() == "}";
    let inner_end = if closing { n - 1 } else { n };
    let least = lines[1.min(n)..inner_end.max(1.min(n))]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<String> = Vec::with_capacity(n);
    for (k, l) in lines.iter().enumerate() {
        out.push(if k == 0 {
            l.trim_start().to_string()
        } else if closing && k == n - 1 {
            "}".to_string()
        } else if l.trim().is_empty() {
            String::new()
        } else {
            format!("  {}", &l[least.min(l.len())..])
        });
    }
    let mut s = out.join("\n");
    if let Some(c) = &h.computation {
        s += &format!("  // in {c}");
    }
    s
}

/// A plot as characters: one per cell, the colour group's digit or letter, `*` where
/// several groups meet, `.` where nothing is read.
pub fn plot(p: &crate::value::Plot) -> String {
    const SYMBOLS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let grid = |g: &crate::value::Grid| -> Vec<String> {
        let mut lines = vec![format!(
            "{} (rows {}, columns {}):",
            g.title, g.row_axis, g.col_axis
        )];
        for r in 0..g.rows {
            let row: String = (0..g.cols)
                .map(|c| match g.cells[r * g.cols + c].as_slice() {
                    [] => '.',
                    [one] => SYMBOLS[*one as usize % SYMBOLS.len()] as char,
                    _ => '*',
                })
                .collect();
            lines.push(format!("  {row}"));
        }
        lines
    };
    let mut out = vec![
        format!("plot of {}", p.map),
        format!("colour = {}", p.color_by),
    ];
    out.extend(grid(&p.from));
    out.extend(grid(&p.to));
    out.extend(p.notes.iter().cloned());
    out.join("\n")
}

fn indexing(ix: &Indexing, style: Style) -> String {
    let mut lines = Vec::new();
    for op in &ix.operands {
        let head = match &op.name {
            Some(n) => format!("{} ({}):", op.label, n),
            None => format!("{}:", op.label),
        };
        lines.push(paint(&head, style, |x| x.bold()));
        if op.maps.is_empty() {
            lines.push("  UNDEFINED".to_string());
        }
        for m in &op.maps {
            lines.push(format!("  {m}"));
        }
    }
    lines.extend(ix.notes.iter().cloned());
    lines.join("\n")
}

/// Columns padded to their widest cell; numbers right-aligned.
pub fn table(t: &Table, style: Style) -> String {
    let ncol = t
        .headers
        .len()
        .max(t.rows.iter().map(|r| r.len()).max().unwrap_or(0));
    let mut width = vec![0usize; ncol];
    for row in std::iter::once(&t.headers).chain(&t.rows) {
        for (i, c) in row.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let fmt_row = |row: &Vec<String>| -> String {
        let cells: Vec<String> = (0..ncol)
            .map(|i| {
                let c = row.get(i).map(String::as_str).unwrap_or("");
                let numeric = !c.is_empty()
                    && (c == "-" || c.chars().any(|ch| ch.is_ascii_digit()))
                    && c.chars()
                        .all(|ch| ch.is_ascii_digit() || ".-%x".contains(ch));
                if numeric {
                    format!("{c:>w$}", w = width[i])
                } else {
                    format!("{c:<w$}", w = width[i])
                }
            })
            .collect();
        cells.join("  ").trim_end().to_string()
    };
    let mut out = Vec::new();
    if let Some(title) = &t.title {
        out.push(paint(title, style, |x| x.bold()));
    }
    if !t.headers.is_empty() {
        out.push(paint(&fmt_row(&t.headers), style, |x| x.bold()));
    }
    for r in &t.rows {
        out.push(fmt_row(r));
    }
    out.extend(t.notes.iter().cloned());
    out.join("\n")
}

/// A mapping: what it is for, each half in words, and the arguments that give it.
pub fn mapping_lines(m: &crate::gpu::mapping::Mapping) -> (String, Vec<(&'static str, String)>) {
    let head = match (&m.fusion, &m.origin) {
        (Some(f), Some(o)) => format!("mapping for {f} ({o})"),
        (Some(f), None) => format!("mapping for {f}"),
        (None, Some(o)) => format!("mapping ({o})"),
        (None, None) => "mapping".to_string(),
    };
    (
        head,
        vec![
            ("cpu", m.cpu_text()),
            ("gpu", m.gpu_text()),
            ("as arguments", m.args()),
        ],
    )
}

fn mapping(m: &crate::gpu::mapping::Mapping) -> String {
    let (head, rows) = mapping_lines(m);
    let mut s = format!("{head}:");
    for (k, v) in rows {
        s += &format!("\n  {k}: {v}");
    }
    s
}

fn bench(b: &Bench) -> String {
    let h = super::gpu::bench_head(b);
    let mut s = format!(
        "{} on {}: median {} ms (min {}, max {}), {:.2} GB/s, {:.1}% of copy bandwidth, {}",
        h.name,
        h.device,
        crate::gpu::bench::ms(h.median_s),
        crate::gpu::bench::ms(h.min_s),
        crate::gpu::bench::ms(h.max_s),
        h.gbps,
        h.roofline_pct,
        if h.verified {
            "verified"
        } else {
            "NOT verified"
        }
    );
    for (k, v) in super::gpu::bench_lines(b) {
        s += &format!("\n  {k}: {v}");
    }
    s
}

/// `N groups in `C`:` and one line per group: its roots, and what they share.
fn groups(g: &crate::value::Groups) -> String {
    let tick = |xs: &[String]| {
        xs.iter()
            .map(|x| format!("`{x}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = format!(
        "{} group{} in `{}`:",
        g.groups.len(),
        if g.groups.len() == 1 { "" } else { "s" },
        g.computation
    );
    for (k, grp) in g.groups.iter().enumerate() {
        out.push_str(&format!("\n  group {k}: {}", tick(&grp.roots)));
        if !grp.shared.is_empty() {
            out.push_str(&format!(" (sharing {})", tick(&grp.shared)));
        }
    }
    out
}
