//! Property tests: laws the map library must obey on random maps, each checked against a
//! brute-force oracle written here (independent of `map::enumerate`), and robustness of the
//! front end on arbitrary text.
//!
//! - `print_parse_round_trip`: parse(print(m)) == m;
//! - `arbitrary_text_never_panics`, `token_soup_never_panics`: any input is an answer or a
//!   diagnostic with a line and column, never a panic;
//! - `equal_agrees_with_enumeration`: `equal` says true exactly when the relations match;
//! - `compose_is_pointwise`: compose(a, b) relates x to b(a(x)) where that is defined;
//! - `inverse_undoes_the_map`: when `inverse` succeeds, it maps every image back to its
//!   point and nothing else.

use ixmap::expr::{Expr, Op};
use ixmap::interval::Interval;
use ixmap::map::{compose, equal, inverse, IndexingMap, Limits, Status, Variable};
use ixmap::session::Session;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

// ------------------------------------------------------------------ generators

/// An expression over `nv` variables, as a tree to build.
#[derive(Clone, Debug)]
enum Tree {
    Const(i64),
    Var(u32),
    Bin(Op, Box<Tree>, Box<Tree>),
}

impl Tree {
    fn build(&self) -> Expr {
        match self {
            Tree::Const(c) => Expr::constant(*c),
            Tree::Var(v) => Expr::var(*v),
            Tree::Bin(op, a, b) => Expr::bin(*op, a.build(), b.build()),
        }
    }
}

fn tree(nv: u32) -> BoxedStrategy<Tree> {
    let leaf = if nv == 0 {
        (-6i64..=6).prop_map(Tree::Const).boxed()
    } else {
        prop_oneof![3 => (0..nv).prop_map(Tree::Var), 1 => (-6i64..=6).prop_map(Tree::Const)]
            .boxed()
    };
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            3 => (inner.clone(), inner.clone()).prop_map(|(a, b)| Tree::Bin(Op::Add, Box::new(a), Box::new(b))),
            2 => (inner.clone(), -4i64..=4).prop_map(|(a, c)| Tree::Bin(Op::Mul, Box::new(a), Box::new(Tree::Const(c)))),
            1 => (inner.clone(), inner.clone()).prop_map(|(a, b)| Tree::Bin(Op::Mul, Box::new(a), Box::new(b))),
            1 => (inner.clone(), 1i64..=5).prop_map(|(a, c)| Tree::Bin(Op::FloorDiv, Box::new(a), Box::new(Tree::Const(c)))),
            1 => (inner.clone(), 1i64..=5).prop_map(|(a, c)| Tree::Bin(Op::CeilDiv, Box::new(a), Box::new(Tree::Const(c)))),
            1 => (inner, 1i64..=5).prop_map(|(a, c)| Tree::Bin(Op::Mod, Box::new(a), Box::new(Tree::Const(c)))),
        ]
    })
    .boxed()
}

fn interval() -> impl Strategy<Value = Interval> {
    (-3i64..=3, 0i64..=4).prop_map(|(lo, n)| Interval::new(lo, lo + n))
}

const DIM_NAMES: [&str; 3] = ["th_x", "bl_x", "i"];
const SYM_NAMES: [&str; 2] = ["vector_elem", "k"];

/// The shape of a map: numbers of dims, range and runtime variables, results.
#[derive(Clone, Debug)]
struct Shape {
    nd: usize,
    nr: usize,
    nt: usize,
    nres: usize,
}

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

fn map_with(shape: Shape, dim_bounds: Option<Vec<Interval>>) -> BoxedStrategy<IndexingMap> {
    let nv = (shape.nd + shape.nr + shape.nt) as u32;
    let dims = match dim_bounds {
        Some(b) => Just(b).boxed(),
        None => proptest::collection::vec(interval(), shape.nd).boxed(),
    };
    (
        dims,
        proptest::collection::vec(interval(), shape.nr),
        proptest::collection::vec(interval(), shape.nt),
        proptest::collection::vec(tree(nv), shape.nres),
        proptest::collection::vec((tree(nv), interval()), 0..=2),
        any::<bool>(),
    )
        .prop_map(move |(db, rb, tb, results, cons, named)| {
            let mut m = IndexingMap::new(
                vars("d", &DIM_NAMES, db, named),
                vars("s", &SYM_NAMES, rb, named),
                vars("r", &[], tb, false),
                results.iter().map(Tree::build).collect(),
                cons.iter().map(|(t, iv)| (t.build(), *iv)).collect(),
            );
            m.fix_names();
            m
        })
        .boxed()
}

fn shape() -> impl Strategy<Value = Shape> {
    (0usize..=3, 0usize..=2, 0usize..=1, 0usize..=3).prop_map(|(nd, nr, nt, nres)| Shape {
        nd,
        nr,
        nt,
        nres,
    })
}

fn small_map() -> impl Strategy<Value = IndexingMap> {
    shape().prop_flat_map(|s| map_with(s, None))
}

// ------------------------------------------------------------------ the oracle

type Relation = BTreeMap<Vec<i64>, BTreeSet<Vec<i64>>>;

/// Every point of the variable box, by nested loops.
fn box_points(bounds: &[Interval]) -> Vec<Vec<i64>> {
    let mut pts: Vec<Vec<i64>> = vec![vec![]];
    for b in bounds {
        let mut next = Vec::new();
        for p in &pts {
            for v in b.lo..=b.hi {
                let mut q = p.clone();
                q.push(v);
                next.push(q);
            }
        }
        pts = next;
    }
    pts
}

fn value(e: Expr, p: &[i64]) -> Option<i64> {
    ixmap::expr::eval(e, p).ok()
}

/// dim point -> set of result tuples, over the points that satisfy every constraint.
fn relation(m: &IndexingMap) -> Relation {
    let mut rel = Relation::new();
    if m.status != Status::Defined {
        return rel;
    }
    let nd = m.dims.len();
    let bounds: Vec<Interval> = m.vars().map(|v| v.bounds).collect();
    'points: for p in box_points(&bounds) {
        for &(e, iv) in &m.constraints {
            match value(e, &p) {
                Some(x) if iv.contains(x) => {}
                _ => continue 'points,
            }
        }
        let r: Option<Vec<i64>> = m.results.iter().map(|&e| value(e, &p)).collect();
        let r = r.expect("small random maps do not overflow");
        rel.entry(p[..nd].to_vec()).or_default().insert(r);
    }
    rel
}

fn parse_map(text: &str) -> IndexingMap {
    let lit = ixmap::syntax::parse_map_lit(text).unwrap_or_else(|d| panic!("{}", d.render(text)));
    ixmap::session::build::build_map(&lit).unwrap_or_else(|d| panic!("{}", d.render(text)))
}

// ------------------------------------------------------------------ properties

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn print_parse_round_trip(m in small_map()) {
        let text = m.to_string();
        let back = parse_map(&text);
        prop_assert_eq!(back.to_string(), text.clone(), "printing is stable");
        if m.status == Status::Defined {
            prop_assert_eq!(&back, &m, "{}", text);
        }
        let multi = parse_map(&m.to_multiline());
        prop_assert_eq!(multi.to_string(), text, "the multi-line form parses to the same map");
    }

    #[test]
    fn equal_agrees_with_enumeration(
        (a, b) in shape().prop_flat_map(|s| {
            proptest::collection::vec(interval(), s.nd).prop_flat_map(move |db| {
                (map_with(s.clone(), Some(db.clone())), map_with(s.clone(), Some(db)))
            })
        }),
        same in any::<bool>(),
    ) {
        // Half the time compare a map with its simplified self, which must be equal.
        let b = if same { ixmap::simplify::simplify(&a, &Default::default()).map } else { b };
        let expected = relation(&a) == relation(&b);
        let got = equal(&a, &b, &Limits::default());
        prop_assert_eq!(got, Ok(expected), "a = {}\nb = {}", a, b);
        if same {
            prop_assert!(expected, "simplify changed the map: {} vs {}", a, b);
        }
    }

    #[test]
    fn compose_is_pointwise(
        (a, b) in (shape(), shape()).prop_flat_map(|(sa, mut sb)| {
            sb.nd = sa.nres;
            (map_with(sa, None), map_with(sb, None))
        }),
    ) {
        let c = compose(&a, &b).expect("shapes match");
        let ra = relation(&a);
        let rb_full = {
            // b as a relation from its dim point to results, over its domain.
            relation(&b)
        };
        let mut expected = Relation::new();
        for (x, ys) in &ra {
            for y in ys {
                if let Some(zs) = rb_full.get(y) {
                    expected.entry(x.clone()).or_default().extend(zs.iter().cloned());
                }
            }
        }
        prop_assert_eq!(relation(&c), expected, "a = {}\nb = {}\ncompose = {}", a, b, c);
    }

    #[test]
    fn inverse_undoes_the_map(m in (1usize..=3, 1usize..=3).prop_flat_map(|(nd, nres)| {
        map_with(Shape { nd, nr: 0, nt: 0, nres }, None)
    })) {
        let Ok(inv) = inverse(&m, &Limits::default()) else { return Ok(()) };
        let rm = relation(&m);
        let ri = relation(&inv);
        // Every image y of x maps back to exactly x...
        for (x, ys) in &rm {
            for y in ys {
                let back = ri.get(y);
                prop_assert_eq!(back, Some(&BTreeSet::from([x.clone()])), "m = {}\ninverse = {}\nat {:?}", m, inv, x);
            }
        }
        // ...and the inverse is defined on the images only.
        let images: usize = rm.values().map(|ys| ys.len()).sum();
        prop_assert_eq!(ri.len(), images, "m = {}\ninverse = {}", m, inv);
    }
}

/// Maps that often are bijections: the identity on a box of dims, changed by a few
/// elementary steps (shear, negate, shift, swap), and sometimes a delinearization of the
/// last dim or a linearization of the last two.
fn near_bijection() -> impl Strategy<Value = IndexingMap> {
    (
        proptest::collection::vec((0i64..=2, 1i64..=4), 1..=3),
        proptest::collection::vec((0usize..4, 0usize..3, 0usize..3, -2i64..=2), 0..4),
        0usize..3,
    )
        .prop_map(|(dims, steps, reshape)| {
            let nd = dims.len();
            let dvars: Vec<Variable> = dims
                .iter()
                .enumerate()
                .map(|(i, &(lo, n))| Variable::new(format!("d{i}"), lo, lo + n))
                .collect();
            let mut r: Vec<Expr> = (0..nd as u32).map(Expr::var).collect();
            for (kind, i, j, k) in steps {
                let (i, j) = (i % nd, j % nd);
                match kind {
                    0 if i != j => r[i] = r[i].add(r[j].mul(Expr::constant(k))),
                    1 => r[i] = r[i].mul(Expr::constant(-1)),
                    2 => r[i] = r[i].add(Expr::constant(k)),
                    _ => r.swap(i, j),
                }
            }
            let last = Expr::var(nd as u32 - 1);
            let extent = dims[nd - 1].1 + 1;
            match reshape {
                1 if extent % 2 == 0 && dims[nd - 1].0 == 0 => {
                    // d_last -> (d_last floordiv 2, d_last mod 2)
                    r.pop();
                    r.push(last.floordiv(Expr::constant(2)));
                    r.push(last.modulo(Expr::constant(2)));
                }
                2 if nd >= 2 && dims[nd - 1].0 == 0 => {
                    // (.., d_a, d_last) -> (.., d_a * extent + d_last)
                    let a = Expr::var(nd as u32 - 2);
                    r.truncate(nd - 2);
                    r.push(a.mul(Expr::constant(extent)).add(last));
                }
                _ => {}
            }
            IndexingMap::new(dvars, vec![], vec![], r, vec![])
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn inverse_of_near_bijections_is_exact(m in near_bijection()) {
        let rm = relation(&m);
        let injective = {
            let mut seen = BTreeSet::new();
            rm.values().flatten().all(|y| seen.insert(y.clone()))
        };
        match inverse(&m, &Limits::default()) {
            Ok(inv) => {
                prop_assert!(injective, "inverted a map that is not injective: {}", m);
                let ri = relation(&inv);
                for (x, ys) in &rm {
                    for y in ys {
                        prop_assert_eq!(ri.get(y), Some(&BTreeSet::from([x.clone()])), "m = {}\ninverse = {}", m, inv);
                    }
                }
                prop_assert_eq!(ri.len(), rm.len(), "m = {}\ninverse = {}", m, inv);
            }
            Err(e) => {
                // Refusing an injective map is a missed inverse. The forms ixmap promises
                // to invert: square affine maps, and affine maps where every dimension
                // appears in one result only (permutations, shears of equal rank, and
                // mixed-radix linearizations). A shear followed by a linearization, such as
                // (d0 + d1, d1 * 2 + d2), is a known gap.
                let affine = m.results.iter().all(|r| !r.has_div());
                let square = m.results.len() == m.dims.len();
                let disjoint = {
                    let mut seen = vec![0; m.dims.len()];
                    for r in &m.results {
                        r.visit_vars(&mut |v| seen[v as usize] += 1);
                    }
                    seen.iter().all(|&n| n <= 1)
                };
                prop_assert!(!(injective && affine && (square || disjoint)), "refused an affine bijection {}: {}", m, e);
            }
        }
    }
}

// ------------------------------------------------------------------ robustness

const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "<",
    ">",
    "->",
    ",",
    ":",
    ";",
    "=",
    "\n",
    "#",
    "//",
    "\"",
    "domain",
    "in",
    "d0",
    "d1",
    "s0",
    "r0",
    "th_x",
    "m",
    "floordiv",
    "ceildiv",
    "mod",
    "floorDiv",
    "*",
    "+",
    "-",
    "0",
    "1",
    "7",
    "-3",
    "4000000",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "KNOWN",
    "EMPTY",
    "UNDEFINED",
    "affine_map",
    "is_simplified",
    "true",
    "false",
    "compose",
    "inverse",
    "equal",
    "eval",
    "at",
    "show",
    "as",
    "mlir",
    "xla",
    "is_permutation",
    "is_bijection",
    "is_empty",
    "unused",
    "simplify",
    "explain",
    "raw",
    "help",
    "   ...>",
    "ixmap>",
    "é",
    "\t",
];

/// Runs `src` in a fresh session: every outcome is a value or a diagnostic that renders
/// with a position inside the source.
fn survives(src: &str) -> Result<(), TestCaseError> {
    let mut s = Session::new();
    for o in s.execute(src) {
        if let Err(d) = &o.result {
            let text = d.render(src);
            prop_assert!(text.starts_with("error: "), "{}", text);
            if let Some(span) = d.span {
                prop_assert!(
                    span.start <= src.len() && span.end <= src.len(),
                    "span {:?} outside {:?}",
                    span,
                    src
                );
            }
        }
    }
    let _ = ixmap::syntax::is_complete(src);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn arbitrary_text_never_panics(src in "\\PC{0,80}") {
        survives(&src)?;
    }

    #[test]
    fn token_soup_never_panics(toks in proptest::collection::vec(proptest::sample::select(TOKENS), 0..40)) {
        survives(&toks.join(" "))?;
        survives(&toks.concat())?;
    }

    #[test]
    fn mangled_maps_never_panic(m in small_map(), cut in 0usize..200, insert in proptest::sample::select(TOKENS)) {
        // Real maps with one token dropped in somewhere or cut short: the errors users make.
        let text = format!("x = {}", m.to_multiline());
        let at = (0..=cut.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        survives(&format!("{}{}{}", &text[..at], insert, &text[at..]))?;
        survives(&text[..at])?;
        survives(&format!("inverse {}\nequal x, x\ncompose x, x", &text[..at]))?;
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for src in [
        format!("(d0) -> ({}d0{})", "(".repeat(100_000), ")".repeat(100_000)),
        format!("(d0) -> ({})", vec!["d0"; 50_000].join(" + ")),
        "(".repeat(1_000_000),
        format!("(d0) -> ({}d0)", "-".repeat(100_000)),
    ] {
        let mut s = Session::new();
        let out = s.execute(&src);
        assert!(
            out.iter().all(|o| o.result.is_err()),
            "deep input is refused"
        );
    }
}
