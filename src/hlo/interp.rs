//! The reference interpreter: runs a computation on small concrete tensors whose elements
//! remember which parameter elements they were computed from. It follows the ops'
//! semantics directly (loops over windows, strides, paddings), never the indexing maps, so
//! the soundness tests can compare the two: for every output element, the maps must name
//! exactly the parameter elements the interpreter says it read.
//!
//! ```text
//! p0 = f32[2, 3] parameter(0);  t = f32[3, 2] transpose(p0), dimensions={1, 0}
//! t[2, 1] = { (p0, [1, 2]) }        (its value came from p0 element [1, 2])
//! ```
//!
//! Integer values are tracked too (`val`), so dynamic offsets, gather indices and folded
//! runtime variables behave as at run time (offsets clamped into bounds, as XLA does).

use super::ops::reshape::strides;
use super::{Computation, Module};
use std::collections::BTreeSet;

/// One element: the parameter elements it depends on, and its integer value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Elem {
    pub deps: BTreeSet<(usize, Vec<i64>)>,
    pub val: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    pub dims: Vec<i64>,
    pub data: Vec<Elem>,
}

impl Tensor {
    pub fn new(dims: &[i64]) -> Tensor {
        let n: i64 = dims.iter().product();
        Tensor {
            dims: dims.to_vec(),
            data: vec![Elem::default(); n.max(0) as usize],
        }
    }
    /// Parameter `p`: each element depends on itself; values from `vals` (or 0).
    pub fn parameter(p: usize, dims: &[i64], vals: &dyn Fn(&[i64]) -> i64) -> Tensor {
        let mut t = Tensor::new(dims);
        for idx in all_indices(dims) {
            let k = t.flat(&idx);
            t.data[k] = Elem {
                deps: [(p, idx.clone())].into_iter().collect(),
                val: vals(&idx),
            };
        }
        t
    }
    pub fn flat(&self, idx: &[i64]) -> usize {
        strides(&self.dims)
            .iter()
            .zip(idx)
            .map(|(s, i)| s * i)
            .sum::<i64>() as usize
    }
    pub fn at(&self, idx: &[i64]) -> &Elem {
        &self.data[self.flat(idx)]
    }
    pub fn in_bounds(&self, idx: &[i64]) -> bool {
        idx.len() == self.dims.len() && idx.iter().zip(&self.dims).all(|(&i, &n)| i >= 0 && i < n)
    }
}

/// Every index of a box, row-major.
pub fn all_indices(dims: &[i64]) -> Vec<Vec<i64>> {
    let mut out = vec![vec![]];
    for &n in dims {
        out = out
            .into_iter()
            .flat_map(|p| (0..n).map(move |i| [p.clone(), vec![i]].concat()))
            .collect();
    }
    out
}

fn union(into: &mut Elem, from: &Elem) {
    into.deps.extend(from.deps.iter().cloned());
}

/// Why the interpreter could not run an instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

/// Runs `comp` on `params`; returns the value of every instruction (tuples as several).
pub fn run(
    module: &Module,
    comp: &Computation,
    params: &[Tensor],
) -> Result<Vec<Vec<Tensor>>, Unsupported> {
    let order = {
        let mut o = super::fusion::reverse_topological(comp, &[comp.root]);
        o.reverse();
        o
    };
    let mut vals: Vec<Vec<Tensor>> = vec![vec![]; comp.instrs.len()];
    for id in order {
        let v = eval(module, comp, id, &vals, params)?;
        vals[id] = v;
    }
    Ok(vals)
}

/// The outputs of `comp` (the root, or the elements of a tuple root).
pub fn run_outputs(
    module: &Module,
    comp: &Computation,
    params: &[Tensor],
) -> Result<Vec<Tensor>, Unsupported> {
    let vals = run(module, comp, params)?;
    Ok(vals[comp.root].clone())
}

fn eval(
    module: &Module,
    comp: &Computation,
    id: usize,
    vals: &[Vec<Tensor>],
    params: &[Tensor],
) -> Result<Vec<Tensor>, Unsupported> {
    let ins = &comp.instrs[id];
    let opd = |k: usize| -> &Tensor { &vals[ins.operands[k]][0] };
    let out_dims = ins.dims().to_vec();
    let mut out = Tensor::new(&out_dims);
    let a = &ins.attrs;
    let unsupported = || Unsupported(format!("the interpreter does not run `{}`", ins.opcode));
    match ins.opcode.as_str() {
        "parameter" => {
            let p = comp
                .parameters()
                .iter()
                .position(|&x| x == id)
                .ok_or_else(unsupported)?;
            return Ok(vec![params
                .get(p)
                .cloned()
                .ok_or_else(|| Unsupported(format!("parameter {p} not given")))?]);
        }
        "constant" => {
            // A scalar, or an array literal read element by element (`{ {5, -4} }`).
            // Values are tracked as i64 for the indices they may become: a float's value is
            // never an index (0 stands for it), but an integer that i64 does not hold (a u64
            // above 2^63) is refused rather than read as 0.
            let lit = a.literal.as_deref().unwrap_or("0");
            let integer = !matches!(
                crate::hlo::shape::elem_class(ins.shape.elem()),
                Some(crate::hlo::shape::ElemClass::Float | crate::hlo::shape::ElemClass::Complex)
            );
            for idx in all_indices(&out_dims) {
                let f = out.flat(&idx);
                out.data[f].val = match crate::hlo::rtvar::literal_at(lit, &idx) {
                    Some(v) => v,
                    None if !integer => 0,
                    None => {
                        return Err(Unsupported(format!(
                            "the interpreter does not read `{}`'s literal {lit} at {idx:?} as a 64-bit signed integer",
                            ins.name
                        )))
                    }
                };
            }
        }
        "iota" => {
            let k = a.iota_dimension.unwrap_or(0) as usize;
            for idx in all_indices(&out_dims) {
                let f = out.flat(&idx);
                out.data[f].val = idx[k];
            }
        }
        "tuple" => return Ok(ins.operands.iter().map(|&o| vals[o][0].clone()).collect()),
        "get-tuple-element" => {
            let t = &vals[ins.operands[0]];
            return Ok(vec![t
                .get(a.index.unwrap_or(0) as usize)
                .cloned()
                .ok_or_else(unsupported)?]);
        }
        "fusion" | "call" => {
            let callee = a
                .calls
                .as_deref()
                .or(a.to_apply.as_deref())
                .and_then(|c| module.computation(c))
                .ok_or_else(unsupported)?;
            let args: Vec<Tensor> = ins.operands.iter().map(|&o| vals[o][0].clone()).collect();
            return run_outputs(module, callee, &args);
        }
        op if super::ops::family(op).is_some_and(|f| f.name == "elementwise") => {
            for idx in all_indices(&out_dims) {
                let f = out.flat(&idx);
                let mut e = Elem::default();
                let mut xs = Vec::new();
                for k in 0..ins.operands.len() {
                    let t = opd(k);
                    let x = if t.dims.is_empty() {
                        t.at(&[])
                    } else {
                        t.at(&idx)
                    };
                    union(&mut e, x);
                    xs.push(x.val);
                }
                e.val = match (op, xs.as_slice()) {
                    ("add", [x, y]) => x.wrapping_add(*y),
                    ("subtract", [x, y]) => x.wrapping_sub(*y),
                    ("multiply", [x, y]) => x.wrapping_mul(*y),
                    ("negate", [x]) => x.wrapping_neg(),
                    ("convert" | "copy", [x]) => *x,
                    _ => 0,
                };
                out.data[f] = e;
            }
        }
        "broadcast" => {
            let ds = a.dimensions.clone().unwrap_or_default();
            for idx in all_indices(&out_dims) {
                let src: Vec<i64> = ds.iter().map(|&k| idx[k as usize]).collect();
                let f = out.flat(&idx);
                out.data[f] = opd(0).at(&src).clone();
            }
        }
        "transpose" => {
            let p = a.dimensions.clone().unwrap_or_default();
            for idx in all_indices(&out_dims) {
                let mut src = vec![0; p.len()];
                for (j, &k) in p.iter().enumerate() {
                    src[k as usize] = idx[j];
                }
                let f = out.flat(&idx);
                out.data[f] = opd(0).at(&src).clone();
            }
        }
        "reshape" | "bitcast" => {
            // Same physical position (row-major for reshape; through layouts for bitcast).
            let (from, to) = if ins.opcode == "bitcast" {
                (
                    ins.shape.clone(),
                    comp.instrs[ins.operands[0]].shape.clone(),
                )
            } else {
                (
                    super::Shape::array("f32", &out_dims),
                    super::Shape::array("f32", opd(0).dims.as_slice()),
                )
            };
            let (fo, to_o) = (from.major_to_minor(), to.major_to_minor());
            let fphys: Vec<i64> = fo.iter().map(|&k| from.dims()[k]).collect();
            let tphys: Vec<i64> = to_o.iter().map(|&k| to.dims()[k]).collect();
            let (fs, ts) = (strides(&fphys), strides(&tphys));
            for idx in all_indices(&out_dims) {
                let lin: i64 = fo.iter().zip(&fs).map(|(&k, s)| idx[k] * s).sum();
                let mut src = vec![0; tphys.len()];
                for (j, &k) in to_o.iter().enumerate() {
                    src[k] = (lin / ts[j]) % tphys[j];
                }
                let f = out.flat(&idx);
                out.data[f] = opd(0).at(&src).clone();
            }
        }
        "slice" => {
            let s = a.slice.clone().unwrap_or_default();
            for idx in all_indices(&out_dims) {
                let src: Vec<i64> = idx
                    .iter()
                    .zip(&s)
                    .map(|(i, sd)| sd.start + i * sd.stride)
                    .collect();
                let f = out.flat(&idx);
                out.data[f] = opd(0).at(&src).clone();
            }
        }
        "reverse" => {
            let r = a.dimensions.clone().unwrap_or_default();
            for idx in all_indices(&out_dims) {
                let src: Vec<i64> = idx
                    .iter()
                    .enumerate()
                    .map(|(k, &i)| {
                        if r.contains(&(k as i64)) {
                            out_dims[k] - 1 - i
                        } else {
                            i
                        }
                    })
                    .collect();
                let f = out.flat(&idx);
                out.data[f] = opd(0).at(&src).clone();
            }
        }
        "concatenate" => {
            let ax = a
                .dimensions
                .as_ref()
                .and_then(|v| v.first())
                .copied()
                .unwrap_or(0) as usize;
            for idx in all_indices(&out_dims) {
                let mut off = 0;
                for k in 0..ins.operands.len() {
                    let n = opd(k).dims[ax];
                    if idx[ax] < off + n {
                        let mut src = idx.clone();
                        src[ax] -= off;
                        let f = out.flat(&idx);
                        out.data[f] = opd(k).at(&src).clone();
                        break;
                    }
                    off += n;
                }
            }
        }
        "pad" => {
            let p = a.padding.clone().unwrap_or_default();
            for idx in all_indices(&out_dims) {
                let mut src = Vec::new();
                let mut inside = true;
                for (k, pd) in p.iter().enumerate() {
                    let q = idx[k] - pd.lo;
                    let step = pd.interior + 1;
                    if q < 0 || q % step != 0 || q / step >= opd(0).dims[k] {
                        inside = false;
                    }
                    src.push(q.div_euclid(step));
                }
                let f = out.flat(&idx);
                out.data[f] = if inside {
                    opd(0).at(&src).clone()
                } else {
                    opd(1).at(&[]).clone()
                };
            }
        }
        "reduce" => {
            let ds = a.dimensions.clone().unwrap_or_default();
            let half = ins.operands.len() / 2;
            let in_dims = opd(0).dims.clone();
            let mut acc = Tensor::new(&out_dims);
            for idx in all_indices(&in_dims) {
                let kept: Vec<i64> = (0..idx.len())
                    .filter(|k| !ds.contains(&(*k as i64)))
                    .map(|k| idx[k])
                    .collect();
                let f = acc.flat(&kept);
                for k in 0..half {
                    let x = opd(k).at(&idx).clone();
                    union(&mut acc.data[f], &x);
                }
            }
            for e in &mut acc.data {
                for k in half..ins.operands.len() {
                    let x = opd(k).at(&[]).clone();
                    union(e, &x);
                }
            }
            return Ok(vec![acc; ins.shape.tuple_elements().len()]);
        }
        "reduce-window" => {
            let w = a.window.clone().unwrap_or_default();
            let half = ins.operands.len() / 2;
            let in_dims = opd(0).dims.clone();
            let wsizes: Vec<i64> = w.iter().map(|x| x.size).collect();
            for idx in all_indices(&out_dims) {
                let f = out.flat(&idx);
                let mut e = Elem::default();
                for s in all_indices(&wsizes) {
                    let mut src = Vec::new();
                    let mut ok = true;
                    for (k, wd) in w.iter().enumerate() {
                        let p = idx[k] * wd.stride + s[k] * wd.rhs_dilate - wd.pad_lo;
                        if p < 0 || p % wd.lhs_dilate != 0 || p / wd.lhs_dilate >= in_dims[k] {
                            ok = false;
                        }
                        src.push(p.div_euclid(wd.lhs_dilate));
                    }
                    if ok {
                        for k in 0..half {
                            let x = opd(k).at(&src).clone();
                            union(&mut e, &x);
                        }
                    }
                }
                for k in half..ins.operands.len() {
                    let x = opd(k).at(&[]).clone();
                    union(&mut e, &x);
                }
                out.data[f] = e;
            }
        }
        "convolution" => {
            let (x, k) = (opd(0), opd(1));
            let default_labels = || {
                let n = out_dims.len().saturating_sub(2);
                let sp: String = (0..n).map(|i| char::from(b'0' + i as u8)).collect();
                format!("b{sp}f_{sp}io->b{sp}f")
            };
            let dl = a.dim_labels.clone().unwrap_or_else(default_labels);
            let (ins_l, out_l) = dl.split_once("->").ok_or_else(unsupported)?;
            let (lhs_l, rhs_l) = ins_l.split_once('_').ok_or_else(unsupported)?;
            let (lhs, rhs, outl): (Vec<char>, Vec<char>, Vec<char>) = (
                lhs_l.chars().collect(),
                rhs_l.chars().collect(),
                out_l.chars().collect(),
            );
            let pos = |l: &[char], ch: char| l.iter().position(|&y| y == ch).unwrap_or(0);
            let sp = |i: usize| char::from(b'0' + i as u8);
            let nsp = x.dims.len() - 2;
            let w: Vec<crate::hlo::WindowDim> = match &a.window {
                Some(w) => w.clone(),
                None => (0..nsp)
                    .map(|i| crate::hlo::WindowDim {
                        size: k.dims[pos(&rhs, sp(i))],
                        ..Default::default()
                    })
                    .collect(),
            };
            let fg = a.feature_group_count.unwrap_or(1);
            let bg = a.batch_group_count.unwrap_or(1);
            let kin = k.dims[pos(&rhs, 'i')];
            let fout = out_dims[pos(&outl, 'f')];
            let bout = out_dims[pos(&outl, 'b')];
            let wsizes: Vec<i64> = w.iter().map(|x| x.size).collect();
            for idx in all_indices(&out_dims) {
                let f = out.flat(&idx);
                let mut e = Elem::default();
                let of = idx[pos(&outl, 'f')];
                // Output feature `of` belongs to feature group `of / (fout / fg)` and to
                // batch group `of / (fout / bg)`.
                let fgroup = of / (fout / fg);
                let bgroup = of / (fout / bg);
                for s in all_indices(&wsizes) {
                    for fi in 0..kin {
                        let mut ki = vec![0; k.dims.len()];
                        ki[pos(&rhs, 'o')] = of;
                        ki[pos(&rhs, 'i')] = fi;
                        for j in 0..nsp {
                            ki[pos(&rhs, sp(j))] = s[j];
                        }
                        union(&mut e, k.at(&ki));
                        let mut xi = vec![0; x.dims.len()];
                        xi[pos(&lhs, 'b')] = bgroup * bout + idx[pos(&outl, 'b')];
                        xi[pos(&lhs, 'f')] = fgroup * kin + fi;
                        let mut ok = true;
                        for (j, wd) in w.iter().enumerate() {
                            let p = idx[pos(&outl, sp(j))] * wd.stride + s[j] * wd.rhs_dilate
                                - wd.pad_lo;
                            let n = x.dims[pos(&lhs, sp(j))];
                            if p < 0 || p % wd.lhs_dilate != 0 || p / wd.lhs_dilate >= n {
                                ok = false;
                            }
                            xi[pos(&lhs, sp(j))] = p.div_euclid(wd.lhs_dilate);
                        }
                        if ok {
                            union(&mut e, x.at(&xi));
                        }
                    }
                }
                out.data[f] = e;
            }
        }
        "dot" | "scaled-dot" => {
            let dd = a.dot.clone().unwrap_or_default();
            let (l, r) = (opd(0), opd(1));
            // scaled-dot: (lhs · lhs_scale) @ (rhs · rhs_scale), a scale element for each
            // block of its operand (each dimension divided by the scale's size).
            let scales =
                (ins.opcode == "scaled-dot" && ins.operands.len() == 4).then(|| (opd(2), opd(3)));
            let scale_at = |t: &Tensor, full: &Tensor, i: &[i64]| -> Vec<i64> {
                i.iter()
                    .zip(full.dims.iter().zip(&t.dims))
                    .map(|(&x, (&n, &s))| if s > 0 && n >= s { x / (n / s) } else { 0 })
                    .collect()
            };
            let free = |rank: usize, b: &[i64], c: &[i64]| -> Vec<usize> {
                (0..rank)
                    .filter(|i| !b.contains(&(*i as i64)) && !c.contains(&(*i as i64)))
                    .collect()
            };
            let lf = free(l.dims.len(), &dd.lhs_batch, &dd.lhs_contracting);
            let rf = free(r.dims.len(), &dd.rhs_batch, &dd.rhs_contracting);
            let csizes: Vec<i64> = dd
                .lhs_contracting
                .iter()
                .map(|&k| l.dims[k as usize])
                .collect();
            let nb = dd.lhs_batch.len();
            for idx in all_indices(&out_dims) {
                let f = out.flat(&idx);
                let mut e = Elem::default();
                for cix in all_indices(&csizes) {
                    let mut li = vec![0; l.dims.len()];
                    let mut ri = vec![0; r.dims.len()];
                    for (b, (&x, &y)) in dd.lhs_batch.iter().zip(&dd.rhs_batch).enumerate() {
                        li[x as usize] = idx[b];
                        ri[y as usize] = idx[b];
                    }
                    for (j, &k) in lf.iter().enumerate() {
                        li[k] = idx[nb + j];
                    }
                    for (j, &k) in rf.iter().enumerate() {
                        ri[k] = idx[nb + lf.len() + j];
                    }
                    for (j, (&x, &y)) in dd
                        .lhs_contracting
                        .iter()
                        .zip(&dd.rhs_contracting)
                        .enumerate()
                    {
                        li[x as usize] = cix[j];
                        ri[y as usize] = cix[j];
                    }
                    union(&mut e, l.at(&li));
                    union(&mut e, r.at(&ri));
                    if let Some((ls, rs)) = &scales {
                        union(&mut e, ls.at(&scale_at(ls, l, &li)));
                        union(&mut e, rs.at(&scale_at(rs, r, &ri)));
                    }
                }
                out.data[f] = e;
            }
        }
        "dynamic-slice" | "dynamic-update-slice" => {
            let dus = ins.opcode == "dynamic-update-slice";
            let first = if dus { 2 } else { 1 };
            let src = opd(0);
            let window = if dus {
                opd(1).dims.clone()
            } else {
                out_dims.clone()
            };
            let mut offs = Vec::new();
            let mut off_deps = Elem::default();
            for k in first..ins.operands.len() {
                let i = k - first;
                let x = opd(k).at(&[]);
                union(&mut off_deps, x);
                offs.push(x.val.clamp(0, src.dims[i] - window[i]));
            }
            for idx in all_indices(&out_dims) {
                let f = out.flat(&idx);
                let mut e;
                if dus {
                    let rel: Vec<i64> = idx.iter().zip(&offs).map(|(i, o)| i - o).collect();
                    e = if opd(1).in_bounds(&rel) {
                        opd(1).at(&rel).clone()
                    } else {
                        src.at(&idx).clone()
                    };
                } else {
                    let s: Vec<i64> = idx.iter().zip(&offs).map(|(i, o)| i + o).collect();
                    e = src.at(&s).clone();
                }
                union(&mut e, &off_deps);
                out.data[f] = e;
            }
        }
        "gather" => {
            let g = a.gather.clone().unwrap_or_default();
            let (op, ix) = (opd(0), opd(1));
            let ivd = g.index_vector_dim as usize;
            for idx in all_indices(&out_dims) {
                let batch: Vec<i64> = (0..idx.len())
                    .filter(|j| !g.offset_dims.contains(&(*j as i64)))
                    .map(|j| idx[j])
                    .collect();
                let offs: Vec<i64> = (0..idx.len())
                    .filter(|j| g.offset_dims.contains(&(*j as i64)))
                    .map(|j| idx[j])
                    .collect();
                let mut e = Elem::default();
                let mut start = vec![0i64; op.dims.len()];
                for (j, &k) in g.start_index_map.iter().enumerate() {
                    let mut ii = Vec::new();
                    let mut b = batch.iter();
                    for q in 0..ix.dims.len() {
                        ii.push(if q == ivd {
                            j as i64
                        } else {
                            *b.next().unwrap_or(&0)
                        });
                    }
                    let x = ix.at(&ii);
                    union(&mut e, x);
                    let k = k as usize;
                    start[k] = x.val.clamp(0, op.dims[k] - g.slice_sizes[k]);
                }
                // The whole index vector is read.
                for j in 0..ix.dims.get(ivd).copied().unwrap_or(1) {
                    let mut ii = Vec::new();
                    let mut b = batch.iter();
                    for q in 0..ix.dims.len() {
                        ii.push(if q == ivd { j } else { *b.next().unwrap_or(&0) });
                    }
                    union(&mut e, ix.at(&ii));
                }
                let mut o = offs.iter();
                let src: Vec<i64> = (0..op.dims.len())
                    .map(|k| {
                        start[k]
                            + if g.collapsed_slice_dims.contains(&(k as i64)) {
                                0
                            } else {
                                *o.next().unwrap_or(&0)
                            }
                    })
                    .collect();
                union(&mut e, op.at(&src));
                let f = out.flat(&idx);
                out.data[f] = e;
            }
        }
        "scatter" => {
            // XLA's documented semantics: the output starts as the operand; each update
            // element goes to start (from its index row) + window index, combined by
            // `to_apply` (taken to read both values); an update whose window does not fit
            // is skipped. Whether any update lands depends on every index, so every output
            // element depends on the whole indices tensor. A variadic scatter (n operands,
            // the indices, n updates) returns n arrays; `to_apply` reads the n current
            // values and the n updates at the position, so where an update lands every
            // output reads all of them.
            let na = ins.operands.len().saturating_sub(1) / 2;
            let sd = a.scatter.clone().unwrap_or_default();
            let ivd = a.gather.as_ref().map(|g| g.index_vector_dim).unwrap_or(0) as usize;
            let (op, ix, upd) = (opd(0), opd(na), opd(na + 1));
            let mut all_ix = Elem::default();
            for e in &ix.data {
                union(&mut all_ix, e);
            }
            let mut outs: Vec<Tensor> = (0..na).map(|_| Tensor::new(&op.dims)).collect();
            for (k, o) in outs.iter_mut().enumerate() {
                for (f, e) in opd(k).data.iter().enumerate() {
                    let mut e = e.clone();
                    union(&mut e, &all_ix);
                    o.data[f] = e;
                }
            }
            let scatter_upd: Vec<usize> = (0..upd.dims.len())
                .filter(|j| !sd.update_window_dims.contains(&(*j as i64)))
                .collect();
            let mut uw = sd.update_window_dims.iter();
            let window: Vec<(Option<usize>, i64)> = (0..op.dims.len())
                .map(|k| {
                    if sd.inserted_window_dims.contains(&(k as i64)) {
                        (None, 1)
                    } else {
                        let j = *uw.next().unwrap_or(&0) as usize;
                        (Some(j), upd.dims[j])
                    }
                })
                .collect();
            for u in all_indices(&upd.dims) {
                let mut start = vec![0i64; op.dims.len()];
                for (v, &k) in sd.scatter_dims_to_operand_dims.iter().enumerate() {
                    let mut b = scatter_upd.iter().map(|&j| u[j]);
                    let ii: Vec<i64> = (0..ix.dims.len())
                        .map(|q| {
                            if q == ivd {
                                v as i64
                            } else {
                                b.next().unwrap_or(0)
                            }
                        })
                        .collect();
                    start[k as usize] = ix.at(&ii).val;
                }
                let fits = (0..op.dims.len())
                    .all(|k| start[k] >= 0 && start[k] + window[k].1 <= op.dims[k]);
                if !fits {
                    continue;
                }
                let dst: Vec<i64> = (0..op.dims.len())
                    .map(|k| start[k] + window[k].0.map(|j| u[j]).unwrap_or(0))
                    .collect();
                let f = op.flat(&dst);
                let mut read = Elem::default();
                for j in 0..na {
                    union(&mut read, opd(na + 1 + j).at(&u));
                    union(&mut read, opd(j).at(&dst));
                }
                for o in outs.iter_mut() {
                    union(&mut o.data[f], &read);
                }
            }
            return Ok(outs);
        }
        _ => return Err(unsupported()),
    }
    Ok(vec![out])
}
