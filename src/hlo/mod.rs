//! HLO text and its indexing analysis (issue 4).
//!
//! Users paste HLO as XLA prints it — a few instruction lines, a fused computation, or a
//! whole `HloModule` — and ask which elements each output element reads:
//!
//! ```text
//! p0  = f32[20] parameter(0)
//! bc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}
//!
//! indexing bc0         operand 0:  (d0, d1, d2) -> (d1), domain: d0 in [0, 9], ...
//! indexing bc0 from 0  output:     (d0)[s0, s1] -> (s0, d0, s1), domain: ...
//! ```
//!
//! # Public API (stable; the GPU helpers build on it)
//!
//! * Model: [`Module`] ⊃ [`Computation`] ⊃ [`Instr`]; an instruction's operands are
//!   [`InstrId`]s (indices into [`Computation::instrs`]), its [`Shape`] carries dims and the
//!   minor-to-major layout, its attributes are typed ([`Attrs`]).
//! * Parsing: [`parse::parse_hlo`] turns one statement of HLO text (an instruction line, a
//!   computation block, a module header) into [`parse::HloItem`]s; [`Workspace`] collects
//!   them as a session does (loose instruction lines go into a scratch computation).
//! * Per-op indexing, both directions: [`ops::output_to_input`] (one [`MapSet`] per operand)
//!   and [`ops::input_to_output`] (one [`MapSet`] per output, from one operand).
//! * Fusion: [`fusion::output_to_input`] composes per-op maps from the root(s) to every
//!   parameter, simplified and deduplicated ([`fusion::FusionIndexing`], one entry per root
//!   output); [`fusion::input_to_output`] goes the other way from one parameter.
//! * [`inline::flatten`]: nested fusions and calls inlined, tuple plumbing resolved (the
//!   whole-computation commands analyse the flattened computation).
//! * [`epilogue::epilogues`]: heroes, the maps through their epilogues to the roots, the
//!   epilogue subgraphs and their signatures (seed 003).
//! * [`partition::partition`] (seed 003), [`linalg::fuse`] (seed 004),
//!   [`interp`] (the reference interpreter that the soundness tests use).
//! * [`shape::Shape::physical_to_logical`] / [`shape::Shape::logical_to_physical`]:
//!   layouts for coalescing analyses; [`ops::to_physical`] turns a logical map into one
//!   between physical indices (`indexing OP physical`).
//! * Zero-sized tensors give KNOWN EMPTY maps ([`ops::output_to_input`] decides it before
//!   any family runs); shape arithmetic is checked (an overflow is an error).
//! * Inside computation blocks an instruction may leave out its shape when the operands
//!   determine it ([`workspace`] infers it).

pub mod attrs;
pub mod epilogue;
pub mod frames;
pub mod fusion;
pub mod groups;
pub mod inline;
pub mod interp;
pub mod linalg;

pub mod ops;
pub mod parse;
pub mod partition;

pub mod rtvar;
pub mod shape;
pub mod workspace;

pub use attrs::{Attrs, DotDims, GatherDims, PadDim, ScatterDims, SliceDim, WindowDim};
pub use ops::MapSet;
pub use shape::Shape;
pub use workspace::Workspace;

use crate::syntax::Span;

/// Index of an instruction within its computation.
pub type InstrId = usize;

/// One HLO instruction: `ROOT? name = shape opcode(operands), attrs`.
#[derive(Clone, Debug)]
pub struct Instr {
    pub name: String,
    pub shape: Shape,
    pub opcode: String,
    pub operands: Vec<InstrId>,
    pub attrs: Attrs,
    /// Where the instruction was written (for diagnostics); default for generated HLO.
    pub span: Span,
}

impl Instr {
    /// Dims of the (first) array output: a tuple-shaped op (variadic reduce) uses its first
    /// element, as all its outputs share one shape.
    pub fn dims(&self) -> &[i64] {
        self.shape.first_array().map_or(&[], |s| s.0)
    }
    pub fn rank(&self) -> usize {
        self.dims().len()
    }
    /// The instruction's `backend_config` as JSON, if it prints one that parses: bare
    /// (`backend_config={...}`) or as a quoted, escaped string, as XLA prints either.
    pub fn backend_config(&self) -> Option<serde_json::Value> {
        let text = self.attrs.other("backend_config")?;
        if text.starts_with('"') {
            serde_json::from_str(&serde_json::from_str::<String>(text).ok()?).ok()
        } else {
            serde_json::from_str(text).ok()
        }
    }
}

/// An integer of a `backend_config`, which XLA prints as a JSON number or a string
/// (`"num_warps":"4"`).
pub fn json_int(v: &serde_json::Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_str()?.trim().parse().ok())
}

/// A computation: instructions in definition order, one of them the root.
#[derive(Clone, Debug)]
pub struct Computation {
    pub name: String,
    pub instrs: Vec<Instr>,
    pub root: InstrId,
    pub is_entry: bool,
    pub span: Span,
}

impl Computation {
    pub fn find(&self, name: &str) -> Option<InstrId> {
        let name = name.strip_prefix('%').unwrap_or(name);
        self.instrs.iter().rposition(|i| i.name == name)
    }
    pub fn instr(&self, id: InstrId) -> &Instr {
        &self.instrs[id]
    }
    /// Parameter instructions ordered by parameter number.
    pub fn parameters(&self) -> Vec<InstrId> {
        let mut ps: Vec<(i64, InstrId)> = self
            .instrs
            .iter()
            .enumerate()
            .filter(|(_, i)| i.opcode == "parameter")
            .map(|(k, i)| (i.attrs.parameter_number.unwrap_or(k as i64), k))
            .collect();
        ps.sort();
        ps.into_iter().map(|(_, k)| k).collect()
    }
    /// The outputs of the computation: the operands of a `tuple` root, else the root.
    pub fn outputs(&self) -> Vec<InstrId> {
        let r = &self.instrs[self.root];
        if r.opcode == "tuple" {
            r.operands.clone()
        } else {
            vec![self.root]
        }
    }
    /// Users of every instruction (each user listed once per operand slot).
    pub fn users(&self) -> Vec<Vec<InstrId>> {
        let mut u = vec![Vec::new(); self.instrs.len()];
        for (k, i) in self.instrs.iter().enumerate() {
            for &o in &i.operands {
                u[o].push(k);
            }
        }
        u
    }
}

/// A module: computations by name, one of them the entry.
#[derive(Clone, Debug, Default)]
pub struct Module {
    pub name: String,
    pub computations: Vec<Computation>,
    /// The stack-frame tables printed after the `HloModule` line, when the module has them.
    pub frames: frames::StackFrames,
}

impl Module {
    pub fn computation(&self, name: &str) -> Option<&Computation> {
        let name = name.strip_prefix('%').unwrap_or(name);
        self.computations.iter().rev().find(|c| c.name == name)
    }
    pub fn entry(&self) -> Option<&Computation> {
        self.computations.iter().find(|c| c.is_entry)
    }
    /// The computation a `fusion` instruction calls (`calls=`), when `ins` is one and the
    /// callee is defined: where a fusion's name leads the commands that look inside it.
    pub fn fused_computation(&self, ins: &Instr) -> Option<&Computation> {
        ins.attrs
            .calls
            .as_deref()
            .filter(|_| ins.opcode == "fusion")
            .and_then(|n| self.computation(n))
    }
}
