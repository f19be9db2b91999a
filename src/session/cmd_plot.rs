//! `plot`: pictures of access patterns. For a map from output elements (or thread and
//! block ids) to the elements of an input, it draws both sides as grids: each dimension
//! point in its own colour on the left (or grouped by one dimension with `color=DIM`), and
//! on the right every input element in the colour of whoever reads it.
//!
//! ```text
//! plot (d0) -> (d0 floordiv 2), domain: d0 in [0, 7]
//!   output: 01234567        input: ****      each input element is read by two outputs
//! plot m th_x=0 color=s0    fix a dimension (one thread, one block), colour by another
//! plot m to access.svg      write the SVG file instead of showing it
//! ```
//!
//! The result is a [`Value::Plot`]: the notebook shows it as SVG, the REPL as characters.

use super::commands::Command;
use super::{commands, Args, Session};
use crate::interval::Interval;
use crate::map::IndexingMap;
use crate::map::{DomainPoints, Limits};
use crate::syntax::{Arg, Diagnostic};
use crate::syntax::{ArgGroup, CommandCall};
use crate::value::{Grid, Plot, Value};
use std::collections::BTreeSet;

pub static COMMANDS: [Command; 1] = [Command {
    name: "plot",
    usage: "plot MAP|OP [operand=K] [at (i, ...)] [DIM=v ...] [color=VAR[/N]] [sector=N] [to FILE.svg]",
    summary: "a picture of which input elements each output element (or thread) reads, coloured by reader",
    example: "plot (d0, d1) -> (d1, d0 floordiv 2), domain: d0 in [0, 7], d1 in [0, 3] color=d0",
    run: plot,
}];

/// A single axis longer than this wraps into rows of this many cells (a warp).
const WRAP: u64 = 32;

/// Most cells one side of a picture may have.
const MAX_CELLS: u64 = 16_384;

fn too_big(what: &str, cells: u64, a: &Args) -> Diagnostic {
    Diagnostic::at(
        format!("the {what} has {cells} cells, more than the {MAX_CELLS} a picture can show"),
        a.span(),
    )
    .with_help("fix some dimensions (e.g. `d0=0`) or plot a smaller domain")
}

/// Lays out a box of axes as a grid: the last axis across, the others flattened down.
struct Layout {
    bounds: Vec<Interval>,
    rows: u64,
    cols: u64,
}

impl Layout {
    fn new(bounds: Vec<Interval>) -> Option<Layout> {
        let sizes: Vec<u64> = bounds.iter().map(|b| b.size()).collect::<Option<_>>()?;
        if let [n] = sizes[..] {
            // One long axis wraps into rows of WRAP (for thread ids: one warp per row).
            if n > WRAP {
                let rows = n.div_ceil(WRAP);
                // the cell count must fit too (a range of 2^64 - 1 points does not)
                rows.checked_mul(WRAP)?;
                return Some(Layout {
                    bounds,
                    rows,
                    cols: WRAP,
                });
            }
        }
        let cols = sizes.last().copied().unwrap_or(1);
        let rows = sizes
            .iter()
            .rev()
            .skip(1)
            .try_fold(1u64, |acc, &s| acc.checked_mul(s))?;
        rows.checked_mul(cols)?;
        Some(Layout { bounds, rows, cols })
    }
    /// The cell of a point of the box; `None` for a point outside it (never expected: the
    /// box bounds every point drawn; checked rather than trusted, with no arithmetic that
    /// can wrap).
    fn cell(&self, p: &[i64]) -> Option<usize> {
        let n = self.bounds.len();
        if n == 0 {
            return Some(0);
        }
        let offset = |b: &Interval, x: i64| -> Option<u64> {
            if !b.contains(x) {
                return None;
            }
            u64::try_from(i128::from(x) - i128::from(b.lo)).ok()
        };
        let mut row: u64 = 0;
        for (b, &x) in self.bounds[..n - 1].iter().zip(p) {
            row = row.checked_mul(b.size()?)?.checked_add(offset(b, x)?)?;
        }
        let last = offset(&self.bounds[n - 1], *p.get(n - 1)?)?;
        let cell = row.checked_mul(self.cols)?.checked_add(last)?;
        usize::try_from(cell).ok()
    }
    fn grid(&self, title: String, names: &[String]) -> Grid {
        let n = names.len();
        if n == 1 && self.rows > 1 {
            let lo = self.bounds[0].lo;
            let name = if lo == 0 {
                names[0].clone()
            } else {
                format!("({} - {lo})", names[0])
            };
            return Grid {
                title,
                row_axis: format!("{name} floordiv {WRAP}"),
                col_axis: format!("{name} mod {WRAP}"),
                rows: self.rows as usize,
                cols: self.cols as usize,
                cells: vec![Vec::new(); (self.rows * self.cols) as usize],
                ..Grid::default()
            };
        }
        Grid {
            title,
            row_axis: match n {
                0 | 1 => "(one row)".into(),
                2 => names[0].clone(),
                _ => format!("({}) row-major", names[..n - 1].join(", ")),
            },
            col_axis: names.last().cloned().unwrap_or_else(|| "(one cell)".into()),
            row0: if n == 2 { self.bounds[0].lo } else { 0 },
            col0: self.bounds.last().map_or(0, |b| b.lo),
            rows: self.rows as usize,
            cols: self.cols as usize,
            cells: vec![Vec::new(); (self.rows * self.cols) as usize],
            sector: 0,
        }
    }
}

/// Rows or columns kept around the part of a grid that is read, when the picture is cut.
const CROP_MARGIN: usize = 1;

/// Cuts a large grid down to the rows and columns that are read (and a margin), when they
/// are at most half of it: `plot w at (1, 2)` reads 8 elements of an 80 x 16 input, and the
/// picture shows those, not 80 rows. Returns the note that says what was cut.
fn crop(g: &mut Grid) -> Option<String> {
    let read = |r: usize, c: usize| !g.cells[r * g.cols + c].is_empty();
    let rows: Vec<usize> = (0..g.rows)
        .filter(|&r| (0..g.cols).any(|c| read(r, c)))
        .collect();
    let cols: Vec<usize> = (0..g.cols)
        .filter(|&c| (0..g.rows).any(|r| read(r, c)))
        .collect();
    let (&r0, &r1) = (rows.first()?, rows.last()?);
    let (&c0, &c1) = (cols.first()?, cols.last()?);
    let span = |lo: usize, hi: usize, n: usize| -> (usize, usize) {
        if n > 16 && 2 * (hi - lo + 1) <= n {
            (
                lo.saturating_sub(CROP_MARGIN),
                (hi + CROP_MARGIN).min(n - 1),
            )
        } else {
            (0, n - 1)
        }
    };
    let (ra, rb) = span(r0, r1, g.rows);
    let (ca, cb) = span(c0, c1, g.cols);
    if (ra, rb, ca, cb) == (0, g.rows - 1, 0, g.cols - 1) {
        return None;
    }
    // "rows 3 to 9 of 0 to 31" for an axis that is cropped.
    let cropped = |what: &str, (a, b): (usize, usize), first: i64, n: usize| {
        ((a, b) != (0, n - 1)).then(|| {
            format!(
                "{what} {} to {} of {first} to {}",
                first + a as i64,
                first + b as i64,
                first + n as i64 - 1
            )
        })
    };
    let said: Vec<String> = [
        cropped("rows", (ra, rb), g.row0, g.rows),
        cropped("columns", (ca, cb), g.col0, g.cols),
    ]
    .into_iter()
    .flatten()
    .collect();
    let cells = (ra..=rb)
        .flat_map(|r| (ca..=cb).map(move |c| (r, c)))
        .map(|(r, c)| std::mem::take(&mut g.cells[r * g.cols + c]))
        .collect();
    g.cells = cells;
    g.row0 += ra as i64;
    g.col0 += ca as i64;
    g.rows = rb - ra + 1;
    g.cols = cb - ca + 1;
    Some(format!(
        "input shown: {} (the rest is not read)",
        said.join(", ")
    ))
}

/// The map to draw: a map, or operand K's map of an instruction's (or `indexing`'s) result.
fn target_map(s: &mut Session, a: &Args) -> Result<(IndexingMap, Option<String>), Diagnostic> {
    let group = a.groups().first().ok_or_else(|| {
        Diagnostic::at("`plot` needs a map or an instruction", a.span())
            .with_help("usage: plot MAP|OP [operand=K] ...")
    })?;
    let value = match group.items.first() {
        // An HLO instruction or computation by name: its output-to-input indexing.
        Some(Arg::Word(w, span)) if !s.values.contains_key(w) && commands::find(w).is_none() => {
            let call = CommandCall {
                name: "indexing".into(),
                name_span: *span,
                groups: vec![ArgGroup {
                    items: vec![group.items[0].clone()],
                    span: *span,
                }],
                span: *span,
            };
            s.call(&call)?
        }
        _ => a.value(s, 0)?,
    };
    match value {
        Value::Indexing(ix) => {
            let k = match a.kv_int("operand")? {
                Some(k) => usize::try_from(k)
                    .map_err(|_| Diagnostic::at("`operand=` takes a number >= 0", a.span()))?,
                None => 0,
            };
            // `operand=K` names an operand section; without it, the first section is drawn.
            let op = match a.kv_int("operand")? {
                Some(_) => ix
                    .operands
                    .iter()
                    .find(|o| o.index == k && o.label.contains("operand"))
                    .or_else(|| ix.operands.iter().find(|o| o.index == k)),
                None => ix.operands.first(),
            };
            let Some(op) = op else {
                return Err(Diagnostic::at(
                    format!(
                        "there is no operand {k}; the operands are 0 to {}",
                        ix.operands.len().saturating_sub(1)
                    ),
                    a.span(),
                ));
            };
            let Some(first) = op.maps.first() else {
                return Err(Diagnostic::at(
                    format!("the indexing of operand {k} is UNDEFINED"),
                    a.span(),
                ));
            };
            let mut label = match &op.name {
                Some(n) => format!("{} ({n})", op.label),
                None => op.label.clone(),
            };
            if op.maps.len() > 1 {
                label += &format!(" (the first of its {} maps)", op.maps.len());
            }
            Ok((first.clone(), Some(label)))
        }
        Value::Map(m) | Value::Explained { map: m, .. } => Ok((m, None)),
        Value::Maps(ms) if !ms.is_empty() => Ok((ms[0].clone(), None)),
        v => Err(Diagnostic::at(
            format!(
                "`plot` draws a map or an instruction's indexing, not a {}",
                v.kind()
            ),
            group.span,
        )),
    }
}

fn plot(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (mut m, operand) = target_map(s, a)?;
    if m.is_undefined() {
        return Err(Diagnostic::at(
            "the map is UNDEFINED: there is nothing to draw",
            a.span(),
        ));
    }
    let dim_names: Vec<String> = m.dims.iter().map(|d| d.name.clone()).collect();
    let whole = m.clone();
    let mut fixed: Vec<String> = Vec::new();
    // `at (i, j, ...)`: one dimension point.
    if let Some(arg) = a.after("at") {
        let Arg::Tuple(items, span) = arg else {
            return Err(Diagnostic::at(
                "`at` takes a point such as (0, 1)",
                arg.span(),
            ));
        };
        if items.len() != m.dims.len() {
            return Err(Diagnostic::at(
                format!(
                    "the map has {} dimensions but the point has {} coordinates",
                    m.dims.len(),
                    items.len()
                ),
                *span,
            ));
        }
        for (d, it) in m.dims.iter_mut().zip(items) {
            let Arg::Int(v, vspan) = it else {
                return Err(Diagnostic::at("a point is a tuple of integers", it.span()));
            };
            if !d.bounds.contains(*v) {
                return Err(Diagnostic::at(
                    format!("{} = {v} is outside its range {}", d.name, d.bounds),
                    *vspan,
                ));
            }
            d.bounds = Interval::point(*v);
            fixed.push(format!("{} = {v}", d.name));
        }
    }
    // `DIM=v`: fix one dimension (a block, a thread).
    // `color=VAR` or `color=VAR/N` (groups of N values: `th_x/32` is the warp).
    let mut color_by: Option<(usize, i64, String)> = None;
    // `sector=N`: memory sectors of N elements of the input (row-major), counted per colour.
    let mut sector: Option<u64> = None;
    for item in a.items() {
        let Arg::Kv(key, value, span) = item else {
            continue;
        };
        if key == "operand" {
            continue;
        }
        if key == "sector" {
            match value.as_ref() {
                Arg::Int(n, _) if *n > 0 => sector = Some(*n as u64),
                _ => {
                    return Err(Diagnostic::at(
                        "`sector=` takes a positive number of elements",
                        *span,
                    ))
                }
            }
            continue;
        }
        if key == "color" {
            let Arg::Word(spec, wspan) = value.as_ref() else {
                return Err(Diagnostic::at("`color=` takes a variable name", *span));
            };
            let (w, per) = match spec.split_once('/') {
                Some((w, n)) => match n.parse::<i64>() {
                    Ok(n) if n > 0 => (w.to_string(), n),
                    _ => {
                        return Err(Diagnostic::at("`color=VAR/N` needs a positive N", *wspan)
                            .with_help("e.g. color=th_x/32 colours by warp"))
                    }
                },
                None => (spec.clone(), 1),
            };
            let names = m.names();
            let Some(i) = names.iter().position(|n| *n == w) else {
                return Err(
                    Diagnostic::at(format!("`{w}` is not a variable of the map"), *wspan)
                        .with_help(format!("the variables are {}", names.join(", "))),
                );
            };
            color_by = Some((i, per, spec.clone()));
            continue;
        }
        let Some(i) = dim_names.iter().position(|n| n == key) else {
            return Err(Diagnostic::at(
                format!("`{key}=` is not a dimension of the map or an option of `plot`"),
                *span,
            )
            .with_help(format!(
                "dimensions: {}; options: color=VAR[/N], sector=N, operand=K",
                dim_names.join(", ")
            )));
        };
        let Arg::Int(v, vspan) = value.as_ref() else {
            return Err(Diagnostic::at(format!("`{key}=` takes an integer"), *span));
        };
        let d = &mut m.dims[i];
        if !d.bounds.contains(*v) {
            return Err(Diagnostic::at(
                format!("{} = {v} is outside its range {}", d.name, d.bounds),
                *vspan,
            ));
        }
        d.bounds = Interval::point(*v);
        fixed.push(format!("{key} = {v}"));
    }

    // The left side: the dimension box.
    // Fixed dimensions (a single value) take no room in the picture.
    let free: Vec<usize> = (0..m.dims.len())
        .filter(|&i| !m.dims[i].bounds.is_point())
        .collect();
    let free_names: Vec<String> = free.iter().map(|&i| dim_names[i].clone()).collect();
    let from = Layout::new(free.iter().map(|&i| m.dims[i].bounds).collect()).ok_or_else(|| {
        Diagnostic::at("every dimension needs finite bounds to be drawn", a.span())
    })?;
    if from.rows * from.cols > MAX_CELLS {
        return Err(too_big("output side", from.rows * from.cols, a));
    }
    // The right side: the box of the results' ranges over the whole domain, so fixing a
    // dimension highlights a part of the input rather than cropping to it; when the whole
    // input is too big to draw, the box of what the fixed part reads.
    // A constraint on exactly a result's expression narrows that result's range.
    let result_range = |mm: &IndexingMap, r: crate::expr::Expr| {
        mm.constraints
            .iter()
            .filter(|(e, _)| *e == r)
            .fold(mm.range_of(r), |acc, (_, iv)| acc.intersect(iv))
    };
    let box_of =
        |mm: &IndexingMap| Layout::new(mm.results.iter().map(|&r| result_range(mm, r)).collect());
    let to = match box_of(&whole) {
        Some(l) if l.rows * l.cols <= MAX_CELLS => l,
        _ => box_of(&m).ok_or_else(|| {
            Diagnostic::at(
                "a result has no finite range over the domain, or one too large to lay out, so the input cannot be drawn",
                a.span(),
            )
        })?,
    };
    if to.rows * to.cols > MAX_CELLS {
        return Err(too_big("input side", to.rows * to.cols, a));
    }
    // The input's axes are its dimensions: `dim 0`, `dim 1` (the map's results, in order).
    let result_names: Vec<String> = (0..m.results.len()).map(|i| format!("dim {i}")).collect();
    let mut left = from.grid("output (dimension points)".into(), &free_names);
    let mut right = to.grid("input (elements read)".into(), &result_names);
    let mut coords = vec![0i64; free.len()];
    let mut groups: BTreeSet<u32> = BTreeSet::new();
    let mut points: u64 = 0;
    let limits = Limits {
        max_points: 1_000_000,
    };
    let mut outside: Option<Vec<i64>> = None;
    DomainPoints::for_each(&m, &limits, &mut |p, r| {
        points += 1;
        for (c, &i) in coords.iter_mut().zip(&free) {
            *c = p[i];
        }
        let (Some(cell), Some(read)) = (from.cell(&coords), to.cell(r)) else {
            outside = Some(p.to_vec());
            return Ok(false);
        };
        let g = match &color_by {
            Some((i, per, _)) => {
                let lo = m.var(*i).bounds.lo;
                u32::try_from(p[*i].saturating_sub(lo) / per).unwrap_or(u32::MAX)
            }
            None => cell as u32,
        };
        groups.insert(g);
        let lc = &mut left.cells[cell];
        if !lc.contains(&g) {
            lc.push(g);
        }
        let rc = &mut right.cells[read];
        if !rc.contains(&g) {
            rc.push(g);
            rc.sort_unstable();
        }
        Ok(true)
    })
    .map_err(|e| super::cmd_map::map_err(e, a))?;
    if let Some(p) = outside {
        let at: Vec<String> = p.iter().map(|v| v.to_string()).collect();
        return Err(Diagnostic::at(
            format!(
                "the point ({}) falls outside the box computed for the picture, which cannot be drawn",
                at.join(", ")
            ),
            a.span(),
        ));
    }

    let read = right.cells.iter().filter(|c| !c.is_empty()).count();
    let shared = right.cells.iter().filter(|c| c.len() > 1).count();
    let mut notes = vec![format!(
        "{points} domain points; {read} of {} input elements read, {shared} by more than one colour",
        right.cells.len()
    )];
    if let Some(n) = sector {
        right.sector = n as usize;
        // Sectors (runs of n consecutive input elements, row-major) touched by each colour.
        let mut per_group: std::collections::BTreeMap<u32, BTreeSet<usize>> = Default::default();
        for (i, cell) in right.cells.iter().enumerate() {
            for &g in cell {
                per_group.entry(g).or_default().insert(i / n as usize);
            }
        }
        let counts: Vec<usize> = per_group.values().map(|s| s.len()).collect();
        let all: BTreeSet<usize> = per_group.values().flatten().copied().collect();
        notes.push(format!(
            "sectors of {n} elements: {} touched in all; per colour min {}, max {}",
            all.len(),
            counts.iter().min().unwrap_or(&0),
            counts.iter().max().unwrap_or(&0)
        ));
        if per_group.len() <= 8 {
            let each: Vec<String> = per_group
                .iter()
                .map(|(g, s)| format!("colour {g}: {}", s.len()))
                .collect();
            notes.push(format!("sectors per colour: {}", each.join(", ")));
        }
    }
    if let Some(op) = operand {
        notes.push(format!("input: {op}"));
    }
    if !fixed.is_empty() {
        notes.push(format!("fixed: {}", fixed.join(", ")));
    }
    if right.sector == 0 {
        if let Some(note) = crop(&mut right) {
            notes.push(note);
        }
    }
    let color_by = match color_by {
        Some((_, _, name)) => name,
        None => format!(
            "output element ({})",
            if dim_names.is_empty() {
                "the one point".into()
            } else {
                dim_names.join(", ")
            }
        ),
    };
    let picture = Plot {
        map: whole.to_string(),
        color_by,
        from: left,
        to: right,
        groups: groups.len(),
        notes,
    };
    if let Some(target) = a.after("to") {
        let path = match target {
            Arg::Word(w, _) | Arg::Str(w, _) => w.clone(),
            other => {
                return Err(Diagnostic::at(
                    "`to` takes a file name such as access.svg",
                    other.span(),
                ))
            }
        };
        let svg = crate::render::svg::plot(&picture);
        std::fs::write(&path, &svg)
            .map_err(|e| Diagnostic::at(format!("cannot write {path}: {e}"), target.span()))?;
        return Ok(Value::Written(crate::value::Written {
            path,
            bytes: svg.len(),
        }));
    }
    Ok(Value::Plot(picture))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picture(src: &str) -> Plot {
        let mut s = Session::new();
        match s.execute(src).pop().map(|o| o.result) {
            Some(Ok(Value::Plot(p))) => p,
            other => panic!("expected a plot from {src}, got {other:?}"),
        }
    }

    /// Every input cell lists exactly the readers that brute force finds: for each domain
    /// point, the result's cell gets the point's colour, and no other cell gets any.
    #[track_caller]
    fn check_against_enumeration(
        map: &str,
        rows: i64,
        cols: i64,
        reader: fn(i64, i64) -> Vec<(i64, i64)>,
    ) {
        let p = picture(&format!("plot {map}"));
        assert_eq!((p.to.rows as i64, p.to.cols as i64), (rows, cols));
        let mut expected = vec![Vec::<u32>::new(); (rows * cols) as usize];
        for d0 in 0..p.from.rows as i64 {
            for d1 in 0..p.from.cols as i64 {
                let g = (d0 * p.from.cols as i64 + d1) as u32;
                for (r, c) in reader(d0, d1) {
                    let cell = &mut expected[(r * cols + c) as usize];
                    if !cell.contains(&g) {
                        cell.push(g);
                        cell.sort_unstable();
                    }
                }
            }
        }
        assert_eq!(p.to.cells, expected, "\n map: {map}");
    }

    #[test]
    fn transpose_cells_match_enumeration() {
        check_against_enumeration(
            "(d0, d1) -> (d1, d0), domain: d0 in [0, 4], d1 in [0, 6]",
            7,
            5,
            |a, b| vec![(b, a)],
        );
    }

    #[test]
    fn windows_and_divisions_match_enumeration() {
        check_against_enumeration(
            "(d0, d1)[s0] -> (d0 floordiv 2, d1 * 2 + s0), domain: d0 in [0, 5], d1 in [0, 3], s0 in [0, 2]",
            3,
            9,
            |a, b| (0..3).map(|s| (a / 2, b * 2 + s)).collect(),
        );
    }

    #[test]
    fn fixed_dimensions_highlight_part_of_the_whole_input() {
        let p = picture("plot (d0, d1) -> (d0 * 3 + d1), domain: d0 in [0, 3], d1 in [0, 2] d0=1");
        assert_eq!(p.from.cols, 3);
        let read: Vec<usize> = (0..p.to.cells.len())
            .filter(|&i| !p.to.cells[i].is_empty())
            .collect();
        assert_eq!(read, [3, 4, 5]);
        assert_eq!(p.to.cells.len(), 12);
    }
}
