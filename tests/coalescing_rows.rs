//! Coalescing of row normalizations (issue 32) against a byte-level count of the reads the
//! kernel makes, written here from the row kernel's documented launch (`emit::cuda_rows`,
//! `launch::row_normalization_launch`), not from the fusion's indexing maps: the row's
//! `row_threads` lanes (from the launch: a warp, or fewer for a short row) are threads
//! `th_x / row_threads` of block `bl_x`'s rows; lane `l` takes the row's elements
//! `(l + row_threads * col) * vector + u`; each reduction of the row is folded once by the
//! same lanes, lane `l` taking its elements `(l + row_threads * step) * v + u`, with `v`
//! the launch's vector where it divides the reduction, else 1. A warp's load is one value
//! of `col` (or `step`): every byte of every element its lanes read goes into a set, and
//! the distinct 32-byte sectors, the ideal (the elements packed densely) and the verdict
//! (every load within one sector of its ideal) must be the analysis's.
//!
//! The fusions: `out[r, c] = x[r, c] * red(y[r, :])` (a row sum, or a softmax-like
//! sum of `exp(y - max(y))` that nests a max inside the sum), `x` and `y` each in a random
//! layout, rows of the output short or long; a reduction under an elementwise epilogue,
//! `out[r] = abs(sum(y[r, :]))`, each output element a row of its own; and a row reduction
//! whose operand nests a reduction of its own row, `out[r] = sum(exp(y - max(y)))`, which
//! the same kernel writes (at vector 1).

use ixmap::gpu::coalescing::{analyse, OperandReport, SECTOR};
use ixmap::gpu::launch::{self, Launch, LaunchConfig, Strategy as Kernel};
use ixmap::gpu::sweep;
use ixmap::Session;
use proptest::prelude::*;
use std::collections::BTreeSet;

#[derive(Clone, Debug)]
struct Case {
    elem: &'static str,
    bytes: i64,
    rows: i64,
    /// The output's row length; `None`: the epilogue family (each element a row).
    cols: Option<i64>,
    /// The root family instead: `out[r] = sum(exp(y[r, :] - max(y[r, :])))`, a row
    /// reduction whose operand reads a reduction of its own row (y is operand 0).
    root: bool,
    /// `y`'s row length (the reduction's).
    k: i64,
    /// `sum(exp(y - max(y)))` rather than `sum(y)`.
    nested: bool,
    x_col_major: bool,
    y_col_major: bool,
    block: i64,
    vector: i64,
}

const REDUCERS: &str = "addf {\n  a = ELEM[] parameter(0)\n  b = ELEM[] parameter(1)\n  ROOT s = ELEM[] add(a, b)\n}\nmaxf {\n  a = ELEM[] parameter(0)\n  b = ELEM[] parameter(1)\n  ROOT m = ELEM[] maximum(a, b)\n}";

impl Case {
    fn layout(col_major: bool) -> &'static str {
        if col_major {
            "{0,1}"
        } else {
            "{1,0}"
        }
    }

    fn hlo(&self) -> String {
        let t = self.elem;
        let (r, k) = (self.rows, self.k);
        let y = format!(
            "  y = {t}[{r},{k}]{} parameter(1)\n",
            Case::layout(self.y_col_major)
        );
        let red = if self.nested {
            format!(
                "  ninf = {t}[] constant(-inf)\n  mx = {t}[{r}] reduce(y, ninf), dimensions={{1}}, to_apply=maxf\n  mb = {t}[{r},{k}] broadcast(mx), dimensions={{0}}\n  sh = {t}[{r},{k}] subtract(y, mb)\n  e = {t}[{r},{k}] exponential(sh)\n  zero = {t}[] constant(0)\n  sm = {t}[{r}] reduce(e, zero), dimensions={{1}}, to_apply=addf\n"
            )
        } else {
            format!("  zero = {t}[] constant(0)\n  sm = {t}[{r}] reduce(y, zero), dimensions={{1}}, to_apply=addf\n")
        };
        if self.root {
            return format!(
                "{}\nf {{\n{}{}}}",
                REDUCERS.replace("ELEM", t),
                y.replace("parameter(1)", "parameter(0)"),
                red.replace("  sm = ", "  ROOT sm = ")
            );
        }
        let body = match self.cols {
            Some(c) => format!(
                "  x = {t}[{r},{c}]{} parameter(0)\n{y}{red}  sb = {t}[{r},{c}] broadcast(sm), dimensions={{0}}\n  ROOT o = {t}[{r},{c}] multiply(x, sb)\n",
                Case::layout(self.x_col_major)
            ),
            None => format!("  x = {t}[{r}] parameter(0)\n{y}{red}  ab = {t}[{r}] abs(sm)\n  ROOT o = {t}[{r}] multiply(x, ab)\n"),
        };
        format!("{}\nf {{\n{body}}}", REDUCERS.replace("ELEM", t))
    }
}

/// Byte offset of element `[i, j]` of a `[rows, n]` tensor.
fn at(i: i64, j: i64, rows: i64, n: i64, col_major: bool, bytes: i64) -> i64 {
    (if col_major { j * rows + i } else { i * n + j }) * bytes
}

/// Loads, sectors, ideal sectors and the verdict of one phase of the row kernel over a
/// `[rows, n]` tensor: lane `l` of a row reads its elements `(l + rt * step) * v + u`.
fn phase(
    l: &Launch,
    rows: i64,
    n: i64,
    v: i64,
    col_major: bool,
    bytes: i64,
) -> (u64, u64, u64, bool) {
    let rt = l.row_threads;
    let rows_per_block = l.block[0] / rt;
    let vectors = n / v;
    let steps = (vectors + rt - 1) / rt;
    let (mut loads, mut sectors, mut ideal, mut ok) = (0u64, 0u64, 0u64, true);
    for b in 0..l.grid[0] {
        for w in 0..(l.block[0] + 31) / 32 {
            for step in 0..steps {
                let mut set = BTreeSet::new();
                let mut elems = BTreeSet::new();
                for lane_id in 0..32 {
                    let th = w * 32 + lane_id;
                    if th >= l.block[0] {
                        break;
                    }
                    let row = b * rows_per_block + th / rt;
                    let lane_vec = th % rt + rt * step;
                    if row >= rows || lane_vec >= vectors {
                        continue;
                    }
                    for u in 0..v {
                        let a = at(row, lane_vec * v + u, rows, n, col_major, bytes);
                        elems.insert(a);
                        set.extend(a..a + bytes);
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
            }
        }
    }
    (loads, sectors, ideal, ok)
}

fn counts(o: &OperandReport) -> (u64, u64, u64, bool) {
    (o.loads, o.sectors, o.ideal_sectors, o.coalesced)
}

/// Checks one case; `Ok(false)` when the launch is not a row normalization (a vector that
/// does not divide the row, a grid too large).
fn check(case: &Case) -> Result<bool, TestCaseError> {
    let mut s = Session::new();
    for o in s.execute(&case.hlo()) {
        prop_assert!(o.result.is_ok(), "{}: {:?}", case.hlo(), o.result);
    }
    let spec = sweep::spec_for(&s.hlo, "f")
        .expect("defined")
        .map_err(TestCaseError::fail)?;
    let cfg = LaunchConfig {
        block: case.block,
        vector: case.vector,
        ..Default::default()
    };
    let Ok(l) = launch::choose(&spec, cfg, None) else {
        return Ok(false);
    };
    // The row kernel writes a root reduction only at one element a lane (vector 1).
    let row_kernel = if case.root {
        l.strategy == Kernel::RowReduction && l.config.vector == 1
    } else {
        l.strategy == Kernel::RowNormalization
    };
    if !row_kernel {
        return Ok(false);
    }
    let rep = analyse(&spec, &l).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert!(!rep.sampled, "small cases are counted in full");
    let rows_of = |k: Option<usize>| -> Vec<&OperandReport> {
        rep.operands.iter().filter(|o| o.operand == k).collect()
    };
    let v = l.config.vector;
    if case.root {
        // Each row's max and sum read y alike (one row).
        let ys = rows_of(Some(0));
        prop_assert_eq!(ys.len(), 1, "{}", case.hlo());
        let want = phase(&l, case.rows, case.k, 1, case.y_col_major, case.bytes);
        prop_assert_eq!(
            counts(ys[0]),
            want,
            "y of {} with {}",
            case.hlo(),
            l.describe()
        );
        return Ok(true);
    }
    // x: the row's elements (the epilogue family reads x[r] at its one column, lane 0).
    let (xn, xv) = (case.cols.unwrap_or(1), v);
    let want_x = phase(
        &l,
        case.rows,
        xn,
        xv,
        case.x_col_major && case.cols.is_some(),
        case.bytes,
    );
    let xs = rows_of(Some(0));
    prop_assert_eq!(xs.len(), 1, "{}", case.hlo());
    prop_assert_eq!(
        counts(xs[0]),
        want_x,
        "x of {} with {}",
        case.hlo(),
        l.describe()
    );
    // y: each reduction of the row once (the max and the sum read it alike: one row).
    let yv = if case.k % v == 0 { v } else { 1 };
    let want_y = phase(&l, case.rows, case.k, yv, case.y_col_major, case.bytes);
    let ys = rows_of(Some(1));
    prop_assert_eq!(ys.len(), 1, "{}", case.hlo());
    prop_assert_eq!(
        counts(ys[0]),
        want_y,
        "y of {} with {}",
        case.hlo(),
        l.describe()
    );
    // The write: the row's elements, row-major.
    let ws = rows_of(None);
    prop_assert_eq!(ws.len(), 1);
    prop_assert_eq!(
        counts(ws[0]),
        phase(&l, case.rows, xn, xv, false, case.bytes),
        "write of {} with {}",
        case.hlo(),
        l.describe()
    );
    Ok(true)
}

fn case() -> impl Strategy<Value = Case> {
    let elems = prop_oneof![Just(("f32", 4i64)), Just(("f16", 2)), Just(("f64", 8))];
    (
        elems,
        1i64..=40,
        prop_oneof![
            Just(None),
            Just(Some(2i64)),
            Just(Some(4)),
            Just(Some(8)),
            Just(Some(16)),
            Just(Some(20)),
            Just(Some(32)),
            Just(Some(48)),
            Just(Some(100)),
        ],
        prop_oneof![
            Just(8i64),
            Just(12),
            Just(32),
            Just(40),
            Just(64),
            Just(100)
        ],
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![Just(32i64), Just(64), Just(96), Just(128)],
        prop_oneof![Just(1i64), Just(2), Just(4)],
        0u8..4,
    )
        .prop_map(
            |(elem, rows, cols, k, nested, x_col_major, y_col_major, block, vector, family)| {
                // One case in four: the root family (its max nested in the sum).
                let root = family == 0;
                // The row's reductions are as long as the output's rows, or (epilogue) at
                // least a warp's worth.
                let k = match cols {
                    Some(c) if k % 2 == 0 => c,
                    Some(_) => k,
                    None => k.max(32),
                };
                Case {
                    elem: elem.0,
                    bytes: elem.1,
                    rows,
                    cols,
                    root,
                    k,
                    nested: nested || root,
                    x_col_major,
                    y_col_major,
                    block,
                    vector,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn row_normalization_reads_match_a_byte_level_count(c in case()) {
        check(&c)?;
    }
}

/// Cases that exercise each part once: a short-row softmax (8 lanes a row, 4 rows a warp,
/// which the old model of a reduction read whole by every thread called uncoalesced),
/// a long row with vectors and a nested max, a column-major reduction (strided: not
/// coalesced), a reduction longer than the output's rows, the epilogue family, and the
/// root family (sumexp of sessions/gpu/softmax.ixm; short column-major rows).
#[test]
fn row_kernels_match_the_count() {
    let base = Case {
        elem: "f32",
        bytes: 4,
        rows: 64,
        cols: Some(8),
        root: false,
        k: 8,
        nested: true,
        x_col_major: false,
        y_col_major: false,
        block: 128,
        vector: 1,
    };
    let cases = [
        base.clone(),
        Case {
            rows: 9,
            cols: Some(300),
            k: 300,
            vector: 4,
            ..base.clone()
        },
        Case {
            rows: 12,
            cols: Some(40),
            k: 40,
            y_col_major: true,
            elem: "f16",
            bytes: 2,
            vector: 2,
            ..base.clone()
        },
        Case {
            rows: 5,
            cols: Some(16),
            k: 100,
            nested: false,
            x_col_major: true,
            block: 64,
            ..base.clone()
        },
        Case {
            rows: 40,
            cols: None,
            root: true,
            k: 50,
            block: 256,
            ..base.clone()
        },
        Case {
            rows: 6,
            cols: None,
            root: true,
            k: 8,
            y_col_major: true,
            ..base.clone()
        },
        Case {
            rows: 33,
            cols: None,
            k: 64,
            elem: "f64",
            bytes: 8,
            ..base
        },
    ];
    for c in &cases {
        let checked = check(c).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        assert!(checked, "{c:?} runs as a row normalization");
    }
}
