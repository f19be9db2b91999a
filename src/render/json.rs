//! `--json`: one object per statement (SPEC §1). Its `text` field is exactly the plain text
//! the statement prints, by construction.

use super::text::{text, Style};
use crate::value::{Outcome, Value};
use serde_json::{json, Map, Value as Json};

pub fn outcome(o: &Outcome, source: &str, stmt: usize) -> Json {
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
            obj.insert("text".into(), json!(text(v, Style::Plain)));
            fields(v, &mut obj);
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
            if let Some(h) = &d.help {
                obj.insert("help".into(), json!(h));
            }
            obj.insert("text".into(), json!(d.render(source)));
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
                    json!({"operand": o.index, "maps": maps})
                })
                .collect();
            obj.insert("operands".into(), json!(ops));
        }
        Value::Table(t) => {
            obj.insert("headers".into(), json!(t.headers));
            obj.insert("rows".into(), json!(t.rows));
        }
        Value::Kernel(k) => {
            obj.insert("name".into(), json!(k.name));
            obj.insert("target".into(), json!(k.target));
            obj.insert("source".into(), json!(k.source));
        }
        Value::Bench(b) => {
            obj.insert("device".into(), json!(b.device));
            obj.insert("verified".into(), json!(b.verified));
            obj.insert("median_s".into(), json!(b.median_s));
            obj.insert("min_s".into(), json!(b.min_s));
            obj.insert("max_s".into(), json!(b.max_s));
            obj.insert("bytes".into(), json!(b.bytes));
            obj.insert("gbps".into(), json!(b.gbps));
            obj.insert("roofline_pct".into(), json!(b.roofline_pct));
        }
        Value::Mapping(m) => {
            obj.insert("fusion".into(), json!(m.fusion));
            obj.insert("block".into(), json!(m.config.block));
            obj.insert("vector".into(), json!(m.config.vector));
            obj.insert("unroll".into(), json!(m.config.unroll));
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
        }
        Value::Map(_) | Value::Text(_) | Value::None | Value::Help(_) | Value::Loaded(_) => {}
    }
}
