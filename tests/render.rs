//! Renderers read values; these tests make the values with a session, from outside both
//! (the renderers never import the interpreter).

use ixmap::render::{html, latex};
use ixmap::{Session, Value};

fn value(src: &str) -> Value {
    let mut s = Session::new();
    let o = s.execute(src).pop().expect("one statement");
    o.result.expect("statement succeeds")
}

#[test]
fn map_domain_is_a_table_with_one_row_per_variable_and_constraint() {
    let h = html::html(&value("(d0, d1)[s0] -> (d0 * 8 + s0, d1), domain: d0 in [0, 9], d1 in [0, 15], s0 in [0, 7], d0 + s0 in [0, 12]"));
    assert!(
        h.contains(
            "<code style=\"font-family: monospace\">(d0, d1)[s0] -&gt; (d0 * 8 + s0, d1)</code>"
        ),
        "{h}"
    );
    assert_eq!(
        h.matches("<tr>").count(),
        1 + 4,
        "header + 3 variables + 1 constraint: {h}"
    );
    assert!(
        h.contains(">s0</td>") && h.contains(">range variable</td>") && h.contains(">[0, 7]</td>")
    );
    assert!(
        h.contains(">d0 + s0</td>")
            && h.contains(">constraint</td>")
            && h.contains(">[0, 12]</td>")
    );
}

#[test]
fn booleans_text_and_errors_are_escaped() {
    assert!(html::html(&Value::Bool(true)).contains(">true</code>"));
    assert_eq!(
        html::html(&Value::Text("a < b".into())),
        format!("{}a &lt; b</pre>", html::PRE)
    );
    let src = "inverse (d0) -> (d7)";
    let mut s = Session::new();
    let d = s
        .execute(src)
        .pop()
        .expect("one")
        .result
        .expect_err("d7 is unknown");
    let h = html::diagnostic(&d, src);
    assert!(
        h.contains("error:") && h.contains("1:") && h.contains("-&gt; (d7)"),
        "{h}"
    );
}

fn check(src: &str, expected: &str) {
    let mut s = Session::new();
    let v = s
        .execute(src)
        .pop()
        .expect("one statement")
        .result
        .expect("a map");
    assert_eq!(
        latex::latex(&v).expect("maps have LaTeX"),
        expected,
        "\n input: {src}"
    );
}

#[test]
fn divisions_become_brackets_and_names_get_subscripts() {
    check(
        "(d0, d1) -> (d0 floordiv 4, d1 mod 8), domain: d0 in [0, 15], d1 in [0, 7]",
        "$$\\begin{aligned}(d_{0}, d_{1}) &\\mapsto \\left(\\left\\lfloor \\frac{d_{0}}{4} \\right\\rfloor,\\; d_{1} \\bmod 8\\right)\\\\\n&d_{0} \\in [0, 15],\\; d_{1} \\in [0, 7]\\end{aligned}$$",
    );
}

#[test]
fn coefficients_lead_and_symbols_are_bracketed() {
    check(
        "(th_x)[s0] -> (th_x * 4 + s0 - 1), domain: th_x in [0, 3], s0 in [0, 3]",
        "$$\\begin{aligned}(\\mathrm{th\\_x})[s_{0}] &\\mapsto \\left(4 \\mathrm{th\\_x} + s_{0} - 1\\right)\\\\\n&\\mathrm{th\\_x} \\in [0, 3],\\; s_{0} \\in [0, 3]\\end{aligned}$$",
    );
}

/// The values of a whole script, in order (statements without a value are skipped).
fn values(src: &str) -> Vec<Value> {
    let mut s = Session::new();
    s.execute(src)
        .into_iter()
        .map(|o| o.result.expect("statement succeeds"))
        .filter(|v| !matches!(v, Value::None | Value::Defined(_)))
        .collect()
}

/// The text of an HTML fragment: tags dropped, entities decoded.
fn text_of(h: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in h.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

const LAUNCH: &str = "a0 = f32[300, 40, 20] parameter(0)\nadd0 = f32[300, 40, 20] exponential(a0)\nthreads add0 vector=4 unroll=2";

#[test]
fn domain_entries_never_break_inside_an_interval() {
    let v = values(LAUNCH).pop().expect("threads");
    let h = html::html(&v);
    // Every `[lo, hi]` sits inside one element that does not wrap.
    let mut checked = 0;
    for (at, _) in h.match_indices(" in [") {
        let open = h[..at].rfind("<span").expect("a domain entry is a span");
        let close = h[at..].find("</span>").expect("closed") + at;
        assert!(
            h[open..at].contains("white-space: nowrap") && !h[open..close].contains("<br>"),
            "entry at {at} may break: {}",
            &h[open..close]
        );
        checked += 1;
    }
    assert!(checked >= 3, "{h}");
    assert!(!h.contains(",<br>"), "{h}");
    // A map's own domain table: the interval cells never wrap either.
    let m = html::html(
        &values(
            "(d0, d1)[s0] -> (d0 * 8 + s0, d1), domain: d0 in [0, 9], d1 in [0, 15], s0 in [0, 7]",
        )[0],
    );
    for (at, _) in m.match_indices(">[0, ") {
        let td = m[..at].rfind("<td").expect("a cell");
        assert!(m[td..at].contains("white-space: nowrap"), "{m}");
    }
}

#[test]
fn long_launch_maps_stay_compact() {
    let v = values(LAUNCH).pop().expect("threads");
    let h = html::html(&v);
    // The four unit block and thread ids share one entry instead of four lines each.
    assert!(h.contains("th_y, th_z, bl_y, bl_z in [0, 0]"), "{h}");
    // Per operand: th_x, the [0, 0] group, bl_x, unroll_id, vector_elem, one constraint.
    let Value::Indexing(ix) = &v else {
        panic!("threads gives indexing")
    };
    let per_map = h.matches("<br>").count() / ix.operands.len();
    assert!(per_map <= 5, "{per_map} line breaks per domain: {h}");
    // And a map shown alone groups the same way in its table.
    let th = values(&format!("{LAUNCH}\nth = threads add0\nth"));
    let Some(Value::Indexing(ix)) = th.last() else {
        panic!("a bound launch is indexing")
    };
    let m = html::map(&ix.operands[0].maps[0]);
    assert!(
        m.contains(">th_y, th_z, bl_y, bl_z</td>") && m.contains(">dimensions</td>"),
        "{m}"
    );
}

const KERNEL: &str = "fr {\n  p0 = f32[8,16] parameter(0)\n  p1 = f32[16,8] parameter(1)\n  e = f32[8,16] exponential(p0)\n  r = f32[16,8] reshape(e)\n  ROOT a = f32[16,8] add(r, p1)\n}\nemit fr target=cuda naive";

#[test]
fn kernels_are_monospace_highlighted_and_never_wrap() {
    let v = values(KERNEL).pop().expect("a kernel");
    let Value::Kernel(k) = &v else {
        panic!("emit gives a kernel")
    };
    let h = html::html(&v);
    let pre_at = h.find("<pre").expect("a code block");
    let pre_tag = &h[pre_at..pre_at + h[pre_at..].find('>').expect("tag ends")];
    assert!(
        pre_tag.contains("font-family: monospace") && pre_tag.contains("white-space: pre;"),
        "{pre_tag}"
    );
    // Highlighted: the CUDA qualifier is a keyword, a comment is one span to its line's end.
    assert!(h.contains(">__global__</span>"), "{h}");
    let long = k
        .source
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("//"))
        .max_by_key(|l| l.len())
        .expect("the kernel has comments");
    assert!(long.len() > 100, "a long comment to check: {long}");
    let escaped = long
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    assert!(
        h.contains(&format!("font-style: italic\">{escaped}</span>")),
        "{h}"
    );
    // The text is the source exactly.
    let body = &h[pre_at..h.find("</pre>").expect("closed")];
    assert_eq!(
        text_of(&format!("{body}</pre>")).trim_end(),
        k.source.trim_end()
    );
}

#[test]
fn highlighting_keeps_any_text_exactly() {
    for src in [
        "int x = 1; // a < b & \"c\"\n#define N 4\n/* multi\nline */ float y = 2.5f;",
        "s = \"unterminated \\\" é",
        "'\\é' x",
        "",
    ] {
        assert_eq!(text_of(&html::highlight_c(src)), src);
    }
}

/// The `y` of every `<text>` of font size `size`, and the bottom of every `<rect>` cell.
fn svg_text_ys(svg: &str, size: &str) -> Vec<f64> {
    svg.lines()
        .filter(|l| {
            l.starts_with("<text")
                && l.contains(&format!("font-size=\"{size}\""))
                && (size != "11" || l.contains("fill=\"#333\""))
        })
        .map(|l| attr(l, "y"))
        .collect()
}

fn attr(line: &str, name: &str) -> f64 {
    let key = format!(" {name}=\"");
    let at = line.find(&key).expect("attribute") + key.len();
    line[at..at + line[at..].find('"').expect("quoted")]
        .parse()
        .expect("a number")
}

fn svg_of(src: &str) -> String {
    match values(src).pop() {
        Some(Value::Plot(p)) => ixmap::render::svg::plot(&p),
        other => panic!("expected a plot from {src}: {other:?}"),
    }
}

#[test]
fn plots_are_sized_to_what_is_read() {
    // One output element reads 8 elements of an 80 x 16 input: the picture shows those.
    let svg = svg_of("w = (d0, d1)[s0] -> (d0 * 8 + s0, d1), domain: d0 in [0, 9], d1 in [0, 15], s0 in [0, 7]\nplot w at (1, 2)");
    let height = attr(svg.lines().next().expect("svg"), "height");
    assert!(height < 450.0, "{height} px tall");
    assert!(
        svg.contains("input shown: rows 7 to 16 of 0 to 79"),
        "{svg}"
    );
    // Every read cell is still drawn: 8 of them, coloured.
    let read = svg
        .lines()
        .filter(|l| l.starts_with("<rect") && l.contains("colour 0</title>"))
        .count();
    assert_eq!(read, 1 + 8, "the output point and the 8 elements it reads");
}

#[test]
fn plot_axes_are_the_tensors_dimensions_and_labels_clear_the_notes() {
    for src in [
        "p0 = f32[20] parameter(0)\nbc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}\nplot bc0 d0=0 d2=0",
        "plot (d0, d1) -> (d1, d0), domain: d0 in [0, 2], d1 in [0, 40]",
        "plot (d0) -> (d0 floordiv 2), domain: d0 in [0, 7]",
    ] {
        let svg = svg_of(src);
        assert!(!svg.contains(">#0 →") && !svg.contains(">#1 →"), "{svg}");
        assert!(svg.contains(">dim 0 →</text>"), "{svg}");
        // The lowest thing drawn above the notes: cells, and the (rotated) row axis names.
        let mut bottom: f64 = 0.0;
        for l in svg.lines() {
            if l.starts_with("<rect") && l.contains("<title>") {
                bottom = bottom.max(attr(l, "y") + attr(l, "height"));
            }
            if l.contains("rotate(90") {
                let name = ixmap::render::svg::label_px(&text_of(l), 10.0);
                bottom = bottom.max(attr(l, "y") + name);
            }
        }
        let notes = svg_text_ys(&svg, "11");
        assert!(!notes.is_empty());
        // A note's text box starts about one font size above its baseline.
        for y in notes {
            assert!(y - 11.0 >= bottom, "a note at {y} overlaps the picture (to {bottom}): {src}");
        }
        // Column axis names sit above the column numbers, not on them.
        let names: Vec<f64> = svg
            .lines()
            .filter(|l| l.contains(" →</text>") && !l.contains("rotate"))
            .map(|l| attr(l, "y"))
            .collect();
        let ticks = svg_text_ys(&svg, "9");
        for n in &names {
            for t in &ticks {
                assert!((t - n).abs() >= 9.0 || t < n, "axis name at {n}, tick at {t}: {src}");
            }
        }
    }
}

#[test]
fn explained_simplification_has_latex_steps() {
    let v = &values("simplify (d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14] explain")[0];
    let l = latex::latex(v).expect("explained maps have LaTeX");
    assert!(
        l.starts_with("$$\\begin{aligned}(d_{0}, d_{1}) &\\mapsto"),
        "{l}"
    );
    assert_eq!(l.matches("\\Rightarrow").count(), 3, "three steps: {l}");
    assert!(l.contains("\\text{interval-constant}: & \\left\\lfloor \\frac{d_{1}}{16} \\right\\rfloor \\;\\Rightarrow\\; 0"), "{l}");
    assert!(l.contains("\\text{because } d_{1} \\in [0, 14]"), "{l}");
    // Facts with equations and negative coefficients typeset too, not as raw text.
    let v = &values("simplify (d0, d1) -> (-((-11 * d0 - d1 + 109) floordiv 11) + 9), domain: d0 in [0, 9], d1 in [0, 10] explain")[0];
    let l = latex::latex(v).expect("LaTeX");
    assert!(!l.contains("\\texttt"), "{l}");
    assert!(l.contains("d_{0} \\cdot \\left(-11\\right)"), "{l}");
    assert!(l.contains("\\right\\rfloor = -d_{0} + 9"), "{l}");
}

/// The renderers and the value types never import the interpreter, and the interpreter
/// never calls a renderer except to write a picture to a file (`plot ... to FILE.svg`).
#[test]
fn no_import_runs_from_render_or_value_into_session() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = |dir: &str| -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut todo = vec![root.join(dir)];
        while let Some(p) = todo.pop() {
            if p.is_dir() {
                todo.extend(
                    std::fs::read_dir(&p)
                        .expect("dir")
                        .map(|e| e.expect("entry").path()),
                );
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push((
                    p.display().to_string(),
                    std::fs::read_to_string(&p).expect("read"),
                ));
            }
        }
        out
    };
    let mut below = files("render");
    below.extend(files("value"));
    below.push((
        "src/value.rs".into(),
        std::fs::read_to_string(root.join("value.rs")).expect("value.rs"),
    ));
    for (path, text) in &below {
        assert!(
            !text.contains("session::")
                && !text.contains("crate::repl")
                && !text.contains("crate::jupyter"),
            "{path} imports a front end or the interpreter"
        );
    }
    for (path, text) in files("value").iter().chain(&[(
        "src/value.rs".to_string(),
        std::fs::read_to_string(root.join("value.rs")).expect("value.rs"),
    )]) {
        assert!(
            !text.contains("render::"),
            "{path} reaches into the renderers"
        );
    }
    for (path, text) in files("session") {
        for (i, line) in text.lines().enumerate() {
            if line.contains("render::") {
                assert!(
                    path.ends_with("cmd_plot.rs") && line.contains("render::svg::plot(&picture)"),
                    "{path}:{}: the interpreter formats through a renderer: {line}",
                    i + 1
                );
            }
        }
    }
}

/// `tune`'s summary line names the table's rank 1, whichever it is (the default can win).
#[test]
fn tune_summary_names_the_tables_winner() {
    let v = values("p0 = f32[64, 64] parameter(0)\nt = f32[64, 64] transpose(p0), dimensions={1, 0}\ntune t device=cpu over tile=(32) reps=1");
    let Some(Value::Table(t)) = v.last() else {
        panic!("tune gives a table: {v:?}")
    };
    let first = t.rows.iter().find(|r| r[0] == "1").expect("a rank 1");
    let best = t
        .notes
        .iter()
        .find(|n| n.starts_with("best: "))
        .expect("a summary");
    let named = match first[1].strip_prefix("tile=") {
        Some(sizes) => format!("best: tile={sizes}, rank 1;"),
        None => "best: the default (untiled loop), rank 1;".to_string(),
    };
    assert!(
        best.starts_with(&named),
        "table's rank 1 is {}, summary: {best}",
        first[1]
    );
}

/// Commands return values; the renderers lay them out. So the interpreter builds no
/// multi-line text: no string literal in `src/session/` holds a line break, except the
/// `example:` lines of the command tables (HLO statements a help page runs), the help
/// topics' prose (`TOPICS`, documentation) and the script that `save` writes (file
/// contents, not a report). Unit tests are not looked at.
#[test]
fn the_interpreter_builds_no_multi_line_reports() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/session");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("src/session") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        let mut code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
        // The help topics: blanked out, keeping the line numbers.
        if let Some(a) = code.find("pub const TOPICS") {
            let b = code[a..].find("\n];").map_or(code.len(), |e| a + e);
            let blank: String = code[a..b]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' })
                .collect();
            code.replace_range(a..b, &blank);
        }
        let code = code.as_str();
        // String literals with the line each starts on; comments and char literals skipped.
        let b = code.as_bytes();
        let (mut i, mut line) = (0, 1);
        while i < b.len() {
            match b[i] {
                b'\n' => line += 1,
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'\'' if b.get(i + 2) == Some(&b'\'') => i += 2,
                b'\'' if b.get(i + 1) == Some(&b'\\') && b.get(i + 3) == Some(&b'\'') => i += 3,
                b'"' => {
                    let start = line;
                    let mut lit = String::new();
                    i += 1;
                    while i < b.len() && b[i] != b'"' {
                        if b[i] == b'\\' && i + 1 < b.len() {
                            lit.push(b[i] as char);
                            i += 1;
                        }
                        if b[i] == b'\n' {
                            line += 1;
                        }
                        lit.push(b[i] as char);
                        i += 1;
                    }
                    let src_line = code.lines().nth(start - 1).unwrap_or("");
                    let allowed = src_line.trim_start().starts_with("example:")
                        || lit.starts_with("# ixmap session, saved by `save`");
                    if (lit.contains("\\n") || lit.contains('\n')) && !allowed {
                        found.push(format!("{}:{start}: {src_line}", path.display()));
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
    assert!(
        found.is_empty(),
        "multi-line text built in the interpreter (make it a value and render it):\n{}",
        found.join("\n")
    );
}

/// A definition says what it defined (name, shape, kind) in one line, the same wherever it
/// runs (SPEC §3): the REPL, scripts and transcripts, the notebook (its text/plain and its
/// HTML) and the JSON `text`, and JSON gives the same facts as fields.
#[test]
fn definitions_report_one_line_everywhere() {
    use ixmap::render::text::{interactive, text, Style, WIDTH};
    for (src, line) in [
        (
            "p0 = f32[4,8] parameter(0)",
            "defined instruction p0: f32[4,8] (parameter)",
        ),
        (
            "add_f32 {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}",
            "defined computation add_f32: f32[] (3 instructions, root s)",
        ),
        ("HloModule jit_f", "defined module jit_f"),
    ] {
        let v = value(src);
        assert_eq!(interactive(&v, Style::Plain, WIDTH), line, "{src}");
        assert_eq!(text(&v, Style::Plain), line, "scripts say it too: {src}");
        let b = ixmap::jupyter::engine::bundle(&v);
        assert_eq!(b["text/plain"], line, "{src}");
        assert!(
            b["text/html"].as_str().is_some_and(|h| h.contains(line)),
            "{src}: {b}"
        );
        let j = ixmap::render::json::outcome(
            &ixmap::value::Outcome {
                stmt: 1,
                span: ixmap::syntax::Span { start: 0, end: 0 },
                bound: None,
                result: Ok(v.clone()),
                notes: vec![],
            },
            src,
            1,
        );
        assert_eq!(j["text"], line);
        let ixmap::Value::Defined(d) = &v else {
            panic!("{src} defines: {v:?}")
        };
        assert_eq!(j["name"], d.name.as_str());
        assert_eq!(j["shape"], d.shape.as_str());
        assert_eq!(j["defined"], d.kind);
        assert_eq!(j["detail"], d.detail.as_str());
    }
}

/// Help, MLIR, HLO text and maps are set in a fixed-width font in the notebook's HTML,
/// whatever the page's own style says of `pre` and `code`.
#[test]
fn text_values_are_monospace_in_html() {
    let shown = values("p0 = f32[4] parameter(0)\nfused {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\nfused\nhelp simplify\nshow (d0) -> (d0 * 2), domain: d0 in [0, 3] as mlir\n(d0) -> (d0), domain: d0 in [0, 3]");
    let html: Vec<String> = shown.iter().map(ixmap::render::html).collect();
    for (k, what) in [(0, "HLO"), (1, "help"), (2, "MLIR")] {
        assert!(
            html[k].starts_with(ixmap::render::html::PRE) && html[k].contains("monospace"),
            "{what}: {}",
            html[k]
        );
    }
    assert!(html[0].contains("ROOT n = f32[4] negate(p)"), "{}", html[0]);
    assert!(html[2].contains("affine_map"), "{}", html[2]);
    assert!(
        html[3].contains("<code style=\"font-family: monospace\">(d0) -&gt; (d0)"),
        "map: {}",
        html[3]
    );
}
