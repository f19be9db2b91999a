//! Property tests for symbolic tiles: on small shapes, whenever `tile::derive` returns a tile,
//! the elements its formula names are exactly the elements the map names, for every tile
//! index (enumerated by `tile::check_exact`). Maps come from the op families of seed 000
//! (output-to-input and input-to-output), alone and composed two at a time.

use ixmap::map::{compose, IndexingMap, Limits};
use ixmap::session::build::build_map;
use ixmap::syntax::parse_map_lit;
use ixmap::tile::{self, check::Verdict};
use proptest::prelude::*;

fn map(text: &str) -> IndexingMap {
    build_map(&parse_map_lit(text).unwrap_or_else(|d| panic!("{text}: {}", d.message)))
        .unwrap_or_else(|d| panic!("{text}: {}", d.message))
}

/// One op's map, with small random extents: (map text, description).
fn op_map(kind: u8, a: i64, b: i64, c: i64) -> String {
    let (a1, b1, c1) = (a - 1, b - 1, c - 1);
    match kind % 16 {
        // transpose
        0 => format!("(d0, d1) -> (d1, d0), domain: d0 in [0, {a1}], d1 in [0, {b1}]"),
        // collapse [a, b] -> [a*b]
        1 => format!("(d0) -> (d0 floordiv {b}, d0 mod {b}), domain: d0 in [0, {}]", a * b - 1),
        // expand [a*b] -> [a, b]
        2 => format!("(d0, d1) -> (d0 * {b} + d1), domain: d0 in [0, {a1}], d1 in [0, {b1}]"),
        // generic reshape [a, b*c] -> [a*b, c]
        3 => format!(
            "(d0, d1) -> (d0 floordiv {b}, (d0 mod {b}) * {c} + d1), domain: d0 in [0, {}], d1 in [0, {c1}]",
            a * b - 1
        ),
        // strided slice
        4 => format!("(d0, d1) -> (d0 * {c} + {a1}, d1 + 1), domain: d0 in [0, {a1}], d1 in [0, {b1}]"),
        // pad with low padding a and interior padding c - 1
        5 => format!(
            "(d0) -> ((d0 - {a}) floordiv {c}), domain: d0 in [{a}, {}], (d0 - {a}) mod {c} in [0, 0]",
            a + (b - 1) * c
        ),
        // concat: the second operand
        6 => format!("(d0, d1) -> (d0, d1 - {a}), domain: d0 in [0, {c1}], d1 in [{a}, {}]", a + b - 1),
        // broadcast
        7 => format!("(d0, d1, d2) -> (d1), domain: d0 in [0, {a1}], d1 in [0, {b1}], d2 in [0, {c1}]"),
        // reduce
        8 => format!("(d0)[s0] -> (s0, d0), domain: d0 in [0, {a1}], s0 in [0, {b1}]"),
        // reverse
        9 => format!("(d0, d1) -> (-d0 + {a1}, d1), domain: d0 in [0, {a1}], d1 in [0, {b1}]"),
        // reduce-window with stride c
        10 => format!("(d0)[s0] -> (d0 * {c} + s0), domain: d0 in [0, {a1}], s0 in [0, {b1}]"),
        // broadcast, input to output
        11 => format!("(d0)[s0, s1] -> (s0, d0, s1), domain: d0 in [0, {b1}], s0 in [0, {a1}], s1 in [0, {c1}]"),
        // slice, input to output
        12 => format!(
            "(d0) -> ((d0 - 1) floordiv {c}), domain: d0 in [1, {}], (d0 - 1) mod {c} in [0, 0]",
            1 + (a - 1) * c
        ),
        // dot, lhs
        13 => format!("(d0, d1)[s0] -> (d0, s0), domain: d0 in [0, {a1}], d1 in [0, {b1}], s0 in [0, {c1}]"),
        // dynamic slice
        14 => format!("(d0){{r0}} -> (d0 + r0), domain: d0 in [0, {a1}], r0 in [0, {b1}]"),
        // collapse of three dims [a, b, c] -> [a*b*c]
        _ => format!(
            "(d0) -> (d0 floordiv {}, (d0 floordiv {c}) mod {b}, d0 mod {c}), domain: d0 in [0, {}]",
            b * c,
            a * b * c - 1
        ),
    }
}

struct Tally {
    tiles: u64,
    refused: u64,
}

/// Derives and checks; panics with the case on a mismatch.
fn check(m: &IndexingMap, sizes: &[i64], tally: &mut Tally) {
    match tile::derive(m, sizes) {
        Ok(t) => {
            let v = tile::check_exact(
                m,
                sizes,
                &t,
                &Limits {
                    max_points: 1 << 22,
                },
            )
            .expect("small case enumerates");
            match v {
                Verdict::Exact { .. } => tally.tiles += 1,
                Verdict::Differs {
                    tile,
                    element,
                    only_in_map,
                } => panic!(
                    "map {m}\nsizes {sizes:?}\ntile {}\nat tile {tile:?}: element {element:?} {}",
                    t.map,
                    if only_in_map {
                        "read but not in the tile"
                    } else {
                        "in the tile but not read"
                    }
                ),
            }
        }
        Err(_) => tally.refused += 1,
    }
}

fn sizes_for(m: &IndexingMap, seed: &[i64]) -> Vec<i64> {
    m.dims
        .iter()
        .zip(seed.iter().cycle())
        .map(|(d, &s)| {
            let ext = d.bounds.hi + 1;
            1 + s.rem_euclid(ext + 1)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn one_op_tiles_are_exact(kind in 0u8..16, a in 1i64..7, b in 1i64..7, c in 1i64..5,
                              seed in proptest::collection::vec(0i64..64, 3)) {
        let m = map(&op_map(kind, a, b, c));
        let mut tally = Tally { tiles: 0, refused: 0 };
        check(&m, &sizes_for(&m, &seed), &mut tally);
    }

    #[test]
    fn composed_tiles_are_exact(k1 in 0u8..16, k2 in 0u8..16, a in 1i64..6, b in 1i64..6, c in 1i64..4,
                                seed in proptest::collection::vec(0i64..64, 3)) {
        let m1 = map(&op_map(k1, a, b, c));
        // The second op reads what the first produces: pick extents that match when we can.
        let m2 = map(&op_map(k2, b, a, c));
        if let Ok(m) = compose(&m1, &m2) {
            if !m.is_known_empty() {
                let mut tally = Tally { tiles: 0, refused: 0 };
                check(&m, &sizes_for(&m, &seed), &mut tally);
            }
        }
    }
}

/// Not vacuous: a fixed sweep over every op family and every size finds many tiles, and
/// refuses only some.
#[test]
fn sweep_finds_tiles_for_every_family() {
    for kind in 0..16u8 {
        let mut tally = Tally {
            tiles: 0,
            refused: 0,
        };
        for (a, b, c) in [(4, 8, 2), (3, 4, 3), (6, 2, 2)] {
            let m = map(&op_map(kind, a, b, c));
            let exts: Vec<i64> = m.dims.iter().map(|d| d.bounds.hi + 1).collect();
            // every size vector with sizes in 1..=ext, up to a few hundred
            let mut sizes = vec![1i64; exts.len()];
            'all: for _ in 0..400 {
                check(&m, &sizes, &mut tally);
                let mut i = 0;
                loop {
                    if i == sizes.len() {
                        break 'all;
                    }
                    if sizes[i] < exts[i] {
                        sizes[i] += 1;
                        break;
                    }
                    sizes[i] = 1;
                    i += 1;
                }
            }
        }
        assert!(
            tally.tiles > 0,
            "family {kind}: no size gave a tile ({} refused)",
            tally.refused
        );
    }
}

/// The cases the seeds name, exactly.
#[test]
fn seed_reshape_tiles() {
    let m = map("(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]");
    let t = tile::derive(&m, &[16]).expect("whole rows");
    assert_eq!(
        t.map.to_string(),
        "(t0)[k0, k1] -> (t0 * 2 + k0, k1), domain: t0 in [0, 1], k0 in [0, 1], k1 in [0, 7]"
    );
    let t = tile::derive(&m, &[4]).expect("half rows");
    assert_eq!(
        t.offsets.to_string(),
        "(t0) -> (t0 floordiv 2, (t0 mod 2) * 4), domain: t0 in [0, 7]"
    );
    let e = tile::derive(&m, &[12]).expect_err("12 elements straddle rows of 8");
    assert!(
        e.reason.contains("neither a multiple nor a divisor of 8"),
        "{}",
        e.reason
    );
}

#[test]
fn pad_interior_keeps_every_other_element() {
    let m = map("(d0, d1) -> ((d0 - 1) floordiv 2, d1 - 4), domain: d0 in [1, 7], d1 in [4, 7], (d0 - 1) mod 2 in [0, 0]");
    let t = tile::derive(&m, &[4, 8]).expect("even tiles");
    assert_eq!(t.sizes, vec![2, 4]);
    assert_eq!(t.strides, vec![1, 1]);
    let e = tile::derive(&m, &[3, 8]).expect_err("odd tiles alternate");
    assert!(
        e.reason
            .contains("3 is neither a multiple nor a divisor of 2"),
        "{}",
        e.reason
    );
}

#[test]
fn utilization_symbolic_agrees_with_counting() {
    let cases = [
        ("(d0, d1, d2) -> (d1), domain: d0 in [0, 9], d1 in [0, 19], d2 in [0, 29]", vec![20], 20, 300),
        ("(d0, d1, d2) -> (d0 + 5, d1 * 7 + 3, d2 * 2), domain: d0 in [0, 4], d1 in [0, 2], d2 in [0, 24]", vec![10, 20, 50], 375, 1),
        ("(d0)[s0] -> (s0, d0), domain: d0 in [0, 9], s0 in [0, 255]", vec![256, 10], 2560, 1),
        ("(d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 5]", vec![6, 4], 24, 1),
    ];
    for (text, shape, read, per) in cases {
        let m = map(text);
        let u =
            tile::utilization(std::slice::from_ref(&m), &shape, &Limits::default()).expect("fits");
        assert_eq!(u.method, "symbolic", "{text}");
        assert_eq!(
            (u.read, u.max_reads, u.min_reads),
            (read, per, per),
            "{text}"
        );
        // The same map with a constraint that always holds forces counting.
        let mut counted = m.clone();
        counted.constraints.push((
            counted.results[0],
            ixmap::interval::Interval::new(-1000, 1000),
        ));
        let c = tile::utilization(&[counted], &shape, &Limits::default()).expect("fits");
        assert_eq!(c.method, "counted");
        assert_eq!(
            (c.read, c.reads, c.max_reads, c.min_reads),
            (u.read, u.reads, u.max_reads, u.min_reads),
            "{text}"
        );
    }
}

/// Symbolic sizes: each dimension's size is a symbol (or, by `fixed`, a number); every case
/// derived is checked by `verify` at every choice of sizes (these domains are small), which
/// enumerates both sides tile by tile. `None`: no symbolic tile (a refusal, not an error).
fn check_symbolic(m: &IndexingMap, fixed: &[Option<i64>]) -> Option<usize> {
    use ixmap::tile::symbolic::{derive_symbolic, verify, Size};
    let exts: Vec<i64> = m.dims.iter().map(|d| d.bounds.hi + 1).collect();
    let sizes: Vec<Size> = (0..exts.len())
        .map(|i| match fixed.get(i).copied().flatten() {
            Some(v) => Size::Fixed(1 + (v - 1).rem_euclid(exts[i])),
            None => Size::Symbol(format!("ts{i}")),
        })
        .collect();
    let t = derive_symbolic(m, &exts, &sizes).ok()?;
    let k = verify(
        m,
        &exts,
        &sizes,
        &t,
        &Limits {
            max_points: 1 << 20,
        },
    )
    .unwrap_or_else(|e| panic!("map {m}\nsizes {sizes:?}\ncases {:#?}\n{e}", t.cases));
    Some(k.covered)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn symbolic_tiles_are_exact(kind in 0u8..16, a in 1i64..7, b in 1i64..7, c in 1i64..5,
                                fixed in proptest::collection::vec(proptest::option::of(1i64..9), 3)) {
        let m = map(&op_map(kind, a, b, c));
        check_symbolic(&m, &fixed);
    }

    #[test]
    fn composed_symbolic_tiles_are_exact(k1 in 0u8..16, k2 in 0u8..16, a in 1i64..6, b in 1i64..6, c in 1i64..4,
                                         fixed in proptest::collection::vec(proptest::option::of(1i64..9), 3)) {
        let m1 = map(&op_map(k1, a, b, c));
        let m2 = map(&op_map(k2, b, a, c));
        if let Ok(m) = compose(&m1, &m2) {
            if !m.is_known_empty() {
                check_symbolic(&m, &fixed);
            }
        }
    }
}

/// Not vacuous: every op family but the strided-subset ones (interior padding, a slice read
/// input to output) has a symbolic tile that applies to some sizes.
#[test]
fn symbolic_tiles_exist_for_the_families() {
    for kind in 0..16u8 {
        let m = map(&op_map(kind, 4, 8, 2));
        let covered = check_symbolic(&m, &[]);
        if kind == 5 || kind == 12 {
            assert_eq!(covered, None, "family {kind} is refused with a reason");
        } else {
            assert!(
                covered.is_some_and(|c| c > 0),
                "family {kind}: {m} has no symbolic tile"
            );
        }
    }
}

/// The seed's reshape, symbolically: whole rows when the size is a multiple of the row, a
/// part of a row when it divides it.
#[test]
fn seed_reshape_symbolic_cases() {
    use ixmap::tile::symbolic::{derive_symbolic, Size};
    let m = map("(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]");
    let t = derive_symbolic(&m, &[32], &[Size::Symbol("ts".into())]).expect("cases");
    let names = vec!["ts".to_string()];
    let shown: Vec<(String, String)> = t
        .cases
        .iter()
        .map(|c| {
            (
                c.conds
                    .iter()
                    .map(|k| k.show(&names))
                    .collect::<Vec<_>>()
                    .join(" and "),
                c.sizes
                    .iter()
                    .map(|&e| ixmap::expr::display(e, &names).to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        })
        .collect();
    assert!(
        shown.contains(&(
            "ts mod 8 = 0 and ts divides 32".into(),
            "ts floordiv 8, 8".into()
        )),
        "{shown:?}"
    );
    assert!(
        shown.contains(&("ts divides 8".into(), "1, ts".into())),
        "{shown:?}"
    );
}

// ---- Tiling II: contraction, every instruction, masks, schedules, the space of tilings ----

use ixmap::hlo::parse::parse_hlo;
use ixmap::hlo::Workspace;
use ixmap::tile::{fusion, schedule, space};

fn workspace(computations: &[String]) -> Workspace {
    let mut ws = Workspace::new();
    for text in computations {
        let item = parse_hlo(text, 0).unwrap_or_else(|d| panic!("{text}: {}", d.message));
        ws.define(item)
            .unwrap_or_else(|d| panic!("{text}: {}", d.message));
    }
    ws
}

fn limits() -> Limits {
    Limits {
        max_points: 1 << 20,
    }
}

/// Every instruction of a dot fusion (convert, dot, broadcast bias, add) tiles over
/// (M, N, K) at any sizes, partial tiles included, and every tile is exact: `tile_set`
/// enumerates each one and returns an internal error on a mismatch.
fn dot_fusion_tiles(m: i64, n: i64, k: i64, sizes: &[i64]) {
    let text = format!(
        "mm {{\n p0 = f16[{m}, {k}] parameter(0)\n c0 = f32[{m}, {k}] convert(p0)\n p1 = f32[{k}, {n}] parameter(1)\n d = f32[{m}, {n}] dot(c0, p1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n p2 = f32[{n}] parameter(2)\n b = f32[{m}, {n}] broadcast(p2), dimensions={{1}}\n ROOT a = f32[{m}, {n}] add(d, b)\n}}"
    );
    let ws = workspace(&[text]);
    let comp = ws.module.computation("mm").expect("defined");
    let (sp, tiles) =
        fusion::tile_instructions(&ws.module, comp, comp.root, sizes, true, &limits())
            .expect("a dot fusion has an iteration space");
    assert_eq!(sp.extents(), vec![m, n, k]);
    assert_eq!(tiles.len(), 7, "every instruction is reached once");
    for t in &tiles {
        let st = t
            .tile
            .as_ref()
            .unwrap_or_else(|e| panic!("{} at {sizes:?}: {}", t.name, e.error));
        assert!(st.checked.is_some(), "{} enumerated", t.name);
        assert_eq!(st.tiles.len(), 1);
        let x = &st.tiles[0];
        // The shapes an emitter expects: lhs M x K, rhs K x N, bias N, output M x N.
        let want: Vec<i64> = match t.name.as_str() {
            "p0" | "c0" => vec![sizes[0], sizes[2]],
            "p1" => vec![sizes[2], sizes[1]],
            "p2" => vec![sizes[1]],
            _ => vec![sizes[0], sizes[1]],
        };
        assert_eq!(x.sizes, want, "{} at {sizes:?}", t.name);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn dot_fusions_tile_over_m_n_k(m in 1i64..9, n in 1i64..9, k in 1i64..9,
                                   z in proptest::collection::vec(1i64..10, 3)) {
        let sizes = [z[0].min(m), z[1].min(n), z[2].min(k)];
        dot_fusion_tiles(m, n, k, &sizes);
    }

    /// A schedule numbers every tile of the grid once, and the offsets it gives an operand are
    /// the operand tile's offsets at the scheduled tile index.
    #[test]
    fn schedules_are_bijective_and_compose(exts in proptest::collection::vec(1i64..13, 1..4),
                                           seed in proptest::collection::vec(1i64..13, 3),
                                           transposed in any::<bool>()) {
        let sizes: Vec<i64> = exts.iter().zip(&seed).map(|(&e, &s)| 1 + (s - 1) % e).collect();
        let order = if transposed { schedule::Order::Transposed } else { schedule::Order::MajorToMinor };
        let s = schedule::schedule(&exts, &sizes, &[], &[], order).expect("a grid");
        let programs = schedule::check(&s, 1 << 20).expect("bijective");
        let grid: i64 = exts.iter().zip(&sizes).map(|(e, z)| (e + z - 1) / z).product();
        prop_assert_eq!(programs as i64, grid);
        // A transpose of the output, read through the schedule.
        let n = exts.len();
        let results: Vec<String> = (0..n).rev().map(|i| format!("d{i}")).collect();
        let dims: Vec<String> = (0..n).map(|i| format!("d{i}")).collect();
        let doms: Vec<String> = exts.iter().enumerate().map(|(i, e)| format!("d{i} in [0, {}]", e - 1)).collect();
        let m = map(&format!("({}) -> ({}), domain: {}", dims.join(", "), results.join(", "), doms.join(", ")));
        let x = tile::derive(&m, &sizes).expect("a permutation tiles");
        let composed = schedule::operand_offsets(&s, &x);
        for pid in 0..programs as i64 {
            let t: Vec<i64> = s.tile_index.results.iter().map(|&e| ixmap::expr::eval(e, &[pid]).unwrap()).collect();
            let want: Vec<i64> = x.offsets.results.iter().map(|&e| ixmap::expr::eval(e, &t).unwrap()).collect();
            let got: Vec<i64> = composed.results.iter().map(|&e| ixmap::expr::eval(e, &[pid]).unwrap()).collect();
            prop_assert_eq!(got, want);
        }
    }

    /// The space of tilings: each valid tuple tiles every target (and is exact), each
    /// rejected one does not or breaks a rule.
    #[test]
    fn tilings_are_valid_tilings(kind in 0u8..16, a in 1i64..6, b in 1i64..6, c in 1i64..4) {
        let m = map(&op_map(kind, a, b, c));
        let exts: Vec<i64> = m.dims.iter().map(|d| d.bounds.hi + 1).collect();
        if exts.iter().product::<i64>() > 4096 {
            return Ok(());
        }
        let targets = vec![("operand 0".to_string(), vec![m.clone()])];
        let rules = space::Rules::default();
        let e = space::enumerate(&targets, &exts, &rules, 10_000).expect("small");
        for v in &e.valid {
            let x = tile::derive(&m, v).expect("valid means a tile");
            let verdict = tile::check_exact(&m, v, &x, &limits()).expect("small");
            prop_assert!(matches!(verdict, Verdict::Exact { .. }), "{:?}", verdict);
            for (z, n) in v.iter().zip(&exts) {
                prop_assert!(*z == *n || z.count_ones() == 1);
            }
        }
        for (v, _) in &e.rejected {
            prop_assert!(tile::derive(&m, v).is_err());
        }
        prop_assert_eq!(e.valid.len() + e.rejected.len(),
                        e.options.iter().map(|o| o.len()).product::<usize>());
    }
}

/// Not vacuous: partial tiles through a collapse give masks, and the masked tiles are exact.
#[test]
fn masks_appear_and_are_exact() {
    let mut masked = 0;
    for (a, b) in [(4, 8), (3, 5), (5, 4)] {
        for total in (a * b - b + 1)..=(a * b) {
            let m = map(&format!(
                "(d0) -> (d0 floordiv {b}, d0 mod {b}), domain: d0 in [0, {}]",
                total - 1
            ));
            for z in 1..=total {
                if let Ok(x) = tile::derive(&m, &[z]) {
                    let v = tile::check_exact(&m, &[z], &x, &limits()).expect("small");
                    assert!(matches!(v, Verdict::Exact { .. }), "{m} at {z}: {v:?}");
                    masked += usize::from(!x.masks.is_empty());
                }
            }
        }
    }
    assert!(masked > 5, "only {masked} masked tiles");
}

/// The seed's dot example: K steps of 64 over K = 128, tiles 16 x 32.
#[test]
fn dot_k_steps_seed_shapes() {
    dot_fusion_tiles(64, 96, 128, &[16, 32, 64]);
    dot_fusion_tiles(64, 96, 128, &[32, 32, 48]);
}

/// A refusal names a tile that is not a box.
#[test]
fn refusals_name_a_tile() {
    let m = map("(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]");
    assert!(tile::derive(&m, &[12]).is_err());
    let which = tile::check::first_non_box(&m, &[12], &limits()).expect("tile 0 straddles");
    assert!(which.starts_with("tile (0)"), "{which}");
    // Every tile of a valid size is a box: nothing to name.
    assert!(tile::check::first_non_box(&m, &[16], &limits()).is_none());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 800, ..ProptestConfig::default() })]

    /// Sums of a dimension and what lies below it (`d * c + s`, `d0 * (b·c) + d1 * c + s`)
    /// under sizes that do not divide the extent (issue 32, item 7): the partial last tile
    /// is a clip of the merged coordinate where the parts below fill `c`, overlap it or
    /// leave gaps (then masks keep the values the sum takes); every derived tile is
    /// checked by enumeration, and refusals are never wrong.
    #[test]
    fn partial_tiles_of_sums_are_exact(n in 1i64..9, c in 1i64..9, w in 1i64..10, b in 1i64..4,
                                       size in 1i64..10, size2 in 1i64..5, three in any::<bool>()) {
        let mut tally = Tally { tiles: 0, refused: 0 };
        let m = if three {
            map(&format!(
                "(d0, d1)[s0] -> (d0 * {} + d1 * {c} + s0), domain: d0 in [0, {}], d1 in [0, {}], s0 in [0, {}]",
                b * c, n - 1, b - 1, w - 1
            ))
        } else {
            map(&format!("(d0)[s0] -> (d0 * {c} + s0), domain: d0 in [0, {}], s0 in [0, {}]", n - 1, w - 1))
        };
        let sizes: Vec<i64> = if three { vec![size.min(n), size2.min(b)] } else { vec![size.min(n)] };
        check(&m, &sizes, &mut tally);
        // Where the parts below fill the step exactly, the tile exists, partial or not.
        if w == c && (!three || size2 == b || size.min(n) == 1) {
            prop_assert_eq!(tally.tiles, 1, "{} sizes {:?}", m, sizes);
        }
        // A dimension and one range variable always make a tile: a run where s0 fills or
        // overlaps the step (clipped where the tile is partial), a box masked to the
        // values it takes where it leaves gaps.
        if !three {
            prop_assert_eq!(tally.tiles, 1, "{} sizes {:?}", m, sizes);
        }
    }
}

/// Sums whose parts overlap or leave gaps (issue 32, item 7), each a tile checked by
/// enumeration: overlapping windows under a partial tile (a clip of the merged run, and,
/// where the cut can leave the tile empty, a condition on the tile index: found by the
/// composed property test, a runtime start whose constraint cuts the row), a reshape's
/// half rows (a box masked to `k0 mod 8 in [0, 3]`), gaps at two levels, a gap above an
/// overlap, equal steps (`d0 + s0`) cut by a partial tile.
#[test]
fn sums_that_overlap_or_leave_gaps() {
    let cases: [(&str, &[i64]); 7] = [
        ("(d0)[s0] -> (d0 * 100 + s0), domain: d0 in [0, 3], s0 in [0, 127]", &[3]),
        (
            "(d0)[s0]{r0} -> (d0 * 3 + r0 * 3 + s0), domain: d0 in [0, 3], s0 in [0, 3], r0 in [0, 2], d0 + r0 in [0, 2]",
            &[3],
        ),
        ("(d0, d1) -> (d0 * 8 + d1), domain: d0 in [0, 3], d1 in [0, 3]", &[2, 4]),
        ("(d0)[s0] -> (d0 * 128 + s0), domain: d0 in [0, 3], s0 in [0, 63]", &[3]),
        (
            "(d0, d1)[s0] -> (d0 * 100 + d1 * 16 + s0), domain: d0 in [0, 4], d1 in [0, 2], s0 in [0, 3]",
            &[2, 3],
        ),
        (
            "(d0, d1)[s0] -> (d0 * 512 + d1 * 100 + s0), domain: d0 in [0, 4], d1 in [0, 2], s0 in [0, 127]",
            &[2, 3],
        ),
        ("(d0)[s0] -> (d0 + s0), domain: d0 in [0, 5], s0 in [0, 4]", &[4]),
    ];
    let mut tally = Tally {
        tiles: 0,
        refused: 0,
    };
    for (text, sizes) in cases {
        check(&map(text), sizes, &mut tally);
    }
    assert_eq!((tally.tiles, tally.refused), (cases.len() as u64, 0));
    // The masks are the gaps' (k0 mod 8 < 4: half rows), and a masked box is read in runs
    // of 4.
    let t = tile::derive(&map(cases[2].0), cases[2].1).expect("a tile");
    assert_eq!(t.masks.len(), 1);
    assert_eq!(t.runs(), vec![4]);
    // An overlap above a gap is no regular pattern: refused, not guessed.
    let m = map(
        "(d0, d1)[s0] -> (d0 * 6 + d1 * 4 + s0), domain: d0 in [0, 2], d1 in [0, 2], s0 in [0, 1]",
    );
    assert!(tile::derive(&m, &[3, 3]).is_err());
}
