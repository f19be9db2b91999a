//! `--json`: one object per statement (SPEC §1). Its `text` field is exactly the plain text
//! the statement prints, by construction.

use super::text::{text, Style};
use crate::value::{Outcome, Value};
use serde_json::{json, Map, Value as Json};

pub fn outcome(o: &Outcome, source: &str, stmt: usize) -> Json {
    outcome_in(o, source, stmt, None)
}

/// [`outcome`] for a statement read from `file`: error locations name the file, as the
/// plain run prints them (` --> FILE:LINE:COL`).
pub fn outcome_in(o: &Outcome, source: &str, stmt: usize, file: Option<&str>) -> Json {
    match &o.result {
        Ok(v) => {
            let mut obj = Map::new();
            obj.insert("ok".into(), json!(true));
            obj.insert("stmt".into(), json!(stmt));
            if let Some(name) = &o.bound {
                obj.insert("kind".into(), json!("bound"));
                obj.insert("name".into(), json!(name));
                obj.insert("value_kind".into(), json!(v.kind()));
            } else {
                obj.insert("kind".into(), json!(v.kind()));
            }
            obj.insert(
                "text".into(),
                json!(super::text::with_notes(text(v, Style::Plain), o)),
            );
            if !o.notes.is_empty() {
                obj.insert("notes".into(), json!(o.notes));
            }
            fields(v, &mut obj);
            if let Value::Loaded(l) = v {
                // The file stopped at an error: the statement failed, with the error and
                // where it is in the file.
                // (in a file it loads, where that one stopped: its own name and place)
                if let Some((f, o)) = l.failure() {
                    if let Err(d) = &o.result {
                        obj.insert("ok".into(), json!(false));
                        obj.insert("error".into(), json!(d.message));
                        obj.insert("file".into(), json!(f.file));
                        // the failing statement's number within the file (`stmt` is the load's)
                        obj.insert("file_stmt".into(), json!(o.stmt));
                        if let Some((line, col)) = d.line_col(&f.source) {
                            obj.insert("file_line".into(), json!(line));
                            obj.insert("file_column".into(), json!(col));
                        }
                    }
                }
            }
            // A dump that found a failure (printed in full) fails its statement.
            if let Value::Dump(d) = v {
                if d.failed() {
                    obj.insert("ok".into(), json!(false));
                }
            }
            Json::Object(obj)
        }
        Err(d) => {
            let mut obj = Map::new();
            obj.insert("ok".into(), json!(false));
            obj.insert("stmt".into(), json!(stmt));
            obj.insert("error".into(), json!(d.message));
            if let Some((line, col)) = d.line_col(source) {
                obj.insert("line".into(), json!(line));
                obj.insert("column".into(), json!(col));
            }
            if let Some(h) = d.help_text(source) {
                obj.insert("help".into(), json!(h));
            }
            obj.insert(
                "text".into(),
                json!(super::text::error_text(d, source, file)),
            );
            Json::Object(obj)
        }
    }
}

fn fields(v: &Value, obj: &mut Map<String, Json>) {
    match v {
        Value::Bool(b) => {
            obj.insert("value".into(), json!(b));
        }
        Value::Maps(ms) => {
            obj.insert(
                "maps".into(),
                json!(ms.iter().map(|m| m.to_string()).collect::<Vec<_>>()),
            );
        }
        Value::Indexing(ix) => {
            let ops: Vec<Json> = ix
                .operands
                .iter()
                .map(|o| {
                    let maps: Vec<String> = if o.maps.is_empty() {
                        vec!["UNDEFINED".into()]
                    } else {
                        o.maps.iter().map(|m| m.to_string()).collect()
                    };
                    let mut e = role(&o.label);
                    if let Some(n) = &o.name {
                        e.insert("name".into(), json!(n));
                    }
                    e.insert("label".into(), json!(o.label));
                    e.insert("maps".into(), json!(maps));
                    Json::Object(e)
                })
                .collect();
            obj.insert("operands".into(), json!(ops));
            if !ix.notes.is_empty() {
                obj.insert("notes".into(), json!(ix.notes));
            }
        }
        Value::Table(t) => {
            obj.insert("headers".into(), json!(t.headers));
            obj.insert("rows".into(), json!(t.rows));
        }
        Value::Dump(r) => {
            obj.insert("dump".into(), super::dump::json(r));
        }
        Value::TiledCoalescing(r) => {
            let t = super::gpu::tiled_coalescing_table(r);
            obj.insert("headers".into(), json!(t.headers));
            obj.insert("rows".into(), json!(t.rows));
            obj.insert("notes".into(), json!(t.notes));
        }
        Value::Coalescing(c) => {
            let t = super::gpu::coalescing_table(c);
            obj.insert("headers".into(), json!(t.headers));
            obj.insert("rows".into(), json!(t.rows));
            // Each row's role, as `threads` and `indexing` give theirs: the written output,
            // or operand K (with the operand's name).
            let roles: Vec<Json> = c
                .report
                .operands
                .iter()
                .map(|o| match o.operand {
                    Some(k) => json!({"role": "operand", "operand": k, "name": o.tensor.name, "read": o.read()}),
                    None => json!({"role": "output", "name": o.tensor.name}),
                })
                .collect();
            obj.insert("roles".into(), json!(roles));
        }
        Value::Kernel(k) => {
            obj.insert("name".into(), json!(k.name));
            obj.insert("target".into(), json!(k.target));
            obj.insert("source".into(), json!(k.source));
        }
        Value::Bench(b) => {
            let h = super::gpu::bench_head(b);
            obj.insert("device".into(), json!(h.device));
            obj.insert("verified".into(), json!(h.verified));
            obj.insert("median_s".into(), json!(h.median_s));
            obj.insert("min_s".into(), json!(h.min_s));
            obj.insert("max_s".into(), json!(h.max_s));
            obj.insert("bytes".into(), json!(h.bytes));
            obj.insert("gbps".into(), json!(h.gbps));
            obj.insert("roofline_pct".into(), json!(h.roofline_pct));
        }
        Value::Mapping(m) => {
            obj.insert("fusion".into(), json!(m.fusion));
            obj.insert("block".into(), json!(m.config.block));
            obj.insert("vector".into(), json!(m.config.vector));
            obj.insert("unroll".into(), json!(m.config.unroll));
            obj.insert("max_blocks".into(), json!(m.config.max_blocks));
            obj.insert("tiled".into(), json!(m.tiled));
            obj.insert("tile".into(), json!(m.tile));
            obj.insert("origin".into(), json!(m.origin));
        }
        Value::Svg(s) => {
            obj.insert("svg".into(), json!(s.svg));
        }
        Value::Explained { steps, .. } => {
            let st: Vec<Json> = steps
                .iter()
                .map(
                    |s| json!({"rule": s.rule, "before": s.before, "after": s.after, "why": s.why}),
                )
                .collect();
            obj.insert("steps".into(), json!(st));
        }
        Value::Points(ps) => {
            obj.insert("points".into(), json!(ps));
        }
        Value::Plot(p) => {
            obj.insert("svg".into(), json!(super::svg::plot(p)));
            obj.insert("groups".into(), json!(p.groups));
        }
        Value::Defined(d) => {
            obj.insert("defined".into(), json!(d.kind));
            obj.insert("name".into(), json!(d.name));
            obj.insert("shape".into(), json!(d.shape));
            obj.insert("detail".into(), json!(d.detail));
        }
        Value::Groups(g) => {
            obj.insert("computation".into(), json!(g.computation));
            let gs: Vec<Json> = g
                .groups
                .iter()
                .map(|x| json!({"roots": x.roots, "shared": x.shared}))
                .collect();
            obj.insert("groups".into(), json!(gs));
        }
        Value::Fused(f) => {
            obj.insert("map".into(), json!(f.map.to_string()));
            obj.insert("how".into(), json!(f.how));
        }
        Value::Shown(sh) => {
            obj.insert(
                "syntax".into(),
                json!(match sh.syntax {
                    crate::value::Syntax::Mlir => "mlir",
                    crate::value::Syntax::Xla => "xla",
                }),
            );
            obj.insert("map".into(), json!(sh.map.to_string()));
        }
        Value::Layout(l) => super::layout::json(l, obj),
        Value::Hlo(h) => {
            obj.insert("hlo".into(), json!(h.kind));
            obj.insert("name".into(), json!(h.name));
            if let Some(c) = &h.computation {
                obj.insert("computation".into(), json!(c));
            }
            obj.insert("shape".into(), json!(h.shape));
        }
        Value::Written(w) => {
            obj.insert("path".into(), json!(w.path));
            obj.insert("bytes".into(), json!(w.bytes));
        }
        Value::NoOperands(n) => {
            obj.insert("name".into(), json!(n.name));
            obj.insert("opcode".into(), json!(n.opcode));
            obj.insert("operands".into(), json!([]));
        }
        Value::Map(_) | Value::Text(_) | Value::None | Value::Help(_) | Value::Loaded(_) => {}
    }
}

/// The role of an indexing section, read from its heading (the one place that knows the
/// headings' grammar): `{"role": "output"}` (with `"output": K` when there are several),
/// `{"role": "operand", "operand": K}` (with `"output": K` for a multi-output computation),
/// or, for a launch's extra sections, `{"role": "tile read"}` and
/// `{"role": "reduced operand element"}`. `threads` headings start with `thread → `.
pub fn role(label: &str) -> Map<String, Json> {
    let mut e = Map::new();
    let l = label.strip_prefix("thread → ").unwrap_or(label);
    // `operand K` or `operand K (name)`: the number right after the word
    let number_after = |s: &str, word: &str| -> Option<usize> {
        let rest = s.strip_prefix(word)?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    if let Some((out, op)) = l.split_once(", ") {
        if let (Some(o), Some(k)) = (number_after(out, "output "), number_after(op, "operand ")) {
            e.insert("role".into(), json!("operand"));
            e.insert("operand".into(), json!(k));
            e.insert("output".into(), json!(o));
            return e;
        }
    }
    if let Some(k) = number_after(l, "operand ") {
        e.insert("role".into(), json!("operand"));
        e.insert("operand".into(), json!(k));
    } else if l == "output" || l.starts_with("output (") {
        e.insert("role".into(), json!("output"));
        if let Some(desc) = l
            .strip_prefix("output (")
            .and_then(|d| d.strip_suffix(')'))
            .filter(|_| label.starts_with("thread → "))
        {
            e.insert("launch".into(), Json::Object(launch_fields(desc)));
        }
    } else if let Some(o) = number_after(l, "output ") {
        e.insert("role".into(), json!("output"));
        e.insert("output".into(), json!(o));
    } else {
        // What a launch adds: `tile read, in output coordinates (...)`, `reduced operand
        // element`: the words before any comma or parenthesis.
        let word = l.split([',', '(']).next().unwrap_or(l).trim();
        e.insert("role".into(), json!(word));
    }
    e
}

/// The launch a `threads` output heading describes (`loop, block 8, grid 3, vector 4, 5
/// chunks per thread, max_blocks 3`): `{"strategy": "loop", "block": 8, "grid": 3,
/// "vector": 4, "chunks": 5, "max_blocks": 3}`; each `NAME N` part becomes a number, `N
/// chunks per thread` becomes `chunks`, other parts are kept as text under `notes`.
fn launch_fields(desc: &str) -> Map<String, Json> {
    let mut e = Map::new();
    let mut notes = Vec::new();
    for (k, part) in desc.split(", ").enumerate() {
        let words: Vec<&str> = part.split(' ').collect();
        let num = |w: &str| w.parse::<i64>().ok();
        match words.as_slice() {
            [name] if k == 0 => {
                e.insert("strategy".into(), json!(name));
            }
            [n, "chunks", "per", "thread"] if num(n).is_some() => {
                e.insert("chunks".into(), json!(num(n)));
            }
            [name, n] if num(n).is_some() => {
                e.insert((*name).to_string(), json!(num(n)));
            }
            _ => notes.push(part.to_string()),
        }
    }
    if !notes.is_empty() {
        e.insert("notes".into(), json!(notes));
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_of_indexing_headings() {
        let r = |l: &str| Json::Object(role(l)).to_string();
        assert_eq!(r("operand 0"), r#"{"role":"operand","operand":0}"#);
        assert_eq!(r("output"), r#"{"role":"output"}"#);
        assert_eq!(r("output 1"), r#"{"role":"output","output":1}"#);
        assert_eq!(
            r("output 1, operand 2"),
            r#"{"role":"operand","operand":2,"output":1}"#
        );
        assert_eq!(
            r("thread → output (loop, block 128, grid 6)"),
            r#"{"role":"output","launch":{"strategy":"loop","block":128,"grid":6}}"#
        );
        assert_eq!(
            r("thread → output (loop, block 8, grid 3, vector 4, 5 chunks per thread, max_blocks 3)"),
            r#"{"role":"output","launch":{"strategy":"loop","block":8,"grid":3,"vector":4,"chunks":5,"max_blocks":3}}"#
        );
        assert_eq!(
            r("thread → operand 3 (p3)"),
            r#"{"role":"operand","operand":3}"#
        );
        assert_eq!(
            r("thread → tile read, in output coordinates (phase 1)"),
            r#"{"role":"tile read"}"#
        );
        assert_eq!(
            r("thread → reduced operand element"),
            r#"{"role":"reduced operand element"}"#
        );
    }
}
