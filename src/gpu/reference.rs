//! The reference evaluation: every output element computed straight from the spec's maps,
//! interpreted, with no emitted code involved. Benchmarks compare each element of a
//! kernel's output against it.
//!
//! Each function but the root is evaluated at most once per index: its values are kept in a
//! dense table over its index space (filled on demand), so a softmax, whose every output
//! element reads a whole row's sum of a whole row's max, costs the work of the HLO (each
//! instruction once per element) rather than the product of the row lengths.
//!
//! Arithmetic follows the element type: for `f32` every operation is rounded to `f32`,
//! which for `+ - * /` gives exactly the IEEE single-precision result C computes.

use super::spec::{BinOp, Body, ElemType, KernelSpec, Tensor, UnOp};
use crate::map::compiled::Compiled;
use crate::map::enumerate::for_each_in_box;
use crate::map::IndexingMap;
use crate::MapError;
use std::cell::RefCell;
use std::collections::HashMap;

/// The known contents of input `k`, element at physical offset `i`: small exact values
/// (multiples of 1/64 in [-8, 8)) that differ between neighbours and between inputs.
pub fn input_value(k: usize, i: i64) -> f64 {
    let h = (i as u64)
        .wrapping_mul(2_654_435_761)
        .wrapping_add(k as u64 * 97)
        % 1024;
    h as f64 / 64.0 - 8.0
}

/// Fills the inputs of `spec` with [`input_value`], as raw bytes in each tensor's layout.
pub fn make_inputs(spec: &KernelSpec) -> Result<Vec<Vec<u8>>, MapError> {
    spec.inputs
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let n = t.num_elements()?;
            let mut buf = Vec::with_capacity(t.num_bytes()? as usize);
            for i in 0..n {
                push_value(&mut buf, t.elem, input_value(k, i));
            }
            Ok(buf)
        })
        .collect()
}

fn push_value(buf: &mut Vec<u8>, elem: ElemType, v: f64) {
    match elem {
        ElemType::F32 => buf.extend_from_slice(&(v as f32).to_le_bytes()),
        ElemType::F64 => buf.extend_from_slice(&v.to_le_bytes()),
        ElemType::S32 => buf.extend_from_slice(&(v as i32).to_le_bytes()),
    }
}

/// Element `i` (physical offset) of a buffer of type `elem`.
pub fn read_value(buf: &[u8], elem: ElemType, i: usize) -> f64 {
    let b = elem.bytes() as usize;
    let s = &buf[i * b..(i + 1) * b];
    match elem {
        ElemType::F32 => f32::from_le_bytes([s[0], s[1], s[2], s[3]]) as f64,
        ElemType::F64 => f64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]),
        ElemType::S32 => i32::from_le_bytes([s[0], s[1], s[2], s[3]]) as f64,
    }
}

/// The interpreter over a spec and its input buffers.
pub struct Reference<'a> {
    pub spec: &'a KernelSpec,
    pub inputs: &'a [Vec<u8>],
    strides: Vec<Vec<i64>>,
    /// Per function: the values computed so far, by row-major offset in its index space
    /// (`None` for the root, and for a function whose index space is too large to table).
    memo: Vec<Option<RefCell<Memo>>>,
    /// Every map of the bodies compiled once (keyed by its address in `spec`, which lives
    /// as long as the interpreter), with a register file: evaluating a compiled map costs
    /// a few instructions per node instead of a walk of the expression arena.
    compiled: HashMap<usize, (Compiled, RefCell<Vec<i64>>)>,
    /// Per reduction whose map reads only some of the function's dimensions (keyed like
    /// `compiled`): those dimensions, and the values computed so far by their coordinates.
    /// A softmax's row max is a reduction inside the body of `exp(x - max)`, evaluated at
    /// every element of the row: this keeps it one pass per row, not one per element.
    reduce_memo: HashMap<usize, (Vec<usize>, RefCell<HashMap<Vec<i64>, f64>>)>,
}

/// Values of one function, filled on demand: `known[k]` says `values[k]` is computed.
struct Memo {
    dims: Vec<i64>,
    values: Vec<f64>,
    known: Vec<bool>,
}

/// The most entries a function's table may have (64 Mi: 576 MiB of f64 and flags).
const MEMO_LIMIT: i64 = 1 << 26;

impl<'a> Reference<'a> {
    pub fn new(spec: &'a KernelSpec, inputs: &'a [Vec<u8>]) -> Result<Reference<'a>, MapError> {
        let strides = spec
            .inputs
            .iter()
            .map(Tensor::strides)
            .collect::<Result<_, _>>()?;
        let memo = spec
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let n = f
                    .dims
                    .iter()
                    .try_fold(1i64, |acc, &d| acc.checked_mul(d.max(0)))
                    .filter(|&n| i > 0 && n <= MEMO_LIMIT)?;
                Some(RefCell::new(Memo {
                    dims: f.dims.clone(),
                    values: vec![0.0; n as usize],
                    known: vec![false; n as usize],
                }))
            })
            .collect();
        let mut compiled = HashMap::new();
        let mut reduce_memo = HashMap::new();
        for f in &spec.functions {
            let nd = f.dims.len();
            f.body.visit(&mut |b| {
                if let Body::Reduce { map, .. } = b {
                    let used: Vec<usize> = (0..nd)
                        .filter(|&i| {
                            let v = i as u32;
                            // A dimension matters when an expression reads it, or when
                            // its bounds in the map cut the function's extent.
                            map.results.iter().any(|r| r.uses_var(v))
                                || map.constraints.iter().any(|(c, _)| c.uses_var(v))
                                || map
                                    .dims
                                    .get(i)
                                    .is_none_or(|d| d.bounds.lo > 0 || d.bounds.hi < f.dims[i] - 1)
                        })
                        .collect();
                    if used.len() < nd && map.dims.len() == nd {
                        let key = map as *const IndexingMap as usize;
                        reduce_memo.insert(key, (used, RefCell::new(HashMap::new())));
                    }
                }
                if let Body::Load { map, .. } | Body::Call { map, .. } | Body::Reduce { map, .. } =
                    b
                {
                    let c = Compiled::new(map);
                    let regs = RefCell::new(c.registers());
                    compiled.insert(map as *const IndexingMap as usize, (c, regs));
                }
            });
        }
        Ok(Reference {
            spec,
            inputs,
            strides,
            memo,
            compiled,
            reduce_memo,
        })
    }

    fn round(&self, v: f64) -> f64 {
        match self.spec.output.elem {
            ElemType::F32 => v as f32 as f64,
            ElemType::F64 => v,
            ElemType::S32 => v.trunc(),
        }
    }

    /// Function `func` at logical index `idx` (from its table when computed before).
    pub fn eval(&self, func: usize, idx: &[i64]) -> Result<f64, MapError> {
        let f = self
            .spec
            .functions
            .get(func)
            .ok_or_else(|| MapError::Other(format!("no function {func}")))?;
        let slot = match self.memo.get(func).and_then(Option::as_ref) {
            Some(cell) => {
                let m = cell.borrow();
                let mut k = 0i64;
                let mut inside = idx.len() == m.dims.len();
                for (&x, &d) in idx.iter().zip(&m.dims) {
                    inside &= (0..d).contains(&x);
                    k = k * d + x;
                }
                if inside && m.known[k as usize] {
                    return Ok(m.values[k as usize]);
                }
                inside.then_some((cell, k as usize))
            }
            None => None,
        };
        let v = self.body(&f.body, idx)?;
        if let Some((cell, k)) = slot {
            let mut m = cell.borrow_mut();
            m.values[k] = v;
            m.known[k] = true;
        }
        Ok(v)
    }

    /// `map` at `point`, or `None` outside its domain (through its compiled form when the
    /// map is one of the spec's).
    fn point(&self, map: &IndexingMap, point: &[i64]) -> Result<Option<Vec<i64>>, MapError> {
        match self.compiled.get(&(map as *const IndexingMap as usize)) {
            Some((c, regs)) => {
                let mut out = vec![0; map.results.len()];
                let inside = c.eval(map, point, &mut regs.borrow_mut(), &mut out)?;
                Ok(inside.then_some(out))
            }
            None => Ok(map.eval_point(point)?),
        }
    }

    fn at(&self, map: &IndexingMap, idx: &[i64]) -> Result<Vec<i64>, MapError> {
        self.point(map, idx)?.ok_or_else(|| {
            MapError::Other(format!("index ({idx:?}) is outside the domain of {map}"))
        })
    }

    fn body(&self, b: &Body, idx: &[i64]) -> Result<f64, MapError> {
        Ok(match b {
            Body::Const(c) => *c,
            Body::Load { input, map } => {
                let at = self.at(map, idx)?;
                let t = &self.spec.inputs[*input];
                let off: i64 = at
                    .iter()
                    .zip(&self.strides[*input])
                    .map(|(a, s)| a * s)
                    .sum();
                if off < 0 || off >= t.num_elements()? {
                    return Err(MapError::Other(format!(
                        "{} read out of bounds at {at:?}",
                        t.name
                    )));
                }
                read_value(&self.inputs[*input], t.elem, off as usize)
            }
            Body::Call { func, map } => self.eval(*func, &self.at(map, idx)?)?,
            Body::Reduce {
                op,
                init,
                func,
                map,
            } => {
                let memo = self.reduce_memo.get(&(map as *const IndexingMap as usize));
                let key: Option<Vec<i64>> =
                    memo.map(|(used, _)| used.iter().map(|&i| idx[i]).collect());
                if let (Some((_, table)), Some(k)) = (memo, &key) {
                    if let Some(&v) = table.borrow().get(k) {
                        return Ok(v);
                    }
                }
                let mut acc = *init;
                let nd = idx.len();
                let bounds = map.bounds();
                let mut point: Vec<i64> = idx.to_vec();
                point.extend(bounds[nd..].iter().map(|b| b.lo));
                for_each_in_box(&bounds[nd..], &mut |s| {
                    point[nd..].copy_from_slice(s);
                    if let Some(at) = self.point(map, &point)? {
                        let v = self.eval(*func, &at)?;
                        acc = self.round(binary(*op, acc, v));
                    }
                    Ok(true)
                })?;
                if let (Some((_, table)), Some(k)) = (memo, key) {
                    table.borrow_mut().insert(k, acc);
                }
                acc
            }
            Body::Unary(op, a) => {
                let x = self.body(a, idx)?;
                self.round(unary(*op, x, self.spec.output.elem))
            }
            Body::Binary(op, a, b) => {
                let x = self.body(a, idx)?;
                let y = self.body(b, idx)?;
                self.round(binary(*op, x, y))
            }
        })
    }

    /// Every element of every output (output 0, then a tuple root's further outputs), each
    /// in its physical order. A concatenation takes each element from the operand whose
    /// slice holds it; a dynamic-update-slice is the operand, with the update written at
    /// the start indices (read from their scalar inputs, clamped to `[0, dim - update_dim]`).
    pub fn outputs(&self) -> Result<Vec<Vec<f64>>, MapError> {
        use super::spec::Root;
        let spec = self.spec;
        match &spec.root {
            Root::Elementwise => {
                let mut all = vec![self.output_of(&spec.output, 0)?];
                for (t, f) in &spec.more_outputs {
                    all.push(self.output_of(t, *f)?);
                }
                Ok(all)
            }
            Root::Concatenate { dim, parts } => {
                let dim = *dim;
                Ok(vec![self.each_index(&spec.output, &mut |idx| {
                    for &(f, off) in parts {
                        let n = self.spec.functions[f].dims[dim];
                        if (off..off + n).contains(&idx[dim]) {
                            let mut at = idx.to_vec();
                            at[dim] -= off;
                            return self.eval(f, &at);
                        }
                    }
                    Err(MapError::Other(format!(
                        "no operand of the concatenate holds {idx:?}"
                    )))
                })?])
            }
            Root::Scatter {
                operand,
                indices,
                op,
                ..
            } => {
                let g = spec.scatter_geometry().ok_or_else(|| {
                    MapError::Other(format!(
                        "{}: the scatter's dimension numbers do not fit its shapes",
                        spec.name
                    ))
                })?;
                let t = &spec.inputs[*operand];
                if t.dims != spec.output.dims || t.minor_to_major != spec.output.minor_to_major {
                    return Err(MapError::Other(format!(
                        "{}: the output of a scatter has its operand's shape and layout",
                        spec.name
                    )));
                }
                let n = spec.output.num_elements()? as usize;
                let mut out: Vec<f64> = (0..n)
                    .map(|i| read_value(&self.inputs[*operand], t.elem, i))
                    .collect();
                let it = &spec.inputs[*indices];
                let istr = &self.strides[*indices];
                let ostr = spec.output.strides()?;
                let upd = spec.functions[0].dims.clone();
                let bounds: Vec<crate::interval::Interval> = upd
                    .iter()
                    .map(|&d| crate::interval::Interval::new(0, d - 1))
                    .collect();
                let rank = spec.output.rank();
                for_each_in_box(&bounds, &mut |u| {
                    let batch: Vec<i64> = g.batch.iter().map(|&j| u[j]).collect();
                    let mut start = vec![0i64; rank];
                    for (k, &o) in g.starts.iter().enumerate() {
                        let at = g.indices_index(&batch, k as i64);
                        let off: i64 = at.iter().zip(istr).map(|(a, b)| a * b).sum();
                        start[o] = read_value(&self.inputs[*indices], it.elem, off as usize) as i64;
                    }
                    let fits = (0..rank)
                        .all(|o| start[o] >= 0 && start[o] + g.window[o].1 <= spec.output.dims[o]);
                    if fits {
                        let off: i64 = (0..rank)
                            .map(|o| (start[o] + g.window[o].0.map_or(0, |j| u[j])) * ostr[o])
                            .sum();
                        let v = self.eval(0, u)?;
                        let cur = out[off as usize];
                        out[off as usize] = self.round(binary(*op, cur, v));
                    }
                    Ok(true)
                })?;
                Ok(vec![out])
            }
            Root::DynamicUpdateSlice { operand, starts } => {
                let upd = spec
                    .functions
                    .first()
                    .ok_or_else(|| MapError::Other("no update function".into()))?
                    .dims
                    .clone();
                let mut s = Vec::new();
                for (d, &k) in starts.iter().enumerate() {
                    let t = spec
                        .inputs
                        .get(k)
                        .ok_or_else(|| MapError::Other(format!("no input {k}")))?;
                    let v = read_value(&self.inputs[k], t.elem, 0) as i64;
                    s.push(v.clamp(0, spec.output.dims[d] - upd[d]));
                }
                let t = &spec.inputs[*operand];
                let strides = &self.strides[*operand];
                Ok(vec![self.each_index(&spec.output, &mut |idx| {
                    let inside = idx
                        .iter()
                        .zip(&s)
                        .zip(&upd)
                        .all(|((&i, &st), &u)| (st..st + u).contains(&i));
                    if inside {
                        let at: Vec<i64> = idx.iter().zip(&s).map(|(i, st)| i - st).collect();
                        self.eval(0, &at)
                    } else {
                        let off: i64 = idx.iter().zip(strides).map(|(a, b)| a * b).sum();
                        Ok(read_value(&self.inputs[*operand], t.elem, off as usize))
                    }
                })?])
            }
        }
    }

    /// Function `func` at every index of `out`, in `out`'s physical order.
    fn output_of(&self, out: &Tensor, func: usize) -> Result<Vec<f64>, MapError> {
        self.each_index(out, &mut |idx| self.eval(func, idx))
    }

    /// `value(index)` at every logical index of `out`, in `out`'s physical order.
    fn each_index(
        &self,
        out: &Tensor,
        value: &mut dyn FnMut(&[i64]) -> Result<f64, MapError>,
    ) -> Result<Vec<f64>, MapError> {
        let n = out.num_elements()?;
        let phys = out.physical_dims();
        let sizes: Vec<i64> = phys.iter().map(|&d| out.dims[d]).collect();
        let mut idx = vec![0i64; out.rank()];
        let mut res = Vec::with_capacity(n as usize);
        let mut p = vec![0i64; sizes.len()];
        for _ in 0..n {
            for (k, &d) in phys.iter().enumerate() {
                idx[d] = p[k];
            }
            res.push(value(&idx)?);
            for k in (0..p.len()).rev() {
                p[k] += 1;
                if p[k] < sizes[k] {
                    break;
                }
                p[k] = 0;
            }
            if crate::interrupted() {
                return Err(MapError::Interrupted);
            }
        }
        Ok(res)
    }

    /// Every output element, in the output's physical order.
    pub fn output(&self) -> Result<Vec<f64>, MapError> {
        if self.spec.root != super::spec::Root::Elementwise {
            return self
                .outputs()?
                .into_iter()
                .next()
                .ok_or_else(|| MapError::Other("no output".into()));
        }
        let out = &self.spec.output;
        let n = out.num_elements()?;
        let phys = out.physical_dims();
        let sizes: Vec<i64> = phys.iter().map(|&d| out.dims[d]).collect();
        let mut idx = vec![0i64; out.rank()];
        let mut res = Vec::with_capacity(n as usize);
        let mut p = vec![0i64; sizes.len()];
        for _ in 0..n {
            for (k, &d) in phys.iter().enumerate() {
                idx[d] = p[k];
            }
            res.push(self.eval(0, &idx)?);
            for k in (0..p.len()).rev() {
                p[k] += 1;
                if p[k] < sizes[k] {
                    break;
                }
                p[k] = 0;
            }
            if crate::interrupted() {
                return Err(MapError::Interrupted);
            }
        }
        Ok(res)
    }
}

pub fn unary(op: UnOp, x: f64, elem: ElemType) -> f64 {
    if elem == ElemType::F32 {
        let x = x as f32;
        return (match op {
            UnOp::Neg => -x,
            UnOp::Abs => x.abs(),
            UnOp::Exp => x.exp(),
            UnOp::Log => x.ln(),
            UnOp::Sqrt => x.sqrt(),
            UnOp::Tanh => x.tanh(),
        }) as f64;
    }
    match op {
        UnOp::Neg => -x,
        UnOp::Abs => x.abs(),
        UnOp::Exp => x.exp(),
        UnOp::Log => x.ln(),
        UnOp::Sqrt => x.sqrt(),
        UnOp::Tanh => x.tanh(),
    }
}

pub fn binary(op: BinOp, x: f64, y: f64) -> f64 {
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Max => {
            if x > y {
                x
            } else {
                y
            }
        }
        BinOp::Min => {
            if x < y {
                x
            } else {
                y
            }
        }
    }
}

/// Whether a kernel's element `got` matches the reference `want`: equal, both NaN, or within
/// a relative `tol` (transcendental functions may differ in the last bits between libraries,
/// and a parallel reduction sums in another order).
pub fn matches(got: f64, want: f64, tol: f64) -> bool {
    got == want
        || (got.is_nan() && want.is_nan())
        || (got - want).abs() <= tol * want.abs().max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A softmax: the row max is a reduction inside `exp(x - max)` and the row sum one
    /// inside the root, so both are memoized by row. The memoized reference agrees with
    /// the plain interpretation element by element (same operations, same order).
    #[test]
    fn reductions_memoized_by_row_agree_with_the_plain_interpretation() {
        let mut s = crate::session::Session::new();
        s.execute(
            "maxf {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}\n\
             addf {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\
             sm {\n  p0 = f32[6,10] parameter(0)\n  c = f32[] constant(-inf)\n\
             mx = f32[6] reduce(p0, c), dimensions={1}, to_apply=maxf\n\
             b = f32[6,10] broadcast(mx), dimensions={0}\n  sub = f32[6,10] subtract(p0, b)\n\
             e = f32[6,10] exponential(sub)\n  z = f32[] constant(0)\n\
             sum = f32[6] reduce(e, z), dimensions={1}, to_apply=addf\n\
             bs = f32[6,10] broadcast(sum), dimensions={0}\n  ROOT d = f32[6,10] divide(e, bs)\n}\n",
        );
        let spec = crate::gpu::sweep::spec_for(&s.hlo, "sm")
            .expect("sm is defined")
            .expect("sm adapts");
        let inputs = make_inputs(&spec).unwrap();
        let memoized = Reference::new(&spec, &inputs).unwrap();
        assert_eq!(
            memoized.reduce_memo.len(),
            2,
            "both reductions are memoized by row"
        );
        let got = memoized.output().unwrap();
        let mut plain = Reference::new(&spec, &inputs).unwrap();
        plain.reduce_memo.clear();
        plain.compiled.clear();
        let want = plain.output().unwrap();
        assert_eq!(got, want);
        // Each row sums to 1 (within f32 rounding).
        for row in got.chunks(10) {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-5, "{row:?}");
        }
    }
}
