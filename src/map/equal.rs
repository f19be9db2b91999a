//! Semantic equality: two maps are equal when, at every dimension point, they are defined
//! together and reach the same set of results (over all values of their symbols).
//!
//! Identical canonical forms are equal at once; otherwise both domains are walked in step,
//! one dimension point at a time, which is exact, up to [`Limits::max_points`] per map;
//! above it the answer is an error, never a guess. Nothing is stored but the results at the
//! current dimension point, so memory does not grow with the domain.

use super::compiled::Compiled;
use super::enumerate::{box_size, check_work, for_each_in_box, narrowed_bounds};
use super::{IndexingMap, Limits, Status};
use crate::interval::Interval;
use crate::MapError;

/// One map, ready to list its results at one dimension point after another.
struct Side<'a> {
    map: &'a IndexingMap,
    program: Compiled,
    dims: Vec<Interval>,
    symbols: Vec<Interval>,
    regs: Vec<i128>,
    point: Vec<i64>,
    out: Vec<i64>,
}

impl<'a> Side<'a> {
    fn new(map: &'a IndexingMap, limits: &Limits) -> Result<Side<'a>, MapError> {
        let nd = map.dims.len();
        let bounds = if map.status == Status::Defined {
            narrowed_bounds(map)
        } else {
            vec![Interval::new(1, 0); map.num_vars().max(nd)]
        };
        let program = Compiled::new(map);
        if map.status == Status::Defined {
            let points = box_size(&map.names(), &bounds, limits)?;
            check_work(points, program.work_per_point(), limits)?;
        }
        Ok(Side {
            map,
            regs: program.registers(),
            program,
            dims: bounds[..nd].to_vec(),
            symbols: bounds[nd..].to_vec(),
            point: vec![0; map.num_vars()],
            out: vec![0; map.results.len()],
        })
    }

    fn contains_dims(&self, p: &[i64]) -> bool {
        self.dims.iter().zip(p).all(|(b, &x)| b.contains(x))
    }

    /// Appends the result tuples at dimension point `p` to `into` (flat, `results.len()`
    /// numbers per tuple; duplicates possible).
    fn results_at(&mut self, p: &[i64], into: &mut Vec<i64>) -> Result<(), MapError> {
        if self.map.status != Status::Defined || !self.contains_dims(p) {
            return Ok(());
        }
        let nd = p.len();
        self.point[..nd].copy_from_slice(p);
        let (program, regs, point, out) = (
            &self.program,
            &mut self.regs,
            &mut self.point,
            &mut self.out,
        );
        let mut visit = |s: &[i64]| -> Result<bool, MapError> {
            point[nd..].copy_from_slice(s);
            if program.in_domain(point, regs).map_err(MapError::Eval)? {
                program.results(regs, out).map_err(MapError::Eval)?;
                // A map with no results still relates the point to the empty tuple: one
                // marker, so "one empty tuple" differs from "no tuple" (KNOWN EMPTY).
                if out.is_empty() {
                    into.push(0);
                } else {
                    into.extend_from_slice(out);
                }
            }
            Ok(true)
        };
        if self.symbols.is_empty() {
            visit(&[]).map(|_| ())
        } else {
            for_each_in_box(&self.symbols, &mut visit)
        }
    }
}

/// Whether two flat lists of `width`-tuples hold the same set of tuples.
fn same_set(a: &[i64], b: &[i64], width: usize) -> bool {
    if a.len() == b.len() && (a.len() <= width) {
        return a == b;
    }
    if width == 0 {
        return a.is_empty() == b.is_empty();
    }
    fn set(v: &[i64], width: usize) -> Vec<&[i64]> {
        let mut t: Vec<&[i64]> = v.chunks(width).collect();
        t.sort_unstable();
        t.dedup();
        t
    }
    set(a, width) == set(b, width)
}

/// The same map up to variable names.
fn same_up_to_names(a: &IndexingMap, b: &IndexingMap) -> bool {
    let bounds = |m: &IndexingMap| m.vars().map(|v| v.bounds).collect::<Vec<_>>();
    a.status == b.status
        && a.dims.len() == b.dims.len()
        && a.ranges.len() == b.ranges.len()
        && a.runtimes.len() == b.runtimes.len()
        && bounds(a) == bounds(b)
        && a.results == b.results
        && a.constraints == b.constraints
}

/// Whether `a` and `b` relate the same dimension points to the same results.
pub fn equal(a: &IndexingMap, b: &IndexingMap, limits: &Limits) -> Result<bool, MapError> {
    if a.is_undefined() || b.is_undefined() {
        return Ok(a.is_undefined() && b.is_undefined());
    }
    // A bare `KNOWN EMPTY` (XLA's printing, with no variables) is the empty relation of
    // any arity: it equals exactly the maps that relate no point to a result.
    let bare = |m: &IndexingMap| m.is_known_empty() && m.num_vars() == 0 && m.results.is_empty();
    let other = if bare(a) { b } else { a };
    // (A map with no variables and no results is compared as it is: the empty copy of it
    // would be bare again.)
    if bare(a) != bare(b) && other.num_vars() + other.results.len() > 0 {
        let mut empty = other.clone();
        empty.status = Status::KnownEmpty;
        return equal(&empty, other, limits);
    }
    if a.dims.len() != b.dims.len() {
        return Ok(false);
    }
    if same_up_to_names(a, b) {
        return Ok(true);
    }
    let mut sa = Side::new(a, limits)?;
    let mut sb = Side::new(b, limits)?;
    // Maps into different ranks agree only where both are empty.
    let width = if a.results.len() == b.results.len() {
        Some(a.results.len())
    } else {
        None
    };
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    let mut same = true;
    let a_dims = sa.dims.clone();
    let b_dims = sb.dims.clone();
    if a.status == Status::Defined {
        for_each_in_box(&a_dims, &mut |p| {
            ra.clear();
            rb.clear();
            sa.results_at(p, &mut ra)?;
            sb.results_at(p, &mut rb)?;
            same = match width {
                Some(w) => same_set(&ra, &rb, w),
                None => ra.is_empty() && rb.is_empty(),
            };
            Ok(same)
        })?;
    }
    if same && b.status == Status::Defined {
        // Dimension points of b outside a's box: b must have no result there.
        for_each_in_box(&b_dims, &mut |p| {
            if a.status == Status::Defined && sa.contains_dims(p) {
                return Ok(true);
            }
            rb.clear();
            sb.results_at(p, &mut rb)?;
            same = rb.is_empty();
            Ok(same)
        })?;
    }
    Ok(same)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::expr::Expr;
    use crate::map::{DomainPoints, Variable};
    use std::collections::{BTreeMap, BTreeSet};

    /// The relation of a map, the slow way: every point, stored (dimension point -> set
    /// of results). The oracle of this module's and `inverse`'s tests.
    pub(crate) fn relation(m: &IndexingMap) -> BTreeMap<Vec<i64>, BTreeSet<Vec<i64>>> {
        let nd = m.dims.len();
        let mut rel: BTreeMap<Vec<i64>, BTreeSet<Vec<i64>>> = BTreeMap::new();
        DomainPoints::for_each(m, &Limits::default(), &mut |p, r| {
            rel.entry(p[..nd].to_vec()).or_default().insert(r.to_vec());
            Ok(true)
        })
        .expect("small");
        rel
    }

    /// A bare `KNOWN EMPTY` equals every empty map, whatever its arity, and no other.
    #[test]
    fn bare_known_empty_equals_empty_maps() {
        let parse = |t: &str| {
            crate::session::build::build_map(&crate::syntax::parse_map_lit(t).unwrap()).unwrap()
        };
        let bare = parse("KNOWN EMPTY");
        let lim = Limits::default();
        for (text, want) in [
            ("(d0) -> (d0), domain: d0 in [5, 4]", true),
            (
                "(d0, d1) -> (d1), domain: d0 in [0, 3], d1 in [0, 3], d0 + d1 in [9, 9]",
                true,
            ),
            ("(d0) -> (0), domain: KNOWN EMPTY", true),
            ("(d0) -> (d0), domain: d0 in [0, 3]", false),
            (
                "(d0)[s0] -> (d0), domain: d0 in [0, 3], s0 in [0, 0]",
                false,
            ),
        ] {
            let m = parse(text);
            assert_eq!(
                equal(&bare, &m, &lim).unwrap(),
                want,
                "KNOWN EMPTY vs {text}"
            );
            assert_eq!(
                equal(&m, &bare, &lim).unwrap(),
                want,
                "{text} vs KNOWN EMPTY"
            );
        }
        assert!(equal(&bare, &bare, &lim).unwrap());
    }

    /// `equal` agrees with comparing the stored relations, on maps that differ in bounds,
    /// symbols, constraints and results.
    #[test]
    fn agrees_with_stored_relations() {
        let (d0, s0) = (Expr::var(0), Expr::var(1));
        let mut maps = Vec::new();
        for (lo, hi) in [(0, 5), (0, 6), (1, 5), (-2, 3)] {
            for slo_hi in [(0, 0), (0, 1), (0, 2)] {
                for k in [1, 2] {
                    for c in [None, Some(Interval::new(0, 4)), Some(Interval::new(9, 9))] {
                        let results =
                            vec![d0.mul(Expr::constant(k)).add(s0).modulo(Expr::constant(4))];
                        let constraints = c.map(|iv| (d0.add(s0), iv)).into_iter().collect();
                        maps.push(IndexingMap::new(
                            vec![Variable::new("d0", lo, hi)],
                            vec![Variable::new("s0", slo_hi.0, slo_hi.1)],
                            vec![],
                            results,
                            constraints,
                        ));
                    }
                }
            }
        }
        let rels: Vec<_> = maps.iter().map(relation).collect();
        let mut trues = 0;
        for (i, a) in maps.iter().enumerate() {
            for (j, b) in maps.iter().enumerate() {
                let want = rels[i] == rels[j];
                let got = equal(a, b, &Limits::default()).expect("small");
                assert_eq!(got, want, "{a}  vs  {b}");
                trues += usize::from(got && i != j);
            }
        }
        assert!(trues > 0, "some distinct maps are equal");
    }
}
