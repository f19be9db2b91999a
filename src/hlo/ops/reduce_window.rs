//! `reduce-window(inputs..., inits...)`: output index `d` with window position `s` reads
//! the padded, base-dilated input at `d * stride + s * window_dilation - pad_lo`, which is
//! an input element when divisible by the base dilation and in range. Window dimensions of
//! size 1 need no range variable.
//!
//! ```text
//! output = f32[1024, 3] reduce-window(f32[1024, 514] p0, f32[] c_inf), window={size=1x512 pad=0_0x0_0}
//! output → operand 0:  (d0, d1)[s0] -> (d0, d1 + s0), s0 in [0, 511]
//! output → operand 1:  (d0, d1) -> ()
//! ```

use super::{attr, build, c, d, want_out_dims, Cx, Family};
use crate::expr::Expr;
use crate::hlo::WindowDim;
use crate::interval::Interval;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "reduce-window",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

/// The output size of a windowed dimension of an input of size `n`; `None` when a size
/// or position the maps use does not fit in 64 bits (huge padding, dilation or window).
pub fn window_out_size(n: i64, w: &WindowDim) -> Option<i64> {
    let dilated = if n == 0 {
        0
    } else {
        (n - 1).checked_mul(w.lhs_dilate)?.checked_add(1)?
    };
    w.pad_lo.checked_neg()?;
    w.pad_hi.checked_neg()?;
    let padded = dilated.checked_add(w.pad_lo)?.checked_add(w.pad_hi)?;
    dilated.checked_add(w.pad_lo)?;
    let span = (w.size - 1).checked_mul(w.rhs_dilate)?.checked_add(1)?;
    let out = if padded < span {
        0
    } else {
        (padded - span) / w.stride + 1
    };
    // The last output's window start and the input-side bound `(out - 1) * stride`.
    if out > 0 {
        (out - 1).checked_mul(w.stride)?.checked_add(span)?;
    }
    Some(out)
}

/// [`window_out_size`] as a check: an overflow is an error naming the dimension.
pub fn checked_window_out_size(n: i64, w: &WindowDim, i: usize) -> Result<i64, String> {
    window_out_size(n, w).ok_or_else(|| {
        format!(
            "window dimension {i} (size {} stride {} pad {}_{} lhs_dilate {} rhs_dilate {}) on an input of size {n} overflows 64-bit sizes",
            w.size, w.stride, w.pad_lo, w.pad_hi, w.lhs_dilate, w.rhs_dilate
        )
    })
}

fn check(cx: &Cx) -> Result<(), String> {
    let n = cx.n_operands();
    if n == 0 || n % 2 != 0 {
        return Err(format!(
            "`reduce-window` takes inputs and as many init values, found {n} operands"
        ));
    }
    let w = attr(&cx.instr.attrs.window, "window", "reduce-window")?;
    let i0 = cx.opd(0);
    if w.len() != i0.len() {
        return Err(format!(
            "window has {} dimensions but operand 0 (`{}`) has rank {}",
            w.len(),
            cx.operand(0).name,
            i0.len()
        ));
    }
    for k in n / 2..n {
        if !cx.opd(k).is_empty() {
            return Err(format!(
                "init value `{}` must be a scalar",
                cx.operand(k).name
            ));
        }
    }
    let want: Vec<i64> = i0
        .iter()
        .zip(w)
        .enumerate()
        .map(|(i, (&x, wd))| checked_window_out_size(x, wd, i))
        .collect::<Result<_, _>>()?;
    want_out_dims(cx, &want)
}

/// Input index expressions for output dims `0..` and window range variables starting at
/// variable `first_range`; returns (results, range extents, constraints).
pub fn window_access(
    input: &[i64],
    w: &[WindowDim],
    out_dim: &dyn Fn(usize) -> Expr,
    first_range: usize,
) -> (Vec<Expr>, Vec<i64>, Vec<(Expr, Interval)>) {
    let mut results = Vec::new();
    let mut ranges = Vec::new();
    let mut constraints = Vec::new();
    for (i, wd) in w.iter().enumerate() {
        let s = if wd.size > 1 {
            let v = Expr::var((first_range + ranges.len()) as u32);
            ranges.push(wd.size);
            v
        } else {
            c(0)
        };
        let p = out_dim(i)
            .mul(c(wd.stride))
            .add(s.mul(c(wd.rhs_dilate)))
            .sub(c(wd.pad_lo));
        if wd.lhs_dilate > 1 {
            constraints.push((p.modulo(c(wd.lhs_dilate)), Interval::point(0)));
        }
        constraints.push((
            p,
            Interval::new(0, (input[i] - 1).saturating_mul(wd.lhs_dilate)),
        ));
        results.push(p.floordiv(c(wd.lhs_dilate)));
    }
    (results, ranges, constraints)
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let w = cx.instr.attrs.window.clone().unwrap_or_default();
    let out = cx.out();
    let (results, ranges, constraints) = window_access(cx.opd(0), &w, &|i| d(i), out.len());
    let m = build(out, &ranges, &[], results, constraints);
    let init = build(out, &[], &[], vec![], vec![]);
    let half = cx.n_operands() / 2;
    (0..cx.n_operands())
        .map(|k| if k < half { m.clone() } else { init.clone() })
        .collect()
}

fn in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    let out = cx.out();
    if k >= cx.n_operands() / 2 {
        return build(&[], out, &[], (0..out.len()).map(d).collect(), vec![]);
    }
    let w = cx.instr.attrs.window.clone().unwrap_or_default();
    let input = cx.opd(k);
    let n = input.len();
    let mut results = Vec::new();
    let mut ranges = Vec::new();
    let mut constraints = Vec::new();
    for (i, wd) in w.iter().enumerate() {
        let s = if wd.size > 1 {
            let v = Expr::var((n + ranges.len()) as u32);
            ranges.push(wd.size);
            v
        } else {
            c(0)
        };
        // x * base_dilation + pad_lo - s * window_dilation = o * stride
        let num = d(i)
            .mul(c(wd.lhs_dilate))
            .add(c(wd.pad_lo))
            .sub(s.mul(c(wd.rhs_dilate)));
        if wd.stride > 1 {
            constraints.push((num.modulo(c(wd.stride)), Interval::point(0)));
        }
        let o = num.floordiv(c(wd.stride));
        constraints.push((
            num,
            Interval::new(0, (out[i] - 1).saturating_mul(wd.stride)),
        ));
        results.push(o);
    }
    build(input, &ranges, &[], results, constraints)
}
