//! Indexing maps: a function from dimension, range and runtime variables to a tuple of
//! expressions, together with its domain (variable bounds and constraints).
//!
//! ```text
//! (d0, d1)[s0]{r0} -> (d0 * 8 + s0, d1 floordiv 2 + r0),
//! domain: d0 in [0, 9], d1 in [0, 15], s0 in [0, 7], r0 in [0, 4], d0 + s0 in [0, 12]
//! ```
//!
//! Variables are numbered dims first, then range variables, then runtime variables; an
//! [`Expr`]'s `Var(i)` is the i-th of them. Every map is kept in canonical form
//! ([`IndexingMap::canonicalize`]): results and constraints in the linear form, constraints
//! merged and sorted, single-variable constraints folded into the bounds.

pub mod compiled;
mod compose;
mod convert;
pub mod enumerate;
mod equal;
mod inverse;
pub mod mlir;
pub mod ranges;
mod unused;

pub use compose::compose;
pub use convert::convert_symbols;
pub use enumerate::{DomainPoints, Limits};
pub use equal::equal;
pub use inverse::{inverse, is_bijection, is_permutation};
pub use ranges::{ranges, ExprRange};
pub use unused::{remove_unused_range_symbols, remove_unused_symbols, remove_unused_vars};

use crate::expr::{self, Expr, ExprKind};
use crate::interval::{range_of, Interval};
use std::fmt;

/// What a variable stands for.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum VarKind {
    /// An index of the tensor (or GPU grid) the map starts from.
    Dim,
    /// A range of values needed for one point (a reduction, a window).
    Range,
    /// A value known only at run time (a dynamic offset).
    Runtime,
}

impl VarKind {
    pub fn default_prefix(self) -> &'static str {
        match self {
            VarKind::Dim => "d",
            VarKind::Range => "s",
            VarKind::Runtime => "r",
        }
    }
    pub fn describe(self) -> &'static str {
        match self {
            VarKind::Dim => "dimension",
            VarKind::Range => "range variable",
            VarKind::Runtime => "runtime variable",
        }
    }
}

/// A named, bounded variable.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Variable {
    pub name: String,
    pub bounds: Interval,
}

impl Variable {
    pub fn new(name: impl Into<String>, lo: i64, hi: i64) -> Variable {
        Variable {
            name: name.into(),
            bounds: Interval::new(lo, hi),
        }
    }
}

/// Whether the map is an ordinary map, one whose domain is known to be empty, or undefined
/// (an op whose indexing is unknown).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Status {
    Defined,
    KnownEmpty,
    Undefined,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct IndexingMap {
    pub dims: Vec<Variable>,
    pub ranges: Vec<Variable>,
    pub runtimes: Vec<Variable>,
    pub results: Vec<Expr>,
    /// `(expr, interval)` pairs: the map is defined where each expr lies in its interval.
    pub constraints: Vec<(Expr, Interval)>,
    pub is_simplified: bool,
    pub status: Status,
}

/// The first division among `m`'s results and constraints whose divisor was not the
/// constant 0 but is once each variable `w` is replaced by `by(w)`: the term as written in
/// `m`. Substituting a constant for a variable (`fold`, `compose`, a pinned variable) can
/// turn `d0 floordiv r0` into a term with no value at any point, which no map may hold.
pub fn zeroed_division(m: &IndexingMap, by: &dyn Fn(u32) -> Expr) -> Option<Expr> {
    fn walk(
        e: Expr,
        by: &dyn Fn(u32) -> Expr,
        seen: &mut std::collections::HashSet<Expr>,
    ) -> Option<Expr> {
        let expr::ExprKind::Bin(op, a, b) = e.kind() else {
            return None;
        };
        if !e.has_div() || e.divisors_are_positive_constants() || !seen.insert(e) {
            return None;
        }
        walk(a, by, seen).or_else(|| walk(b, by, seen)).or_else(|| {
            let zero = |x: Expr| expr::canonical(x).as_const() == Some(0);
            (op.is_div_like() && !zero(b) && zero(b.substitute(&mut |w| by(w)))).then_some(e)
        })
    }
    if m.status != Status::Defined {
        return None;
    }
    let mut seen = std::collections::HashSet::new();
    m.results
        .iter()
        .chain(m.constraints.iter().map(|(e, _)| e))
        .find_map(|&e| walk(e, by, &mut seen))
}

impl IndexingMap {
    /// A map with the given variables and results, canonicalized.
    pub fn new(
        dims: Vec<Variable>,
        ranges: Vec<Variable>,
        runtimes: Vec<Variable>,
        results: Vec<Expr>,
        constraints: Vec<(Expr, Interval)>,
    ) -> IndexingMap {
        let mut m = IndexingMap {
            dims,
            ranges,
            runtimes,
            results,
            constraints,
            is_simplified: false,
            status: Status::Defined,
        };
        m.canonicalize();
        m
    }

    /// `(d0, ..) -> (d0, ..)` over a box with the given extents.
    pub fn identity(extents: &[i64]) -> IndexingMap {
        let dims = default_vars(VarKind::Dim, extents);
        let results = (0..extents.len() as u32).map(Expr::var).collect();
        IndexingMap::new(dims, vec![], vec![], results, vec![])
    }

    /// The map of an op whose indexing is unknown.
    pub fn undefined() -> IndexingMap {
        IndexingMap {
            dims: vec![],
            ranges: vec![],
            runtimes: vec![],
            results: vec![],
            constraints: vec![],
            is_simplified: false,
            status: Status::Undefined,
        }
    }

    pub fn is_undefined(&self) -> bool {
        self.status == Status::Undefined
    }
    pub fn is_known_empty(&self) -> bool {
        self.status == Status::KnownEmpty
    }
    pub fn num_vars(&self) -> usize {
        self.dims.len() + self.ranges.len() + self.runtimes.len()
    }
    pub fn num_symbols(&self) -> usize {
        self.ranges.len() + self.runtimes.len()
    }
    /// All variables in index order: dims, ranges, runtimes.
    pub fn vars(&self) -> impl Iterator<Item = &Variable> {
        self.dims.iter().chain(&self.ranges).chain(&self.runtimes)
    }
    pub fn vars_mut(&mut self) -> impl Iterator<Item = &mut Variable> {
        self.dims
            .iter_mut()
            .chain(&mut self.ranges)
            .chain(&mut self.runtimes)
    }
    pub fn var(&self, i: usize) -> &Variable {
        self.vars().nth(i).expect("variable index within the map")
    }
    pub fn var_kind(&self, i: usize) -> VarKind {
        if i < self.dims.len() {
            VarKind::Dim
        } else if i < self.dims.len() + self.ranges.len() {
            VarKind::Range
        } else {
            VarKind::Runtime
        }
    }
    pub fn names(&self) -> Vec<String> {
        self.vars().map(|v| v.name.clone()).collect()
    }
    pub fn bounds(&self) -> Vec<Interval> {
        self.vars().map(|v| v.bounds).collect()
    }
    /// The interval of `e` over this map's variable bounds.
    pub fn range_of(&self, e: Expr) -> Interval {
        range_of(e, &self.bounds())
    }
    /// Prints an expression of this map with its variable names.
    pub fn show_expr(&self, e: Expr) -> String {
        expr::display(e, &self.names()).to_string()
    }

    /// The first result or constraint term that divides by a constant 0
    /// ([`Expr::zero_divisor`]): such a map has no value anywhere and does not read back.
    pub fn zero_divisor(&self) -> Option<Expr> {
        if self.status != Status::Defined {
            return None;
        }
        self.results
            .iter()
            .chain(self.constraints.iter().map(|(e, _)| e))
            .find_map(|e| e.zero_divisor())
    }

    /// Brings the map to canonical form: canonical results and constraints, constraints
    /// merged by expression and sorted, single-variable `v in [a, b]` constraints folded into
    /// the bounds of `v`, constant constraints checked; an empty bound or constraint makes
    /// the map KNOWN EMPTY.
    pub fn canonicalize(&mut self) {
        if self.status == Status::Undefined {
            return;
        }
        for r in &mut self.results {
            *r = expr::canonical(*r);
        }
        let mut merged: Vec<(Expr, Interval)> = Vec::new();
        let old = std::mem::take(&mut self.constraints);
        for (e, iv) in old {
            let e = expr::canonical(e);
            match e.kind() {
                ExprKind::Const(c) => {
                    if !iv.contains(c) {
                        self.status = Status::KnownEmpty;
                    }
                }
                ExprKind::Var(v) => {
                    if let Some(var) = self.vars_mut().nth(v as usize) {
                        var.bounds = var.bounds.intersect(&iv);
                    }
                }
                _ => match merged.iter_mut().find(|(x, _)| *x == e) {
                    Some((_, j)) => *j = j.intersect(&iv),
                    None => merged.push((e, iv)),
                },
            }
        }
        merged.sort_by(|a, b| a.0.cmp(&b.0));
        self.constraints = merged;
        if self.vars().any(|v| v.bounds.is_empty())
            || self.constraints.iter().any(|(_, i)| i.is_empty())
        {
            self.status = Status::KnownEmpty;
        }
    }

    /// Divisions by negative constants rewritten into divisions by positive ones
    /// ([`expr::normalize_negative_divisors`]), results and constraints, then canonical
    /// form again. The simplifier calls it first: its rules reason with positive divisors.
    pub fn normalize_divisors(&mut self) {
        if self.status != Status::Defined {
            return;
        }
        let n = expr::normalize_negative_divisors;
        let any_negative = self
            .results
            .iter()
            .chain(self.constraints.iter().map(|c| &c.0))
            .any(|&e| n(e) != e);
        if !any_negative {
            return;
        }
        for r in &mut self.results {
            *r = n(*r);
        }
        for c in &mut self.constraints {
            c.0 = n(c.0);
        }
        self.canonicalize();
    }

    /// Renames variables whose names collide (after a composition, say) to the defaults
    /// `d*`, `s*`, `r*` of their kind.
    pub fn fix_names(&mut self) {
        let mut seen = std::collections::HashSet::new();
        let dup = self.vars().any(|v| !seen.insert(v.name.clone()));
        if !dup {
            return;
        }
        for (kind, vars) in [
            (VarKind::Dim, &mut self.dims),
            (VarKind::Range, &mut self.ranges),
            (VarKind::Runtime, &mut self.runtimes),
        ] {
            for (i, v) in vars.iter_mut().enumerate() {
                v.name = format!("{}{}", kind.default_prefix(), i);
            }
        }
    }

    /// Whether every result uses only dims and the map has no symbols (a plain function of
    /// the tensor index).
    pub fn has_symbols(&self) -> bool {
        self.num_symbols() > 0
    }

    /// The results at a full variable assignment, if the point is in the domain.
    pub fn eval_point(&self, point: &[i64]) -> Result<Option<Vec<i64>>, expr::EvalError> {
        if !self.contains_point(point)? {
            return Ok(None);
        }
        let vals = self
            .results
            .iter()
            .map(|&r| expr::eval(r, point))
            .collect::<Result<_, _>>()?;
        Ok(Some(vals))
    }

    /// Whether a full variable assignment satisfies the bounds and constraints.
    pub fn contains_point(&self, point: &[i64]) -> Result<bool, expr::EvalError> {
        if self.status != Status::Defined {
            return Ok(false);
        }
        for (v, &x) in self.vars().zip(point) {
            if !v.bounds.contains(x) {
                return Ok(false);
            }
        }
        for &(e, iv) in &self.constraints {
            // exact: a value past 64 bits lies outside every (64-bit) interval
            let v = expr::arith::eval_wide(e, point)?;
            if !(i128::from(iv.lo) <= v && v <= i128::from(iv.hi)) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The map printed over several lines, as XLA prints it.
    pub fn to_multiline(&self) -> String {
        self.render(true)
    }

    fn render(&self, multiline: bool) -> String {
        if self.status == Status::Undefined {
            return "UNDEFINED".to_string();
        }
        let names = self.names();
        let join = |vs: &[Variable]| {
            vs.iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut s = format!("({})", join(&self.dims));
        if !self.ranges.is_empty() {
            s += &format!("[{}]", join(&self.ranges));
        }
        if !self.runtimes.is_empty() {
            s += &format!("{{{}}}", join(&self.runtimes));
        }
        if self.status == Status::KnownEmpty {
            // A map with no variables and no results prints as XLA's `KNOWN EMPTY`; any
            // other keeps its variables, so it reads back as the same empty relation of the
            // same arity (`equal M, print(M)`). Its results mean nothing and print as 0,
            // as XLA resets them: nothing unreachable (an overflowing term) is printed.
            if self.num_vars() == 0 && self.results.is_empty() {
                return "KNOWN EMPTY".to_string();
            }
            let zeros = vec!["0"; self.results.len()].join(", ");
            return format!("{s} -> ({zeros}), domain: KNOWN EMPTY");
        }
        let results: Vec<String> = self
            .results
            .iter()
            .map(|&r| expr::display(r, &names).to_string())
            .collect();
        s += &format!(" -> ({})", results.join(", "));
        // A domain lists every variable, as XLA's printer does and its parser needs: a
        // variable over all of i64 prints `[-9223372036854775808, 9223372036854775807]`
        // rather than vanish (a full-range map marked simplified printed `domain:
        // is_simplified: true`). Only a map with nothing to say about its domain, as
        // `(d0) -> (d0)` is written, prints none.
        let says_something = self.vars().any(|v| !v.bounds.is_full())
            || !self.constraints.is_empty()
            || self.is_simplified;
        let mut items: Vec<String> = Vec::new();
        if says_something {
            for v in self.vars() {
                items.push(format!("{} in {}", v.name, v.bounds));
            }
        }
        for &(e, iv) in &self.constraints {
            items.push(format!("{} in {}", expr::display(e, &names), iv));
        }
        if self.is_simplified {
            items.push("is_simplified: true".into());
        }
        if items.is_empty() {
            return s;
        }
        if multiline {
            format!("{s},\ndomain:\n{}", items.join(",\n"))
        } else {
            format!("{s}, domain: {}", items.join(", "))
        }
    }
}

impl fmt::Display for IndexingMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(false))
    }
}

/// Variables `prefix0..` with bounds `[0, extent - 1]`.
pub fn default_vars(kind: VarKind, extents: &[i64]) -> Vec<Variable> {
    extents
        .iter()
        .enumerate()
        .map(|(i, &n)| Variable::new(format!("{}{}", kind.default_prefix(), i), 0, n - 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_prints_like_xla() {
        let m = IndexingMap::identity(&[10, 20]);
        assert_eq!(
            m.to_string(),
            "(d0, d1) -> (d0, d1), domain: d0 in [0, 9], d1 in [0, 19]"
        );
        assert_eq!(
            m.to_multiline(),
            "(d0, d1) -> (d0, d1),\ndomain:\nd0 in [0, 9],\nd1 in [0, 19]"
        );
    }

    /// A divisor that becomes the constant 0 once variables are replaced is found (in
    /// results and constraints, for each of floordiv, ceildiv and mod), and what is found
    /// reads back as zero exactly as the parser's check sees it; other maps are left alone,
    /// and every map `compose` returns holds no zero divisor.
    #[test]
    fn divisors_made_zero_by_a_substitution_are_found() {
        let (d0, d1) = (Expr::var(0), Expr::var(1));
        let two = |r: Vec<Expr>, c: Vec<(Expr, Interval)>| {
            IndexingMap::new(
                vec![Variable::new("d0", 0, 3), Variable::new("d1", 0, 3)],
                vec![],
                vec![],
                r,
                c,
            )
        };
        let zero_d1 = |v: u32| {
            if v == 1 {
                Expr::constant(0)
            } else {
                Expr::var(v)
            }
        };
        let one_d1 = |v: u32| {
            if v == 1 {
                Expr::constant(1)
            } else {
                Expr::var(v)
            }
        };
        for op in [expr::Op::FloorDiv, expr::Op::CeilDiv, expr::Op::Mod] {
            let term = Expr::bin(op, d0, d1.mul(Expr::constant(3)));
            for m in [
                two(vec![d0.add(term)], vec![]),
                two(vec![d0], vec![(term, Interval::new(0, 1))]),
            ] {
                assert_eq!(m.zero_divisor(), None, "{m}");
                assert_eq!(zeroed_division(&m, &zero_d1), Some(term), "{m}");
                assert_eq!(zeroed_division(&m, &one_d1), None, "{m}");
                let after = term.substitute(&mut |v| zero_d1(v));
                assert_eq!(after.zero_divisor(), Some(after));
                // compose puts a's results in for b's dimensions: (d0) -> (d0, 0) then m.
                let a = IndexingMap::new(
                    vec![Variable::new("d0", 0, 3)],
                    vec![],
                    vec![],
                    vec![d0, Expr::constant(0)],
                    vec![],
                );
                assert!(compose(&a, &m).is_err(), "{m}");
                let a1 = IndexingMap::new(
                    vec![Variable::new("d0", 0, 3)],
                    vec![],
                    vec![],
                    vec![d0, Expr::constant(1)],
                    vec![],
                );
                let c = compose(&a1, &m).expect("a divisor of 3");
                assert_eq!(c.zero_divisor(), None, "{c}");
            }
        }
        // A divisor that is zero already, or a positive constant, is not "made" zero.
        let m = two(vec![d0.floordiv(Expr::constant(4))], vec![]);
        assert_eq!(zeroed_division(&m, &zero_d1), None);
    }
}
