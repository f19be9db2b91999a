//! Layouts against their definitions, by enumeration on random static layouts.
//!
//! - `maps_agree_with_evaluation`: the natural, flat and (thread, value) maps of a CuTe
//!   layout (swizzled or not) give the layout's offset at every point;
//! - `text_round_trips`: CuTe text → layout → text, and layout → map → layout (`show as
//!   cute`) for coalesced layouts; any layout's map reads back to the same function;
//! - `coalesce_keeps_the_function`, `composition_is_pointwise`, `complement_fills_the_gaps`,
//!   `inverses_undo`, `divides_are_compositions`, `products_are_defined_so`: CuTe's algebra;
//! - `linear_layouts`: maps, text, `show as linear_layout`, inverse and composition of
//!   random F2-linear layouts;
//! - `blocked_layouts_match_the_direct_formula`: `#ttg.blocked` against a thread-by-thread
//!   formula written here;
//! - `bad_text_never_panics`: any text is a layout or an error with a position.

use ixmap::layout::cute::{self, Composed, Layout, Swizzle, Tiler, Tuple};
use ixmap::layout::linear::{self, LinearLayout};
use ixmap::layout::{recognize, ttgir};
use ixmap::map::IndexingMap;
use proptest::prelude::*;
use std::collections::BTreeSet;

// ------------------------------------------------------------------ generators

/// A layout of 1..=4 leaves (sizes 1..=6, strides in [lo, 12]), grouped into a nested
/// shape at random.
fn layout_with(lo: i64) -> impl Strategy<Value = Layout> {
    (
        prop::collection::vec((1i64..=6, lo..=12i64), 1..=4),
        0usize..4,
    )
        .prop_map(|(leaves, nest)| {
            let item = |(s, d): (i64, i64)| (Tuple::Int(s), Tuple::Int(d));
            let mut modes: Vec<(Tuple, Tuple)> = leaves.into_iter().map(item).collect();
            // Group the first two modes into one (nesting) when asked and possible.
            if nest > 1 && modes.len() >= 3 {
                let a = modes.remove(0);
                let b = modes.remove(0);
                modes.insert(0, (Tuple::Tup(vec![a.0, b.0]), Tuple::Tup(vec![a.1, b.1])));
            }
            if modes.len() == 1 {
                let (s, d) = modes.remove(0);
                Layout {
                    shape: s,
                    stride: d,
                }
            } else {
                Layout {
                    shape: Tuple::Tup(modes.iter().map(|m| m.0.clone()).collect()),
                    stride: Tuple::Tup(modes.into_iter().map(|m| m.1).collect()),
                }
            }
        })
}

fn layout() -> impl Strategy<Value = Layout> {
    layout_with(0)
}

fn swizzle() -> impl Strategy<Value = Option<Swizzle>> {
    prop_oneof![
        Just(None),
        (0i64..=3, 0i64..=3, -5i64..=5).prop_filter_map("|S| >= B", |(b, m, s)| {
            Swizzle::new(b, m, s).ok().map(Some)
        }),
    ]
}

fn values(l: &Layout) -> Vec<i64> {
    l.values().expect("small layouts evaluate")
}

/// Points of a map's box, with the results, by brute force (independent of the map's
/// enumeration code).
fn all_points(m: &IndexingMap) -> Vec<(Vec<i64>, Vec<i64>)> {
    let bounds: Vec<(i64, i64)> = m.dims.iter().map(|v| (v.bounds.lo, v.bounds.hi)).collect();
    let mut out = Vec::new();
    let mut p: Vec<i64> = bounds.iter().map(|b| b.0).collect();
    loop {
        let r = m.eval_point(&p).expect("evaluates").expect("in the domain");
        out.push((p.clone(), r));
        let mut i = 0;
        loop {
            if i == p.len() {
                return out;
            }
            if p[i] < bounds[i].1 {
                p[i] += 1;
                break;
            }
            p[i] = bounds[i].0;
            i += 1;
        }
    }
}

fn injective(v: &[i64]) -> bool {
    v.iter().collect::<BTreeSet<_>>().len() == v.len()
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

// ------------------------------------------------------------------ CuTe

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn maps_agree_with_evaluation(l in layout_with(-6), sw in swizzle(), off in 0i64..4) {
        let c = Composed { swizzle: sw, offset: if sw.is_some() { off } else { 0 }, layout: l.clone() };
        // Flat: the map at x is the layout at x.
        for (p, r) in all_points(&c.flat_map()) {
            prop_assert_eq!(r[0], c.eval(p[0]).unwrap(), "flat map of {} at {}", c, p[0]);
        }
        // Natural: one dimension per leaf, colexicographic.
        let leaves = l.leaves();
        for (p, r) in all_points(&c.natural_map()) {
            let mut x = 0;
            let mut w = 1;
            for (i, (s, _)) in leaves.iter().enumerate() {
                x += p[i] * w;
                w *= s;
            }
            prop_assert_eq!(r[0], c.eval(x).unwrap(), "natural map of {} at {:?}", c, p);
        }
        // Modes: one dimension per top-level mode.
        let sizes: Vec<i64> = l.modes().iter().map(|m| m.size()).collect();
        for (p, r) in all_points(&c.mode_map(None)) {
            let mut x = 0;
            let mut w = 1;
            for (i, s) in sizes.iter().enumerate() {
                x += p[i] * w;
                w *= s;
            }
            prop_assert_eq!(r[0], c.eval(x).unwrap(), "mode map of {} at {:?}", c, p);
        }
    }

    #[test]
    fn text_round_trips(l in layout_with(-6), sw in swizzle()) {
        let c = Composed { swizzle: sw, offset: 0, layout: l.clone() };
        prop_assert_eq!(cute::parse(&c.to_string()).unwrap(), c.clone());
        // Any layout's map reads back as a layout with the same values.
        let back = recognize::to_cute(&Composed::plain(l.clone()).flat_map()).map_err(|e| TestCaseError::fail(format!("{l}: {e}")))?;
        prop_assert_eq!(values(&back), values(&l));
        // A coalesced layout reads back as itself.
        let k = l.coalesce();
        let back = recognize::to_cute(&Composed::plain(k.clone()).flat_map()).map_err(|e| TestCaseError::fail(format!("{k}: {e}")))?;
        prop_assert_eq!(back.to_string(), k.to_string());
    }

    #[test]
    fn coalesce_keeps_the_function(l in layout()) {
        let k = l.coalesce();
        prop_assert_eq!(values(&k), values(&l));
        prop_assert!(k.leaves().len() <= l.leaves().len());
        // No two adjacent modes could merge, and no size-1 mode is left (but 1:0 alone).
        let lv = k.leaves();
        for w in lv.windows(2) {
            prop_assert!(w[0].0 * w[0].1 != w[1].1, "{} could merge further", k);
        }
        prop_assert!(lv.len() == 1 || lv.iter().all(|(s, _)| *s > 1));
    }

    #[test]
    fn composition_is_pointwise(a in layout(), b in layout()) {
        if let Ok(r) = cute::composition(&a, &b) {
            prop_assert_eq!(r.size(), b.size());
            // B's modes are kept (a leaf of B may become several modes).
            if let Tuple::Tup(_) = b.shape {
                prop_assert_eq!(r.rank(), b.rank());
            }
            for c in 0..b.size() {
                prop_assert_eq!(r.eval(c).unwrap(), a.eval(b.eval(c).unwrap()).unwrap(), "{} o {} = {} at {}", a, b, r, c);
            }
        }
    }

    #[test]
    fn complement_fills_the_gaps(a in layout(), extra in 1i64..4) {
        let m = a.cosize().unwrap() * extra;
        if let Ok(r) = a.complement(m) {
            // Ordered: strides increase along the modes (size-1 modes aside).
            let strides: Vec<i64> = r.leaves().into_iter().filter(|(s, _)| *s > 1).map(|(_, d)| d).collect();
            prop_assert!(strides.windows(2).all(|w| w[0] < w[1]), "{} not ordered", r);
            let av = values(&a);
            if injective(&av) {
                // (A, R) is injective and covers [0, M).
                let both = Layout::concat(vec![a.clone(), r.clone()]);
                let bv = values(&both);
                prop_assert!(injective(&bv), "({}, {}) overlaps", a, r);
                let set: BTreeSet<i64> = bv.into_iter().collect();
                prop_assert!((0..m).all(|x| set.contains(&x)), "({}, {}) misses part of [0, {})", a, r, m);
            }
        }
    }

    #[test]
    fn inverses_undo(a in layout()) {
        let r = a.right_inverse();
        for i in 0..r.size() {
            prop_assert_eq!(a.eval(r.eval(i).unwrap()).unwrap(), i, "right inverse {} of {}", r, a);
        }
        let av = values(&a);
        // A bijection onto [0, size) has a right inverse as large as itself.
        let mut sorted = av.clone();
        sorted.sort();
        if sorted == (0..a.size()).collect::<Vec<_>>() {
            prop_assert_eq!(r.size(), a.size());
        }
        if let Ok(l) = a.left_inverse() {
            for x in 0..a.size() {
                prop_assert_eq!(l.eval(av[x as usize]).unwrap(), x, "left inverse {} of {}", l, a);
            }
        }
    }

    #[test]
    fn divides_are_compositions(a in layout(), t in layout(), t2 in layout()) {
        if let Ok(d) = cute::logical_divide(&a, &Tiler::Layout(t.clone())) {
            let c = t.complement(a.size()).unwrap();
            let b = Layout::concat(vec![t.clone(), c]);
            prop_assert_eq!(d.mode(0).size(), t.size());
            for x in 0..d.size() {
                prop_assert_eq!(d.eval(x).unwrap(), a.eval(b.eval(x).unwrap()).unwrap());
            }
            prop_assert_eq!(cute::zipped_divide(&a, &Tiler::Layout(t.clone())).unwrap(), d.clone());
        }
        // By mode: mode i of the result divides mode i of A.
        let tiler = Tiler::ByMode(vec![t.clone(), t2.clone()]);
        if let Ok(d) = cute::logical_divide(&a, &tiler) {
            for (i, ti) in [t, t2].iter().enumerate() {
                let di = cute::logical_divide(&a.mode(i), &Tiler::Layout(ti.clone())).unwrap();
                prop_assert_eq!(d.mode(i), di);
            }
            for i in 2..a.rank() {
                prop_assert_eq!(d.mode(i), a.mode(i));
            }
            // zipped and tiled regroup the same leaves: the same multiset of modes.
            let z = cute::zipped_divide(&a, &tiler).unwrap();
            let td = cute::tiled_divide(&a, &tiler).unwrap();
            let mut l1 = d.leaves(); l1.sort();
            let mut l2 = z.leaves(); l2.sort();
            let mut l3 = td.leaves(); l3.sort();
            prop_assert_eq!(&l1, &l2);
            prop_assert_eq!(&l1, &l3);
            prop_assert_eq!(z.mode(0).size(), d.mode(0).mode(0).size() * d.mode(1).mode(0).size());
        }
    }

    #[test]
    fn products_are_defined_so(a in layout(), b in layout()) {
        if let Ok(p) = cute::logical_product(&a, &b) {
            prop_assert_eq!(p.mode(0), a.clone());
            let c = a.complement(a.size() * b.cosize().unwrap()).unwrap();
            let x = p.mode(1);
            prop_assert_eq!(x.size(), b.size());
            for i in 0..b.size() {
                prop_assert_eq!(x.eval(i).unwrap(), c.eval(b.eval(i).unwrap()).unwrap());
            }
            if injective(&values(&a)) && injective(&values(&b)) {
                prop_assert!(injective(&values(&p)), "{} x {} = {} overlaps", a, b, p);
            }
        }
        // blocked and raked zip the modes of the product of the padded layouts.
        let r = a.rank().max(b.rank());
        let pad = |l: &Layout| {
            let mut m = l.modes();
            while m.len() < r { m.push(Layout::leaf(1, 0)); }
            Layout::concat(m)
        };
        if let Ok(p) = cute::logical_product(&pad(&a), &pad(&b)) {
            let bl = cute::blocked_product(&a, &b).unwrap();
            let rk = cute::raked_product(&a, &b).unwrap();
            for i in 0..r {
                prop_assert_eq!(bl.mode(i), Layout::concat(vec![p.mode(0).mode(i), p.mode(1).mode(i)]));
                prop_assert_eq!(rk.mode(i), Layout::concat(vec![p.mode(1).mode(i), p.mode(0).mode(i)]));
            }
        }
    }
}

/// The algebra succeeds often enough on the generators for the properties to mean
/// something: count successes over a fixed sweep.
#[test]
fn the_generators_reach_the_algebra() {
    let mut comp = 0;
    let mut compl = 0;
    let mut total = 0;
    for s0 in 1..=4i64 {
        for d0 in 0..=4i64 {
            for s1 in 1..=4i64 {
                for d1 in 0..=8i64 {
                    let a = Layout::concat(vec![Layout::leaf(s0, d0), Layout::leaf(s1, d1)]);
                    let b = Layout::leaf(s1, d0.max(1));
                    total += 1;
                    comp += cute::composition(&a, &b).is_ok() as i32;
                    compl += a.complement(64).is_ok() as i32;
                }
            }
        }
    }
    assert!(comp * 2 > total, "{comp} of {total} compositions");
    assert!(compl * 4 > total, "{compl} of {total} complements");
}

// ------------------------------------------------------------------ linear layouts

fn linear_layout() -> impl Strategy<Value = LinearLayout> {
    (0usize..=3, 0usize..=3, 0u32..=4, 0u32..=4).prop_flat_map(|(nr, nl, b0, b1)| {
        let basis = (0i64..(1 << b0), 0i64..(1 << b1)).prop_map(|(x, y)| vec![x, y]);
        (
            prop::collection::vec(basis.clone(), nr),
            prop::collection::vec(basis, nl),
        )
            .prop_map(move |(r, l)| {
                LinearLayout::new(
                    vec![("register".into(), r), ("lane".into(), l)],
                    vec![("dim0".into(), 1 << b0), ("dim1".into(), 1 << b1)],
                )
                .expect("valid by construction")
            })
    })
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn linear_layouts(ll in linear_layout()) {
        let m = ll.to_map();
        for (p, r) in all_points(&m) {
            prop_assert_eq!(r, ll.eval(&p));
        }
        prop_assert_eq!(linear::parse(&ll.to_text()).unwrap(), ll.clone());
        // Map back to bases: exactly the layout, but for output sizes (fitted to the values).
        let back = linear::from_map(&m).map_err(TestCaseError::fail)?;
        prop_assert_eq!(&back.ins, &ll.ins);
        if let Ok(inv) = ll.inverse() {
            for (p, _) in all_points(&m) {
                prop_assert_eq!(inv.eval(&ll.eval(&p)), p.clone());
            }
            let id = LinearLayout::compose(&ll, &inv).unwrap();
            for (p, _) in all_points(&m) {
                prop_assert_eq!(id.eval(&p), p.clone());
            }
        } else {
            // Not invertible: two inputs meet, or the bits do not match in number.
            let n_in: usize = ll.ins.iter().map(|(_, b)| b.len()).sum();
            let n_out: u32 = ll.outs.iter().map(|(_, s)| s.trailing_zeros()).sum();
            let images: BTreeSet<Vec<i64>> = all_points(&m).into_iter().map(|(_, r)| r).collect();
            prop_assert!(n_in != n_out as usize || images.len() < 1 << n_in);
        }
    }

    #[test]
    fn non_linear_maps_are_refused(k in prop::sample::select(vec![3i64, 5, 6, 7])) {
        // x mod k on [0, 7] is F2-linear for k = 2, 4 (the low bits) and k >= 8 (x itself),
        // and for no other k: x mod 3 at 3 is 0, not 1 XOR 2.
        let src = format!("(d0) -> (d0 mod {k}), domain: d0 in [0, 7]");
        let mut s = ixmap::Session::new();
        let out = s.execute(&format!("show {src} as linear_layout"));
        prop_assert!(out[0].result.is_err());
    }
}

// ------------------------------------------------------------------ TTGIR

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn blocked_layouts_match_the_direct_formula(
        spt in prop::collection::vec(0u32..=2, 2),
        tpw0 in 0u32..=5,
        wpc in prop::collection::vec(0u32..=2, 2),
        swap in any::<bool>(),
        extra in prop::collection::vec(0u32..=2, 2),
    ) {
        let spt: Vec<i64> = spt.iter().map(|b| 1 << b).collect();
        let tpw: Vec<i64> = vec![1 << tpw0, 1 << (5 - tpw0)];
        let wpc: Vec<i64> = wpc.iter().map(|b| 1 << b).collect();
        let order = if swap { vec![0usize, 1] } else { vec![1, 0] };
        let tile: Vec<i64> = (0..2).map(|d| spt[d] * tpw[d] * wpc[d]).collect();
        let shape: Vec<i64> = (0..2).map(|d| tile[d] << extra[d]).collect();
        let text = format!(
            "#ttg.blocked<{{sizePerThread = [{}, {}], threadsPerWarp = [{}, {}], warpsPerCTA = [{}, {}], order = [{}, {}]}}>",
            spt[0], spt[1], tpw[0], tpw[1], wpc[0], wpc[1], order[0], order[1]
        );
        let ll = ttgir::parse(&text, &shape).unwrap();
        // The direct formula: split each index over the dimensions in `order` (fastest
        // first); registers first cover sizePerThread, then the repeats of the tile.
        let split = |mut x: i64, sizes: &[i64]| -> Vec<i64> {
            let mut out = vec![0; 2];
            for &d in &order {
                out[d] = x % sizes[d];
                x /= sizes[d];
            }
            out
        };
        let reps: Vec<i64> = (0..2).map(|d| shape[d] / tile[d]).collect();
        let nreg = spt[0] * spt[1] * reps[0] * reps[1];
        let mut seen = BTreeSet::new();
        for reg in 0..nreg {
            for lane in 0..32 {
                for warp in 0..wpc[0] * wpc[1] {
                    let r = split(reg % (spt[0] * spt[1]), &spt);
                    let rep = split(reg / (spt[0] * spt[1]), &reps);
                    let l = split(lane, &tpw);
                    let w = split(warp, &wpc);
                    let want: Vec<i64> = (0..2)
                        .map(|d| rep[d] * tile[d] + w[d] * spt[d] * tpw[d] + l[d] * spt[d] + r[d])
                        .collect();
                    prop_assert_eq!(ll.eval(&[reg, lane, warp, 0]), want.clone());
                    seen.insert(want);
                }
            }
        }
        // Every element is held exactly once.
        prop_assert_eq!(seen.len() as i64, shape[0] * shape[1]);
    }
}

// ------------------------------------------------------------------ robustness

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn bad_text_never_panics(s in "[-_()0-9,:<>Swo =\\[\\]{}a-z#.\n]{0,40}") {
        if let Err(e) = cute::parse(&s) {
            prop_assert!(e.at.is_none_or(|a| a <= s.len()));
        }
        if let Err(e) = linear::parse(&s) {
            prop_assert!(e.at.is_none_or(|a| a <= s.len()));
        }
        let _ = cute::parse_tiler(&s);
        let _ = ttgir::parse(&s, &[8, 8]);
        let mut session = ixmap::Session::new();
        let quoted = s.replace('"', "");
        for cmd in ["layout", "coalesce", "picture", "access", "right_inverse"] {
            let _ = session.execute(&format!("{cmd} \"{quoted}\""));
        }
        let _ = session.execute(&format!("composition \"{quoted}\", \"{quoted}\""));
    }

    #[test]
    fn ttgir_text_never_panics(s in "#ttg\\.(blocked|linear|slice|nvidia_mma|dot_op|swizzled_shared|nvmma_shared)<\\{[a-zA-Z =,\\[\\]0-9#.<>{}]{0,60}\\}>") {
        let _ = ttgir::parse(&s, &[16, 16]);
    }
}

#[test]
fn extreme_text_is_an_error() {
    let deep = "(".repeat(10_000);
    assert!(cute::parse(&deep).is_err());
    assert!(cute::parse("Sw<16,32,32> o 8:1").is_err());
    assert!(cute::parse("(9223372036854775807,2):(1,1)").is_err());
    let mut s = ixmap::Session::new();
    for stmt in [
        "complement \"4:2\" cotarget=9223372036854775807",
        "layout \"#ttg.blocked<{sizePerThread = [16777216, 16777216], threadsPerWarp = [16777216, 16777216], warpsPerCTA = [16777216, 16777216], order = [1, 0]}>\" shape=(16777216, 16777216)",
        "layout \"#ttg.slice<{dim = 0, parent = #ttg.slice<{dim = 0, parent = #ttg.slice<{dim = 0, parent = #ttg.slice<{dim = 0, parent = #ttg.slice<{dim = 0, parent = #ttg.slice<{dim = 0, parent = #ttg.slice<{dim = 0, parent = #ttg.slice<{dim = 0, parent = #ttg.slice<{dim = 0, parent = #ttg.slice<{dim = 0}>}>}>}>}>}>}>}>}>}>\" shape=(4)",
        "picture \"(1048576,1048576):(1,1048576)\"",
        "layout \"(1099511627776,1099511627776):(1,1099511627776)\" flat",
    ] {
        let _ = s.execute(stmt);
    }
}

// ------------------------------------------------------------------ by hand

#[test]
fn a_128_by_32_mma_layout_renders() {
    let mut s = ixmap::Session::new();
    let out = s.execute(
        "picture \"#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 2], instrShape = [16, 8]}>\" shape=(128, 32)",
    );
    let v = out[0].result.as_ref().expect("renders");
    let text = ixmap::render::text(v, ixmap::render::Style::Plain);
    assert!(text.contains("128 x 32"));
    // 128 rows of cells, each holder labelled; 8 warps x 32 lanes = 256 threads.
    assert!(text.contains("T255V"));
    let html = ixmap::render::html(v);
    assert!(html.contains("<svg") && html.matches("<rect").count() == 128 * 32);
}

#[test]
fn xla_cute_and_triton_agree_on_one_tile() {
    // The 4 x 32 f32 tile of a loop fusion with block 32 and vector 4 (XLA's thread map),
    // the Triton blocked layout of the same tile, and CuTe's thread/value layout of it
    // (column-major offsets over the 4 x 32 tile).
    let mut s = ixmap::Session::new();
    let out = s.execute(
        "xla = (th_x, th_y, th_z, bl_x, bl_y, bl_z)[unroll_id] -> (th_x floordiv 8, (th_x mod 8) * 4 + unroll_id), domain: th_x in [0, 31], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 0], bl_y in [0, 0], bl_z in [0, 0], unroll_id in [0, 3]
         tri = layout \"#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>\" shape=(4, 32) tv
         cute = layout \"((8,4),4):((16,1),4)\" tile=(4, 32)
         equal tri, cute
         t = (th_x, th_y, th_z, bl_x, bl_y, bl_z)[unroll_id] -> (th_x, unroll_id), domain: th_x in [0, 31], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 0], bl_y in [0, 0], bl_z in [0, 0], unroll_id in [0, 3]
         equal xla, (compose t, tri)
         equal xla, (compose t, cute)",
    );
    for o in &out {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    for o in &out[3..] {
        if let Ok(ixmap::Value::Bool(b)) = &o.result {
            assert!(*b);
        }
    }
}
