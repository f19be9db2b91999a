//! Kernel source from a [`KernelSpec`] and a mapping: CUDA C for GPUs, C for the host
//! compiler on the CPU.
//!
//! One C function per function of the spec (a partition of the fused computation, seed
//! 003); the entry point loops over (CPU) or is launched over (CUDA) the mapping's
//! variables. Index arithmetic comes from the maps:
//!
//! - **simplified** (default): each load's offset is `layout ∘ access ∘ mapping`, composed
//!   and simplified as one map, so a reshape between the loop index and the buffer costs
//!   nothing when the simplifier can see through it (seed 002 keeps the linear index);
//! - **naive**: the mapping's multi-index is computed once (delinearized), each access map is
//!   applied to it, and the result is linearized with the operand's strides: the
//!   linear → multi-dimensional → linear round trip of a straightforward emitter.
//!
//! Every load is preceded by a comment with its map as ixmap prints it. Bounds checks are
//! emitted only for the constraints the (simplified) map keeps.

pub mod cpu;
pub mod cuda;
pub mod cuda_rows;
pub mod gemm;
pub mod types;

use super::spec::{BinOp, Body, ElemType, KernelSpec, UnOp};
use crate::expr::{Expr, ExprKind, Op};
use crate::interval::{range_of, Interval};
use crate::map::IndexingMap;
use crate::simplify::{simplify, SimplifyLimits};
use crate::MapError;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Cpu,
    Cuda,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Cpu => "cpu",
            Target::Cuda => "cuda",
        }
    }
}

/// Emitted source and what it needs to run.
#[derive(Clone, Debug)]
pub struct Emitted {
    pub name: String,
    pub target: Target,
    pub source: String,
    /// The exported entry point (`void NAME(void **args)` on the CPU: inputs, then output).
    pub entry: String,
}

/// A C identifier from a name (`fusion.1` → `fusion_1`).
pub fn c_ident(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        s.insert(0, 'k');
    }
    // A fusion named like a C keyword, a function of <math.h> or CUDA, or one of the
    // emitted helpers (`f1`, `ix_mod`) would clash with it.
    let helper = s.starts_with("ix_")
        || (s.len() > 1 && s.starts_with('f') && s[1..].chars().all(|c| c.is_ascii_digit()));
    if helper || RESERVED.contains(&s.as_str()) || RESERVED.contains(&s.trim_end_matches('f')) {
        s.push_str("_kernel");
    }
    s
}

/// Names an entry point may not take: C keywords and the functions the headers the host
/// compiler or NVRTC see declare (without their `f` suffix).
const RESERVED: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "main",
    "abs",
    "fabs",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "cbrt",
    "rsqrt",
    "pow",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "tanh",
    "asin",
    "acos",
    "atan",
    "atan2",
    "asinh",
    "acosh",
    "atanh",
    "floor",
    "ceil",
    "round",
    "rint",
    "trunc",
    "fmod",
    "remainder",
    "fmax",
    "fmin",
    "max",
    "min",
    "erf",
    "erfc",
    "hypot",
    "copysign",
    "nan",
    "isnan",
    "isinf",
    "signbit",
    "lgamma",
    "tgamma",
    "fma",
    "ldexp",
    "frexp",
    "modf",
    "nearbyint",
    "lround",
    "llround",
    "logb",
    "ilogb",
    "scalbn",
    "exit",
    "malloc",
    "free",
    "memcpy",
    "memset",
    "printf",
    "int64_t",
    "int32_t",
    "uint64_t",
    "uint32_t",
];

thread_local! {
    /// Whether some expression [`c_expr`] wrote since [`index_width_reset`] may leave the
    /// range of a 32-bit `int` (over the bounds of its variables, every subexpression).
    static WIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The values a 32-bit index may take: `int`, less one at the top so `for (i = lo; i <= hi;
/// ++i)` cannot overflow either.
pub const I32_INDEX: Interval = Interval {
    lo: -(i32::MAX as i64),
    hi: i32::MAX as i64 - 1,
};

/// Starts watching the expressions written for one kernel.
pub fn index_width_reset() {
    WIDE.with(|w| w.set(false));
}

/// Records that some index of the kernel needs 64 bits.
pub fn index_width_needs_64() {
    WIDE.with(|w| w.set(true));
}

/// Whether every expression written since [`index_width_reset`] fits in a 32-bit `int`.
pub fn index_width_fits_32() -> bool {
    !WIDE.with(|w| w.get())
}

/// A C expression for `e`, variables named by `names`, plain `/` and `%` where the dividend
/// is known non-negative over `bounds`, helpers with floor semantics elsewhere.
pub fn c_expr(e: Expr, names: &[String], bounds: &[Interval]) -> String {
    let r = range_of(e, bounds);
    if r.lo < I32_INDEX.lo || r.hi > I32_INDEX.hi {
        index_width_needs_64();
    }
    match e.kind() {
        ExprKind::Const(c) => {
            if c.unsigned_abs() > i32::MAX as u64 {
                format!("{c}LL")
            } else {
                c.to_string()
            }
        }
        ExprKind::Var(v) => names
            .get(v as usize)
            .cloned()
            .unwrap_or_else(|| format!("v{v}")),
        ExprKind::Bin(op, a, b) => {
            let (x, y) = (c_expr(a, names, bounds), c_expr(b, names, bounds));
            let nonneg = range_of(a, bounds).lo >= 0 && b.as_const().is_some_and(|k| k > 0);
            match op {
                Op::Add => match b.kind() {
                    ExprKind::Const(k) if k < 0 && k != i64::MIN => format!("{x} - {}", -k),
                    ExprKind::Bin(Op::Mul, m, k) if k.as_const() == Some(-1) => {
                        format!("{x} - {}", paren(&c_expr(m, names, bounds)))
                    }
                    _ => format!("{x} + {y}"),
                },
                Op::Mul => format!("{} * {}", paren(&x), paren(&y)),
                Op::FloorDiv if nonneg => format!("{} / {}", paren(&x), paren(&y)),
                Op::Mod if nonneg => format!("{} % {}", paren(&x), paren(&y)),
                Op::CeilDiv if nonneg => {
                    format!("({} + {} - 1) / {}", paren(&x), paren(&y), paren(&y))
                }
                Op::FloorDiv => format!("ix_floordiv({x}, {y})"),
                Op::Mod => format!("ix_mod({x}, {y})"),
                Op::CeilDiv => format!("ix_ceildiv({x}, {y})"),
                // Inline, so the helpers every kernel carries stay as they are.
                Op::Min => format!("({0} < {1} ? {0} : {1})", paren(&x), paren(&y)),
                Op::Max => format!("({0} < {1} ? {1} : {0})", paren(&x), paren(&y)),
            }
        }
    }
}

fn paren(s: &str) -> String {
    let atomic = s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        || (s.starts_with("ix_") && s.ends_with(')'));
    if atomic {
        s.to_string()
    } else {
        format!("({s})")
    }
}

/// The C condition under which `e` lies outside `iv`, checking only the sides the interval
/// analysis cannot rule out; `None` when the constraint always holds.
pub fn outside(e: Expr, iv: Interval, names: &[String], bounds: &[Interval]) -> Option<String> {
    let r = range_of(e, bounds);
    let x = c_expr(e, names, bounds);
    let mut parts = Vec::new();
    if r.lo < iv.lo {
        parts.push(format!("{} < {}", x, iv.lo));
    }
    if r.hi > iv.hi {
        parts.push(format!("{} > {}", x, iv.hi));
    }
    (!parts.is_empty()).then(|| parts.join(" || "))
}

/// The [`C_HELPERS`] that `body` calls (with `ix_floordiv` when `ix_ceildiv` is called),
/// so no unused function is declared.
pub fn used_helpers(body: &str) -> String {
    let lines: Vec<&str> = C_HELPERS.lines().collect();
    let uses = |name: &str| body.contains(&format!("{name}("));
    let mut out = String::new();
    let ceil = uses("ix_ceildiv");
    for (l, name) in lines.iter().zip(["ix_floordiv", "ix_mod", "ix_ceildiv"]) {
        if uses(name) || (name == "ix_floordiv" && ceil) {
            out += l;
            out.push('\n');
        }
    }
    out
}

/// Whether `word` occurs in `src` as a whole identifier.
pub fn mentions_word(src: &str, word: &str) -> bool {
    let is_id = |c: char| c.is_ascii_alphanumeric() || c == '_';
    src.match_indices(word).any(|(i, _)| {
        !src[..i].chars().next_back().is_some_and(is_id)
            && !src[i + word.len()..].chars().next().is_some_and(is_id)
    })
}

/// The roundings to bf16 and f16 and the stores that round the same way: CUDA's.
pub const CUDA_STORES: [(&str, &str); 2] = [
    ("ix_rbf(", "__float2bfloat16_rn("),
    ("ix_rh(", "__float2half_rn("),
];

/// The host C kernels' ([`types`]: the formats by hand, bit-exact).
pub const C_STORES: [(&str, &str); 2] = [("ix_rbf(", "ix_f2bf("), ("ix_rh(", "ix_f2h(")];

/// Drops the rounding of a 16-bit float value whose one use is its store:
/// `const float v = ix_rbf(E);` read only by `__float2bfloat16_rn(v)` becomes
/// `const float v = E;` (`ix_rh` and `__float2half_rn` alike; `stores` names the pairs,
/// [`CUDA_STORES`] or [`C_STORES`]). The store rounds to the nearest even 16-bit value, and
/// rounding a value already rounded gives it back, so the stored bits are the same for
/// every `E` (NaN included: both give the type's NaN); the kernel loses a conversion and a
/// shift an element (on the CPU, a rounding by hand). A name declared again further on
/// (another function of a host source) counts as another use, so it is left alone.
pub fn drop_rounding_before_stores(
    mut lines: Vec<String>,
    stores: [(&str, &str); 2],
) -> Vec<String> {
    let mentions = |line: &str, name: &str| {
        let code = line.split("//").next().unwrap_or("");
        mentions_word(code, name)
    };
    for (round, store) in stores {
        let mut i = 0;
        while i < lines.len() {
            // `const float NAME = ROUND(INNER);`
            let line = &lines[i];
            let indent = &line[..line.len() - line.trim_start().len()];
            let parsed = line
                .trim_start()
                .strip_prefix("const float ")
                .and_then(|r| r.split_once(" = "))
                .filter(|(n, _)| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                .and_then(|(n, init)| {
                    let inner = init.strip_prefix(round)?.strip_suffix(");")?;
                    Some((n.to_string(), indent.to_string(), inner.to_string()))
                });
            let Some((name, indent, inner)) = parsed else {
                i += 1;
                continue;
            };
            // `inner` must be the whole argument: its parentheses balance and never close
            // the call early.
            let mut depth = 0i64;
            let balanced = inner.chars().all(|c| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                depth >= 0
            }) && depth == 0;
            let uses: Vec<usize> = (i + 1..lines.len())
                .filter(|&j| mentions(&lines[j], &name))
                .collect();
            let stored = format!("{store}{name})");
            let only_stored = uses.len() == 1 && {
                let l = &lines[uses[0]];
                l.matches(&stored).count() == 1 && !mentions(&l.replacen(&stored, "", 1), &name)
            };
            if balanced && only_stored {
                lines[i] = format!("{indent}const float {name} = {inner};");
            }
            i += 1;
        }
    }
    lines
}

/// Host C source finished for its element types: `<stdbool.h>` when it names `bool`, and
/// the type helpers it calls ([`types::helpers`]) after the includes; without the functions
/// nothing calls (an output of a variadic reduction read from the accumulators another
/// output's loop left).
pub fn finish_types(src: String) -> String {
    let src = drop_unreferenced(src, "static ");
    let lines: Vec<String> = src.lines().map(str::to_string).collect();
    let mut src = drop_rounding_before_stores(lines, C_STORES).join("\n");
    src.push('\n');
    let helpers = types::helpers(&src, false);
    let mut head = String::new();
    if mentions_word(&src, "bool") {
        head += "#include <stdbool.h>\n";
    }
    let at = src
        .find("#include <math.h>\n")
        .map(|i| i + "#include <math.h>\n".len());
    if let Some(at) = at {
        src.insert_str(at, &format!("{head}{helpers}"));
    }
    src
}

/// The source without the functions `QUALIFIER TYPE fN(..)` nothing calls (NVRTC warns of
/// each, and the host compiler under `-Wall`): a further reduction of a multi-output fusion
/// is accumulated in the kernel, so its own function (the reduction written as a loop) is
/// not called; a parameter read at run-time starts as one vector (the CUDA loop's shifted
/// vector loads) is not read through its function; an output of a variadic reduction reads
/// the accumulators another output's loop left.
pub fn drop_unreferenced(mut src: String, qualifier: &str) -> String {
    loop {
        let mut dropped = false;
        let mut at = 0;
        while let Some(i) = src[at..].find(qualifier) {
            let start = at + i;
            let line_end = src[start..].find('\n').map_or(src.len(), |e| start + e);
            let decl = &src[start..line_end];
            // `QUALIFIER TYPE fN(`: the function's name.
            let name = decl
                .split_whitespace()
                .find(|w| w.starts_with('f') && w.contains('('))
                .and_then(|w| w.split('(').next())
                .filter(|n| n.len() > 1 && n[1..].chars().all(|c| c.is_ascii_digit()))
                .map(str::to_string);
            let body_end = src[start..].find("\n}\n").map(|e| start + e + 3);
            let (Some(name), Some(end)) = (name, body_end) else {
                at = line_end;
                continue;
            };
            let call = format!("{name}(");
            let elsewhere = src[..start].contains(&call) || src[end..].contains(&call);
            if elsewhere {
                at = end;
                continue;
            }
            // The comment line before the function and the blank line after it go too.
            let from = src[..start]
                .trim_end_matches('\n')
                .rfind('\n')
                .map_or(0, |c| c + 1);
            let from = if src[from..start].trim_start().starts_with("//") {
                from
            } else {
                start
            };
            let to = if src[end..].starts_with('\n') {
                end + 1
            } else {
                end
            };
            src.replace_range(from..to, "");
            dropped = true;
            break;
        }
        if !dropped {
            return src;
        }
    }
}

/// Helpers for floor-semantics division of possibly negative values.
pub const C_HELPERS: &str = "static inline int64_t ix_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int64_t ix_mod(int64_t a, int64_t b) { int64_t r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
static inline int64_t ix_ceildiv(int64_t a, int64_t b) { return -ix_floordiv(-a, b); }
";

/// Index variables in scope: a map from them (dims and loop variables, named as in C) to
/// the current function's index.
#[derive(Clone, Debug)]
pub struct Scope {
    pub ctx: IndexingMap,
}

// Moved below the launch (`gpu::rows`), which decides with it whether a body's
// reductions are per row; the emitters use it from there.
pub use super::rows::substitute;

/// The map with canonical results and its simplification, keeping variable names.
pub fn simplified(m: &IndexingMap) -> IndexingMap {
    if m.is_known_empty() {
        // Its emptiness may rest on nothing the constraints say (an extent of 0).
        return m.clone();
    }
    let canon = IndexingMap::new(
        m.dims.clone(),
        m.ranges.clone(),
        m.runtimes.clone(),
        m.results.clone(),
        m.constraints.clone(),
    );
    simplify(&canon, &SimplifyLimits::default()).map
}

/// Writes the body of functions: statements into `lines`, returning C expressions.
pub struct BodyWriter<'a> {
    pub spec: &'a KernelSpec,
    pub naive: bool,
    pub lines: Vec<String>,
    pub indent: usize,
    tmp: usize,
    /// Loads replaced by another expression (a shared-memory tile), by (input, map).
    pub replaced: Vec<(usize, IndexingMap, String)>,
    /// Run-time-shifted calls ([`Body::DynCall`]) replaced by another expression (an element
    /// of a vector loaded before the loop), by (function, map).
    pub replaced_dyn: Vec<(usize, IndexingMap, String)>,
    /// Loads replaced by another expression (an element of a vector loaded before the
    /// loop), by input and the map from the writer's scope to the input: the same element
    /// whichever function reads it, where [`BodyWriter::inline_calls`] writes the
    /// functions in place.
    pub replaced_at: Vec<(usize, IndexingMap, String)>,
    /// Calls written in place, each function at each index once (a register), rather than
    /// as calls of `f1`, `f2`, ..: set only where every function the body reaches is
    /// straight-line (the CUDA vector loop's `straight_line_loads`), so every register is
    /// in scope wherever a later call of the same function at the same index is written.
    pub inline_calls: bool,
    /// [`BodyWriter::inline_calls`]'s registers, by function and the map from the scope to
    /// its index, with the line the callee's body starts at.
    inlined: Vec<(usize, IndexingMap, String, usize)>,
    /// Every call written in place, as [`BodyWriter::inline_calls`] does, checking that a
    /// register is still in scope before it is read again: set where functions share
    /// callees so deeply ([`deeply_shared`]) that calling `f1`, `f2`, .. would run a
    /// callee once per path to it, exponentially many (threefry's rounds).
    share_calls: bool,
    /// The calls written so far (not in place): function, map from the scope, register
    /// and the line it was written at. A function called twice at the same index in one
    /// body (`add(x, x)` with `x` a function) is called once while its register is in
    /// scope.
    called: Vec<(usize, IndexingMap, String, usize)>,
    /// Host code: remember each reduction's last value by the index it reduces to, so a row
    /// reduction read by every element of the row (softmax) runs once per row. Needs
    /// [`C_EPOCH`] in the source and an entry point that advances it.
    pub memo: bool,
    /// The C type of index variables: `int64_t`, or `int` where every index fits.
    pub index_ty: &'static str,
    /// CUDA spellings of the 16-bit float conversions (`__half2float`, ...), else C's.
    pub cuda: bool,
    /// The function whose body is written (0: the root), for the types of its values.
    pub func: usize,
    /// The registers holding a variadic reduction's reducer arguments while its step is
    /// written ([`Body::Param`]).
    pub args: Vec<String>,
    /// The variadic reductions written so far, with their accumulators: a multi-output
    /// fusion's outputs `#0`, `#1`, .. of one reduction read the same accumulators, so
    /// the reduction runs once per element rather than once per output.
    tuples: Vec<TupleDone>,
}

/// A variadic reduction written by a [`BodyWriter`]: its accumulators `{acc}_k`, declared
/// at line `from` (in scope until the block holding that line closes).
struct TupleDone {
    funcs: Vec<usize>,
    inits: Vec<Body>,
    reducer: Vec<Body>,
    elems: Vec<ElemType>,
    /// The reduction's map from the writer's scope.
    at: IndexingMap,
    acc: String,
    from: usize,
}

/// Whether `a` and `b` are the same map (the simplification flag aside).
fn same_map(a: &IndexingMap, b: &IndexingMap) -> bool {
    a.dims == b.dims
        && a.ranges == b.ranges
        && a.runtimes == b.runtimes
        && a.results == b.results
        && a.constraints == b.constraints
}

/// Whether `b` has the same value wherever it is written: constants and operators over
/// them and over a reducer's arguments ([`Body::Param`]), nothing that reads an index.
fn index_free(b: &Body) -> bool {
    let mut free = true;
    b.visit(&mut |x| {
        free &= matches!(
            x,
            Body::Const(_)
                | Body::Param(..)
                | Body::Unary(..)
                | Body::Binary(..)
                | Body::Convert(..)
                | Body::Compare(..)
                | Body::Select(..)
        )
    });
    free
}

/// Whether register `reg`, declared at or after `lines[from]`, is still in scope after the
/// last line: its declaration is still there (the lines were not moved to another writer),
/// and no block open at `from` has closed since (braces outside `//` comments).
fn still_in_scope(lines: &[String], from: usize, reg: &str) -> bool {
    // `TYPE reg = ..;`, not a later `reg = ..;`.
    let (decl, set) = (format!(" {reg} = "), format!("{reg} = "));
    let declares = |l: &String| l.contains(&decl) && !l.trim_start().starts_with(&set);
    if from > lines.len() || !lines[from..].iter().any(declares) {
        return false;
    }
    let mut depth = 0i64;
    for l in &lines[from..] {
        for c in l.split("//").next().unwrap_or("").chars() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth < 0 {
                        return false;
                    }
                }
                _ => {}
            }
        }
    }
    true
}

/// The most call paths [`deeply_shared`] lets a kernel's functions have before calls are
/// written in place: an ordinary kernel's functions are each reached once or a few times.
const SHARED_PATHS: u64 = 64;

/// Whether the functions' calls (each distinct function and map once per caller) reach
/// some function by more than [`SHARED_PATHS`] paths, and more than twice the number of
/// functions: a chain of rounds each calling the previous two (threefry) doubles the paths
/// each round, and so would the running time of kernels calling `f1`, `f2`, .. .
pub fn deeply_shared(spec: &KernelSpec) -> bool {
    let n = spec.functions.len();
    let bound = SHARED_PATHS.max(2 * n as u64);
    // Paths from each function down (the body itself counting one), saturating; `None`
    // while being computed (a cycle, which the spec never has, counts as not shared).
    fn paths(spec: &KernelSpec, f: usize, memo: &mut Vec<Option<Option<u64>>>) -> u64 {
        match memo[f] {
            Some(Some(p)) => return p,
            Some(None) => return 1,
            None => {}
        }
        memo[f] = Some(None);
        let mut sites: Vec<(usize, IndexingMap)> = Vec::new();
        spec.functions[f].body.visit(&mut |b| {
            if let Body::Call { func, map } = b {
                if *func < spec.functions.len() && !sites.iter().any(|(g, m)| g == func && m == map)
                {
                    sites.push((*func, map.clone()));
                }
            }
        });
        let mut p = 1u64;
        for (g, _) in sites {
            p = p.saturating_add(paths(spec, g, memo));
        }
        memo[f] = Some(Some(p));
        p
    }
    let mut memo = vec![None; n];
    (0..n).any(|f| paths(spec, f, &mut memo) > bound)
}

/// Whether function `func`'s body is a variadic reduction that another function also
/// reduces (another output `#k` of the same reduction, at its own index).
fn shared_tuple(spec: &KernelSpec, func: usize) -> bool {
    let Some(Body::ReduceTuple {
        funcs,
        map,
        inits,
        reducer,
        ..
    }) = spec.functions.get(func).map(|f| &f.body)
    else {
        return false;
    };
    spec.functions.iter().enumerate().any(|(g, f)| {
        let mut found = false;
        if g != func {
            f.body.visit(&mut |b| {
                if let Body::ReduceTuple {
                    funcs: f2,
                    map: m2,
                    inits: i2,
                    reducer: r2,
                    ..
                } = b
                {
                    found |= f2 == funcs && same_map(m2, map) && i2 == inits && r2 == reducer;
                }
            });
        }
        found
    })
}

/// File-scope state of host kernels with memoized reductions: a call counter, so a value
/// remembered in one call of the kernel is never used in the next (the inputs may differ).
pub const C_EPOCH: &str = "static uint64_t ix_epoch;\n";

/// Where [`C_EPOCH`] and its step go in host source; [`finish_epoch`] keeps them only when
/// some reduction is memoized, so kernels without one read as before.
pub const EPOCH_DECL: &str = "/*ix_epoch decl*/\n";
pub const EPOCH_STEP: &str = "  /*ix_epoch step*/\n";

pub fn finish_epoch(src: String) -> String {
    if src.contains("== ix_epoch") {
        src.replace(EPOCH_DECL, C_EPOCH)
            .replace(EPOCH_STEP, "  ++ix_epoch;\n")
    } else {
        src.replace(EPOCH_DECL, "").replace(EPOCH_STEP, "")
    }
}

impl<'a> BodyWriter<'a> {
    pub fn new(spec: &'a KernelSpec, naive: bool, indent: usize) -> BodyWriter<'a> {
        BodyWriter {
            spec,
            naive,
            lines: vec![],
            indent,
            tmp: 0,
            replaced: vec![],
            replaced_dyn: vec![],
            replaced_at: vec![],
            inline_calls: false,
            inlined: vec![],
            share_calls: deeply_shared(spec),
            called: vec![],
            memo: false,
            index_ty: "int64_t",
            cuda: false,
            func: 0,
            args: vec![],
            tuples: vec![],
        }
    }
    pub fn line(&mut self, s: impl AsRef<str>) {
        self.lines
            .push(format!("{}{}", "  ".repeat(self.indent), s.as_ref()));
    }
    /// The index a reduction reduces to, as C expressions in scope: the callee's index
    /// coordinates that do not move with the reduction's own variables. `None` (no memo)
    /// when a coordinate mixes both, or the reduction has conditions of its own on the scope.
    fn memo_key(
        &mut self,
        ctx: &IndexingMap,
        map: &IndexingMap,
        m: &IndexingMap,
    ) -> Result<Option<Vec<String>>, MapError> {
        let first_new = (m.dims.len() + ctx.ranges.len()) as u32;
        let last_new = (m.dims.len() + m.ranges.len()) as u32;
        let is_new = |v: u32| v >= first_new && v < last_new;
        let mut key_results = Vec::new();
        for (j, &r) in m.results.iter().enumerate() {
            let (mut new, mut old) = (false, false);
            r.visit_vars(&mut |v| {
                if is_new(v) {
                    new = true
                } else {
                    old = true
                }
            });
            if new && old {
                return Ok(None);
            }
            if !new {
                key_results.push(j);
            }
        }
        for &(e, _) in &m.constraints[ctx.constraints.len()..] {
            let mut old = false;
            e.visit_vars(&mut |v| old |= !is_new(v));
            if old {
                return Ok(None);
            }
        }
        let codes = self.args(ctx, map)?;
        Ok(Some(
            key_results.into_iter().map(|j| codes[j].clone()).collect(),
        ))
    }

    /// The register that holds function `func` at `at`, written earlier in this body by
    /// [`BodyWriter::remember_call`] and still in scope.
    pub fn reused_call(&self, func: usize, at: &IndexingMap) -> Option<String> {
        self.called
            .iter()
            .rev()
            .find(|(f, m, v, from)| *f == func && m == at && still_in_scope(&self.lines, *from, v))
            .map(|(_, _, v, _)| v.clone())
    }

    /// Writes `value` (function `func` at `at`, whose lines started at line `from`) to a
    /// register of its own, remembered for [`BodyWriter::reused_call`].
    pub fn remember_call(
        &mut self,
        func: usize,
        at: IndexingMap,
        value: String,
        from: usize,
    ) -> String {
        let v = self.fresh("t");
        let ty = types::reg(self.spec.function_elem(func));
        self.line(format!("const {ty} {v} = {value};"));
        self.called.push((func, at, v.clone(), from));
        v
    }

    /// How many lines are written so far.
    pub fn line_count(&self) -> usize {
        self.lines.len()
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.tmp += 1;
        format!("{prefix}{}", self.tmp)
    }
    /// The element type of `b`'s value, `want` for a bare constant.
    fn elem(&self, b: &Body, want: ElemType) -> ElemType {
        self.spec.elem_opt(b).unwrap_or(want)
    }

    /// The C offset of an input element read through `map` from the scope `ctx`, with its
    /// comment lines written.
    pub fn offset(
        &mut self,
        ctx: &IndexingMap,
        map: &IndexingMap,
        strides: &[i64],
        what: &str,
    ) -> Result<String, MapError> {
        let m = substitute(ctx, map)?;
        let shown = simplified(&m);
        self.line(format!("// {what}: {shown}"));
        Ok(linear_offset(self, &m, strides))
    }

    /// The C expressions of a callee's index.
    fn args(&mut self, ctx: &IndexingMap, map: &IndexingMap) -> Result<Vec<String>, MapError> {
        let m = substitute(ctx, map)?;
        let s = simplified(&m);
        Ok(if self.naive || s.status != crate::map::Status::Defined {
            m.results
                .iter()
                .map(|&r| c_expr(r, &m.names(), &m.bounds()))
                .collect()
        } else {
            s.results
                .iter()
                .map(|&r| c_expr(r, &s.names(), &s.bounds()))
                .collect()
        })
    }

    /// A C expression for `b` in scope `ctx`; `params` is the argument list passed to
    /// callees (the input pointers).
    /// One step of a variadic fold: every new accumulator from `args` (the accumulators,
    /// then the step's values) by `reducer`, each into a register of its own, so that all
    /// are replaced at once after; returns the registers.
    fn fold_step(
        &mut self,
        reducer: &[Body],
        elems: &[ElemType],
        args: Vec<String>,
        ctx: &IndexingMap,
        params: &str,
    ) -> Result<Vec<String>, MapError> {
        let saved = std::mem::replace(&mut self.args, args);
        let mut next = Vec::new();
        for (r, &t) in reducer.iter().zip(elems) {
            let x = match self.body_t(r, ctx, params, t) {
                Ok(x) => x,
                Err(e) => {
                    self.args = saved;
                    return Err(e);
                }
            };
            let reg = self.fresh("r");
            self.line(format!("const {} {reg} = {x};", types::reg(t)));
            next.push(reg);
        }
        self.args = saved;
        Ok(next)
    }

    pub fn body(&mut self, b: &Body, ctx: &IndexingMap, params: &str) -> Result<String, MapError> {
        let t = self.spec.elem_of(self.func, b);
        self.body_t(b, ctx, params, t)
    }

    /// [`BodyWriter::body`], a bare constant taking type `want`: the expression is of the
    /// register type of `b`'s element type ([`types::reg`]).
    /// A register holding run-time start `st` clamped into `[0, limit]`, as XLA clamps
    /// each start of a dynamic slice into `[0, dim - slice dim]`.
    pub fn start(
        &mut self,
        st: &Body,
        limit: i64,
        ctx: &IndexingMap,
        params: &str,
    ) -> Result<String, MapError> {
        let et = self.elem(st, ElemType::S64);
        if !et.is_int() {
            return Err(MapError::Other(format!(
                "{}: a start index of type {} (integers are)",
                self.spec.name,
                et.hlo_name()
            )));
        }
        let x = self.body_t(st, ctx, params, et)?;
        let l = limit.max(0);
        let clamped = if et.is_unsigned_int() {
            format!("((uint64_t)({x}) > (uint64_t){l} ? (int64_t){l} : (int64_t)({x}))")
        } else {
            format!(
                "((int64_t)({x}) < 0 ? (int64_t)0 : ((int64_t)({x}) > (int64_t){l} ? (int64_t){l} : (int64_t)({x})))"
            )
        };
        let sv = self.fresh("s");
        self.line(format!("const int64_t {sv} = {clamped};"));
        Ok(sv)
    }

    pub fn body_t(
        &mut self,
        b: &Body,
        ctx: &IndexingMap,
        params: &str,
        want: ElemType,
    ) -> Result<String, MapError> {
        let t = self.elem(b, want);
        Ok(match b {
            Body::Const(c) => types::constant(*c, t),
            Body::Load { input, map } => {
                if let Some((_, _, e)) = self
                    .replaced
                    .iter()
                    .find(|(i, m, _)| i == input && m == map)
                {
                    return Ok(e.clone());
                }
                if !self.replaced_at.is_empty() {
                    let at = substitute(ctx, map)?;
                    if let Some((_, _, e)) = self
                        .replaced_at
                        .iter()
                        .find(|(i, m, _)| i == input && *m == at)
                    {
                        return Ok(e.clone());
                    }
                }
                let t = &self.spec.inputs[*input];
                let strides = t.strides()?;
                let name = format!("p{input}");
                let what = if t.name == name {
                    name.clone()
                } else {
                    format!("{name} ({})", t.name)
                };
                let k = self.offset(ctx, map, &strides, &what)?;
                types::load(t.elem, &format!("{name}[{k}]"), self.cuda)
            }
            Body::Call { func, map } => {
                // Output `#k` of a variadic reduction that another output also reads:
                // written in place, where the reduction is written once.
                if shared_tuple(self.spec, *func) && self.args.is_empty() {
                    let at = substitute(ctx, map)?;
                    let spec = self.spec;
                    let callee = &spec.functions[*func].body;
                    let outer = std::mem::replace(&mut self.func, *func);
                    let x = self.body(callee, &at, params);
                    self.func = outer;
                    return x;
                }
                if self.inline_calls || self.share_calls {
                    let at = substitute(ctx, map)?;
                    let check = self.share_calls && !self.inline_calls;
                    if let Some((_, _, v, _)) = self.inlined.iter().rev().find(|(f, m, v, from)| {
                        f == func && *m == at && (!check || still_in_scope(&self.lines, *from, v))
                    }) {
                        return Ok(v.clone());
                    }
                    let spec = self.spec;
                    let callee = &spec
                        .functions
                        .get(*func)
                        .ok_or_else(|| MapError::Other(format!("no function f{func}")))?
                        .body;
                    let from = self.lines.len();
                    self.line(format!("// f{func} in place at {}", simplified(&at)));
                    let outer = std::mem::replace(&mut self.func, *func);
                    let x = self.body(callee, &at, params);
                    self.func = outer;
                    let x = x?;
                    let v = self.fresh("t");
                    let ty = types::reg(spec.function_elem(*func));
                    self.line(format!("const {ty} {v} = {x};"));
                    self.inlined.push((*func, at, v.clone(), from));
                    return Ok(v);
                }
                let at = substitute(ctx, map)?;
                if let Some((_, _, v, _)) = self.called.iter().rev().find(|(f, m, v, from)| {
                    f == func && *m == at && still_in_scope(&self.lines, *from, v)
                }) {
                    return Ok(v.clone());
                }
                let codes = self.args(ctx, map)?;
                let shown = simplified(&at);
                let from = self.lines.len();
                self.line(format!("// f{func} at {shown}"));
                let v = self.fresh("t");
                let ty = types::reg(self.spec.function_elem(*func));
                self.line(format!(
                    "const {ty} {v} = f{func}({params}{}{});",
                    if codes.is_empty() { "" } else { ", " },
                    codes.join(", ")
                ));
                self.called.push((*func, at, v.clone(), from));
                v
            }
            Body::Reduce {
                op,
                init,
                func,
                map,
            } => {
                let m = substitute(ctx, map)?;
                let shown = simplified(&m);
                let acc = self.fresh("acc");
                let ty = types::reg(t);
                if m.is_known_empty() {
                    // Nothing to reduce (a dimension of extent 0): XLA's result is the
                    // initial value, and no element is read.
                    self.line(format!("// reduce f{func} over nothing: {shown}"));
                    self.line(format!("const {ty} {acc} = {};", types::constant(*init, t)));
                    return Ok(acc);
                }
                let memo = if self.memo {
                    self.memo_key(ctx, map, &m)?
                } else {
                    None
                };
                let memo_name = memo.as_ref().map(|_| self.fresh("memo"));
                if let (Some(keys), Some(mn)) = (&memo, &memo_name) {
                    // Thread-local: the host kernels split their outer loop across threads.
                    let st = "static _Thread_local";
                    let mut decl = format!("{st} uint64_t {mn}_epoch; {st} {ty} {mn}_value;");
                    for k in 0..keys.len() {
                        decl += &format!(" {st} int64_t {mn}_k{k};");
                    }
                    self.line(decl);
                    for (k, code) in keys.iter().enumerate() {
                        self.line(format!("const int64_t {mn}_i{k} = {code};"));
                    }
                    let hit: Vec<String> = std::iter::once(format!("{mn}_epoch == ix_epoch"))
                        .chain((0..keys.len()).map(|k| format!("{mn}_k{k} == {mn}_i{k}")))
                        .collect();
                    self.line(format!("{ty} {acc};"));
                    self.line(format!(
                        "if ({}) {{ {acc} = {mn}_value; }} else {{",
                        hit.join(" && ")
                    ));
                    self.indent += 1;
                    self.line(format!("{acc} = {};", types::constant(*init, t)));
                } else {
                    self.line(format!("{ty} {acc} = {};", types::constant(*init, t)));
                }
                self.line(format!("// reduce f{func} over {shown}"));
                let n_ctx = ctx.num_vars();
                let names = m.names();
                for v in &m.ranges[ctx.ranges.len()..] {
                    if !I32_INDEX.contains_interval(&v.bounds) {
                        index_width_needs_64();
                    }
                    self.line(format!(
                        "for ({3} {0} = {1}; {0} <= {2}; ++{0}) {{",
                        v.name, v.bounds.lo, v.bounds.hi, self.index_ty
                    ));
                    self.indent += 1;
                }
                let _ = n_ctx;
                // Constraints from the reduction's own map (the scope's are checked outside).
                let ctx_constraints = ctx.constraints.len();
                let keep = if self.naive {
                    m.constraints[ctx_constraints..].to_vec()
                } else {
                    shown.constraints.clone()
                };
                let (cn, cb) = if self.naive {
                    (names.clone(), m.bounds())
                } else {
                    (shown.names(), shown.bounds())
                };
                for (e, iv) in keep {
                    if let Some(cond) = outside(e, iv, &cn, &cb) {
                        self.line(format!("if ({cond}) continue;"));
                    }
                }
                let codes = self.args(ctx, map)?;
                let call = format!(
                    "f{func}({params}{}{})",
                    if codes.is_empty() { "" } else { ", " },
                    codes.join(", ")
                );
                self.line(format!("{acc} = {};", types::binary(*op, t, &acc, &call)));
                for _ in &m.ranges[ctx.ranges.len()..] {
                    self.indent -= 1;
                    self.line("}");
                }
                if let (Some(keys), Some(mn)) = (&memo, &memo_name) {
                    let mut store = format!("{mn}_epoch = ix_epoch; {mn}_value = {acc};");
                    for k in 0..keys.len() {
                        store += &format!(" {mn}_k{k} = {mn}_i{k};");
                    }
                    self.line(store);
                    self.indent -= 1;
                    self.line("}");
                }
                acc
            }
            Body::Index { map } => {
                let codes = self.args(ctx, map)?;
                let code = codes
                    .first()
                    .ok_or_else(|| MapError::Other(format!("the index map {map} has no result")))?;
                let v = self.fresh("t");
                self.line(format!("const int64_t {v} = (int64_t)({code});"));
                v
            }
            Body::Guard {
                map,
                then,
                otherwise,
            } => {
                // Only the branch taken runs: a load of `then` may be out of bounds
                // elsewhere.
                let m = substitute(ctx, map)?;
                let (names, bounds) = (m.names(), m.bounds());
                let conds: Vec<String> = m.constraints[ctx.constraints.len()..]
                    .iter()
                    .filter_map(|&(e, iv)| outside(e, iv, &names, &bounds))
                    .map(|c| format!("({c})"))
                    .collect();
                let v = self.fresh("g");
                let ty = types::reg(t);
                self.line(format!("// in the domain of {}", simplified(&m)));
                self.line(format!("{ty} {v};"));
                if m.is_known_empty() {
                    // Never inside (an empty operand): the load is not even written.
                    let y = self.body_t(otherwise, ctx, params, t)?;
                    self.line(format!("{v} = {y};"));
                    return Ok(v);
                }
                let cond = if conds.is_empty() {
                    "1".to_string()
                } else {
                    format!("!({})", conds.join(" || "))
                };
                self.line(format!("if ({cond}) {{"));
                self.indent += 1;
                let x = self.body_t(then, ctx, params, t)?;
                self.line(format!("{v} = {x};"));
                self.indent -= 1;
                self.line("} else {");
                self.indent += 1;
                let y = self.body_t(otherwise, ctx, params, t)?;
                self.line(format!("{v} = {y};"));
                self.indent -= 1;
                self.line("}");
                v
            }
            Body::DynCall {
                func,
                map,
                starts,
                limits,
            } => {
                if let Some((_, _, e)) = self
                    .replaced_dyn
                    .iter()
                    .find(|(f, m, _)| f == func && m == map)
                {
                    return Ok(e.clone());
                }
                let codes = self.args(ctx, map)?;
                if codes.len() != starts.len() || codes.len() != limits.len() {
                    return Err(MapError::Other(format!(
                        "{}: a dynamic slice of rank {} has {} start indices",
                        self.spec.name,
                        codes.len(),
                        starts.len()
                    )));
                }
                let mut at = Vec::new();
                for ((code, st), &l) in codes.iter().zip(starts).zip(limits) {
                    let sv = self.start(st, l, ctx, params)?;
                    at.push(format!("({})(({code}) + {sv})", self.index_ty));
                }
                let shown = simplified(&substitute(ctx, map)?);
                self.line(format!(
                    "// f{func} at {shown}, moved by the run-time starts"
                ));
                let v = self.fresh("t");
                let ty = types::reg(self.spec.function_elem(*func));
                self.line(format!(
                    "const {ty} {v} = f{func}({params}{}{});",
                    if at.is_empty() { "" } else { ", " },
                    at.join(", ")
                ));
                v
            }
            Body::Opaque { op, name, .. } => {
                return Err(MapError::Other(super::reference::no_emitter(op, name)))
            }
            Body::Param(k, _) => self.args.get(*k).cloned().ok_or_else(|| {
                MapError::Other(format!("{}: no reducer argument {k}", self.spec.name))
            })?,
            Body::ReduceTuple {
                inits,
                funcs,
                map,
                reducer,
                which,
                ..
            } => {
                let n = funcs.len();
                if inits.len() != n || reducer.len() != n || *which >= n {
                    return Err(MapError::Other(format!(
                        "{}: a variadic reduction of {n} values with {} inits and {} results",
                        self.spec.name,
                        inits.len(),
                        reducer.len()
                    )));
                }
                let m = substitute(ctx, map)?;
                let elems: Vec<ElemType> = (0..n).map(|k| self.elem(&reducer[k], t)).collect();
                // The same reduction at the same index, written before in a block still
                // open: its accumulators hold every output's value.
                let keyed = self.args.is_empty()
                    && inits.iter().all(index_free)
                    && reducer.iter().all(index_free);
                if keyed {
                    if let Some(d) = self.tuples.iter().find(|d| {
                        d.funcs == *funcs
                            && d.inits == *inits
                            && d.reducer == *reducer
                            && d.elems == elems
                            && same_map(&d.at, &m)
                            && still_in_scope(&self.lines, d.from, &format!("{}_0", d.acc))
                    }) {
                        return Ok(format!("{}_{which}", d.acc));
                    }
                }
                let from = self.lines.len();
                let shown = simplified(&m);
                let acc = self.fresh("acc");
                for k in 0..n {
                    let x = self.body_t(&inits[k], ctx, params, elems[k])?;
                    self.line(format!("{} {acc}_{k} = {x};", types::reg(elems[k])));
                }
                if m.is_known_empty() {
                    // Nothing to reduce: the initial values, and no element read.
                    self.line(format!("// reduce ({n} values) over nothing: {shown}"));
                    return Ok(format!("{acc}_{which}"));
                }
                self.line(format!("// reduce ({n} values) over {shown}"));
                for v in &m.ranges[ctx.ranges.len()..] {
                    if !I32_INDEX.contains_interval(&v.bounds) {
                        index_width_needs_64();
                    }
                    self.line(format!(
                        "for ({3} {0} = {1}; {0} <= {2}; ++{0}) {{",
                        v.name, v.bounds.lo, v.bounds.hi, self.index_ty
                    ));
                    self.indent += 1;
                }
                let keep = if self.naive {
                    m.constraints[ctx.constraints.len()..].to_vec()
                } else {
                    shown.constraints.clone()
                };
                let (cn, cb) = if self.naive {
                    (m.names(), m.bounds())
                } else {
                    (shown.names(), shown.bounds())
                };
                for (e, iv) in keep {
                    if let Some(cond) = outside(e, iv, &cn, &cb) {
                        self.line(format!("if ({cond}) continue;"));
                    }
                }
                let codes = self.args(ctx, map)?;
                let mut args: Vec<String> = (0..n).map(|k| format!("{acc}_{k}")).collect();
                for &f in funcs {
                    let v = self.fresh("v");
                    self.line(format!(
                        "const {} {v} = f{f}({params}{}{});",
                        types::reg(self.spec.function_elem(f)),
                        if codes.is_empty() { "" } else { ", " },
                        codes.join(", ")
                    ));
                    args.push(v);
                }
                let next = self.fold_step(reducer, &elems, args, ctx, params)?;
                for (k, r) in next.iter().enumerate() {
                    self.line(format!("{acc}_{k} = {r};"));
                }
                for _ in &m.ranges[ctx.ranges.len()..] {
                    self.indent -= 1;
                    self.line("}");
                }
                if keyed {
                    self.tuples.push(TupleDone {
                        funcs: funcs.clone(),
                        inits: inits.clone(),
                        reducer: reducer.clone(),
                        elems,
                        at: m,
                        acc: acc.clone(),
                        from,
                    });
                }
                format!("{acc}_{which}")
            }

            Body::Unary(..)
            | Body::Binary(..)
            | Body::Convert(..)
            | Body::Compare(..)
            | Body::Select(..) => {
                let mut scope = InScope {
                    w: self,
                    ctx,
                    params,
                };
                elementwise(&mut scope, b, t)?
            }
        })
    }
}

/// What the body writers share (a kernel's functions here, the host row loops of
/// [`cpu`], the CUDA row normalization of [`cuda_rows`]): how each writes an operand, names
/// a register and emits a statement; [`elementwise`] writes the operators alike for all.
pub(super) trait ScalarWriter {
    fn spec(&self) -> &KernelSpec;
    /// The C expression of `b`, of the register type of its element type (`want` for a
    /// bare constant).
    fn operand(&mut self, b: &Body, want: ElemType) -> Result<String, MapError>;
    /// A register name not used before in the function.
    fn register(&mut self) -> String;
    fn statement(&mut self, s: String);
    /// The C expression of a unary operator (a writer may pick a faster spelling).
    fn unary(&self, op: UnOp, t: ElemType, x: &str) -> Result<String, MapError> {
        types::unary(op, t, x)
    }
}

/// The C expression of the elementwise body `b` (unary, binary, convert, compare, select)
/// of element type `t`: binary operators, comparisons and selects into a register of their
/// own, so each operand is evaluated once and in order.
pub(super) fn elementwise<S: ScalarWriter>(
    s: &mut S,
    b: &Body,
    t: ElemType,
) -> Result<String, MapError> {
    Ok(match b {
        Body::Unary(op, a) => {
            // `is-finite` and `bitcast-convert` read another type than they give.
            let at = match op {
                UnOp::IsFinite | UnOp::BitcastConvert(_) => s.spec().elem_opt(a).unwrap_or(t),
                _ => t,
            };
            let x = s.operand(a, at)?;
            s.unary(*op, at, &x)?
        }
        Body::Binary(op, a, b2) => {
            types::check_binary(*op, t)?;
            let x = s.operand(a, t)?;
            let y = s.operand(b2, t)?;
            let v = s.register();
            s.statement(format!(
                "const {} {v} = {};",
                types::reg(t),
                types::binary(*op, t, &x, &y)
            ));
            v
        }
        Body::Convert(to, a) => {
            if let Body::Const(c) = **a {
                return Ok(types::constant(c, *to));
            }
            let from = s.spec().elem_opt(a).unwrap_or(*to);
            let x = s.operand(a, from)?;
            types::convert(from, *to, &x)
        }
        Body::Compare(dir, a, b2) => {
            let ct = s.spec().compared_elem(a, b2);
            let x = s.operand(a, ct)?;
            let y = s.operand(b2, ct)?;
            let v = s.register();
            s.statement(format!(
                "const bool {v} = {};",
                types::compare(*dir, &x, &y)
            ));
            v
        }
        Body::Select(c, a, b2) => {
            let p = s.operand(c, ElemType::Pred)?;
            let x = s.operand(a, t)?;
            let y = s.operand(b2, t)?;
            let v = s.register();
            s.statement(format!("const {} {v} = {p} ? {x} : {y};", types::reg(t)));
            v
        }
        Body::Const(_)
        | Body::Load { .. }
        | Body::Call { .. }
        | Body::Reduce { .. }
        | Body::Index { .. }
        | Body::Guard { .. }
        | Body::DynCall { .. }
        | Body::Param(..)
        | Body::ReduceTuple { .. }
        | Body::Opaque { .. } => {
            return Err(MapError::Other(format!(
            "{}: a constant, load, call, reduction, index, guard or opaque op is each writer's own",
            s.spec().name
        )))
        }
    })
}

/// [`BodyWriter::body_t`]'s operands, in a scope and with the callees' arguments.
struct InScope<'w, 'a, 'c> {
    w: &'w mut BodyWriter<'a>,
    ctx: &'c IndexingMap,
    params: &'c str,
}

impl ScalarWriter for InScope<'_, '_, '_> {
    fn spec(&self) -> &KernelSpec {
        self.w.spec
    }
    fn operand(&mut self, b: &Body, want: ElemType) -> Result<String, MapError> {
        self.w.body_t(b, self.ctx, self.params, want)
    }
    fn register(&mut self) -> String {
        self.w.fresh("t")
    }
    fn statement(&mut self, s: String) {
        self.w.line(s)
    }
}

pub fn c_float(v: f64, elem: ElemType) -> String {
    if !elem.is_float() {
        // Integers and pred: the constant of that type (C integer syntax).
        return types::constant(v, elem);
    }
    if v.is_nan() {
        return "NAN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 {
            "INFINITY".into()
        } else {
            "-INFINITY".into()
        };
    }
    match elem {
        ElemType::F64 => format!("{v:?}"),
        _ => format!("{:?}f", v as f32),
    }
}

/// The C (and CUDA) spelling of a float function of `x`, computed in `elem` (`f32` or
/// `f64`); `None` for an op that is not a float function (`not`, `popcnt`, ...).
pub fn c_unary(op: UnOp, x: &str, elem: ElemType) -> Option<String> {
    let (f, one) = if elem == ElemType::F32 {
        ("f", "1.0f")
    } else {
        ("", "1.0")
    };
    Some(match op {
        // A negative constant operand in parentheses: `--` would be a decrement.
        UnOp::Neg if x.starts_with('-') => format!("(-({x}))"),
        UnOp::Neg => format!("(-{x})"),
        UnOp::Abs => format!("fabs{f}({x})"),
        UnOp::Exp => format!("exp{f}({x})"),
        UnOp::Log => format!("log{f}({x})"),
        UnOp::Sqrt => format!("sqrt{f}({x})"),
        UnOp::Tanh => format!("tanh{f}({x})"),
        UnOp::Rsqrt => format!("({one} / sqrt{f}({x}))"),
        UnOp::Cbrt => format!("cbrt{f}({x})"),
        UnOp::Expm1 => format!("expm1{f}({x})"),
        UnOp::Log1p => format!("log1p{f}({x})"),
        UnOp::Logistic => format!("({one} / ({one} + exp{f}(-({x}))))"),
        UnOp::Sin => format!("sin{f}({x})"),
        UnOp::Cos => format!("cos{f}({x})"),
        UnOp::Tan => format!("tan{f}({x})"),
        UnOp::Erf => format!("erf{f}({x})"),
        UnOp::Sign => format!("ix_sign_{}({x})", elem.hlo_name()),
        UnOp::Floor => format!("floor{f}({x})"),
        UnOp::Ceil => format!("ceil{f}({x})"),
        UnOp::RoundAfz => format!("round{f}({x})"),
        // Rounding to nearest even: `rint` in the default rounding mode.
        UnOp::RoundEven => format!("rint{f}({x})"),
        UnOp::IsFinite | UnOp::Not | UnOp::Popcnt | UnOp::Clz | UnOp::BitcastConvert(_) => {
            return None
        }
    })
}

/// The C operator or function of `x op y` on `elem` as C computes it (the type rules and
/// the integer semantics are [`types::binary`]'s).
pub fn c_binary(op: BinOp, x: &str, y: &str, elem: ElemType) -> String {
    // XLA's float max and min propagate NaN: `x` when it is NaN, else the comparison picks
    // (and a NaN `y` fails it, giving `y`).
    match op {
        BinOp::Max if elem.is_float() => return format!("({x} > {y} || {x} != {x} ? {x} : {y})"),
        BinOp::Min if elem.is_float() => return format!("({x} < {y} || {x} != {x} ? {x} : {y})"),
        _ => {}
    }
    let f = if elem == ElemType::F32 { "f" } else { "" };
    match op {
        BinOp::Add => format!("{x} + {y}"),
        BinOp::Sub => format!("{x} - {y}"),
        BinOp::Mul => format!("{x} * {y}"),
        BinOp::Div => format!("{x} / {y}"),
        BinOp::Max => format!("({x} > {y} ? {x} : {y})"),
        BinOp::Min => format!("({x} < {y} ? {x} : {y})"),
        BinOp::Rem => format!("{x} % {y}"),
        BinOp::Pow => format!("pow{f}({x}, {y})"),
        BinOp::Atan2 => format!("atan2{f}({x}, {y})"),
        BinOp::And => format!("({x} & {y})"),
        BinOp::Or => format!("({x} | {y})"),
        BinOp::Xor => format!("({x} ^ {y})"),
        BinOp::Shl => format!("({x} << {y})"),
        BinOp::ShrA | BinOp::ShrL => format!("({x} >> {y})"),
    }
}

/// Parameter declarations of the input pointers: `const float *restrict p0, ...`.
pub fn input_params(spec: &KernelSpec, restrict: &str) -> Vec<String> {
    spec.inputs
        .iter()
        .enumerate()
        // `__restrict__` is CUDA's spelling: there the 16-bit floats are `__half`, ...
        .map(|(k, t)| {
            let ty = types::mem(t.elem, restrict == "__restrict__");
            format!("const {ty} *{restrict} p{k}")
        })
        .collect()
}

/// One C function per non-root function of the spec: `f1(p0, .., d0, d1)`.
pub fn helper_functions(
    spec: &KernelSpec,
    naive: bool,
    qualifier: &str,
    restrict: &str,
    memo: bool,
    index_ty: &'static str,
) -> Result<Vec<String>, MapError> {
    let mut out = Vec::new();
    let params: String = (0..spec.inputs.len())
        .map(|k| format!("p{k}"))
        .collect::<Vec<_>>()
        .join(", ");
    // Callees first, so C sees each function before its callers.
    for i in callees_first(spec) {
        let f = &spec.functions[i];
        let ctx = IndexingMap::identity(&f.dims);
        let mut w = BodyWriter::new(spec, naive, 1);
        w.memo = memo;
        w.index_ty = index_ty;
        w.func = i;
        w.cuda = qualifier.contains("__device__");
        let ty = types::reg(spec.function_elem(i));
        if f.dims.iter().any(|&n| n - 1 > I32_INDEX.hi) {
            index_width_needs_64();
        }
        let e = w.body(&f.body, &ctx, &params)?;
        let mut decl = input_params(spec, restrict);
        decl.extend((0..f.dims.len()).map(|d| format!("{index_ty} d{d}")));
        let mut s = format!(
            "// {}: one element of partition {i}, at its index (d0, ..)\n",
            f.name
        );
        s += &format!("{qualifier}{ty} f{i}({}) {{\n", decl.join(", "));
        for l in &w.lines {
            s += l;
            s.push('\n');
        }
        s += &format!("  return {e};\n}}\n");
        out.push(s);
    }
    Ok(out)
}

/// The functions but the root, each after every function it calls: by decreasing number
/// (the adapter numbers a callee after its first caller), with a function moved after a
/// callee numbered below it (an operand of a tuple or a concatenate that another calls).
fn callees_first(spec: &KernelSpec) -> Vec<usize> {
    let n = spec.functions.len();
    let calls: Vec<Vec<usize>> = spec
        .functions
        .iter()
        .map(|f| {
            let mut c = Vec::new();
            f.body.visit(&mut |b| {
                if let Body::Call { func, .. }
                | Body::Reduce { func, .. }
                | Body::DynCall { func, .. } = b
                {
                    c.push(*func);
                }
                if let Body::ReduceTuple { funcs, .. } = b {
                    c.extend(funcs.iter().copied());
                }
            });
            c
        })
        .collect();
    let mut done = vec![false; n];
    let mut order = Vec::new();
    // Each pass emits, in decreasing number, every function whose callees are all out; a
    // cycle (which the spec never has) ends the loop with the rest in decreasing order.
    loop {
        let mut progress = false;
        for i in (1..n).rev() {
            if !done[i] && calls[i].iter().all(|&c| c == 0 || c == i || done[c]) {
                done[i] = true;
                order.push(i);
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    order.extend((1..n).rev().filter(|&i| !done[i]));
    order
}

/// An op with no emitter yet ([`Body::Opaque`]) is refused by every emitter, naming it;
/// the analyses (indexing, launches, coalescing) take the spec as it is.
pub fn refuse_opaque(spec: &KernelSpec) -> Result<(), MapError> {
    for f in &spec.functions {
        if let Some((op, name)) = f.body.opaque() {
            return Err(MapError::Other(super::reference::no_emitter(&op, &name)));
        }
    }
    Ok(())
}

/// A kernel for an output without elements (a zero-sized dimension) computes nothing: the
/// emitters refuse it with this error rather than write index arithmetic that divides by
/// the zero extent.
pub fn refuse_empty(spec: &KernelSpec) -> Result<(), MapError> {
    refuse_opaque(spec)?;
    if spec.output.dims.contains(&0) {
        return Err(MapError::Other(format!(
            "`{}` has no output elements ({}): there is nothing to emit",
            spec.name,
            spec.output.shape_text()
        )));
    }
    Ok(())
}

/// The C offset at which a thread stores into an output with `strides`, from the thread-id
/// map `m` (which may have runtime variables, named as C variables in scope: the clamped
/// start indices of a dynamic-update-slice), with its comment line written. Naive: the
/// linearization of `m`'s results as they are; else the simplified linear offset.
pub fn store_offset(
    w: &mut BodyWriter,
    m: &IndexingMap,
    strides: &[i64],
    what: &str,
) -> Result<String, MapError> {
    w.line(format!("// {what}: {m}"));
    Ok(linear_offset(w, m, strides))
}

/// Writes `const <index type> kN = <offset>;` for the element `m` reaches in a tensor with
/// `strides` and returns `kN`. Naive: the linearization of `m`'s results as they are; else
/// the simplified linear offset (the linearization when it does not simplify).
fn linear_offset(w: &mut BodyWriter, m: &IndexingMap, strides: &[i64]) -> String {
    let lin = Expr::linear_combination(&m.results, strides);
    let code = if w.naive {
        c_expr(lin, &m.names(), &m.bounds())
    } else {
        let mut lm = m.clone();
        lm.results = vec![lin];
        let s = simplified(&lm);
        match s.results.first() {
            Some(&e) if s.status == crate::map::Status::Defined => {
                c_expr(e, &s.names(), &s.bounds())
            }
            _ => c_expr(lin, &m.names(), &m.bounds()),
        }
    };
    let v = w.fresh("k");
    w.line(format!("const {} {v} = {code};", w.index_ty));
    v
}

/// The value of function `func` at the index `ctx` gives: function 0's body written in
/// place (it has no C function of its own), any other a call of its C function.
pub fn function_value(
    w: &mut BodyWriter,
    func: usize,
    ctx: &IndexingMap,
    params: &str,
) -> Result<String, MapError> {
    let spec = w.spec;
    let f = spec
        .functions
        .get(func)
        .ok_or_else(|| MapError::Other(format!("no function {func}")))?;
    if func == 0 {
        w.body(&f.body, ctx, params)
    } else {
        w.body(
            &Body::Call {
                func,
                map: IndexingMap::identity(&f.dims),
            },
            ctx,
            params,
        )
    }
}

/// Parameter declarations of the outputs: `float *restrict out`, then `out1, ..` for the
/// further outputs of a tuple root.
pub fn output_params(spec: &KernelSpec, restrict: &str) -> Vec<String> {
    spec.outputs()
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let n = if k == 0 {
                "out".to_string()
            } else {
                format!("out{k}")
            };
            // `__restrict__` is CUDA's spelling: there the 16-bit floats are `__half`, ...
            let ty = types::mem(t.elem, restrict == "__restrict__");
            format!("{ty} *{restrict} {n}")
        })
        .collect()
}

/// The clamped start indices of a dynamic-update-slice, as C declarations of `rt0, ..`
/// (the runtime variables of its thread → output map): start `d` read from its scalar
/// input, clamped to `[0, dim - update_dim]` (XLA's semantics).
pub fn dus_starts(spec: &KernelSpec, index_ty: &str) -> Vec<String> {
    let crate::gpu::spec::Root::DynamicUpdateSlice {
        starts, computed, ..
    } = &spec.root
    else {
        return vec![];
    };
    let params: String = (0..spec.inputs.len())
        .map(|k| format!("p{k}"))
        .collect::<Vec<_>>()
        .join(", ");
    let upd = spec
        .functions
        .first()
        .map(|f| f.dims.clone())
        .unwrap_or_default();
    starts
        .iter()
        .enumerate()
        .map(|(d, &k)| {
            let hi = spec.output.dims.get(d).copied().unwrap_or(1) - upd.get(d).copied().unwrap_or(1);
            if let Some(&Some(f)) = computed.get(d) {
                // Computed in the fusion: clamped in its own type (a large start could
                // wrap into the bounds once narrowed).
                let v = format!("f{f}({params})");
                return if spec.function_elem(f).is_unsigned_int() {
                    format!("const {index_ty} rt{d} = (uint64_t)({v}) > (uint64_t){hi} ? {hi} : ({index_ty})({v});")
                } else {
                    format!("const {index_ty} rt{d} = (int64_t)({v}) < 0 ? 0 : ((int64_t)({v}) > (int64_t){hi} ? {hi} : ({index_ty})({v}));")
                };
            }
            // An unsigned start is never below 0 (and a compiler warns of the comparison).
            if spec.inputs.get(k).is_some_and(|t| t.elem.is_unsigned_int()) {
                format!("const {index_ty} rt{d} = p{k}[0] > {hi}u ? {hi} : ({index_ty})p{k}[0];")
            } else {
                format!(
                    "const {index_ty} rt{d} = p{k}[0] < 0 ? 0 : (p{k}[0] > {hi} ? {hi} : ({index_ty})p{k}[0]);"
                )
            }
        })
        .collect()
}

/// A scatter's start indices for the update element at the scope's index: for each entry
/// of the index vector, `rt<o>` read from the indices (operand dimension `o`), and a
/// `continue` that skips the update unless its window fits (XLA's semantics). The scope
/// must be inside a loop (or a `do { } while (0)`).
///
/// Every entry is read before any is checked, and one `continue` checks them all: a check
/// between two reads makes the second wait for the first (a branch the compiler does not
/// hoist a load over), so a 4-entry index vector took four trips to memory in a row.
/// Reading an entry is safe whatever the others hold: its place in the indices depends
/// only on the update's index, and a computed entry's function is total.
pub fn scatter_starts(w: &mut BodyWriter, ctx: &IndexingMap) -> Result<(), MapError> {
    let spec = w.spec;
    let (
        Some(g),
        crate::gpu::spec::Root::Scatter {
            indices,
            indices_func,
            ..
        },
    ) = (spec.scatter_geometry(), &spec.root)
    else {
        return Err(MapError::Other(format!("{} is not a scatter", spec.name)));
    };
    let names = ctx.names();
    let bounds = ctx.bounds();
    let batch: Vec<Expr> = g.batch.iter().map(|&j| ctx.results[j]).collect();
    // The conditions that skip the update, and the starts' declarations, written after
    // every entry is read.
    let mut outside: Vec<String> = Vec::new();
    let mut starts: Vec<String> = Vec::new();
    if let Some(f) = *indices_func {
        // Computed indices: the function's value at the index vector's entry, checked in
        // its own type (a large one could wrap into the bounds once narrowed).
        let et = spec.function_elem(f);
        let idims = spec.functions[f].dims.clone();
        for (k, &o) in g.starts.iter().enumerate() {
            let at = g.indices_index(&batch, Expr::constant(k as i64));
            let mut here = ctx.clone();
            here.results = at;
            let call = Body::Call {
                func: f,
                map: IndexingMap::identity(&idims),
            };
            w.line(format!(
                "// start of operand dimension {o}, index vector entry {k}: computed"
            ));
            let params: String = (0..spec.inputs.len())
                .map(|i| format!("p{i}"))
                .collect::<Vec<_>>()
                .join(", ");
            let v = w.body_t(&call, &here, &params, et)?;
            let hi = spec.output.dims[o] - g.window[o].1;
            if !et.is_int() {
                return Err(MapError::Other(format!(
                    "{}: scatter indices of type {}",
                    spec.name,
                    et.hlo_name()
                )));
            }
            if !et.is_unsigned_int() {
                outside.push(format!("{v} < 0"));
            }
            let hi_c = if et.is_unsigned_int() {
                format!("(uint64_t){hi}")
            } else {
                format!("(int64_t){hi}")
            };
            outside.push(format!("{v} > {hi_c}"));
            starts.push(format!("const {} rt{o} = ({}){v};", w.index_ty, w.index_ty));
        }
        check_starts(w, &outside, &starts);
        return Ok(());
    }
    let it = &spec.inputs[*indices];
    let strides = it.strides()?;
    for (k, &o) in g.starts.iter().enumerate() {
        let at = g.indices_index(&batch, Expr::constant(k as i64));
        let lin = Expr::linear_combination(&at, &strides);
        let code = if w.naive {
            c_expr(lin, &names, &bounds)
        } else {
            let mut lm = ctx.clone();
            lm.results = vec![lin];
            let sm = simplified(&lm);
            match sm.results.first() {
                Some(&e) if sm.status == crate::map::Status::Defined => {
                    c_expr(e, &sm.names(), &sm.bounds())
                }
                _ => c_expr(lin, &names, &bounds),
            }
        };
        let hi = spec.output.dims[o] - g.window[o].1;
        let mut shown = ctx.clone();
        shown.results = at.clone();
        w.line(format!(
            "// start of operand dimension {o}, index vector entry {k}: p{indices} at {}",
            simplified(&shown)
        ));
        if it.elem.bytes() == 8 && !w.index_ty.contains("64") {
            // A 64-bit index is checked in its own type: narrowed first, a large one could
            // wrap into the bounds.
            w.line(format!(
                "const {} rtv{o} = p{indices}[{code}];",
                it.elem.c_name()
            ));
            if !it.elem.is_unsigned_int() {
                outside.push(format!("rtv{o} < 0"));
            }
            outside.push(format!("rtv{o} > {hi}"));
            starts.push(format!(
                "const {} rt{o} = ({})rtv{o};",
                w.index_ty, w.index_ty
            ));
        } else {
            w.line(format!("const {} rt{o} = p{indices}[{code}];", w.index_ty));
            outside.push(format!("rt{o} < 0 || rt{o} > {hi}"));
        }
    }
    check_starts(w, &outside, &starts);
    Ok(())
}

/// One `continue` for all of a scatter's start conditions, then the starts that need the
/// check first (a narrowing from the indices' own type).
fn check_starts(w: &mut BodyWriter, outside: &[String], starts: &[String]) {
    if !outside.is_empty() {
        w.line(format!("if ({}) continue;", outside.join(" || ")));
    }
    for s in starts {
        w.line(s.clone());
    }
}

/// The statement combining `v` (a register value of `elem`, see [`types`]) into `target`
/// (an lvalue of `elem`'s memory type) with `op`, with the reference's arithmetic
/// ([`types::binary`]): plain on the CPU (its scatter loop runs on one thread); on the GPU
/// `atomicAdd` for an add of f32, f64 or s32, else a compare-and-swap loop, since several
/// updates may land on one element. A type of 1 or 2 bytes is swapped within the aligned
/// 32-bit word that holds it (CUDA has no narrower compare-and-swap on every GPU).
pub fn combine_store(op: BinOp, elem: ElemType, target: &str, v: &str, cuda: bool) -> String {
    let combined = |cur: &str| {
        types::store(
            elem,
            &types::binary(op, elem, &types::load(elem, cur, cuda), v),
            cuda,
        )
    };
    if !cuda {
        return format!("{target} = {};", combined(target));
    }
    if op == BinOp::Add && matches!(elem, ElemType::F32 | ElemType::F64 | ElemType::S32) {
        return format!("atomicAdd(&{target}, {v});");
    }
    let mem = types::mem(elem, true);
    if elem.bytes() < 4 {
        // The element's bits within its word, and back: `__ushort_as_half`, ... for the
        // 16-bit floats, a cast for the rest (`pred` is a byte of 0 or 1).
        let (mask, from_bits, to_bits) = match elem {
            ElemType::F16 => (
                "0xffffu",
                "__ushort_as_half((unsigned short)(x))".to_string(),
                "(unsigned)__half_as_ushort(y)".to_string(),
            ),
            ElemType::BF16 => (
                "0xffffu",
                "__ushort_as_bfloat16((unsigned short)(x))".to_string(),
                "(unsigned)__bfloat16_as_ushort(y)".to_string(),
            ),
            ElemType::Pred => (
                "0xffu",
                "((x) != 0u)".to_string(),
                "(unsigned)(y)".to_string(),
            ),
            _ => (
                if elem.bytes() == 1 {
                    "0xffu"
                } else {
                    "0xffffu"
                },
                format!("({mem})(x)"),
                format!(
                    "((unsigned)(y) & {})",
                    if elem.bytes() == 1 {
                        "0xffu"
                    } else {
                        "0xffffu"
                    }
                ),
            ),
        };
        let from = from_bits
            .replace("(x)", "((seen >> sh) & MASK)")
            .replace("MASK", mask);
        let to = to_bits.replace("(y)", "(nv)");
        return format!(
            "{{ unsigned *a = (unsigned *)((unsigned long long)&{target} & ~3ull); const unsigned sh = (unsigned)((unsigned long long)&{target} & 3ull) * 8u; unsigned old = *a, seen; do {{ seen = old; const {mem} cur = {from}; const {mem} nv = {}; old = atomicCAS(a, seen, (seen & ~({mask} << sh)) | ({to} << sh)); }} while (seen != old); }}",
            combined("cur")
        );
    }
    let (ity, to_bits, from_bits) = match elem {
        ElemType::F64 => (
            "unsigned long long",
            "__double_as_longlong",
            "__longlong_as_double",
        ),
        ElemType::F32 => ("int", "__float_as_int", "__int_as_float"),
        ElemType::S64 | ElemType::U64 => ("unsigned long long", "", ""),
        _ => ("int", "", ""),
    };
    // An integer's bits are the value, cast to the element type.
    let cur = if elem.is_int() {
        format!("({mem})(seen)")
    } else {
        format!("{from_bits}(seen)")
    };
    format!(
        "{{ {ity} *a = ({ity} *)&{target}; {ity} old = *a, seen; do {{ seen = old; old = atomicCAS(a, seen, ({ity}){to_bits}({})); }} while (seen != old); }}",
        types::binary(op, elem, &cur, v)
    )
}

/// Further output `n` of a tuple root (`out{n + 1}`) written at the index `ctx` gives for
/// it (see [`more_output_scope`]): its function's value there, stored through its layout.
pub fn store_more_output(
    w: &mut BodyWriter,
    n: usize,
    ctx: &IndexingMap,
    params: &str,
) -> Result<(), MapError> {
    let spec = w.spec;
    let o = spec
        .more_outputs
        .get(n)
        .ok_or_else(|| MapError::Other(format!("no output {}", n + 1)))?;
    let v = function_value(w, o.func, ctx, params)?;
    let k = w.offset(
        ctx,
        &IndexingMap::identity(&o.tensor.dims),
        &o.tensor.strides()?,
        &format!("out{}", n + 1),
    )?;
    let stored = types::store(o.tensor.elem, &v, w.cuda);
    w.line(format!("out{}[{k}] = {stored};", n + 1));
    Ok(())
}

/// The scope of a further output from a scope `ctx` over output 0's index: `ctx` then the
/// output's map (the identity, a transpose's permutation, a bitcast).
pub fn more_output_scope(
    ctx: &IndexingMap,
    o: &crate::gpu::spec::MoreOutput,
) -> Result<IndexingMap, MapError> {
    if o.is_side_of_reduction() {
        return Err(MapError::Other(format!(
            "{} is a side output of a reduction: it is written where the reduction reads",
            o.tensor.name
        )));
    }
    substitute(ctx, &o.map)
}

#[cfg(test)]
mod tests {
    use super::{drop_rounding_before_stores, still_in_scope, CUDA_STORES, C_STORES};

    fn lines(s: &[&str]) -> Vec<String> {
        s.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn accumulators_are_reused_only_while_their_block_is_open() {
        let open = lines(&[
            "  float acc1_0 = 0.0f;",
            "  for (int s0 = 0; s0 <= 1; ++s0) {",
            "    acc1_0 = acc1_0 + v2; // {",
            "  }",
            "  if (c) {",
            "    out[k] = acc1_0;",
        ]);
        assert!(still_in_scope(&open, 0, "acc1_0"));
        let mut sibling = open.clone();
        sibling.push("  } else {".into());
        assert!(
            still_in_scope(&sibling, 0, "acc1_0"),
            "the declaring block is open"
        );
        let mut closed = open.clone();
        closed.extend(lines(&["  }", "}", "{"]));
        assert!(!still_in_scope(&closed, 0, "acc1_0"));
        let mut inner = lines(&["  if (c) {"]);
        inner.extend(open.clone());
        inner.extend(lines(&["  }", "  }"]));
        assert!(
            !still_in_scope(&inner, 1, "acc1_0"),
            "declared in a closed block"
        );
        assert!(!still_in_scope(&open, 1, "acc1_0"), "moved declarations");
        assert!(!still_in_scope(&open, 7, "acc1_0"));
    }

    /// The rounding goes only where the store is the value's one use and the rounding is
    /// the whole initializer.
    #[test]
    fn a_rounding_the_store_repeats_is_dropped() {
        let cuda = |l: Vec<String>| drop_rounding_before_stores(l, CUDA_STORES);
        let out = cuda(lines(&[
            "  const float v8 = ix_rbf(ix_rbf(v6) * g);",
            "  // v8 in a comment is not a use",
            "  o[u] = __float2bfloat16_rn(v8);",
            "  const float h = ix_rh(a * b);",
            "  oh[u] = __float2half_rn(h);",
        ]));
        assert_eq!(out[0], "  const float v8 = ix_rbf(v6) * g;");
        assert_eq!(out[3], "  const float h = a * b;");
        // Read elsewhere too, stored twice, not the whole initializer, or stored as the
        // other type: kept.
        for kept in [
            vec![
                "const float v = ix_rbf(a * b);",
                "o[0] = __float2bfloat16_rn(v);",
                "s = s + v;",
            ],
            vec![
                "const float v = ix_rbf(a * b);",
                "o[0] = __float2bfloat16_rn(v); o[1] = __float2bfloat16_rn(v);",
            ],
            vec![
                "const float v = ix_rbf(a) + ix_rbf(b);",
                "o[0] = __float2bfloat16_rn(v);",
            ],
            vec![
                "const float v = ix_rbf(a * b);",
                "o[0] = __float2half_rn(v);",
            ],
            vec![
                "const float v = ix_rbf(a * b);",
                "o[0] = __float2bfloat16_rn(v * 2.0f);",
            ],
        ] {
            let l = lines(&kept);
            assert_eq!(cuda(l.clone()), l);
        }
        // The host C kernels' stores (the formats by hand) alike.
        let c = drop_rounding_before_stores(
            lines(&["const float t3 = ix_rbf(a * b);", "out[k] = ix_f2bf(t3);"]),
            C_STORES,
        );
        assert_eq!(c[0], "const float t3 = a * b;");
    }
}
