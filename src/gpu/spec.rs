//! What a kernel computes, independent of where it came from: the small interface between
//! the HLO model (fusions, partitions) and everything in `gpu/` (launch mappings,
//! coalescing, emission, benchmarks).
//!
//! A [`KernelSpec`] has input tensors, one output tensor, and a list of *functions*, one per
//! partition of the fused computation (seed 003). Function 0 is the root: its index space is
//! the output's logical index space. Every function computes one element from its own index:
//! it loads inputs and calls other functions through indexing maps *from its own index*.
//!
//! ```text
//! p0 = f32[20, 40, 300] parameter(0)          output f32[20, 40, 300]
//! p1 = f32[300] parameter(1)                  function 0 (d0, d1, d2):
//! b  = f32[20, 40, 300] broadcast(p1), {2}      add(load p0 (d0, d1, d2) -> (d0, d1, d2),
//! ROOT a = add(p0, b)                               load p1 (d0, d1, d2) -> (d2))
//! ```
//!
//! A reduction is a body node that folds a callee over the range variables of its map:
//! `reduce(add, 0, f1 at (d0)[s0] -> (d0, s0))` sums `f1` over `s0` for each `d0`.

use crate::expr::Expr;
use crate::hlo::ops::elementwise;
use crate::map::{compose, default_vars, IndexingMap, VarKind};
use crate::MapError;
use std::collections::HashSet;

/// Element types the emitters and the reference evaluator know: XLA's `pred`, signed and
/// unsigned integers of 8 to 64 bits, and floats of 16 (`f16`, `bf16`: stored in 16 bits,
/// computed in `f32` and rounded to nearest even after each operation, as XLA does), 32
/// and 64 bits.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    Pred,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
}

impl ElemType {
    /// Every element type, in XLA's order.
    pub const ALL: [ElemType; 13] = [
        ElemType::Pred,
        ElemType::S8,
        ElemType::S16,
        ElemType::S32,
        ElemType::S64,
        ElemType::U8,
        ElemType::U16,
        ElemType::U32,
        ElemType::U64,
        ElemType::F16,
        ElemType::BF16,
        ElemType::F32,
        ElemType::F64,
    ];
    pub fn from_hlo(name: &str) -> Option<ElemType> {
        ElemType::ALL.into_iter().find(|t| t.hlo_name() == name)
    }
    pub fn hlo_name(self) -> &'static str {
        match self {
            ElemType::Pred => "pred",
            ElemType::S8 => "s8",
            ElemType::S16 => "s16",
            ElemType::S32 => "s32",
            ElemType::S64 => "s64",
            ElemType::U8 => "u8",
            ElemType::U16 => "u16",
            ElemType::U32 => "u32",
            ElemType::U64 => "u64",
            ElemType::F16 => "f16",
            ElemType::BF16 => "bf16",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
        }
    }
    /// The C type of an element in memory (`f16`/`bf16` as their 16 bits in C; the CUDA
    /// emitter names them `__half` and `__nv_bfloat16`, see [`ElemType::cuda_name`]).
    pub fn c_name(self) -> &'static str {
        match self {
            ElemType::Pred => "bool",
            ElemType::S8 => "int8_t",
            ElemType::S16 => "int16_t",
            ElemType::S32 => "int32_t",
            ElemType::S64 => "int64_t",
            ElemType::U8 => "uint8_t",
            ElemType::U16 | ElemType::F16 | ElemType::BF16 => "uint16_t",
            ElemType::U32 => "uint32_t",
            ElemType::U64 => "uint64_t",
            ElemType::F32 => "float",
            ElemType::F64 => "double",
        }
    }
    /// The CUDA type of an element in memory.
    pub fn cuda_name(self) -> &'static str {
        match self {
            ElemType::F16 => "__half",
            ElemType::BF16 => "__nv_bfloat16",
            t => t.c_name(),
        }
    }
    /// The type values of this element type are computed in: `f32` for `f16` and `bf16`,
    /// itself for the others.
    pub fn arith(self) -> ElemType {
        match self {
            ElemType::F16 | ElemType::BF16 => ElemType::F32,
            t => t,
        }
    }
    pub fn bytes(self) -> i64 {
        match self {
            ElemType::Pred | ElemType::S8 | ElemType::U8 => 1,
            ElemType::S16 | ElemType::U16 | ElemType::F16 | ElemType::BF16 => 2,
            ElemType::F32 | ElemType::S32 | ElemType::U32 => 4,
            ElemType::F64 | ElemType::S64 | ElemType::U64 => 8,
        }
    }
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ElemType::F16 | ElemType::BF16 | ElemType::F32 | ElemType::F64
        )
    }
    pub fn is_signed_int(self) -> bool {
        matches!(
            self,
            ElemType::S8 | ElemType::S16 | ElemType::S32 | ElemType::S64
        )
    }
    pub fn is_unsigned_int(self) -> bool {
        matches!(
            self,
            ElemType::U8 | ElemType::U16 | ElemType::U32 | ElemType::U64
        )
    }
    /// Integers of either sign (not `pred`).
    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }
    /// Bits of an integer type (`pred`: 1).
    pub fn bits(self) -> u32 {
        if self == ElemType::Pred {
            1
        } else {
            self.bytes() as u32 * 8
        }
    }
}

/// A tensor: element type, logical dimensions, and layout as XLA writes it
/// (`minor_to_major`: `{1,0}` is row-major for rank 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    pub name: String,
    pub elem: ElemType,
    pub dims: Vec<i64>,
    pub minor_to_major: Vec<usize>,
}

impl Tensor {
    /// A row-major tensor (XLA's default layout `{n-1, ..., 0}`).
    pub fn row_major(name: &str, elem: ElemType, dims: &[i64]) -> Tensor {
        Tensor {
            name: name.into(),
            elem,
            dims: dims.to_vec(),
            minor_to_major: (0..dims.len()).rev().collect(),
        }
    }
    pub fn rank(&self) -> usize {
        self.dims.len()
    }
    /// Number of elements, or an error when it overflows i64.
    pub fn num_elements(&self) -> Result<i64, MapError> {
        self.dims
            .iter()
            .try_fold(1i64, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| MapError::Overflow(format!("the element count of {}", self.name)))
    }
    pub fn num_bytes(&self) -> Result<i64, MapError> {
        self.num_elements()?
            .checked_mul(self.elem.bytes())
            .ok_or_else(|| MapError::Overflow(format!("the byte size of {}", self.name)))
    }
    /// Logical dimensions in physical order, major to minor.
    pub fn physical_dims(&self) -> Vec<usize> {
        self.minor_to_major.iter().rev().copied().collect()
    }
    /// The logical dimension that is minor-most in memory.
    pub fn minor_dim(&self) -> Option<usize> {
        self.minor_to_major.first().copied()
    }
    /// Strides (in elements) of each logical dimension in memory.
    pub fn strides(&self) -> Result<Vec<i64>, MapError> {
        let mut strides = vec![0i64; self.rank()];
        let mut s = 1i64;
        for &d in &self.minor_to_major {
            strides[d] = s;
            s = s
                .checked_mul(self.dims[d])
                .ok_or_else(|| MapError::Overflow(format!("the strides of {}", self.name)))?;
        }
        Ok(strides)
    }
    /// The logical → linearized physical layout map, `(d0, .., dn) -> (offset)` in elements.
    pub fn layout_map(&self) -> Result<IndexingMap, MapError> {
        let strides = self.strides()?;
        let e = (0..self.rank()).fold(Expr::constant(0), |acc, i| {
            acc.add(Expr::var(i as u32).mul(Expr::constant(strides[i])))
        });
        Ok(IndexingMap::new(
            default_vars(VarKind::Dim, &self.dims),
            vec![],
            vec![],
            vec![e],
            vec![],
        ))
    }
    /// `f32[20,40,300]{2,1,0}`.
    pub fn shape_text(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(|d| d.to_string()).collect();
        let layout: Vec<String> = self.minor_to_major.iter().map(|d| d.to_string()).collect();
        format!(
            "{}[{}]{{{}}}",
            self.elem.hlo_name(),
            dims.join(","),
            layout.join(",")
        )
    }
}

/// An elementwise unary op of XLA's operation semantics. Floats of 16 bits compute in f32
/// and round to nearest even after the op; the float functions (`exp`, `sin`, `erf`, ...)
/// are libm's (CUDA's on the GPU, within a few units in the last place). Semantics where
/// they are not obvious:
///
/// - `Abs`/`Neg` of the most negative integer is itself (wrapping); of `pred`, itself;
/// - `Sign`: -1, 0 or 1 in the operand's type; NaN for NaN, and a zero keeps its sign;
/// - `RoundAfz` rounds halves away from zero, `RoundEven` to even; both, `Floor` and `Ceil`
///   keep NaN, infinities and the sign of zero;
/// - `Logistic(x)` is `1 / (1 + exp(-x))`; `Rsqrt(x)` is `1 / sqrt(x)`;
/// - `IsFinite` gives a `pred`: false for NaN and ±inf;
/// - `Not` is logical on `pred`, bitwise on integers;
/// - `Popcnt` and `Clz` count bits of the operand's width (`clz(0)` is the width), in the
///   operand's type;
/// - `BitcastConvert(t)` reinterprets the bits as `t`, of the same width (a NaN of a float
///   type is first made the type's canonical quiet NaN: 16-bit floats are computed in f32
///   registers, which cannot keep their NaN payloads).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Abs,
    Exp,
    Log,
    Sqrt,
    Tanh,
    Rsqrt,
    Cbrt,
    Expm1,
    Log1p,
    Logistic,
    Sin,
    Cos,
    Tan,
    Erf,
    Sign,
    Floor,
    Ceil,
    RoundAfz,
    RoundEven,
    IsFinite,
    Not,
    Popcnt,
    Clz,
    BitcastConvert(ElemType),
}

impl UnOp {
    /// The op of an HLO opcode (`bitcast-convert` needs its result type: see
    /// [`UnOp::BitcastConvert`]).
    pub fn from_hlo(op: &str) -> Option<UnOp> {
        Some(match op {
            "negate" => UnOp::Neg,
            "abs" => UnOp::Abs,
            "exponential" => UnOp::Exp,
            "log" => UnOp::Log,
            "sqrt" => UnOp::Sqrt,
            "tanh" => UnOp::Tanh,
            "rsqrt" => UnOp::Rsqrt,
            "cbrt" => UnOp::Cbrt,
            "exponential-minus-one" => UnOp::Expm1,
            "log-plus-one" => UnOp::Log1p,
            "logistic" => UnOp::Logistic,
            "sine" => UnOp::Sin,
            "cosine" => UnOp::Cos,
            "tan" => UnOp::Tan,
            "erf" => UnOp::Erf,
            "sign" => UnOp::Sign,
            "floor" => UnOp::Floor,
            "ceil" => UnOp::Ceil,
            "round-nearest-afz" => UnOp::RoundAfz,
            "round-nearest-even" => UnOp::RoundEven,
            "is-finite" => UnOp::IsFinite,
            "not" => UnOp::Not,
            "popcnt" => UnOp::Popcnt,
            "count-leading-zeros" | "clz" => UnOp::Clz,
            _ => return None,
        })
    }
    /// Every op but `BitcastConvert` (whose variants are per target type).
    pub const SIMPLE: [UnOp; 24] = [
        UnOp::Neg,
        UnOp::Abs,
        UnOp::Exp,
        UnOp::Log,
        UnOp::Sqrt,
        UnOp::Tanh,
        UnOp::Rsqrt,
        UnOp::Cbrt,
        UnOp::Expm1,
        UnOp::Log1p,
        UnOp::Logistic,
        UnOp::Sin,
        UnOp::Cos,
        UnOp::Tan,
        UnOp::Erf,
        UnOp::Sign,
        UnOp::Floor,
        UnOp::Ceil,
        UnOp::RoundAfz,
        UnOp::RoundEven,
        UnOp::IsFinite,
        UnOp::Not,
        UnOp::Popcnt,
        UnOp::Clz,
    ];
    /// The HLO opcode.
    pub fn hlo_name(self) -> &'static str {
        match self {
            UnOp::Neg => "negate",
            UnOp::Abs => "abs",
            UnOp::Exp => "exponential",
            UnOp::Log => "log",
            UnOp::Sqrt => "sqrt",
            UnOp::Tanh => "tanh",
            UnOp::Rsqrt => "rsqrt",
            UnOp::Cbrt => "cbrt",
            UnOp::Expm1 => "exponential-minus-one",
            UnOp::Log1p => "log-plus-one",
            UnOp::Logistic => "logistic",
            UnOp::Sin => "sine",
            UnOp::Cos => "cosine",
            UnOp::Tan => "tan",
            UnOp::Erf => "erf",
            UnOp::Sign => "sign",
            UnOp::Floor => "floor",
            UnOp::Ceil => "ceil",
            UnOp::RoundAfz => "round-nearest-afz",
            UnOp::RoundEven => "round-nearest-even",
            UnOp::IsFinite => "is-finite",
            UnOp::Not => "not",
            UnOp::Popcnt => "popcnt",
            UnOp::Clz => "count-leading-zeros",
            UnOp::BitcastConvert(_) => "bitcast-convert",
        }
    }
    /// The element type of the result for an operand of type `t`.
    pub fn result_elem(self, t: ElemType) -> ElemType {
        match self {
            UnOp::IsFinite => ElemType::Pred,
            UnOp::BitcastConvert(to) => to,
            _ => t,
        }
    }
    /// Whether the op is defined on an operand of type `t`: HLO's op table
    /// ([`elementwise::TABLE`]) says, except for `bitcast-convert`, which the kernels emit
    /// only between types of the same width (not `pred`).
    pub fn accepts(self, t: ElemType) -> bool {
        match self {
            UnOp::BitcastConvert(to) => {
                to == t || (to != ElemType::Pred && t != ElemType::Pred && to.bytes() == t.bytes())
            }
            _ => table_accepts(self.hlo_name(), t),
        }
    }
    /// An error unless the op is defined on `t`.
    pub fn check(self, t: ElemType) -> Result<(), String> {
        if self.accepts(t) {
            return Ok(());
        }
        Err(match self {
            UnOp::BitcastConvert(to) if t != ElemType::Pred && to != ElemType::Pred => format!(
                "bitcast-convert from {} to {} changes the element width (and so the shape); only conversions between types of the same width are emitted",
                t.hlo_name(),
                to.hlo_name()
            ),
            _ => not_defined(self.hlo_name(), t),
        })
    }
}

/// Whether HLO's op table lets `opcode` take operands of type `t`.
fn table_accepts(opcode: &str, t: ElemType) -> bool {
    elementwise::row(opcode)
        .is_some_and(|row| row.takes & elementwise::class_bit(t.hlo_name()) != 0)
}

/// "negate is not defined on pred (it takes integers, floats and complex numbers)".
fn not_defined(opcode: &str, t: ElemType) -> String {
    match elementwise::row(opcode) {
        Some(row) => format!(
            "{opcode} is not defined on {} (it takes {})",
            t.hlo_name(),
            elementwise::describe(row.takes)
        ),
        None => format!("{opcode} is not defined on {}", t.hlo_name()),
    }
}

/// Binary arithmetic. On integers, `+ - *` wrap around (two's complement); `x / 0` is -1
/// (all bits set) and `x % 0` is `x`; the most negative value `/ -1` is itself and `% -1` is
/// 0 (XLA's integer division semantics). `Rem` on floats is C's `fmod`. Float `max`/`min`
/// propagate NaN. The others:
///
/// - `Pow`: floats as C's `pow`; integers by repeated multiplication, wrapping; a negative
///   exponent gives 0 unless the base is 1 or -1 (then `base ^ |e|`, as the exact quotient
///   truncated);
/// - `Atan2(y, x)`: floats, as C's `atan2`;
/// - `And`, `Or`, `Xor`: logical on `pred`, bitwise on integers;
/// - `Shl`, `ShrA`, `ShrL`: integers, the count read as unsigned of the operand's width: a
///   count of the width or more gives 0 (`Shl`, `ShrL`) or the sign bit everywhere
///   (`ShrA`, which shifts in the top bit on unsigned types too).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    Rem,
    Pow,
    Atan2,
    And,
    Or,
    Xor,
    Shl,
    ShrA,
    ShrL,
}

impl BinOp {
    pub fn from_hlo(op: &str) -> Option<BinOp> {
        Some(match op {
            "add" => BinOp::Add,
            "subtract" => BinOp::Sub,
            "multiply" => BinOp::Mul,
            "divide" => BinOp::Div,
            "maximum" => BinOp::Max,
            "minimum" => BinOp::Min,
            "remainder" => BinOp::Rem,
            "power" => BinOp::Pow,
            "atan2" => BinOp::Atan2,
            "and" => BinOp::And,
            "or" => BinOp::Or,
            "xor" => BinOp::Xor,
            "shift-left" => BinOp::Shl,
            "shift-right-arithmetic" => BinOp::ShrA,
            "shift-right-logical" => BinOp::ShrL,
            _ => return None,
        })
    }
    /// Every op.
    pub const ALL: [BinOp; 15] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Max,
        BinOp::Min,
        BinOp::Rem,
        BinOp::Pow,
        BinOp::Atan2,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::ShrA,
        BinOp::ShrL,
    ];
    /// The HLO opcode.
    pub fn hlo_name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "subtract",
            BinOp::Mul => "multiply",
            BinOp::Div => "divide",
            BinOp::Max => "maximum",
            BinOp::Min => "minimum",
            BinOp::Rem => "remainder",
            BinOp::Pow => "power",
            BinOp::Atan2 => "atan2",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::Shl => "shift-left",
            BinOp::ShrA => "shift-right-arithmetic",
            BinOp::ShrL => "shift-right-logical",
        }
    }
    /// Whether the op is defined on operands of type `t`: HLO's op table
    /// ([`elementwise::TABLE`]) says.
    pub fn accepts(self, t: ElemType) -> bool {
        table_accepts(self.hlo_name(), t)
    }
    /// An error unless the op is defined on `t`.
    pub fn check(self, t: ElemType) -> Result<(), String> {
        if self.accepts(t) {
            Ok(())
        } else {
            Err(not_defined(self.hlo_name(), t))
        }
    }
}

/// The comparison of HLO's `compare(a, b), direction=..`: a `pred`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CmpDir {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpDir {
    pub fn from_hlo(dir: &str) -> Option<CmpDir> {
        Some(match dir {
            "EQ" => CmpDir::Eq,
            "NE" => CmpDir::Ne,
            "LT" => CmpDir::Lt,
            "LE" => CmpDir::Le,
            "GT" => CmpDir::Gt,
            "GE" => CmpDir::Ge,
            _ => return None,
        })
    }
    /// The C operator.
    pub fn c_op(self) -> &'static str {
        match self {
            CmpDir::Eq => "==",
            CmpDir::Ne => "!=",
            CmpDir::Lt => "<",
            CmpDir::Le => "<=",
            CmpDir::Gt => ">",
            CmpDir::Ge => ">=",
        }
    }
}

/// The body nodes a kernel whose functions were all written in place would have, past
/// which the row emitters keep a called function's value in a register and read it again
/// ([`KernelSpec::inline_nodes_exceed`]): ordinary kernels stay far below it and are
/// written as before.
pub const INLINE_NODES: u64 = 4096;

/// One element's computation inside a function, over the function's index.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    Const(f64),
    /// Input `input` at `map(index)`; `map` goes from the function's index to the input's
    /// logical index.
    Load {
        input: usize,
        map: IndexingMap,
    },
    /// Function `func` at `map(index)`.
    Call {
        func: usize,
        map: IndexingMap,
    },
    /// Folds `func` at `map(index, s...)` over every value of `map`'s range variables that
    /// satisfies its constraints, starting from `init`.
    Reduce {
        op: BinOp,
        init: f64,
        func: usize,
        map: IndexingMap,
    },
    Unary(UnOp, Box<Body>),
    Binary(BinOp, Box<Body>, Box<Body>),
    /// The value converted to an element type (HLO's `convert`): floats round to nearest
    /// even, integers wrap to their width, a float becomes an integer toward zero with
    /// saturation (NaN gives 0), anything becomes `pred` as `!= 0`. `Convert(t, Const(v))`
    /// is a constant of type `t`.
    Convert(ElemType, Box<Body>),
    /// `a DIR b`, a `pred`.
    Compare(CmpDir, Box<Body>, Box<Body>),
    /// `pred ? on_true : on_false`.
    Select(Box<Body>, Box<Body>, Box<Body>),
    /// The value of an index: `map` (from the function's index) has one result, and the
    /// value is that integer, an `s64` (`iota` is `Convert(t, Index ..)`).
    Index {
        map: IndexingMap,
    },
    /// `then` where the function's index lies in `map`'s domain (its dimensions' bounds
    /// and its constraints hold; `map` has no results), else `otherwise`. Only the branch
    /// taken is evaluated: a load in `then` may be out of bounds elsewhere (`pad`: the
    /// operand's element, or the padding value).
    Guard {
        map: IndexingMap,
        then: Box<Body>,
        otherwise: Box<Body>,
    },
    /// Function `func` at `map(index)` moved by start indices known at run time: coordinate
    /// `i` is `map(index)[i] + clamp(starts[i], 0, limits[i])` (`dynamic-slice`: XLA clamps
    /// the start so the slice fits in the operand). Each start is a scalar body (an
    /// integer) evaluated at the function's index.
    DynCall {
        func: usize,
        map: IndexingMap,
        starts: Vec<Body>,
        limits: Vec<i64>,
    },
    /// Argument `k` (of type `t`) of the scalar computation a [`Body::ReduceTuple`]
    /// applies: its accumulators `0..n`, then the values `n..2n`.
    Param(usize, ElemType),
    /// A variadic reduction (argmax: a value and its index): `n` accumulators starting at
    /// `inits`, each step replacing all of them at once by `reducer` (bodies over
    /// [`Body::Param`]: the accumulators, then `funcs[k]` at `map(index, s..)`), over every
    /// value of `map`'s range variables that satisfies its constraints; the value is
    /// accumulator `which`.
    ReduceTuple {
        inits: Vec<Body>,
        funcs: Vec<usize>,
        map: IndexingMap,
        reducer: Vec<Body>,
        which: usize,
        /// A `reduce-window` (each output element folds its window), not a `reduce`: XLA's
        /// loop unrolling treats the two apart ([`crate::gpu::launch::may_prevent_vectorization`]).
        window: bool,
    },
    /// An op with no emitter yet (`op`, HLO instruction `name`, of element type `elem`),
    /// over its operands' values: their maps are known, so indexing, launches and
    /// coalescing are analysed; `emit`, `bench` and `check` refuse it.
    Opaque {
        op: String,
        name: String,
        elem: ElemType,
        args: Vec<Body>,
    },
}

impl Body {
    /// What this computes under an exact epilogue: converts, negations and absolute
    /// values. Neither of the last two rounds, and each keeps two values at most as far
    /// apart (`|f(a) - f(b)| <= |a - b|`), so a sum's slack bounds the output's difference
    /// too (a convert's own rounding is the output type's tolerance).
    pub fn under_exact_epilogue(&self) -> &Body {
        let mut b = self;
        loop {
            match b {
                Body::Convert(_, inner) | Body::Unary(UnOp::Neg | UnOp::Abs, inner) => b = inner,
                _ => return b,
            }
        }
    }

    /// Every indexing map in the body, with what it reads.
    pub fn visit(&self, f: &mut dyn FnMut(&Body)) {
        f(self);
        match self {
            Body::Unary(_, a) => a.visit(f),
            Body::Binary(_, a, b) | Body::Compare(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Body::Convert(_, a) => a.visit(f),
            Body::Select(c, a, b) => {
                c.visit(f);
                a.visit(f);
                b.visit(f);
            }
            Body::Guard {
                then, otherwise, ..
            } => {
                then.visit(f);
                otherwise.visit(f);
            }
            Body::DynCall { starts, .. } => starts.iter().for_each(|s| s.visit(f)),
            Body::ReduceTuple { inits, reducer, .. } => {
                inits.iter().for_each(|s| s.visit(f));
                reducer.iter().for_each(|s| s.visit(f));
            }
            Body::Opaque { args, .. } => args.iter().for_each(|a| a.visit(f)),
            _ => {}
        }
    }

    /// The first op of `self` that has no emitter, as `(op, instruction)`.
    pub fn opaque(&self) -> Option<(String, String)> {
        let mut found = None;
        self.visit(&mut |b| {
            if let (None, Body::Opaque { op, name, .. }) = (&found, b) {
                found = Some((op.clone(), name.clone()));
            }
        });
        found
    }

    /// Whether some part of `self` is evaluated only under a condition (a [`Body::Guard`])
    /// or at an index known only at run time (a [`Body::DynCall`]): its loads may not be
    /// hoisted out of it (vector loads, transpose tiles).
    pub fn has_conditional(&self) -> bool {
        let mut found = false;
        self.visit(&mut |b| found |= matches!(b, Body::Guard { .. } | Body::DynCall { .. }));
        found
    }
}

/// Whether `m` maps each index to itself over `dims`.
pub fn is_identity(m: &IndexingMap, dims: &[i64]) -> bool {
    m.dims.len() == dims.len()
        && m.ranges.is_empty()
        && m.runtimes.is_empty()
        && m.constraints.is_empty()
        && m.dims
            .iter()
            .zip(dims)
            .all(|(v, &n)| v.bounds.lo == 0 && v.bounds.hi == n - 1)
        && m.results
            .iter()
            .enumerate()
            .all(|(i, &r)| r == Expr::var(i as u32))
}

/// `map` with the run-time shifts of a [`Body::DynCall`] as range variables: coordinate `i`
/// plus `rt<i> in [0, limits[i]]`, the indices the call may reach (for the analyses). The
/// names say they are starts read at run time (as the launches' runtime variables `rt<d>`
/// do), so the analyses can tell them from a loop's range variables (the coalescing
/// analysis takes each as one value per warp, and XLA's verdict at its midpoint).
pub fn dyn_call_reach(map: &IndexingMap, limits: &[i64]) -> IndexingMap {
    let mut m = map.clone();
    if !m.runtimes.is_empty() {
        // Range variables come before runtime ones; from_hlo makes no runtime variables.
        return m;
    }
    let nv = (m.dims.len() + m.ranges.len()) as u32;
    let mut extra = 0u32;
    for (i, &l) in limits.iter().enumerate() {
        if l > 0 && i < m.results.len() {
            let v = Expr::var(nv + extra);
            m.results[i] = m.results[i].add(v);
            let taken = |n: &str| m.vars().any(|v| v.name == n);
            let mut name = format!("rt{i}");
            let mut k = 1;
            while taken(&name) {
                name = format!("rt{i}_{k}");
                k += 1;
            }
            m.ranges.push(crate::map::Variable::new(name, 0, l));
            extra += 1;
        }
    }
    m.is_simplified = false;
    m
}

/// One partition of the fused computation: an index space and the element it computes.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub dims: Vec<i64>,
    pub body: Body,
}

/// How the kernel's outputs are made from its functions.
#[derive(Clone, Debug, PartialEq)]
pub enum Root {
    /// Output 0 is function 0 at each output index; output `k + 1` (a tuple root) is
    /// function `more_outputs[k].1` at the same index.
    Elementwise,
    /// Output 0 is the concatenation along `dim` of `parts`: (function, offset along `dim`),
    /// each function over its own index space (the operand's shape). XLA's concatenate
    /// emitter gives each operand its own loop over its slice of the output.
    Concatenate {
        dim: usize,
        parts: Vec<(usize, i64)>,
    },
    /// An in-place dynamic-update-slice: output 0 is input `operand` (aliased) with
    /// function 0, over the update's shape, written at the start indices read from the
    /// scalar inputs `starts`, each clamped to `[0, dim - update_dim]` (XLA's semantics).
    /// `computed[d]`, when set, is the function (of no dimensions) that computes start `d`
    /// in the fusion (then `starts[d]` is not read).
    DynamicUpdateSlice {
        operand: usize,
        starts: Vec<usize>,
        computed: Vec<Option<usize>>,
    },
    /// A scatter (XLA's operation semantics): output 0 is input `operand` (aliased), and
    /// each element of function 0 (over the updates' shape) is combined by `op` into the
    /// output at its window position plus the start indices read from input `indices`; an
    /// update whose window does not fit in the operand is skipped.
    Scatter {
        operand: usize,
        indices: usize,
        op: BinOp,
        update_window_dims: Vec<usize>,
        inserted_window_dims: Vec<usize>,
        scatter_dims_to_operand_dims: Vec<usize>,
        index_vector_dim: usize,
        /// Indices computed in the fusion: function `f` over the indices' shape gives
        /// them (`indices` is then not read).
        indices_func: Option<usize>,
    },
}

/// Where a scatter's update element lands, by dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct ScatterGeometry {
    /// Per operand dimension: the update dimension that indexes its window (`None` for an
    /// inserted dimension, whose window is 1 and offset 0), and the window's size.
    pub window: Vec<(Option<usize>, i64)>,
    /// The update dimensions that are not window dimensions (they pick an index vector).
    pub batch: Vec<usize>,
    /// Per entry `k` of the index vector, the operand dimension it starts.
    pub starts: Vec<usize>,
    pub index_vector_dim: usize,
    /// The rank of the indices tensor.
    pub indices_rank: usize,
}

impl ScatterGeometry {
    /// The index of the indices tensor holding entry `k` of the index vector of the update
    /// element whose batch coordinates are `batch` (in [`ScatterGeometry::batch`] order).
    pub fn indices_index<T: Clone>(&self, batch: &[T], k: T) -> Vec<T> {
        let mut b = batch.iter();
        (0..self.indices_rank)
            .map(|q| {
                if q == self.index_vector_dim {
                    k.clone()
                } else {
                    b.next().cloned().unwrap_or_else(|| k.clone())
                }
            })
            .collect()
    }
}

/// A fusion ready for the GPU code: inputs, outputs, and functions (0 is the root).
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSpec {
    pub name: String,
    pub inputs: Vec<Tensor>,
    /// Output 0.
    pub output: Tensor,
    pub functions: Vec<Function>,
    /// Further outputs of a multi-output fusion (a tuple root), each with the function that
    /// computes it at its own index and where it is written relative to output 0.
    pub more_outputs: Vec<MoreOutput>,
    pub root: Root,
    /// XLA's block-level tiling of this fusion, where its `backend_config` prints one (a
    /// Triton fusion's `block_level_fusion_config`); `None` for a bare computation.
    pub xla_tile: Option<XlaTile>,
}

/// XLA's tiling of a block-level (Triton) fusion, as its `backend_config` prints it
/// (`fusion_backend_config.block_level_fusion_config`): the warps of a block, the output
/// tile a block writes (`output_tiles[0].sizes`, one size per output dimension), and the
/// pipeline stages (`num_stages`, 1 where not printed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XlaTile {
    pub num_warps: i64,
    pub sizes: Vec<i64>,
    pub num_stages: i64,
}

impl XlaTile {
    /// The tiling `ins`'s `backend_config` prints, if any (bare or as a quoted string;
    /// numbers as JSON numbers or strings). Sizes that are not positive, or a tile whose
    /// element count overflows, give `None`.
    pub fn of(ins: &crate::hlo::Instr) -> Option<XlaTile> {
        let c = ins.backend_config()?;
        let b = c.pointer("/fusion_backend_config/block_level_fusion_config")?;
        let num = crate::hlo::json_int;
        let num_warps = num(b.get("num_warps")?)?;
        let sizes = b
            .get("output_tiles")?
            .as_array()?
            .first()?
            .get("sizes")?
            .as_array()?
            .iter()
            .map(num)
            .collect::<Option<Vec<i64>>>()?;
        if num_warps < 1 || sizes.iter().any(|&s| s < 1) {
            return None;
        }
        sizes.iter().try_fold(1i64, |a, &b| a.checked_mul(b))?;
        let num_stages = b.get("num_stages").and_then(num).unwrap_or(1);
        Some(XlaTile {
            num_warps,
            sizes,
            num_stages,
        })
    }

    /// The tile's elements (checked not to overflow when parsed).
    pub fn elements(&self) -> i64 {
        self.sizes
            .iter()
            .try_fold(1i64, |a, &b| a.checked_mul(b))
            .unwrap_or(i64::MAX)
    }
}

/// A further output of a tuple root: `func` (over the tensor's dims) computes each element
/// at the element's own index; `map` says which thread writes it. `map` goes from output
/// 0's index, with the range variables of output 0's reduction for a side output of a
/// reduction, to this output's index, and reaches each of its elements exactly once:
///
/// - the identity when the output has output 0's shape;
/// - a permutation (the transpose's own output → input map) for a side output of a
///   transpose in the transposed operand's shape;
/// - the bitcast map (equal linear offsets in the two physical layouts) for another shape
///   of output 0's element count;
/// - the reduction's map `(d..)[s..] -> (operand index)` for a side output of a reduction
///   in the reduced operand's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct MoreOutput {
    pub tensor: Tensor,
    pub func: usize,
    pub map: IndexingMap,
    /// The reduction group (`hlo::groups`) the output belongs to: independent groups of a
    /// multi-output reduction run in their own blocks (`bl_y`); output 0 is in group 0.
    pub group: usize,
}

impl MoreOutput {
    /// An output of output 0's shape, written at the same index, in group 0.
    pub fn same_index(tensor: Tensor, func: usize, out0: &[i64]) -> MoreOutput {
        MoreOutput {
            tensor,
            func,
            map: IndexingMap::identity(out0),
            group: 0,
        }
    }
    /// Whether the map has range variables (a side output of a reduction: several of its
    /// elements per element of output 0).
    pub fn is_side_of_reduction(&self) -> bool {
        !self.map.ranges.is_empty()
    }
}

/// How an input is reached from the output: the composed output → input map.
#[derive(Clone, Debug, PartialEq)]
pub struct InputAccess {
    pub input: usize,
    pub map: IndexingMap,
}

impl KernelSpec {
    /// Every distinct output → input map, composed through calls and reductions, in input
    /// order (then in the order first met). A concatenation reads part `k` through
    /// `d_dim - offset_k` on its slice; a dynamic-update-slice's maps are from the update's
    /// index (its output offsets are only known at run time); the further outputs of a tuple
    /// root read from output 0's index through their maps ([`MoreOutput`]).
    pub fn input_accesses(&self) -> Result<Vec<InputAccess>, MapError> {
        match &self.root {
            Root::Elementwise => {
                let id = IndexingMap::identity(&self.output.dims);
                let mut out = self.accesses_from(0, &id)?;
                for o in &self.more_outputs {
                    for a in self.accesses_from(o.func, &o.map)? {
                        if !out.contains(&a) {
                            out.push(a);
                        }
                    }
                }
                out.sort_by_key(|a| a.input);
                Ok(out)
            }
            Root::Concatenate { dim, parts } => {
                let mut out: Vec<InputAccess> = Vec::new();
                for &(f, off) in parts {
                    for a in self.accesses_from(f, &self.concat_part_map(*dim, f, off)?)? {
                        if !out.contains(&a) {
                            out.push(a);
                        }
                    }
                }
                out.sort_by_key(|a| a.input);
                Ok(out)
            }
            Root::DynamicUpdateSlice { .. } | Root::Scatter { .. } => {
                let f = self
                    .functions
                    .first()
                    .ok_or_else(|| MapError::Other("no update function".into()))?;
                self.accesses_from(0, &IndexingMap::identity(&f.dims))
            }
        }
    }

    /// Output index → index of concatenated part `f` (at `off` along `dim`): the part's
    /// slice of the output, shifted back.
    pub fn concat_part_map(&self, dim: usize, f: usize, off: i64) -> Result<IndexingMap, MapError> {
        let part = self
            .functions
            .get(f)
            .ok_or_else(|| MapError::Other(format!("no function {f}")))?;
        let results: Vec<Expr> = (0..self.output.rank())
            .map(|d| {
                let v = Expr::var(d as u32);
                if d == dim {
                    v.add(Expr::constant(-off))
                } else {
                    v
                }
            })
            .collect();
        let n = part.dims.get(dim).copied().unwrap_or(1);
        let constraints = vec![(
            Expr::var(dim as u32),
            crate::interval::Interval::new(off, off + n - 1),
        )];
        let m = IndexingMap::new(
            default_vars(VarKind::Dim, &self.output.dims),
            vec![],
            vec![],
            results,
            constraints,
        );
        Ok(crate::simplify::simplify(&m, &Default::default()).map)
    }

    /// An error when the kernel is not one output computed by function 0 at each index
    /// (a tuple root, a concatenate, a dynamic-update-slice): `what` (the benchmarks, the
    /// CPU tilings) handles only that form; `check` runs the others.
    pub fn single_output(&self, what: &str) -> Result<(), MapError> {
        if self.root == Root::Elementwise && self.more_outputs.is_empty() {
            return Ok(());
        }
        Err(MapError::Other(format!(
            "{what} handles one output computed at each of its indices; {} is {} (`check {}` runs it on the CPU, verified)",
            self.name,
            match self.root {
                Root::Concatenate { .. } => "a concatenate",
                Root::DynamicUpdateSlice { .. } => "a dynamic-update-slice",
                Root::Scatter { .. } => "a scatter",
                Root::Elementwise => "a multi-output fusion",
            },
            self.name
        )))
    }

    /// A scatter's geometry (`None` for other roots, or when the dimension numbers do not
    /// fit the shapes).
    pub fn scatter_geometry(&self) -> Option<ScatterGeometry> {
        let Root::Scatter {
            indices,
            update_window_dims,
            inserted_window_dims,
            scatter_dims_to_operand_dims,
            index_vector_dim,
            ..
        } = &self.root
        else {
            return None;
        };
        let upd = &self.functions.first()?.dims;
        let rank = self.output.rank();
        let mut uw = update_window_dims.iter();
        let mut window = Vec::with_capacity(rank);
        for o in 0..rank {
            if inserted_window_dims.contains(&o) {
                window.push((None, 1));
            } else {
                let j = *uw.next()?;
                let n = *upd.get(j)?;
                if n > self.output.dims[o] {
                    return None;
                }
                window.push((Some(j), n));
            }
        }
        if uw.next().is_some() {
            return None;
        }
        let batch: Vec<usize> = (0..upd.len())
            .filter(|j| !update_window_dims.contains(j))
            .collect();
        let (idims, _) = self.scatter_indices()?;
        let indices_rank = idims.len();
        let _ = indices;
        let implicit = *index_vector_dim == indices_rank;
        if batch.len() + usize::from(!implicit) != indices_rank
            || scatter_dims_to_operand_dims.iter().any(|&o| o >= rank)
            || (implicit && scatter_dims_to_operand_dims.len() != 1)
            || (!implicit
                && idims.get(*index_vector_dim).copied()
                    != Some(scatter_dims_to_operand_dims.len() as i64))
        {
            return None;
        }
        Some(ScatterGeometry {
            window,
            batch,
            starts: scatter_dims_to_operand_dims.clone(),
            index_vector_dim: *index_vector_dim,
            indices_rank,
        })
    }

    /// A scatter's indices: their dims and element type (an input's, or the function's
    /// that computes them).
    pub fn scatter_indices(&self) -> Option<(Vec<i64>, ElemType)> {
        let Root::Scatter {
            indices,
            indices_func,
            ..
        } = &self.root
        else {
            return None;
        };
        match indices_func {
            Some(f) => Some((self.functions.get(*f)?.dims.clone(), self.function_elem(*f))),
            None => {
                let t = self.inputs.get(*indices)?;
                Some((t.dims.clone(), t.elem))
            }
        }
    }

    /// Every output: output 0, then the tuple root's further outputs.
    pub fn outputs(&self) -> Vec<&Tensor> {
        std::iter::once(&self.output)
            .chain(self.more_outputs.iter().map(|o| &o.tensor))
            .collect()
    }

    /// The same from function `func`, reached through `map` (from some index space to the
    /// function's index).
    pub fn accesses_from(
        &self,
        func: usize,
        map: &IndexingMap,
    ) -> Result<Vec<InputAccess>, MapError> {
        let mut out: Vec<InputAccess> = Vec::new();
        self.walk(func, map, 0, &mut out, &mut HashSet::new())?;
        out.sort_by_key(|a| a.input);
        Ok(out)
    }

    /// Adds the accesses of function `func` reached through `from_root` to `out`. `done`
    /// holds the (function, map) pairs walked already: a function called from several
    /// places at the same index (a DAG of shared instructions, threefry's rounds) adds
    /// nothing new the second time, and walking it again would make the walk exponential
    /// in the depth of the sharing.
    fn walk(
        &self,
        func: usize,
        from_root: &IndexingMap,
        depth: usize,
        out: &mut Vec<InputAccess>,
        done: &mut HashSet<(usize, IndexingMap)>,
    ) -> Result<(), MapError> {
        if depth > self.functions.len() {
            return Err(MapError::Other(
                "the functions of the kernel call each other in a cycle".into(),
            ));
        }
        // Marked when finished, not when started, so that a cycle still recurses into the
        // depth check above.
        let key = (func, from_root.clone());
        if done.contains(&key) {
            return Ok(());
        }
        let f = self
            .functions
            .get(func)
            .ok_or_else(|| MapError::Other(format!("no function {func}")))?;
        let mut err = None;
        f.body.visit(&mut |b| {
            if err.is_some() {
                return;
            }
            let r = (|| -> Result<(), MapError> {
                match b {
                    Body::Load { input, map } => {
                        let m = compose(from_root, map)?;
                        if !out.iter().any(|a| a.input == *input && a.map == m) {
                            out.push(InputAccess {
                                input: *input,
                                map: m,
                            });
                        }
                    }
                    Body::Call { func, map } | Body::Reduce { func, map, .. } => {
                        let m = compose(from_root, map)?;
                        self.walk(*func, &m, depth + 1, out, done)?;
                    }
                    Body::ReduceTuple { funcs, map, .. } => {
                        let m = compose(from_root, map)?;
                        for &func in funcs {
                            self.walk(func, &m, depth + 1, out, done)?;
                        }
                    }
                    Body::DynCall {
                        func, map, limits, ..
                    } => {
                        let m = compose(from_root, &dyn_call_reach(map, limits))?;
                        self.walk(*func, &m, depth + 1, out, done)?;
                    }
                    _ => {}
                }
                Ok(())
            })();
            if let Err(e) = r {
                err = Some(e);
            }
        });
        if err.is_none() {
            done.insert(key);
        }
        err.map_or(Ok(()), Err)
    }

    /// The reduction at the root, if the root function is one (`reduce(...)` at the top,
    /// possibly converted to the output's type: `convert(reduce(...))`, a reduction in
    /// f32 of f16 values written as f16).
    pub fn root_reduction(&self) -> Option<(&IndexingMap, usize)> {
        if self.root != Root::Elementwise {
            return None;
        }
        let mut b = &self.functions.first()?.body;
        if let Body::Convert(_, inner) = b {
            b = inner;
        }
        match b {
            // A window reduction (reduce-window: the operand read at `d * stride + s`) is
            // a loop, each thread folding its window, as XLA emits it.
            Body::Reduce { map, func, .. } if map.results.iter().all(|r| r.as_var().is_some()) => {
                Some((map, *func))
            }
            _ => None,
        }
    }

    /// The element type of `b`'s value in function `func` (a bare constant takes the type
    /// of what it meets: the other operand, else the function's type).
    pub fn elem_of(&self, func: usize, b: &Body) -> ElemType {
        self.elem_in(b, 0)
            .unwrap_or_else(|| self.function_elem(func))
    }

    /// The element type function `func` computes: the output's for the root, a further
    /// output's for its function, else its body's (the output's when the body says
    /// nothing, a bare constant).
    pub fn function_elem(&self, func: usize) -> ElemType {
        if func == 0 {
            return self.output.elem;
        }
        // A further output of a tuple root computes its tensor's type.
        if let Some(o) = self.more_outputs.iter().find(|o| o.func == func) {
            return o.tensor.elem;
        }
        self.functions
            .get(func)
            .and_then(|f| self.elem_in(&f.body, 0))
            .unwrap_or(self.output.elem)
    }

    /// Whether some function, with every call and reduction in it written in place, has
    /// more than `limit` body nodes: a function read twice by each of a chain of functions
    /// (`add(x, x)` n deep) doubles the size each level. Linear in the functions' sizes.
    pub fn inline_nodes_exceed(&self, limit: u64) -> bool {
        fn size(spec: &KernelSpec, f: usize, memo: &mut Vec<Option<u64>>) -> u64 {
            if let Some(s) = memo[f] {
                return s;
            }
            memo[f] = Some(1); // a cycle, which a spec never has, counts as one node
            let mut calls = Vec::new();
            let mut n = 0u64;
            spec.functions[f].body.visit(&mut |b| {
                n += 1;
                if let Body::Call { func, .. } | Body::Reduce { func, .. } = b {
                    calls.push(*func);
                }
            });
            for g in calls {
                if g < spec.functions.len() {
                    n = n.saturating_add(size(spec, g, memo));
                }
            }
            memo[f] = Some(n);
            n
        }
        let mut memo = vec![None; self.functions.len()];
        (0..self.functions.len()).any(|f| size(self, f, &mut memo) > limit)
    }

    /// The element type of `b`'s value, `None` for a bare constant (and what is made of
    /// bare constants alone).
    pub fn elem_opt(&self, b: &Body) -> Option<ElemType> {
        self.elem_in(b, 0)
    }

    fn elem_in(&self, b: &Body, depth: usize) -> Option<ElemType> {
        if depth > self.functions.len() + 64 {
            return None;
        }
        match b {
            Body::Const(_) => None,
            Body::Load { input, .. } => self.inputs.get(*input).map(|t| t.elem),
            Body::Call { func, .. } | Body::Reduce { func, .. } | Body::DynCall { func, .. } => {
                if *func == 0 {
                    return Some(self.output.elem);
                }
                let f = self.functions.get(*func)?;
                self.elem_in(&f.body, depth + 1)
            }
            // `is-finite` gives a pred, `bitcast-convert` its type; the others keep theirs.
            Body::Unary(UnOp::IsFinite, _) => Some(ElemType::Pred),
            Body::Unary(UnOp::BitcastConvert(t), _) => Some(*t),
            Body::Unary(_, a) => self.elem_in(a, depth + 1),
            Body::Binary(_, a, c) | Body::Select(_, a, c) => self
                .elem_in(a, depth + 1)
                .or_else(|| self.elem_in(c, depth + 1)),
            Body::Convert(t, _) => Some(*t),
            Body::Compare(..) => Some(ElemType::Pred),
            Body::Index { .. } => Some(ElemType::S64),
            Body::Guard {
                then, otherwise, ..
            } => self
                .elem_in(then, depth + 1)
                .or_else(|| self.elem_in(otherwise, depth + 1)),
            Body::Opaque { elem, .. } => Some(*elem),
            Body::Param(_, t) => Some(*t),
            Body::ReduceTuple {
                funcs,
                reducer,
                which,
                ..
            } => reducer
                .get(*which)
                .and_then(|r| self.elem_in(r, depth + 1))
                .or_else(|| {
                    let f = *funcs.get(*which)?;
                    if f == 0 {
                        return Some(self.output.elem);
                    }
                    self.elem_in(&self.functions.get(f)?.body, depth + 1)
                }),
        }
    }

    /// The type of the operands a comparison compares (`f32` when both are bare constants).
    pub fn compared_elem(&self, a: &Body, b: &Body) -> ElemType {
        self.elem_in(a, 0)
            .or_else(|| self.elem_in(b, 0))
            .unwrap_or(ElemType::F32)
    }

    /// The number of reduction groups (1 unless a multi-output reduction has independent
    /// groups).
    pub fn groups(&self) -> usize {
        self.more_outputs
            .iter()
            .map(|o| o.group + 1)
            .max()
            .unwrap_or(1)
    }

    /// Bytes read (each input once) plus bytes written.
    pub fn bytes_moved(&self) -> Result<i64, MapError> {
        let mut total = 0i64;
        for t in self.outputs() {
            total = total
                .checked_add(t.num_bytes()?)
                .ok_or_else(|| MapError::Overflow("the byte count".into()))?;
        }
        for t in &self.inputs {
            total = total
                .checked_add(t.num_bytes()?)
                .ok_or_else(|| MapError::Overflow("the byte count".into()))?;
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_map_is_row_major_by_default_and_follows_minor_to_major() {
        let t = Tensor::row_major("p0", ElemType::F32, &[10, 20]);
        assert_eq!(
            t.layout_map().expect("small").to_string(),
            "(d0, d1) -> (d0 * 20 + d1), domain: d0 in [0, 9], d1 in [0, 19]"
        );
        let t = Tensor {
            minor_to_major: vec![0, 1],
            ..t
        };
        assert_eq!(
            t.layout_map().expect("small").to_string(),
            "(d0, d1) -> (d1 * 10 + d0), domain: d0 in [0, 9], d1 in [0, 19]"
        );
        assert_eq!(t.shape_text(), "f32[10,20]{0,1}");
    }
}
