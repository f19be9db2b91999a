//! Commands on tiles: `tile` (symbolic tiles of every operand), `utilization` (how much of
//! each operand the output reads, and how often).

use super::commands::Command;
use super::{Args, Session};
use crate::map::{IndexingMap, Limits};
use crate::syntax::{Arg, Diagnostic};
use crate::tile::symbolic::{self, Size};
use crate::tile::{self, OperandTile};
use crate::value::tile::{join, section_name};
use crate::value::Value;

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
    if let Some((w, wspan)) = hlo_name(s, a) {
        return hlo_operands(s, a, &w, wspan);
    }
    let from = match a.after("from") {
        Some(Arg::Int(k, ks)) => Some((*k, *ks)),
        _ => None,
    };
    match a.value(s, 0)? {
        Value::Map(m) | Value::Explained { map: m, .. } => {
            // A bare map is one operand's: `from 0` walks it, any other K names nothing.
            if let Some((k, ks)) = from.filter(|&(k, _)| k != 0) {
                return Err(Diagnostic::at(
                    format!("a map has one operand, so there is no operand {k}"),
                    ks,
                )
                .with_help(
                    "`from 0` tiles the map's operand; `from K` on a fusion tiles its operand K",
                ));
            }
            let out = extents(&m);
            Ok((
                vec![Operand {
                    label: "0".into(),
                    maps: vec![m],
                    shape: None,
                }],
                Some(out),
            ))
        }
        Value::Indexing(ix) => {
            // `from K` labels the maps as operand K's: they must start from it.
            if let Some((k, ks)) = from {
                let want = format!("operand {k} of ");
                if !ix.title.starts_with(&want) {
                    return Err(Diagnostic::at(
                        format!(
                            "these maps start from the {}, not from operand {k}",
                            ix.title
                        ),
                        ks,
                    )
                    .with_help(format!(
                        "`indexing NAME from {k}` gives the maps from operand {k}"
                    )));
                }
            }
            Ok((
                ix.operands
                    .iter()
                    .map(|o| Operand {
                        label: o.index.to_string(),
                        maps: o.maps.clone(),
                        shape: None,
                    })
                    .collect(),
                None,
            ))
        }
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
        let Some((comp, instr)) = hlo_target(s, name) else {
            return Err(no_hlo_named(name, span));
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
                    .map_err(|e| Diagnostic::at(e, a.kv_span("k")))?;
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
    let first = first_map(a, &ops)?;
    if first.dims.len() != sizes.len() {
        return Err(sizes_mismatch(
            a,
            &tiled_what(a),
            first.dims.len(),
            sizes.len(),
        ));
    }
    // The output's extents: from the HLO, else from the map's dimensions.
    let extents: Vec<i64> = match out_shape {
        Some(sh) if sh.len() == sizes.len() => sh,
        _ => extents(first),
    };
    // A dimension without bounds has no tiles: said of it, at the map (the output tile over
    // its saturated extent said "tile offsets along d0 overflow").
    if let Some(d) = first.dims.iter().find(|d| d.bounds.is_full()) {
        return Err(Diagnostic::at(
            format!(
                "not representable as a tile: {} has no bounds, so it cannot be cut into tiles",
                d.name
            ),
            a.items().next().map_or(a.span(), Arg::span),
        )
        .with_help("give every dimension a bound in `domain:`"));
    }
    let out =
        tile::output_tile(&extents, &sizes).map_err(|e| Diagnostic::at(e.to_string(), a.span()))?;
    let n_out = sizes
        .len()
        .saturating_sub(a.kv_tuple("k")?.map_or(0, |k| k.len()));
    s.notes.extend(clipped_note(&sizes, &extents, n_out));
    let single_map = ops.len() == 1 && ops[0].maps.len() == 1;
    let limits = Limits {
        max_points: CHECK_LIMIT,
    };
    // The library derives every map's tile, checks it by enumeration, and keeps one tile
    // when it contains the others.
    let sets: Vec<crate::value::tile::OperandSet> = ops
        .iter()
        .map(|op| crate::value::tile::OperandSet {
            label: op.label.clone(),
            maps: op.maps.len(),
            set: tile::fusion::tile_set(&op.maps, &sizes, &limits),
        })
        .collect();
    for crate::value::tile::OperandSet { label, set, .. } in &sets {
        if let Err(e) = set {
            // A wrong tile is a bug in ixmap; say so rather than print it as fact.
            if single_map || e.error.to_string().starts_with("internal error") {
                let why = if single_map {
                    e.error.to_string()
                } else {
                    format!("operand {label}: {}", e.error)
                };
                return Err(Diagnostic::at(why, a.span()));
            }
        }
    }
    let (what, first_column) = match a.after("from") {
        Some(Arg::Int(k, _)) => (format!("tile of operand {k}"), "reaches"),
        _ if a.kv("k").is_some() => (
            "iteration tile (the output's dimensions, then the K steps)".to_string(),
            "operand",
        ),
        _ => ("output tile".to_string(), "operand"),
    };
    Ok(Value::Table(crate::value::tile::operand_tiles(
        &what,
        first_column,
        &out,
        &sizes,
        &sets,
        CHECK_LIMIT,
    )))
}

/// `tile ... sizes=(ts0, 8)`: per operand, every case of its symbolic tile with the
/// conditions on the sizes, each case checked by enumeration at concrete sizes.
fn run_tile_symbolic(
    a: &Args,
    given: &[Size],
    ops: &[Operand],
    out_shape: Option<Vec<i64>>,
) -> Result<Value, Diagnostic> {
    let span = a.kv_span("sizes");
    let first = first_map(a, ops)?;
    let n = first.dims.len();
    if n != given.len() {
        return Err(sizes_mismatch(a, &tiled_what(a), n, given.len()));
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
    // A repeated size name would make two dimensions one size.
    let mut names: Vec<&String> = Vec::new();
    for z in given {
        if let Size::Symbol(w) = z {
            if names.contains(&w) {
                return Err(Diagnostic::at(
                    format!("`{w}` names the size of two dimensions; give each its own symbol"),
                    span,
                ));
            }
            names.push(w)
        }
    }
    let limits = Limits {
        max_points: CHECK_LIMIT,
    };
    let maps: Vec<(String, IndexingMap)> = ops
        .iter()
        .flat_map(|op| {
            op.maps
                .iter()
                .enumerate()
                .map(|(mi, m)| (map_label(&op.label, mi, op.maps.len()), m.clone()))
        })
        .collect();
    let tiles = symbolic::tile_maps(&maps, &extents, given, &limits);
    let single_map = ops.len() == 1 && ops[0].maps.len() == 1;
    for mt in &tiles {
        if let (Err(e), true) = (&mt.tile, single_map) {
            return Err(Diagnostic::at(
                format!("not representable as a tile with these symbolic sizes: {e}"),
                span,
            ));
        }
        if let Some(Err(e)) = &mt.checked {
            if !e.starts_with(symbolic::CANNOT) {
                return Err(Diagnostic::at(
                    format!(
                        "internal error: the symbolic tile of {} is wrong: {e}",
                        section_name(&mt.label)
                    ),
                    a.span(),
                ));
            }
        }
    }
    Ok(Value::Table(crate::value::tile::symbolic(
        &tiled_what(a),
        &extents,
        given,
        &tiles,
    )))
}

/// What `tile` cuts: the output, or with `from K` operand K.
fn tiled_what(a: &Args) -> String {
    match a.after("from") {
        Some(Arg::Int(k, _)) => format!("operand {k}"),
        _ => "the output".to_string(),
    }
}

/// `sizes=` gives `given` sizes for `what`, which has `n` dimensions.
fn sizes_mismatch(a: &Args, what: &str, n: usize, given: usize) -> Diagnostic {
    Diagnostic::at(
        format!(
            "{what} has {n} dimension{} but sizes has {given}",
            if n == 1 { "" } else { "s" }
        ),
        a.kv_span("sizes"),
    )
}

/// Sizes larger than their dimension's extent tile it once, clipped to the extent: said
/// rather than clamped unsaid (`sizes=(128)` on 64 rows is one tile of 64, and the 128 in the
/// output tile reads as a mistake). The output's sizes come first, then k='s; `n_out` of them
/// are the output's. None when every size fits.
fn clipped_note(sizes: &[i64], extents: &[i64], n_out: usize) -> Option<String> {
    let over: Vec<String> = sizes
        .iter()
        .zip(extents)
        .enumerate()
        .filter(|(_, (&z, &x))| x >= 1 && z > x)
        .map(|(i, (z, x))| {
            let (key, what) = if i < n_out {
                ("sizes", format!("dimension {i}"))
            } else {
                ("k", format!("contraction dimension {}", i - n_out))
            };
            format!("{key}= {z} is larger than {what}'s extent {x}: one tile, clipped to {x}")
        })
        .collect();
    (!over.is_empty()).then(|| over.join("; "))
}

/// The first map of the operands (whose dimensions are the output's).
fn first_map<'o>(a: &Args, ops: &'o [Operand]) -> Result<&'o IndexingMap, Diagnostic> {
    ops.iter()
        .flat_map(|o| o.maps.first())
        .next()
        .ok_or_else(|| Diagnostic::at("nothing to tile: no operand has a map", a.span()))
}

/// A map's dimension extents (`hi + 1` of each).
fn extents(m: &IndexingMap) -> Vec<i64> {
    m.dims
        .iter()
        .map(|d| d.bounds.hi.saturating_add(1))
        .collect()
}

/// The tile sizes of the output's dimensions, then the K steps.
fn with_k(sizes: &[i64], k: Option<&[i64]>) -> Vec<i64> {
    [sizes, k.unwrap_or_default()].concat()
}

/// The row label of map `i` of `n` of an operand: the operand's label when it has one map.
fn map_label(label: &str, i: usize, n: usize) -> String {
    if n > 1 {
        format!("{label} (map {i})")
    } else {
        label.to_string()
    }
}

fn run_utilization(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    use crate::value::tile::Utilized;
    let (ops, _) = operands(s, a)?;
    let shape_arg = a.kv_tuple_positive("shape")?;
    // shape= is the one operand's shape where nothing else gives it (a bare map): where the
    // operands have their shapes, or there are several, it would be ignored.
    if shape_arg.is_some() && !(ops.len() == 1 && ops[0].shape.is_none()) {
        let why = if ops.iter().all(|o| o.shape.is_some()) {
            "the operands have their shapes (from the HLO)".to_string()
        } else {
            format!("it gives one operand's shape, and there are {}", ops.len())
        };
        return Err(Diagnostic::at(
            format!("`shape=` does not apply: {why}"),
            a.kv_span("shape"),
        )
        .with_help("shape= gives the shape of a bare map's operand"));
    }
    let mut rows = Vec::new();
    for op in &ops {
        if op.maps.is_empty() || op.maps.iter().any(|m| m.is_undefined()) {
            rows.push(Utilized::Undefined(op.label.clone()));
            continue;
        }
        let (shape, implied) = match (&op.shape, &shape_arg) {
            (Some(s), _) => (s.clone(), false),
            (None, Some(s)) if ops.len() == 1 => (s.clone(), false),
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
                (sh, true)
            }
        };
        let given = !implied && op.shape.is_none();
        let u = tile::utilization(&op.maps, &shape, &Limits::default()).map_err(|e| match e {
            // The shape given does not fit the map (its rank, or what the map reads).
            crate::MapError::Other(m) if given => Diagnostic::at(m, a.kv_span("shape")),
            e => super::cmd_map::map_err(e, a),
        })?;
        rows.push(Utilized::Measured {
            label: op.label.clone(),
            utilization: u,
            implied_shape: implied.then_some(shape),
        });
    }
    Ok(Value::Table(crate::value::tile::utilization(&rows)))
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
    let device_span = a.kv_span("device");
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
    let reps = a.kv_int_in("reps", 1, 1000)?.unwrap_or(5);
    let max = a.kv_int_in("max", 1, 1000)?.unwrap_or(12);
    // Sizes to try: a size under 1 is no tiling, an error where it stands rather than a
    // candidate dropped unsaid.
    let user_tiles = a.kv_tuple_positive("tile")?;
    for key in ["block", "vector"] {
        a.kv_tuple_positive(key)?;
    }
    // 0: every core
    let threads = a.kv_int_in("threads", 0, 1024)?.unwrap_or(0);
    if on_gpu {
        // what the GPU tuner does not read is said, as block= and vector= are on the CPU
        for (key, what) in [
            ("tile", "tile= is the CPU kernel's tiling"),
            ("max", "max= caps the CPU tilings tried"),
            ("threads", "threads= is the CPU kernel's thread count"),
        ] {
            if a.kv(key).is_some() {
                s.notes.push(format!(
                    "{what}; on the GPU the launch (block=, vector=) is tuned"
                ));
            }
        }
        return tune_gpu(s, a, &name, &spec, reps as usize);
    }
    let mut notes = Vec::new();
    if a.kv("block").is_some() || a.kv("vector").is_some() {
        notes.push(
            "block= and vector= are GPU launch parameters; on the CPU the tiling is tuned"
                .to_string(),
        );
    }
    // tile= sizes an output dimension does not try (over its extent, or not dividing it:
    // the CPU kernel's loops have no masks) are said, or an error if none tries them
    if let Some(u) = &user_tiles {
        let dims = &spec.output.dims;
        let names: Vec<String> = (0..dims.len()).map(|i| format!("dimension {i}")).collect();
        notes.extend(
            sizes_not_tried(a, "tile", u, &names, dims, &tune::rules(Some(u))).map_err(|d| {
                if d.message.contains("does not divide") {
                    d.with_help("the CPU kernel's loops have no masks: its tiles divide the output's extents")
                } else {
                    d
                }
            })?,
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
            a.kv_span("tile"),
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
    let bound = format!("{}_best", crate::gpu::emit::c_ident(&name));
    let t = crate::value::tile::tune(
        &name,
        &tuned,
        cands.len(),
        valid,
        n_rejected,
        reps,
        notes,
        &bound,
    );
    if let Some(rc) = &tuned.recheck {
        s.values.insert(
            bound,
            Value::Mapping(crate::gpu::mapping::Mapping {
                fusion: Some(name.clone()),
                tile: Some(rc.sizes.clone()),
                origin: Some(format!(
                    "tune {name} on {}, re-measured: {}",
                    tuned.device,
                    rc.ratio.factor()
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
    let tuned = tune::TunedLaunches {
        device,
        bytes,
        copy,
        rows,
        tried: cands.len(),
        rejected: rejected.len(),
    };
    let bound = format!("{}_best", crate::gpu::emit::c_ident(name));
    if let Some((config, speedup, _)) = tuned.best() {
        s.values.insert(
            bound.clone(),
            Value::Mapping(crate::gpu::mapping::Mapping {
                fusion: Some(name.to_string()),
                config,
                origin: Some(format!(
                    "tune {name} on {}: {speedup:.2}x the default",
                    tuned.device
                )),
                ..Default::default()
            }),
        );
    }
    Ok(Value::Table(crate::value::tile::tune_gpu(
        name, &tuned, &bound,
    )))
}

// ---- whole fusions: every instruction, the K loop, schedules, the space of tilings ----

/// The HLO computation a name stands for: a computation, or a fusion's callee (with no
/// instruction), or a loose instruction's computation and the instruction.
fn hlo_target<'s>(
    s: &'s Session,
    name: &str,
) -> Option<(&'s crate::hlo::Computation, Option<crate::hlo::InstrId>)> {
    use crate::hlo::workspace::Target;
    match s.hlo.resolve(name)? {
        Target::Computation(c) => Some((c, None)),
        Target::Instr(c, id) => Some(match s.hlo.module.fused_computation(&c.instrs[id]) {
            Some(f) => (f, None),
            None => (c, Some(id)),
        }),
    }
}

/// The HLO computation a name stands for, and the instruction to start from: a fusion's
/// callee and its root, a computation and its root, or a loose instruction itself.
fn hlo_root<'s>(
    s: &'s Session,
    name: &str,
) -> Option<(&'s crate::hlo::Computation, crate::hlo::InstrId)> {
    hlo_target(s, name).map(|(c, id)| (c, id.unwrap_or(c.root)))
}

/// The error for a name that is no HLO instruction or computation.
fn no_hlo_named(name: &str, span: crate::syntax::Span) -> Diagnostic {
    Diagnostic::at(
        format!("no instruction or computation named `{name}`"),
        span,
    )
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
                a.kv_span("k"),
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
                a.kv_span("sizes"),
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
    let (comp, root) = hlo_root(s, name).ok_or_else(|| no_hlo_named(name, a.span()))?;
    tile::fusion::tile_instructions(
        &s.hlo.module,
        comp,
        root,
        &with_k(sizes, k),
        k.is_some(),
        &Limits {
            max_points: CHECK_LIMIT,
        },
    )
    .map_err(|e| Diagnostic::at(e, a.kv("k").or(a.kv("sizes")).map_or(a.span(), Arg::span)))
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
    let all = with_k(&sizes, k.as_deref());
    s.notes
        .extend(clipped_note(&all, &space.extents(), space.out.len()));
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
                a.kv_span("order"),
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
                                out.push((map_label(&t.name, i, st.tiles.len()), x.clone()));
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
                if sizes.len() != m.dims.len() {
                    return Err(sizes_mismatch(a, "the map", m.dims.len(), sizes.len()));
                }
                let c = k.as_ref().map_or(0, |k| k.len());
                let pm =
                    tile::fusion::promote(&m, c).map_err(|e| Diagnostic::at(e, a.kv_span("k")))?;
                let ext = extents(&pm);
                let n = m.dims.len();
                let space = tile::fusion::IterSpace {
                    out: ext[..n].to_vec(),
                    k: ext[n..].to_vec(),
                    dot: None,
                };
                let x = tile::derive(&pm, &with_k(&sizes, k.as_deref()))
                    .map_err(|e| Diagnostic::at(e.to_string(), a.span()))?;
                (
                    "the map".to_string(),
                    space,
                    vec![("operand 0".to_string(), x)],
                )
            }
        };
    if sizes.len() != space.out.len() {
        return Err(sizes_mismatch(
            a,
            "the output",
            space.out.len(),
            sizes.len(),
        ));
    }
    let k = k.unwrap_or_default();
    s.notes.extend(clipped_note(
        &with_k(&sizes, Some(&k)),
        &space.extents(),
        space.out.len(),
    ));
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
                a.kv_span("volume"),
            ));
        }
        rules.max_volume = Some(v);
    }
    rules.divide = a.flag("divide");
    rules.only = a.kv_tuple_positive("try")?;
    if rules.only.is_some() {
        rules.power_of_two = false;
    }
    let shown = a.kv_int_in("max", 1, 100_000)?.unwrap_or(20) as usize;
    let (what, extents, n_out, targets): (
        String,
        Vec<i64>,
        usize,
        Vec<(String, Vec<IndexingMap>)>,
    ) = match hlo_name(s, a) {
        Some((name, sp)) => {
            let (comp, root) = hlo_root(s, &name)
                .ok_or_else(|| Diagnostic::at(format!("no computation `{name}`"), sp))?;
            let dots = crate::hlo::fusion::reverse_topological(comp, &[root])
                .iter()
                .filter(|&&i| matches!(comp.instrs[i].opcode.as_str(), "dot" | "scaled-dot"))
                .count();
            let reaches_dot = dots == 1;
            // A fusion's one dot adds its contraction with or without `k`; `k` where there
            // is no one dot to contract is an error, as `k=` is for `tile` and `schedule`.
            if let (Some(ksp), false) = (a.flag_span("k"), reaches_dot) {
                return Err(Diagnostic::at(
                    if dots == 0 {
                        format!("`k` tiles a dot's contraction, and `{name}` reaches no dot (a dot inside a nested fusion is not looked into)")
                    } else {
                        format!("`k` tiles one dot's contraction, and `{name}` reaches {dots} dots")
                    },
                    ksp,
                ));
            }
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
            let c = match a.flag_span("k") {
                Some(ksp) if m.ranges.is_empty() => {
                    return Err(Diagnostic::at(
                        "`k` makes the map's range variables a contraction, and it has none",
                        ksp,
                    ))
                }
                Some(_) => m.ranges.len(),
                None => 0,
            };
            let pm = tile::fusion::promote(&m, c).map_err(|e| Diagnostic::at(e, a.span()))?;
            (
                "the map".to_string(),
                extents(&pm),
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
    // A dimension with no elements has no tile sizes: nothing to enumerate, said so (its
    // options were empty and `divide` divided by its extent 0).
    if let Some((n, &x)) = names.iter().zip(&extents).find(|(_, &x)| x < 1) {
        let at = a.items().next().map_or(a.span(), Arg::span);
        return Err(Diagnostic::at(
            format!("{what} has no tilings: {n} has extent {x}, no elements to tile"),
            at,
        ));
    }
    let left_out = match &rules.only {
        Some(only) => sizes_not_tried(a, "try", only, &names, &extents, &rules)?,
        None => Vec::new(),
    };
    let e = tile::space::enumerate(&targets, &extents, &rules, 20_000)
        .map_err(|e| Diagnostic::at(e, a.span()))?;
    let conds = tile::space::conditions(&targets, &extents, &names, &rules);
    let mut t = crate::value::tile::tilings(&what, &names, &extents, &conds, &e, shown);
    // what try= asked for and a dimension does not try, next to the sizes it does
    let at = t
        .notes
        .iter()
        .position(|n| n.starts_with("sizes tried:"))
        .map_or(t.notes.len(), |i| i + 1);
    t.notes.splice(at..at, left_out);
    Ok(Value::Table(t))
}

/// The sizes of `key=(...)` some dimension leaves out (larger than its extent, or not
/// dividing it where sizes must), said rather than dropped unsaid: a size no dimension tries
/// is an error at it, naming each dimension's extent; one that only some leave out is a
/// note naming them. `names` and `extents` are the dimensions', in order.
fn sizes_not_tried(
    a: &Args,
    key: &str,
    sizes: &[i64],
    names: &[String],
    extents: &[i64],
    rules: &tile::space::Rules,
) -> Result<Vec<String>, Diagnostic> {
    let mut notes = Vec::new();
    for (i, &z) in sizes.iter().enumerate() {
        let skipped: Vec<String> = names
            .iter()
            .zip(extents)
            .filter_map(|(n, &x)| {
                tile::space::why_not_tried(z, x, rules).map(|why| format!("{n} ({why})"))
            })
            .collect();
        if skipped.is_empty() {
            continue;
        }
        if skipped.len() == extents.len() {
            return Err(Diagnostic::at(
                format!(
                    "`{key}=` size {z} is tried along no dimension: {}",
                    skipped.join(", ")
                ),
                a.kv_item_span(key, i),
            ));
        }
        notes.push(format!(
            "`{key}=` size {z} is not tried along {}",
            skipped.join(", ")
        ));
    }
    Ok(notes)
}
