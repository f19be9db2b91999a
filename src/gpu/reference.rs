//! The reference evaluation: every output element computed straight from the spec's maps,
//! interpreted, with no emitted code involved. Benchmarks compare each element of a
//! kernel's output against it.
//!
//! Each function but the root is evaluated at most once per index: its values are kept in a
//! dense table over its index space (filled on demand), so a softmax, whose every output
//! element reads a whole row's sum of a whole row's max, costs the work of the HLO (each
//! instruction once per element) rather than the product of the row lengths.
//!
//! Arithmetic follows the element type of each node, exactly: for `f32` every operation is
//! rounded to `f32`, which for `+ - * /` gives exactly the IEEE single-precision result C
//! computes; `f16` and `bf16` compute in `f32` and round to nearest even after each
//! operation (as XLA does); integers wrap to their width, with XLA's division semantics
//! (`x / 0 = -1`, `x % 0 = x`, `MIN / -1 = MIN`, `MIN % -1 = 0`). Values are [`Scalar`]s:
//! an `f64` for floats (every `f16`, `bf16`, `f32` value is one exactly) and an `i64` for
//! integers (`u64` as its bits), so 64-bit integers stay exact.

use super::spec::{BinOp, Body, CmpDir, ElemType, KernelSpec, Tensor, UnOp};
use crate::map::compiled::Compiled;
use crate::map::enumerate::for_each_in_box;
use crate::map::IndexingMap;
use crate::MapError;
use std::cell::RefCell;
use std::collections::HashMap;

mod bound;
pub use bound::{init_is_harmless, order_factor, Ball, Vague};

/// The known contents of input `k`, element at physical offset `i`: small exact values
/// (multiples of 1/64 in [-8, 8)) that differ between neighbours and between inputs.
pub fn input_value(k: usize, i: i64) -> f64 {
    let h = (i as u64)
        .wrapping_mul(2_654_435_761)
        .wrapping_add(k as u64 * 97)
        % 1024;
    h as f64 / 64.0 - 8.0
}

/// Fills the inputs of `spec` with [`input_value`], as raw bytes in each tensor's layout:
/// converted to each input's type ([`Scalar::from_f64`]: integers truncate and wrap, so an
/// unsigned input also holds large values; `pred` is the value's parity, `bf16` rounds).
pub fn make_inputs(spec: &KernelSpec) -> Result<Vec<Vec<u8>>, MapError> {
    fits_in_host_memory(spec, host_memory_available())?;
    spec.inputs
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let n = t.num_elements()?;
            let mut buf = Vec::with_capacity(t.num_bytes()? as usize);
            for i in 0..n {
                let v = input_value(k, i);
                let x = if t.elem == ElemType::Pred {
                    Scalar::I(((v * 64.0) as i64).rem_euclid(2))
                } else {
                    Scalar::from_f64(t.elem, v)
                };
                push_scalar(&mut buf, t.elem, x);
            }
            Ok(buf)
        })
        .collect()
}

/// The host memory a verified run of `spec` holds at once, in bytes (an estimate, from
/// below): the inputs twice (made, and copied for the kernel), and for each output its
/// bytes twice (the kernel's, and the device's copied back) and the reference's
/// [`Scalar`] and tolerance for each element.
pub fn host_bytes_needed(spec: &KernelSpec) -> Result<u128, MapError> {
    let mut total: u128 = 0;
    for t in &spec.inputs {
        total += 2 * t.num_bytes()? as u128;
    }
    for t in spec.outputs() {
        let per_element = 2 * t.elem.bytes() as u128
            + std::mem::size_of::<Scalar>() as u128
            + std::mem::size_of::<f64>() as u128;
        total += per_element * t.num_elements()? as u128;
    }
    Ok(total)
}

/// The memory this machine has free for a new allocation, in bytes: Linux's
/// `MemAvailable`; `None` where it cannot be read (no limit is applied then).
pub fn host_memory_available() -> Option<u128> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// An error, before anything is allocated, where running `spec` on made-up inputs and
/// checking it would need more host memory than `available` (a huge but valid shape
/// would otherwise abort the process when an allocation fails, or swap it to a halt).
pub fn fits_in_host_memory(spec: &KernelSpec, available: Option<u128>) -> Result<(), MapError> {
    let need = host_bytes_needed(spec)?;
    match available {
        Some(have) if need > have => Err(MapError::Other(format!(
            "running `{}` on made-up inputs and checking it needs at least {} of host memory \
             (its inputs, outputs and the reference), and this machine has {} available; \
             `emit` and `threads` work at any size",
            spec.name,
            human_bytes(need),
            human_bytes(have)
        ))),
        _ => Ok(()),
    }
}

/// Bytes in binary units, three significant figures: `4.00 TiB`, `21.3 GiB`, `512 B`.
pub fn human_bytes(b: u128) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut x = b as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else if x >= 100.0 {
        format!("{x:.0} {}", UNITS[u])
    } else if x >= 10.0 {
        format!("{x:.1} {}", UNITS[u])
    } else {
        format!("{x:.2} {}", UNITS[u])
    }
}

/// A value of some element type: floats as `f64` (already rounded to their type), integers
/// and `pred` as `i64`, sign-extended for signed types and zero-extended for unsigned ones
/// (`u64` as its bits).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    F(f64),
    I(i64),
}

impl Scalar {
    /// The value as `f64` (for display and tolerances; `u64` beyond 2^53 rounds).
    pub fn to_f64(self, elem: ElemType) -> f64 {
        match self {
            Scalar::F(x) => x,
            Scalar::I(i) => wide(elem, i) as f64,
        }
    }
    /// The integer value, exact (`u64` as unsigned).
    fn int(self, elem: ElemType) -> i128 {
        match self {
            Scalar::I(i) => wide(elem, i),
            Scalar::F(x) => x as i128,
        }
    }
    fn float(self, elem: ElemType) -> f64 {
        match self {
            Scalar::F(x) => x,
            Scalar::I(i) => wide(elem, i) as f64,
        }
    }
    /// `v` converted to `elem` as HLO's `convert` from f64 does.
    pub fn from_f64(elem: ElemType, v: f64) -> Scalar {
        convert(ElemType::F64, elem, Scalar::F(v))
    }
    pub fn is_true(self) -> bool {
        match self {
            Scalar::I(i) => i != 0,
            Scalar::F(x) => x != 0.0,
        }
    }
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::F(x) => write!(f, "{x}"),
            Scalar::I(i) => write!(f, "{i}"),
        }
    }
}

/// The element type of every node of `b` (by address), `want` being the type its consumer
/// reads it as: a node's own type where it has one, else (a bare constant) its consumer's:
/// a constant under `convert(t)` is of type `t`, one beside another operand of a binary op
/// or a comparison has that operand's type, as the HLO's typed constant did and as the
/// emitters read it. (A bare constant once took the output's type wherever it stood: the
/// `1.5` of `convert(p + 1.5)` to s32 was added as 1.)
fn assign_types(spec: &KernelSpec, b: &Body, want: ElemType, types: &mut HashMap<usize, ElemType>) {
    let t = spec.elem_opt(b).unwrap_or(want);
    types.insert(b as *const Body as usize, t);
    match b {
        Body::Unary(op, a) => {
            // `is-finite` and `bitcast-convert` read another type than they give
            let at = match op {
                UnOp::IsFinite | UnOp::BitcastConvert(_) => spec.elem_opt(a).unwrap_or(t),
                _ => t,
            };
            assign_types(spec, a, at, types);
        }
        Body::Binary(_, a, c) => {
            assign_types(spec, a, t, types);
            assign_types(spec, c, t, types);
        }
        Body::Convert(to, a) => assign_types(spec, a, spec.elem_opt(a).unwrap_or(*to), types),
        Body::Compare(_, a, c) => {
            let ct = spec.compared_elem(a, c);
            assign_types(spec, a, ct, types);
            assign_types(spec, c, ct, types);
        }
        Body::Select(p, a, c) => {
            assign_types(spec, p, ElemType::Pred, types);
            assign_types(spec, a, t, types);
            assign_types(spec, c, t, types);
        }
        Body::Guard {
            then, otherwise, ..
        } => {
            assign_types(spec, then, t, types);
            assign_types(spec, otherwise, t, types);
        }
        // run-time start indices: integers of their own type
        Body::DynCall { starts, .. } => {
            for st in starts {
                assign_types(spec, st, spec.elem_opt(st).unwrap_or(ElemType::S64), types);
            }
        }
        Body::ReduceTuple { inits, reducer, .. } => {
            for x in inits.iter().chain(reducer) {
                assign_types(spec, x, spec.elem_opt(x).unwrap_or(t), types);
            }
        }
        Body::Opaque { args, .. } => {
            for x in args {
                assign_types(spec, x, spec.elem_opt(x).unwrap_or(t), types);
            }
        }
        Body::Const(_)
        | Body::Load { .. }
        | Body::Call { .. }
        | Body::Reduce { .. }
        | Body::Index { .. }
        | Body::Param(..) => {}
    }
}

/// An integer of type `elem`, widened exactly.
fn wide(elem: ElemType, i: i64) -> i128 {
    if elem == ElemType::U64 {
        i as u64 as i128
    } else {
        i as i128
    }
}

/// `x` wrapped to the width of the integer type `elem` (two's complement), in canonical form.
pub fn wrap(elem: ElemType, x: i128) -> i64 {
    let b = elem.bits();
    if elem.is_signed_int() {
        let sh = 128 - b;
        ((x << sh) >> sh) as i64
    } else if b >= 64 {
        x as u64 as i64
    } else {
        (x & ((1i128 << b) - 1)) as i64
    }
}

/// The smallest and largest values of an integer type.
fn int_range(elem: ElemType) -> (i128, i128) {
    let b = elem.bits();
    if elem.is_signed_int() {
        (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
    } else {
        (0, (1i128 << b) - 1)
    }
}

/// Significand bits (with the implicit one) and exponent range of a float type.
fn format(elem: ElemType) -> (u32, i32, i32) {
    match elem {
        ElemType::F16 => (11, -14, 15),
        ElemType::BF16 => (8, -126, 127),
        ElemType::F32 => (24, -126, 127),
        _ => (53, -1022, 1023),
    }
}

/// `x` rounded to nearest even in the float type `elem` (subnormals and overflow to
/// infinity included), as an `f64`.
pub fn round_float(elem: ElemType, x: f64) -> f64 {
    if elem == ElemType::F64 || !x.is_finite() || x == 0.0 {
        return x;
    }
    if elem == ElemType::F32 {
        return x as f32 as f64;
    }
    let (p, emin, emax) = format(elem);
    let bits = x.to_bits();
    let e = (((bits >> 52) & 0x7ff) as i32 - 1023).max(-1023);
    let q = (e.max(emin) - (p as i32 - 1)) as f64;
    let quantum = q.exp2();
    let r = (x / quantum).round_ties_even() * quantum;
    if r.abs() >= ((emax + 1) as f64).exp2() {
        return if r > 0.0 {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
    }
    r
}

/// The integer `x` rounded to nearest even in the float type `elem` (one rounding, exact
/// for every 64-bit integer).
fn int_to_float(elem: ElemType, x: i128) -> f64 {
    let (p, _, _) = format(elem);
    let m = x.unsigned_abs();
    let len = 128 - m.leading_zeros();
    let v = if len <= p {
        m as f64
    } else {
        let sh = len - p;
        let q = m >> sh;
        let rem = m & ((1u128 << sh) - 1);
        let half = 1u128 << (sh - 1);
        let q = if rem > half || (rem == half && q & 1 == 1) {
            q + 1
        } else {
            q
        };
        (q as f64) * (sh as f64).exp2()
    };
    round_float(elem, if x < 0 { -v } else { v })
}

/// HLO's `convert` of `x`, of type `from`, to type `to`.
pub fn convert(from: ElemType, to: ElemType, x: Scalar) -> Scalar {
    if to == ElemType::Pred {
        return Scalar::I(x.is_true() as i64);
    }
    if from.is_float() {
        let f = x.float(from);
        if to.is_float() {
            return Scalar::F(round_float(to, f));
        }
        // Toward zero, saturating at the type's ends; NaN gives 0.
        if f.is_nan() {
            return Scalar::I(0);
        }
        let (lo, hi) = int_range(to);
        let t = f.trunc();
        let i = if t <= lo as f64 {
            lo
        } else if t >= hi as f64 {
            hi
        } else {
            t as i128
        };
        return Scalar::I(wrap(to, i));
    }
    let i = x.int(from);
    if to.is_float() {
        Scalar::F(int_to_float(to, i))
    } else {
        Scalar::I(wrap(to, i))
    }
}

fn push_scalar(buf: &mut Vec<u8>, elem: ElemType, v: Scalar) {
    match elem {
        ElemType::F32 => buf.extend_from_slice(&(v.float(elem) as f32).to_le_bytes()),
        ElemType::F64 => buf.extend_from_slice(&v.float(elem).to_le_bytes()),
        ElemType::F16 | ElemType::BF16 => {
            buf.extend_from_slice(&half_bits(elem, v.float(elem)).to_le_bytes())
        }
        _ => {
            let i = v.int(elem) as u64;
            buf.extend_from_slice(&i.to_le_bytes()[..elem.bytes() as usize]);
        }
    }
}

/// The 16 bits of `x` (a value of `f16` or `bf16`, already rounded to it).
pub fn half_bits(elem: ElemType, x: f64) -> u16 {
    let f = round_float(elem, x) as f32;
    if elem == ElemType::BF16 {
        let b = f.to_bits();
        if f.is_nan() {
            return ((b >> 16) as u16) | 0x40;
        }
        return (b >> 16) as u16;
    }
    let b = f.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    if f.is_nan() {
        return sign | 0x7e00;
    }
    let a = f.abs();
    if a.is_infinite() {
        return sign | 0x7c00;
    }
    if a < 2f32.powi(-14) {
        // Subnormal: a multiple of 2^-24.
        return sign | ((a as f64) * 16_777_216.0) as u16;
    }
    let e = ((b >> 23) & 0xff) as i32 - 127;
    let m = (b >> 13) & 0x3ff;
    sign | (((e + 15) as u16) << 10) | m as u16
}

/// The value of `f16`/`bf16` bits.
pub fn half_value(elem: ElemType, h: u16) -> f64 {
    if elem == ElemType::BF16 {
        return f32::from_bits((h as u32) << 16) as f64;
    }
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    sign * match e {
        0 => m * (-24f64).exp2(),
        31 if m == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + m / 1024.0) * ((e - 15) as f64).exp2(),
    }
}

/// Element `i` (physical offset) of a buffer of type `elem`.
pub fn read_scalar(buf: &[u8], elem: ElemType, i: usize) -> Scalar {
    let b = elem.bytes() as usize;
    let s = &buf[i * b..(i + 1) * b];
    let mut w = [0u8; 8];
    w[..b].copy_from_slice(s);
    let u = u64::from_le_bytes(w);
    match elem {
        ElemType::F32 => Scalar::F(f32::from_bits(u as u32) as f64),
        ElemType::F64 => Scalar::F(f64::from_bits(u)),
        ElemType::F16 | ElemType::BF16 => Scalar::F(half_value(elem, u as u16)),
        // C's bool is 0 or 1; any other byte is read as it is (and fails the check).
        ElemType::Pred => Scalar::I(u as i64),
        _ => Scalar::I(wrap(elem, u as i128)),
    }
}

/// An index read from a tensor of type `elem` (a start index of a dynamic-update-slice or
/// a scatter), exactly, saturated to `i64` (a `u64` beyond `i64::MAX` is out of every
/// bound, as its value is).
fn index_value(v: Scalar, elem: ElemType) -> i64 {
    let x = v.int(elem);
    i64::try_from(x).unwrap_or(if x < 0 { i64::MIN } else { i64::MAX })
}

/// Element `i` (physical offset) of a buffer of type `elem`, as `f64`.
pub fn read_value(buf: &[u8], elem: ElemType, i: usize) -> f64 {
    read_scalar(buf, elem, i).to_f64(elem)
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
    compiled: HashMap<usize, (Compiled, RefCell<Vec<i128>>)>,
    /// Per reduction whose map reads only some of the function's dimensions (keyed like
    /// `compiled`): those dimensions, and the values computed so far by their coordinates.
    /// A softmax's row max is a reduction inside the body of `exp(x - max)`, evaluated at
    /// every element of the row: this keeps it one pass per row, not one per element.
    reduce_memo: HashMap<usize, (Vec<usize>, RefCell<HashMap<Vec<i64>, Scalar>>)>,
    /// The element type of every node of the bodies (keyed by its address).
    types: HashMap<usize, ElemType>,
    /// The arguments of the reducer of a variadic reduction while it runs.
    args: RefCell<Vec<Scalar>>,
    /// The rounding bounds computed so far ([`Reference::ball`]).
    balls: RefCell<bound::Balls>,
}

/// Values of one function, filled on demand: `known[k]` says `values[k]` is computed.
struct Memo {
    dims: Vec<i64>,
    values: Vec<Scalar>,
    known: Vec<bool>,
}

/// The most entries a function's table may have (64 Mi: 576 MiB of f64 and flags).
const MEMO_LIMIT: i64 = 1 << 26;

impl<'a> Reference<'a> {
    pub fn new(spec: &'a KernelSpec, inputs: &'a [Vec<u8>]) -> Result<Reference<'a>, MapError> {
        for f in &spec.functions {
            if let Some((op, name)) = f.body.opaque() {
                return Err(MapError::Other(no_emitter(&op, &name)));
            }
        }
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
                    values: vec![Scalar::I(0); n as usize],
                    known: vec![false; n as usize],
                }))
            })
            .collect();
        let mut compiled = HashMap::new();
        let mut reduce_memo = HashMap::new();
        let mut types = HashMap::new();
        for (fi, f) in spec.functions.iter().enumerate() {
            let nd = f.dims.len();
            assign_types(spec, &f.body, spec.function_elem(fi), &mut types);
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
                if let Body::Load { map, .. }
                | Body::Call { map, .. }
                | Body::Reduce { map, .. }
                | Body::Index { map }
                | Body::Guard { map, .. }
                | Body::DynCall { map, .. }
                | Body::ReduceTuple { map, .. } = b
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
            types,
            args: RefCell::new(Vec::new()),
            balls: RefCell::new(bound::Balls::default()),
        })
    }

    fn ty(&self, b: &Body) -> ElemType {
        self.types
            .get(&(b as *const Body as usize))
            .copied()
            .unwrap_or(self.spec.output.elem)
    }

    /// Function `func` at logical index `idx` (from its table when computed before).
    pub fn eval(&self, func: usize, idx: &[i64]) -> Result<Scalar, MapError> {
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

    fn body(&self, b: &Body, idx: &[i64]) -> Result<Scalar, MapError> {
        let ty = self.ty(b);
        Ok(match b {
            Body::Const(c) => Scalar::from_f64(ty, *c),
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
                read_scalar(&self.inputs[*input], t.elem, off as usize)
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
                let mut acc = Scalar::from_f64(ty, *init);
                self.each_term(map, *func, idx, &mut |v| {
                    acc = binary(*op, ty, acc, v)?;
                    Ok(())
                })?;
                if let (Some((_, table)), Some(k)) = (memo, key) {
                    table.borrow_mut().insert(k, acc);
                }
                acc
            }
            Body::Unary(op, a) => {
                // The operand's type: `is-finite` and `bitcast-convert` give another.
                let x = self.body(a, idx)?;
                unary(*op, self.ty(a), x)?
            }
            Body::Binary(op, a, b) => {
                let x = self.body(a, idx)?;
                let y = self.body(b, idx)?;
                binary(*op, ty, x, y)?
            }
            Body::Convert(to, a) => {
                let x = self.body(a, idx)?;
                convert(self.ty(a), *to, x)
            }
            Body::Compare(dir, a, b) => {
                let t = self.spec.compared_elem(a, b);
                let x = self.body(a, idx)?;
                let y = self.body(b, idx)?;
                Scalar::I(compare(*dir, t, x, y) as i64)
            }
            Body::Index { map } => {
                let at = self.at(map, idx)?;
                Scalar::I(
                    *at.first().ok_or_else(|| {
                        MapError::Other(format!("the index map {map} has no result"))
                    })?,
                )
            }
            Body::Guard {
                map,
                then,
                otherwise,
            } => {
                if self.point(map, idx)?.is_some() {
                    self.body(then, idx)?
                } else {
                    self.body(otherwise, idx)?
                }
            }
            Body::DynCall {
                func,
                map,
                starts,
                limits,
            } => self.eval(*func, &self.dyn_at(map, starts, limits, idx)?)?,
            Body::Opaque { op, name, .. } => {
                return Err(MapError::Other(no_emitter(op, name)));
            }
            Body::Param(k, _) => *self
                .args
                .borrow()
                .get(*k)
                .ok_or_else(|| MapError::Other(format!("no argument {k} of a reducer")))?,
            Body::ReduceTuple {
                inits,
                funcs,
                map,
                reducer,
                which,
                ..
            } => {
                let mut acc = Vec::with_capacity(inits.len());
                for b in inits {
                    acc.push(self.body(b, idx)?);
                }
                self.each_point(map, idx, &mut |at| {
                    let mut args = acc.clone();
                    for &f in funcs {
                        args.push(self.eval(f, at)?);
                    }
                    // The reducer's bodies read only their arguments (no calls), so the
                    // argument list is not replaced while they run.
                    *self.args.borrow_mut() = args;
                    let mut next = Vec::with_capacity(reducer.len());
                    for r in reducer {
                        next.push(self.body(r, idx)?);
                    }
                    acc = next;
                    Ok(())
                })?;
                *acc.get(*which).ok_or_else(|| {
                    MapError::Other(format!("a variadic reduction has no result {which}"))
                })?
            }
            Body::Select(c, a, b) => {
                // Both sides are evaluated, as the emitted code may.
                let p = self.body(c, idx)?;
                let x = self.body(a, idx)?;
                let y = self.body(b, idx)?;
                if p.is_true() {
                    x
                } else {
                    y
                }
            }
        })
    }

    /// Where a [`Body::DynCall`] reads its function at `idx`: `map(idx)` moved by the
    /// start indices, each clamped to `[0, limit]`.
    fn dyn_at(
        &self,
        map: &IndexingMap,
        starts: &[Body],
        limits: &[i64],
        idx: &[i64],
    ) -> Result<Vec<i64>, MapError> {
        let mut at = self.at(map, idx)?;
        if at.len() != starts.len() || at.len() != limits.len() {
            return Err(MapError::Other(format!(
                "a dynamic slice of rank {} has {} start indices",
                at.len(),
                starts.len()
            )));
        }
        for ((a, s), &l) in at.iter_mut().zip(starts).zip(limits) {
            let t = self.spec.elem_opt(s).unwrap_or(ElemType::S64);
            let v = index_value(self.body(s, idx)?, t).clamp(0, l.max(0));
            *a = a
                .checked_add(v)
                .ok_or_else(|| MapError::Overflow("a dynamic-slice index".into()))?;
        }
        Ok(at)
    }

    /// Every element of every output (output 0, then a tuple root's further outputs), each
    /// in its physical order. A concatenation takes each element from the operand whose
    /// slice holds it; a dynamic-update-slice is the operand, with the update written at
    /// the start indices (read from their scalar inputs, clamped to `[0, dim - update_dim]`).
    pub fn outputs(&self) -> Result<Vec<Vec<Scalar>>, MapError> {
        use super::spec::Root;
        let spec = self.spec;
        match &spec.root {
            Root::Elementwise => {
                let mut all = vec![self.output_of(&spec.output, 0)?];
                for o in &spec.more_outputs {
                    all.push(self.output_of(&o.tensor, o.func)?);
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
                indices_func,
                ..
            } => {
                let g = spec.scatter_geometry().ok_or_else(|| {
                    MapError::Other(format!(
                        "{}: the scatter's dimension numbers do not fit its shapes",
                        spec.name
                    ))
                })?;
                let t = &spec.inputs[*operand];
                if t.elem != spec.output.elem
                    || t.dims != spec.output.dims
                    || t.minor_to_major != spec.output.minor_to_major
                {
                    return Err(MapError::Other(format!(
                        "{}: the output of a scatter has its operand's type, shape and layout",
                        spec.name
                    )));
                }
                let n = spec.output.num_elements()? as usize;
                let mut out: Vec<Scalar> = (0..n)
                    .map(|i| read_scalar(&self.inputs[*operand], t.elem, i))
                    .collect();
                // Computed indices are not read from an input (`indices` is unused).
                let it = spec.inputs.get(*indices).unwrap_or(t);
                let empty = Vec::new();
                let istr = self.strides.get(*indices).unwrap_or(&empty);
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
                        start[o] = match indices_func {
                            Some(f) => index_value(self.eval(*f, &at)?, spec.function_elem(*f)),
                            None => {
                                let off: i64 = at.iter().zip(istr).map(|(a, b)| a * b).sum();
                                index_value(
                                    read_scalar(&self.inputs[*indices], it.elem, off as usize),
                                    it.elem,
                                )
                            }
                        };
                    }
                    // In i128: a start index may be any value of its type.
                    let fits = (0..rank).all(|o| {
                        start[o] >= 0
                            && start[o] as i128 + g.window[o].1 as i128
                                <= spec.output.dims[o] as i128
                    });
                    if fits {
                        let off: i64 = (0..rank)
                            .map(|o| (start[o] + g.window[o].0.map_or(0, |j| u[j])) * ostr[o])
                            .sum();
                        let v = self.eval(0, u)?;
                        let cur = out[off as usize];
                        out[off as usize] = binary(*op, spec.output.elem, cur, v)?;
                    }
                    Ok(true)
                })?;
                Ok(vec![out])
            }
            Root::DynamicUpdateSlice {
                operand,
                starts,
                computed,
            } => {
                let upd = spec
                    .functions
                    .first()
                    .ok_or_else(|| MapError::Other("no update function".into()))?
                    .dims
                    .clone();
                let mut s = Vec::new();
                for (d, &k) in starts.iter().enumerate() {
                    if let Some(&Some(f)) = computed.get(d) {
                        let v = index_value(self.eval(f, &[])?, spec.function_elem(f));
                        s.push(v.clamp(0, spec.output.dims[d] - upd[d]));
                        continue;
                    }
                    let t = spec
                        .inputs
                        .get(k)
                        .ok_or_else(|| MapError::Other(format!("no input {k}")))?;
                    let v = index_value(read_scalar(&self.inputs[k], t.elem, 0), t.elem);
                    s.push(v.clamp(0, spec.output.dims[d] - upd[d]));
                }
                let t = &spec.inputs[*operand];
                if t.elem != spec.output.elem {
                    return Err(MapError::Other(format!(
                        "{}: the output of a dynamic-update-slice has its operand's type",
                        spec.name
                    )));
                }
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
                        Ok(read_scalar(&self.inputs[*operand], t.elem, off as usize))
                    }
                })?])
            }
        }
    }

    /// Function `func` at every index of `out`, in `out`'s physical order.
    fn output_of(&self, out: &Tensor, func: usize) -> Result<Vec<Scalar>, MapError> {
        self.each_index(out, &mut |idx| self.eval(func, idx))
    }

    /// `value(index)` at every logical index of `out`, in `out`'s physical order.
    fn each_index(
        &self,
        out: &Tensor,
        value: &mut dyn FnMut(&[i64]) -> Result<Scalar, MapError>,
    ) -> Result<Vec<Scalar>, MapError> {
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

    /// For output `k` when it is a float sum (a `reduce` with `add` at the root of its
    /// function, perhaps converted), per element in physical order: the number of terms
    /// (the initial value one of them), the sum of their magnitudes and the sum of the
    /// magnitudes of this interpreter's partial sums (its own order, rounded as it rounds),
    /// all as f64. What an error bound for the sum in another order needs (see
    /// `bench::sum_slack`); `None` for any other output.
    pub fn sum_magnitudes(&self, k: usize) -> Result<Option<Vec<[f64; 3]>>, MapError> {
        let spec = self.spec;
        if spec.root != super::spec::Root::Elementwise {
            return Ok(None);
        }
        let (out, func) = match k {
            0 => (&spec.output, 0),
            _ => match spec.more_outputs.get(k - 1) {
                Some(o) => (&o.tensor, o.func),
                None => return Ok(None),
            },
        };
        let Some(f) = spec.functions.get(func) else {
            return Ok(None);
        };
        let b = f.body.under_exact_epilogue();
        let Body::Reduce {
            op: BinOp::Add,
            init,
            func: term,
            map,
        } = b
        else {
            return Ok(None);
        };
        let ty = self.ty(b);
        if !ty.is_float() {
            return Ok(None);
        }
        let mut all = Vec::new();
        self.each_index(out, &mut |idx| {
            let mut acc = Scalar::from_f64(ty, *init);
            let mut m = [1.0, acc.to_f64(ty).abs(), 0.0];
            self.each_term(map, *term, idx, &mut |v| {
                acc = binary(BinOp::Add, ty, acc, v)?;
                m[0] += 1.0;
                m[1] += v.to_f64(ty).abs();
                m[2] += acc.to_f64(ty).abs();
                Ok(())
            })?;
            all.push(m);
            Ok(acc)
        })?;
        Ok(Some(all))
    }

    /// Each term of a reduction over `map`'s range variables at output index `idx`, `func`
    /// evaluated where the map is defined, in this interpreter's order (the range
    /// variables' box, the last fastest).
    fn each_term(
        &self,
        map: &IndexingMap,
        func: usize,
        idx: &[i64],
        f: &mut dyn FnMut(Scalar) -> Result<(), MapError>,
    ) -> Result<(), MapError> {
        self.each_point(map, idx, &mut |at| f(self.eval(func, at)?))
    }

    /// Each point a reduction over `map`'s range variables reads at output index `idx`
    /// (where the map is defined), in this interpreter's order (the range variables' box,
    /// the last fastest).
    fn each_point(
        &self,
        map: &IndexingMap,
        idx: &[i64],
        f: &mut dyn FnMut(&[i64]) -> Result<(), MapError>,
    ) -> Result<(), MapError> {
        let nd = idx.len();
        let bounds = map.bounds();
        let mut point: Vec<i64> = idx.to_vec();
        point.extend(bounds[nd..].iter().map(|b| b.lo));
        for_each_in_box(&bounds[nd..], &mut |s| {
            point[nd..].copy_from_slice(s);
            if let Some(at) = self.point(map, &point)? {
                f(&at)?;
            }
            Ok(true)
        })
    }

    /// Every output element, in the output's physical order.
    pub fn output(&self) -> Result<Vec<Scalar>, MapError> {
        if self.spec.root != super::spec::Root::Elementwise {
            return self
                .outputs()?
                .into_iter()
                .next()
                .ok_or_else(|| MapError::Other("no output".into()));
        }
        self.output_of(&self.spec.output, 0)
    }
}

/// The refusal of an op with no emitter (the reference interpreter included).
pub fn no_emitter(op: &str, name: &str) -> String {
    format!("{op} has no emitter yet (`{name}`)")
}

fn not_for(what: &str, elem: ElemType) -> MapError {
    MapError::Other(format!("{what} is not defined on {}", elem.hlo_name()))
}

/// `op x` for `x` of type `elem` (floats of 16 bits computed in f32 and rounded); the result
/// has the type [`UnOp::result_elem`] gives. See [`UnOp`] for the semantics.
pub fn unary(op: UnOp, elem: ElemType, x: Scalar) -> Result<Scalar, MapError> {
    op.check(elem).map_err(MapError::Other)?;
    if let UnOp::BitcastConvert(to) = op {
        return Ok(bitcast(elem, to, x));
    }
    if !elem.is_float() {
        let i = x.int(elem);
        let bits = elem.bits();
        // The bits of the operand's width, as an unsigned number.
        let u = (i as u128) & ((1u128 << bits) - 1);
        return Ok(Scalar::I(match op {
            UnOp::Neg => wrap(elem, -i),
            UnOp::Abs => wrap(elem, i.abs()),
            UnOp::Sign => wrap(elem, i.signum()),
            UnOp::Not if elem == ElemType::Pred => (i == 0) as i64,
            UnOp::Not => wrap(elem, !i),
            UnOp::Popcnt => u.count_ones() as i64,
            UnOp::Clz => (u.leading_zeros() - (128 - bits)) as i64,
            _ => return Err(not_for(op.hlo_name(), elem)),
        }));
    }
    let v = x.float(elem);
    if op == UnOp::IsFinite {
        return Ok(Scalar::I(v.is_finite() as i64));
    }
    let r = if elem == ElemType::F64 {
        unary_f64(op, v)
    } else {
        unary_f32(op, v as f32) as f64
    };
    Ok(Scalar::F(round_float(elem, r)))
}

/// A float op in f64 (libm's functions, as C's).
fn unary_f64(op: UnOp, v: f64) -> f64 {
    match op {
        UnOp::Neg => -v,
        UnOp::Abs => v.abs(),
        UnOp::Exp => v.exp(),
        UnOp::Log => v.ln(),
        UnOp::Sqrt => v.sqrt(),
        UnOp::Tanh => v.tanh(),
        UnOp::Rsqrt => 1.0 / v.sqrt(),
        UnOp::Cbrt => v.cbrt(),
        UnOp::Expm1 => v.exp_m1(),
        UnOp::Log1p => v.ln_1p(),
        UnOp::Logistic => 1.0 / (1.0 + (-v).exp()),
        UnOp::Sin => v.sin(),
        UnOp::Cos => v.cos(),
        UnOp::Tan => v.tan(),
        UnOp::Erf => erf(v),
        UnOp::Sign => sign_f(v),
        UnOp::Floor => v.floor(),
        UnOp::Ceil => v.ceil(),
        UnOp::RoundAfz => v.round(),
        UnOp::RoundEven => v.round_ties_even(),
        // Not float functions: refused before.
        UnOp::IsFinite | UnOp::Not | UnOp::Popcnt | UnOp::Clz | UnOp::BitcastConvert(_) => f64::NAN,
    }
}

/// A float op in f32, each step rounded to f32 as C's `float` arithmetic and libm's `f`
/// functions do (`erf` is computed in f64 and rounded once).
fn unary_f32(op: UnOp, f: f32) -> f32 {
    match op {
        UnOp::Neg => -f,
        UnOp::Abs => f.abs(),
        UnOp::Exp => f.exp(),
        UnOp::Log => f.ln(),
        UnOp::Sqrt => f.sqrt(),
        UnOp::Tanh => f.tanh(),
        UnOp::Rsqrt => 1.0 / f.sqrt(),
        UnOp::Cbrt => f.cbrt(),
        UnOp::Expm1 => f.exp_m1(),
        UnOp::Log1p => f.ln_1p(),
        UnOp::Logistic => 1.0 / (1.0 + (-f).exp()),
        UnOp::Sin => f.sin(),
        UnOp::Cos => f.cos(),
        UnOp::Tan => f.tan(),
        UnOp::Erf => erf(f as f64) as f32,
        UnOp::Sign => sign_f(f as f64) as f32,
        UnOp::Floor => f.floor(),
        UnOp::Ceil => f.ceil(),
        UnOp::RoundAfz => f.round(),
        UnOp::RoundEven => f.round_ties_even(),
        UnOp::IsFinite | UnOp::Not | UnOp::Popcnt | UnOp::Clz | UnOp::BitcastConvert(_) => f32::NAN,
    }
}

/// -1 or 1 by the sign; NaN and zeros (either sign) as they are.
fn sign_f(v: f64) -> f64 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        v
    }
}

/// The error function, to a few units in the last place of f64: below 2.5 the series
/// `erf(a) = 2/sqrt(pi) exp(-a^2) sum_n (2a^2)^n a / (1 3 5 .. (2n+1))` (positive terms, no
/// cancellation); from 2.5 `1 - erfc(a)` with erfc's continued fraction
/// `exp(-a^2) / sqrt(pi) / (a + (1/2) / (a + 1 / (a + (3/2) / (a + ...))))`; from 6 on,
/// ±1 (erfc(6) < 2^-55).
pub fn erf(x: f64) -> f64 {
    const FRAC_2_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;
    if x.is_nan() || x == 0.0 {
        return x;
    }
    let a = x.abs();
    let r = if a >= 6.0 {
        1.0
    } else if a < 2.5 {
        let a2 = a * a;
        let (mut term, mut sum) = (a, a);
        let mut n = 0.0;
        while term > sum * 1e-18 {
            n += 1.0;
            term *= 2.0 * a2 / (2.0 * n + 1.0);
            sum += term;
        }
        FRAC_2_SQRT_PI * (-a2).exp() * sum
    } else {
        let mut t = a;
        for k in (1..=120).rev() {
            t = a + (k as f64 / 2.0) / t;
        }
        1.0 - FRAC_2_SQRT_PI / 2.0 * (-a * a).exp() / t
    };
    r.copysign(x)
}

/// The bits of `x`, of type `from`, read as a value of type `to` (the same width). A NaN
/// is first the canonical quiet NaN of `from` (see [`UnOp::BitcastConvert`]).
fn bitcast(from: ElemType, to: ElemType, x: Scalar) -> Scalar {
    if from == to {
        return x;
    }
    let bits: u64 = match from {
        ElemType::F16 | ElemType::BF16 => {
            let v = x.float(from);
            match (v.is_nan(), from) {
                (true, ElemType::F16) => 0x7e00,
                (true, _) => 0x7fc0,
                (false, _) => half_bits(from, v) as u64,
            }
        }
        ElemType::F32 => {
            let v = x.float(from);
            if v.is_nan() {
                0x7fc0_0000
            } else {
                (v as f32).to_bits() as u64
            }
        }
        ElemType::F64 => {
            let v = x.float(from);
            if v.is_nan() {
                0x7ff8_0000_0000_0000
            } else {
                v.to_bits()
            }
        }
        _ => {
            let b = from.bits();
            ((x.int(from) as u128) & ((1u128 << b) - 1)) as u64
        }
    };
    match to {
        ElemType::F16 | ElemType::BF16 => Scalar::F(half_value(to, bits as u16)),
        ElemType::F32 => Scalar::F(f32::from_bits(bits as u32) as f64),
        ElemType::F64 => Scalar::F(f64::from_bits(bits)),
        _ => Scalar::I(wrap(to, bits as i128)),
    }
}

/// `a ^ b` on integers of type `elem`, wrapping: by squaring over every bit of a
/// non-negative exponent; a negative one gives the truncated quotient `1 / a^|b|` (0 unless
/// `a` is 1 or -1; 0 for `a = 0` too).
fn int_pow(elem: ElemType, a: i128, b: i128) -> i128 {
    if b < 0 {
        return match a {
            1 => 1,
            -1 if b % 2 != 0 => -1,
            -1 => 1,
            _ => 0,
        };
    }
    let (mut r, mut x, mut e) = (1u64, wrap(elem, a) as u64, b as u128);
    while e != 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(x);
        }
        x = x.wrapping_mul(x);
        e >>= 1;
    }
    r as i128
}

/// `x op y` in type `elem`: floats of 16 bits computed in f32 and rounded; integers
/// wrapping, with XLA's division and remainder by 0 and of the minimum by -1. See [`BinOp`]
/// for the semantics.
pub fn binary(op: BinOp, elem: ElemType, x: Scalar, y: Scalar) -> Result<Scalar, MapError> {
    op.check(elem).map_err(MapError::Other)?;
    if elem.is_int() || elem == ElemType::Pred {
        let (a, b) = (x.int(elem), y.int(elem));
        let (lo, _) = int_range(elem);
        let bits = elem.bits();
        let mask = (1u128 << bits) - 1;
        // A shift count is read as unsigned of the type's width.
        let count = (b as u128) & mask;
        let r = match op {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a.wrapping_mul(b),
            BinOp::Div if b == 0 => -1,
            BinOp::Div if elem.is_signed_int() && a == lo && b == -1 => lo,
            BinOp::Div => a / b,
            BinOp::Rem if b == 0 => a,
            BinOp::Rem if elem.is_signed_int() && a == lo && b == -1 => 0,
            BinOp::Rem => a % b,
            BinOp::Max => a.max(b),
            BinOp::Min => a.min(b),
            BinOp::And => a & b,
            BinOp::Or => a | b,
            BinOp::Xor => a ^ b,
            BinOp::Pow => int_pow(elem, a, b),
            BinOp::Shl if count >= bits as u128 => 0,
            BinOp::Shl => ((a as u128 & mask) << count) as i128,
            BinOp::ShrL if count >= bits as u128 => 0,
            BinOp::ShrL => ((a as u128 & mask) >> count) as i128,
            BinOp::ShrA => {
                // The value as signed of the type's width, shifted arithmetically.
                let sh = 128 - bits;
                let signed = ((a as u128 & mask) << sh) as i128 >> sh;
                signed >> count.min(bits as u128 - 1)
            }
            BinOp::Atan2 => return Err(not_for(op.hlo_name(), elem)),
        };
        return Ok(Scalar::I(wrap(elem, r)));
    }
    let (a, b) = (x.float(elem), y.float(elem));
    let r = if elem == ElemType::F64 {
        match op {
            BinOp::Pow => a.powf(b),
            BinOp::Atan2 => a.atan2(b),
            _ => binary_f(op, a, b),
        }
    } else {
        let (fa, fb) = (a as f32, b as f32);
        match op {
            // libm's `powf` and `atan2f`, as C's.
            BinOp::Pow => fa.powf(fb) as f64,
            BinOp::Atan2 => fa.atan2(fb) as f64,
            _ => binary_f(op, fa as f64, fb as f64) as f32 as f64,
        }
    };
    Ok(Scalar::F(round_float(elem, r)))
}

/// `+ - * /` of two f32 values computed in f64 and rounded once to f32 give the f32
/// result exactly (f64 has more than twice f32's significand bits); `fmod` is exact.
fn binary_f(op: BinOp, x: f64, y: f64) -> f64 {
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Rem => x % y,
        // XLA's float max and min propagate NaN (either operand NaN gives NaN).
        BinOp::Max => {
            if x > y || x.is_nan() {
                x
            } else {
                y
            }
        }
        BinOp::Min => {
            if x < y || x.is_nan() {
                x
            } else {
                y
            }
        }
        BinOp::Pow => x.powf(y),
        BinOp::Atan2 => x.atan2(y),
        // Not defined on floats (refused before).
        BinOp::And | BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::ShrA | BinOp::ShrL => f64::NAN,
    }
}

/// `x DIR y` for values of type `elem` (IEEE comparisons on floats: NaN is unordered).
pub fn compare(dir: CmpDir, elem: ElemType, x: Scalar, y: Scalar) -> bool {
    if elem.is_float() {
        let (a, b) = (x.float(elem), y.float(elem));
        return match dir {
            CmpDir::Eq => a == b,
            CmpDir::Ne => a != b,
            CmpDir::Lt => a < b,
            CmpDir::Le => a <= b,
            CmpDir::Gt => a > b,
            CmpDir::Ge => a >= b,
        };
    }
    let (a, b) = (x.int(elem), y.int(elem));
    match dir {
        CmpDir::Eq => a == b,
        CmpDir::Ne => a != b,
        CmpDir::Lt => a < b,
        CmpDir::Le => a <= b,
        CmpDir::Gt => a > b,
        CmpDir::Ge => a >= b,
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

    fn negate_spec(dims: &str) -> KernelSpec {
        let mut s = crate::session::Session::new();
        s.execute(&format!(
            "p = f32[{dims}] parameter(0)\nt = f32[{dims}] negate(p)\n"
        ));
        crate::gpu::sweep::spec_for(&s.hlo, "t")
            .expect("t is defined")
            .expect("t adapts")
    }

    /// A huge but valid shape is refused before anything is allocated, with the sizes in
    /// words; a small one passes, as does any shape where the memory is unknown.
    #[test]
    fn a_run_that_does_not_fit_in_host_memory_is_an_error() {
        let small = negate_spec("64,8");
        // 512 f32 in, 512 out: 2 * 2048 + 512 * (2 * 4 + 16 + 8).
        assert_eq!(host_bytes_needed(&small).unwrap(), 4096 + 512 * 32);
        assert!(fits_in_host_memory(&small, Some(1 << 20)).is_ok());
        let huge = negate_spec("1099511627776");
        let e = fits_in_host_memory(&huge, Some(21 << 30))
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs at least 40.0 TiB"), "{e}");
        assert!(e.contains("21.0 GiB available"), "{e}");
        assert!(fits_in_host_memory(&huge, None).is_ok());
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.50 KiB");
        assert_eq!(human_bytes(300 << 20), "300 MiB");
    }

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
            let sum: f64 = row.iter().map(|v| v.to_f64(ElemType::F32)).sum();
            assert!((sum - 1.0).abs() < 1e-5, "{row:?}");
        }
    }
}
