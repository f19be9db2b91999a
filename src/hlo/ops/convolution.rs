//! `convolution`: like a reduce-window over the input's spatial dimensions, with the
//! input feature dimension as one more range variable shared by input and kernel.
//! `dim_labels` (e.g. `b01f_01io->b01f`) say which dimension is which. With
//! `feature_group_count = G`, output feature `o` belongs to group `o floordiv (F_out / G)`
//! and reads only that group's input features; with `batch_group_count = B`, it reads the
//! input batch group `o floordiv (F_out / B)`. The input-to-output direction is UNDEFINED.
//!
//! ```text
//! conv = f32[1,5,5,8] convolution(f32[1,7,7,4] x, f32[3,3,4,8] k), window={size=3x3}, dim_labels=b01f_01io->b01f
//! output → operand 0:  (d0, d1, d2, d3)[s0, s1, s2] -> (d0, d1 + s0, d2 + s1, s2)
//! output → operand 1:  (d0, d1, d2, d3)[s0, s1, s2] -> (s0, s1, s2, d3)
//! ```

use super::reduce_window::{checked_window_out_size, window_access};
use super::{build, c, d, want_operands, want_out_dims, Cx, Family};
use crate::expr::Expr;
use crate::hlo::WindowDim;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "convolution",
    check,
    out_to_in,
    in_to_out,
    approximate: Some("the input-to-output direction is UNDEFINED"),
};

struct Labels {
    lhs: Vec<char>,
    rhs: Vec<char>,
    out: Vec<char>,
}

fn labels(cx: &Cx) -> Result<Labels, String> {
    let dl = cx.instr.attrs.dim_labels.clone().unwrap_or_else(|| {
        let n = cx.out().len().saturating_sub(2);
        let sp: String = (0..n).map(|i| char::from(b'0' + i as u8)).collect();
        format!("b{sp}f_{sp}io->b{sp}f")
    });
    let (ins, out) = dl
        .split_once("->")
        .ok_or_else(|| format!("bad dim_labels `{dl}`: expected lhs_rhs->out"))?;
    let (lhs, rhs) = ins
        .split_once('_')
        .ok_or_else(|| format!("bad dim_labels `{dl}`: expected lhs_rhs->out"))?;
    Ok(Labels {
        lhs: lhs.chars().collect(),
        rhs: rhs.chars().collect(),
        out: out.chars().collect(),
    })
}

fn find(l: &[char], ch: char) -> Result<usize, String> {
    l.iter()
        .position(|&x| x == ch)
        .ok_or_else(|| format!("dim_labels lack `{ch}`"))
}

/// Window per spatial dimension (defaults: the kernel's spatial sizes, stride 1).
fn window(cx: &Cx, lb: &Labels, nsp: usize) -> Result<Vec<WindowDim>, String> {
    match &cx.instr.attrs.window {
        Some(w) if w.len() == nsp => Ok(w.clone()),
        Some(w) => Err(format!(
            "window has {} dimensions but the convolution has {nsp} spatial ones",
            w.len()
        )),
        None => (0..nsp)
            .map(|k| {
                let r = find(&lb.rhs, char::from(b'0' + k as u8))?;
                Ok(WindowDim {
                    size: cx.opd(1)[r],
                    ..WindowDim::default()
                })
            })
            .collect(),
    }
}

fn check(cx: &Cx) -> Result<(), String> {
    want_operands(cx, 2)?;
    let lb = labels(cx)?;
    let (x, k, out) = (cx.opd(0), cx.opd(1), cx.out());
    if lb.lhs.len() != x.len() || lb.rhs.len() != k.len() || lb.out.len() != out.len() {
        return Err("dim_labels do not match the ranks of the operands and the output".into());
    }
    let nsp = x.len().saturating_sub(2);
    let w = window(cx, &lb, nsp)?;
    let mut want = vec![0i64; out.len()];
    want[find(&lb.out, 'b')?] = x[find(&lb.lhs, 'b')?];
    want[find(&lb.out, 'f')?] = k[find(&lb.rhs, 'o')?];
    for (s, wd) in w.iter().enumerate() {
        let ch = char::from(b'0' + s as u8);
        let xi = x[find(&lb.lhs, ch)?];
        if k[find(&lb.rhs, ch)?] != wd.size {
            return Err(format!(
                "window size {} differs from the kernel's spatial dimension {s}",
                wd.size
            ));
        }
        want[find(&lb.out, ch)?] = checked_window_out_size(xi, wd, s)?;
    }
    let (fg, bg) = groups(cx);
    if fg < 1 || bg < 1 {
        return Err("feature_group_count and batch_group_count must be positive".into());
    }
    if fg > 1 && bg > 1 {
        return Err("at most one of feature_group_count and batch_group_count may exceed 1".into());
    }
    let (xb, xf) = (x[find(&lb.lhs, 'b')?], x[find(&lb.lhs, 'f')?]);
    let (ki, ko) = (k[find(&lb.rhs, 'i')?], k[find(&lb.rhs, 'o')?]);
    if ki.checked_mul(fg) != Some(xf) {
        return Err(format!(
            "the input has {xf} features, but the kernel's {ki} input features times feature_group_count {fg} make {}",
            ki.saturating_mul(fg)
        ));
    }
    if ko % fg != 0 || ko % bg != 0 {
        return Err(format!(
            "the kernel's {ko} output features are not divisible by the group count {}",
            fg.max(bg)
        ));
    }
    if xb % bg != 0 {
        return Err(format!(
            "the input batch {xb} is not divisible by batch_group_count {bg}"
        ));
    }
    want[find(&lb.out, 'b')?] = xb / bg;
    want_out_dims(cx, &want)
}

/// (feature_group_count, batch_group_count), 1 when absent.
fn groups(cx: &Cx) -> (i64, i64) {
    let a = &cx.instr.attrs;
    (
        a.feature_group_count.unwrap_or(1),
        a.batch_group_count.unwrap_or(1),
    )
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let (fg, bg) = groups(cx);
    let Ok(lb) = labels(cx) else {
        return vec![IndexingMap::undefined(); 2];
    };
    let (x, k, out) = (cx.opd(0), cx.opd(1), cx.out());
    let nsp = x.len() - 2;
    let Ok(w) = window(cx, &lb, nsp) else {
        return vec![IndexingMap::undefined(); 2];
    };
    let pos = |l: &[char], ch: char| l.iter().position(|&y| y == ch).unwrap_or(0);
    let sp = |i: usize| char::from(b'0' + i as u8);
    let x_sp: Vec<i64> = (0..nsp).map(|i| x[pos(&lb.lhs, sp(i))]).collect();
    let (acc, mut ranges, constraints) =
        window_access(&x_sp, &w, &|i| d(pos(&lb.out, sp(i))), out.len());
    let feat = Expr::var((out.len() + ranges.len()) as u32);
    let kin = k[pos(&lb.rhs, 'i')];
    ranges.push(kin);
    // Which range variable each spatial window dimension got (size-1 windows: index 0).
    let mut next = 0;
    let win_var: Vec<Expr> = w
        .iter()
        .map(|wd| {
            if wd.size > 1 {
                next += 1;
                Expr::var((out.len() + next - 1) as u32)
            } else {
                c(0)
            }
        })
        .collect();
    // Output feature `o` is in feature group `o floordiv (F_out / fg)`, which reads the
    // input features `group * kin + s`; with batch groups, in batch group
    // `o floordiv (F_out / bg)`, which reads input batch `group * B_out + b`.
    let (ob, of) = (pos(&lb.out, 'b'), pos(&lb.out, 'f'));
    let mut xr = vec![c(0); x.len()];
    xr[pos(&lb.lhs, 'b')] = if bg > 1 {
        d(of).floordiv(c(out[of] / bg)).mul(c(out[ob])).add(d(ob))
    } else {
        d(ob)
    };
    xr[pos(&lb.lhs, 'f')] = if fg > 1 {
        d(of).floordiv(c(out[of] / fg)).mul(c(kin)).add(feat)
    } else {
        feat
    };
    for i in 0..nsp {
        xr[pos(&lb.lhs, sp(i))] = acc[i];
    }
    let mut kr = vec![c(0); k.len()];
    kr[pos(&lb.rhs, 'o')] = d(pos(&lb.out, 'f'));
    kr[pos(&lb.rhs, 'i')] = feat;
    for i in 0..nsp {
        kr[pos(&lb.rhs, sp(i))] = win_var[i];
    }
    vec![
        build(out, &ranges, &[], xr, constraints),
        build(out, &ranges, &[], kr, vec![]),
    ]
}

fn in_to_out(_: &Cx, _: usize) -> IndexingMap {
    IndexingMap::undefined()
}
