//! Printing never changes meaning: for random maps with negative constants, negative
//! divisors, nested unary minus and min/max, every way ixmap prints a map (plain, the
//! multi-line XLA form, `show as mlir`, and the output of `simplify`) reads back as the
//! same relation, checked by enumerating the domain with an evaluator written here.
//!
//! Cases per run: `IXMAP_ROUNDTRIP_CASES` (default 20,000; the domains are tiny, so this
//! takes seconds). A second test feeds bad input and wants a positioned error, never a
//! panic.

use ixmap::expr::{Expr, ExprKind, Op};
use ixmap::interval::Interval;
use ixmap::map::{mlir::to_mlir, IndexingMap, Status, Variable};
use ixmap::session::Session;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

fn cases() -> u32 {
    std::env::var("IXMAP_ROUNDTRIP_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000)
}

// ------------------------------------------------------------------ generators

#[derive(Clone, Debug)]
enum Tree {
    Const(i64),
    Var(u32),
    Neg(Box<Tree>),
    Bin(Op, Box<Tree>, Box<Tree>),
}

impl Tree {
    /// Built exactly (no folding), so the printer sees every shape.
    fn build(&self) -> Expr {
        match self {
            Tree::Const(c) => Expr::constant(*c),
            Tree::Var(v) => Expr::var(*v),
            Tree::Neg(a) => Expr::bin(Op::Mul, a.build(), Expr::constant(-1)),
            Tree::Bin(op, a, b) => Expr::bin(*op, a.build(), b.build()),
        }
    }
}

fn nonzero_divisor() -> impl Strategy<Value = i64> {
    prop_oneof![1i64..=5, -5i64..=-1]
}

fn tree(nv: u32) -> BoxedStrategy<Tree> {
    let leaf = if nv == 0 {
        (-9i64..=9).prop_map(Tree::Const).boxed()
    } else {
        prop_oneof![3 => (0..nv).prop_map(Tree::Var), 2 => (-9i64..=9).prop_map(Tree::Const)]
            .boxed()
    };
    let b = |op: Op, a: Tree, c: Tree| Tree::Bin(op, Box::new(a), Box::new(c));
    leaf.prop_recursive(4, 16, 2, move |inner| {
        prop_oneof![
            3 => (inner.clone(), inner.clone()).prop_map(move |(x, y)| b(Op::Add, x, y)),
            2 => (inner.clone(), -4i64..=4).prop_map(move |(x, c)| b(Op::Mul, x, Tree::Const(c))),
            1 => (-4i64..=4, inner.clone()).prop_map(move |(c, x)| b(Op::Mul, Tree::Const(c), x)),
            2 => inner.clone().prop_map(|x| Tree::Neg(Box::new(x))),
            2 => (inner.clone(), nonzero_divisor()).prop_map(move |(x, c)| b(Op::FloorDiv, x, Tree::Const(c))),
            1 => (inner.clone(), nonzero_divisor()).prop_map(move |(x, c)| b(Op::CeilDiv, x, Tree::Const(c))),
            2 => (inner.clone(), nonzero_divisor()).prop_map(move |(x, c)| b(Op::Mod, x, Tree::Const(c))),
            // A negative constant as the dividend: `-7 floordiv s0` must not read back
            // as `-(7 floordiv s0)`.
            1 => (-9i64..=-1, inner.clone(), nonzero_divisor()).prop_map(move |(k, x, c)| {
                b(Op::FloorDiv, b(Op::Add, Tree::Const(k), x), Tree::Const(c))
            }),
            1 => (inner.clone(), inner.clone()).prop_map(move |(x, y)| b(Op::Min, x, y)),
            1 => (inner.clone(), inner.clone()).prop_map(move |(x, y)| b(Op::Max, x, y)),
            1 => (inner.clone(), inner).prop_map(move |(x, y)| b(Op::Mul, x, y)),
        ]
    })
    .boxed()
}

fn interval() -> impl Strategy<Value = Interval> {
    (-4i64..=4, 0i64..=3).prop_map(|(lo, n)| Interval::new(lo, lo + n))
}

/// Names as XLA and users write them, including ones that look like functions.
const DIM_NAMES: [&str; 3] = ["th_x", "max", "d_2"];
const SYM_NAMES: [&str; 2] = ["min", "k"];

fn vars(prefix: &str, custom: &[&str], bounds: Vec<Interval>, named: bool) -> Vec<Variable> {
    bounds
        .into_iter()
        .enumerate()
        .map(|(i, b)| Variable {
            name: if named && i < custom.len() {
                custom[i].to_string()
            } else {
                format!("{prefix}{i}")
            },
            bounds: b,
        })
        .collect()
}

fn map() -> BoxedStrategy<IndexingMap> {
    (0usize..=2, 0usize..=2, 0usize..=1, 1usize..=3)
        .prop_flat_map(|(nd, nr, nt, nres)| {
            let nv = (nd + nr + nt) as u32;
            (
                proptest::collection::vec(interval(), nd),
                proptest::collection::vec(interval(), nr),
                proptest::collection::vec(interval(), nt),
                proptest::collection::vec(tree(nv), nres),
                proptest::collection::vec((tree(nv), -6i64..=6, 0i64..=6), 0..=2),
                any::<bool>(),
            )
        })
        .prop_map(|(db, rb, tb, results, cons, named)| {
            let mut m = IndexingMap::new(
                vars("d", &DIM_NAMES, db, named),
                vars("s", &SYM_NAMES, rb, named),
                vars("r", &[], tb, false),
                results.iter().map(Tree::build).collect(),
                cons.iter()
                    .map(|(t, lo, n)| (t.build(), Interval::new(*lo, lo + n)))
                    .collect(),
            );
            m.fix_names();
            m
        })
        .boxed()
}

// ------------------------------------------------------------------ the oracle

/// `a op b` by the definitions (floor division; `mod` by `a = b·(a floordiv b) + a mod b`;
/// ceiling division), in i128 so nothing here can overflow.
fn apply(op: Op, a: i128, b: i128) -> i128 {
    let floor = |a: i128, b: i128| {
        let q = a / b;
        if a % b != 0 && ((a < 0) != (b < 0)) {
            q - 1
        } else {
            q
        }
    };
    match op {
        Op::Add => a + b,
        Op::Mul => a * b,
        Op::FloorDiv => floor(a, b),
        Op::CeilDiv => -floor(-a, b),
        Op::Mod => a - b * floor(a, b),
        Op::Min => a.min(b),
        Op::Max => a.max(b),
    }
}

fn value(e: Expr, p: &[i64]) -> i128 {
    match e.kind() {
        ExprKind::Const(c) => c as i128,
        ExprKind::Var(v) => p[v as usize] as i128,
        ExprKind::Bin(op, a, b) => apply(op, value(a, p), value(b, p)),
    }
}

type Relation = BTreeMap<Vec<i64>, BTreeSet<Vec<i128>>>;

/// dim point -> the result tuples over every point of the domain with those dims.
fn relation(m: &IndexingMap) -> Relation {
    let mut rel = Relation::new();
    if m.status != Status::Defined {
        return rel;
    }
    let bounds: Vec<Interval> = m.vars().map(|v| v.bounds).collect();
    let mut pts: Vec<Vec<i64>> = vec![vec![]];
    for b in &bounds {
        assert!(b.size().is_some_and(|n| n <= 64), "small domains only: {m}");
        pts = pts
            .iter()
            .flat_map(|p| {
                (b.lo..=b.hi).map(move |v| {
                    let mut q = p.clone();
                    q.push(v);
                    q
                })
            })
            .collect();
    }
    let nd = m.dims.len();
    for p in pts {
        let inside = m.constraints.iter().all(|&(e, iv)| {
            let x = value(e, &p);
            iv.lo as i128 <= x && x <= iv.hi as i128
        });
        if inside {
            let r = m.results.iter().map(|&e| value(e, &p)).collect();
            rel.entry(p[..nd].to_vec()).or_default().insert(r);
        }
    }
    rel
}

fn parse(text: &str) -> Result<IndexingMap, String> {
    let lit = ixmap::syntax::parse_map_lit(text).map_err(|d| d.render(text))?;
    ixmap::session::build::build_map(&lit).map_err(|d| d.render(text))
}

// ------------------------------------------------------------------ properties

/// Run by hand rather than through `proptest!`, so `PROPTEST_CASES` (1000 in
/// `scripts/test-all`, for the other property tests) does not lower this test's count.
#[test]
fn every_printed_form_reads_back_as_the_same_relation() {
    let config = ProptestConfig {
        cases: cases(),
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let result = runner.run(&map(), |m| {
        let want = relation(&m);
        let simplified = ixmap::simplify::simplify(&m, &Default::default()).map;
        let forms = [
            ("plain", m.to_string()),
            ("show as xla", m.to_multiline()),
            ("show as mlir", to_mlir(&m)),
            ("simplify", simplified.to_string()),
            ("simplify, show as mlir", to_mlir(&simplified)),
        ];
        for (how, text) in forms {
            let back = parse(&text);
            prop_assert!(
                back.is_ok(),
                "{how}: printed text does not read back\nmap: {m}\ntext: {text}\n{}",
                back.unwrap_err()
            );
            let back = back.unwrap();
            let got = relation(&back);
            prop_assert!(
                got == want,
                "{how}: printed text means another map\nmap: {m}\ntext: {text}\nread back: {back}"
            );
            // Printing what was read back prints the same text (canonical printing).
            if how == "plain" && m.status == Status::Defined {
                prop_assert_eq!(back.to_string(), text.clone(), "printing is stable");
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A map whose constraints cannot hold, found empty only after the e-graph ran under them:
/// there every equation holds, and the e-graph once merged `2` with `0` and printed
/// `s0 floordiv 0` beside `KNOWN EMPTY` (found by the property above in a CI run). The
/// simplified map is KNOWN EMPTY and its MLIR form reads back as the same (empty) relation.
#[test]
fn maps_found_empty_print_their_input_results() {
    let text = "()[s0] -> (s0, s0, s0 floordiv 2), domain: s0 in [-1, 0], \
                (s0 * -2 - (s0 mod 2) * 2) mod 4 in [1, 2]";
    let m = parse(text).unwrap();
    let s = ixmap::simplify::simplify(&m, &Default::default()).map;
    assert_eq!(s.status, Status::KnownEmpty);
    let mlir = to_mlir(&s);
    assert_eq!(
        mlir,
        "affine_map<()[s0] -> (s0, s0, s0 floordiv 2)>, domain: KNOWN EMPTY"
    );
    let back = parse(&mlir).unwrap();
    assert_eq!(relation(&back), relation(&m));
}

/// Bad input: each is an error that names a line and column and points at the text with a
/// caret, never a panic and never a value.
#[test]
fn bad_input_gets_a_positioned_error() {
    let bad = [
        "(d0) -> (d0 floordiv 0), domain: d0 in [0, 3]",
        "(d0) -> (d0 mod (3 - 3)), domain: d0 in [0, 3]",
        "(d0) -> (min(d0)), domain: d0 in [0, 3]",
        "(d0) -> (max(d0, ), domain: d0 in [0, 3]",
        "(d0) -> (min(d0, 1, 2)), domain: d0 in [0, 3]",
        "(d0) -> (- ), domain: d0 in [0, 3]",
        "(d0) -> (d0 - - ), domain: d0 in [0, 3]",
        "(d0) -> (9223372036854775808)",
        "(d0) -> (d0), domain: d0 in [-9223372036854775809, 0]",
        "(d0) -> (d0), domain: d1 in [0, 3]",
        "(d0) -> (d0 floordiv -), domain: d0 in [0, 3]",
        "(d0)\n-> (d0 +), domain: d0 in [0, 3]",
        "(d0) -> (d0), domain: d0 in [0, 3], d0 in [0]",
    ];
    for src in bad {
        let mut s = Session::new();
        let out = s.execute(src);
        assert!(!out.is_empty(), "{src:?}: no outcome");
        for o in out {
            let d = o.result.expect_err(src);
            let text = d.render(src);
            assert!(text.starts_with("error: "), "{src:?}:\n{text}");
            assert!(
                text.contains(" --> ") && text.contains('^'),
                "{src:?}: the error names no position:\n{text}"
            );
        }
    }
    // Invalid UTF-8 names its line, column and byte.
    let e = ixmap::syntax::decode_utf8(b"a = (d0) -> (d0)\nb = (\xff)".to_vec()).unwrap_err();
    assert_eq!(e, "invalid UTF-8 at 2:6 (byte 0xff)");
}

/// Printing at the extremes of 64 bits reads back as the very same map (structurally, not
/// only as the same relation): every combination of full-range, one-sided and single-point
/// bounds at -2^63 and 2^63 - 1 for a dimension, a range and a runtime variable, with and
/// without a constraint and `is_simplified`, in the plain and the multi-line form. A
/// variable over all of i64 vanished from a printed domain (`(d0) -> (d0), domain:
/// is_simplified: true`), which XLA's parser rejects.
#[test]
fn printing_at_the_extremes_reads_back_as_the_same_map() {
    let (min, max) = (i64::MIN, i64::MAX);
    let bounds = [
        Interval::FULL,
        Interval::new(min, min),
        Interval::new(max, max),
        Interval::new(min, 0),
        Interval::new(0, max),
        Interval::new(0, 3),
    ];
    let (d0, s0, r0) = (Expr::var(0), Expr::var(1), Expr::var(2));
    let mut checked = 0;
    for &bd in &bounds {
        for &bs in &bounds {
            for &br in &bounds {
                for constraint in [None, Some(Interval::FULL), Some(Interval::new(min, 0))] {
                    for simplified in [false, true] {
                        let mut m = IndexingMap::new(
                            vec![Variable::new("d0", bd.lo, bd.hi)],
                            vec![Variable::new("s0", bs.lo, bs.hi)],
                            vec![Variable::new("r0", br.lo, br.hi)],
                            vec![d0, s0.add(r0)],
                            constraint.map(|iv| (d0.add(s0), iv)).into_iter().collect(),
                        );
                        m.is_simplified = simplified;
                        for text in [m.to_string(), m.to_multiline()] {
                            let back = parse(&text)
                                .unwrap_or_else(|e| panic!("{text}\ndoes not read back:\n{e}"));
                            assert_eq!(back, m, "{text}\nreads back as\n{back}");
                            // every variable is in a printed domain, as XLA's parser needs
                            if text.contains("domain:") {
                                for v in ["d0 in [", "s0 in [", "r0 in ["] {
                                    assert!(text.contains(v), "{v} missing from\n{text}");
                                }
                            }
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 6 * 6 * 6 * 3 * 2);
}
