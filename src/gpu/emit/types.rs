//! Element types in emitted C and CUDA: how a value of each [`ElemType`] is held, loaded,
//! stored, converted, and computed, with the semantics the reference evaluator has
//! (`reference.rs`), exactly:
//!
//! - values live in *registers* of the type's arithmetic: `f16` and `bf16` as `float`
//!   (loaded with `__half2float` / `__bfloat162float`, or our bit-exact C versions
//!   `ix_h2f` / `ix_bf2f`), rounded to the 16-bit type after every operation (`ix_rh`,
//!   `ix_rbf`: round to nearest even and back), stored with `__float2half_rn` /
//!   `__float2bfloat16_rn` (`ix_f2h` / `ix_f2bf` in C);
//! - integer `+ - *` wrap: computed in the unsigned type of the width (at least 32 bits, so
//!   C's promotion to `int` cannot overflow) and converted back; `/` and `%` by helpers with
//!   XLA's semantics (`x / 0 = -1`, `x % 0 = x`, `MIN / -1 = MIN`, `MIN % -1 = 0`);
//! - the integer ops with edge cases are helpers with XLA's semantics: shifts by the width
//!   or more (`ix_shl_T`, `ix_shra_T`, `ix_shrl_T`), `ix_pow_T` (wrapping; a negative
//!   exponent truncates), `ix_popcnt_T` and `ix_clz_T` (the type's own width, `clz(0)` the
//!   width), `ix_sign_T`; `ix_bc_A_B` reinterprets bits (bitcast-convert);
//! - float → integer conversion saturates, NaN gives 0 (`ix_f2i_T`); a `double` reaches
//!   `f16`/`bf16` through `ix_d2f_odd` (round to odd in `float`, then one rounding to the
//!   16-bit type: no double-rounding error).

use crate::gpu::spec::{BinOp, CmpDir, ElemType, UnOp};
use crate::MapError;

/// The C type a value of `t` is computed in.
pub fn reg(t: ElemType) -> &'static str {
    match t {
        ElemType::F16 | ElemType::BF16 => "float",
        _ => t.c_name(),
    }
}

/// The type an element of `t` has in memory, in CUDA (`__half`, `__nv_bfloat16`) or C.
pub fn mem(t: ElemType, cuda: bool) -> &'static str {
    if cuda {
        t.cuda_name()
    } else {
        t.c_name()
    }
}

/// The unsigned type integer arithmetic on `t` wraps in.
fn wrap_ty(t: ElemType) -> &'static str {
    if t.bytes() == 8 {
        "uint64_t"
    } else {
        "uint32_t"
    }
}

/// A register value from the element `raw` (an lvalue of the memory type).
pub fn load(t: ElemType, raw: &str, cuda: bool) -> String {
    match (t, cuda) {
        (ElemType::F16, true) => format!("__half2float({raw})"),
        (ElemType::BF16, true) => format!("__bfloat162float({raw})"),
        (ElemType::F16, false) => format!("ix_h2f({raw})"),
        (ElemType::BF16, false) => format!("ix_bf2f({raw})"),
        _ => raw.to_string(),
    }
}

/// The memory value of the register value `v`.
pub fn store(t: ElemType, v: &str, cuda: bool) -> String {
    match (t, cuda) {
        (ElemType::F16, true) => format!("__float2half_rn({v})"),
        (ElemType::BF16, true) => format!("__float2bfloat16_rn({v})"),
        (ElemType::F16, false) => format!("ix_f2h({v})"),
        (ElemType::BF16, false) => format!("ix_f2bf({v})"),
        _ => v.to_string(),
    }
}

/// `x` (a `float`) rounded to `t` when `t` is a 16-bit float.
fn round16(t: ElemType, x: String) -> String {
    match t {
        ElemType::F16 => format!("ix_rh({x})"),
        ElemType::BF16 => format!("ix_rbf({x})"),
        _ => x,
    }
}

/// The smallest value of a signed type, as a C expression of that type.
fn min_literal(t: ElemType) -> &'static str {
    match t {
        ElemType::S8 => "(int8_t)(-128)",
        ElemType::S16 => "(int16_t)(-32768)",
        ElemType::S32 => "(-2147483647 - 1)",
        _ => "(-9223372036854775807LL - 1)",
    }
}

/// A constant `v` of type `t` as a C expression of its register type.
pub fn constant(v: f64, t: ElemType) -> String {
    use crate::gpu::reference::{convert, Scalar};
    let s = convert(ElemType::F64, t, Scalar::F(v));
    match (t, s) {
        (ElemType::F64, _) => super::c_float(v, ElemType::F64),
        (_, Scalar::F(x)) => super::c_float(x, ElemType::F32),
        (ElemType::Pred, Scalar::I(i)) => format!("{}", (i != 0) as i32),
        (ElemType::S64, Scalar::I(i)) if i == i64::MIN => min_literal(t).into(),
        (ElemType::S64, Scalar::I(i)) => format!("{i}LL"),
        (ElemType::U64, Scalar::I(i)) => format!("{}ULL", i as u64),
        (ElemType::U32, Scalar::I(i)) => format!("{i}u"),
        (ElemType::S32, Scalar::I(i)) if i == i32::MIN as i64 => min_literal(t).into(),
        (ElemType::S32, Scalar::I(i)) => format!("{i}"),
        (_, Scalar::I(i)) => format!("({}){i}", t.c_name()),
    }
}

fn not_for(what: &str, t: ElemType) -> MapError {
    MapError::Other(format!(
        "{what} is not defined on {}: the kernel is not emitted",
        t.hlo_name()
    ))
}

/// The unsigned C type of `t`'s width.
fn unsigned_of(t: ElemType) -> &'static str {
    match t.bytes() {
        1 => "uint8_t",
        2 => "uint16_t",
        4 => "uint32_t",
        _ => "uint64_t",
    }
}

/// The signed C type of `t`'s width.
fn signed_of(t: ElemType) -> &'static str {
    match t.bytes() {
        1 => "int8_t",
        2 => "int16_t",
        4 => "int32_t",
        _ => "int64_t",
    }
}

/// `op x` for a value `x` of type `t` (the operand's type; the result has
/// [`UnOp::result_elem`]).
pub fn unary(op: UnOp, t: ElemType, x: &str) -> Result<String, MapError> {
    op.check(t)
        .map_err(|e| MapError::Other(format!("{e}: the kernel is not emitted")))?;
    if let UnOp::BitcastConvert(to) = op {
        if to == t {
            return Ok(x.to_string());
        }
        return Ok(format!("ix_bc_{}_{}({x})", t.hlo_name(), to.hlo_name()));
    }
    if t.is_float() {
        if op == UnOp::IsFinite {
            // Not NaN (the comparison fails) and not infinite: no libm macro needed.
            return Ok(if t == ElemType::F64 {
                format!("(fabs({x}) <= 1.7976931348623157e308)")
            } else {
                format!("(fabsf({x}) <= 3.40282347e38f)")
            });
        }
        let e = super::c_unary(op, x, t.arith()).ok_or_else(|| not_for(op.hlo_name(), t))?;
        return Ok(round16(t, e));
    }
    let w = wrap_ty(t);
    let c = t.c_name();
    let neg = format!("({c})(0u - ({w}){x})");
    let n = t.hlo_name();
    match op {
        UnOp::Neg => Ok(neg),
        UnOp::Abs if t.is_unsigned_int() => Ok(x.to_string()),
        UnOp::Abs => Ok(format!("({x} < 0 ? {neg} : {x})")),
        UnOp::Sign => Ok(format!("ix_sign_{n}({x})")),
        UnOp::Not if t == ElemType::Pred => Ok(format!("(!{x})")),
        UnOp::Not => Ok(format!("({c})(~{x})")),
        UnOp::Popcnt => Ok(format!("ix_popcnt_{n}({x})")),
        UnOp::Clz => Ok(format!("ix_clz_{n}({x})")),
        _ => Err(not_for(op.hlo_name(), t)),
    }
}

/// An error unless `op` is defined on values of type `t` (the callers of [`binary`] that
/// can refuse; a kernel that reaches [`binary`] with such an op does not compile).
pub fn check_binary(op: BinOp, t: ElemType) -> Result<(), MapError> {
    op.check(t)
        .map_err(|e| MapError::Other(format!("{e}: the kernel is not emitted")))
}

/// `x op y` for values of type `t`. An op not defined on `t` ([`BinOp::accepts`]) gives a
/// call of a function that does not exist, so the kernel cannot compile: callers refuse it
/// first with [`check_binary`].
pub fn binary(op: BinOp, t: ElemType, x: &str, y: &str) -> String {
    let undefined = || {
        format!(
            "ix_{}_is_not_defined_on_{}({x}, {y})",
            op.hlo_name().replace('-', "_"),
            t.hlo_name()
        )
    };
    if !op.accepts(t) {
        return undefined();
    }
    if t.is_float() {
        let e = match op {
            BinOp::Rem if t == ElemType::F64 => format!("fmod({x}, {y})"),
            BinOp::Rem => format!("fmodf({x}, {y})"),
            _ => super::c_binary(op, x, y, t.arith()),
        };
        return round16(t, e);
    }
    if t == ElemType::Pred {
        return match op {
            BinOp::Max | BinOp::Or => format!("({x} || {y})"),
            BinOp::Min | BinOp::Mul | BinOp::And => format!("({x} && {y})"),
            BinOp::Add | BinOp::Xor => format!("({x} != {y})"),
            // Not defined on pred (refused above).
            BinOp::Sub
            | BinOp::Div
            | BinOp::Rem
            | BinOp::Pow
            | BinOp::Atan2
            | BinOp::Shl
            | BinOp::ShrA
            | BinOp::ShrL => undefined(),
        };
    }
    let (c, w, n) = (t.c_name(), wrap_ty(t), t.hlo_name());
    match op {
        BinOp::Add => format!("({c})(({w}){x} + ({w}){y})"),
        BinOp::Sub => format!("({c})(({w}){x} - ({w}){y})"),
        BinOp::Mul => format!("({c})(({w}){x} * ({w}){y})"),
        BinOp::Div => format!("ix_div_{n}({x}, {y})"),
        BinOp::Rem => format!("ix_rem_{n}({x}, {y})"),
        BinOp::Max | BinOp::Min => super::c_binary(op, x, y, t),
        BinOp::And => format!("({c})({x} & {y})"),
        BinOp::Or => format!("({c})({x} | {y})"),
        BinOp::Xor => format!("({c})({x} ^ {y})"),
        BinOp::Pow => format!("ix_pow_{n}({x}, {y})"),
        BinOp::Shl => format!("ix_shl_{n}({x}, {y})"),
        BinOp::ShrA => format!("ix_shra_{n}({x}, {y})"),
        BinOp::ShrL => format!("ix_shrl_{n}({x}, {y})"),
        // Floats only (refused above).
        BinOp::Atan2 => undefined(),
    }
}

/// `x DIR y` (a `bool`).
pub fn compare(dir: CmpDir, x: &str, y: &str) -> String {
    format!("({x} {} {y})", dir.c_op())
}

/// `x`, a value of type `from`, converted to `to` (HLO's `convert`).
pub fn convert(from: ElemType, to: ElemType, x: &str) -> String {
    if from == to {
        return x.to_string();
    }
    if to == ElemType::Pred {
        return format!("({x} != 0)");
    }
    let to_float16 = |f: String| match to {
        ElemType::F16 => format!("ix_rh({f})"),
        _ => format!("ix_rbf({f})"),
    };
    if from.is_float() {
        return match to {
            ElemType::F64 => format!("(double){x}"),
            ElemType::F32 if from == ElemType::F64 => format!("(float){x}"),
            ElemType::F32 => x.to_string(),
            ElemType::F16 | ElemType::BF16 if from == ElemType::F64 => {
                to_float16(format!("ix_d2f_odd({x})"))
            }
            ElemType::F16 | ElemType::BF16 => to_float16(x.to_string()),
            _ => format!("ix_f2i_{}({x})", to.hlo_name()),
        };
    }
    // From an integer or pred.
    match to {
        ElemType::F64 => format!("(double){x}"),
        ElemType::F32 => format!("(float){x}"),
        // Every integer below 2^24 is exact in float, and from 65520 up f16 is infinite.
        ElemType::F16 => format!("ix_rh((float){x})"),
        ElemType::BF16 if from.bytes() < 8 => format!("ix_rbf(ix_d2f_odd((double){x}))"),
        ElemType::BF16 => format!("ix_rbf(ix_d2f_odd(ix_l2d_odd_{}({x})))", from.hlo_name()),
        _ => format!("({}){x}", to.c_name()),
    }
}

/// Definitions of the type helpers `src` calls (`ix_rh`, `ix_div_s32`, ...), for C or CUDA
/// (`qual` before each: `static inline` or `__device__ static inline`).
pub fn helpers(src: &str, cuda: bool) -> String {
    let q = if cuda {
        "__device__ static inline"
    } else {
        "static inline"
    };
    let uses = |name: &str| src.contains(&format!("{name}("));
    let mut out = String::new();
    let odd = uses("ix_d2f_odd");
    // C: the 16-bit formats by hand, bit-exact, round to nearest even.
    // The bitcasts from and to a 16-bit float read and write its bits with the C versions.
    let bitcasts: Vec<(ElemType, ElemType)> = ElemType::ALL
        .into_iter()
        .flat_map(|a| ElemType::ALL.into_iter().map(move |b| (a, b)))
        .filter(|&(a, b)| {
            a != b
                && UnOp::BitcastConvert(b).accepts(a)
                && uses(&format!("ix_bc_{}_{}", a.hlo_name(), b.hlo_name()))
        })
        .collect();
    let bc_with = |t: ElemType| bitcasts.iter().any(|&(a, b)| a == t || b == t);
    let need_h =
        !cuda && (uses("ix_h2f") || uses("ix_f2h") || uses("ix_rh") || bc_with(ElemType::F16));
    let need_bf =
        !cuda && (uses("ix_bf2f") || uses("ix_f2bf") || uses("ix_rbf") || bc_with(ElemType::BF16));
    if !cuda && (need_h || need_bf || odd) {
        out += "typedef union { float f; uint32_t u; } ix_bits;\n";
    }
    if need_h {
        out += &format!(
            "{q} float ix_h2f(uint16_t h) {{ ix_bits c; const uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu; if (e == 0) {{ const float f = (float)m * 5.9604644775390625e-8f; return s ? -f : f; }} c.u = s | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112u) << 23) | (m << 13)); return c.f; }}\n\
             {q} uint16_t ix_f2h(float f) {{ ix_bits c; c.f = f; const uint32_t s = (c.u >> 16) & 0x8000u, a = c.u & 0x7fffffffu; if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u); if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u); if (a < 0x38800000u) {{ c.u = a; const float x = c.f * 16777216.0f; uint32_t i = (uint32_t)x; const float r = x - (float)i; if (r > 0.5f || (r == 0.5f && (i & 1u))) ++i; return (uint16_t)(s | i); }} return (uint16_t)(s | ((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13)); }}\n"
        );
    }
    if need_bf {
        out += &format!(
            "{q} float ix_bf2f(uint16_t h) {{ ix_bits c; c.u = (uint32_t)h << 16; return c.f; }}\n\
             {q} uint16_t ix_f2bf(float f) {{ ix_bits c; c.f = f; if ((c.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((c.u >> 16) | 0x40u); return (uint16_t)((c.u + 0x7fffu + ((c.u >> 16) & 1u)) >> 16); }}\n"
        );
    }
    if uses("ix_rh") {
        out += &if cuda {
            format!("{q} float ix_rh(float x) {{ return __half2float(__float2half_rn(x)); }}\n")
        } else {
            format!("{q} float ix_rh(float x) {{ return ix_h2f(ix_f2h(x)); }}\n")
        };
    }
    if uses("ix_rbf") {
        out += &if cuda {
            format!(
                "{q} float ix_rbf(float x) {{ return __bfloat162float(__float2bfloat16_rn(x)); }}\n"
            )
        } else {
            format!("{q} float ix_rbf(float x) {{ return ix_bf2f(ix_f2bf(x)); }}\n")
        };
    }
    for t in [ElemType::S64, ElemType::U64] {
        let name = format!("ix_l2d_odd_{}", t.hlo_name());
        if uses(&name) {
            // A 64-bit integer to double, rounded to odd: the bits past the 53rd kept as a
            // sticky last bit, so the later rounding to a narrower type is the right one.
            let abs = if t == ElemType::S64 {
                "x < 0 ? 0ull - (uint64_t)x : (uint64_t)x"
            } else {
                "x"
            };
            let sign = if t == ElemType::S64 {
                "x < 0 ? -d : d"
            } else {
                "d"
            };
            out += &format!(
                "{q} double {name}({} x) {{ uint64_t m = {abs}; int sh = 0; while ((m >> sh) >= (1ull << 53)) ++sh; const uint64_t k = (m >> sh) | ((m & ((1ull << sh) - 1)) != 0); const double d = (double)k * (double)(1ull << sh); return {sign}; }}\n",
                t.c_name()
            );
        }
    }
    if odd {
        // Round to odd: the nearest float, moved one step toward x when it is inexact and
        // even (a step of the bits away from or toward zero), so a later rounding to f16 or
        // bf16 (far fewer bits) rounds as from x itself.
        let (get, set) = if cuda {
            (
                "unsigned u = (unsigned)__float_as_int(f);",
                "f = __int_as_float((int)u);",
            )
        } else {
            ("ix_bits c; c.f = f; uint32_t u = c.u;", "c.u = u; f = c.f;")
        };
        out += &format!(
            "{q} float ix_d2f_odd(double x) {{ float f = (float)x; if (x == x && (double)f != x) {{ {get} if (!(u & 1u)) {{ u = fabs((double)f) < fabs(x) ? u + 1u : u - 1u; {set} }} }} return f; }}\n"
        );
    }
    for t in ElemType::ALL.into_iter().filter(|t| t.is_int()) {
        let n = t.hlo_name();
        let c = t.c_name();
        if uses(&format!("ix_div_{n}")) {
            let ovf = if t.is_signed_int() {
                format!(
                    "({x} == {min} && {y} == -1) ? {x} : ",
                    x = "a",
                    y = "b",
                    min = min_literal(t)
                )
            } else {
                String::new()
            };
            out += &format!("{q} {c} ix_div_{n}({c} a, {c} b) {{ return b == 0 ? ({c})-1 : {ovf}({c})(a / b); }}\n");
        }
        if uses(&format!("ix_rem_{n}")) {
            let ovf = if t.is_signed_int() {
                format!("(a == {} && b == -1) ? ({c})0 : ", min_literal(t))
            } else {
                String::new()
            };
            out += &format!(
                "{q} {c} ix_rem_{n}({c} a, {c} b) {{ return b == 0 ? a : {ovf}({c})(a % b); }}\n"
            );
        }
        if uses(&format!("ix_f2i_{n}")) {
            let (lo, hi) = match t {
                ElemType::S8 => ("-128.0", "127.0"),
                ElemType::S16 => ("-32768.0", "32767.0"),
                ElemType::S32 => ("-2147483648.0", "2147483647.0"),
                ElemType::S64 => ("-9223372036854775808.0", "9223372036854775807.0"),
                ElemType::U8 => ("0.0", "255.0"),
                ElemType::U16 => ("0.0", "65535.0"),
                ElemType::U32 => ("0.0", "4294967295.0"),
                _ => ("0.0", "18446744073709551615.0"),
            };
            let (min, max) = if t.is_signed_int() {
                (
                    min_literal(t).to_string(),
                    match t {
                        ElemType::S8 => "(int8_t)127".to_string(),
                        ElemType::S16 => "(int16_t)32767".to_string(),
                        ElemType::S32 => "2147483647".to_string(),
                        _ => "9223372036854775807LL".to_string(),
                    },
                )
            } else {
                (format!("({c})0"), format!("({c})-1"))
            };
            // Saturating toward zero; NaN gives 0. (`hi` as a double may round up to
            // 2^N: at or above it the result is the maximum.)
            out += &format!(
                "{q} {c} ix_f2i_{n}(double x) {{ return x != x ? ({c})0 : x <= {lo} ? {min} : x >= {hi} ? {max} : ({c})x; }}\n"
            );
        }
    }
    for t in [ElemType::F32, ElemType::F64] {
        let n = t.hlo_name();
        if uses(&format!("ix_sign_{n}")) {
            let (c, one) = if t == ElemType::F32 {
                ("float", "1.0f")
            } else {
                ("double", "1.0")
            };
            // NaN fails both comparisons and a zero neither: both are returned as they are.
            out += &format!(
                "{q} {c} ix_sign_{n}({c} x) {{ return x > 0 ? {one} : x < 0 ? -{one} : x; }}\n"
            );
        }
    }
    for t in ElemType::ALL.into_iter().filter(|t| t.is_int()) {
        out += &int_helpers(t, cuda, q, &uses);
    }
    for (a, b) in bitcasts {
        out += &bitcast_helper(a, b, cuda, q);
    }
    out
}

/// The helpers of the integer type `t` that `uses` says the source calls: sign, popcnt,
/// count-leading-zeros, power and the shifts.
fn int_helpers(t: ElemType, cuda: bool, q: &str, uses: &dyn Fn(&str) -> bool) -> String {
    let mut out = String::new();
    let (n, c, u, s) = (t.hlo_name(), t.c_name(), unsigned_of(t), signed_of(t));
    let bits = t.bits();
    let wide = t.bytes() == 8;
    if uses(&format!("ix_sign_{n}")) {
        let body = if t.is_signed_int() {
            "(x > 0) - (x < 0)"
        } else {
            "x != 0"
        };
        out += &format!("{q} {c} ix_sign_{n}({c} x) {{ return ({c})({body}); }}\n");
    }
    if uses(&format!("ix_popcnt_{n}")) {
        // The bits of the operand's own width (zero-extended, never sign-extended).
        let e = match (cuda, wide) {
            (true, true) => "__popcll((unsigned long long)x)".to_string(),
            (true, false) => format!("__popc((unsigned)({u})x)"),
            (false, true) => "__builtin_popcountll((unsigned long long)x)".to_string(),
            (false, false) => format!("__builtin_popcount((unsigned)({u})x)"),
        };
        out += &format!("{q} {c} ix_popcnt_{n}({c} x) {{ return ({c}){e}; }}\n");
    }
    if uses(&format!("ix_clz_{n}")) {
        // CUDA's __clz and __clzll count 32 and 64 for 0; GCC's builtins are undefined there.
        let e = match (cuda, wide) {
            (true, true) => "__clzll((long long)x)".to_string(),
            (true, false) => format!("__clz((int)(unsigned)({u})x) - {}", 32 - bits),
            (false, true) => "(x == 0 ? 64 : __builtin_clzll((unsigned long long)x))".to_string(),
            (false, false) => format!(
                "(x == 0 ? {bits} : __builtin_clz((unsigned)({u})x) - {})",
                32 - bits
            ),
        };
        out += &format!("{q} {c} ix_clz_{n}({c} x) {{ return ({c})({e}); }}\n");
    }
    let w = wrap_ty(t);
    if uses(&format!("ix_pow_{n}")) {
        // By squaring over every bit of the exponent, wrapping; a negative exponent gives
        // the truncated quotient 1 / a^|b|: 0 unless |a| is 1.
        let neg = if t.is_signed_int() {
            format!(
                "if (b < 0) return a == 1 ? ({c})1 : a == -1 ? ((b & 1) ? ({c})-1 : ({c})1) : ({c})0; "
            )
        } else {
            String::new()
        };
        out += &format!(
            "{q} {c} ix_pow_{n}({c} a, {c} b) {{ {neg}{w} r = 1, x = ({w})a; {u} e = ({u})b; while (e) {{ if (e & 1) r *= x; x *= x; e >>= 1; }} return ({c})r; }}\n"
        );
    }
    // Shift counts are read as unsigned of the type's width: a negative count is a large one.
    if uses(&format!("ix_shl_{n}")) {
        out += &format!(
            "{q} {c} ix_shl_{n}({c} a, {c} b) {{ return ({u})b >= {bits} ? ({c})0 : ({c})(({w})a << ({u})b); }}\n"
        );
    }
    if uses(&format!("ix_shrl_{n}")) {
        out += &format!(
            "{q} {c} ix_shrl_{n}({c} a, {c} b) {{ return ({u})b >= {bits} ? ({c})0 : ({c})(({u})a >> ({u})b); }}\n"
        );
    }
    if uses(&format!("ix_shra_{n}")) {
        // The top bit of the type's width shifted in (on unsigned types too); a count of the
        // width or more leaves only copies of it.
        out += &format!(
            "{q} {c} ix_shra_{n}({c} a, {c} b) {{ return ({c})(({s})a >> (({u})b >= {bits} ? {} : ({u})b)); }}\n",
            bits - 1
        );
    }
    out
}

/// `ix_bc_A_B`: the bits of a value of `a` as a value of `b` (same width). A float NaN
/// becomes the type's canonical quiet NaN first (a 16-bit float's NaN payload is not kept in
/// its f32 register).
fn bitcast_helper(a: ElemType, b: ElemType, cuda: bool, q: &str) -> String {
    let u = unsigned_of(a);
    let bits_of = match (a, cuda) {
        (ElemType::F16, true) => {
            "x != x ? (uint16_t)0x7e00u : (uint16_t)__half_as_ushort(__float2half_rn(x))"
                .to_string()
        }
        (ElemType::F16, false) => "x != x ? (uint16_t)0x7e00u : ix_f2h(x)".to_string(),
        (ElemType::BF16, true) => {
            "x != x ? (uint16_t)0x7fc0u : (uint16_t)__bfloat16_as_ushort(__float2bfloat16_rn(x))"
                .to_string()
        }
        (ElemType::BF16, false) => "x != x ? (uint16_t)0x7fc0u : ix_f2bf(x)".to_string(),
        (ElemType::F32, true) => "x != x ? 0x7fc00000u : (uint32_t)__float_as_int(x)".to_string(),
        (ElemType::F32, false) => {
            "x != x ? 0x7fc00000u : ((union { float f; uint32_t u; }){ .f = x }).u".to_string()
        }
        (ElemType::F64, true) => {
            "x != x ? 0x7ff8000000000000ull : (uint64_t)__double_as_longlong(x)".to_string()
        }
        (ElemType::F64, false) => {
            "x != x ? 0x7ff8000000000000ull : ((union { double f; uint64_t u; }){ .f = x }).u"
                .to_string()
        }
        _ => format!("({u})x"),
    };
    let value = match (b, cuda) {
        (ElemType::F16, true) => "__half2float(__ushort_as_half((unsigned short)v))".to_string(),
        (ElemType::F16, false) => "ix_h2f(v)".to_string(),
        (ElemType::BF16, true) => {
            "__bfloat162float(__ushort_as_bfloat16((unsigned short)v))".to_string()
        }
        (ElemType::BF16, false) => "ix_bf2f(v)".to_string(),
        (ElemType::F32, true) => "__int_as_float((int)v)".to_string(),
        (ElemType::F32, false) => "((union { uint32_t u; float f; }){ .u = v }).f".to_string(),
        (ElemType::F64, true) => "__longlong_as_double((long long)v)".to_string(),
        (ElemType::F64, false) => "((union { uint64_t u; double f; }){ .u = v }).f".to_string(),
        _ => format!("({})v", b.c_name()),
    };
    format!(
        "{q} {} ix_bc_{}_{}({} x) {{ const {u} v = {bits_of}; return {value}; }}\n",
        reg(b),
        a.hlo_name(),
        b.hlo_name(),
        reg(a)
    )
}
