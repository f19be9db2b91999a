//! Soundness of HLO indexing against the reference interpreter: for random instances of
//! every op family (random shapes and attributes) and random fusions, the maps must name
//! exactly the elements the interpreter reads — output to input and input to output.
//! Ops whose maps are documented as over-approximations are checked for inclusion.

use ixmap::hlo::interp::{all_indices, run_outputs, Tensor};
use ixmap::hlo::parse::parse_hlo;
use ixmap::hlo::{fusion, ops, Computation, Workspace};
use ixmap::map::IndexingMap;
use std::collections::BTreeSet;
use std::ops::RangeInclusive;

#[path = "common/brute.rs"]
mod brute;
#[path = "common/rng.rs"]
mod rng;
use brute::{image_all, reads};
use rng::Rng;

/// The shapes, permutations and choices the cases draw.
impl Rng {
    fn dims(&mut self, rank: usize, max: i64) -> Vec<i64> {
        (0..rank).map(|_| self.int(1, max)).collect()
    }
    /// Dimensions of a random rank in `ranks`, each in [1, max].
    fn dims_in(&mut self, ranks: RangeInclusive<i64>, max: i64) -> Vec<i64> {
        let r = self.int(*ranks.start(), *ranks.end()) as usize;
        self.dims(r, max)
    }
    /// A uniformly chosen element of `v` (not empty).
    fn pick<'v, T>(&mut self, v: &'v [T]) -> &'v T {
        &v[self.int(0, v.len() as i64 - 1) as usize]
    }
    fn perm(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.int(0, i as i64) as usize;
            p.swap(i, j);
        }
        p
    }
    fn subset(&mut self, n: usize) -> Vec<usize> {
        (0..n).filter(|_| self.next() % 2 == 0).collect()
    }
}

/// Runs `case(rng, i)` for i in 0..n, all on one generator seeded with `seed`.
fn cases(seed: u64, n: usize, mut case: impl FnMut(&mut Rng, usize)) {
    let mut rng = Rng(seed);
    for i in 0..n {
        case(&mut rng, i);
    }
}

fn join<T: ToString>(v: &[T], sep: &str) -> String {
    v.iter().map(T::to_string).collect::<Vec<_>>().join(sep)
}
fn shape(d: &[i64]) -> String {
    format!("s32[{}]", join(d, ","))
}
fn list(v: &[usize]) -> String {
    format!("{{{}}}", join(v, ","))
}

/// A computation `t` of the instruction lines `body` (the first without its indent).
fn hlo_t(body: &str) -> String {
    format!("t {{\n {body}\n}}")
}
/// A computation `t` of one op over one parameter: `a = {input} parameter(0)`, then
/// `ROOT r = {root}`.
fn unary(input: &str, root: &str) -> String {
    hlo_t(&format!("a = {input} parameter(0)\n ROOT r = {root}"))
}

fn build(src: &str) -> (Workspace, String) {
    let mut ws = Workspace::new();
    let item = parse_hlo(src, 0).unwrap_or_else(|e| panic!("{}\n{src}", e.render(src)));
    let names = ws
        .define(item)
        .unwrap_or_else(|e| panic!("{}\n{src}", e.render(src)));
    (ws, names[0].clone())
}

/// The elements of `out` that read element `x` of parameter `p`, as the interpreter saw.
fn readers(out: &Tensor, p: usize, x: &[i64]) -> BTreeSet<Vec<i64>> {
    all_indices(&out.dims)
        .into_iter()
        .filter(|o| out.at(o).deps.contains(&(p, x.to_vec())))
        .collect()
}

/// What the interpreter read (`actual`) is what the maps name (`predicted`), or with
/// `over` (a documented over-approximation) lies within it.
fn agree(
    actual: &BTreeSet<Vec<i64>>,
    predicted: &BTreeSet<Vec<i64>>,
    over: bool,
    what: impl Fn() -> String,
) {
    if over {
        assert!(actual.is_subset(predicted), "{}", what());
    } else {
        assert_eq!(actual, predicted, "{}", what());
    }
}

/// Parameter values: small integers (offsets and indices come from them).
fn params(comp: &Computation, rng: &mut Rng) -> Vec<Tensor> {
    let seed = rng.next();
    comp.parameters()
        .iter()
        .enumerate()
        .map(|(p, &id)| {
            let s = seed.wrapping_add(p as u64 * 7919);
            Tensor::parameter(p, comp.instrs[id].dims(), &move |idx: &[i64]| {
                let h = idx
                    .iter()
                    .fold(s, |a, &x| a.wrapping_mul(31).wrapping_add(x as u64));
                (h % 9) as i64 - 2
            })
        })
        .collect()
}

/// The runtime values an op's maps take, given the parameter values (`None`: over their
/// bounds).
type Runtime = dyn Fn(&[Tensor]) -> Option<Vec<i64>>;

fn no_rt(_: &[Tensor]) -> Option<Vec<i64>> {
    None
}

/// Checks a single-op computation `t` (operands are parameters, in operand order); the
/// maps of the operands in `over` may name more than is read.
fn check_op(src: &str, rng: &mut Rng, over: &[usize], rt: &Runtime) {
    let (ws, name) = build(src);
    let comp = ws.module.computation(&name).expect("defined");
    let ps = params(comp, rng);
    let out = run_outputs(&ws.module, comp, &ps).expect("interpreter runs")[0].clone();
    let root = comp.root;
    let ins = &comp.instrs[root];
    let per = ops::output_to_input(comp, root);
    let rtv = rt(&ps);
    let rt_of = |maps: &[IndexingMap]| {
        if maps[0].runtimes.is_empty() {
            None
        } else {
            rtv.as_deref()
        }
    };
    for (k, &opnd) in ins.operands.iter().enumerate() {
        let p = comp
            .parameters()
            .iter()
            .position(|&x| x == opnd)
            .expect("operands are parameters");
        let over = over.contains(&k);
        // Output to input.
        for o in all_indices(&out.dims) {
            let predicted = image_all(&per[k], &o, rt_of(&per[k]));
            agree(&reads(&out, &o, p), &predicted, over, || {
                format!("output {o:?} → operand {k}\n{src}\nmap: {}", per[k][0])
            });
        }
        // Input to output.
        let back = ops::input_to_output(comp, root, k);
        if back[0].is_undefined() {
            continue;
        }
        for x in all_indices(ps[p].dims.as_slice()) {
            let predicted: BTreeSet<Vec<i64>> = image_all(&back, &x, rt_of(&back))
                .into_iter()
                .filter(|o| o.len() == out.dims.len())
                .collect();
            agree(&readers(&out, p, &x), &predicted, over, || {
                format!("operand {k} {x:?} → output\n{src}\nmap: {}", back[0])
            });
        }
    }
}

/// `check_op` with every map exact and no runtime variables.
fn check_exact(src: &str, rng: &mut Rng) {
    check_op(src, rng, &[], &no_rt);
}

const CASES: usize = 60;

#[test]
fn elementwise_ops_read_the_same_index() {
    cases(0x9e3779b97f4a7c15, CASES, |rng, _| {
        let s = shape(&rng.dims_in(0..=3, 4));
        let src = hlo_t(&format!("a = {s} parameter(0)\n b = {s} parameter(1)\n c = s32[] parameter(2)\n x = {s} parameter(3)\n ROOT r = {s} clamp(c, a, x)"));
        check_exact(&src, rng);
        let src = hlo_t(&format!(
            "a = {s} parameter(0)\n b = {s} parameter(1)\n ROOT r = {s} add(a, b)"
        ));
        check_exact(&src, rng);
    });
}

#[test]
fn broadcast_transpose_reverse() {
    cases(42, CASES, |rng, _| {
        let out = rng.dims_in(1..=4, 3);
        let kept = rng.subset(out.len());
        let ind: Vec<i64> = kept.iter().map(|&k| out[k]).collect();
        let root = format!("{} broadcast(a), dimensions={}", shape(&out), list(&kept));
        check_exact(&unary(&shape(&ind), &root), rng);
        let p = rng.perm(out.len());
        let tout: Vec<i64> = p.iter().map(|&k| out[k]).collect();
        let root = format!("{} transpose(a), dimensions={}", shape(&tout), list(&p));
        check_exact(&unary(&shape(&out), &root), rng);
        let rv = rng.subset(out.len());
        let root = format!("{} reverse(a), dimensions={}", shape(&out), list(&rv));
        check_exact(&unary(&shape(&out), &root), rng);
    });
}

#[test]
fn variadic_reduce() {
    cases(7, CASES, |rng, _| {
        let ind = rng.dims_in(1..=3, 4);
        let red = rng.subset(ind.len());
        let out: Vec<i64> = (0..ind.len())
            .filter(|k| !red.contains(k))
            .map(|k| ind[k])
            .collect();
        let (si, so) = (shape(&ind), shape(&out));
        let src = hlo_t(&format!(
            "a = {si} parameter(0)\n b = {si} parameter(1)\n i = s32[] parameter(2)\n j = s32[] parameter(3)\n ROOT r = ({so}, {so}) reduce(a, b, i, j), dimensions={}, to_apply=max",
            list(&red)
        ));
        check_exact(&src, rng);
    });
}

#[test]
fn strided_slice() {
    cases(99, CASES, |rng, _| {
        let ind = rng.dims_in(1..=3, 7);
        let mut spec = Vec::new();
        let mut out = Vec::new();
        for &n in &ind {
            let start = rng.int(0, n - 1);
            let limit = rng.int(start + 1, n);
            let stride = rng.int(1, 3);
            spec.push(format!("[{start}:{limit}:{stride}]"));
            out.push((limit - start + stride - 1) / stride);
        }
        let root = format!("{} slice(a), slice={{{}}}", shape(&out), spec.join(", "));
        check_exact(&unary(&shape(&ind), &root), rng);
    });
}

/// A random factorization of `n` into at most `rank` factors.
fn factor(rng: &mut Rng, mut n: i64, rank: usize) -> Vec<i64> {
    let mut v = Vec::new();
    for _ in 1..rank {
        let divs: Vec<i64> = (1..=n).filter(|d| n % d == 0).collect();
        let d = *rng.pick(&divs);
        v.push(d);
        n /= d;
    }
    v.push(n);
    v
}

/// A random factorization of `n` into a random number of factors in `ranks`.
fn factor_in(rng: &mut Rng, n: i64, ranks: RangeInclusive<i64>) -> Vec<i64> {
    let r = rng.int(*ranks.start(), *ranks.end()) as usize;
    factor(rng, n, r)
}

#[test]
fn reshape_and_bitcast() {
    cases(1234, CASES, |rng, _| {
        let total = *rng.pick(&[4, 6, 8, 12, 16, 24, 36]);
        let a = factor_in(rng, total, 1..=4);
        let b = factor_in(rng, total, 1..=4);
        let root = format!("{} reshape(a)", shape(&b));
        check_exact(&unary(&shape(&a), &root), rng);
        let la = list(&rng.perm(a.len()));
        let lb = list(&rng.perm(b.len()));
        let root = format!("{}{lb} bitcast(a)", shape(&b));
        check_exact(&unary(&format!("{}{la}", shape(&a)), &root), rng);
    });
}

#[test]
fn concatenate_and_dot() {
    cases(555, CASES, |rng, _| {
        let base = rng.dims_in(1..=3, 3);
        let ax = rng.int(0, base.len() as i64 - 1) as usize;
        let n = rng.int(1, 3) as usize;
        let mut params = String::new();
        let mut names = Vec::new();
        let mut total = 0;
        for k in 0..n {
            let mut d = base.clone();
            d[ax] = rng.int(1, 3);
            total += d[ax];
            params += &format!(" p{k} = {} parameter({k})\n", shape(&d));
            names.push(format!("p{k}"));
        }
        let mut out = base.clone();
        out[ax] = total;
        let src = format!(
            "t {{\n{params} ROOT r = {} concatenate({}), dimensions={{{ax}}}\n}}",
            shape(&out),
            names.join(", ")
        );
        check_exact(&src, rng);

        // dot with 0-1 batch, 1-2 contracting and 0-1 free dims per side
        let nb = rng.int(0, 1) as usize;
        let nc = rng.int(1, 2) as usize;
        let (lfree, rfree) = (rng.int(0, 1) as usize, rng.int(0, 1) as usize);
        let bd = rng.dims(nb, 2);
        let cd = rng.dims(nc, 3);
        let lf = rng.dims(lfree, 3);
        let rf = rng.dims(rfree, 3);
        let l: Vec<i64> = [bd.clone(), lf.clone(), cd.clone()].concat();
        let r: Vec<i64> = [bd.clone(), cd.clone(), rf.clone()].concat();
        let o: Vec<i64> = [bd.clone(), lf.clone(), rf.clone()].concat();
        let lb: Vec<usize> = (0..nb).collect();
        let lc: Vec<usize> = (nb + lfree..nb + lfree + nc).collect();
        let rc: Vec<usize> = (nb..nb + nc).collect();
        let src = hlo_t(&format!(
            "a = {} parameter(0)\n b = {} parameter(1)\n ROOT r = {} dot(a, b), lhs_batch_dims={}, rhs_batch_dims={}, lhs_contracting_dims={}, rhs_contracting_dims={}",
            shape(&l), shape(&r), shape(&o), list(&lb), list(&lb), list(&lc), list(&rc)
        ));
        check_exact(&src, rng);
    });
}

/// scaled-dot (issue 32, item 7): `(lhs · lhs_scale) @ (rhs · rhs_scale)`, each scale
/// dimension dividing its operand's (blocks along the contracting dimensions, size-1 scales
/// shared by a whole dimension): every map, both directions, exact against the interpreter.
#[test]
fn scaled_dot_matches_the_interpreter() {
    cases(0x5ca1ed, CASES, |rng, _| {
        let nb = rng.int(0, 1) as usize;
        let (lfree, rfree) = (rng.int(0, 1) as usize, rng.int(0, 1) as usize);
        let bd = rng.dims(nb, 2);
        let k = *rng.pick(&[2i64, 4, 6, 8]);
        let lf = rng.dims(lfree, 3);
        let rf = rng.dims(rfree, 3);
        let l: Vec<i64> = [bd.clone(), lf.clone(), vec![k]].concat();
        let r: Vec<i64> = [bd.clone(), vec![k], rf.clone()].concat();
        let o: Vec<i64> = [bd.clone(), lf.clone(), rf.clone()].concat();
        // each scale dimension: the whole size, one (shared), or a divisor (blocks)
        let mut scale = |dims: &[i64]| -> Vec<i64> {
            dims.iter()
                .map(|&n| {
                    let divs: Vec<i64> = (1..=n).filter(|s| n % s == 0).collect();
                    *rng.pick(&divs)
                })
                .collect()
        };
        let (ls, rs) = (scale(&l), scale(&r));
        let lb: Vec<usize> = (0..nb).collect();
        let src = hlo_t(&format!(
            "a = {} parameter(0)\n b = {} parameter(1)\n sa = {} parameter(2)\n sb = {} parameter(3)\n ROOT r = {} scaled-dot(a, b, sa, sb), lhs_batch_dims={}, rhs_batch_dims={}, lhs_contracting_dims={{{}}}, rhs_contracting_dims={{{}}}",
            shape(&l), shape(&r), shape(&ls), shape(&rs), shape(&o), list(&lb), list(&lb), nb + lfree, nb
        ));
        check_exact(&src, rng);
    });
}

#[test]
fn pad_and_reduce_window() {
    cases(31337, CASES, |rng, _| {
        let ind = rng.dims_in(1..=2, 4);
        let mut spec = Vec::new();
        let mut out = Vec::new();
        for &n in &ind {
            let (lo, hi, it) = (rng.int(-1, 2), rng.int(-1, 2), rng.int(0, 2));
            let size = lo + hi + n + (n - 1) * it;
            if size < 1 {
                spec.push("0_0_0".to_string());
                out.push(n);
            } else {
                spec.push(format!("{lo}_{hi}_{it}"));
                out.push(size);
            }
        }
        let src = hlo_t(&format!(
            "a = {} parameter(0)\n v = s32[] parameter(1)\n ROOT r = {} pad(a, v), padding={}",
            shape(&ind),
            shape(&out),
            spec.join("x")
        ));
        check_op(&src, rng, &[1], &no_rt);

        let mut w = Vec::new();
        let mut out = Vec::new();
        let f = |key: &str, v: Vec<String>| format!("{key}={}", v.join("x"));
        let (mut size, mut stride, mut pad, mut ld, mut rd) =
            (vec![], vec![], vec![], vec![], vec![]);
        for &n in &ind {
            let s = rng.int(1, 3);
            let st = rng.int(1, 2);
            let (plo, phi) = (rng.int(0, 2), rng.int(0, 2));
            let (l, r) = (rng.int(1, 2), rng.int(1, 2));
            let dil = (n - 1) * l + 1 + plo + phi;
            let span = (s - 1) * r + 1;
            let o = if dil < span { 0 } else { (dil - span) / st + 1 };
            size.push(s.to_string());
            stride.push(st.to_string());
            pad.push(format!("{plo}_{phi}"));
            ld.push(l.to_string());
            rd.push(r.to_string());
            out.push(o);
        }
        if out.contains(&0) {
            return;
        }
        w.push(f("size", size));
        w.push(f("stride", stride));
        w.push(f("pad", pad));
        w.push(f("lhs_dilate", ld));
        w.push(f("rhs_dilate", rd));
        let src = hlo_t(&format!(
            "a = {} parameter(0)\n v = s32[] parameter(1)\n ROOT r = {} reduce-window(a, v), window={{{}}}, to_apply=max",
            shape(&ind),
            shape(&out),
            w.join(" ")
        ));
        check_exact(&src, rng);
    });
}

/// `n` scalar offset parameters `oK = s32[] parameter(first + K)`, one line each.
fn offset_params(n: usize, first: usize) -> String {
    (0..n)
        .map(|k| format!(" o{k} = s32[] parameter({})\n", k + first))
        .collect()
}

/// The runtime values of a dynamic slice of `sizes` out of `dims` whose offsets are
/// parameters `first..`: each offset clamped into bounds, as at run time.
fn clamped_offsets(
    first: usize,
    dims: Vec<i64>,
    sizes: Vec<i64>,
) -> impl Fn(&[Tensor]) -> Option<Vec<i64>> {
    move |ps: &[Tensor]| {
        Some(
            (0..dims.len())
                .map(|k| ps[k + first].at(&[]).val.clamp(0, dims[k] - sizes[k]))
                .collect(),
        )
    }
}

#[test]
fn dynamic_slice_with_runtime_offsets() {
    cases(2718, CASES, |rng, _| {
        let ind = rng.dims_in(1..=3, 5);
        let sizes: Vec<i64> = ind.iter().map(|&n| rng.int(1, n)).collect();
        let names: Vec<String> = (0..ind.len()).map(|k| format!("o{k}")).collect();
        let src = format!(
            "t {{\n a = {} parameter(0)\n{} ROOT r = {} dynamic-slice(a, {}), dynamic_slice_sizes={{{}}}\n}}",
            shape(&ind),
            offset_params(ind.len(), 1),
            shape(&sizes),
            names.join(", "),
            join(&sizes, ",")
        );
        check_op(
            &src,
            rng,
            &[],
            &clamped_offsets(1, ind.clone(), sizes.clone()),
        );

        let upd: Vec<i64> = sizes.clone();
        let src = format!(
            "t {{\n a = {} parameter(0)\n u = {} parameter(1)\n{} ROOT r = {} dynamic-update-slice(a, u, {})\n}}",
            shape(&ind),
            shape(&upd),
            offset_params(ind.len(), 2),
            shape(&ind),
            names.join(", ")
        );
        check_op(
            &src,
            rng,
            &[0, 1],
            &clamped_offsets(2, ind.clone(), upd.clone()),
        );
    });
}

#[test]
fn canonical_gather() {
    cases(161803, CASES, |rng, _| {
        let op = rng.dims_in(1..=3, 5);
        let nb = rng.int(1, 4);
        let sm: Vec<usize> = rng.subset(op.len());
        if sm.is_empty() {
            return;
        }
        let sizes: Vec<i64> = op.iter().map(|&n| rng.int(1, n)).collect();
        let out: Vec<i64> = [vec![nb], sizes.clone()].concat();
        let offset_dims: Vec<usize> = (1..=op.len()).collect();
        let src = hlo_t(&format!(
            "a = {} parameter(0)\n i = s32[{nb},{}] parameter(1)\n ROOT r = {} gather(a, i), offset_dims={}, collapsed_slice_dims={{}}, start_index_map={}, index_vector_dim=1, slice_sizes={{{}}}",
            shape(&op),
            sm.len(),
            shape(&out),
            list(&offset_dims),
            list(&sm),
            join(&sizes, ",")
        ));
        // The operand's runtime variables depend on the batch row: check inclusion; the
        // indices' map is exact.
        check_op(&src, rng, &[0], &no_rt);
    });
}

/// Constant start indices, in range or not (issue 32, item 9): dynamic-slice and gather
/// clamp their start indices, so a constant outside the bounds folds to the clamped value,
/// and the maps (no runtime variables left) name exactly the elements the interpreter
/// reads; `clamp_notes` names exactly the starts that were out of range.
#[test]
fn constant_starts_fold_as_the_op_clamps() {
    let mut clamped = 0;
    cases(0xc1a3, CASES, |rng, _| {
        let ind = rng.dims_in(1..=3, 5);
        let sizes: Vec<i64> = ind.iter().map(|&n| rng.int(1, n)).collect();
        let starts: Vec<i64> = ind.iter().map(|&n| rng.int(-4, n + 4)).collect();
        let consts: String = starts
            .iter()
            .enumerate()
            .map(|(k, v)| format!(" o{k} = s32[] constant({v})\n"))
            .collect();
        let names: Vec<String> = (0..ind.len()).map(|k| format!("o{k}")).collect();
        let ds = format!(
            "t {{\n a = {} parameter(0)\n{consts} ROOT r = {} dynamic-slice(a, {}), dynamic_slice_sizes={{{}}}\n}}",
            shape(&ind),
            shape(&sizes),
            names.join(", "),
            join(&sizes, ",")
        );
        // gather: one batch row, its start row a constant.
        let g = format!(
            "t {{\n a = {} parameter(0)\n i = s32[1,{}] constant({{ {{{}}} }})\n ROOT r = {} gather(a, i), offset_dims={}, collapsed_slice_dims={{}}, start_index_map={}, index_vector_dim=1, slice_sizes={{{}}}\n}}",
            shape(&ind),
            ind.len(),
            join(&starts, ", "),
            shape(&[vec![1], sizes.clone()].concat()),
            list(&(1..=ind.len()).collect::<Vec<_>>()),
            list(&(0..ind.len()).collect::<Vec<_>>()),
            join(&sizes, ",")
        );
        let outside = ind
            .iter()
            .zip(&sizes)
            .zip(&starts)
            .filter(|((n, s), v)| !(0..=*n - *s).contains(*v))
            .count();
        for src in [ds, g] {
            let (ws, name) = build(&src);
            let comp = ws.module.computation(&name).expect("defined");
            let ps = params(comp, rng);
            let out = run_outputs(&ws.module, comp, &ps).expect("interpreter runs")[0].clone();
            let per = ops::output_to_input(comp, comp.root);
            assert!(
                per[0][0].runtimes.is_empty(),
                "folded\n{src}\n{}",
                per[0][0]
            );
            for o in all_indices(&out.dims) {
                agree(
                    &reads(&out, &o, 0),
                    &image_all(&per[0], &o, None),
                    false,
                    || format!("output {o:?}\n{src}\nmap: {}", per[0][0]),
                );
            }
            let notes = ops::clamp_notes(comp, comp.root);
            assert_eq!(notes.len(), outside, "{src}\n{notes:?}");
            clamped += notes.len();
        }
    });
    assert!(clamped > 20, "{clamped} clamped starts");
}

/// Scatter, from XLA's documented semantics: random inserted window dimensions, started
/// dimensions (in any order) and position of the scatter dimension among the updates'
/// dimensions; index values include out-of-bounds starts (those updates are skipped).
/// The operand's and the indices' maps are exact both ways (every output element depends
/// on the whole indices tensor); the updates' maps over-approximate (inclusion).
#[test]
fn scatter_matches_the_interpreter() {
    let mut checked = 0;
    cases(0x5ca7, CASES, |rng, _| {
        let op = rng.dims_in(1..=3, 4);
        let inserted = rng.subset(op.len());
        let started: Vec<usize> = {
            let sub = rng.subset(op.len());
            let p = rng.perm(sub.len());
            p.iter().map(|&i| sub[i]).collect()
        };
        if started.is_empty() {
            return;
        }
        let win: Vec<i64> = (0..op.len())
            .filter(|k| !inserted.contains(k))
            .map(|k| rng.int(1, op[k]))
            .collect();
        let nb = rng.int(1, 3);
        let at = rng.int(0, win.len() as i64) as usize;
        let mut upd = win.clone();
        upd.insert(at, nb);
        let uwd: Vec<usize> = (0..upd.len()).filter(|&j| j != at).collect();
        // One array, or a variadic scatter of two (a tuple of two outputs; output 0 is
        // checked: it reads operand 1 and both updates only where an update lands).
        let na = rng.int(1, 2) as usize;
        let mut lines = Vec::new();
        for k in 0..na {
            lines.push(format!("a{k} = {} parameter({k})", shape(&op)));
        }
        lines.push(format!("i = s32[{nb},{}] parameter({na})", started.len()));
        for k in 0..na {
            lines.push(format!("u{k} = {} parameter({})", shape(&upd), na + 1 + k));
        }
        let out = if na == 1 {
            shape(&op)
        } else {
            format!("({}, {})", shape(&op), shape(&op))
        };
        let names: Vec<String> = (0..na)
            .map(|k| format!("a{k}"))
            .chain(std::iter::once("i".to_string()))
            .chain((0..na).map(|k| format!("u{k}")))
            .collect();
        lines.push(format!(
            "ROOT r = {out} scatter({}), update_window_dims={}, inserted_window_dims={}, scatter_dims_to_operand_dims={}, index_vector_dim=1",
            names.join(", "),
            list(&uwd),
            list(&inserted),
            list(&started),
        ));
        let src = hlo_t(&lines.join("\n "));
        let over: Vec<usize> = (1..na).chain(na + 1..2 * na + 1).collect();
        check_op(&src, rng, &over, &no_rt);
        checked += 1;
    });
    assert!(checked > CASES / 4, "too few scatter cases: {checked}");
}

/// Random fusions: chains and diamonds of elementwise, transpose, reshape, broadcast,
/// slice, reverse and reduce over one or two parameters. The union of each parameter's
/// maps must equal the elements the interpreter reads, for every output element; and the
/// input-to-output maps must name exactly the outputs that read each parameter element.
#[test]
fn random_fusions_match_the_interpreter() {
    cases(0xfeed, 120, |rng, case| {
        let (src, _) = random_fusion(rng, 8);
        let (ws, name) = build(&src);
        let comp = ws.module.computation(&name).expect("defined");
        let ps = params(comp, rng);
        let out = run_outputs(&ws.module, comp, &ps).expect("runs")[0].clone();
        let fi = fusion::output_to_input(&ws.module, comp);
        for (p, maps) in fi.outputs[0].iter().enumerate() {
            for o in all_indices(&out.dims) {
                assert_eq!(
                    reads(&out, &o, p),
                    image_all(maps, &o, None),
                    "case {case}, output {o:?} → parameter {p}\n{src}\nmaps: {maps:#?}"
                );
            }
            let back = fusion::input_to_output(comp, p);
            for x in all_indices(ps[p].dims.as_slice()) {
                assert_eq!(
                    readers(&out, p, &x),
                    image_all(&back[0], &x, None),
                    "case {case}, parameter {p} {x:?} → output\n{src}"
                );
            }
        }
    });
}

/// A random fusion of `n` ops over two parameters of the same shape.
fn random_fusion(rng: &mut Rng, n: usize) -> (String, Vec<i64>) {
    let d0 = rng.dims_in(1..=3, 3);
    let mut lines = vec![
        format!(" p0 = {} parameter(0)", shape(&d0)),
        format!(" p1 = {} parameter(1)", shape(&d0)),
    ];
    let mut vals: Vec<(String, Vec<i64>)> =
        vec![("p0".into(), d0.clone()), ("p1".into(), d0.clone())];
    for i in 0..n {
        let (a, da) = rng.pick(&vals).clone();
        let name = format!("v{i}");
        let (line, dims) = match rng.int(0, 6) {
            0 => {
                // elementwise with another value of the same shape, if any
                let same: Vec<&(String, Vec<i64>)> =
                    vals.iter().filter(|(_, d)| *d == da).collect();
                let (b, _) = rng.pick(&same);
                (format!("{} add({a}, {b})", shape(&da)), da.clone())
            }
            1 => {
                let p = rng.perm(da.len());
                let t: Vec<i64> = p.iter().map(|&k| da[k]).collect();
                (
                    format!("{} transpose({a}), dimensions={}", shape(&t), list(&p)),
                    t,
                )
            }
            2 => {
                let b = factor_in(rng, da.iter().product(), 1..=3);
                (format!("{} reshape({a})", shape(&b)), b)
            }
            3 if da.len() < 3 => {
                let pos = rng.int(0, da.len() as i64) as usize;
                let mut out = da.clone();
                out.insert(pos, rng.int(1, 3));
                let kept: Vec<usize> = (0..out.len()).filter(|&k| k != pos).collect();
                (
                    format!("{} broadcast({a}), dimensions={}", shape(&out), list(&kept)),
                    out,
                )
            }
            4 => {
                let mut spec = Vec::new();
                let mut out = Vec::new();
                for &m in &da {
                    let s = rng.int(0, m - 1);
                    let st = rng.int(1, 2);
                    spec.push(format!("[{s}:{m}:{st}]"));
                    out.push((m - s + st - 1) / st);
                }
                (
                    format!("{} slice({a}), slice={{{}}}", shape(&out), spec.join(", ")),
                    out,
                )
            }
            5 if da.len() > 1 => {
                let k = rng.int(0, da.len() as i64 - 1) as usize;
                let out: Vec<i64> = (0..da.len()).filter(|&j| j != k).map(|j| da[j]).collect();
                lines.push(format!(" z{i} = s32[] constant(0)"));
                (
                    format!(
                        "{} reduce({a}, z{i}), dimensions={{{k}}}, to_apply=add",
                        shape(&out)
                    ),
                    out,
                )
            }
            _ => {
                let r = rng.subset(da.len());
                (
                    format!("{} reverse({a}), dimensions={}", shape(&da), list(&r)),
                    da.clone(),
                )
            }
        };
        lines.push(format!(" {name} = {line}"));
        vals.push((name, dims));
    }
    let last = lines.len() - 1;
    lines[last] = lines[last].replacen(' ', " ROOT ", 1);
    (format!("f {{\n{}\n}}", lines.join("\n")), d0)
}
/// One single-op computation per op family with a zero-sized tensor somewhere (the output,
/// an operand, or both). Every map must agree with the interpreter (which reads nothing
/// from a tensor without elements), maps out of an empty output are KNOWN EMPTY, and no
/// analysis panics (the reshape `f32[1,0,0] -> f32[0]` once divided by zero).
#[test]
fn zero_sized_shapes_give_known_empty_maps() {
    // (computation, whether the interpreter can run it, modes: operand k over-approximated)
    let cases: &[(&str, bool, &[usize])] = &[
        ("a = f32[0,3] parameter(0)\n b = f32[0,3] parameter(1)\n ROOT r = f32[0,3] add(a, b)", true, &[]),
        ("a = f32[0] parameter(0)\n ROOT r = f32[2,0] broadcast(a), dimensions={1}", true, &[]),
        ("a = f32[3] parameter(0)\n ROOT r = f32[0,3] broadcast(a), dimensions={1}", true, &[]),
        ("ROOT r = s32[0,2] iota(), iota_dimension=1", true, &[]),
        ("a = f32[4,0] parameter(0)\n i = s32[] parameter(1)\n j = s32[] parameter(2)\n ROOT r = f32[2,0] dynamic-slice(a, i, j), dynamic_slice_sizes={2,0}", true, &[]),
        ("a = f32[4,0] parameter(0)\n u = f32[2,0] parameter(1)\n i = s32[] parameter(2)\n j = s32[] parameter(3)\n ROOT r = f32[4,0] dynamic-update-slice(a, u, i, j)", true, &[]),
        ("a = f32[5,4] parameter(0)\n i = s32[0,1] parameter(1)\n ROOT r = f32[0,4] gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}", true, &[]),
        ("a = f32[0,3] parameter(0)\n ROOT r = f32[3,0] transpose(a), dimensions={1,0}", true, &[]),
        ("a = f32[0,2] parameter(0)\n ROOT r = f32[0,2] reverse(a), dimensions={0}", true, &[]),
        ("a = f32[0,3] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[3] reduce(a, v), dimensions={0}, to_apply=add", true, &[]),
        ("a = f32[3,0] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[0] reduce(a, v), dimensions={0}, to_apply=add", true, &[]),
        ("a = f32[5,0] parameter(0)\n ROOT r = f32[2,0] slice(a), slice={[1:3], [0:0]}", true, &[]),
        ("a = f32[1,0,0] parameter(0)\n ROOT r = f32[0] reshape(a)", true, &[]),
        ("a = f32[0] parameter(0)\n ROOT r = f32[1,0,0] reshape(a)", true, &[]),
        ("a = f32[0,4] parameter(0)\n ROOT r = f32[4,0] bitcast(a)", true, &[]),
        ("a = f32[0,3] parameter(0)\n b = f32[2,3] parameter(1)\n ROOT r = f32[2,3] concatenate(a, b), dimensions={0}", true, &[]),
        ("a = f32[2,0] parameter(0)\n b = f32[0,3] parameter(1)\n ROOT r = f32[2,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}", true, &[]),
        ("a = f32[0,4] parameter(0)\n b = f32[4,3] parameter(1)\n ROOT r = f32[0,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}", true, &[]),
        ("a = f32[0] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[3] pad(a, v), padding=1_2_1", true, &[1]),
        ("a = f32[2,0] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[4,0] pad(a, v), padding=1_1x0_0", true, &[1]),
        ("a = f32[0] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[0] reduce-window(a, v), window={size=1}, to_apply=add", true, &[]),
        ("a = f32[0,3] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[0,2] reduce-window(a, v), window={size=1x2}, to_apply=add", true, &[]),
        ("a = f32[0,5,4] parameter(0)\n k = f32[3,4,2] parameter(1)\n ROOT r = f32[0,3,2] convolution(a, k), window={size=3}, dim_labels=b0f_0io->b0f", false, &[]),
        ("a = f32[2,5,0] parameter(0)\n k = f32[3,0,2] parameter(1)\n ROOT r = f32[2,3,2] convolution(a, k), window={size=3}, dim_labels=b0f_0io->b0f", false, &[]),
        ("a = f32[0] parameter(0)\n b = s32[2] parameter(1)\n ROOT r = (f32[0], s32[2]) tuple(a, b)", false, &[]),
        ("a = f32[5,4] parameter(0)\n i = s32[0,1] parameter(1)\n u = f32[0,4] parameter(2)\n ROOT r = f32[5,4] scatter(a, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1", true, &[]),
        ("a = f32[5,0] parameter(0)\n i = s32[2,1] parameter(1)\n u = f32[2,0] parameter(2)\n ROOT r = f32[5,0] scatter(a, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1", true, &[]),
        ("a = (f32[0], s32[2]) parameter(0)\n ROOT r = f32[0] get-tuple-element(a), index=0", false, &[]),
    ];
    let mut rng = Rng(0x5eed);
    for (body, runs, over) in cases {
        let src = hlo_t(body);
        let (ws, name) = build(&src);
        let comp = ws.module.computation(&name).expect("defined");
        let root = comp.root;
        let ins = &comp.instrs[root];
        assert!(
            ops::check(comp, root).is_ok(),
            "the op is valid: {:?}\n{src}",
            ops::check(comp, root)
        );
        let per = ops::output_to_input(comp, root);
        let empty = |s: &ixmap::hlo::Shape| !s.is_tuple() && s.dims().contains(&0);
        let out_empty = empty(&ins.shape);
        for (k, maps) in per.iter().enumerate() {
            let opd_empty = empty(&comp.instrs[ins.operands[k]].shape);
            if out_empty || opd_empty {
                assert!(
                    maps.iter().all(|m| m.is_known_empty()),
                    "output → operand {k} is KNOWN EMPTY\n{src}\n{maps:?}"
                );
            }
            let back = ops::input_to_output(comp, root, k);
            if out_empty || opd_empty {
                assert!(
                    back.iter().all(|m| m.is_known_empty() || m.is_undefined()),
                    "operand {k} → output is KNOWN EMPTY\n{src}\n{back:?}"
                );
            }
        }
        // Whole-computation analyses run too.
        let fi = fusion::output_to_input(&ws.module, comp);
        for p in 0..comp.parameters().len() {
            let _ = fusion::input_to_output(comp, p);
        }
        for (o, per_param) in fi.outputs.iter().enumerate() {
            if empty(&comp.instrs[comp.outputs()[o]].shape) {
                for maps in per_param {
                    assert!(maps.iter().all(|m| m.is_known_empty()), "{src}\n{maps:?}");
                }
            }
        }
        if *runs {
            check_op(&src, &mut rng, over, &no_rt);
        }
    }
}

/// Sizes that do not fit in 64 bits are refused with an error naming the problem, never
/// wrapped: huge padding, windows, dilations and strides.
#[test]
fn huge_attributes_are_errors_not_wrapped_sizes() {
    let cases: &[(&str, &str)] = &[
        (
            "a = f32[4] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[4] pad(a, v), padding=9223372036854775807_0",
            "overflows",
        ),
        (
            "a = f32[4] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[4] pad(a, v), padding=0_0_9223372036854775807",
            "overflows",
        ),
        (
            "a = f32[4] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[4] pad(a, v), padding=-9223372036854775808_9223372036854775807",
            "overflows",
        ),
        (
            "a = f32[4] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[1] reduce-window(a, v), window={size=2 rhs_dilate=9223372036854775807}, to_apply=add",
            "overflows",
        ),
        (
            "a = f32[4] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[1] reduce-window(a, v), window={size=2 lhs_dilate=9223372036854775807}, to_apply=add",
            "overflows",
        ),
        (
            "a = f32[4] parameter(0)\n v = f32[] parameter(1)\n ROOT r = f32[1] reduce-window(a, v), window={size=1 pad=9223372036854775807_1}, to_apply=add",
            "overflows",
        ),
        (
            "a = f32[1,5,1] parameter(0)\n k = f32[2,1,1] parameter(1)\n ROOT r = f32[1,1,1] convolution(a, k), window={size=2 rhs_dilate=9223372036854775807}, dim_labels=b0f_0io->b0f",
            "overflows",
        ),
    ];
    for (body, want) in cases {
        let src = hlo_t(body);
        let mut ws = Workspace::new();
        let item = parse_hlo(&src, 0).unwrap_or_else(|e| panic!("{}\n{src}", e.render(&src)));
        let err = ws.define(item).expect_err(&src);
        assert!(err.message.contains(want), "{src}\n{}", err.message);
    }
    // A huge stride is fine (one element), and its size is computed without overflow.
    let src = "t {\n a = f32[4] parameter(0)\n ROOT r = f32[1] slice(a), slice={[0:4:9223372036854775807]}\n}";
    let (ws, name) = build(src);
    let comp = ws.module.computation(&name).expect("defined");
    let m = &ops::output_to_input(comp, comp.root)[0][0];
    assert_eq!(m.eval_point(&[0]).unwrap(), Some(vec![0]));
}

/// Convolutions, plain and grouped (feature_group_count or batch_group_count), against
/// the interpreter: every output element reads the kernel elements and the in-range input
/// elements its window covers, in its feature or batch group.
#[test]
fn grouped_convolutions() {
    cases(0xc0ffee, CASES, |rng, case| {
        let groups = rng.int(1, 3);
        let by_batch = case % 2 == 1;
        let (fg, bg) = if by_batch { (1, groups) } else { (groups, 1) };
        let kin = rng.int(1, 2);
        let kout = groups * rng.int(1, 2);
        let xf = kin * fg;
        let ob = rng.int(1, 2);
        let xb = ob * bg;
        let n = rng.int(1, 5);
        let size = rng.int(1, 3);
        let stride = rng.int(1, 2);
        let (plo, phi) = (rng.int(0, 2), rng.int(0, 1));
        let (ld, rd) = (rng.int(1, 2), rng.int(1, 2));
        let dil = (n - 1) * ld + 1 + plo + phi;
        let span = (size - 1) * rd + 1;
        if dil < span {
            return;
        }
        let on = (dil - span) / stride + 1;
        let src = hlo_t(&format!(
            "x = s32[{xb},{n},{xf}] parameter(0)\n k = s32[{size},{kin},{kout}] parameter(1)\n ROOT r = s32[{ob},{on},{kout}] convolution(x, k), window={{size={size} stride={stride} pad={plo}_{phi} lhs_dilate={ld} rhs_dilate={rd}}}, dim_labels=b0f_0io->b0f, feature_group_count={fg}, batch_group_count={bg}"
        ));
        check_exact(&src, rng);
        // The same with the feature dimension first and the kernel's dimensions reordered.
        let src = hlo_t(&format!(
            "x = s32[{xf},{xb},{n}] parameter(0)\n k = s32[{kout},{size},{kin}] parameter(1)\n ROOT r = s32[{kout},{ob},{on}] convolution(x, k), window={{size={size} stride={stride} pad={plo}_{phi} lhs_dilate={ld} rhs_dilate={rd}}}, dim_labels=fb0_o0i->fb0, feature_group_count={fg}, batch_group_count={bg}"
        ));
        check_exact(&src, rng);
    });
}

/// Defines several HLO statements in one workspace (callees first).
fn build_all(items: &[String]) -> Workspace {
    let mut ws = Workspace::new();
    for src in items {
        let item = parse_hlo(src, 0).unwrap_or_else(|e| panic!("{}\n{src}", e.render(src)));
        ws.define(item)
            .unwrap_or_else(|e| panic!("{}\n{src}", e.render(src)));
    }
    ws
}

/// Every output of `comp` against the interpreter, both directions, exact.
fn check_computation(ws: &Workspace, comp: &Computation, ps: &[Tensor], what: &str) {
    let outs = run_outputs(&ws.module, comp, ps).expect("runs");
    let fi = fusion::output_to_input(&ws.module, comp);
    assert_eq!(fi.outputs.len(), outs.len(), "{what}");
    for (o, out) in outs.iter().enumerate() {
        for (p, maps) in fi.outputs[o].iter().enumerate() {
            for idx in all_indices(&out.dims) {
                assert_eq!(
                    reads(out, &idx, p),
                    image_all(maps, &idx, None),
                    "output {o} {idx:?} → parameter {p}\n{what}\nmaps: {maps:#?}"
                );
            }
        }
    }
    for (p, param) in ps.iter().enumerate() {
        let back = fusion::input_to_output_in(&ws.module, comp, p);
        assert_eq!(back.len(), outs.len(), "{what}");
        for (o, out) in outs.iter().enumerate() {
            for x in all_indices(param.dims.as_slice()) {
                assert_eq!(
                    readers(out, p, &x),
                    image_all(&back[o], &x, None),
                    "parameter {p} {x:?} → output {o}\n{what}\nmaps: {:#?}",
                    back[o]
                );
            }
        }
    }
}

/// Random fusions nested two levels deep, through `fusion` and `call`, with a
/// multi-output fusion read by get-tuple-element and a tuple root that also returns a
/// parameter: every output's maps to every parameter equal what the interpreter (which
/// runs the nested computations as calls) reads, in both directions.
#[test]
fn nested_and_multi_output_fusions_match_the_interpreter() {
    cases(0x0ddba11, 40, |rng, case| {
        let (a_src, d0) = random_fusion(rng, 5);
        // fb takes the same parameter shape as fa.
        let b_src = loop {
            let (s, d) = random_fusion(rng, 5);
            if d == d0 {
                break s;
            }
        };
        let a_src = a_src.replacen("f {", "fa {", 1);
        let b_src = b_src.replacen("f {", "fb {", 1);
        let pre = build_all(&[a_src.clone(), b_src.clone()]);
        let out_of = |n: &str| {
            let c = pre.module.computation(n).expect("defined");
            shape(c.instrs[c.root].dims())
        };
        let (oa, ob, s) = (out_of("fa"), out_of("fb"), shape(&d0));
        let mo = format!(
            "mo {{\n q0 = {s} parameter(0)\n q1 = {s} parameter(1)\n a = {oa} fusion(q0, q1), kind=kLoop, calls=fa\n b = {ob} call(q1, q0), to_apply=fb\n ROOT t = ({oa}, {ob}) tuple(a, b)\n}}"
        );
        let outer = format!(
            "outer {{\n p0 = {s} parameter(0)\n p1 = {s} parameter(1)\n m = ({oa}, {ob}) fusion(p1, p0), kind=kLoop, calls=mo\n g0 = {oa} get-tuple-element(m), index=0\n g1 = {ob} get-tuple-element(m), index=1\n n = {oa} negate(g0)\n ROOT r = ({oa}, {ob}, {s}) tuple(n, g1, p0)\n}}"
        );
        let ws = build_all(&[a_src.clone(), b_src.clone(), mo.clone(), outer.clone()]);
        let comp = ws.module.computation("outer").expect("defined");
        let ps = params(comp, rng);
        let what = format!("case {case}\n{a_src}\n{b_src}\n{mo}\n{outer}");
        check_computation(&ws, comp, &ps, &what);
    });
}

/// A dynamic-slice inside a nested fusion whose offset the caller computes from
/// constants: the runtime variable folds to the offset's value, clamped into bounds as
/// at run time, and the maps read exactly the interpreter's elements.
#[test]
fn runtime_offsets_fold_through_nested_fusions() {
    let mut rng = Rng(0xc1a3);
    let inner = "ds_inner {\n src = s32[16,3] parameter(0)\n off = s32[] parameter(1)\n zero = s32[] constant(0)\n ROOT ds = s32[4,3] dynamic-slice(src, off, zero), dynamic_slice_sizes={4,3}\n}".to_string();
    for c in -6..=22 {
        for via_iota in [false, true] {
            let offset = if via_iota {
                // element 1 of iota + (c - 1): the value c, through broadcast/add/slice/reshape
                format!(" io = s32[3] iota(), iota_dimension=0\n k = s32[] constant({})\n kb = s32[3] broadcast(k), dimensions={{}}\n v = s32[3] add(io, kb)\n v1 = s32[1] slice(v), slice={{[1:2]}}\n o = s32[] reshape(v1)", c - 1)
            } else {
                format!(" o = s32[] constant({c})")
            };
            let outer = format!(
                "outer {{\n p0 = s32[16,3] parameter(0)\n{offset}\n ROOT f = s32[4,3] fusion(p0, o), kind=kLoop, calls=ds_inner\n}}"
            );
            let ws = build_all(&[inner.clone(), outer.clone()]);
            let comp = ws.module.computation("outer").expect("defined");
            let fi = fusion::output_to_input(&ws.module, comp);
            assert!(
                fi.outputs[0][0].iter().all(|m| m.runtimes.is_empty()),
                "the offset folds: {:?}\n{outer}",
                fi.outputs[0][0]
            );
            let ps = params(comp, &mut rng);
            check_computation(&ws, comp, &ps, &format!("{inner}\n{outer}"));
        }
    }
}

/// Epilogue maps against the interpreter: in a random fusion, one instruction `h` is
/// marked as a hero; the same fusion with `h` replaced by a new parameter shows, run by the
/// interpreter, exactly which root elements each element of `h` reaches. The epilogue's
/// maps from `h`'s index to the root's must name exactly those (checked when no other
/// hero lies between `h` and the root, where the epilogue would stop).
#[test]
fn epilogue_maps_match_the_interpreter() {
    use ixmap::hlo::epilogue;
    let mut checked = 0;
    cases(0xe1109e, 150, |rng, case| {
        let (src, _) = random_fusion(rng, 7);
        let (ws, name) = build(&src);
        let comp = ws.module.computation(&name).expect("defined");
        let candidates: Vec<usize> = (0..comp.instrs.len())
            .filter(|&i| comp.instrs[i].name.starts_with('v'))
            .collect();
        let h = *rng.pick(&candidates);
        let users = comp.users();
        // Instructions reachable from h through users: no other hero among them.
        let mut stack = users[h].clone();
        let mut between_hero = false;
        let mut seen = BTreeSet::new();
        while let Some(v) = stack.pop() {
            if seen.insert(v) {
                between_hero |= epilogue::is_hero(comp, v);
                stack.extend(users[v].iter().copied());
            }
        }
        if between_hero {
            return;
        }
        let es = epilogue::epilogues(comp, &[h]);
        if !seen.contains(&comp.root) && h != comp.root {
            // h is dead code: the outputs never reach it, so it is no hero.
            assert!(es.iter().all(|e| e.hero != h), "case {case}\n{src}");
            return;
        }
        let e = es.iter().find(|e| e.hero == h).expect("h is a hero");
        assert_eq!(e.roots, vec![comp.root], "case {case}\n{src}");
        // The fusion with h replaced by parameter 2.
        let hn = &comp.instrs[h].name;
        let hs = shape(comp.instrs[h].dims());
        let cut: Vec<String> = src
            .lines()
            .map(|l| {
                let t = l.trim_start().trim_start_matches("ROOT ");
                if t.starts_with(&format!("{hn} = ")) {
                    let root = if l.contains("ROOT ") { "ROOT " } else { "" };
                    format!(" {root}{hn} = {hs} parameter(2)")
                } else {
                    l.to_string()
                }
            })
            .collect();
        let cut = cut.join("\n");
        let (ws2, name2) = build(&cut);
        let comp2 = ws2.module.computation(&name2).expect("defined");
        let ps = params(comp2, rng);
        let out = run_outputs(&ws2.module, comp2, &ps).expect("runs")[0].clone();
        for x in all_indices(comp.instrs[h].dims()) {
            assert_eq!(
                readers(&out, 2, &x),
                image_all(&e.maps[0], &x, None),
                "case {case}: hero {hn} {x:?} → root\n{src}\nmaps: {:#?}",
                e.maps[0]
            );
        }
        checked += 1;
    });
    assert!(checked > 30, "too few epilogue cases: {checked}");
}

/// How a start index is computed from its parameter `p` (and a constant `c`), and what the
/// analysis makes of it (issue 32, item 5): the known part folded and the runtime variable
/// re-pointed at `p` (`sign` ±1), left as it is, or folded whole.
#[derive(Clone, Copy, Debug)]
enum StartKind {
    /// `p + c`, `c + p`, `p - c` or through broadcast/slice/reshape: re-pointed, sign 1.
    Plus(i64),
    /// `c - p`, `-(p - c)`: re-pointed, sign -1.
    Minus(i64),
    /// `p * 2` or `p + q`: no part known, the runtime variable stays.
    Stays,
    /// `(p + c) - p`: the constant c, folded (clamped when outside).
    Const(i64),
}

/// The instruction lines computing start `k` (named `s{k}`) from `p{k}` and `q`, and its
/// kind.
fn start_lines(rng: &mut Rng, k: usize, n: i64) -> (String, StartKind) {
    let c = rng.int(-6, n + 6);
    let cl = format!(" c{k} = s32[] constant({c})\n");
    match rng.int(0, 7) {
        0 => (format!("{cl} s{k} = s32[] add(p{k}, c{k})\n"), StartKind::Plus(c)),
        1 => (format!("{cl} s{k} = s32[] add(c{k}, p{k})\n"), StartKind::Plus(c)),
        2 => (
            format!(" c{k} = s32[] constant({})\n s{k} = s32[] subtract(p{k}, c{k})\n", -c),
            StartKind::Plus(c),
        ),
        3 => (
            format!(
                "{cl} b{k} = s32[3] broadcast(p{k}), dimensions={{}}\n l{k} = s32[1] slice(b{k}), slice={{[1:2]}}\n r{k} = s32[] reshape(l{k})\n s{k} = s32[] add(r{k}, c{k})\n"
            ),
            StartKind::Plus(c),
        ),
        4 => (format!("{cl} s{k} = s32[] subtract(c{k}, p{k})\n"), StartKind::Minus(c)),
        5 => (
            format!("{cl} m{k} = s32[] subtract(p{k}, c{k})\n s{k} = s32[] negate(m{k})\n"),
            StartKind::Minus(c),
        ),
        6 => (
            if rng.int(0, 1) == 0 {
                format!(" two{k} = s32[] constant(2)\n s{k} = s32[] multiply(p{k}, two{k})\n")
            } else {
                format!(" s{k} = s32[] add(p{k}, q)\n")
            },
            StartKind::Stays,
        ),
        _ => (
            format!("{cl} a{k} = s32[] add(p{k}, c{k})\n s{k} = s32[] subtract(a{k}, p{k})\n"),
            StartKind::Const(c),
        ),
    }
}

/// Start indices computed as sums of a known part and a parameter (issue 32, item 5):
/// dynamic-slice and dynamic-update-slice re-point the runtime variable at the parameter,
/// moving the constant (and a negation) into the map. The maps, with each runtime variable
/// set to the parameter clamped as the op's clamp of the whole start puts it, name exactly
/// what the interpreter reads, both ways; a factor of 2 or a sum of two parameters keeps
/// the runtime variable (set to the clamped start); `p + c - p` folds to `c`. The notes
/// name exactly the re-pointed and the clamped starts.
#[test]
fn runtime_variables_are_repointed_at_what_remains() {
    let (mut repointed, mut checked) = (0, 0);
    cases(0x5e9, CASES, |rng, _| {
        let ind = rng.dims_in(1..=2, 6);
        // Sizes below the extent, so no runtime variable has a single value (which the
        // simplifier would fold, renumbering the others).
        let ind: Vec<i64> = ind.iter().map(|&n| n.max(2)).collect();
        let sizes: Vec<i64> = ind.iter().map(|&n| rng.int(1, n - 1)).collect();
        let mut lines = String::new();
        let mut kinds = Vec::new();
        for (k, &n) in ind.iter().enumerate() {
            let (l, kind) = start_lines(rng, k, n);
            lines += &l;
            kinds.push(kind);
        }
        let starts: Vec<String> = (0..ind.len()).map(|k| format!("s{k}")).collect();
        let dus = rng.int(0, 1) == 1;
        let (first, body) = if dus {
            (
                2,
                format!(
                    " a = {} parameter(0)\n u = {} parameter(1)\n{}{} q = s32[] parameter({})\n{lines} ROOT r = {} dynamic-update-slice(a, u, {})",
                    shape(&ind),
                    shape(&sizes),
                    offset_params(ind.len(), 2).replace(" o", " p"),
                    "",
                    ind.len() + 2,
                    shape(&ind),
                    starts.join(", ")
                ),
            )
        } else {
            (
                1,
                format!(
                    " a = {} parameter(0)\n{} q = s32[] parameter({})\n{lines} ROOT r = {} dynamic-slice(a, {}), dynamic_slice_sizes={{{}}}",
                    shape(&ind),
                    offset_params(ind.len(), 1).replace(" o", " p"),
                    ind.len() + 1,
                    shape(&sizes),
                    starts.join(", "),
                    join(&sizes, ",")
                ),
            )
        };
        let src = format!("t {{\n{body}\n}}");
        let (ws, name) = build(&src);
        let comp = ws.module.computation(&name).expect("defined");
        let ps = params(comp, rng);
        let out = run_outputs(&ws.module, comp, &ps).expect("interpreter runs")[0].clone();
        // The runtime values: each start as the op clamps it, written in the variable the
        // map keeps (the parameter for a re-pointed start, the start itself otherwise).
        let q = ps[ind.len() + first].at(&[]).val;
        let mut rt = Vec::new();
        let mut expect_notes = 0;
        for (k, kind) in kinds.iter().enumerate() {
            let m = ind[k] - sizes[k];
            let p = ps[first + k].at(&[]).val;
            match *kind {
                StartKind::Plus(c) => rt.push((p + c).clamp(0, m) - c),
                StartKind::Minus(c) => rt.push(c - (c - p).clamp(0, m)),
                StartKind::Stays => {
                    let v = if src.contains(&format!("multiply(p{k}")) {
                        2 * p
                    } else {
                        p + q
                    };
                    rt.push(v.clamp(0, m))
                }
                StartKind::Const(c) => {
                    if !(0..=m).contains(&c) {
                        expect_notes += 1;
                    }
                }
            }
            // Re-pointed, with a note, where something moves into the map (`p + 0`
            // through a broadcast is `p` itself: the map is the same, no note).
            if matches!(kind, StartKind::Plus(c) if *c != 0) || matches!(kind, StartKind::Minus(_))
            {
                expect_notes += 1;
                repointed += 1;
            }
        }
        let notes = ops::clamp_notes(comp, comp.root);
        assert_eq!(notes.len(), expect_notes, "{src}\n{notes:?}");
        let opd = if dus { 1 } else { 0 };
        let per = ops::output_to_input(comp, comp.root);
        let m = &per[opd][0];
        assert_eq!(m.runtimes.len(), rt.len(), "{src}\n{m}");
        for (v, x) in m.runtimes.iter().zip(&rt) {
            assert!(v.bounds.contains(*x), "{x} outside {v:?}\n{src}\n{m}");
        }
        let rt_of = |ms: &[IndexingMap]| (!ms[0].runtimes.is_empty()).then_some(rt.as_slice());
        for o in all_indices(&out.dims) {
            let read = reads(&out, &o, opd);
            // dynamic-update-slice's map to the update has no in-bounds constraint (a
            // documented over-approximation): what it names inside the update is exact.
            let named: BTreeSet<Vec<i64>> = image_all(&per[opd], &o, rt_of(&per[opd]))
                .into_iter()
                .filter(|x| {
                    x.iter()
                        .zip(&ps[opd].dims)
                        .all(|(i, n)| (0..*n).contains(i))
                })
                .collect();
            assert_eq!(read, named, "output {o:?}\n{src}\nmap: {m}");
        }
        let back = ops::input_to_output(comp, comp.root, opd);
        for x in all_indices(ps[opd].dims.as_slice()) {
            let named: BTreeSet<Vec<i64>> = image_all(&back, &x, rt_of(&back));
            assert_eq!(
                readers(&out, opd, &x),
                named,
                "{x:?} → output\n{src}\nmap: {}",
                back[0]
            );
        }
        checked += 1;
    });
    assert!(repointed > 30 && checked == CASES, "{repointed} re-pointed");
}

/// A gather whose start rows are a parameter plus (or minus) an iota over the batch: the
/// runtime variable is re-pointed at the parameter's element, the iota moves into the map
/// with a constraint that keeps the start where gather's clamp puts it, and with the
/// variable set to the parameter so clamped, the map names exactly what the interpreter
/// reads for every output element.
#[test]
fn gather_starts_fold_their_known_part() {
    cases(0x6a7, CASES, |rng, _| {
        let rows = rng.int(2, 8);
        let cols = rng.int(1, 4);
        let nb = rng.int(1, 6);
        let size = rng.int(1, rows - 1);
        let c = rng.int(-3, 3);
        let minus = rng.int(0, 1) == 1;
        let op = if minus { "subtract" } else { "add" };
        // start[b] = iota(b) + c +/- q[b]; iota's part and c are known.
        let src = format!(
            "t {{\n a = f32[{rows},{cols}] parameter(0)\n q = s32[{nb},1] parameter(1)\n io = s32[{nb},1] iota(), iota_dimension=0\n k = s32[] constant({c})\n kb = s32[{nb},1] broadcast(k), dimensions={{}}\n base = s32[{nb},1] add(io, kb)\n ix = s32[{nb},1] {op}(base, q)\n ROOT g = f32[{nb},{size},{cols}] gather(a, ix), offset_dims={{1,2}}, collapsed_slice_dims={{}}, start_index_map={{0}}, index_vector_dim=1, slice_sizes={{{size},{cols}}}\n}}"
        );
        let (ws, name) = build(&src);
        let comp = ws.module.computation(&name).expect("defined");
        let ps = params(comp, rng);
        let out = run_outputs(&ws.module, comp, &ps).expect("interpreter runs")[0].clone();
        let per = ops::output_to_input(comp, comp.root);
        let m = &per[0][0];
        assert_eq!(m.runtimes.len(), 1, "{src}\n{m}");
        // Re-pointed (with a note) unless nothing moves: a known part 0 and a plus.
        let moves = nb > 1 || c != 0 || minus;
        assert_eq!(
            ops::clamp_notes(comp, comp.root).len(),
            moves as usize,
            "{src}"
        );
        let sign = if minus { -1 } else { 1 };
        for o in all_indices(&out.dims) {
            let b = o[0];
            let known = b + c;
            let qv = ps[1].at(&[b, 0]).val;
            let start = (known + sign * qv).clamp(0, rows - size);
            let r = sign * (start - known);
            assert!(m.runtimes[0].bounds.contains(r), "{r}\n{src}\n{m}");
            let named = image_all(&per[0], &o, Some(&[r]));
            assert_eq!(reads(&out, &o, 0), named, "output {o:?}\n{src}\nmap: {m}");
        }
    });
}
