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

/// A printed expression (`(d0 * 16 + d1) floordiv 8`), parsed back for typesetting.
#[derive(Debug)]
enum Tex {
    Num(String),
    Var(String),
    Neg(Box<Tex>),
    Bin(&'static str, Box<Tex>, Box<Tex>),
    Call(&'static str, Box<Tex>, Box<Tex>),
}

/// Parses what [`IndexingMap::show_expr`] prints: `+ -` over `* floordiv ceildiv mod`
/// (left to right, as in MLIR's affine syntax), unary minus, `min`/`max`, parentheses.
struct TexParser<'a> {
    toks: Vec<&'a str>,
    at: usize,
}

impl<'a> TexParser<'a> {
    fn new(s: &'a str) -> Option<TexParser<'a>> {
        let mut toks = Vec::new();
        let mut rest = s.trim_start();
        while !rest.is_empty() {
            let c = rest.chars().next()?;
            let n = if c.is_ascii_alphanumeric() || c == '_' {
                rest.find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                    .unwrap_or(rest.len())
            } else if "()+-*,".contains(c) {
                1
            } else {
                return None;
            };
            toks.push(&rest[..n]);
            rest = rest[n..].trim_start();
        }
        Some(TexParser { toks, at: 0 })
    }
    fn peek(&self) -> Option<&'a str> {
        self.toks.get(self.at).copied()
    }
    fn eat(&mut self, t: &str) -> bool {
        let hit = self.peek() == Some(t);
        self.at += usize::from(hit);
        hit
    }
    fn sum(&mut self) -> Option<Tex> {
        let mut a = self.product()?;
        loop {
            let op = if self.eat("+") {
                "+"
            } else if self.eat("-") {
                "-"
            } else {
                return Some(a);
            };
            a = Tex::Bin(op, Box::new(a), Box::new(self.product()?));
        }
    }
    fn product(&mut self) -> Option<Tex> {
        let mut a = self.unary()?;
        loop {
            let op = match self.peek() {
                Some("*") => "*",
                Some("floordiv") => "floordiv",
                Some("ceildiv") => "ceildiv",
                Some("mod") => "mod",
                _ => return Some(a),
            };
            self.at += 1;
            a = Tex::Bin(op, Box::new(a), Box::new(self.unary()?));
        }
    }
    fn unary(&mut self) -> Option<Tex> {
        if self.eat("-") {
            return Some(Tex::Neg(Box::new(self.unary()?)));
        }
        let t = self.peek()?;
        self.at += 1;
        if t == "(" {
            let e = self.sum()?;
            return self.eat(")").then_some(e);
        }
        if let Some(f) = ["min", "max"].into_iter().find(|f| *f == t) {
            if !self.eat("(") {
                return None;
            }
            let a = self.sum()?;
            if !self.eat(",") {
                return None;
            }
            let b = self.sum()?;
            return self
                .eat(")")
                .then(|| Tex::Call(f, Box::new(a), Box::new(b)));
        }
        if t.chars().all(|c| c.is_ascii_digit()) {
            Some(Tex::Num(t.to_string()))
        } else if t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && !["floordiv", "ceildiv", "mod", "in"].contains(&t)
        {
            Some(Tex::Var(t.to_string()))
        } else {
            None
        }
    }
}

impl Tex {
    fn tex(&self) -> String {
        match self {
            Tex::Num(n) => n.clone(),
            Tex::Var(v) => name(v),
            Tex::Neg(a) => format!("-{}", a.operand(true)),
            Tex::Call(f, a, b) => format!("\\{f}\\left({}, {}\\right)", a.tex(), b.tex()),
            Tex::Bin("+", a, b) => format!("{} + {}", a.tex(), b.tex()),
            Tex::Bin("-", a, b) => format!("{} - {}", a.tex(), b.operand(true)),
            Tex::Bin("floordiv", a, b) => format!(
                "\\left\\lfloor \\frac{{{}}}{{{}}} \\right\\rfloor",
                a.tex(),
                b.tex()
            ),
            Tex::Bin("ceildiv", a, b) => format!(
                "\\left\\lceil \\frac{{{}}}{{{}}} \\right\\rceil",
                a.tex(),
                b.tex()
            ),
            Tex::Bin("mod", a, b) => format!("{} \\bmod {}", a.operand(true), b.operand(true)),
            Tex::Bin(_, a, b) => format!("{} \\cdot {}", a.operand(false), b.operand(true)),
        }
    }
    /// As the operand of a product or remainder: sums (and, on the right or under `mod`,
    /// products and negations) in parentheses.
    fn operand(&self, strict: bool) -> String {
        let wrap = match self {
            Tex::Bin("+" | "-", ..) => true,
            Tex::Bin("mod", ..) => true,
            Tex::Bin("*", ..) | Tex::Neg(_) => strict,
            _ => false,
        };
        if wrap {
            format!("\\left({}\\right)", self.tex())
        } else {
            self.tex()
        }
    }
}

/// A printed expression as LaTeX, or as typewriter text when it does not parse.
fn expr_text(s: &str) -> String {
    let parsed = TexParser::new(s).and_then(|mut p| {
        let e = p.sum()?;
        (p.at == p.toks.len()).then_some(e)
    });
    match parsed {
        Some(e) => e.tex(),
        None => format!("\\texttt{{{}}}", text_escape(s)),
    }
}

/// A fact as printed by the simplifier: `E in [lo, hi]`, `E = F`, or an expression.
fn fact(s: &str) -> String {
    if let Some((e, iv)) = s.rsplit_once(" in [") {
        if let Some((lo, hi)) = iv.strip_suffix(']').and_then(|iv| iv.split_once(", ")) {
            return format!("{} \\in [{}, {}]", expr_text(e), lo.trim(), hi.trim());
        }
    }
    if let Some((a, b)) = s.split_once(" = ") {
        return format!("{} = {}", expr_text(a), expr_text(b));
    }
    expr_text(s)
}

/// Text for `\text{...}` and `\texttt{...}`: LaTeX's special characters escaped.
fn text_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\backslash "),
            '{' | '}' | '_' | '%' | '$' | '#' | '&' => {
                out.push('\\');
                out.push(c);
            }
            '~' | '^' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `simplify M explain`: the map, then each rewrite as `before ⇒ after` with the rule's
/// name and the domain facts that allowed it.
pub fn explained(
    m: &IndexingMap,
    steps: &[crate::simplify::Step],
    limit_hit: Option<&str>,
) -> String {
    let mut s = map(m);
    if steps.is_empty() {
        return s + "\n$$\\text{no rewrite applied}$$";
    }
    s += "\n$$\\begin{array}{rl}\n";
    for (i, st) in steps.iter().enumerate() {
        s += &format!(
            "{}.\\; \\text{{{}}}: & {} \\;\\Rightarrow\\; {}\\\\\n",
            i + 1,
            text_escape(&st.rule),
            fact(&st.before),
            fact(&st.after)
        );
        if !st.why.is_empty() {
            let facts: Vec<String> = st.why.split("; ").map(fact).collect();
            s += &format!("& \\quad\\text{{because }} {}\\\\\n", facts.join(",\\; "));
        }
    }
    s += "\\end{array}$$";
    if let Some(l) = limit_hit {
        s += &format!(
            "\n$$\\text{{stopped early: {} (the result is sound, maybe not simplest)}}$$",
            text_escape(l)
        );
    }
    s
}

/// LaTeX for the values that have it (maps, and maps with their rewrite steps).
pub fn latex(v: &Value) -> Option<String> {
    match v {
        Value::Map(m) => Some(map(m)),
        Value::Explained {
            map: m,
            steps,
            limit_hit,
        } => Some(explained(m, steps, limit_hit.as_deref())),
        _ => None,
    }
}
