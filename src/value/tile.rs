//! The tiling library's results as [`Table`] values (`tile`, `tile ... at`/`every`/`k=`,
//! `schedule`, `tilings`, `tune`): `crate::tile` computes the tiles, schedules, spaces and
//! timings; this file turns them into rows, once, for every command and every renderer.

use crate::tile::fusion::{InstrTile, IterSpace, SetTile};
use crate::tile::schedule::Schedule;
use crate::tile::space::Enumerated;
use crate::tile::OperandTile;
use crate::value::Table;

pub fn join(xs: &[i64]) -> String {
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `t0 in [0, 3], t1 in [0, 2], t2 in [0, 1] (t2 steps along K)`.
pub fn grid_text(space: &IterSpace, sizes: &[i64]) -> String {
    let n = space.out.len();
    let parts: Vec<String> = space
        .extents()
        .iter()
        .zip(sizes)
        .enumerate()
        .map(|(i, (&e, &z))| {
            let t = crate::expr::arith::ceil_div(e, z).unwrap_or(1);
            format!("t{i} in [0, {}]", t - 1)
        })
        .collect();
    let mut s = parts.join(", ");
    if !space.k.is_empty() {
        let ks: Vec<String> = (n..n + space.k.len()).map(|i| format!("t{i}")).collect();
        s.push_str(&format!(
            " ({} step{} along the contraction, K = {})",
            ks.join(", "),
            if ks.len() == 1 { "s" } else { "" },
            join(&space.k)
        ));
    }
    s
}

/// Rows `dim, offset, size, stride, clip` of one tile, the first labelled.
pub fn tile_rows(label: &str, extra: &[String], x: &OperandTile) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for j in 0..x.sizes.len() {
        let mut r: Vec<String> = if j == 0 {
            std::iter::once(label.to_string())
                .chain(extra.iter().cloned())
                .collect()
        } else {
            vec![String::new(); 1 + extra.len()]
        };
        r.extend([
            j.to_string(),
            x.offsets.show_expr(x.offsets.results[j]),
            x.sizes[j].to_string(),
            x.strides[j].to_string(),
            if x.clips[j].is_full() {
                String::new()
            } else {
                x.clips[j].to_string()
            },
        ]);
        rows.push(r);
    }
    if x.sizes.is_empty() {
        let mut r: Vec<String> = std::iter::once(label.to_string())
            .chain(extra.iter().cloned())
            .collect();
        r.extend(["-".to_string(), "scalar".to_string()]);
        rows.push(r);
    }
    rows
}

/// The mask of a tile, as a note, if it has one: the cut of a partial tile (linear
/// conditions), or the gaps of a coordinate that sums several element variables (the
/// conditions on remainders that `tile::derive` writes for them).
pub fn mask_note(label: &str, x: &OperandTile) -> Option<String> {
    if x.masks.is_empty() {
        return None;
    }
    let conds = |gaps: bool| -> Vec<String> {
        x.masks
            .iter()
            .filter(|m| m.0.has_div() == gaps)
            .map(|&(e, iv)| format!("{} in {iv}", x.map.show_expr(e)))
            .collect()
    };
    let (cut, gaps) = (conds(false), conds(true));
    let mut notes = Vec::new();
    if !cut.is_empty() {
        notes.push(format!(
            "{label}: mask {} (an element k of the box is read only where it holds: the last, partial tile)",
            cut.join(" and ")
        ));
    }
    if !gaps.is_empty() {
        notes.push(format!(
            "{label}: mask {} (an element k of the box is read only where it holds: the values a sum with gaps takes)",
            gaps.join(" and ")
        ));
    }
    Some(notes.join("\n"))
}

/// Drops the last column when it is empty everywhere.
fn drop_empty_last(t: &mut Table) {
    let last = t.headers.len() - 1;
    if t.rows
        .iter()
        .all(|r| r.get(last).is_none_or(|c| c.is_empty()))
    {
        t.headers.truncate(last);
        for r in &mut t.rows {
            r.truncate(last);
        }
    } else {
        t.notes.push(
            "clip: the tile is cut to this interval (the last, partial tile where a size does not divide its extent; the emitter's mask)"
                .into(),
        );
    }
}

/// The table of every instruction's tile (or of the ones `only` names).
pub fn instructions(what: &str, space: &IterSpace, sizes: &[i64], tiles: &[InstrTile]) -> Table {
    let n = space.out.len();
    let out_sizes = &sizes[..n];
    let k_sizes = &sizes[n..];
    let mut t = Table {
        title: Some(format!(
            "tiles of {what}: output tiles of ({}){}; {}",
            join(out_sizes),
            if k_sizes.is_empty() {
                String::new()
            } else {
                format!(", K steps of ({})", join(k_sizes))
            },
            grid_text(space, sizes)
        )),
        headers: [
            "instruction",
            "op",
            "users",
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
    let mut checked = 0u64;
    let mut unchecked = Vec::new();
    for it in tiles {
        let users = if it.users == 0 {
            "-".to_string()
        } else if it.users > 1 {
            format!("{} (shared)", it.users)
        } else {
            it.users.to_string()
        };
        match &it.tile {
            Err(e) => {
                t.rows.push(vec![
                    it.name.clone(),
                    it.opcode.clone(),
                    users,
                    "-".into(),
                    "not a tile".into(),
                ]);
                t.notes.push(format!("{}: {}", it.name, e.error));
            }
            Ok(st) => {
                push_set(&mut t, &it.name, &[it.opcode.clone(), users], st);
                match st.checked {
                    Some(c) => checked = checked.max(c),
                    None => unchecked.push(it.name.clone()),
                }
            }
        }
    }
    drop_empty_last(&mut t);
    if tiles.iter().any(|i| i.users > 1) {
        t.notes.push(
            "shared: an instruction with several users is reached through all of them, and tiled once (one tile that contains what every user reads)"
                .into(),
        );
    }
    if unchecked.is_empty() {
        t.notes.push(format!(
            "exact: each tile names exactly the elements the instruction's maps reach ({checked} tile{} enumerated)",
            if checked == 1 { "" } else { "s" }
        ));
    } else {
        t.notes.push(format!(
            "exactness not enumerated for {}: the domain is too large",
            unchecked.join(", ")
        ));
    }
    t
}

fn push_set(t: &mut Table, name: &str, extra: &[String], st: &SetTile) {
    for (i, x) in st.tiles.iter().enumerate() {
        let label = if st.tiles.len() > 1 {
            format!("{name} (map {i})")
        } else {
            name.to_string()
        };
        t.rows.extend(tile_rows(&label, extra, x));
        t.notes.push(format!("{label}: {}", x.map));
        if let Some(m) = mask_note(&label, x) {
            t.notes.push(m);
        }
    }
    if st.covers > 1 {
        t.notes.push(format!(
            "{name} is reached through {} maps; the tile shown contains the others",
            st.covers
        ));
    }
}

/// The schedules: per order, the program's tile index and each tensor's tile offsets.
pub fn schedules(
    what: &str,
    scheds: &[(
        Schedule,
        Result<u64, String>,
        Vec<(String, crate::map::IndexingMap)>,
    )],
) -> Table {
    let mut t = Table {
        title: scheds.first().map(|(s, _, _)| {
            let programs = s
                .grid
                .iter()
                .try_fold(1i64, |a, &g| a.checked_mul(g))
                .map_or("more than 2^63 programs".to_string(), |n| {
                    format!("{n} program{}", if n == 1 { "" } else { "s" })
                });
            format!(
                "schedules of {what}: a grid of ({}) tiles, {programs}{}",
                join(&s.grid),
                if s.ksteps.is_empty() {
                    String::new()
                } else {
                    format!(", each looping over ({}) K steps", join(&s.ksteps))
                }
            )
        }),
        headers: ["order", "tensor", "pid -> offsets"]
            .map(String::from)
            .to_vec(),
        rows: vec![],
        notes: vec![],
    };
    for (s, verdict, tensors) in scheds {
        t.rows.push(vec![
            s.order.name().into(),
            "tile index".into(),
            s.tile_index.to_string(),
        ]);
        t.rows
            .push(vec![String::new(), "output".into(), s.offsets.to_string()]);
        for (label, m) in tensors {
            t.rows
                .push(vec![String::new(), label.clone(), m.to_string()]);
        }
        t.notes.push(match verdict {
            Ok(1) => format!(
                "{}: checked by enumeration: the one program computes the grid's one tile",
                s.order.name()
            ),
            Ok(n) => format!(
                "{}: checked by enumeration: the {n} programs compute every tile of the grid exactly once",
                s.order.name()
            ),
            Err(e) => format!("{}: not checked: {e}", s.order.name()),
        });
    }
    t
}

/// The space of tilings: its conditions, then the valid tuples.
pub fn tilings(
    what: &str,
    names: &[String],
    extents: &[i64],
    conditions: &[(String, String)],
    e: &Enumerated,
    shown: usize,
) -> Table {
    let mut t = Table {
        title: Some(format!(
            "tilings of {what} over ({}) = ({}): {} valid of {} tried",
            names.join(", "),
            join(extents),
            e.valid.len(),
            e.valid.len() + e.rejected.len()
        )),
        headers: names.to_vec(),
        rows: vec![],
        notes: vec![],
    };
    for v in e.valid.iter().take(shown) {
        t.rows.push(v.iter().map(|x| x.to_string()).collect());
    }
    if e.valid.len() > shown {
        t.notes.push(format!(
            "... and {} more (max= shows more)",
            e.valid.len() - shown
        ));
    }
    t.notes.push(format!(
        "sizes tried: {}",
        names
            .iter()
            .zip(&e.options)
            .map(|(n, o)| format!("{n} in {{{}}}", join(o)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    t.notes.push("conditions:".into());
    for (who, c) in conditions {
        t.notes.push(format!("  {who}: {c}"));
    }
    if let Some((z, why)) = e.rejected.first() {
        t.notes.push(format!(
            "left out: {} tuple{}, e.g. ({}): {why}",
            e.rejected.len(),
            if e.rejected.len() == 1 { "" } else { "s" },
            join(z)
        ));
    }
    t
}

/// `tune` on the CPU: every tiling measured, ranked by median, then the summary that names
/// the table's rank 1 and the re-measurement of the fastest tiling against the default,
/// which is bound to `bound`.
#[allow(clippy::too_many_arguments)]
pub fn tune(
    name: &str,
    tuned: &crate::tile::tune::Tuned,
    tried: usize,
    valid: usize,
    n_rejected: usize,
    reps: i64,
    notes: Vec<String>,
    bound: &str,
) -> Table {
    let mut order: Vec<usize> = (0..tuned.rows.len()).collect();
    order.sort_by(|&x, &y| {
        tuned.rows[x]
            .timing
            .median_s
            .total_cmp(&tuned.rows[y].timing.median_s)
    });
    let mut t = Table {
        title: Some(format!(
            "tune {name} on {}: {} of {valid} valid tilings tried ({n_rejected} filtered out), {} bytes moved, {reps} interleaved round{}, every output verified",
            tuned.device,
            tried,
            tuned.bytes,
            if reps == 1 { "" } else { "s" }
        )),
        headers: ["rank", "mapping", "median ms", "GB/s", "% copy", "runs", "vs default", "interval"].map(String::from).to_vec(),
        rows: vec![],
        notes,
    };
    for (rank, &i) in order.iter().enumerate() {
        let m = &tuned.rows[i];
        let (vs, ci) = match &m.vs_default {
            None => ("-".to_string(), "-".to_string()),
            Some(r) => (
                match r.verdict() {
                    std::cmp::Ordering::Equal => format!("~ ({})", r.factor()),
                    _ => r.factor(),
                },
                format!("{:.2} to {:.2}", r.lo, r.hi),
            ),
        };
        t.rows.push(vec![
            (rank + 1).to_string(),
            match &m.sizes {
                None => "default (untiled loop)".to_string(),
                Some(z) => format!("tile=({})", join(z)),
            },
            crate::gpu::bench::ms(m.timing.median_s),
            format!("{:.2}", tuned.gbps(&m.timing)),
            format!("{:.1}", tuned.copy_pct(&m.timing)),
            m.min_run.map_or("-".into(), |r| format!("{r} B")),
            vs,
            ci,
        ]);
    }
    t.notes
        .push("runs: the shortest contiguous run any operand's tile reads (a line is 64 B)".into());
    t.notes.push("vs default: the median over rounds of default time / this time; interval: the sign test's, about 95% (less under 6 rounds); ~ when it contains 1 or has under 90%".into());
    if let Some(rc) = &tuned.recheck {
        let r = &rc.ratio;
        let held = r.verdict() == std::cmp::Ordering::Greater;
        // The summary names the table's rank 1: the default when it was fastest.
        let default_first = order
            .first()
            .is_some_and(|&i| tuned.rows[i].sizes.is_none());
        t.notes.push(format!(
            "best: {}; re-measured against the default: {}; {}",
            if default_first {
                format!(
                    "the default (untiled loop), rank 1; the fastest tiling is tile=({})",
                    join(&rc.sizes)
                )
            } else {
                format!("tile=({}), rank 1", join(&rc.sizes))
            },
            r.describe(),
            match (held, default_first) {
                (true, false) => "the win holds",
                (true, true) =>
                    "it wins there, though not in the table: rerun with more reps= to decide",
                (false, _) => "not a reliable win over the default",
            }
        ));
        t.notes.push(format!(
            "bound to `{bound}`: `emit {name} mapping={bound}`, `bench {name} mapping={bound}`"
        ));
    }
    t
}

/// `operand 0` for an operand number, the label itself otherwise (`output`).
pub fn section_name(label: &str) -> String {
    if label.starts_with(|c: char| c.is_ascii_digit()) {
        format!("operand {label}")
    } else {
        label.to_string()
    }
}

/// `tile ... sizes=(ts0, 8)`: per map, every case of its symbolic tile with the conditions
/// on the sizes, and what the enumeration found. `what` is the tiled thing (`the output`).
pub fn symbolic(
    what: &str,
    extents: &[i64],
    given: &[crate::tile::symbolic::Size],
    tiles: &[crate::tile::symbolic::MapTile],
) -> Table {
    use crate::tile::symbolic::{Size, CANNOT};
    let n = given.len();
    // The size symbols' names, by output dimension (a fixed size has a name no condition
    // can mention).
    let names: Vec<String> = given
        .iter()
        .enumerate()
        .map(|(i, z)| match z {
            Size::Symbol(w) => w.clone(),
            Size::Fixed(v) => format!("{v}#{i}"),
        })
        .collect();
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
            "symbolic tiles: the tile of {what} starts at ({}), each o_i a multiple of its size, sizes ({}); {}",
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
    let mut checked: Vec<String> = Vec::new();
    for mt in tiles {
        let label = &mt.label;
        let st = match &mt.tile {
            Ok(x) => x,
            Err(e) => {
                t.rows
                    .push(vec![label.clone(), "-".into(), "not a tile".into()]);
                t.notes.push(format!("{}: {e}", section_name(label)));
                continue;
            }
        };
        let show = |es: &[crate::expr::Expr], nm: &[String]| {
            es.iter()
                .map(|&e| crate::expr::display(e, nm).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (ci, c) in mt.cases().iter().enumerate() {
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
        match &mt.checked {
            Some(Ok(k)) => {
                checked.push(format!(
                    "{}: {} size choice{} enumerated{}; a case applies at {}, exact at each",
                    section_name(label),
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
                if let Some((z, count)) = &k.uncovered {
                    checked.push(format!(
                        "  {count} other choice{} also tile{} this operand concretely, e.g. ({}): `tile` with those numbers shows how",
                        if *count == 1 { "" } else { "s" },
                        if *count == 1 { "s" } else { "" },
                        join(z)
                    ));
                }
            }
            Some(Err(e)) if e.starts_with(CANNOT) => checked.push(format!(
                "{}: not checked: {e}; the cases are derived, not enumerated",
                section_name(label)
            )),
            // A case found wrong is the command's error, never a table.
            Some(Err(_)) | None => {}
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
    t
}

/// One operand of `utilization`.
pub enum Utilized {
    /// An operand whose map is undefined.
    Undefined(String),
    Measured {
        label: String,
        utilization: crate::tile::utilization::Utilization,
        /// The shape taken from the largest index read, when the operand's is unknown.
        implied_shape: Option<Vec<i64>>,
    },
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

/// `utilization`: per operand, elements read at least once and reads per element.
pub fn utilization(ops: &[Utilized]) -> Table {
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
    for op in ops {
        match op {
            Utilized::Undefined(label) => {
                t.rows
                    .push(vec![label.clone(), "-".into(), "UNDEFINED".into()]);
            }
            Utilized::Measured {
                label,
                utilization: u,
                implied_shape,
            } => {
                if let Some(sh) = implied_shape {
                    t.notes.push(format!(
                        "operand {label}: shape [{}] taken from the largest index read; give shape=(...) for the real one",
                        join(sh)
                    ));
                }
                t.rows.push(vec![
                    label.clone(),
                    u.elements.to_string(),
                    u.read.to_string(),
                    percent(u.read, u.elements),
                    u.reads.to_string(),
                    ratio(u.reads, u.read),
                    u.max_reads.to_string(),
                    u.method.to_string(),
                ]);
            }
        }
    }
    t
}

/// `tune` on the GPU: every launch ranked by median, and the best one other than the
/// default, bound to `bound`.
pub fn tune_gpu(name: &str, tuned: &crate::tile::tune::TunedLaunches, bound: &str) -> Table {
    let order = tuned.order();
    let default = tuned.default_s();
    let bytes = tuned.bytes;
    let mut t = Table {
        title: Some(format!(
            "tune {name} on {}: {} launches tried ({} filtered out), {bytes} bytes moved, every output verified",
            tuned.device, tuned.tried, tuned.rejected
        )),
        headers: ["rank", "mapping", "median ms", "GB/s", "% copy", "coalesced", "vs default"].map(String::from).to_vec(),
        rows: vec![],
        notes: vec![],
    };
    for (rank, &i) in order.iter().enumerate() {
        let m = &tuned.rows[i];
        t.rows.push(vec![
            (rank + 1).to_string(),
            match m.config {
                None => "default (block=128 vector=1)".to_string(),
                Some(c) => format!("block={} vector={}", c.block, c.vector),
            },
            format!("{:.4}", m.timing.median_s * 1e3),
            format!("{:.1}", bytes as f64 / m.timing.median_s / 1e9),
            format!("{:.1}", 100.0 * tuned.copy.median_s / m.timing.median_s),
            format!("{}/{}", m.coalesced.0, m.coalesced.1),
            format!("{:.2}x", default / m.timing.median_s),
        ]);
    }
    if let Some((c, speedup, default_first)) = tuned.best() {
        // The summary names the table's rank 1: the default when it was fastest.
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
    }
    t
}

/// One operand's tiles for `tile MAP sizes=(...)`.
pub struct OperandSet {
    pub label: String,
    /// How many maps read the operand.
    pub maps: usize,
    pub set: Result<crate::tile::fusion::SetTile, crate::tile::fusion::SetError>,
}

/// `tile MAP sizes=(...)`: the output tile (`what`), then each operand's tile (or why it
/// has none), with what the enumeration proved. Errors that are bugs never reach here.
pub fn operand_tiles(
    what: &str,
    first_column: &str,
    out: &OperandTile,
    sizes: &[i64],
    sets: &[OperandSet],
    check_limit: u64,
) -> Table {
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
            "{what}: offsets ({}), sizes ({}), strides ({}); {}",
            offsets.join(", "),
            join(sizes),
            join(&vec![1; sizes.len()]),
            tiles.join(", ")
        )),
        headers: [first_column, "dim", "offset", "size", "stride", "clip"]
            .map(String::from)
            .to_vec(),
        rows: vec![],
        notes: vec![],
    };
    let mut checked = 0u64;
    let mut unchecked = 0usize;
    for OperandSet {
        label: op_label,
        maps,
        set,
    } in sets
    {
        let set = match set {
            Ok(set) => set,
            Err(e) => {
                t.rows
                    .push(vec![op_label.clone(), "-".into(), "not a tile".into()]);
                t.notes
                    .push(format!("{}: {}", section_name(op_label), e.error));
                continue;
            }
        };
        for (n, x) in set.tiles.iter().enumerate() {
            let label = if set.tiles.len() > 1 {
                format!("{op_label} (map {n})")
            } else {
                op_label.clone()
            };
            t.rows.extend(tile_rows(&label, &[], x));
            t.notes.push(format!("{}: {}", section_name(&label), x.map));
            if let Some(note) = mask_note(&section_name(&label), x) {
                t.notes.push(note);
            }
        }
        if set.covers > 1 {
            t.notes.push(format!(
                "operand {op_label} is read through {} maps; the tile shown contains the others",
                set.covers
            ));
        }
        match set.checked {
            Some(c) => checked = checked.max(c),
            None => unchecked += maps,
        }
    }
    if unchecked == 0 {
        t.notes.push(format!(
            "exact: each tile names exactly the elements the maps read ({checked} tile{} enumerated)",
            if checked == 1 { "" } else { "s" }
        ));
    } else {
        t.notes.push(format!("exactness not enumerated for {unchecked} map(s): the domain is larger than {check_limit} points"));
    }
    if t.rows.iter().all(|r| r.get(5).is_none_or(|c| c.is_empty())) {
        t.headers.truncate(5);
        for r in &mut t.rows {
            r.truncate(5);
        }
    }
    t
}
