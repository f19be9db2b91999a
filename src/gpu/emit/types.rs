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

/// `op x` for a value of type `t`.
pub fn unary(op: UnOp, t: ElemType, x: &str) -> Result<String, MapError> {
    if t.is_float() {
        let e = super::c_unary(op, x, t.arith());
        return Ok(round16(t, e));
    }
    let w = wrap_ty(t);
    let neg = format!("({})(0u - ({w}){x})", t.c_name());
    match op {
        UnOp::Neg => Ok(neg),
        UnOp::Abs if t.is_unsigned_int() || t == ElemType::Pred => Ok(x.to_string()),
        UnOp::Abs => Ok(format!("({x} < 0 ? {neg} : {x})")),
        _ => Err(not_for(&format!("{op:?}"), t)),
    }
}

/// `x op y` for values of type `t`.
pub fn binary(op: BinOp, t: ElemType, x: &str, y: &str) -> String {
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
            BinOp::Max => format!("({x} || {y})"),
            BinOp::Min | BinOp::Mul => format!("({x} && {y})"),
            BinOp::Add | BinOp::Sub => format!("({x} != {y})"),
            // 1 bit: x / 0 is all ones, x / 1 is x; x % 0 is x, x % 1 is 0.
            BinOp::Div => format!("({y} ? {x} : 1)"),
            BinOp::Rem => format!("({y} ? 0 : {x})"),
        };
    }
    let (c, w) = (t.c_name(), wrap_ty(t));
    match op {
        BinOp::Add => format!("({c})(({w}){x} + ({w}){y})"),
        BinOp::Sub => format!("({c})(({w}){x} - ({w}){y})"),
        BinOp::Mul => format!("({c})(({w}){x} * ({w}){y})"),
        BinOp::Div => format!("ix_div_{}({x}, {y})", t.hlo_name()),
        BinOp::Rem => format!("ix_rem_{}({x}, {y})", t.hlo_name()),
        BinOp::Max | BinOp::Min => super::c_binary(op, x, y, t),
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
    let need_h = !cuda && (uses("ix_h2f") || uses("ix_f2h") || uses("ix_rh"));
    let need_bf = !cuda && (uses("ix_bf2f") || uses("ix_f2bf") || uses("ix_rbf"));
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
    out
}
