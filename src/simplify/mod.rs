//! Simplification of indexing maps under their domains.
//!
//! This is the baseline pipeline: canonical linear form, constraints that always hold
//! dropped, constraints that never hold making the map KNOWN EMPTY, unused symbols removed.
//! The e-graph rewriter (issue: simplifier) extends it.

use crate::interval::Interval;
use crate::map::{remove_unused_symbols, IndexingMap, Status};

/// Bounds on the work one simplification may do.
#[derive(Copy, Clone, Debug)]
pub struct SimplifyLimits {
    pub max_nodes: usize,
    pub max_iterations: usize,
    pub max_millis: u64,
}

impl Default for SimplifyLimits {
    fn default() -> Self {
        SimplifyLimits {
            max_nodes: 10_000,
            max_iterations: 30,
            max_millis: 50,
        }
    }
}

/// One rewrite, for `simplify M explain`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub rule: String,
    pub before: String,
    pub after: String,
    pub why: String,
}

/// A simplified map and the steps that got there.
#[derive(Clone, Debug)]
pub struct Simplified {
    pub map: IndexingMap,
    pub steps: Vec<Step>,
    /// A bound of [`SimplifyLimits`] that stopped the rewriter, if any.
    pub limit_hit: Option<String>,
}

/// Simplifies `map`; never returns a map that differs from `map` at any point of its domain.
pub fn simplify(map: &IndexingMap, _limits: &SimplifyLimits) -> Simplified {
    let mut steps = Vec::new();
    let mut m = map.clone();
    m.canonicalize();
    if m.status != Status::Defined {
        return Simplified {
            map: m,
            steps,
            limit_hit: None,
        };
    }
    let names = m.names();
    let bounds = m.bounds();
    let mut kept = Vec::new();
    for &(e, iv) in &m.constraints {
        let r = crate::interval::range_of(e, &bounds);
        let text = crate::expr::display(e, &names).to_string();
        if iv.contains_interval(&r) {
            steps.push(Step {
                rule: "constraint-always-holds".into(),
                before: format!("{text} in {iv}"),
                after: "(dropped)".into(),
                why: format!("{text} is always in {r}"),
            });
        } else if r.intersect(&iv).is_empty() {
            steps.push(Step {
                rule: "constraint-never-holds".into(),
                before: format!("{text} in {iv}"),
                after: "KNOWN EMPTY".into(),
                why: format!("{text} is always in {r}, which misses {iv}"),
            });
            m.status = Status::KnownEmpty;
        } else {
            kept.push((e, iv));
        }
    }
    m.constraints = kept;
    let (mut m, removed) = remove_unused_symbols(&m);
    if removed > 0 {
        steps.push(Step {
            rule: "remove-unused-symbols".into(),
            before: format!("{removed} unused"),
            after: "(removed)".into(),
            why: "no result uses them and no constraint ties them to the rest".into(),
        });
    }
    let _ = Interval::FULL;
    m.is_simplified = m.status == Status::Defined;
    Simplified {
        map: m,
        steps,
        limit_hit: None,
    }
}
