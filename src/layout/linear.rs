//! Triton's linear layouts: maps from input dimensions (`register`, `lane`, `warp`,
//! `block`, or `offset` for shared memory) to output dimensions (`dim0`, `dim1`, ...) that
//! are linear over F2. Each input dimension of size `2^k` has `k` bases, the images of
//! `1, 2, 4, ...`; the image of any input is the XOR of the bases of its set bits.
//!
//! As an indexing map, bit `j` of an input `x` is `(x floordiv 2^j) mod 2` and XOR is
//! addition mod 2, so output bit `t` of output `k` is `(Σ of the input bits whose basis has
//! that bit) mod 2`:
//!
//! ```text
//!  - register=1 -> (0, 1)          (register, lane) -> (lane floordiv 2 ... )
//!  - lane=1 -> (0, 2)
//!    lane=2 -> (1, 0)
//! where out dims are: [dim0 (size 2), dim1 (size 4)]
//! ```
//!
//! Text is read and printed as Triton's `LinearLayout::toString` prints it. A map is shown
//! as a linear layout ([`from_map`]) when it is one, decided exactly: the bases are its
//! values at the powers of two, and the XOR of bases is compared with the map at every
//! point of the domain.

use super::{LayoutError, Result, MAX_POINTS};
use crate::expr::Expr;
use crate::map::{DomainPoints, IndexingMap, Limits, Variable};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinearLayout {
    /// Input dimensions in order, each with its bases (basis `j` is the image of `2^j`).
    pub ins: Vec<(String, Vec<Vec<i64>>)>,
    /// Output dimensions in order, with their sizes (powers of two).
    pub outs: Vec<(String, i64)>,
}

impl LinearLayout {
    /// Checks the bases against the output dimensions.
    pub fn new(ins: Vec<(String, Vec<Vec<i64>>)>, outs: Vec<(String, i64)>) -> Result<Self> {
        for (name, size) in &outs {
            if *size < 1 || (*size & (*size - 1)) != 0 || *size > (1 << 40) {
                return Err(LayoutError::new(format!(
                    "the output dimension {name} has size {size}, not a power of two (up to 2^40)"
                )));
            }
        }
        let total: usize = ins.iter().map(|(_, b)| b.len()).sum();
        if total > 40 {
            return Err(LayoutError::new(format!(
                "{total} input bits: more than 40 are not supported"
            )));
        }
        for (name, bases) in &ins {
            for (j, b) in bases.iter().enumerate() {
                if b.len() != outs.len() {
                    return Err(LayoutError::new(format!(
                        "{name}={} -> has {} components, but there are {} output dimensions",
                        1i64 << j,
                        b.len(),
                        outs.len()
                    )));
                }
                for (v, (o, size)) in b.iter().zip(&outs) {
                    if *v < 0 || v >= size {
                        return Err(LayoutError::new(format!(
                            "{name}={} -> gives {o} = {v}, outside [0, {}]",
                            1i64 << j,
                            size - 1
                        )));
                    }
                }
            }
        }
        Ok(LinearLayout { ins, outs })
    }
    pub fn in_size(&self, i: usize) -> i64 {
        1i64 << self.ins[i].1.len()
    }
    pub fn total_in_size(&self) -> i64 {
        1i64 << self.ins.iter().map(|(_, b)| b.len()).sum::<usize>()
    }
    /// The image of one input point (values of the input dimensions in order).
    pub fn eval(&self, x: &[i64]) -> Vec<i64> {
        let mut out = vec![0i64; self.outs.len()];
        for ((_, bases), &v) in self.ins.iter().zip(x) {
            for (j, b) in bases.iter().enumerate() {
                if (v >> j) & 1 == 1 {
                    for (o, c) in out.iter_mut().zip(b) {
                        *o ^= c;
                    }
                }
            }
        }
        out
    }
    /// The indexing map: one dimension per input (`[0, 2^k - 1]`), one result per output.
    pub fn to_map(&self) -> IndexingMap {
        let dims = self
            .ins
            .iter()
            .map(|(n, b)| Variable::new(n.clone(), 0, (1i64 << b.len()) - 1))
            .collect();
        let mut results = Vec::new();
        for (k, (_, size)) in self.outs.iter().enumerate() {
            let bits = size.trailing_zeros();
            let mut e = Expr::constant(0);
            for t in 0..bits {
                // The input bits whose basis sets bit t of output k.
                let mut sum: Option<Expr> = None;
                let mut count = 0;
                for (i, (_, bases)) in self.ins.iter().enumerate() {
                    for (j, b) in bases.iter().enumerate() {
                        if (b[k] >> t) & 1 == 1 {
                            let x = Expr::var(i as u32);
                            let bit = if bases.len() == 1 && j == 0 {
                                x
                            } else if j + 1 == bases.len() {
                                x.floordiv(Expr::constant(1i64 << j))
                            } else {
                                x.floordiv(Expr::constant(1i64 << j))
                                    .modulo(Expr::constant(2))
                            };
                            sum = Some(match sum {
                                None => bit,
                                Some(s) => s.add(bit),
                            });
                            count += 1;
                        }
                    }
                }
                if let Some(s) = sum {
                    let s = if count > 1 {
                        s.modulo(Expr::constant(2))
                    } else {
                        s
                    };
                    e = e.add(s.mul(Expr::constant(1i64 << t)));
                }
            }
            results.push(e);
        }
        IndexingMap::new(dims, vec![], vec![], results, vec![])
    }
    /// `B ∘ A` (A first): the inputs of `A`, the outputs of `B`; `A`'s outputs must be `B`'s
    /// inputs, by name and size.
    pub fn compose(a: &LinearLayout, b: &LinearLayout) -> Result<LinearLayout> {
        let a_outs: Vec<(String, i64)> = a.outs.clone();
        let b_ins: Vec<(String, i64)> = (0..b.ins.len())
            .map(|i| (b.ins[i].0.clone(), b.in_size(i)))
            .collect();
        if a_outs != b_ins {
            return Err(LayoutError::new(format!(
                "cannot compose: the first layout's outputs are {} but the second's inputs are {}",
                dims_text(&a_outs),
                dims_text(&b_ins)
            )));
        }
        let ins = a
            .ins
            .iter()
            .map(|(n, bases)| (n.clone(), bases.iter().map(|v| b.eval(v)).collect()))
            .collect();
        LinearLayout::new(ins, b.outs.clone())
    }
    /// The inverse of a bijective layout, by Gaussian elimination over F2: its inputs are
    /// this layout's outputs and its outputs this layout's inputs.
    pub fn inverse(&self) -> Result<LinearLayout> {
        let n_in: usize = self.ins.iter().map(|(_, b)| b.len()).sum();
        let out_bits: Vec<u32> = self.outs.iter().map(|(_, s)| s.trailing_zeros()).collect();
        let n_out: usize = out_bits.iter().map(|b| *b as usize).sum();
        if n_in != n_out {
            return Err(LayoutError::new(format!(
                "not invertible: {n_in} input bits but {n_out} output bits"
            )));
        }
        // Column c of the matrix: the output bits of input bit c (packed in a u64).
        let pack = |v: &[i64]| -> u64 {
            let mut w = 0u64;
            let mut shift = 0;
            for (x, b) in v.iter().zip(&out_bits) {
                w |= (*x as u64) << shift;
                shift += b;
            }
            w
        };
        let cols: Vec<u64> = self
            .ins
            .iter()
            .flat_map(|(_, bases)| bases.iter().map(|b| pack(b)))
            .collect();
        // Solve: for each output bit r, the input bits whose XOR gives exactly bit r.
        // Row-reduce the augmented system [cols | identity].
        let mut rows: Vec<(u64, u64)> = cols
            .iter()
            .enumerate()
            .map(|(c, v)| (*v, 1u64 << c))
            .collect();
        // Every output bit gets a pivot (or there is no inverse), so output bit `bit`'s pivot
        // is row `bit`.
        for bit in 0..n_out {
            let Some(p) = (bit..rows.len()).find(|&i| (rows[i].0 >> bit) & 1 == 1) else {
                return Err(LayoutError::new(format!(
                    "not invertible: no input reaches output bit {bit} independently (the bases are linearly dependent)"
                )));
            };
            rows.swap(bit, p);
            let pivot = rows[bit];
            for (i, row) in rows.iter_mut().enumerate() {
                if i != bit && (row.0 >> bit) & 1 == 1 {
                    row.0 ^= pivot.0;
                    row.1 ^= pivot.1;
                }
            }
        }
        // Output bit `bit` is produced by the input combination rows[bit].1.
        let in_bits: Vec<usize> = self.ins.iter().map(|(_, b)| b.len()).collect();
        let unpack = |w: u64| -> Vec<i64> {
            let mut v = Vec::new();
            let mut shift = 0;
            for b in &in_bits {
                v.push(((w >> shift) & ((1u64 << b) - 1)) as i64);
                shift += b;
            }
            v
        };
        let mut ins = Vec::new();
        let mut bit = 0;
        for ((name, _), nb) in self.outs.iter().zip(&out_bits) {
            let mut bases = Vec::new();
            for _ in 0..*nb {
                bases.push(unpack(rows[bit].1));
                bit += 1;
            }
            ins.push((name.clone(), bases));
        }
        let outs = self
            .ins
            .iter()
            .map(|(n, b)| (n.clone(), 1i64 << b.len()))
            .collect();
        LinearLayout::new(ins, outs)
    }
    /// Triton's printed form.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for (name, bases) in &self.ins {
            if bases.is_empty() {
                s.push_str(&format!(" - {name} is a size 1 dimension\n"));
                continue;
            }
            for (j, b) in bases.iter().enumerate() {
                let v: Vec<String> = b.iter().map(|x| x.to_string()).collect();
                s.push_str(&format!(
                    "{}{name}={} -> ({})\n",
                    if j == 0 { " - " } else { "   " },
                    1i64 << j,
                    v.join(", ")
                ));
            }
        }
        s.push_str(&format!("where out dims are: {}", dims_text(&self.outs)));
        s
    }
}

fn dims_text(d: &[(String, i64)]) -> String {
    let v: Vec<String> = d.iter().map(|(n, s)| format!("{n} (size {s})")).collect();
    format!("[{}]", v.join(", "))
}

/// Reads Triton's printed linear layout:
///
/// ```text
///  - register=1 -> (0, 1)
///    register=2 -> (0, 2)
///  - lane=1 -> (1, 0)
///  - block is a size 1 dimension
/// where out dims are: [dim0 (size 2), dim1 (size 4)]
/// ```
///
/// Without the `where` line, the outputs are `dim0, dim1, ...` sized to the next power of
/// two above their largest value.
pub fn parse(text: &str) -> Result<LinearLayout> {
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
    };
    let mut ins: Vec<(String, Vec<Vec<i64>>)> = Vec::new();
    let mut outs: Option<Vec<(String, i64)>> = None;
    let mut first_basis_at = None;
    loop {
        p.skip();
        if p.i >= p.s.len() {
            break;
        }
        let at = p.i;
        let name = p.ident()?;
        if name == "where" {
            p.words(&["out", "dims", "are"])?;
            p.lit(b':')?;
            p.lit(b'[')?;
            let mut v = Vec::new();
            loop {
                let n = p.ident()?;
                p.lit(b'(')?;
                p.words(&["size"])?;
                let s = p.int()?;
                p.lit(b')')?;
                v.push((n, s));
                p.skip_ws();
                match p.s.get(p.i) {
                    Some(b',') => p.i += 1,
                    Some(b']') => {
                        p.i += 1;
                        break;
                    }
                    _ => return Err(p.err("expected `,` or `]` in the output dimensions")),
                }
            }
            outs = Some(v);
            continue;
        }
        p.skip_ws();
        if p.s.get(p.i) == Some(&b'=') {
            p.i += 1;
            let pat = p.i;
            let k = p.int()?;
            let entry = match ins.iter().position(|(n, _)| *n == name) {
                Some(e) => e,
                None => {
                    ins.push((name.clone(), Vec::new()));
                    ins.len() - 1
                }
            };
            let j = ins[entry].1.len();
            if j >= 40 || k != 1i64 << j {
                return Err(LayoutError::at(
                    format!(
                        "expected {name}={}: the bases of a dimension are listed for 1, 2, 4, ... in order",
                        1i64 << j.min(40)
                    ),
                    pat,
                )
                .with_label("out of order"));
            }
            p.arrow()?;
            p.skip_ws();
            let v = if p.s.get(p.i) == Some(&b'(') {
                p.i += 1;
                let mut v = vec![p.int()?];
                loop {
                    p.skip_ws();
                    match p.s.get(p.i) {
                        Some(b',') => {
                            p.i += 1;
                            v.push(p.int()?);
                        }
                        Some(b')') => {
                            p.i += 1;
                            break;
                        }
                        _ => return Err(p.err("expected `,` or `)` in the basis")),
                    }
                }
                v
            } else {
                vec![p.int()?]
            };
            first_basis_at.get_or_insert(at);
            ins[entry].1.push(v);
        } else {
            p.words(&["is", "a", "size", "1", "dimension"])?;
            if ins.iter().any(|(n, _)| *n == name) {
                return Err(LayoutError::at(format!("{name} is listed twice"), at));
            }
            ins.push((name, Vec::new()));
        }
    }
    if ins.is_empty() {
        return Err(LayoutError::at(
            "expected a linear layout: lines such as `register=1 -> (0, 1)`",
            0,
        ));
    }
    let width = ins
        .iter()
        .flat_map(|(_, b)| b.iter().map(|v| v.len()))
        .max();
    let outs = match outs {
        Some(o) => o,
        None => {
            let w = width.unwrap_or(0);
            (0..w)
                .map(|k| {
                    let or = ins
                        .iter()
                        .flat_map(|(_, b)| b.iter().map(move |v| v.get(k).copied().unwrap_or(0)))
                        .fold(0i64, |a, x| a | x.max(0));
                    (format!("dim{k}"), next_pow2(or + 1))
                })
                .collect()
        }
    };
    LinearLayout::new(ins, outs).map_err(|e| LayoutError {
        at: Some(first_basis_at.unwrap_or(0)),
        ..e
    })
}

fn next_pow2(x: i64) -> i64 {
    let mut p = 1i64;
    while p < x && p < (1 << 40) {
        p <<= 1;
    }
    p
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    /// Whitespace and the `-` bullets.
    fn skip(&mut self) {
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_whitespace() || self.s[self.i] == b'-')
        {
            self.i += 1;
        }
    }
    fn err(&self, m: &str) -> LayoutError {
        LayoutError::at(m, self.i).with_label(if self.i < self.s.len() {
            "here"
        } else {
            "the text ends here"
        })
    }
    fn ident(&mut self) -> Result<String> {
        self.skip_ws();
        let st = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        if st == self.i {
            return Err(self.err("expected a dimension name"));
        }
        Ok(String::from_utf8_lossy(&self.s[st..self.i]).into_owned())
    }
    fn int(&mut self) -> Result<i64> {
        self.skip_ws();
        let st = self.i;
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[st..self.i])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| {
                self.i = st;
                self.err("expected an integer")
            })
    }
    fn lit(&mut self, c: u8) -> Result<()> {
        self.skip_ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected `{}`", c as char)))
        }
    }
    fn arrow(&mut self) -> Result<()> {
        self.skip_ws();
        if self.s[self.i..].starts_with(b"->") {
            self.i += 2;
            Ok(())
        } else {
            Err(self.err("expected `->`"))
        }
    }
    fn words(&mut self, ws: &[&str]) -> Result<()> {
        for w in ws {
            self.skip_ws();
            if self.s[self.i..].starts_with(w.as_bytes()) {
                self.i += w.len();
            } else {
                return Err(self.err(&format!("expected `{w}`")));
            }
        }
        Ok(())
    }
}

/// The map as a linear layout, or why it is not one. Decided exactly: every dimension
/// must range over `[0, 2^k - 1]` (no symbols, no constraints), the bases are the values at
/// the powers of two, and the XOR of bases must equal the map at every point.
pub fn from_map(m: &IndexingMap) -> std::result::Result<LinearLayout, String> {
    if m.is_undefined() || m.is_known_empty() {
        return Err("the map is UNDEFINED or KNOWN EMPTY".into());
    }
    if m.has_symbols() {
        return Err(
            "the map has range or runtime variables; a linear layout has only inputs".into(),
        );
    }
    if !m.constraints.is_empty() {
        return Err(
            "the map's domain has constraints; a linear layout's domain is a box of powers of two"
                .into(),
        );
    }
    let mut ins = Vec::new();
    for v in &m.dims {
        let n = v.bounds.hi.saturating_sub(v.bounds.lo).saturating_add(1);
        if v.bounds.lo != 0 || n < 1 || (n & (n - 1)) != 0 {
            return Err(format!(
                "{} ranges over [{}, {}]; a linear layout's input ranges over [0, 2^k - 1]",
                v.name, v.bounds.lo, v.bounds.hi
            ));
        }
        ins.push((v.name.clone(), n.trailing_zeros() as usize));
    }
    let total: usize = ins.iter().map(|(_, k)| k).sum();
    if (1i64 << total.min(62)) > MAX_POINTS {
        return Err(format!(
            "the domain has 2^{total} points, more than the limit of {MAX_POINTS} for an exact check"
        ));
    }
    let nd = m.dims.len();
    let at = |p: &[i64]| -> std::result::Result<Vec<i64>, String> {
        m.eval_point(p)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "a point of the box is outside the domain".to_string())
    };
    let zero = at(&vec![0; nd])?;
    if zero.iter().any(|z| *z != 0) {
        return Err(format!(
            "at 0 the map gives ({}); a linear layout maps 0 to 0",
            join(&zero)
        ));
    }
    let mut bases = Vec::new();
    for (i, (name, k)) in ins.iter().enumerate() {
        let mut bs = Vec::new();
        for j in 0..*k {
            let mut p = vec![0; nd];
            p[i] = 1i64 << j;
            let v = at(&p)?;
            if let Some(x) = v.iter().find(|x| **x < 0) {
                return Err(format!(
                    "at {name} = {} a result is {x}, negative",
                    1i64 << j
                ));
            }
            bs.push(v);
        }
        bases.push((name.clone(), bs));
    }
    let mut outs = Vec::new();
    for k in 0..m.results.len() {
        let or = bases
            .iter()
            .flat_map(|(_, b)| b.iter().map(move |v| v[k]))
            .fold(0i64, |a, x| a | x);
        outs.push((format!("dim{k}"), next_pow2(or + 1)));
    }
    let ll = LinearLayout::new(bases, outs).map_err(|e| e.message)?;
    let mut bad: Option<String> = None;
    let names: Vec<String> = m.dims.iter().map(|v| v.name.clone()).collect();
    DomainPoints::for_each(m, &Limits::default(), &mut |p, r| {
        let want = ll.eval(p);
        if want != r {
            let point: Vec<String> = names.iter().zip(p).map(|(n, x)| format!("{n} = {x}")).collect();
            bad = Some(format!(
                "not linear over F2: at {} the map gives ({}) but the XOR of its values at the powers of two gives ({})",
                point.join(", "),
                join(r),
                join(&want)
            ));
            return Ok(false);
        }
        Ok(true)
    })
    .map_err(|e| e.to_string())?;
    match bad {
        Some(b) => Err(b),
        None => Ok(ll),
    }
}

fn join(v: &[i64]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = " - register=1 -> (0, 1)
 - lane=1 -> (0, 2)
   lane=2 -> (1, 0)
 - block is a size 1 dimension
where out dims are: [dim0 (size 2), dim1 (size 4)]";

    #[test]
    fn reads_prints_and_evaluates() {
        let ll = parse(TEXT).unwrap();
        assert_eq!(ll.to_text(), TEXT);
        // register 1, lane 3: (0,1) ^ (0,2) ^ (1,0) = (1, 3).
        assert_eq!(ll.eval(&[1, 3, 0]), vec![1, 3]);
        let back = from_map(&ll.to_map()).unwrap();
        assert_eq!(back.to_text(), TEXT);
    }

    #[test]
    fn inverse_and_compose() {
        let ll = parse(TEXT).unwrap();
        let inv = ll.inverse().unwrap();
        // The layout then its inverse: the identity on (register, lane, block).
        let id = LinearLayout::compose(&ll, &inv).unwrap();
        for r in 0..2 {
            for l in 0..4 {
                let y = ll.eval(&[r, l, 0]);
                assert_eq!(inv.eval(&y), vec![r, l, 0]);
                assert_eq!(id.eval(&[r, l, 0]), vec![r, l, 0]);
            }
        }
        // Composition needs the first's outputs to be the second's inputs.
        assert!(LinearLayout::compose(&inv, &inv).is_err());
    }

    #[test]
    fn bad_text_points_at_the_problem() {
        let e = parse(" - register=2 -> (0, 1)").unwrap_err();
        assert_eq!(e.at, Some(12));
    }
}
