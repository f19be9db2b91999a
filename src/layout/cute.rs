//! CuTe layouts: text, the shape/stride tree, maps, and the layout algebra.
//!
//! A layout `S:D` maps a coordinate to an offset, `L(c) = Σ c_i · d_i` over the leaves of
//! its (possibly nested) shape `S` and stride `D`. Its *flat index* `x` is the colexicographic
//! linearization of the coordinate (first mode fastest), so
//!
//! ```text
//! L(x) = Σ_i ((x floordiv P_i) mod s_i) · d_i,    P_i = s_0 · … · s_{i-1}
//! ```
//!
//! where the last mode takes no `mod`: past its size a layout extends along its last mode,
//! as CuTe's composition assumes. `Sw<B,M,S> o off o L` XORs the offset bits `[M, M+B)` with
//! the bits `S` above them (below them for a negative `S`) after adding `off`.
//!
//! The algebra follows CuTe's documentation of it:
//! - `coalesce(L)`: the same function with the fewest modes (size-1 modes dropped, `s0:d0`
//!   and `s1:s0·d0` merged);
//! - `composition(A, B)`: `R(c) = A(B(c))` with `B`'s shape, each leaf of `B` refined into
//!   the modes `A` takes along it;
//! - `complement(A, M)`: the strides `A` leaves out, sorted, up to `M`;
//! - `right_inverse(A)`: `A(R(i)) = i` on the longest run of offsets from 0 that `A` reaches
//!   mode by mode; `left_inverse(A)`: `L(A(x)) = x` for an injective `A`;
//! - `logical_divide(A, T) = A ∘ (T, complement(T, size A))` (by mode for a tuple of
//!   tilers), `zipped_divide` and `tiled_divide` regroup its modes;
//! - `logical_product(A, B) = (A, complement(A, size A · cosize B) ∘ B)`, and
//!   `blocked_product` / `raked_product` zip its modes (block first, or tiler first).
//!
//! Composition is computed from its definition: the values of `A` along each leaf of `B`
//! are read as a layout ([`recognize_1d`]), and the assembled result is checked against
//! `A(B(c))` at every coordinate. When the composition is not a layout (CuTe's divisibility
//! conditions fail) the error names the mode and the values.

use super::{add, mul, LayoutError, Result, MAX_POINTS};
use crate::expr::Expr;
use crate::map::{IndexingMap, Variable};
use std::fmt;

/// A CuTe integer tuple: an integer, or a tuple of tuples.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Tuple {
    Int(i64),
    Tup(Vec<Tuple>),
}

impl Tuple {
    pub fn leaves(&self) -> Vec<i64> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }
    fn collect(&self, out: &mut Vec<i64>) {
        match self {
            Tuple::Int(v) => out.push(*v),
            Tuple::Tup(items) => items.iter().for_each(|t| t.collect(out)),
        }
    }
    pub fn congruent(&self, other: &Tuple) -> bool {
        match (self, other) {
            (Tuple::Int(_), Tuple::Int(_)) => true,
            (Tuple::Tup(a), Tuple::Tup(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.congruent(y))
            }
            _ => false,
        }
    }
    pub fn rank(&self) -> usize {
        match self {
            Tuple::Int(_) => 1,
            Tuple::Tup(v) => v.len(),
        }
    }
    /// Mode `i` (an integer is its own mode 0).
    pub fn mode(&self, i: usize) -> Tuple {
        match self {
            Tuple::Int(_) => self.clone(),
            Tuple::Tup(v) => v.get(i).cloned().unwrap_or(Tuple::Int(1)),
        }
    }
    /// The tree with each leaf, in order, replaced by what `f` gives.
    fn replace_leaves<T>(&self, f: &mut impl FnMut() -> T, wrap: &impl Fn(Vec<T>) -> T) -> T {
        match self {
            Tuple::Int(_) => f(),
            Tuple::Tup(items) => wrap(items.iter().map(|t| t.replace_leaves(f, wrap)).collect()),
        }
    }
}

impl fmt::Display for Tuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tuple::Int(v) => write!(f, "{v}"),
            Tuple::Tup(items) => {
                f.write_str("(")?;
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// A layout: a shape and a congruent stride. Shapes are positive; strides any integers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    pub shape: Tuple,
    pub stride: Tuple,
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.shape, self.stride)
    }
}

impl Layout {
    /// A layout from a shape and a stride, checked: congruent, shapes positive, the size in
    /// 63 bits.
    pub fn new(shape: Tuple, stride: Tuple) -> Result<Layout> {
        if !shape.congruent(&stride) {
            return Err(LayoutError::new(format!(
                "shape {shape} and stride {stride} differ in structure"
            )));
        }
        let l = Layout { shape, stride };
        for s in l.shape.leaves() {
            if s < 1 {
                return Err(LayoutError::new(format!("shape {s} is not positive")));
            }
        }
        l.shape
            .leaves()
            .iter()
            .try_fold(1i64, |acc, s| mul(acc, *s))?;
        Ok(l)
    }
    /// `s:d`.
    pub fn leaf(s: i64, d: i64) -> Layout {
        Layout {
            shape: Tuple::Int(s),
            stride: Tuple::Int(d),
        }
    }
    /// The compact column-major layout of a shape (CuTe's default stride).
    pub fn compact(shape: Tuple) -> Result<Layout> {
        let mut p = 1i64;
        let mut err = None;
        let stride = shape.replace_leaves(&mut || Tuple::Int(0), &|v: Vec<Tuple>| Tuple::Tup(v));
        let mut strides = Vec::new();
        for s in shape.leaves() {
            strides.push(p);
            match p.checked_mul(s) {
                Some(q) => p = q,
                None => {
                    err = Some(LayoutError::new(
                        "integer overflow in the size of the shape",
                    ))
                }
            }
        }
        if let Some(e) = err {
            return Err(e);
        }
        let mut it = strides.into_iter();
        let stride =
            stride.replace_leaves(&mut || Tuple::Int(it.next().unwrap_or(0)), &|v: Vec<
                Tuple,
            >| {
                Tuple::Tup(v)
            });
        Layout::new(shape, stride)
    }
    /// Modes side by side: `(m0, m1, ...)`.
    pub fn concat(modes: Vec<Layout>) -> Layout {
        Layout {
            shape: Tuple::Tup(modes.iter().map(|m| m.shape.clone()).collect()),
            stride: Tuple::Tup(modes.into_iter().map(|m| m.stride).collect()),
        }
    }
    /// A layout of flat modes: nothing for none (`1:0`), `s:d` for one, `(..):(..)`.
    pub fn from_modes(modes: &[(i64, i64)]) -> Layout {
        match modes {
            [] => Layout::leaf(1, 0),
            [(s, d)] => Layout::leaf(*s, *d),
            _ => Layout::concat(modes.iter().map(|(s, d)| Layout::leaf(*s, *d)).collect()),
        }
    }
    /// `(size, stride)` of every leaf mode, in order.
    pub fn leaves(&self) -> Vec<(i64, i64)> {
        self.shape
            .leaves()
            .into_iter()
            .zip(self.stride.leaves())
            .collect()
    }
    pub fn rank(&self) -> usize {
        self.shape.rank()
    }
    pub fn mode(&self, i: usize) -> Layout {
        Layout {
            shape: self.shape.mode(i),
            stride: match (&self.shape, &self.stride) {
                (Tuple::Tup(v), _) if i >= v.len() => Tuple::Int(0),
                _ => self.stride.mode(i),
            },
        }
    }
    pub fn modes(&self) -> Vec<Layout> {
        (0..self.rank()).map(|i| self.mode(i)).collect()
    }
    /// The number of coordinates (checked at construction).
    pub fn size(&self) -> i64 {
        self.shape
            .leaves()
            .iter()
            .fold(1i64, |a, s| a.saturating_mul(*s))
    }
    /// One more than the largest offset (with negative strides, the span's length from 0).
    pub fn cosize(&self) -> Result<i64> {
        let mut hi = 0i64;
        for (s, d) in self.leaves() {
            if d > 0 {
                hi = add(hi, mul(s - 1, d)?)?;
            }
        }
        add(hi, 1)
    }
    /// The offset of flat index `x` (`x ≥ 0`; past the size, along the last mode).
    pub fn eval(&self, x: i64) -> Result<i64> {
        let leaves = self.leaves();
        let mut rest = x;
        let mut acc = 0i64;
        for (i, (s, d)) in leaves.iter().enumerate() {
            let c = if i + 1 == leaves.len() {
                rest
            } else {
                rest % s
            };
            rest /= s;
            acc = add(acc, mul(c, *d)?)?;
        }
        Ok(acc)
    }
    /// Every offset, in flat-index order (bounded by [`MAX_POINTS`]).
    pub fn values(&self) -> Result<Vec<i64>> {
        let n = self.size();
        if n > MAX_POINTS {
            return Err(too_many(n));
        }
        (0..n).map(|x| self.eval(x)).collect()
    }

    /// The same function with the fewest modes: size-1 modes dropped, and `s0:d0, s1:d1`
    /// merged when `d1 = s0 · d0`.
    pub fn coalesce(&self) -> Layout {
        let mut out: Vec<(i64, i64)> = Vec::new();
        for (s, d) in self.leaves() {
            if s == 1 {
                continue;
            }
            if let Some(last) = out.last_mut() {
                if last.0.checked_mul(last.1) == Some(d) {
                    last.0 *= s;
                    continue;
                }
            }
            out.push((s, d));
        }
        Layout::from_modes(&out)
    }

    /// CuTe's `complement(A, M)`: the layout of the offsets `A` leaves out, with ordered
    /// strides, up to `M`.
    pub fn complement(&self, cotarget: i64) -> Result<Layout> {
        let mut modes: Vec<(i64, i64)> = self
            .leaves()
            .into_iter()
            .filter(|(s, d)| *s > 1 && *d != 0)
            .collect();
        if let Some((s, d)) = modes.iter().find(|(_, d)| *d < 0) {
            return Err(LayoutError::new(format!(
                "complement: the mode {s}:{d} has a negative stride"
            )));
        }
        modes.sort_by_key(|(s, d)| (*d, *s));
        let mut out = Vec::new();
        let mut current = 1i64;
        for (s, d) in modes {
            if d % current != 0 {
                return Err(LayoutError::new(format!(
                    "complement: the stride {d} is not a multiple of {current}, the extent of the modes below it, so the offsets left out are not a layout"
                )));
            }
            out.push((d / current, current));
            current = mul(s, d)?;
        }
        let rest = if cotarget > current {
            cotarget / current + i64::from(cotarget % current != 0)
        } else {
            1
        };
        out.push((rest, current));
        Ok(Layout::from_modes(&out).coalesce())
    }

    /// CuTe's `right_inverse(A)`: `A(R(i)) = i` for every `i < size(R)`, following the modes
    /// of `A` from stride 1 up.
    pub fn right_inverse(&self) -> Layout {
        let leaves = self.leaves();
        let mut flat_stride = Vec::with_capacity(leaves.len());
        let mut p = 1i64;
        for (s, _) in &leaves {
            flat_stride.push(p);
            p = p.saturating_mul(*s);
        }
        let mut used = vec![false; leaves.len()];
        let mut out = Vec::new();
        let mut current = 1i64;
        while let Some(i) =
            (0..leaves.len()).find(|&i| !used[i] && leaves[i].0 > 1 && leaves[i].1 == current)
        {
            used[i] = true;
            out.push((leaves[i].0, flat_stride[i]));
            match current.checked_mul(leaves[i].0) {
                Some(c) => current = c,
                None => break,
            }
        }
        Layout::from_modes(&out).coalesce()
    }

    /// CuTe's `left_inverse(A)`: `L(A(x)) = x` for every `x < size(A)`; `A` must be injective.
    pub fn left_inverse(&self) -> Result<Layout> {
        let c = self
            .complement(self.cosize()?)
            .map_err(|e| LayoutError::new(format!("no left inverse ({})", e.message)))?;
        let l = Layout::concat(vec![self.clone(), c]).right_inverse();
        for x in 0..self.size().min(MAX_POINTS) {
            let y = self.eval(x)?;
            if y < 0 || l.eval(y)? != x {
                return Err(LayoutError::new(format!(
                    "no left inverse: {self} is not injective (or not onto a layout's range) at index {x}"
                )));
            }
        }
        Ok(l)
    }
}

fn too_many(n: i64) -> LayoutError {
    LayoutError::new(format!(
        "the layout has {n} coordinates, more than the limit of {MAX_POINTS} for exact computation"
    ))
}

/// The modes of a function on `[0, n)` given by its values: `s0:d0, s1:d1, ...` (size-1
/// modes left out) with `f(x) = Σ ((x floordiv P_i) mod s_i) · d_i`, or `None` when no
/// layout gives these values. The search is complete: the first mode's size divides `n`
/// and lies within the run where `f(k) = k · f(1)`; each candidate is checked on every
/// point.
pub fn recognize_1d(values: &[i64]) -> Option<Vec<(i64, i64)>> {
    let mut budget = 10_000usize;
    rec(values, &mut budget)
}

fn rec(f: &[i64], budget: &mut usize) -> Option<Vec<(i64, i64)>> {
    let n = f.len();
    if n == 0 || f[0] != 0 {
        return None;
    }
    if n == 1 {
        return Some(vec![]);
    }
    if *budget == 0 {
        return None;
    }
    *budget -= 1;
    let d = f[1];
    let mut run = 1;
    while run < n && (run as i64).checked_mul(d) == Some(f[run]) {
        run += 1;
    }
    for s in (2..=run).rev() {
        if !n.is_multiple_of(s) {
            continue;
        }
        let g: Vec<i64> = (0..n / s).map(|j| f[j * s]).collect();
        let ok = (0..n / s).all(|j| (0..s).all(|i| f[i + s * j].checked_sub(f[i]) == Some(g[j])));
        if !ok {
            continue;
        }
        if let Some(mut rest) = rec(&g, budget) {
            rest.insert(0, (s as i64, d));
            return Some(rest);
        }
    }
    None
}

/// `A ∘ B`: `R(c) = A(B(c))`, with the shape of `B` and each of its leaves refined into the
/// modes `A` takes along it. Checked at every coordinate.
pub fn composition(a: &Layout, b: &Layout) -> Result<Layout> {
    let n = b.size();
    if n > MAX_POINTS {
        return Err(too_many(n));
    }
    let mut pieces = Vec::new();
    for (i, (s, d)) in b.leaves().into_iter().enumerate() {
        let mut vals = Vec::with_capacity(s as usize);
        for k in 0..s {
            let x = mul(k, d)?;
            if x < 0 {
                return Err(LayoutError::new(format!(
                    "composition: {b} reaches the negative index {x}, outside {a}"
                )));
            }
            vals.push(a.eval(x)?);
        }
        match recognize_1d(&vals) {
            Some(modes) => pieces.push(Layout::from_modes(&modes)),
            None => {
                let shown: Vec<String> = vals.iter().take(16).map(|v| v.to_string()).collect();
                return Err(LayoutError::new(format!(
                    "{a} ∘ {b} is not a layout: along leaf {i} of the right-hand side ({s}:{d}) the left-hand side takes the values {}{}, which no shape:stride gives",
                    shown.join(", "),
                    if vals.len() > 16 { ", ..." } else { "" }
                )));
            }
        }
    }
    let mut it = pieces.into_iter();
    let r = b.shape.replace_leaves(
        &mut || it.next().unwrap_or(Layout::leaf(1, 0)),
        &|v: Vec<Layout>| Layout::concat(v),
    );
    for c in 0..n {
        let want = a.eval(b.eval(c)?)?;
        let got = r.eval(c)?;
        if want != got {
            return Err(LayoutError::new(format!(
                "{a} ∘ {b} is not a layout: at index {c} it is {want}, but the modes along each leaf give {got} (the modes of the right-hand side do not add up through the left-hand side)"
            )));
        }
    }
    Ok(r)
}

/// A tiler for divides: one layout, or one layout per mode (`(2:1,4:1)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tiler {
    Layout(Layout),
    ByMode(Vec<Layout>),
}

impl fmt::Display for Tiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tiler::Layout(l) => write!(f, "{l}"),
            Tiler::ByMode(v) => {
                let parts: Vec<String> = v.iter().map(|l| l.to_string()).collect();
                write!(f, "({})", parts.join(","))
            }
        }
    }
}

/// `A ⊘ T = A ∘ (T, complement(T, size A))`; by mode for a tuple of tilers.
pub fn logical_divide(a: &Layout, t: &Tiler) -> Result<Layout> {
    match t {
        Tiler::Layout(b) => {
            let c = b.complement(a.size())?;
            composition(a, &Layout::concat(vec![b.clone(), c]))
        }
        Tiler::ByMode(ts) => {
            check_rank(a, ts.len())?;
            let mut modes = Vec::new();
            for (i, m) in a.modes().into_iter().enumerate() {
                match ts.get(i) {
                    Some(b) => modes.push(logical_divide(&m, &Tiler::Layout(b.clone()))?),
                    None => modes.push(m),
                }
            }
            Ok(Layout::concat(modes))
        }
    }
}

fn check_rank(a: &Layout, n: usize) -> Result<()> {
    if n > a.rank() {
        return Err(LayoutError::new(format!(
            "the tiler has {n} modes but {a} has only {}",
            a.rank()
        )));
    }
    Ok(())
}

/// The tiles' modes and the rests' modes of a divide.
fn tiles_and_rests(a: &Layout, t: &Tiler) -> Result<(Vec<Layout>, Vec<Layout>)> {
    let d = logical_divide(a, t)?;
    match t {
        Tiler::Layout(_) => Ok((vec![d.mode(0)], d.mode(1).modes())),
        Tiler::ByMode(ts) => {
            let mut tiles = Vec::new();
            let mut rests = Vec::new();
            for (i, m) in d.modes().into_iter().enumerate() {
                if i < ts.len() {
                    tiles.push(m.mode(0));
                    rests.push(m.mode(1));
                } else {
                    rests.push(m);
                }
            }
            Ok((tiles, rests))
        }
    }
}

fn group(mut v: Vec<Layout>) -> Layout {
    if v.len() == 1 {
        v.remove(0)
    } else {
        Layout::concat(v)
    }
}

/// `((tiles...), (rests...))`.
pub fn zipped_divide(a: &Layout, t: &Tiler) -> Result<Layout> {
    if let Tiler::Layout(_) = t {
        return logical_divide(a, t);
    }
    let (tiles, rests) = tiles_and_rests(a, t)?;
    Ok(Layout::concat(vec![group(tiles), group(rests)]))
}

/// `((tiles...), rest0, rest1, ...)`.
pub fn tiled_divide(a: &Layout, t: &Tiler) -> Result<Layout> {
    let (tiles, rests) = tiles_and_rests(a, t)?;
    let mut modes = vec![group(tiles)];
    modes.extend(rests);
    Ok(Layout::concat(modes))
}

/// `A ⊗ B = (A, complement(A, size A · cosize B) ∘ B)`.
pub fn logical_product(a: &Layout, b: &Layout) -> Result<Layout> {
    let c = a.complement(mul(a.size(), b.cosize()?)?)?;
    Ok(Layout::concat(vec![a.clone(), composition(&c, b)?]))
}

fn append(a: &Layout, r: usize) -> Layout {
    let mut modes = a.modes();
    while modes.len() < r {
        modes.push(Layout::leaf(1, 0));
    }
    Layout::concat(modes)
}

fn zipped_product(a: &Layout, b: &Layout, block_first: bool) -> Result<Layout> {
    let r = a.rank().max(b.rank());
    let p = logical_product(&append(a, r), &append(b, r))?;
    let (blocks, tiles) = (p.mode(0), p.mode(1));
    Ok(Layout::concat(
        (0..r)
            .map(|i| {
                if block_first {
                    Layout::concat(vec![blocks.mode(i), tiles.mode(i)])
                } else {
                    Layout::concat(vec![tiles.mode(i), blocks.mode(i)])
                }
            })
            .collect(),
    ))
}

/// Mode by mode, `A`'s block then `B`'s arrangement of blocks: `((A0, B0'), (A1, B1'), ...)`.
pub fn blocked_product(a: &Layout, b: &Layout) -> Result<Layout> {
    zipped_product(a, b, true)
}

/// Mode by mode, `B`'s arrangement then `A`: `((B0', A0), (B1', A1), ...)`, so `A`'s
/// elements are spread across the tiles (raked).
pub fn raked_product(a: &Layout, b: &Layout) -> Result<Layout> {
    zipped_product(a, b, false)
}

// ------------------------------------------------------------------ swizzles, composed layouts

/// `Sw<B,M,S>`: XOR the `B` offset bits from `M` up with the `B` bits `S` above them
/// (for `S < 0`, the bits `M` up into the bits `|S|` above them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Swizzle {
    pub bits: u32,
    pub base: u32,
    pub shift: i32,
}

impl Swizzle {
    pub fn new(bits: i64, base: i64, shift: i64) -> Result<Swizzle> {
        if !(0..=16).contains(&bits) || !(0..=32).contains(&base) || !(-32..=32).contains(&shift) {
            return Err(LayoutError::new(
                "a swizzle takes B in [0, 16], M in [0, 32] and S in [-32, 32]",
            ));
        }
        if base + shift.abs() + bits > 62 {
            return Err(LayoutError::new(format!(
                "Sw<{bits},{base},{shift}> reaches offset bit {}, past the 62 bits of an offset",
                base + shift.abs() + bits
            )));
        }
        if shift.abs() < bits {
            return Err(LayoutError::new(format!(
                "Sw<{bits},{base},{shift}>: |S| must be at least B, so the bits read and the bits changed do not overlap"
            )));
        }
        Ok(Swizzle {
            bits: bits as u32,
            base: base as u32,
            shift: shift as i32,
        })
    }
    /// (first bit changed, first bit read).
    fn bases(&self) -> (u32, u32) {
        if self.shift >= 0 {
            (self.base, self.base + self.shift as u32)
        } else {
            (self.base + self.shift.unsigned_abs(), self.base)
        }
    }
    pub fn apply(&self, o: i64) -> i64 {
        let (dst, src) = self.bases();
        let mask = (1i64 << self.bits) - 1;
        o ^ (((o >> src) & mask) << dst)
    }
    /// The swizzle of `o` as an expression: bit `k` is `(o floordiv 2^k) mod 2`, and XOR is
    /// addition mod 2, so `o - Σ 2^t·b_t + Σ 2^t·((b_t + b_s) mod 2)`.
    pub fn expr(&self, o: Expr) -> Expr {
        let (dst, src) = self.bases();
        let bit = |k: u32| {
            o.floordiv(Expr::constant(1i64 << k))
                .modulo(Expr::constant(2))
        };
        let mut r = o;
        for j in 0..self.bits {
            let t = dst + j;
            let w = Expr::constant(1i64 << t);
            let x = bit(t).add(bit(src + j)).modulo(Expr::constant(2));
            r = r.sub(bit(t).mul(w)).add(x.mul(w));
        }
        r
    }
}

impl fmt::Display for Swizzle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sw<{},{},{}>", self.bits, self.base, self.shift)
    }
}

/// `Sw<B,M,S> o off o L`, or a plain layout (no swizzle, offset 0).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Composed {
    pub swizzle: Option<Swizzle>,
    pub offset: i64,
    pub layout: Layout,
}

impl fmt::Display for Composed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(sw) = self.swizzle {
            write!(f, "{sw} o ")?;
            if self.offset != 0 {
                write!(f, "{} o ", self.offset)?;
            }
        } else if self.offset != 0 {
            write!(f, "{} + ", self.offset)?;
        }
        write!(f, "{}", self.layout)
    }
}

impl Composed {
    pub fn plain(layout: Layout) -> Composed {
        Composed {
            swizzle: None,
            offset: 0,
            layout,
        }
    }
    pub fn eval(&self, x: i64) -> Result<i64> {
        let o = add(self.offset, self.layout.eval(x)?)?;
        Ok(match self.swizzle {
            Some(sw) => sw.apply(o),
            None => o,
        })
    }
    fn finish(&self, o: Expr) -> Expr {
        let o = o.add(Expr::constant(self.offset));
        match self.swizzle {
            Some(sw) => sw.expr(o),
            None => o,
        }
    }
    /// From the natural coordinate: one dimension per leaf mode, `d_i in [0, s_i - 1]`.
    pub fn natural_map(&self) -> IndexingMap {
        let leaves = self.layout.leaves();
        let dims = leaves
            .iter()
            .enumerate()
            .map(|(i, (s, _))| Variable::new(format!("d{i}"), 0, s - 1))
            .collect();
        let mut o = Expr::constant(0);
        for (i, (_, d)) in leaves.iter().enumerate() {
            o = o.add(Expr::var(i as u32).mul(Expr::constant(*d)));
        }
        IndexingMap::new(dims, vec![], vec![], vec![self.finish(o)], vec![])
    }
    /// From the flat index: `(d0) -> (Σ ((d0 floordiv P_i) mod s_i) · d_i)`.
    pub fn flat_map(&self) -> IndexingMap {
        let n = self.layout.size();
        let o = flat_expr(&self.layout, Expr::var(0));
        IndexingMap::new(
            vec![Variable::new("d0", 0, n - 1)],
            vec![],
            vec![],
            vec![self.finish(o)],
            vec![],
        )
    }
    /// One dimension per top-level mode (its flat index): for a thread/value layout
    /// `(T, V):(..)`, `(thread, value) -> offset`. With `tile = (M, N)` the offset is laid out
    /// column-major, as CuTe's pictures do: `(offset mod M, offset floordiv M)`.
    pub fn mode_map(&self, tile: Option<(i64, i64)>) -> IndexingMap {
        let modes = self.layout.modes();
        let names: Vec<String> = match modes.len() {
            2 => vec!["thread".into(), "value".into()],
            n => (0..n).map(|i| format!("d{i}")).collect(),
        };
        let mut o = Expr::constant(0);
        let mut dims = Vec::new();
        for (i, m) in modes.iter().enumerate() {
            dims.push(Variable::new(names[i].clone(), 0, m.size() - 1));
            o = o.add(flat_expr(m, Expr::var(i as u32)));
        }
        let o = self.finish(o);
        let results = match tile {
            Some((mm, _)) => vec![o.modulo(Expr::constant(mm)), o.floordiv(Expr::constant(mm))],
            None => vec![o],
        };
        IndexingMap::new(dims, vec![], vec![], results, vec![])
    }
}

/// `Σ ((x floordiv P_i) mod s_i) · d_i` over the leaves (no `mod` on the last mode).
fn flat_expr(l: &Layout, x: Expr) -> Expr {
    let leaves = l.leaves();
    let mut o = Expr::constant(0);
    let mut p = 1i64;
    let last = leaves.iter().rposition(|(s, _)| *s > 1);
    for (i, (s, d)) in leaves.iter().enumerate() {
        if *s == 1 {
            continue;
        }
        let mut c = if p == 1 {
            x
        } else {
            x.floordiv(Expr::constant(p))
        };
        if Some(i) != last {
            c = c.modulo(Expr::constant(*s));
        }
        o = o.add(c.mul(Expr::constant(*d)));
        p = p.saturating_mul(*s);
    }
    o
}

// ------------------------------------------------------------------ text

/// Reads CuTe's printed forms: `(4,2):(1,4)`, `((2,2),4):((1,4),2)`, `_8:_1`, a shape alone
/// (compact, column-major), `Sw<3,4,3> o (8,64):(64,1)`, `Sw<3,4,3> o _0 o ...`.
pub fn parse(text: &str) -> Result<Composed> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let c = p.composed()?;
    p.ws();
    if p.i < p.s.len() {
        return Err(LayoutError::at("unexpected text after the layout", p.i)
            .with_label("the layout ends before this"));
    }
    Ok(c)
}

/// Reads a layout without a swizzle.
pub fn parse_layout(text: &str) -> Result<Layout> {
    let c = parse(text)?;
    if c.swizzle.is_some() || c.offset != 0 {
        return Err(LayoutError::at(
            "a plain layout is expected here, not a swizzle",
            0,
        ));
    }
    Ok(c.layout)
}

/// Reads a tiler: a layout (`4:2`, `(2,4):(1,2)`), or a parenthesised tuple of layouts,
/// one a mode (`(2:1,4:1)`), where a mode without strides is compact (`n` is `n:1`). So a
/// shape alone, `(2,4)`, tiles by mode, as CuTe reads a `Shape` tiler ("a tiler of
/// Layouts with stride-1", CuTe's layout-algebra tutorial), not as the layout
/// `(2,4):(1,2)`.
pub fn parse_tiler(text: &str) -> Result<Tiler> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    p.ws();
    if p.peek() == Some(b'(') {
        let save = p.i;
        if let Ok(v) = p.tiler_tuple() {
            p.ws();
            if p.i == p.s.len() {
                return Ok(Tiler::ByMode(v));
            }
        }
        let _ = save;
    }
    Ok(Tiler::Layout(parse_layout(text)?))
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

/// Deepest nesting of tuples read (deeper text is an error, not a stack overflow).
const MAX_DEPTH: usize = 32;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }
    fn expect(&mut self, c: u8, what: &str) -> Result<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.error(format!("expected `{}` {what}", c as char)))
        }
    }
    fn error(&self, msg: String) -> LayoutError {
        let label = match self.s.get(self.i) {
            Some(_) => "here",
            None => "the text ends here",
        };
        LayoutError::at(msg, self.i).with_label(label)
    }
    fn int(&mut self) -> Result<i64> {
        self.ws();
        let start = self.i;
        if self.s.get(self.i) == Some(&b'_') {
            self.i += 1;
        }
        let neg = self.s.get(self.i) == Some(&b'-');
        if neg {
            self.i += 1;
        }
        let ds = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        if ds == self.i {
            self.i = start;
            return Err(self.error("expected an integer (`4`, `_4`) or `(`".into()));
        }
        let digits = std::str::from_utf8(&self.s[ds..self.i]).unwrap_or("");
        let v: i64 = digits
            .parse()
            .map_err(|_| LayoutError::at("the integer does not fit in 64 bits", start))?;
        Ok(if neg { -v } else { v })
    }
    fn tuple(&mut self) -> Result<(Tuple, usize)> {
        self.tuple_at(0)
    }
    fn tuple_at(&mut self, depth: usize) -> Result<(Tuple, usize)> {
        let start = {
            self.ws();
            self.i
        };
        if self.peek() == Some(b'(') {
            if depth >= MAX_DEPTH {
                return Err(LayoutError::at(
                    format!("tuples nest deeper than {MAX_DEPTH}"),
                    start,
                ));
            }
            self.i += 1;
            let mut items = vec![self.tuple_at(depth + 1)?.0];
            loop {
                match self.peek() {
                    Some(b',') => {
                        self.i += 1;
                        items.push(self.tuple_at(depth + 1)?.0);
                    }
                    Some(b')') => {
                        self.i += 1;
                        break;
                    }
                    _ => return Err(self.error("expected `,` or `)` in the tuple".into())),
                }
            }
            Ok((Tuple::Tup(items), start))
        } else {
            Ok((Tuple::Int(self.int()?), start))
        }
    }
    fn layout(&mut self) -> Result<Layout> {
        let (shape, at) = self.tuple()?;
        for s in shape.leaves() {
            if s < 1 {
                return Err(
                    LayoutError::at(format!("the shape {s} is not positive"), at)
                        .with_label("in this shape"),
                );
            }
        }
        if self.peek() == Some(b':') {
            self.i += 1;
            let (stride, sat) = self.tuple()?;
            if !shape.congruent(&stride) {
                return Err(LayoutError::at(
                    format!("the stride {stride} does not have the structure of the shape {shape}"),
                    sat,
                )
                .with_label("not congruent with the shape"));
            }
            Layout::new(shape, stride).map_err(|e| LayoutError { at: Some(at), ..e })
        } else {
            Layout::compact(shape).map_err(|e| LayoutError { at: Some(at), ..e })
        }
    }
    fn composed(&mut self) -> Result<Composed> {
        self.ws();
        if self.s[self.i..].starts_with(b"Sw") || self.s[self.i..].starts_with(b"Swizzle") {
            let at = self.i;
            self.i += if self.s[self.i..].starts_with(b"Swizzle") {
                7
            } else {
                2
            };
            self.expect(b'<', "after `Sw`")?;
            let b = self.int()?;
            self.expect(b',', "between the swizzle's numbers")?;
            let m = self.int()?;
            self.expect(b',', "between the swizzle's numbers")?;
            let s = self.int()?;
            self.expect(b'>', "after the swizzle's three numbers")?;
            let sw = Swizzle::new(b, m, s).map_err(|e| LayoutError {
                at: Some(at),
                label: Some("this swizzle".into()),
                ..e
            })?;
            self.expect_o()?;
            // An offset: `_0 o` or `32 o` before the layout.
            let save = self.i;
            let mut offset = 0;
            if let Ok(v) = self.int() {
                if self.peek() == Some(b'o') {
                    self.expect_o()?;
                    offset = v;
                } else {
                    self.i = save;
                }
            } else {
                self.i = save;
            }
            let layout = self.layout()?;
            return Ok(Composed {
                swizzle: Some(sw),
                offset,
                layout,
            });
        }
        Ok(Composed::plain(self.layout()?))
    }
    fn expect_o(&mut self) -> Result<()> {
        if self.peek() == Some(b'o')
            && !self
                .s
                .get(self.i + 1)
                .is_some_and(|c| c.is_ascii_alphanumeric())
        {
            self.i += 1;
            Ok(())
        } else {
            Err(self.error("expected `o` (composition) after the swizzle".into()))
        }
    }
    fn tiler_tuple(&mut self) -> Result<Vec<Layout>> {
        self.expect(b'(', "")?;
        let mut v = Vec::new();
        loop {
            let l = self.layout_or_int()?;
            v.push(l);
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b')') => {
                    self.i += 1;
                    break;
                }
                _ => return Err(self.error("expected `,` or `)`".into())),
            }
        }
        Ok(v)
    }
    fn layout_or_int(&mut self) -> Result<Layout> {
        let (shape, _) = self.tuple()?;
        if self.peek() == Some(b':') {
            self.i += 1;
            let (stride, _) = self.tuple()?;
            Layout::new(shape, stride)
        } else {
            Layout::compact(shape)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(t: &str) -> Layout {
        parse_layout(t).unwrap_or_else(|e| panic!("{t}: {e}"))
    }
    fn check(got: Result<Layout>, want: &str) {
        assert_eq!(got.map(|x| x.to_string()), Ok(want.to_string()));
    }

    #[test]
    fn reads_and_prints() {
        assert_eq!(l("(4,2):(1,4)").to_string(), "(4,2):(1,4)");
        assert_eq!(
            l("((_2,_2),_4):((_1,_4),_2)").to_string(),
            "((2,2),4):((1,4),2)"
        );
        assert_eq!(l("(4,(2,3))").to_string(), "(4,(2,3)):(1,(4,8))");
        let c = parse("Sw<3,4,3> o _0 o (8,64):(64,1)").unwrap();
        assert_eq!(c.to_string(), "Sw<3,4,3> o (8,64):(64,1)");
        assert!(parse("(4,2):(1)").is_err());
        assert_eq!(parse("(4,2):(1,").unwrap_err().at, Some(9));
    }

    #[test]
    fn evaluates() {
        let a = l("(4,2):(1,4)");
        assert_eq!(a.values().unwrap(), vec![0, 1, 2, 3, 4, 5, 6, 7]);
        let b = l("(4,2):(2,1)");
        assert_eq!(b.values().unwrap(), vec![0, 2, 4, 6, 1, 3, 5, 7]);
        // Sw<1,0,1>: bit 0 ^= bit 1.
        let s = parse("Sw<1,0,1> o 4:1").unwrap();
        let v: Vec<i64> = (0..4).map(|x| s.eval(x).unwrap()).collect();
        assert_eq!(v, vec![0, 1, 3, 2]);
    }

    #[test]
    fn algebra_by_hand() {
        // coalesce: (2,(1,6)):(1,(6,2)) -> 12:1.
        assert_eq!(l("(2,(1,6)):(1,(6,2))").coalesce().to_string(), "12:1");
        // complement of 4:2 up to 24: the offsets 0,2,4,6 leave out stride 1 (2 of them)
        // and stride 8 (3 of them).
        check(l("4:2").complement(24), "(2,3):(1,8)");
        check(l("(2,2):(1,6)").complement(24), "(3,2):(2,12)");
        // composition: (6,2):(8,2) ∘ (4,3):(3,1), worked from the values.
        check(
            composition(&l("(6,2):(8,2)"), &l("(4,3):(3,1)")),
            "((2,2),3):((24,2),8)",
        );
        check(composition(&l("20:2"), &l("(5,4):(4,1)")), "(5,4):(8,2)");
        // right inverse of (4,2):(2,1): offsets 0..7 come from indices 0,4,1,5,...
        assert_eq!(l("(4,2):(2,1)").right_inverse().to_string(), "(2,4):(4,1)");
        // logical_divide(24:1, 4:2) = 24:1 ∘ (4:2, (2,3):(1,8)).
        check(
            logical_divide(&l("24:1"), &Tiler::Layout(l("4:2"))),
            "(4,(2,3)):(2,(1,8))",
        );
        // logical_product((2,2):(4,1), 6:1): complement((2,2):(4,1), 24) = (2,3):(2,8), and
        // (2,3):(2,8) ∘ 6:1 is itself.
        check(
            logical_product(&l("(2,2):(4,1)"), &l("6:1")),
            "((2,2),(2,3)):((4,1),(2,8))",
        );
    }

    /// A shape as a tiler tiles by mode, each mode compact, as CuTe reads `Shape<_2,_4>`;
    /// with strides it is one layout.
    #[test]
    fn a_shape_tiler_tiles_by_mode() {
        let t = |s: &str| parse_tiler(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(t("(2,4)"), Tiler::ByMode(vec![l("2:1"), l("4:1")]));
        assert_eq!(t("(2,4)"), t("(2:1,4:1)"));
        assert_eq!(
            t("((2,2),4)"),
            Tiler::ByMode(vec![l("(2,2):(1,2)"), l("4:1")])
        );
        assert_eq!(t("(2,4):(1,2)"), Tiler::Layout(l("(2,4):(1,2)")));
        assert_eq!(t("4"), Tiler::Layout(l("4:1")));
        check(
            logical_divide(&l("(8,8):(1,8)"), &t("(2,4)")),
            "((2,4),(4,2)):((1,2),(8,32))",
        );
    }
}
