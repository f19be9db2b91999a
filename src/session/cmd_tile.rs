//! Commands on tiles: `tile` (symbolic tiles of every operand), `utilization` (how much of
//! each operand the output reads, and how often).

use super::commands::Command;
use super::{Args, Session};
use crate::map::{IndexingMap, Limits};
use crate::syntax::{Arg, Diagnostic};
use crate::tile::symbolic::{self, Size};
use crate::tile::{self, OperandTile};
use crate::value::tile::join;
use crate::value::{Table, Value};

pub static COMMANDS: [Command; 5] = [
    Command {
        name: "tile",
        usage: "tile MAP|FUSION sizes=(n|NAME, ...) [k=(n, ...)] [from K | at INSTR | every]",
        summary: "cuts the output into tiles of the sizes (numbers, or names for symbolic sizes), a dot's contraction into K steps of k: each operand's (or instruction's) tile (offsets, sizes, strides, clip or mask), checked exact by enumeration",
        example: "tile (d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31] sizes=(16)",
        run: run_tile,
    },
    Command {
        name: "utilization",
        usage: "utilization MAP|FUSION [shape=(n, ...)]",
        summary: "per operand: elements read at least once, and reads per element, when the whole output is computed",
        example: "utilization (d0, d1, d2) -> (d1), domain: d0 in [0, 9], d1 in [0, 19], d2 in [0, 29]",
        run: run_utilization,
    },
    Command {
        name: "tune",
        usage: "tune FUSION [device=auto|cpu|gpu] [over tile=(n, ...) block=(...) vector=(...)] [reps=N] [max=N] [threads=N]",
        summary: "benchmarks every valid tiling of the output (legal tiles, divisibility, line-sized runs), verified, ranked against the default; binds the best mapping to FUSION_best",
        example: "p0 = f32[256, 256] parameter(0); t = f32[256, 256] transpose(p0), dimensions={1, 0}; tune t reps=3",
        run: run_tune,
    },
    Command {
        name: "schedule",
        usage: "schedule MAP|FUSION sizes=(n, ...) [k=(n, ...)] [order=major-to-minor|transposed]",
        summary: "which tile each program computes: the maps pid -> tile offsets of the output and every parameter (K steps as a range variable), for the major-to-minor and transposed orders, checked by enumeration",
        example: "schedule (d0, d1) -> (d1, d0), domain: d0 in [0, 63], d1 in [0, 31] sizes=(16, 16)",
        run: run_schedule,
    },
    Command {
        name: "tilings",
        usage: "tilings MAP|FUSION [k] [volume=N] [divide] [try=(n, ...)] [max=N]",
        summary: "the space of valid tile sizes (over the output and a dot's contraction): its conditions, and the power-of-two (and full-extent) tilings every instruction tiles for",
        example: "tilings (d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 63]",
        run: run_tilings,
    },
];

/// Most points the `tile` command enumerates to prove a tile exact.
const CHECK_LIMIT: u64 = 1 << 22;

/// One operand to tile or measure: its label, name, maps and shape (if known).
pub struct Operand {
    pub label: String,
    pub maps: Vec<IndexingMap>,
    pub shape: Option<Vec<i64>>,
}

/// The operands of the target: a bare map is one operand; an HLO instruction or fusion
/// has one per operand (or, with `from K`, one per output), with its shape.
fn operands(s: &mut Session, a: &Args) -> Result<(Vec<Operand>, Option<Vec<i64>>), Diagnostic> {
    let span = a.groups().first().map_or(a.span(), |g| g.span);
    if let Some(Arg::Word(w, wspan)) = a.items().next() {
        if !s.values.contains_key(w) && s.hlo.resolve(w).is_some() {
            return hlo_operands(s, a, w, *wspan);
        }
    }
    match a.value(s, 0)? {
        Value::Map(m) | Value::Explained { map: m, .. } => {
            let out = m
                .dims
                .iter()
                .map(|d| d.bounds.hi.saturating_add(1))
                .collect();
            Ok((
                vec![Operand {
                    label: "0".into(),
                    maps: vec![m],
                    shape: None,
                }],
                Some(out),
            ))
        }
        Value::Indexing(ix) => Ok((
            ix.operands
                .iter()
                .map(|o| Operand {
                    label: o.index.to_string(),
                    maps: o.maps.clone(),
                    shape: None,
                })
                .collect(),
            None,
        )),
        v => Err(Diagnostic::at(
            format!("expected an indexing map or a fusion, found a {}", v.kind()),
            span,
        )),
    }
}

/// `indexing NAME [from K]` through the HLO commands, with the shapes of what it reaches.
fn hlo_operands(
    s: &mut Session,
    a: &Args,
    name: &str,
    span: crate::syntax::Span,
) -> Result<(Vec<Operand>, Option<Vec<i64>>), Diagnostic> {
    let mut items = vec![Arg::Word(name.to_string(), span)];
    let from = match a.after("from") {
        Some(Arg::Int(k, ks)) => {
            items.push(Arg::Word("from".into(), *ks));
            items.push(Arg::Int(*k, *ks));
            Some(*k as usize)
        }
        Some(other) => {
            return Err(Diagnostic::at(
                "`from` takes an operand number, e.g. `from 0`",
                other.span(),
            ))
        }
        None => None,
    };
    let call = crate::syntax::CommandCall {
        name: "indexing".into(),
        name_span: span,
        groups: vec![crate::syntax::ArgGroup { items, span }],
        span: a.span(),
    };
    let Value::Indexing(ix) = s.call(&call)? else {
        return Err(Diagnostic::at(
            format!("`{name}` has no operands to tile"),
            span,
        ));
    };
    // Shapes: of the operands (parameters of a fusion), or of the outputs with `from K`.
    let (shapes, out_shape): (Vec<Vec<i64>>, Vec<i64>) = {
        let module = &s.hlo.module;
        let (comp, instr) = match s.hlo.resolve(name) {
            Some(crate::hlo::workspace::Target::Computation(c)) => (c, None),
            Some(crate::hlo::workspace::Target::Instr(c, id)) => {
                let ins = &c.instrs[id];
                match ins
                    .attrs
                    .calls
                    .as_deref()
                    .filter(|_| ins.opcode == "fusion")
                    .and_then(|n| module.computation(n))
                {
                    Some(f) => (f, None),
                    None => (c, Some(id)),
                }
            }
            None => {
                return Err(Diagnostic::at(
                    format!("no instruction or computation named `{name}`"),
                    span,
                ))
            }
        };
        let (ins_shapes, outs): (Vec<Vec<i64>>, Vec<Vec<i64>>) = match instr {
            Some(id) => (
                comp.instrs[id]
                    .operands
                    .iter()
                    .map(|&o| comp.instrs[o].dims().to_vec())
                    .collect(),
                vec![comp.instrs[id].dims().to_vec()],
            ),
            None => (
                comp.parameters()
                    .iter()
                    .map(|&p| comp.instrs[p].dims().to_vec())
                    .collect(),
                comp.outputs()
                    .iter()
                    .map(|&o| comp.instrs[o].dims().to_vec())
                    .collect(),
            ),
        };
        match from {
            None => (ins_shapes, outs.first().cloned().unwrap_or_default()),
            Some(k) => (outs, ins_shapes.get(k).cloned().unwrap_or_default()),
        }
    };
    let ops = ix
        .operands
        .iter()
        .map(|o| Operand {
            label: o
                .label
                .strip_prefix("operand ")
                .unwrap_or(&o.label)
                .to_string(),
            maps: o.maps.clone(),
            shape: shapes.get(o.index).cloned(),
        })
        .collect();
    Ok((ops, Some(out_shape)))
}

/// The tile sizes: integers, or names for symbolic sizes (`sizes=(ts0, 8)`).
fn sizes(a: &Args) -> Result<Vec<Size>, Diagnostic> {
    let one = |it: &Arg| match it {
        Arg::Int(v, _) if *v >= 1 => Ok(Size::Fixed(*v)),
        Arg::Int(v, sp) => Err(Diagnostic::at(
            format!("tile size {v} is not positive"),
            *sp,
        )),
        Arg::Word(w, _) => Ok(Size::Symbol(w.clone())),
        other => Err(Diagnostic::at(
            "tile sizes are positive integers or names (symbolic sizes)",
            other.span(),
        )),
    };
    match a.kv("sizes") {
        None => Err(
            Diagnostic::at("`tile` needs the tile sizes: sizes=(n, ...)", a.span())
                .with_help("one size per output dimension, e.g. sizes=(16, 8), or names for symbolic sizes: sizes=(ts0, ts1)"),
        ),
        Some(Arg::Tuple(items, _)) => items.iter().map(one).collect(),
        Some(it @ (Arg::Int(..) | Arg::Word(..))) => Ok(vec![one(it)?]),
        Some(other) => Err(Diagnostic::at(
            "`sizes=` takes a tuple of positive integers or names, like (16, 8) or (ts0, 8)",
            other.span(),
        )),
    }
}

fn run_tile(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let given = sizes(a)?;
    let whole = a.kv("k").is_some() || a.after("at").is_some() || a.flag("every");
    if whole && a.after("from").is_some() {
        return Err(Diagnostic::at(
            "`from` tiles an operand and walks to the outputs; `k=`, `at` and `every` walk from the output",
            a.span(),
        ));
    }
    if whole {
        if let Some((name, _)) = hlo_name(s, a) {
            return run_tile_fusion(s, a, &name);
        }
        if a.after("at").is_some() || a.flag("every") {
            return Err(Diagnostic::at(
                "`at` and `every` name instructions of a fusion; this is a map",
                a.span(),
            ));
        }
    }
    let (mut ops, mut out_shape) = operands(s, a)?;
    let mut given = given;
    // A map with k=: its first range variables (a contraction) become tiled dimensions.
    if let Some(k) = k_sizes(a)? {
        for op in &mut ops {
            for m in &mut op.maps {
                *m = tile::fusion::promote(m, k.len())
                    .map_err(|e| Diagnostic::at(e, a.kv("k").map_or(a.span(), |x| x.span())))?;
            }
        }
        out_shape = None;
        given.extend(k.into_iter().map(Size::Fixed));
    }
    if given.iter().any(|z| matches!(z, Size::Symbol(_))) {
        return run_tile_symbolic(a, &given, &ops, out_shape);
    }
    let sizes: Vec<i64> = given
        .iter()
        .map(|z| match z {
            Size::Fixed(v) => *v,
            Size::Symbol(_) => 0,
        })
        .collect();
    let Some(first) = ops.iter().flat_map(|o| o.maps.first()).next() else {
        return Err(Diagnostic::at(
            "nothing to tile: no operand has a map",
            a.span(),
        ));
    };
    if first.dims.len() != sizes.len() {
        return Err(Diagnostic::at(
            format!(
                "{} has {} dimension{} but sizes has {}",
                tiled_what(a),
                first.dims.len(),
                if first.dims.len() == 1 { "" } else { "s" },
                sizes.len()
            ),
            a.kv("sizes").map_or(a.span(), |x| x.span()),
        ));
    }
    // The output's extents: from the HLO, else from the map's dimensions.
    let extents: Vec<i64> = match out_shape {
        Some(sh) if sh.len() == sizes.len() => sh,
        _ => first
            .dims
            .iter()
            .map(|d| d.bounds.hi.saturating_add(1))
            .collect(),
    };
    let out =
        tile::output_tile(&extents, &sizes).map_err(|e| Diagnostic::at(e.to_string(), a.span()))?;
    let tiles: Vec<String> = out
        .map
        .dims
        .iter()
        .map(|d| format!("{} in {}", d.name, d.bounds))
        .collect();
    let offsets: Vec<String> = out
        .offsets
        .results
        .iter()
        .map(|&e| out.offsets.show_expr(e))
        .collect();
    let mut t = Table {
        title: Some(format!(
            "{}: offsets ({}), sizes ({}), strides ({}); {}",
            match a.after("from") {
                Some(Arg::Int(k, _)) => format!("tile of operand {k}"),
                _ if a.kv("k").is_some() =>
                    "iteration tile (the output's dimensions, then the K steps)".to_string(),
                _ => "output tile".to_string(),
            },
            offsets.join(", "),
            join(&sizes),
            join(&vec![1; sizes.len()]),
            tiles.join(", ")
        )),
        headers: [
            if a.after("from").is_some() {
                "reaches"
            } else {
                "operand"
            },
            "dim",
            "offset",
            "size",
            "stride",
            "clip",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![],
        notes: vec![],
    };
    let single_map = ops.len() == 1 && ops[0].maps.len() == 1;
    let limits = Limits {
        max_points: CHECK_LIMIT,
    };
    let mut checked = 0u64;
    let mut unchecked = 0usize;
    for op in &ops {
        // The library derives every map's tile, checks it by enumeration, and keeps one
        // tile when it contains the others.
        let set = match tile::fusion::tile_set(&op.maps, &sizes, &limits) {
            Ok(set) => set,
            // A wrong tile is a bug in ixmap; say so rather than print it as fact.
            Err(e) if single_map || e.error.to_string().starts_with("internal error") => {
                let why = if single_map {
                    e.error.to_string()
                } else {
                    format!("operand {}: {}", op.label, e.error)
                };
                return Err(Diagnostic::at(why, a.span()));
            }
            Err(e) => {
                t.rows
                    .push(vec![op.label.clone(), "-".into(), "not a tile".into()]);
                t.notes
                    .push(format!("{}: {}", section_name(&op.label), e.error));
                continue;
            }
        };
        for (n, x) in set.tiles.iter().enumerate() {
            let label = if set.tiles.len() > 1 {
                format!("{} (map {n})", op.label)
            } else {
                op.label.clone()
            };
            t.rows.extend(crate::value::tile::tile_rows(&label, &[], x));
            t.notes.push(format!("{}: {}", section_name(&label), x.map));
            if let Some(note) = crate::value::tile::mask_note(&section_name(&label), x) {
                t.notes.push(note);
            }
        }
        if set.covers > 1 {
            t.notes.push(format!(
                "operand {} is read through {} maps; the tile shown contains the others",
                op.label, set.covers
            ));
        }
        match set.checked {
            Some(c) => checked = checked.max(c),
            None => unchecked += op.maps.len(),
        }
    }
    if unchecked == 0 {
        t.notes.push(format!(
            "exact: each tile names exactly the elements the maps read ({checked} tile{} enumerated)",
            if checked == 1 { "" } else { "s" }
        ));
    } else {
        t.notes.push(format!("exactness not enumerated for {unchecked} map(s): the domain is larger than {CHECK_LIMIT} points"));
    }
    if t.rows.iter().all(|r| r.get(5).is_none_or(|c| c.is_empty())) {
        t.headers.truncate(5);
        for r in &mut t.rows {
            r.truncate(5);
        }
    }
    Ok(Value::Table(t))
}

/// `tile ... sizes=(ts0, 8)`: per operand, every case of its symbolic tile with the
/// conditions on the sizes, each case checked by enumeration at concrete sizes.
fn run_tile_symbolic(
    a: &Args,
    given: &[Size],
    ops: &[Operand],
    out_shape: Option<Vec<i64>>,
) -> Result<Value, Diagnostic> {
    let span = a.kv("sizes").map_or(a.span(), |x| x.span());
    let Some(first) = ops.iter().flat_map(|o| o.maps.first()).next() else {
        return Err(Diagnostic::at(
            "nothing to tile: no operand has a map",
            a.span(),
        ));
    };
    let n = first.dims.len();
    if n != given.len() {
        return Err(Diagnostic::at(
            format!(
                "{} has {n} dimension{} but sizes has {}",
                tiled_what(a),
                if n == 1 { "" } else { "s" },
                given.len()
            ),
            span,
        ));
    }
    // The output's extents: from the HLO, else the largest the maps' dimensions reach.
    let extents: Vec<i64> = match out_shape {
        Some(sh) if sh.len() == n => sh,
        _ => (0..n)
            .map(|i| {
                ops.iter()
                    .flat_map(|o| &o.maps)
                    .filter_map(|m| m.dims.get(i))
                    .map(|d| d.bounds.hi.saturating_add(1))
                    .max()
                    .unwrap_or(1)
            })
            .collect(),
    };
    // The size symbols' names, by output dimension; a repeated name is one size.
    let mut names: Vec<String> = Vec::new();
    for (i, z) in given.iter().enumerate() {
        match z {
            Size::Symbol(w) => {
                if names.contains(w) {
                    return Err(Diagnostic::at(
                        format!("`{w}` names the size of two dimensions; give each its own symbol"),
                        span,
                    ));
                }
                names.push(w.clone())
            }
            Size::Fixed(v) => names.push(format!("{v}#{i}")),
        }
    }
    let ranges: Vec<String> = extents
        .iter()
        .zip(given)
        .filter_map(|(e, z)| match z {
            Size::Symbol(w) => Some(format!("{w} in [1, {e}]")),
            Size::Fixed(_) => None,
        })
        .collect();
    let shown: Vec<String> = given
        .iter()
        .map(|z| match z {
            Size::Fixed(v) => v.to_string(),
            Size::Symbol(w) => w.clone(),
        })
        .collect();
    let origins: Vec<String> = (0..n).map(|i| format!("o{i}")).collect();
    let mut t = Table {
        title: Some(format!(
            "symbolic tiles: the tile of {} starts at ({}), each o_i a multiple of its size, sizes ({}); {}",
            tiled_what(a),
            origins.join(", "),
            shown.join(", "),
            ranges.join(", ")
        )),
        headers: ["operand", "case", "when", "offsets", "sizes", "strides", "clips"]
            .map(String::from)
            .to_vec(),
        rows: vec![],
        notes: vec![],
    };
    let limits = Limits {
        max_points: CHECK_LIMIT,
    };
    let single_map = ops.len() == 1 && ops[0].maps.len() == 1;
    let mut checked: Vec<String> = Vec::new();
    for op in ops {
        for (mi, m) in op.maps.iter().enumerate() {
            let label = if op.maps.len() > 1 {
                format!("{} (map {mi})", op.label)
            } else {
                op.label.clone()
            };
            let st = match symbolic::derive_symbolic(m, &extents, given) {
                Ok(x) => x,
                Err(e) if single_map => {
                    return Err(Diagnostic::at(
                        format!("not representable as a tile with these symbolic sizes: {e}"),
                        span,
                    ))
                }
                Err(e) => {
                    t.rows
                        .push(vec![label.clone(), "-".into(), "not a tile".into()]);
                    t.notes.push(format!("{}: {e}", section_name(&label)));
                    continue;
                }
            };
            let show = |es: &[crate::expr::Expr], nm: &[String]| {
                es.iter()
                    .map(|&e| crate::expr::display(e, nm).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let verdict = symbolic::verify(m, &extents, given, &st, &limits);
            let redundant = verdict
                .as_ref()
                .map(|k| k.redundant.clone())
                .unwrap_or_default();
            let cases: Vec<&symbolic::Case> = st
                .cases
                .iter()
                .enumerate()
                .filter(|(i, _)| !redundant.contains(i))
                .map(|(_, c)| c)
                .collect();
            for (ci, c) in cases.iter().enumerate() {
                let when = if c.conds.is_empty() {
                    "always".to_string()
                } else {
                    c.conds
                        .iter()
                        .map(|k| k.show(&names))
                        .collect::<Vec<_>>()
                        .join(" and ")
                };
                let clips = c
                    .clips
                    .iter()
                    .map(|iv| {
                        if iv.is_full() {
                            "-".to_string()
                        } else {
                            iv.to_string()
                        }
                    })
                    .collect::<Vec<_>>();
                t.rows.push(vec![
                    if ci == 0 {
                        label.clone()
                    } else {
                        String::new()
                    },
                    (ci + 1).to_string(),
                    when,
                    if c.offsets.is_empty() {
                        "scalar".to_string()
                    } else {
                        format!("({})", show(&c.offsets, &st.offset_names))
                    },
                    format!("({})", show(&c.sizes, &names)),
                    format!("({})", join(&c.strides)),
                    if clips.iter().all(|x| x == "-") {
                        String::new()
                    } else {
                        format!("({})", clips.join(", "))
                    },
                ]);
            }
            match verdict {
                Ok(k) => {
                    checked.push(format!(
                        "{}: {} size choice{} enumerated{}; a case applies at {}, exact at each",
                        section_name(&label),
                        k.tried,
                        if k.tried == 1 { "" } else { "s" },
                        if k.all {
                            " (every one)"
                        } else {
                            " (a spread: divisors, powers of two, others)"
                        },
                        k.covered,
                    ));
                    if !k.redundant.is_empty() {
                        checked.push(format!(
                            "  {} case{} left out: {} only where another case does",
                            k.redundant.len(),
                            if k.redundant.len() == 1 { "" } else { "s" },
                            if k.redundant.len() == 1 {
                                "it applies"
                            } else {
                                "they apply"
                            }
                        ));
                    }
                    if let Some((z, count)) = k.uncovered {
                        checked.push(format!(
                            "  {count} other choice{} also tile{} this operand concretely, e.g. ({}): `tile` with those numbers shows how",
                            if count == 1 { "" } else { "s" },
                            if count == 1 { "s" } else { "" },
                            join(&z)
                        ));
                    }
                }
                Err(e) if e.starts_with(symbolic::CANNOT) => checked.push(format!(
                    "{}: not checked: {e}; the cases are derived, not enumerated",
                    section_name(&label)
                )),
                Err(e) => {
                    return Err(Diagnostic::at(
                        format!(
                            "internal error: the symbolic tile of {} is wrong: {e}",
                            section_name(&label)
                        ),
                        a.span(),
                    ))
                }
            }
        }
    }
    if t.rows.iter().all(|r| r.get(6).is_none_or(|c| c.is_empty())) {
        for r in &mut t.rows {
            r.truncate(6);
        }
        t.headers.truncate(6);
    }
    if t.headers.len() == 7 {
        t.notes.push(
            "clips: each operand tile is cut to these intervals (the part of the output an operand covers; the last, partial tile where a size does not divide its extent)"
                .into(),
        );
    }
    if checked.iter().any(|c| !c.contains(": not checked: ")) {
        t.notes.push(
            "checked by enumeration: at each choice of sizes, every case that applies names exactly the elements the map reads, tile by tile"
                .into(),
        );
    }
    t.notes.extend(checked);
    Ok(Value::Table(t))
}

/// What `tile` cuts: the output, or with `from K` operand K.
fn tiled_what(a: &Args) -> String {
    match a.after("from") {
        Some(Arg::Int(k, _)) => format!("operand {k}"),
        _ => "the output".to_string(),
    }
}

/// `operand 0` for an operand number, the label itself otherwise (`output`).
fn section_name(label: &str) -> String {
    if label.starts_with(|c: char| c.is_ascii_digit()) {
        format!("operand {label}")
    } else {
        label.to_string()
    }
}

fn percent(num: u64, den: u64) -> String {
    if den == 0 {
        return "-".into();
    }
    let p = num as f64 * 100.0 / den as f64;
    let s = format!("{p:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

fn ratio(num: u64, den: u64) -> String {
    if den == 0 {
        return "-".into();
    }
    if num % den == 0 {
        return (num / den).to_string();
    }
    format!("{:.2}", num as f64 / den as f64)
}

fn run_utilization(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (ops, _) = operands(s, a)?;
    let shape_arg = a.kv_tuple("shape")?;
    let mut t = Table {
        title: None,
        headers: [
            "operand", "elements", "read", "fraction", "reads", "avg", "max", "how",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![],
        notes: vec!["avg and max: reads per element read at least once".into()],
    };
    for op in &ops {
        if op.maps.is_empty() || op.maps.iter().any(|m| m.is_undefined()) {
            t.rows
                .push(vec![op.label.clone(), "-".into(), "UNDEFINED".into()]);
            continue;
        }
        let shape = match (&op.shape, &shape_arg) {
            (Some(s), _) => s.clone(),
            (None, Some(s)) if ops.len() == 1 => s.clone(),
            _ => {
                let Some(sh) = op
                    .maps
                    .iter()
                    .map(tile::utilization::implied_shape)
                    .try_fold(Vec::<i64>::new(), |acc, s| {
                        let s = s?;
                        Some(if acc.is_empty() {
                            s
                        } else {
                            acc.iter().zip(&s).map(|(x, y)| *x.max(y)).collect()
                        })
                    })
                else {
                    return Err(Diagnostic::at(
                        format!(
                            "operand {}: its shape is unknown; give it with shape=(...)",
                            op.label
                        ),
                        a.span(),
                    ));
                };
                t.notes.push(format!(
                    "operand {}: shape [{}] taken from the largest index read; give shape=(...) for the real one",
                    op.label,
                    join(&sh)
                ));
                sh
            }
        };
        let u = tile::utilization(&op.maps, &shape, &Limits::default())
            .map_err(|e| super::cmd_map::map_err(e, a))?;
        t.rows.push(vec![
            op.label.clone(),
            u.elements.to_string(),
            u.read.to_string(),
            percent(u.read, u.elements),
            u.reads.to_string(),
            ratio(u.reads, u.read),
            u.max_reads.to_string(),
            u.method.to_string(),
        ]);
    }
    Ok(Value::Table(t))
}

/// The kernel spec of an HLO instruction or fusion named by the first argument, with that
/// name (the same lookup as the GPU commands').
fn kernel_spec(
    s: &Session,
    a: &Args,
) -> Result<(String, crate::gpu::spec::KernelSpec), Diagnostic> {
    let (name, _) = super::cmd_gpu::fusion_name(a)?;
    Ok((name, super::cmd_gpu::spec(s, a)?))
}

fn run_tune(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    use crate::gpu::bench::{Device, Options};
    use crate::tile::tune;
    let (name, spec) = kernel_spec(s, a)?;
    let device = a.kv_word("device")?;
    let device_span = a.kv("device").map_or(a.span(), |v| v.span());
    let on_gpu = match device.as_deref() {
        None | Some("auto") => crate::gpu::bench::cuda::available().is_ok(),
        Some("cpu") => false,
        Some("gpu") => {
            if let Err(why) = crate::gpu::bench::cuda::available() {
                return Err(
                    Diagnostic::at(format!("cannot tune on the GPU: {why}"), device_span)
                        .with_help("device=cpu tunes the tiling of the CPU kernel"),
                );
            }
            true
        }
        Some(w) => {
            return Err(Diagnostic::at(
                format!("`device=` takes auto, cpu or gpu, not `{w}`"),
                device_span,
            ))
        }
    };
    let reps = a.kv_int("reps")?.unwrap_or(5);
    let max = a.kv_int("max")?.unwrap_or(12);
    if !(1..=1000).contains(&reps) || !(1..=1000).contains(&max) {
        return Err(Diagnostic::at(
            "`reps=` and `max=` take 1 to 1000",
            a.span(),
        ));
    }
    if on_gpu {
        return tune_gpu(s, a, &name, &spec, reps as usize);
    }
    let user_tiles = a.kv_tuple("tile")?;
    let mut notes = Vec::new();
    if a.kv("block").is_some() || a.kv("vector").is_some() {
        notes.push(
            "block= and vector= are GPU launch parameters; on the CPU the tiling is tuned"
                .to_string(),
        );
    }
    let err = |e: crate::MapError| Diagnostic::at(e.to_string(), a.span());
    let (cands, rejected, valid) =
        tune::candidates(&spec, user_tiles.as_deref(), max as usize).map_err(err)?;
    if cands.is_empty() {
        let why = rejected
            .first()
            .map_or("no tiling divides the output".to_string(), |r| {
                format!("e.g. ({}): {}", join(&r.sizes), r.why)
            });
        return Err(Diagnostic::at(
            format!("no valid tiling of `{name}` to try: {why}"),
            a.span(),
        ));
    }
    let threads = a.kv_int("threads")?.unwrap_or(0);
    if !(0..=1024).contains(&threads) {
        return Err(Diagnostic::at(
            format!("threads={threads} is not in [1, 1024]"),
            a.kv("threads").map_or(a.span(), |v| v.span()),
        ));
    }
    let opts = Options {
        device: Device::Cpu,
        reps: reps as usize,
        warmups: 1,
        progress: true,
        threads: threads as usize,
        ..Options::default()
    };
    let bar = {
        use std::io::IsTerminal;
        if std::io::stderr().is_terminal() {
            let b = indicatif::ProgressBar::new(cands.len() as u64 + 1);
            b.set_style(
                indicatif::ProgressStyle::with_template("tune {bar:30} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        } else {
            indicatif::ProgressBar::hidden()
        }
    };
    let n_rejected = rejected.len();
    let tuned = tune::tune(&spec, &cands, rejected, &opts, &mut |i, _, label| {
        bar.set_position(i as u64);
        bar.set_message(label.to_string());
    });
    bar.finish_and_clear();
    let tuned = tuned.map_err(err)?;
    let mut t =
        crate::value::tile::tune(&name, &tuned, cands.len(), valid, n_rejected, reps, notes);
    if let Some(rc) = &tuned.recheck {
        let bound = format!("{}_best", crate::gpu::emit::c_ident(&name));
        let r = &rc.ratio;
        t.notes.push(format!(
            "bound to `{bound}`: `emit {name} mapping={bound}`, `bench {name} mapping={bound}`"
        ));
        s.values.insert(
            bound,
            Value::Mapping(crate::gpu::mapping::Mapping {
                fusion: Some(name.clone()),
                tile: Some(rc.sizes.clone()),
                origin: Some(format!(
                    "tune {name} on {}, re-measured: {}",
                    tuned.device,
                    r.factor()
                )),
                ..Default::default()
            }),
        );
    }
    Ok(Value::Table(t))
}

/// `tune` on the GPU: block and vector sizes, coalescing as a filter, the GPU bench.
fn tune_gpu(
    s: &mut Session,
    a: &Args,
    name: &str,
    spec: &crate::gpu::spec::KernelSpec,
    reps: usize,
) -> Result<Value, Diagnostic> {
    use crate::gpu::bench::Options;
    use crate::tile::tune;
    let err = |e: crate::MapError| Diagnostic::at(e.to_string(), a.span());
    let blocks = a
        .kv_tuple("block")?
        .unwrap_or_else(|| vec![64, 128, 256, 512, 1024]);
    let vectors = a.kv_tuple("vector")?.unwrap_or_else(|| vec![1, 2, 4]);
    let (cands, rejected) = tune::launch_candidates(spec, &blocks, &vectors).map_err(err)?;
    let opts = Options {
        reps,
        warmups: 2,
        progress: false,
        ..Options::default()
    };
    let (device, bytes, copy, rows) =
        tune::tune_launches(spec, &cands, &opts, &mut |_, _, _| {}).map_err(err)?;
    let default = rows[0].timing.median_s;
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&x, &y| rows[x].timing.median_s.total_cmp(&rows[y].timing.median_s));
    let mut t = Table {
        title: Some(format!(
            "tune {name} on {device}: {} launches tried ({} filtered out), {bytes} bytes moved, every output verified",
            cands.len(),
            rejected.len()
        )),
        headers: ["rank", "mapping", "median ms", "GB/s", "% copy", "coalesced", "vs default"].map(String::from).to_vec(),
        rows: vec![],
        notes: vec![],
    };
    for (rank, &i) in order.iter().enumerate() {
        let m = &rows[i];
        t.rows.push(vec![
            (rank + 1).to_string(),
            match m.config {
                None => "default (block=128 vector=1)".to_string(),
                Some(c) => format!("block={} vector={}", c.block, c.vector),
            },
            format!("{:.4}", m.timing.median_s * 1e3),
            format!("{:.1}", bytes as f64 / m.timing.median_s / 1e9),
            format!("{:.1}", 100.0 * copy.median_s / m.timing.median_s),
            format!("{}/{}", m.coalesced.0, m.coalesced.1),
            format!("{:.2}x", default / m.timing.median_s),
        ]);
    }
    if let Some(&i) = order.iter().find(|&&i| rows[i].config.is_some()) {
        let c = rows[i].config.unwrap_or_default();
        let bound = format!("{}_best", crate::gpu::emit::c_ident(name));
        let speedup = default / rows[i].timing.median_s;
        // The summary names the table's rank 1: the default when it was fastest.
        let default_first = order.first().is_some_and(|&j| rows[j].config.is_none());
        t.notes.push(format!(
            "best: {}block={} vector={}, {speedup:.2}x the default; bound to `{bound}`: `emit {name} mapping={bound}`, `bench {name} mapping={bound}`",
            if default_first {
                "the default (block=128 vector=1), rank 1; the fastest other launch is "
            } else {
                ""
            },
            c.block,
            c.vector,
        ));
        s.values.insert(
            bound,
            Value::Mapping(crate::gpu::mapping::Mapping {
                fusion: Some(name.to_string()),
                config: c,
                origin: Some(format!(
                    "tune {name} on {device}: {speedup:.2}x the default"
                )),
                ..Default::default()
            }),
        );
    }
    Ok(Value::Table(t))
}

// ---- whole fusions: every instruction, the K loop, schedules, the space of tilings ----

/// The HLO computation a name stands for, and the instruction to start from: a fusion's
/// callee and its root, a computation and its root, or a loose instruction itself.
fn hlo_root<'s>(
    s: &'s Session,
    name: &str,
) -> Option<(&'s crate::hlo::Computation, crate::hlo::InstrId)> {
    use crate::hlo::workspace::Target;
    let module = &s.hlo.module;
    match s.hlo.resolve(name)? {
        Target::Computation(c) => Some((c, c.root)),
        Target::Instr(c, id) => {
            let ins = &c.instrs[id];
            match ins
                .attrs
                .calls
                .as_deref()
                .filter(|_| ins.opcode == "fusion")
                .and_then(|n| module.computation(n))
            {
                Some(f) => Some((f, f.root)),
                None => Some((c, id)),
            }
        }
    }
}

/// The HLO name the first argument gives, if it names HLO rather than a bound value.
fn hlo_name(s: &Session, a: &Args) -> Option<(String, crate::syntax::Span)> {
    match a.items().next() {
        Some(Arg::Word(w, sp)) if !s.values.contains_key(w) && s.hlo.resolve(w).is_some() => {
            Some((w.clone(), *sp))
        }
        _ => None,
    }
}

/// `k=64` or `k=(64, 32)`: the contraction's step sizes.
fn k_sizes(a: &Args) -> Result<Option<Vec<i64>>, Diagnostic> {
    let k = a.kv_tuple("k")?;
    if let Some(k) = &k {
        if let Some(z) = k.iter().find(|&&z| z < 1) {
            return Err(Diagnostic::at(
                format!("K step {z} is not positive"),
                a.kv("k").map_or(a.span(), |x| x.span()),
            ));
        }
    }
    Ok(k)
}

/// Concrete sizes only (for the commands that enumerate).
fn fixed_sizes(a: &Args) -> Result<Vec<i64>, Diagnostic> {
    sizes(a)?
        .into_iter()
        .map(|z| match z {
            Size::Fixed(v) => Ok(v),
            Size::Symbol(w) => Err(Diagnostic::at(
                format!("`{w}`: this command takes numbers as sizes; `tile` takes names"),
                a.kv("sizes").map_or(a.span(), |x| x.span()),
            )),
        })
        .collect()
}

/// The tiles of every instruction an HLO target reaches, over its iteration space.
fn fusion_tiles(
    s: &Session,
    a: &Args,
    name: &str,
    sizes: &[i64],
    k: Option<&[i64]>,
) -> Result<(tile::fusion::IterSpace, Vec<tile::fusion::InstrTile>), Diagnostic> {
    let (comp, root) = hlo_root(s, name).ok_or_else(|| {
        Diagnostic::at(
            format!("no instruction or computation named `{name}`"),
            a.span(),
        )
    })?;
    let mut all = sizes.to_vec();
    all.extend(k.unwrap_or(&[]));
    tile::fusion::tile_instructions(
        &s.hlo.module,
        comp,
        root,
        &all,
        k.is_some(),
        &Limits {
            max_points: CHECK_LIMIT,
        },
    )
    .map_err(|e| {
        Diagnostic::at(
            e,
            a.kv("k").or(a.kv("sizes")).map_or(a.span(), |x| x.span()),
        )
    })
}

/// `tile FUSION sizes=(...) [k=...] [at INSTR | every]`: tiles of instructions.
fn run_tile_fusion(s: &mut Session, a: &Args, name: &str) -> Result<Value, Diagnostic> {
    let sizes = fixed_sizes(a)?;
    let k = k_sizes(a)?;
    let (space, mut tiles) = fusion_tiles(s, a, name, &sizes, k.as_deref())?;
    let what = match a.after("at") {
        Some(Arg::Word(w, sp)) => {
            let w = w.strip_prefix('%').unwrap_or(w);
            tiles.retain(|t| t.name == w);
            if tiles.is_empty() {
                return Err(Diagnostic::at(
                    format!("`{w}` is not an instruction `{name}` reaches"),
                    *sp,
                ));
            }
            format!("`{w}` in {name}")
        }
        Some(other) => {
            return Err(Diagnostic::at(
                "`at` takes an instruction name, e.g. `at dot`",
                other.span(),
            ))
        }
        None if a.flag("every") => format!("every instruction of {name}"),
        None => {
            let root = tiles_root(&tiles);
            tiles.retain(|t| t.opcode == "parameter" || t.id == root);
            sort_parameters(s, name, &mut tiles);
            format!("{name} (its output and parameters)")
        }
    };
    let mut all = sizes.clone();
    all.extend(k.unwrap_or_default());
    for t in &tiles {
        if let Err(e) = &t.tile {
            if e.error.reason.starts_with("internal error") {
                return Err(Diagnostic::at(format!("{}: {}", t.name, e.error), a.span()));
            }
        }
    }
    Ok(Value::Table(crate::value::tile::instructions(
        &what, &space, &all, &tiles,
    )))
}

/// Parameters in parameter order (after the root, which stays first).
fn sort_parameters(s: &Session, name: &str, tiles: &mut [tile::fusion::InstrTile]) {
    let Some((comp, _)) = hlo_root(s, name) else {
        return;
    };
    let params = comp.parameters();
    let rank = |t: &tile::fusion::InstrTile| {
        if t.opcode == "parameter" {
            params.iter().position(|&p| p == t.id).unwrap_or(usize::MAX)
        } else {
            0
        }
    };
    if let Some((first, rest)) = tiles.split_first_mut() {
        let _ = first;
        rest.sort_by_key(rank);
    }
}

/// The root of a walk: the first instruction reached.
fn tiles_root(tiles: &[tile::fusion::InstrTile]) -> crate::hlo::InstrId {
    tiles.first().map_or(usize::MAX, |t| t.id)
}

/// `schedule FUSION|MAP sizes=(...) [k=...] [order=major-to-minor|transposed]`.
fn run_schedule(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    use tile::schedule::{self as sch, Order};
    let sizes = fixed_sizes(a)?;
    let k = k_sizes(a)?;
    let orders = match a.kv_word("order")?.as_deref() {
        None => vec![Order::MajorToMinor, Order::Transposed],
        Some("major-to-minor" | "major") => vec![Order::MajorToMinor],
        Some("transposed") => vec![Order::Transposed],
        Some(w) => {
            return Err(Diagnostic::at(
                format!("`order=` takes major-to-minor or transposed, not `{w}`"),
                a.kv("order").map_or(a.span(), |x| x.span()),
            ))
        }
    };
    // The tensors whose offsets each program needs, and the iteration space.
    let (what, space, tensors): (String, tile::fusion::IterSpace, Vec<(String, OperandTile)>) =
        match hlo_name(s, a) {
            Some((name, _)) => {
                let (space, mut tiles) = fusion_tiles(s, a, &name, &sizes, k.as_deref())?;
                sort_parameters(s, &name, &mut tiles);
                let mut out = Vec::new();
                for t in tiles.iter().filter(|t| t.opcode == "parameter") {
                    match &t.tile {
                        Ok(st) => {
                            for (i, x) in st.tiles.iter().enumerate() {
                                let label = if st.tiles.len() > 1 {
                                    format!("{} (map {i})", t.name)
                                } else {
                                    t.name.clone()
                                };
                                out.push((label, x.clone()));
                            }
                        }
                        Err(e) => {
                            return Err(Diagnostic::at(
                                format!("{}: {}", t.name, e.error),
                                a.span(),
                            ))
                        }
                    }
                }
                (name, space, out)
            }
            None => {
                let m = a.map(s, 0)?;
                let c = k.as_ref().map_or(0, |k| k.len());
                let pm = tile::fusion::promote(&m, c).map_err(|e| Diagnostic::at(e, a.span()))?;
                let ext: Vec<i64> = pm
                    .dims
                    .iter()
                    .map(|d| d.bounds.hi.saturating_add(1))
                    .collect();
                let n = m.dims.len();
                let space = tile::fusion::IterSpace {
                    out: ext[..n].to_vec(),
                    k: ext[n..].to_vec(),
                    dot: None,
                };
                let mut all = sizes.clone();
                all.extend(k.clone().unwrap_or_default());
                let x =
                    tile::derive(&pm, &all).map_err(|e| Diagnostic::at(e.to_string(), a.span()))?;
                (
                    "the map".to_string(),
                    space,
                    vec![("operand 0".to_string(), x)],
                )
            }
        };
    if sizes.len() != space.out.len() {
        return Err(Diagnostic::at(
            format!(
                "the output has {} dimension{} but sizes has {}",
                space.out.len(),
                if space.out.len() == 1 { "" } else { "s" },
                sizes.len()
            ),
            a.kv("sizes").map_or(a.span(), |x| x.span()),
        ));
    }
    let k = k.unwrap_or_default();
    let mut scheds = Vec::new();
    for o in orders {
        let sc = sch::schedule(&space.out, &sizes, &space.k, &k, o)
            .map_err(|e| Diagnostic::at(e, a.span()))?;
        let verdict = sch::check(&sc, CHECK_LIMIT);
        let maps = tensors
            .iter()
            .map(|(l, x)| (l.clone(), sch::operand_offsets(&sc, x)))
            .collect();
        scheds.push((sc, verdict, maps));
    }
    Ok(Value::Table(crate::value::tile::schedules(&what, &scheds)))
}

/// `tilings FUSION|MAP [k] [volume=N] [divide] [try=(...)] [max=N]`.
fn run_tilings(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let mut rules = tile::space::Rules::default();
    if let Some(v) = a.kv_int("volume")? {
        if v < 1 {
            return Err(Diagnostic::at(
                "`volume=` takes a positive number",
                a.span(),
            ));
        }
        rules.max_volume = Some(v);
    }
    rules.divide = a.flag("divide");
    rules.only = a.kv_tuple("try")?;
    if rules.only.is_some() {
        rules.power_of_two = false;
    }
    let shown = a.kv_int("max")?.unwrap_or(20).clamp(1, 100_000) as usize;
    let (what, extents, n_out, targets): (
        String,
        Vec<i64>,
        usize,
        Vec<(String, Vec<IndexingMap>)>,
    ) = match hlo_name(s, a) {
        Some((name, sp)) => {
            let (comp, root) = hlo_root(s, &name)
                .ok_or_else(|| Diagnostic::at(format!("no computation `{name}`"), sp))?;
            let reaches_dot = crate::hlo::fusion::reverse_topological(comp, &[root])
                .iter()
                .filter(|&&i| comp.instrs[i].opcode == "dot")
                .count()
                == 1;
            let (space, reached) =
                tile::fusion::instruction_maps(&s.hlo.module, comp, root, reaches_dot)
                    .map_err(|e| Diagnostic::at(e, sp))?;
            let targets = reached
                .into_iter()
                .map(|r| (comp.instrs[r.id].name.clone(), r.maps))
                .collect();
            (name, space.extents(), space.out.len(), targets)
        }
        None => {
            let m = a.map(s, 0)?;
            let c = if a.flag("k") { m.ranges.len() } else { 0 };
            let pm = tile::fusion::promote(&m, c).map_err(|e| Diagnostic::at(e, a.span()))?;
            let ext = pm
                .dims
                .iter()
                .map(|d| d.bounds.hi.saturating_add(1))
                .collect();
            (
                "the map".to_string(),
                ext,
                m.dims.len(),
                vec![("operand 0".to_string(), vec![pm])],
            )
        }
    };
    let names: Vec<String> = (0..extents.len())
        .map(|i| {
            if i < n_out {
                format!("ts{i}")
            } else if extents.len() - n_out == 1 {
                "tk".to_string()
            } else {
                format!("tk{}", i - n_out)
            }
        })
        .collect();
    let e = tile::space::enumerate(&targets, &extents, &rules, 20_000)
        .map_err(|e| Diagnostic::at(e, a.span()))?;
    let conds = tile::space::conditions(&targets, &extents, &names, &rules);
    Ok(Value::Table(crate::value::tile::tilings(
        &what, &names, &extents, &conds, &e, shown,
    )))
}
