//! Reshape chains (issue 12): random chains of 2–5 reshapes between random factorizations
//! of one element count, and chains that transpose whole factor groups, composed as a
//! fusion. The composed, simplified map must be
//! - for a chain of reshapes from S to T: no result ranked above the single reshape S → T's
//!   (the identity when T = S): every intermediate factorization folded away;
//! - for a transpose of whole factor groups: a permutation (every result one variable);
//! and in both cases equal, at every point, to the chain run step by step.
//!
//! Known gaps, asserted not to grow: a chain that does not fold (20 of the default 500 cases,
//! 26 before the pre-pass's digit candidate, 154 of 1000 before the congruence analysis and
//! the inner-mod rule;
//! what remains is mostly adjacent digit slices of one index, `((x fd 8) mod 2) * 2 +
//! (x fd 4) mod 2` for `(x fd 4) mod 4`), and a transpose after a detour through another
//! factorization.
//!
//! Cases: `IXMAP_CHAIN_CASES` (default 500 of each kind; set it higher for a deeper run).

use ixmap::hlo::parse::parse_hlo;
use ixmap::hlo::{fusion, Workspace};
use ixmap::map::IndexingMap;
use ixmap::simplify::cost::expr_rank;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.int(0, i as i64) as usize;
            v.swap(i, j);
        }
    }
    /// `factors` in a random order, cut into 1–4 consecutive groups: a shape.
    fn shape(&mut self, factors: &[i64]) -> Vec<i64> {
        let mut f = factors.to_vec();
        self.shuffle(&mut f);
        self.group(&f)
    }
    /// `f` in order, cut into consecutive groups (each dimension the product of one group).
    fn group(&mut self, f: &[i64]) -> Vec<i64> {
        let mut dims = vec![1i64];
        for &x in f {
            if dims.len() < 4 && self.next() % 2 == 0 && *dims.last().unwrap() > 1 {
                dims.push(x);
            } else {
                *dims.last_mut().unwrap() *= x;
            }
        }
        dims
    }
}

fn cases() -> usize {
    std::env::var("IXMAP_CHAIN_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500)
}

fn shape(d: &[i64]) -> String {
    let s: Vec<String> = d.iter().map(|x| x.to_string()).collect();
    format!("f32[{}]", s.join(", "))
}

enum Step {
    Reshape(Vec<i64>),
    Transpose(Vec<usize>, Vec<i64>),
}

fn fusion_src(input: &[i64], steps: &[Step]) -> String {
    let mut lines = vec![format!("  p0 = {} parameter(0)", shape(input))];
    for (i, s) in steps.iter().enumerate() {
        let root = if i + 1 == steps.len() { "ROOT " } else { "" };
        let prev = if i == 0 {
            "p0".to_string()
        } else {
            format!("x{}", i - 1)
        };
        lines.push(match s {
            Step::Reshape(d) => format!("  {root}x{i} = {} reshape({prev})", shape(d)),
            Step::Transpose(p, d) => {
                let p: Vec<String> = p.iter().map(|x| x.to_string()).collect();
                format!(
                    "  {root}x{i} = {} transpose({prev}), dimensions={{{}}}",
                    shape(d),
                    p.join(",")
                )
            }
        });
    }
    format!("c {{\n{}\n}}", lines.join("\n"))
}

/// The map from the fusion's output to its parameter.
fn indexing(src: &str) -> IndexingMap {
    let mut ws = Workspace::new();
    let item = parse_hlo(src, 0).unwrap_or_else(|e| panic!("{}\n{src}", e.render(src)));
    let names = ws
        .define(item)
        .unwrap_or_else(|e| panic!("{}\n{src}", e.render(src)));
    let comp = ws.module.computation(&names[0]).expect("defined");
    let fi = fusion::output_to_input(&ws.module, comp);
    assert_eq!(fi.outputs[0][0].len(), 1, "{src}");
    fi.outputs[0][0][0].clone()
}

fn linearize(ix: &[i64], dims: &[i64]) -> i64 {
    ix.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}
fn delinearize(mut l: i64, dims: &[i64]) -> Vec<i64> {
    let mut out = vec![0; dims.len()];
    for (o, &d) in out.iter_mut().zip(dims).rev() {
        *o = l % d;
        l /= d;
    }
    out
}

/// The parameter element output element `o` reads, running the chain backwards.
fn reference(input: &[i64], steps: &[Step], o: &[i64]) -> Vec<i64> {
    let mut ix = o.to_vec();
    for (i, s) in steps.iter().enumerate().rev() {
        let before: &[i64] = match i {
            0 => input,
            _ => match &steps[i - 1] {
                Step::Reshape(d) | Step::Transpose(_, d) => d,
            },
        };
        ix = match s {
            Step::Reshape(d) => delinearize(linearize(&ix, d), before),
            Step::Transpose(p, _) => {
                let mut x = vec![0; ix.len()];
                for (k, &pk) in p.iter().enumerate() {
                    x[pk] = ix[k];
                }
                x
            }
        };
    }
    ix
}

fn all_points(dims: &[i64]) -> Vec<Vec<i64>> {
    let n: i64 = dims.iter().product();
    (0..n).map(|l| delinearize(l, dims)).collect()
}

fn check_pointwise(src: &str, m: &IndexingMap, input: &[i64], steps: &[Step], out: &[i64]) {
    for o in all_points(out) {
        let got = m.eval_point(&o).expect("evaluates").expect("in the domain");
        assert_eq!(got, reference(input, steps, &o), "at {o:?}\n{src}\n{m}");
    }
}

/// Whether some result of `chain` ranks above the same result of `direct` (the cost the
/// simplifier extracts by): a nest the single reshape does not have. Forms of equal rank,
/// `(d0 floordiv 48) mod 5` and `(d0 mod 240) floordiv 48`, are equally simple, and the
/// simplifier keeps whichever it was given.
fn heavier(chain: &IndexingMap, direct: &IndexingMap) -> bool {
    chain
        .results
        .iter()
        .zip(&direct.results)
        .any(|(&c, &d)| expr_rank(c) > expr_rank(d))
}

/// Random element counts: a product of 2–5 small factors, at most 720 elements.
fn factors(rng: &mut Rng) -> Vec<i64> {
    loop {
        let n = rng.int(2, 5) as usize;
        let f: Vec<i64> = (0..n)
            .map(|_| [2, 2, 3, 4, 5, 6][rng.int(0, 5) as usize])
            .collect();
        if f.iter().product::<i64>() <= 720 {
            return f;
        }
    }
}

#[test]
fn reshape_chains_fold_to_one_reshape() {
    let mut rng = Rng(0x5eed_1234_abcd);
    let mut unfolded = Vec::new();
    for case in 0..cases() {
        let f = factors(&mut rng);
        let input = rng.shape(&f);
        let n = rng.int(2, 5) as usize;
        let mut steps: Vec<Step> = (0..n).map(|_| Step::Reshape(rng.shape(&f))).collect();
        // Now and then the chain comes back to where it started.
        if case % 3 == 0 {
            steps.push(Step::Reshape(input.clone()));
        }
        let Step::Reshape(out) = steps.last().unwrap() else {
            unreachable!()
        };
        let out = out.clone();
        let src = fusion_src(&input, &steps);
        let m = indexing(&src);
        let direct_src = fusion_src(&input, &[Step::Reshape(out.clone())]);
        let direct = indexing(&direct_src);
        if heavier(&m, &direct) {
            unfolded.push(format!(
                "case {case}:\n{src}\n  chain:  {m}\n  direct: {direct}"
            ));
        }
        if out == input && !heavier(&m, &direct) {
            assert!(
                m.results
                    .iter()
                    .enumerate()
                    .all(|(i, r)| r.as_var() == Some(i as u32)),
                "case {case}: not the identity\n{src}\n{m}"
            );
        }
        check_pointwise(&src, &m, &input, &steps, &out);
    }
    // Known gap (issue 12): 20 of the default 500 chains (26 before the digit candidate, 154 of 1000 before that) still keep a nest the single reshape
    // does not have (each brute-force equal). The bound keeps it from growing; the first
    // cases are printed to work on.
    eprintln!(
        "{} of {} chains not folded to the single reshape",
        unfolded.len(),
        cases()
    );
    let show = std::env::var("IXMAP_CHAIN_SHOW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    for u in unfolded.iter().take(show) {
        eprintln!("{u}");
    }
    assert!(
        unfolded.len() * 16 <= cases(),
        "{} of {} chains not folded; first:\n{}",
        unfolded.len(),
        cases(),
        unfolded.first().map_or("", |s| s.as_str())
    );
}

#[test]
fn transposed_factor_groups_are_a_permutation() {
    let mut rng = Rng(0xfac7_0123_9876);
    for case in 0..cases() {
        // Groups of factors; the input is the groups in order, each group split its own way.
        let ng = rng.int(2, 4) as usize;
        let groups: Vec<Vec<i64>> = (0..ng)
            .map(|_| {
                let k = rng.int(1, 2) as usize;
                (0..k).map(|_| rng.int(2, 5)).collect()
            })
            .collect();
        let sizes: Vec<i64> = groups.iter().map(|g| g.iter().product()).collect();
        let input: Vec<i64> = groups.iter().flatten().copied().collect();
        let mut perm: Vec<usize> = (0..ng).collect();
        rng.shuffle(&mut perm);
        let transposed: Vec<i64> = perm.iter().map(|&p| sizes[p]).collect();
        let mut steps = Vec::new();
        // Optionally a detour through another factorization before collapsing the groups.
        let detour = rng.next() % 2 == 0;
        if detour {
            let all: Vec<i64> = input.clone();
            steps.push(Step::Reshape(rng.shape(&all)));
        }
        steps.push(Step::Reshape(sizes.clone()));
        steps.push(Step::Transpose(perm.clone(), transposed));
        // Expand every group again, in the permuted order.
        let out: Vec<i64> = perm.iter().flat_map(|&p| groups[p].clone()).collect();
        steps.push(Step::Reshape(out.clone()));
        let src = fusion_src(&input, &steps);
        let m = indexing(&src);
        // Known gap: with a detour through another factorization first, some cases keep a
        // nest (brute-force equal below); without one, every case must be a permutation.
        if !detour {
            assert!(
                m.results.iter().all(|r| r.as_var().is_some()),
                "case {case}: not a permutation\n{src}\n{m}"
            );
        }
        check_pointwise(&src, &m, &input, &steps, &out);
    }
}

/// `simplify` of `src` (a map literal), checked equal to `src` at every point of its box.
fn simplify_checked(src: &str) -> IndexingMap {
    let lit = ixmap::syntax::parse_map_lit(src).expect("parses");
    let m = ixmap::session::build::build_map(&lit).expect("builds");
    let s = ixmap::simplify::simplify(&m, &ixmap::simplify::SimplifyLimits::default()).map;
    let bounds = ixmap::map::enumerate::narrowed_bounds(&m);
    ixmap::map::enumerate::for_each_in_box(&bounds, &mut |p| {
        let a = m.eval_point(p).expect("evaluates");
        let b = s.eval_point(p).expect("evaluates");
        assert_eq!(a, b, "{src}\n  => {s}\n  differs at {p:?}");
        Ok(true)
    })
    .expect("enumerates");
    s
}

/// Digits of one index that a transpose left apart: in the quotient basis a quotient and a
/// remainder of one division are one division (`x mod c = x - c·(x floordiv c)`), so each
/// digit boundary costs one floordiv (the form isl reaches; `fold.rs`, the digit candidate).
#[test]
fn transposed_digits_one_division_per_boundary() {
    let cases = [
        (
            "(d0, d1) -> ((d1 floordiv 64) * 512 + d0 * 64 + d1 mod 64), domain: d0 in [0, 7], d1 in [0, 127]",
            "(d0, d1) -> ((d1 floordiv 64) * 448 + d0 * 64 + d1), domain: d0 in [0, 7], d1 in [0, 127], is_simplified: true",
        ),
        (
            "(d0, d1, d2) -> ((d2 mod 2) * 6 + d0 * 2 + d2 floordiv 2, d1), domain: d0 in [0, 2], d1 in [0, 11], d2 in [0, 3]",
            "(d0, d1, d2) -> (d2 * 6 + d0 * 2 - (d2 floordiv 2) * 11, d1), domain: d0 in [0, 2], d1 in [0, 11], d2 in [0, 3], is_simplified: true",
        ),
        (
            "(d0, d1) -> (d0 * 16 + (d1 floordiv 8) * 8 + (d1 mod 2) * 4 + ((d1 floordiv 4) mod 2) * 2 + (d1 floordiv 2) mod 2), domain: d0 in [0, 1], d1 in [0, 15]",
            "(d0, d1) -> (d0 * 16 + d1 * 4 + (d1 floordiv 8) * 4 - (d1 floordiv 2) * 7), domain: d0 in [0, 1], d1 in [0, 15], is_simplified: true",
        ),
        // what the e-graph alone made of a reshape of a transposed 3 x 128 x 3 array
        // (benches/data/simplify-corpus.txt line 354): the fused index d0 * 128 + d1 cut
        // at 6 and at 12, a quotient and a remainder at 6: two divisions, not four
        (
            "(d0, d1, d2) -> (d2 * 384 + (((d0 * 128 + d1) floordiv 6) mod 2) * 192 + ((d0 * 128 + d1) floordiv 12) * 6 + (d0 * 2 + d1) mod 6), domain: d0 in [0, 2], d1 in [0, 127], d2 in [0, 2]",
            "(d0, d1, d2) -> (d0 * 4034 + d2 * 384 + ((d0 * 2 + d1) floordiv 6) * 186 + d1 - ((d0 * 128 + d1) floordiv 12) * 378), domain: d0 in [0, 2], d1 in [0, 127], d2 in [0, 2], is_simplified: true",
        ),
    ];
    for (src, want) in cases {
        let s = simplify_checked(src);
        assert_eq!(s.to_string(), want, "{src}");
        // and a fixpoint: simplifying the output prints it again
        let again = simplify_checked(&s.to_string().replace(", is_simplified: true", ""));
        assert_eq!(again.to_string(), want, "not idempotent: {src}");
    }
}
