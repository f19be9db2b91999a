//! Symbolic tiles: the tile of an operand when the output's tile sizes are *symbols*
//! (`ts0`, `ts1`, ...) rather than numbers, as seed 001 asks for block-level tiling ("compute
//! expressions for offsets, sizes and strides; compute the constraints that allow tiling
//! propagation through reshapes").
//!
//! The output tile starts at the origin `o_i` (a multiple of `ts_i`) and holds
//! `d_i = o_i + e_i`, `e_i in [0, ts_i - 1]`. Each operand coordinate of the map is evaluated
//! to a *form* `offset(o, runtime) + Σ coeff * e`, where the `e` are element variables whose
//! extents are expressions in the sizes. A coordinate is a tile coordinate when its form has
//! at most one element variable; several merge when they leave no gap (`d0 * 8 + d1` with
//! `ts1 = 8`). A `floordiv c` or `mod c` of a contiguous run of `Z` elements is a tile in two
//! situations, which become two *cases*:
//!
//! - whole rows: `Z mod c = 0` and the run starts on a row (`offset mod c = 0`); the run then
//!   splits into `Z floordiv c` rows of `c` (`floordiv` moves over the rows, `mod` over the row);
//! - inside a row: `Z` divides `c` and the run starts at a multiple of `Z`; `floordiv` is then
//!   one value and `mod` the run itself.
//!
//! Each case carries the conditions on the sizes under which it holds; a size with several
//! cases (a reshape) gets one row per case. The result is *checked*, not trusted:
//! [`verify`] instantiates every case at concrete sizes and enumerates both sides with the
//! same oracle as concrete tiles ([`super::check_exact`]).

use super::{check_exact, derive, OperandTile};
use crate::expr::{arith, canonical, display, Expr, Linear};
use crate::interval::Interval;
use crate::map::{IndexingMap, Limits, Status, Variable};

/// A condition on the sizes; expressions are over the size symbols (variable `i` is the
/// size of output dimension `i`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cond {
    /// `e mod c = 0`
    MultipleOf(Expr, i64),
    /// `e` divides `c` (`c mod e = 0`)
    Divides(i64, Expr),
    /// `e = v`
    Equals(Expr, i64),
}

impl Cond {
    /// The truth of the condition at concrete sizes (`None`: not decidable there, e.g. a
    /// size that evaluates to zero or overflows).
    pub fn holds(&self, sizes: &[i64]) -> Option<bool> {
        match self {
            Cond::MultipleOf(e, c) => arith::eval(*e, sizes).ok().map(|v| v % c == 0),
            Cond::Divides(c, e) => arith::eval(*e, sizes).ok().map(|v| v != 0 && c % v == 0),
            Cond::Equals(e, v) => arith::eval(*e, sizes).ok().map(|x| x == *v),
        }
    }
    fn constant(&self) -> Option<bool> {
        let e = match self {
            Cond::MultipleOf(e, _) | Cond::Divides(_, e) | Cond::Equals(e, _) => *e,
        };
        e.as_const().and_then(|_| self.holds(&[]))
    }
    pub fn show(&self, names: &[String]) -> String {
        match self {
            Cond::MultipleOf(e, c) => format!("{} mod {c} = 0", paren(*e, names)),
            Cond::Divides(c, e) => format!("{} divides {c}", paren(*e, names)),
            Cond::Equals(e, v) => format!("{} = {v}", display(*e, names)),
        }
    }
}

fn paren(e: Expr, names: &[String]) -> String {
    let s = display(e, names).to_string();
    if e.as_var().is_some() || e.as_const().is_some() {
        s
    } else {
        format!("({s})")
    }
}

/// One case of a symbolic tile: under `conds`, the operand's tile is `offsets` (over the
/// origins `o_i` and the runtime variables), `sizes` (over the size symbols), `strides`,
/// cut to `clips`.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub conds: Vec<Cond>,
    pub offsets: Vec<Expr>,
    pub sizes: Vec<Expr>,
    pub strides: Vec<i64>,
    pub clips: Vec<Interval>,
}

/// The symbolic tile of one operand: every case found (at least one).
#[derive(Clone, Debug, PartialEq)]
pub struct SymbolicTile {
    pub cases: Vec<Case>,
    /// Names of the offset space: the origins `o_i`, then the runtime variables.
    pub offset_names: Vec<String>,
}

/// A tile size as the user gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Size {
    Fixed(i64),
    Symbol(String),
}

#[derive(Clone, Debug)]
struct Elem {
    size: Expr,
    origin: String,
    /// Elements this one was merged from (`d0 * 8 + d1`).
    parts: Vec<usize>,
    /// The element this one was split from.
    parent: Option<usize>,
}

#[derive(Clone, Debug)]
struct State {
    conds: Vec<Cond>,
    /// Sizes a condition fixes (`ts1 = 8`), substituted everywhere.
    pinned: Vec<(u32, i64)>,
    elems: Vec<Elem>,
    /// (element, divisor, hi part, lo part) of every whole-row split.
    splits: Vec<(usize, i64, usize, usize)>,
}

#[derive(Clone, Debug, PartialEq)]
struct Form {
    /// Over the offset space (origins, then runtime variables).
    off: Expr,
    terms: Vec<(i64, usize)>,
}

impl State {
    fn pin(&self, e: Expr) -> Expr {
        if self.pinned.is_empty() {
            return e;
        }
        canonical(e.substitute(&mut |v| {
            self.pinned
                .iter()
                .find(|p| p.0 == v)
                .map_or(Expr::var(v), |p| Expr::constant(p.1))
        }))
    }
    fn pin_cond(&self, c: Cond) -> Cond {
        match c {
            Cond::MultipleOf(e, k) => Cond::MultipleOf(self.pin(e), k),
            Cond::Divides(k, e) => Cond::Divides(k, self.pin(e)),
            Cond::Equals(e, v) => Cond::Equals(self.pin(e), v),
        }
    }
    /// Adds a condition; `false` when it is known not to hold.
    fn require(&mut self, c: Cond) -> bool {
        let c = self.pin_cond(c);
        match c.constant() {
            Some(true) => true,
            Some(false) => false,
            None => {
                if let Cond::Equals(e, v) = &c {
                    if let Some(x) = e.as_var() {
                        // A size fixed: substitute it into every condition and extent.
                        self.pinned.push((x, *v));
                        let old = std::mem::take(&mut self.conds);
                        for k in old {
                            if !self.require(k) {
                                return false;
                            }
                        }
                        for i in 0..self.elems.len() {
                            self.elems[i].size = self.pin(self.elems[i].size);
                        }
                        return true;
                    }
                }
                // `e mod c = 0` is implied by `e mod c' = 0` when c divides c', and
                // replaces it when c' divides c.
                if let Cond::MultipleOf(e, k) = &c {
                    if self
                        .conds
                        .iter()
                        .any(|x| matches!(x, Cond::MultipleOf(f, k2) if f == e && k2 % k == 0))
                    {
                        return true;
                    }
                    self.conds
                        .retain(|x| !matches!(x, Cond::MultipleOf(f, k2) if f == e && k % k2 == 0));
                }
                // `e mod c = 0` and `e divides c`: `e = c`.
                let both = match &c {
                    Cond::MultipleOf(e, k) => self
                        .conds
                        .iter()
                        .position(|x| *x == Cond::Divides(*k, *e))
                        .map(|i| (i, *e, *k)),
                    Cond::Divides(k, e) => self
                        .conds
                        .iter()
                        .position(|x| *x == Cond::MultipleOf(*e, *k))
                        .map(|i| (i, *e, *k)),
                    Cond::Equals(..) => None,
                };
                if let Some((i, e, k)) = both {
                    self.conds.remove(i);
                    return self.require(Cond::Equals(e, k));
                }
                // `e divides 1`: `e = 1`.
                if let Cond::Divides(1, e) = &c {
                    return self.require(Cond::Equals(*e, 1));
                }
                // `e divides a` and `e divides b`: `e divides gcd(a, b)`.
                if let Cond::Divides(k, e) = &c {
                    if let Some(i) = self
                        .conds
                        .iter()
                        .position(|x| matches!(x, Cond::Divides(_, f) if f == e))
                    {
                        let Cond::Divides(k2, _) = self.conds.remove(i) else {
                            unreachable!("matched above")
                        };
                        return self.require(Cond::Divides(gcd(*k, k2), *e));
                    }
                }
                if !self.conds.contains(&c) {
                    self.conds.push(c);
                }
                true
            }
        }
    }
}

struct Ctx<'a> {
    map: &'a IndexingMap,
    /// Size expression of each output dimension (a constant or the size symbol).
    dim_size: Vec<Expr>,
    /// The element variable of each dimension, and of each range variable.
    dim_elem: Vec<usize>,
    range_elem: Vec<usize>,
}

type Fail = String;

fn unsupported(what: impl std::fmt::Display) -> Fail {
    format!("{what}; give concrete sizes")
}

impl Ctx<'_> {
    /// Every form `e` can take, each with the state it needs.
    fn eval(&self, e: Expr, st: State) -> Result<Vec<(Form, State)>, Fail> {
        use crate::expr::{ExprKind, Op};
        let n = self.map.dims.len();
        let ns = self.map.ranges.len();
        match e.kind() {
            ExprKind::Const(c) => Ok(vec![(
                Form {
                    off: Expr::constant(c),
                    terms: vec![],
                },
                st,
            )]),
            ExprKind::Var(v) => {
                let v = v as usize;
                let f = if v < n {
                    Form {
                        off: Expr::var(v as u32),
                        terms: vec![(1, self.dim_elem[v])],
                    }
                } else if v < n + ns {
                    Form {
                        off: Expr::constant(self.map.ranges[v - n].bounds.lo),
                        terms: vec![(1, self.range_elem[v - n])],
                    }
                } else {
                    Form {
                        off: Expr::var((n + v - n - ns) as u32),
                        terms: vec![],
                    }
                };
                Ok(vec![(f, st)])
            }
            ExprKind::Bin(op, a, b) => {
                let mut out = Vec::new();
                match op {
                    Op::Add => {
                        for (fa, sa) in self.eval(a, st)? {
                            for (fb, sb) in self.eval(b, sa)? {
                                let mut terms = fa.terms.clone();
                                for (k, x) in fb.terms {
                                    match terms.iter_mut().find(|t| t.1 == x) {
                                        Some(t) => t.0 += k,
                                        None => terms.push((k, x)),
                                    }
                                }
                                terms.retain(|t| t.0 != 0);
                                out.push((
                                    Form {
                                        off: canonical(fa.off.add(fb.off)),
                                        terms,
                                    },
                                    sb,
                                ));
                            }
                        }
                    }
                    Op::Mul => {
                        let (c, x) = match (a.as_const(), b.as_const()) {
                            (_, Some(c)) => (c, a),
                            (Some(c), _) => (c, b),
                            _ => return Err(unsupported("a product of variables")),
                        };
                        for (f, s) in self.eval(x, st)? {
                            let mut terms = Vec::new();
                            for (k, x) in f.terms {
                                let k = k
                                    .checked_mul(c)
                                    .ok_or_else(|| "a coefficient overflows".to_string())?;
                                if k != 0 {
                                    terms.push((k, x));
                                }
                            }
                            out.push((
                                Form {
                                    off: canonical(f.off.mul(Expr::constant(c))),
                                    terms,
                                },
                                s,
                            ));
                        }
                    }
                    Op::FloorDiv | Op::Mod => {
                        let Some(c) = b.as_const().filter(|&c| c > 0) else {
                            return Err(unsupported("a division by a non-constant"));
                        };
                        // A case that cannot go on is dropped; an error only when none can.
                        let mut why = None;
                        for (f, s) in self.eval(a, st)? {
                            // Steps that are multiples of c leave the division whole:
                            // (x + c*q*k) floordiv c = x floordiv c + q*k, and mod drops them.
                            let (whole, rest): (Vec<_>, Vec<_>) =
                                f.terms.iter().partition(|t| t.0 % c == 0);
                            let f = Form {
                                off: f.off,
                                terms: rest,
                            };
                            for (g, s2) in self.merge(f, s)? {
                                match self.divmod(g, s2, c, op == Op::Mod) {
                                    Ok(v) => out.extend(v.into_iter().map(|(mut h, s3)| {
                                        if op == Op::FloorDiv {
                                            h.terms.extend(whole.iter().map(|t| (t.0 / c, t.1)));
                                        }
                                        (h, s3)
                                    })),
                                    Err(e) => why = Some(e),
                                }
                            }
                        }
                        if let (true, Some(e)) = (out.is_empty(), why) {
                            return Err(e);
                        }
                    }
                    Op::CeilDiv => return Err(unsupported("ceildiv")),
                    Op::Min | Op::Max => return Err(unsupported("min or max")),
                }
                Ok(out)
            }
        }
    }

    /// The form with its element variables merged into at most one, in every way the
    /// sizes allow: one contiguous run of all of them, or one of them alone while the others
    /// have one element (no way: no case).
    fn merge(&self, f: Form, st: State) -> Result<Vec<(Form, State)>, Fail> {
        let terms: Vec<(i64, usize)> = f
            .terms
            .iter()
            .copied()
            .filter(|&(_, x)| st.elems[x].size.as_const() != Some(1))
            .collect();
        if terms.len() <= 1 {
            return Ok(vec![(Form { off: f.off, terms }, st)]);
        }
        let mut out = Vec::new();
        if terms.iter().all(|t| t.0 > 0) {
            if let Some(x) = self.merge_all(&f, &terms, st.clone()) {
                out.push(x);
            }
        }
        for j in 0..terms.len() {
            let mut s = st.clone();
            let ok = (0..terms.len())
                .filter(|&i| i != j)
                .all(|i| s.require(Cond::Equals(s.elems[terms[i].1].size, 1)));
            if ok {
                out.push((
                    Form {
                        off: f.off,
                        terms: vec![terms[j]],
                    },
                    s,
                ));
            }
        }
        if out.is_empty() && terms.iter().any(|t| t.0 < 0) {
            return Err(unsupported(
                "several tile elements with a negative step in one coordinate",
            ));
        }
        Ok(out)
    }

    fn merge_all(&self, f: &Form, terms: &[(i64, usize)], mut st: State) -> Option<(Form, State)> {
        let mut terms = terms.to_vec();
        terms.sort();
        let step = terms[0].0;
        let mut span = st.elems[terms[0].1].size;
        for &(a, x) in &terms[1..] {
            if a % step != 0 {
                return None;
            }
            let ratio = a / step;
            // Contiguous when the run so far is exactly `ratio` long.
            if !st.require(Cond::Equals(span, ratio)) {
                return None;
            }
            span = canonical(Expr::constant(ratio).mul(st.pin(st.elems[x].size)));
        }
        let parts: Vec<usize> = terms.iter().map(|t| t.1).collect();
        // The same run merged again (a reshape's `floordiv` and `mod` of one sum) is the same
        // element variable.
        if let Some(id) = st.elems.iter().position(|e| e.parts == parts) {
            return Some((
                Form {
                    off: f.off,
                    terms: vec![(step, id)],
                },
                st,
            ));
        }
        let origin = terms
            .iter()
            .map(|t| st.elems[t.1].origin.clone())
            .collect::<Vec<_>>()
            .join("*");
        st.elems.push(Elem {
            size: span,
            origin,
            parts: terms.iter().map(|t| t.1).collect(),
            parent: None,
        });
        let id = st.elems.len() - 1;
        Some((
            Form {
                off: f.off,
                terms: vec![(step, id)],
            },
            st,
        ))
    }

    /// Whether the offset is a multiple of `m` at every tile origin, as conditions: the
    /// coefficient of each origin times its size is a multiple of `m`, the constant too.
    /// `None`: not expressible (runtime variables, non-linear offsets).
    fn offset_multiple(&self, st: &State, off: Expr, m: Expr) -> Option<Vec<Cond>> {
        let n = self.map.dims.len();
        let lin = Linear::of(off)?;
        let m = st.pin(m);
        let mut conds = Vec::new();
        for &(atom, k) in &lin.terms {
            // `o floordiv d` of an origin that is a multiple of d is o / d exactly.
            if let crate::expr::ExprKind::Bin(crate::expr::Op::FloorDiv, x, dd) = atom.kind() {
                let (v, d) = (x.as_var()? as usize, dd.as_const()?);
                if v >= n || d <= 0 {
                    return None;
                }
                let ts = st.pin(self.dim_size[v]);
                conds.push(Cond::MultipleOf(ts, d));
                let exact = canonical(ts.floordiv(dd));
                if exact == m || canonical(Expr::constant(k).mul(exact)) == m {
                    continue;
                }
                let mc = m.as_const()?;
                conds.push(Cond::MultipleOf(
                    canonical(Expr::constant(k).mul(ts)),
                    mc.checked_mul(d)?,
                ));
                continue;
            }
            let v = atom.as_var()? as usize;
            if v >= n {
                return None; // a runtime variable: any value
            }
            let ts = st.pin(self.dim_size[v]);
            if ts.as_const() == Some(self.map.dims[v].bounds.hi + 1) {
                continue; // one tile along this dimension: its origin is 0
            }
            let km = canonical(Expr::constant(k).mul(ts));
            if ts == m || km == m {
                continue; // k * (t * ts) is a multiple of m
            }
            match m.as_const() {
                Some(mc) => conds.push(Cond::MultipleOf(km, mc)),
                None => return None,
            }
        }
        if lin.constant != 0 {
            match m.as_const() {
                Some(mc) => conds.push(Cond::MultipleOf(Expr::constant(lin.constant), mc)),
                None => conds.push(Cond::Divides(lin.constant.abs(), m)),
            }
        }
        Some(conds)
    }

    fn divmod(&self, f: Form, st: State, c: i64, is_mod: bool) -> Result<Vec<(Form, State)>, Fail> {
        let apply = |off: Expr| {
            canonical(if is_mod {
                off.modulo(Expr::constant(c))
            } else {
                off.floordiv(Expr::constant(c))
            })
        };
        let Some(&(s, x)) = f.terms.first() else {
            return Ok(vec![(
                Form {
                    off: apply(f.off),
                    terms: vec![],
                },
                st,
            )]);
        };
        if s != 1 {
            if s % c == 0 {
                // (off + c*q*k) floordiv c = off floordiv c + q*k; mod drops the run.
                let terms = if is_mod { vec![] } else { vec![(s / c, x)] };
                return Ok(vec![(
                    Form {
                        off: apply(f.off),
                        terms,
                    },
                    st,
                )]);
            }
            return Err(unsupported(format!(
                "a `floordiv`/`mod` {c} of elements {s} apart"
            )));
        }
        let z = st.elems[x].size;
        let mut out = Vec::new();
        // Whole rows.
        if let Some(conds) = self.offset_multiple(&st, f.off, Expr::constant(c)) {
            let mut a = st.clone();
            let mut ok = a.require(Cond::MultipleOf(z, c));
            for k in conds {
                ok = ok && a.require(k);
            }
            if ok {
                match a
                    .splits
                    .iter()
                    .find(|sp| sp.0 == x)
                    .map(|sp| (sp.1, sp.2, sp.3))
                {
                    Some((c1, hi1, lo1)) if c1 != c && c1 % c == 0 => {
                        // Split before by a multiple of c (a reshape of three dimensions):
                        // e = c1 * hi1 + lo1, and lo1 splits by c into whole rows.
                        let (lh, ll) = split(&mut a, lo1, c)
                            .ok_or_else(|| unsupported("an element run split by two divisors"))?;
                        out.push((
                            if is_mod {
                                Form {
                                    off: Expr::constant(0),
                                    terms: vec![(1, ll)],
                                }
                            } else {
                                Form {
                                    off: apply(f.off),
                                    terms: vec![(c1 / c, hi1), (1, lh)],
                                }
                            },
                            a,
                        ));
                    }
                    _ => {
                        let (hi, lo) = split(&mut a, x, c)
                            .ok_or_else(|| unsupported("an element run split by two divisors"))?;
                        out.push((
                            if is_mod {
                                Form {
                                    off: Expr::constant(0),
                                    terms: vec![(1, lo)],
                                }
                            } else {
                                Form {
                                    off: apply(f.off),
                                    terms: vec![(1, hi)],
                                }
                            },
                            a,
                        ));
                    }
                }
            }
        }
        // Inside a row.
        if let Some(conds) = self.offset_multiple(&st, f.off, z) {
            let mut b = st;
            let mut ok = b.require(Cond::Divides(c, z));
            for k in conds {
                ok = ok && b.require(k);
            }
            if ok {
                out.push((
                    Form {
                        off: apply(f.off),
                        terms: if is_mod { vec![(1, x)] } else { vec![] },
                    },
                    b,
                ));
            }
        }
        Ok(out)
    }
}

/// The pieces of `x` split into rows of `c`: `x = c * hi + lo` (made once, then reused);
/// `None` when `x` was split by another divisor.
fn split(st: &mut State, x: usize, c: i64) -> Option<(usize, usize)> {
    match st.splits.iter().find(|sp| sp.0 == x) {
        Some(&(_, d, hi, lo)) => (d == c).then_some((hi, lo)),
        None => {
            let z = st.elems[x].size;
            let origin = st.elems[x].origin.clone();
            st.elems.push(Elem {
                size: canonical(z.floordiv(Expr::constant(c))),
                origin: origin.clone(),
                parts: vec![],
                parent: Some(x),
            });
            st.elems.push(Elem {
                size: Expr::constant(c),
                origin,
                parts: vec![],
                parent: Some(x),
            });
            let (hi, lo) = (st.elems.len() - 2, st.elems.len() - 1);
            st.splits.push((x, c, hi, lo));
            Some((hi, lo))
        }
    }
}

/// The symbolic tile of the operand `map` reads, for output tiles of `sizes`. An error says
/// why no case exists (or what is not supported with symbolic sizes).
///
/// `extents` is the output's shape: the tile grid covers it whole even where the map's own
/// domain is a part of it (a concatenate's operand, a pad's source).
pub fn derive_symbolic(
    map: &IndexingMap,
    extents: &[i64],
    sizes: &[Size],
) -> Result<SymbolicTile, String> {
    let map = &widen(map, extents)?;
    if let Some(&(c, iv)) = map.constraints.iter().find(|c| c.0.has_div()) {
        return Err(unsupported(format!(
            "the constraint `{} in {iv}` keeps a strided subset (interior padding)",
            map.show_expr(c)
        )));
    }
    match map.status {
        Status::Undefined => return Err("the map is UNDEFINED".into()),
        Status::KnownEmpty => {
            return Err("the map is KNOWN EMPTY: no tile reads this operand".into())
        }
        Status::Defined => {}
    }
    let n = map.dims.len();
    if sizes.len() != n {
        return Err(format!(
            "the map has {n} dimension{} but {} tile size{} given",
            if n == 1 { "" } else { "s" },
            sizes.len(),
            if sizes.len() == 1 { " is" } else { "s are" }
        ));
    }
    let mut st = State {
        conds: vec![],
        pinned: vec![],
        elems: vec![],
        splits: vec![],
    };
    let mut dim_size = Vec::new();
    let mut dim_elem = Vec::new();
    for (i, (d, z)) in map.dims.iter().zip(sizes).enumerate() {
        if d.bounds.is_full() {
            return Err(format!(
                "{} has no bounds, so it cannot be cut into tiles",
                d.name
            ));
        }
        let e = match z {
            Size::Fixed(v) if *v >= 1 => Expr::constant(*v),
            Size::Fixed(v) => return Err(format!("tile size {v} is not positive")),
            Size::Symbol(_) => Expr::var(i as u32),
        };
        dim_size.push(e);
        st.elems.push(Elem {
            size: e,
            origin: d.name.clone(),
            parts: vec![],
            parent: None,
        });
        dim_elem.push(st.elems.len() - 1);
    }
    let mut range_elem = Vec::new();
    for s in &map.ranges {
        let ext = s
            .bounds
            .size()
            .filter(|_| !s.bounds.is_full())
            .and_then(|x| i64::try_from(x).ok())
            .ok_or_else(|| format!("range variable {} has no bounds", s.name))?;
        st.elems.push(Elem {
            size: Expr::constant(ext),
            origin: s.name.clone(),
            parts: vec![],
            parent: None,
        });
        range_elem.push(st.elems.len() - 1);
    }
    let cx = Ctx {
        map,
        dim_size,
        dim_elem,
        range_elem,
    };
    // Every coordinate, forked over the cases.
    let mut partial: Vec<(Vec<Form>, State)> = vec![(vec![], st)];
    for &r in &map.results {
        let mut next = Vec::new();
        for (forms, s) in partial {
            for (f, s2) in cx.eval(r, s)? {
                for (g, s3) in cx.merge(f, s2)? {
                    let mut fs = forms.clone();
                    fs.push(g);
                    next.push((fs, s3));
                }
            }
        }
        partial = next;
        if partial.len() > 64 {
            return Err(unsupported("more than 64 cases"));
        }
    }
    let mut cases = Vec::new();
    let mut why_not = None;
    for (forms, s) in partial {
        match finish(&cx, forms, s) {
            Ok(c) => {
                if !cases.contains(&c) {
                    cases.push(c)
                }
            }
            Err(e) => why_not = Some(e),
        }
    }
    if cases.is_empty() {
        return Err(why_not.unwrap_or_else(|| {
            "no sizes make it a tile: a `floordiv`/`mod` needs runs of whole rows or runs inside a row".into()
        }));
    }
    let mut offset_names: Vec<String> = (0..n).map(|i| format!("o{i}")).collect();
    offset_names.extend(map.runtimes.iter().map(|r| r.name.clone()));
    Ok(SymbolicTile {
        cases,
        offset_names,
    })
}

/// The map with every dimension starting at 0: a dimension that starts later (a
/// concatenate's second operand, a pad's source) keeps its start as a constraint, so tiles
/// start at multiples of their size in the output's own coordinates.
pub fn widen(map: &IndexingMap, extents: &[i64]) -> Result<IndexingMap, String> {
    let mut m = map.clone();
    if extents.len() != m.dims.len() {
        return Err(format!(
            "the map has {} dimensions but the output {}",
            m.dims.len(),
            extents.len()
        ));
    }
    for (i, d) in m.dims.iter_mut().enumerate() {
        if d.bounds.is_full() {
            return Err(format!(
                "{} has no bounds, so it cannot be cut into tiles",
                d.name
            ));
        }
        if d.bounds.lo < 0 {
            return Err(format!("{} starts below 0", d.name));
        }
        let whole = Interval::new(0, extents[i].max(d.bounds.hi + 1) - 1);
        if d.bounds != whole {
            m.constraints.push((Expr::var(i as u32), d.bounds));
            d.bounds = whole;
        }
    }
    Ok(m)
}

/// One element variable per coordinate, each used once; constraints become clips.
fn finish(cx: &Ctx, forms: Vec<Form>, mut st: State) -> Result<Case, String> {
    let map = cx.map;
    let m = forms.len();
    // Usage: two coordinates may move with the same original elements only as different
    // pieces of one split (a reshape's row and column); anything else is a diagonal.
    let ne = st.elems.len();
    let mut read = vec![false; ne];
    let mut seen: Vec<(usize, Vec<usize>)> = Vec::new(); // (coordinate, atoms)
    for (j, f) in forms.iter().enumerate() {
        let Some(&(_, x)) = f.terms.first() else {
            continue;
        };
        let mut at = Vec::new();
        atoms(&st, x, &mut at);
        for (i, other) in &seen {
            if at
                .iter()
                .any(|&a| other.iter().any(|&b| overlap(&st, a, b)))
            {
                return Err(format!(
                    "operand dimensions {i} and {j} both move with {}: the elements lie on a diagonal, which is not a tile",
                    st.elems[x].origin
                ));
            }
        }
        for &a in &at {
            for t in touches(&st, a) {
                read[t] = true;
            }
        }
        seen.push((j, at));
    }
    // Constraints of the map, and the dimensions' own bounds, as clips.
    let mut clips = vec![Interval::FULL; m];
    let mut all: Vec<(Expr, Interval, bool)> = map
        .dims
        .iter()
        .enumerate()
        .map(|(i, d)| (Expr::var(i as u32), d.bounds, true))
        .collect();
    all.extend(map.constraints.iter().map(|&(c, iv)| (c, iv, false)));
    for (i, (c, iv, is_dim)) in all.into_iter().enumerate() {
        let forms_c = cx.eval(c, st.clone())?;
        let [(fc, sc)] = forms_c.as_slice() else {
            return Err(unsupported("a constraint that is not affine"));
        };
        let merged = cx.merge(fc.clone(), sc.clone())?;
        let [(fc, _)] = merged.as_slice() else {
            return Err(unsupported("a constraint over several dimensions"));
        };
        if fc.terms.is_empty() {
            // On the tile origin alone: it must hold at every origin.
            let mut b: Vec<Interval> = map.dims.iter().map(|d| d.bounds).collect();
            b.extend(map.runtimes.iter().map(|r| r.bounds));
            if iv.contains_interval(&crate::interval::range_of(fc.off, &b)) {
                continue;
            }
            return Err(unsupported("a constraint on where the tile starts"));
        }
        // A coordinate that is `k * (the constrained expression) + δ` is cut to
        // `k * interval + δ`.
        let target = forms.iter().enumerate().find_map(|(j, f)| {
            if f.terms.len() != fc.terms.len() || f.terms.is_empty() {
                return None;
            }
            let (a, x) = f.terms[0];
            let (b, y) = fc.terms[0];
            if x != y || a % b != 0 {
                return None;
            }
            let k = a / b;
            let d = canonical(f.off.sub(fc.off.mul(Expr::constant(k)))).as_const()?;
            Some((j, k, d))
        });
        match target {
            Some((j, k, d)) => {
                let (x, y) = (
                    iv.lo.saturating_mul(k).saturating_add(d),
                    iv.hi.saturating_mul(k).saturating_add(d),
                );
                clips[j] = clips[j].intersect(&Interval::new(x.min(y), x.max(y)));
            }
            None if is_dim
                && fc.terms.iter().all(|&(_, x)| {
                    let mut a = Vec::new();
                    atoms(&st, x, &mut a);
                    a.iter().all(|&y| !read[y])
                }) =>
            {
                // No coordinate reads along these elements: the set read does not change
                // with the cut (the tile is never empty: its origin is in range).
            }
            None if is_dim => {
                // A partial tile along a dimension whose elements were regrouped: whole tiles
                // only.
                let ts = cx.dim_size[i];
                let n_i = map.dims[i].bounds.hi + 1;
                if !st.require(Cond::Divides(n_i, ts)) {
                    return Err(format!(
                        "a partial tile along {} is cut where its elements were regrouped",
                        map.dims[i].name
                    ));
                }
            }
            None => {
                return Err(unsupported(format!(
                    "the constraint `{} in {iv}` clips no single coordinate of the operand",
                    map.show_expr(c)
                )))
            }
        }
    }
    // A size pinned to its whole extent leaves one tile along that dimension: origin 0.
    let n = map.dims.len();
    let single: Vec<bool> = (0..n)
        .map(|i| st.pin(cx.dim_size[i]).as_const() == Some(map.dims[i].bounds.hi + 1))
        .collect();
    let zero_origin = |e: Expr| {
        canonical(e.substitute(&mut |v| {
            if (v as usize) < n && single[v as usize] {
                Expr::constant(0)
            } else {
                Expr::var(v)
            }
        }))
    };
    let mut offsets = Vec::new();
    let mut sizes = Vec::new();
    let mut strides = Vec::new();
    for f in &forms {
        offsets.push(zero_origin(f.off));
        match f.terms.first() {
            Some(&(s, x)) => {
                sizes.push(st.pin(st.elems[x].size));
                strides.push(s);
            }
            None => {
                sizes.push(Expr::constant(1));
                strides.push(1);
            }
        }
    }
    let mut conds: Vec<Cond> = st
        .pinned
        .iter()
        .map(|&(v, x)| Cond::Equals(Expr::var(v), x))
        .collect();
    conds.extend(st.conds);
    Ok(Case {
        conds,
        offsets,
        sizes,
        strides,
        clips,
    })
}

/// The pieces an element variable is made of: itself, or its merged parts' pieces.
fn atoms(st: &State, x: usize, out: &mut Vec<usize>) {
    if st.elems[x].parts.is_empty() {
        out.push(x);
    }
    for &y in &st.elems[x].parts {
        atoms(st, y, out);
    }
}

/// `x`, the elements it was split from, and every piece of a merged element on that chain:
/// all that `x` shares elements with (an over-approximation).
fn touches(st: &State, x: usize) -> Vec<usize> {
    let mut out = vec![];
    let mut cur = Some(x);
    while let Some(c) = cur {
        out.push(c);
        if !st.elems[c].parts.is_empty() {
            let mut a = Vec::new();
            atoms(st, c, &mut a);
            for y in a {
                for t in touches(st, y) {
                    if !out.contains(&t) {
                        out.push(t);
                    }
                }
            }
        }
        cur = st.elems[c].parent;
    }
    out
}

/// Whether two pieces share elements: not when they lie in different pieces of one split,
/// else whenever what they touch meets.
fn overlap(st: &State, a: usize, b: usize) -> bool {
    let chain = |mut x: usize| {
        let mut v = vec![x];
        while let Some(p) = st.elems[x].parent {
            v.push(p);
            x = p;
        }
        v
    };
    let (ca, cb) = (chain(a), chain(b));
    if let Some(ia) = ca.iter().position(|c| cb.contains(c)) {
        let ib = cb.iter().position(|c| *c == ca[ia]).unwrap_or(0);
        if ia > 0 && ib > 0 && ca[ia - 1] != cb[ib - 1] {
            return false; // different pieces of the split of ca[ia]
        }
        return true;
    }
    let tb = touches(st, b);
    touches(st, a).iter().any(|t| tb.contains(t))
}

impl Case {
    /// Whether every condition holds at these sizes.
    pub fn applies(&self, sizes: &[i64]) -> bool {
        self.conds.iter().all(|c| c.holds(sizes) == Some(true))
    }

    /// The concrete tile at these sizes, over the tile index space of `map`.
    pub fn instantiate(&self, map: &IndexingMap, sizes: &[i64]) -> Result<OperandTile, String> {
        let n = map.dims.len();
        let mut dims = Vec::new();
        for (i, d) in map.dims.iter().enumerate() {
            dims.push(Variable::new(
                format!("t{i}"),
                arith::floor_div(d.bounds.lo, sizes[i]),
                arith::floor_div(d.bounds.hi, sizes[i]),
            ));
        }
        let m = self.offsets.len();
        let mut ranges = Vec::new();
        let mut z = Vec::new();
        for j in 0..m {
            let v = arith::eval(self.sizes[j], sizes)
                .map_err(|e| format!("size of coordinate {j}: {e}"))?;
            if v < 1 {
                return Err(format!("coordinate {j} has size {v} at these sizes"));
            }
            z.push(v);
            ranges.push(Variable::new(format!("k{j}"), 0, v - 1));
        }
        let runtimes: Vec<Variable> = map.runtimes.clone();
        // Offset space (o_i, runtime r) -> tile map space (t_i, k_j, r).
        let mut to_tile = |v: u32| {
            let v = v as usize;
            if v < n {
                Expr::var(v as u32).mul(Expr::constant(sizes[v]))
            } else {
                Expr::var((m + v) as u32)
            }
        };
        let offsets: Vec<Expr> = self
            .offsets
            .iter()
            .map(|o| canonical(o.substitute(&mut to_tile)))
            .collect();
        let results: Vec<Expr> = (0..m)
            .map(|j| {
                canonical(
                    offsets[j].add(Expr::var((n + j) as u32).mul(Expr::constant(self.strides[j]))),
                )
            })
            .collect();
        let constraints: Vec<(Expr, Interval)> = (0..m)
            .filter(|&j| !self.clips[j].is_full())
            .map(|j| (results[j], self.clips[j]))
            .collect();
        let tile_map =
            IndexingMap::new(dims.clone(), ranges, runtimes.clone(), results, constraints);
        let offset_map = IndexingMap::new(dims, vec![], runtimes, offsets, vec![]);
        Ok(OperandTile {
            offsets: offset_map,
            sizes: z,
            strides: self.strides.clone(),
            clips: self.clips.clone(),
            masks: vec![],
            map: tile_map,
        })
    }
}

/// How [`verify`]'s error starts when the enumeration itself could not run (a domain too
/// large, a map that overflows), as opposed to a case found wrong.
pub const CANNOT: &str = "cannot enumerate";

/// What checking a symbolic tile against enumeration found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// Size assignments tried, and how many of them some case applies to.
    pub tried: usize,
    pub covered: usize,
    /// Whether `tried` is every assignment of the symbols in their ranges.
    pub all: bool,
    /// Assignments where a concrete tile exists but no case applies (first one, count).
    pub uncovered: Option<(Vec<i64>, usize)>,
    /// Cases that apply only where another case does (found when every choice was tried).
    pub redundant: Vec<usize>,
}

/// The values each size takes in the check: every value when few, else a spread that keeps
/// the divisors and powers of two of the extent.
fn values(n: i64, fixed: Option<i64>, keep: usize) -> (Vec<i64>, bool) {
    if let Some(v) = fixed {
        return (vec![v], true);
    }
    if n as u64 <= keep as u64 {
        return ((1..=n).collect(), true);
    }
    let mut v: Vec<i64> = (1..=n.min(4096))
        .filter(|z| n % z == 0 || z.count_ones() == 1)
        .collect();
    v.extend(
        [3, 5, 6, 7, 12, n - 1]
            .into_iter()
            .filter(|&z| z >= 1 && z <= n),
    );
    v.sort();
    v.dedup();
    if v.len() > keep {
        let step = v.len() as f64 / keep as f64;
        v = (0..keep).map(|i| v[(i as f64 * step) as usize]).collect();
    }
    (v, false)
}

/// Instantiates every case at every size assignment it applies to (all of them, or a spread
/// when there are too many) and enumerates both sides; an error names the first assignment
/// where a case is wrong. `limits` bounds the points of one enumeration.
pub fn verify(
    map: &IndexingMap,
    extents: &[i64],
    sizes: &[Size],
    tile: &SymbolicTile,
    limits: &Limits,
) -> Result<Checked, String> {
    let map = &widen(map, extents)?;
    let points = super::check::box_points(&map.bounds());
    if points > limits.max_points {
        return Err(format!(
            "{CANNOT}: the map's domain has more than {} points",
            limits.max_points
        ));
    }
    // Spend about 2^24 points in all.
    let budget = ((1u64 << 24) / points.max(1)).clamp(1, 4096) as usize;
    let nsym = sizes
        .iter()
        .filter(|s| matches!(s, Size::Symbol(_)))
        .count()
        .max(1);
    let every: u64 = map
        .dims
        .iter()
        .zip(sizes)
        .filter(|(_, s)| matches!(s, Size::Symbol(_)))
        .fold(1u64, |acc, (d, _)| {
            acc.saturating_mul((d.bounds.hi + 1) as u64)
        });
    let keep = if every <= budget as u64 {
        usize::MAX
    } else {
        ((budget as f64).powf(1.0 / nsym as f64) as usize).max(2)
    };
    let mut all = true;
    let per_dim: Vec<Vec<i64>> = map
        .dims
        .iter()
        .zip(sizes)
        .map(|(d, s)| {
            let fixed = match s {
                Size::Fixed(v) => Some(*v),
                Size::Symbol(_) => None,
            };
            let (v, every) = values(d.bounds.hi + 1, fixed, keep);
            all &= every;
            v
        })
        .collect();
    let mut tried = 0;
    let mut covered = 0;
    let mut uncovered: Option<(Vec<i64>, usize)> = None;
    let mut failure = None;
    let mut applies: Vec<Vec<bool>> = vec![Vec::new(); tile.cases.len()];
    let bounds: Vec<Interval> = per_dim
        .iter()
        .map(|v| Interval::new(0, v.len() as i64 - 1))
        .collect();
    let _ = super::check::for_each_in_box(&bounds, &mut |ix| {
        let z: Vec<i64> = ix
            .iter()
            .enumerate()
            .map(|(i, &k)| per_dim[i][k as usize])
            .collect();
        tried += 1;
        let mut any = false;
        for (ci, c) in tile.cases.iter().enumerate() {
            let on = c.applies(&z);
            applies[ci].push(on);
            if !on {
                continue;
            }
            any = true;
            let t = match c.instantiate(map, &z) {
                Ok(t) => t,
                Err(e) => {
                    failure = Some(format!("case {} at sizes ({}): {e}", ci + 1, join(&z)));
                    return Ok(false);
                }
            };
            match check_exact(map, &z, &t, limits) {
                Ok(super::check::Verdict::Exact { .. }) => {}
                Ok(super::check::Verdict::Differs {
                    tile,
                    element,
                    only_in_map,
                }) => {
                    failure = Some(format!(
                        "case {} at sizes ({}), tile ({}): element ({}) {}",
                        ci + 1,
                        join(&z),
                        join(&tile),
                        join(&element),
                        if only_in_map {
                            "is read but not in the tile"
                        } else {
                            "is in the tile but not read"
                        }
                    ));
                    return Ok(false);
                }
                Err(e) => {
                    failure = Some(format!("{CANNOT}: {e}"));
                    return Ok(false);
                }
            }
        }
        if any {
            covered += 1;
        } else if derive(map, &z).is_ok() {
            match &mut uncovered {
                Some((_, k)) => *k += 1,
                None => uncovered = Some((z.clone(), 1)),
            }
        }
        Ok(true)
    });
    if let Some(f) = failure {
        return Err(f);
    }
    let mut redundant = Vec::new();
    if !all {
        // A case for one choice of sizes is redundant where another applies at it.
        for (i, c) in tile.cases.iter().enumerate() {
            let point: Option<Vec<i64>> = sizes
                .iter()
                .enumerate()
                .map(|(d, z)| match z {
                    Size::Fixed(v) => Some(*v),
                    Size::Symbol(_) => c.conds.iter().find_map(|k| match k {
                        Cond::Equals(e, v) if e.as_var() == Some(d as u32) => Some(*v),
                        _ => None,
                    }),
                })
                .collect();
            if let Some(p) = point {
                if tile
                    .cases
                    .iter()
                    .enumerate()
                    .any(|(j, o)| j != i && !redundant.contains(&j) && o.applies(&p))
                {
                    redundant.push(i);
                }
            }
        }
    }
    if all {
        let subset = |a: &[bool], b: &[bool]| a.iter().zip(b).all(|(x, y)| !x || *y);
        for i in 0..applies.len() {
            let covered_by_other = (0..applies.len()).any(|j| {
                j != i
                    && !redundant.contains(&j)
                    && subset(&applies[i], &applies[j])
                    && (!subset(&applies[j], &applies[i]) || j < i)
            });
            if covered_by_other {
                redundant.push(i);
            }
        }
    }
    Ok(Checked {
        tried,
        covered,
        all,
        uncovered,
        redundant,
    })
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a as i64
}

fn join(xs: &[i64]) -> String {
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One map's symbolic tile, and what checking it by enumeration found.
#[derive(Clone, Debug)]
pub struct MapTile {
    /// The operand (`0`, `1 (map 0)`, `output`).
    pub label: String,
    /// The tile, or why the map has none with these sizes.
    pub tile: Result<SymbolicTile, String>,
    /// The check of the tile (`None` where there is no tile). An error that does not start
    /// with [`CANNOT`] is a case found wrong: a bug.
    pub checked: Option<Result<Checked, String>>,
}

impl MapTile {
    /// The cases the check did not find redundant, in order.
    pub fn cases(&self) -> Vec<&Case> {
        let Ok(st) = &self.tile else { return vec![] };
        let redundant = match &self.checked {
            Some(Ok(k)) => k.redundant.clone(),
            _ => vec![],
        };
        st.cases
            .iter()
            .enumerate()
            .filter(|(i, _)| !redundant.contains(i))
            .map(|(_, c)| c)
            .collect()
    }
}

/// Derives and checks the symbolic tile of every labelled map, for an output of `extents`
/// cut into tiles of the sizes `given`.
pub fn tile_maps(
    maps: &[(String, IndexingMap)],
    extents: &[i64],
    given: &[Size],
    limits: &Limits,
) -> Vec<MapTile> {
    maps.iter()
        .map(|(label, m)| {
            let tile = derive_symbolic(m, extents, given);
            let checked = tile
                .as_ref()
                .ok()
                .map(|st| verify(m, extents, given, st, limits));
            MapTile {
                label: label.clone(),
                tile,
                checked,
            }
        })
        .collect()
}
