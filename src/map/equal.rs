//! Semantic equality: two maps are equal when, at every dimension point, they are defined
//! together and reach the same set of results (over all values of their symbols).
//!
//! Identical canonical forms are equal at once; otherwise the domains are enumerated, which
//! is exact, up to [`Limits::max_points`]; above it the answer is an error, never a guess.

use super::{DomainPoints, IndexingMap, Limits, Status};
use crate::MapError;
use std::collections::{BTreeSet, HashMap};

type Relation = HashMap<Vec<i64>, BTreeSet<Vec<i64>>>;

fn relation(m: &IndexingMap, limits: &Limits) -> Result<Relation, MapError> {
    let nd = m.dims.len();
    let mut rel: Relation = HashMap::new();
    DomainPoints::for_each(m, limits, &mut |p, r| {
        rel.entry(p[..nd].to_vec()).or_default().insert(r.to_vec());
        Ok(true)
    })?;
    Ok(rel)
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
    if a.dims.len() != b.dims.len() {
        return Ok(false);
    }
    let a_empty = a.status == Status::KnownEmpty;
    let b_empty = b.status == Status::KnownEmpty;
    if a.results.len() != b.results.len() && !(a_empty && b_empty) {
        // Maps into different ranks agree only if both are empty.
        return Ok(relation(a, limits)?.is_empty() && relation(b, limits)?.is_empty());
    }
    if same_up_to_names(a, b) {
        return Ok(true);
    }
    Ok(relation(a, limits)? == relation(b, limits)?)
}
