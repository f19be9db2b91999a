//! LaTeX for the notebook (text/latex, typeset by MathJax): maps in mathematical notation.
//! `floordiv` and `ceildiv` become floor and ceiling brackets, `mod` is `\bmod`, and
//! variables named like `d0` get subscripts:
//!
//! ```text
//! (d0, d1) -> (d0 floordiv 4, d1 mod 8), domain: d0 in [0, 15], d1 in [0, 7]
//! $$\begin{aligned}(d_{0}, d_{1}) &\mapsto \left(\left\lfloor \frac{d_{0}}{4} \right\rfloor,\; d_{1} \bmod 8\right)\\
//!   &d_{0} \in [0, 15],\; d_{1} \in [0, 7]\end{aligned}$$
//! ```

use crate::expr::{Expr, ExprKind, Op};
use crate::map::{IndexingMap, Status};
use crate::value::Value;

/// A variable name: `d0` → `d_{0}`, `th_x` → `\mathrm{th\_x}`.
pub fn name(n: &str) -> String {
    let digits = n.len() - n.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, num) = n.split_at(n.len() - digits);
    let stem_tex = if stem.chars().count() == 1 {
        stem.to_string()
    } else {
        format!("\\mathrm{{{}}}", stem.replace('_', "\\_"))
    };
    if num.is_empty() || stem.is_empty() {
        stem_tex + num
    } else {
        format!("{stem_tex}_{{{num}}}")
    }
}

/// Terms of a sum, flattened.
fn terms(e: Expr, out: &mut Vec<Expr>) {
    match e.kind() {
        ExprKind::Bin(Op::Add, a, b) => {
            terms(a, out);
            terms(b, out);
        }
        _ => out.push(e),
    }
}

/// An expression; `names[i]` names variable i.
pub fn expr(e: Expr, names: &[String]) -> String {
    let mut ts = Vec::new();
    terms(e, &mut ts);
    let mut s = String::new();
    for (i, &t) in ts.iter().enumerate() {
        let (coeff, base) = match t.kind() {
            ExprKind::Const(c) => (c, None),
            ExprKind::Bin(Op::Mul, x, k) if k.as_const().is_some() && x.as_const().is_none() => {
                (k.as_const().unwrap_or(1), Some(x))
            }
            _ => (1, Some(t)),
        };
        let (neg, mag) = if coeff < 0 && coeff != i64::MIN {
            (true, -coeff)
        } else {
            (false, coeff)
        };
        if i == 0 {
            if neg {
                s.push('-');
            }
        } else {
            s.push_str(if neg { " - " } else { " + " });
        }
        match base {
            None => s.push_str(&mag.to_string()),
            Some(b) => {
                if mag != 1 {
                    s.push_str(&format!("{mag} "));
                    s.push_str(&factor(b, names));
                } else {
                    s.push_str(&product(b, names));
                }
            }
        }
    }
    s
}

/// A term at product level.
fn product(e: Expr, names: &[String]) -> String {
    match e.kind() {
        ExprKind::Bin(Op::Mul, a, b) => format!("{} \\cdot {}", factor(a, names), factor(b, names)),
        ExprKind::Bin(Op::Mod, a, b) => format!("{} \\bmod {}", factor(a, names), factor(b, names)),
        _ => factor(e, names),
    }
}

/// An operand: atoms and bracketed divisions bare, sums and products in parentheses.
fn factor(e: Expr, names: &[String]) -> String {
    match e.kind() {
        ExprKind::Const(c) if c < 0 => format!("({c})"),
        ExprKind::Const(c) => c.to_string(),
        ExprKind::Var(v) => name(names.get(v as usize).map_or("v", String::as_str)),
        ExprKind::Bin(Op::FloorDiv, a, b) => {
            format!(
                "\\left\\lfloor \\frac{{{}}}{{{}}} \\right\\rfloor",
                expr(a, names),
                expr(b, names)
            )
        }
        ExprKind::Bin(Op::CeilDiv, a, b) => {
            format!(
                "\\left\\lceil \\frac{{{}}}{{{}}} \\right\\rceil",
                expr(a, names),
                expr(b, names)
            )
        }
        ExprKind::Bin(op @ (Op::Min | Op::Max), a, b) => format!(
            "\\{}\\left({}, {}\\right)",
            op.symbol(),
            expr(a, names),
            expr(b, names)
        ),
        ExprKind::Bin(..) => format!("\\left({}\\right)", expr(e, names)),
    }
}

/// A map as display math: the function on the first line, the domain on the second.
pub fn map(m: &IndexingMap) -> String {
    if m.status == Status::Undefined {
        return "$$\\mathrm{UNDEFINED}$$".into();
    }
    let names = m.names();
    let list = |vs: &[crate::map::Variable]| {
        vs.iter()
            .map(|v| name(&v.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut head = format!("({})", list(&m.dims));
    if !m.ranges.is_empty() {
        head += &format!("[{}]", list(&m.ranges));
    }
    if !m.runtimes.is_empty() {
        head += &format!("\\{{{}\\}}", list(&m.runtimes));
    }
    let results: Vec<String> = m.results.iter().map(|&r| expr(r, &names)).collect();
    let mut domain: Vec<String> = Vec::new();
    if m.status == Status::KnownEmpty {
        domain.push("\\text{KNOWN EMPTY}".into());
    } else {
        for v in m.vars().filter(|v| !v.bounds.is_full()) {
            domain.push(format!(
                "{} \\in [{}, {}]",
                name(&v.name),
                v.bounds.lo,
                v.bounds.hi
            ));
        }
        for &(e, iv) in &m.constraints {
            domain.push(format!("{} \\in [{}, {}]", expr(e, &names), iv.lo, iv.hi));
        }
    }
    let mut s = format!(
        "$$\\begin{{aligned}}{head} &\\mapsto \\left({}\\right)",
        results.join(",\\; ")
    );
    if !domain.is_empty() {
        s += &format!("\\\\\n&{}", domain.join(",\\; "));
    }
    s + "\\end{aligned}$$"
}

/// LaTeX for the values that have it (maps).
pub fn latex(v: &Value) -> Option<String> {
    match v {
        Value::Map(m) => Some(map(m)),
        Value::Explained { map: m, .. } => Some(map(m)),
        _ => None,
    }
}
