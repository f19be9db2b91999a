//! The coalescing analysis (`coalescing FUSION`) against a byte-level count by enumeration
//! (issue 32, item 3). Random fusions of one operand — a transpose, a broadcast, a strided
//! slice, a pad, a reverse, an elementwise op on an operand in a random layout — each with
//! a random element type and launch. The oracle does not use the fusion's indexing maps:
//! each family's read is written here by hand from XLA's operation semantics (which operand
//! element an output element reads, or none for padding), the operand's strides are
//! computed here from its layout, and every byte of every element a warp's load reads is
//! put in a set; the distinct 32-byte sectors of that set, the ideal (the same elements
//! packed densely) and the verdict (every load within one sector of the ideal) must be
//! the analysis's. Only the launch's thread → output map is shared (its covering of the
//! output is tested in `gpu::launch`).

use ixmap::gpu::coalescing::{analyse, OperandReport, SECTOR};
use ixmap::gpu::launch::{self, Launch, LaunchConfig};
use ixmap::gpu::sweep;
use ixmap::map::IndexingMap;
use ixmap::Session;
use proptest::prelude::*;
use std::collections::BTreeSet;

#[derive(Clone, Debug)]
enum Family {
    /// `transpose(p)`: output dim i is operand dim perm[i].
    Transpose(Vec<usize>),
    /// `broadcast(p)`: the operand's dims are output dims `kept`.
    Broadcast(Vec<usize>),
    /// `slice(p)`: operand index = start + stride × output index, per dim.
    Slice(Vec<(i64, i64)>),
    /// `pad(p, 0)`: edge padding (lo, hi) per dim.
    Pad(Vec<(i64, i64)>),
    /// `reverse(p)` along these dims.
    Reverse(Vec<usize>),
    /// `negate(p)`.
    Elementwise,
}

#[derive(Clone, Debug)]
struct Case {
    elem: &'static str,
    bytes: i64,
    out: Vec<i64>,
    family: Family,
    /// The operand's layout, minor to major.
    layout: Vec<usize>,
    block: i64,
    vector: i64,
    unroll: i64,
    tiled: Option<bool>,
}

impl Case {
    /// The operand's dims.
    fn operand_dims(&self) -> Vec<i64> {
        match &self.family {
            Family::Transpose(perm) => {
                let mut d = vec![0; self.out.len()];
                for (i, &p) in perm.iter().enumerate() {
                    d[p] = self.out[i];
                }
                d
            }
            Family::Broadcast(kept) => kept.iter().map(|&k| self.out[k]).collect(),
            Family::Slice(s) => self
                .out
                .iter()
                .zip(s)
                .map(|(&o, &(start, stride))| start + (o - 1) * stride + 1 + start % 3)
                .collect(),
            Family::Pad(p) => self
                .out
                .iter()
                .zip(p)
                .map(|(&o, &(lo, hi))| o - lo - hi)
                .collect(),
            Family::Reverse(_) | Family::Elementwise => self.out.clone(),
        }
    }

    fn hlo(&self) -> String {
        let t = self.elem;
        let list = |v: &[i64]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let ulist = |v: &[usize]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let od = self.operand_dims();
        let out = format!("{t}[{}]", list(&self.out));
        let root = match &self.family {
            Family::Transpose(perm) => {
                format!("{out} transpose(p), dimensions={{{}}}", ulist(perm))
            }
            Family::Broadcast(kept) => {
                format!("{out} broadcast(p), dimensions={{{}}}", ulist(kept))
            }
            Family::Slice(s) => {
                let parts: Vec<String> = s
                    .iter()
                    .zip(&self.out)
                    .map(|(&(start, stride), &o)| {
                        format!("[{start}:{}:{stride}]", start + (o - 1) * stride + 1)
                    })
                    .collect();
                format!("{out} slice(p), slice={{{}}}", parts.join(", "))
            }
            Family::Pad(p) => {
                let parts: Vec<String> = p.iter().map(|(lo, hi)| format!("{lo}_{hi}")).collect();
                format!("{out} pad(p, z), padding={}", parts.join("x"))
            }
            Family::Reverse(dims) => format!("{out} reverse(p), dimensions={{{}}}", ulist(dims)),
            Family::Elementwise => format!("{out} negate(p)"),
        };
        format!(
            "f {{\n  p = {t}[{}]{{{}}} parameter(0)\n  z = {t}[] constant(0)\n  ROOT r = {root}\n}}",
            list(&od),
            ulist(&self.layout)
        )
    }

    /// The operand element output element `o` reads (XLA's semantics), if any.
    fn read(&self, o: &[i64]) -> Option<Vec<i64>> {
        let od = self.operand_dims();
        Some(match &self.family {
            Family::Transpose(perm) => {
                let mut i = vec![0; o.len()];
                for (k, &p) in perm.iter().enumerate() {
                    i[p] = o[k];
                }
                i
            }
            Family::Broadcast(kept) => kept.iter().map(|&k| o[k]).collect(),
            Family::Slice(s) => o.iter().zip(s).map(|(&x, &(st, sd))| st + x * sd).collect(),
            Family::Pad(p) => {
                let i: Vec<i64> = o.iter().zip(p).map(|(&x, &(lo, _))| x - lo).collect();
                if i.iter().zip(&od).any(|(&x, &d)| x < 0 || x >= d) {
                    return None;
                }
                i
            }
            Family::Reverse(dims) => o
                .iter()
                .enumerate()
                .map(|(d, &x)| if dims.contains(&d) { od[d] - 1 - x } else { x })
                .collect(),
            Family::Elementwise => o.to_vec(),
        })
    }
}

/// Strides in elements of a tensor of `dims` laid out `minor_to_major`.
fn strides(dims: &[i64], minor_to_major: &[usize]) -> Vec<i64> {
    let mut s = vec![0; dims.len()];
    let mut acc = 1;
    for &d in minor_to_major {
        s[d] = acc;
        acc *= dims[d];
    }
    s
}

/// Per load of the launch (a warp and a value of the loop variables but `unroll_id`), the
/// byte addresses of the elements its lanes touch through `map` (thread → output index)
/// and `element` (output index → the tensor's index, if any): loads, sectors, ideal, and
/// whether every load is within one sector of its ideal.
fn brute(
    l: &Launch,
    map: &IndexingMap,
    element: &dyn Fn(&[i64]) -> Option<Vec<i64>>,
    st: &[i64],
    bytes: i64,
) -> (u64, u64, u64, bool) {
    let nd = map.dims.len();
    let loops: Vec<usize> = (0..map.ranges.len())
        .filter(|&i| map.ranges[i].name != "unroll_id")
        .collect();
    let unroll = map.ranges.iter().position(|v| v.name == "unroll_id");
    let (mut loads, mut sectors, mut ideal, mut ok) = (0u64, 0u64, 0u64, true);
    for b in 0..l.grid[0] {
        for w in 0..(l.block[0] + 31) / 32 {
            let mut at: Vec<i64> = loops.iter().map(|&i| map.ranges[i].bounds.lo).collect();
            loop {
                let mut set: BTreeSet<i64> = BTreeSet::new();
                let mut elems: BTreeSet<i64> = BTreeSet::new();
                for lane in 0..32 {
                    let th = w * 32 + lane;
                    if th >= l.block[0] {
                        break;
                    }
                    let us =
                        unroll.map_or(0..=0, |u| map.ranges[u].bounds.lo..=map.ranges[u].bounds.hi);
                    for u in us {
                        let mut p = vec![0i64; map.num_vars()];
                        p[0] = th;
                        p[3] = b;
                        for (k, &i) in loops.iter().enumerate() {
                            p[nd + i] = at[k];
                        }
                        if let Some(x) = unroll {
                            p[nd + x] = u;
                        }
                        let Some(o) = map.eval_point(&p).expect("evaluates") else {
                            continue;
                        };
                        let Some(i) = element(&o) else { continue };
                        let off: i64 = i.iter().zip(st).map(|(a, s)| a * s).sum();
                        elems.insert(off);
                        for k in 0..bytes {
                            set.insert(off * bytes + k);
                        }
                    }
                }
                if !set.is_empty() {
                    let s: BTreeSet<i64> = set.iter().map(|x| x.div_euclid(SECTOR)).collect();
                    let id = (elems.len() as i64 * bytes + SECTOR - 1) / SECTOR;
                    loads += 1;
                    sectors += s.len() as u64;
                    ideal += id as u64;
                    ok &= s.len() as i64 <= id + 1;
                }
                let mut k = at.len();
                let mut done = true;
                while k > 0 {
                    k -= 1;
                    if at[k] < map.ranges[loops[k]].bounds.hi {
                        at[k] += 1;
                        done = false;
                        break;
                    }
                    at[k] = map.ranges[loops[k]].bounds.lo;
                }
                if done {
                    break;
                }
            }
        }
    }
    (loads, sectors, ideal, ok)
}

/// Checks one case; `Ok(false)` when the launch asked for does not exist (a vector that
/// does not divide the minor dimension, a transpose to tile that is not there).
fn check(case: &Case) -> Result<bool, TestCaseError> {
    let mut s = Session::new();
    for o in s.execute(&case.hlo()) {
        prop_assert!(o.result.is_ok(), "{}: {:?}", case.hlo(), o.result);
    }
    let spec = sweep::spec_for(&s.hlo, "f")
        .expect("defined")
        .map_err(|e| TestCaseError::fail(e))?;
    let cfg = LaunchConfig {
        block: case.block,
        vector: case.vector,
        unroll: case.unroll,
        ..Default::default()
    };
    let Ok(l) = launch::choose(&spec, cfg, case.tiled) else {
        return Ok(false);
    };
    let rep = analyse(&spec, &l).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(!rep.sampled, "small cases are counted in full");
    let row = |pred: &dyn Fn(&OperandReport) -> bool| -> &OperandReport {
        let rows: Vec<&OperandReport> = rep.operands.iter().filter(|o| pred(o)).collect();
        assert_eq!(rows.len(), 1, "{}", case.hlo());
        rows[0]
    };
    let od = case.operand_dims();
    let r = row(&|o| o.operand == Some(0));
    let from = if r.through_tile {
        &l.read_map
    } else {
        &l.write_map
    };
    let want = brute(
        &l,
        from,
        &|o| case.read(o),
        &strides(&od, &case.layout),
        case.bytes,
    );
    let got = (
        r.loads,
        r.sectors,
        r.ideal_sectors,
        r.coalesced || !r.read(),
    );
    prop_assert_eq!(got, want, "read of {} with {:?}", case.hlo(), l.describe());
    let w = row(&|o| o.operand.is_none());
    let rm: Vec<usize> = (0..case.out.len()).rev().collect();
    let want = brute(
        &l,
        &l.write_map,
        &|o| Some(o.to_vec()),
        &strides(&case.out, &rm),
        case.bytes,
    );
    prop_assert_eq!(
        (w.loads, w.sectors, w.ideal_sectors, w.coalesced),
        want,
        "write of {} with {:?}",
        case.hlo(),
        l.describe()
    );
    Ok(true)
}

fn permutation(n: usize) -> impl Strategy<Value = Vec<usize>> {
    Just((0..n).collect::<Vec<usize>>()).prop_shuffle()
}

fn case() -> impl Strategy<Value = Case> {
    let elems = prop_oneof![
        Just(("f32", 4i64)),
        Just(("f16", 2)),
        Just(("s8", 1)),
        Just(("f64", 8))
    ];
    (2usize..=3, elems)
        .prop_flat_map(|(rank, elem)| {
            let dims = prop::collection::vec(1i64..=24, rank);
            (Just(rank), Just(elem), dims)
        })
        .prop_flat_map(|(rank, elem, out)| {
            let fam = prop_oneof![
                permutation(rank).prop_map(Family::Transpose),
                prop::collection::vec(any::<bool>(), rank).prop_map(move |keep| {
                    Family::Broadcast((0..rank).filter(|&d| keep[d]).collect())
                }),
                prop::collection::vec((0i64..3, 1i64..=3), rank).prop_map(Family::Slice),
                prop::collection::vec((0i64..3, 0i64..3), rank).prop_map(Family::Pad),
                prop::collection::vec(any::<bool>(), rank)
                    .prop_map(move |r| { Family::Reverse((0..rank).filter(|&d| r[d]).collect()) }),
                Just(Family::Elementwise),
            ];
            (
                Just(elem),
                Just(out),
                fam,
                permutation(rank),
                prop_oneof![Just(32i64), Just(64), Just(96), Just(128), Just(40)],
                prop_oneof![Just(1i64), Just(2), Just(4)],
                prop_oneof![Just(1i64), Just(2)],
                prop_oneof![Just(None), Just(Some(false)), Just(Some(true))],
            )
        })
        .prop_filter_map(
            "a shape the family allows",
            |(elem, out, family, layout, block, vector, unroll, tiled)| {
                let mut c = Case {
                    elem: elem.0,
                    bytes: elem.1,
                    out,
                    family,
                    layout,
                    block,
                    vector,
                    unroll,
                    tiled,
                };
                if let Family::Pad(p) = &c.family {
                    // The operand keeps at least one element per dimension.
                    if c.out.iter().zip(p).any(|(&o, &(lo, hi))| o - lo - hi < 1) {
                        return None;
                    }
                }
                // The operand's layout has the operand's rank.
                let r = c.operand_dims().len();
                c.layout.retain(|&d| d < r);
                if c.layout.len() != r {
                    c.layout = (0..r).rev().collect();
                }
                Some(c)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn sectors_per_warp_load_match_a_byte_level_count(c in case()) {
        check(&c)?;
    }
}

/// The families the generator draws from, each once with a launch that exercises it: a
/// tiled transpose of a column-major operand, a vector loop over a pad, a strided slice
/// with chunks, a broadcast of f16.
#[test]
fn each_family_matches_the_count() {
    let cases = [
        Case {
            elem: "f32",
            bytes: 4,
            out: vec![20, 24],
            family: Family::Transpose(vec![1, 0]),
            layout: vec![1, 0],
            block: 128,
            vector: 1,
            unroll: 1,
            tiled: Some(true),
        },
        Case {
            elem: "f16",
            bytes: 2,
            out: vec![7, 24],
            family: Family::Pad(vec![(1, 2), (3, 1)]),
            layout: vec![1, 0],
            block: 64,
            vector: 4,
            unroll: 1,
            tiled: None,
        },
        Case {
            elem: "s8",
            bytes: 1,
            out: vec![5, 6, 9],
            family: Family::Slice(vec![(1, 2), (0, 3), (2, 1)]),
            layout: vec![0, 2, 1],
            block: 32,
            vector: 1,
            unroll: 2,
            tiled: Some(false),
        },
        Case {
            elem: "f16",
            bytes: 2,
            out: vec![9, 16],
            family: Family::Broadcast(vec![0]),
            layout: vec![0],
            block: 96,
            vector: 2,
            unroll: 1,
            tiled: None,
        },
        Case {
            elem: "f64",
            bytes: 8,
            out: vec![6, 10],
            family: Family::Reverse(vec![1]),
            layout: vec![0, 1],
            block: 40,
            vector: 1,
            unroll: 1,
            tiled: None,
        },
    ];
    for c in &cases {
        let checked = check(c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        assert!(checked, "{c:?} has a launch");
    }
}
