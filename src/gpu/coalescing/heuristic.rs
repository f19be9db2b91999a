//! XLA's quick read-coalescing check between a producer and its consumer
//! (`IsReadCoalescedHeuristic`, xla/service/gpu/model/coalescing_analysis.cc): what
//! priority fusion asks before it can afford the indexing analysis, and what the cost
//! model uses when that analysis has no answer. One verdict for every operand of the
//! fused pair:
//!
//! 1. unless the fused pair is a transpose fusion (the tiled transpose reads rows of its
//!    input), a producer or consumer that transposes the minor dimension (a `transpose` or
//!    `copy` that moves the most minor dimension of size > 1; for a fusion, any
//!    instruction inside it) breaks coalescing — except a transpose of a broadcast or an
//!    iota (through bitcasts and unary elementwise ops), which reads few elements;
//! 2. a reduction fusion made of two fusible reductions (a producer and a consumer that
//!    are both reductions, or fusions rooted at one) breaks coalescing;
//! 3. everything else is coalesced.
//!
//! ```text
//! t = f32[128,64] transpose(p0), dimensions={1,0};  e = f32[128,64] exponential(t)
//! heuristic for t into e: a loop fusion that transposes the minor dimension: not coalesced
//! ```
//!
//! [`fuse`] builds the fused pair as one computation, so the exact analysis can be run on
//! it and set beside the heuristic. Shown running in `sessions/gpu/coalescing-heuristic.ixm`.

use crate::hlo::{Computation, Instr, InstrId, Module, Shape};

/// The emitter XLA's fusion analysis would pick for the fused pair, as far as the
/// heuristic cares.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FusionKind {
    Loop,
    Transpose,
    Reduction,
}

impl FusionKind {
    pub fn name(self) -> &'static str {
        match self {
            FusionKind::Loop => "loop",
            FusionKind::Transpose => "transpose",
            FusionKind::Reduction => "reduction",
        }
    }
}

/// The heuristic's answer and each rule it checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Heuristic {
    pub coalesced: bool,
    /// One line per rule, in XLA's order: what it looked at and what it found.
    pub rules: Vec<String>,
}

/// The most minor dimension of size > 1 and its position in minor-to-major order (`None`
/// and the rank when every dimension has size 1): XLA's `MostMinorNonTrivialDimension`.
fn most_minor_non_trivial(shape: &Shape) -> (Option<usize>, usize) {
    let dims = shape.dims();
    let m2m = shape.minor_to_major();
    for (pos, &d) in m2m.iter().enumerate() {
        if dims.get(d).copied().unwrap_or(1) > 1 {
            return (Some(d), pos);
        }
    }
    (None, m2m.len())
}

/// Whether `comp.instrs[id]` transposes the most minor dimension (XLA's
/// `TransposesMinorDimension`): a `copy` whose operand and output have different most
/// minor non-trivial dimensions; a `transpose` whose most minor non-trivial output
/// dimension comes from an operand dimension more major than the operand's most minor
/// non-trivial one; a fusion when any instruction inside it does.
pub fn transposes_minor_dimension(module: &Module, comp: &Computation, id: InstrId) -> bool {
    transposes(module, comp, id, 0)
}

fn transposes(module: &Module, comp: &Computation, id: InstrId, depth: usize) -> bool {
    let ins = &comp.instrs[id];
    let operand = |k: usize| ins.operands.get(k).map(|&o| &comp.instrs[o].shape);
    match ins.opcode.as_str() {
        "fusion" if depth < 64 => module
            .fused_computation(ins)
            .is_some_and(|c| (0..c.instrs.len()).any(|k| transposes(module, c, k, depth + 1))),
        "copy" => operand(0)
            .is_some_and(|op| most_minor_non_trivial(op).0 != most_minor_non_trivial(&ins.shape).0),
        "transpose" => {
            let (Some(op), Some(perm)) = (operand(0), ins.attrs.dimensions.as_ref()) else {
                return false;
            };
            let m2m = op.minor_to_major();
            let mut position = vec![0usize; m2m.len()];
            for (p, &d) in m2m.iter().enumerate() {
                if let Some(x) = position.get_mut(d) {
                    *x = p;
                }
            }
            let first = most_minor_non_trivial(op).1;
            let dims = ins.shape.dims();
            for out_dim in ins.shape.minor_to_major() {
                if dims.get(out_dim).copied().unwrap_or(1) == 1 {
                    continue;
                }
                return perm
                    .get(out_dim)
                    .and_then(|&d| position.get(d as usize))
                    .is_some_and(|&p| p > first);
            }
            false
        }
        _ => false,
    }
}

/// Whether an instruction is elementwise in XLA's sense (unary ops are what matters here:
/// the walk below only follows instructions of one operand).
fn elementwise(ins: &Instr) -> bool {
    crate::hlo::ops::elementwise::OPCODES.contains(&ins.opcode.as_str())
}

/// XLA's `is_broadcast` inside the heuristic: following single operands through bitcasts
/// and elementwise ops, a `broadcast` or an `iota` is reached.
fn is_broadcast(comp: &Computation, mut id: InstrId) -> bool {
    for _ in 0..comp.instrs.len() + 1 {
        let ins = &comp.instrs[id];
        if ins.opcode == "broadcast" || ins.opcode == "iota" {
            return true;
        }
        if ins.operands.len() != 1 {
            return false;
        }
        if ins.opcode != "bitcast" && !elementwise(ins) {
            return false;
        }
        id = ins.operands[0];
    }
    false
}

/// The first instruction (by name) that transposes the minor dimension of something other
/// than a broadcast or an iota: `id` itself, or one inside it when it is a fusion.
fn bad_transpose(module: &Module, comp: &Computation, id: InstrId) -> Option<String> {
    let ins = &comp.instrs[id];
    let check = |c: &Computation, k: InstrId| {
        let i = &c.instrs[k];
        (transposes_minor_dimension(module, c, k)
            && !i.operands.first().is_some_and(|&o| is_broadcast(c, o)))
        .then(|| describe(c, k))
    };
    if ins.opcode == "fusion" {
        let c = module.fused_computation(ins)?;
        return (0..c.instrs.len()).find_map(|k| check(c, k));
    }
    check(comp, id)
}

fn describe(comp: &Computation, id: InstrId) -> String {
    let ins = &comp.instrs[id];
    match ins.operands.first() {
        Some(&o) => format!(
            "{} ({} {} -> {})",
            ins.name, ins.opcode, comp.instrs[o].shape, ins.shape
        ),
        None => ins.name.clone(),
    }
}

/// Whether an instruction is a fusible reduction (XLA's `IsInputFusibleReduction`, as far
/// as ixmap's launches go: a `reduce`, or a fusion one of whose roots is one, possibly
/// converted or bitcast).
pub fn input_fusible_reduction(module: &Module, comp: &Computation, id: InstrId) -> bool {
    let ins = &comp.instrs[id];
    if ins.opcode == "fusion" {
        return module.fused_computation(ins).is_some_and(|c| {
            c.outputs().into_iter().any(|r| {
                let mut k = r;
                for _ in 0..c.instrs.len() + 1 {
                    let i = &c.instrs[k];
                    match i.opcode.as_str() {
                        "reduce" => return true,
                        "convert" | "bitcast" | "copy" if i.operands.len() == 1 => {
                            k = i.operands[0]
                        }
                        _ => return false,
                    }
                }
                false
            })
        });
    }
    ins.opcode == "reduce"
}

/// XLA's `IsReadCoalescedHeuristic` for `producer` fused into `consumer` (both in
/// `comp`), the fused pair being a fusion of `kind`.
pub fn heuristic(
    module: &Module,
    comp: &Computation,
    producer: InstrId,
    consumer: InstrId,
    kind: FusionKind,
) -> Heuristic {
    let mut rules = Vec::new();
    let name = |k: InstrId| comp.instrs[k].name.clone();
    if kind == FusionKind::Transpose {
        rules.push(
            "a transpose fusion: its tiled transpose reads rows of the input, so transposes are not held against it"
                .to_string(),
        );
    } else {
        for (role, k) in [("producer", producer), ("consumer", consumer)] {
            if let Some(what) = bad_transpose(module, comp, k) {
                rules.push(format!(
                    "the {role} {} transposes the minor dimension: {what}, not of a broadcast or an iota",
                    name(k)
                ));
                return Heuristic {
                    coalesced: false,
                    rules,
                };
            }
        }
        rules.push(format!(
            "a {} fusion, and neither {} nor {} transposes the minor dimension (but of a broadcast or an iota)",
            kind.name(),
            name(producer),
            name(consumer)
        ));
    }
    let both = input_fusible_reduction(module, comp, producer)
        && input_fusible_reduction(module, comp, consumer);
    if kind == FusionKind::Reduction && both {
        rules.push(format!(
            "a reduction fusion of two reductions ({} and {}): fusing them breaks coalescing",
            name(producer),
            name(consumer)
        ));
        return Heuristic {
            coalesced: false,
            rules,
        };
    }
    if kind == FusionKind::Reduction {
        rules.push("a reduction fusion with one reduction".to_string());
    }
    Heuristic {
        coalesced: true,
        rules,
    }
}

/// `producer` fused into `consumer` as one computation (named `producer+consumer`): a
/// parameter for each distinct operand of the two (but the producer itself; constants are
/// copied), then the producer, then the consumer as the root. `None` when the consumer
/// does not use the producer. Fusions inside stay fusion instructions (calling their
/// computations); flatten the result to inline them.
pub fn fuse(comp: &Computation, producer: InstrId, consumer: InstrId) -> Option<Computation> {
    if !comp.instrs[consumer].operands.contains(&producer) || producer == consumer {
        return None;
    }
    let mut instrs: Vec<Instr> = Vec::new();
    let mut new_id: Vec<Option<InstrId>> = vec![None; comp.instrs.len()];
    let mut params = 0i64;
    for &k in [producer, consumer].iter() {
        for &o in &comp.instrs[k].operands {
            if o == producer || new_id[o].is_some() {
                continue;
            }
            let src = &comp.instrs[o];
            let ins = if src.opcode == "constant" {
                src.clone()
            } else {
                let mut attrs = crate::hlo::Attrs::default();
                attrs.parameter_number = Some(params);
                params += 1;
                Instr {
                    name: src.name.clone(),
                    shape: src.shape.clone(),
                    opcode: "parameter".into(),
                    operands: vec![],
                    attrs,
                    span: src.span,
                }
            };
            new_id[o] = Some(instrs.len());
            instrs.push(ins);
        }
    }
    for &k in [producer, consumer].iter() {
        let mut ins = comp.instrs[k].clone();
        ins.operands = ins
            .operands
            .iter()
            .map(|&o| new_id[o])
            .collect::<Option<Vec<_>>>()?;
        new_id[k] = Some(instrs.len());
        instrs.push(ins);
    }
    Some(Computation {
        name: format!(
            "{}+{}",
            comp.instrs[producer].name, comp.instrs[consumer].name
        ),
        root: instrs.len() - 1,
        instrs,
        is_entry: false,
        span: comp.span,
    })
}

/// The fusion kind of a launch strategy: a tiled transpose is XLA's transpose emitter, a
/// row or column reduction its reduction emitter, anything else a loop.
pub fn kind_of(strategy: &crate::gpu::launch::Strategy) -> FusionKind {
    use crate::gpu::launch::Strategy;
    match strategy {
        Strategy::TiledTranspose { .. } => FusionKind::Transpose,
        Strategy::RowReduction | Strategy::ColumnReduction => FusionKind::Reduction,
        _ => FusionKind::Loop,
    }
}

/// The heuristic for `producer` into `consumer` beside the exact analysis of the fused
/// pair under XLA's default launch.
#[derive(Clone, Debug)]
pub struct PairReport {
    pub producer: String,
    pub consumer: String,
    pub kind: FusionKind,
    pub heuristic: Heuristic,
    /// The fused pair's launch in words and its analysis, or why there is none.
    pub exact: Result<(String, super::Report), String>,
}

/// [`heuristic`] for `producer` fused into `consumer`, and the exact analysis of the
/// fused pair ([`fuse`], flattened) under XLA's default launch for an H100; the fusion
/// kind comes from that launch (when the pair has no launch, from its root: a `reduce`
/// is a reduction fusion, anything else a loop).
pub fn pair(
    module: &Module,
    comp: &Computation,
    producer: InstrId,
    consumer: InstrId,
) -> Result<PairReport, String> {
    use crate::gpu::launch::{choose_default, DeviceLimits};
    let fused = fuse(comp, producer, consumer).ok_or_else(|| {
        format!(
            "{} does not read {}: only a producer and its consumer fuse",
            comp.instrs[consumer].name, comp.instrs[producer].name
        )
    })?;
    let flat = crate::hlo::inline::flatten(module, &fused);
    let exact = crate::gpu::from_hlo::from_computation(module, &flat).and_then(|spec| {
        let (l, _) = choose_default(&spec, None, DeviceLimits::H100).map_err(|e| e.to_string())?;
        let r = super::analyse(&spec, &l).map_err(|e| e.to_string())?;
        Ok((l, r))
    });
    let kind = match &exact {
        Ok((l, _)) => kind_of(&l.strategy),
        Err(_) if flat.instrs[flat.root].opcode == "reduce" => FusionKind::Reduction,
        Err(_) => FusionKind::Loop,
    };
    Ok(PairReport {
        producer: comp.instrs[producer].name.clone(),
        consumer: comp.instrs[consumer].name.clone(),
        kind,
        heuristic: heuristic(module, comp, producer, consumer, kind),
        exact: exact.map(|(l, r)| (l.describe(), r)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::workspace::Target;

    /// A workspace of instruction lines, one statement each.
    fn workspace(lines: &[&str]) -> crate::hlo::Workspace {
        let mut ws = crate::hlo::Workspace::new();
        for l in lines {
            let item = crate::hlo::parse::parse_hlo(l, 0).expect("HLO parses");
            ws.define(item).expect("defines");
        }
        ws
    }

    fn instr<'a>(ws: &'a crate::hlo::Workspace, name: &str) -> (&'a Computation, InstrId) {
        match ws.resolve(name) {
            Some(Target::Instr(c, id)) => (c, id),
            _ => panic!("{name} is an instruction"),
        }
    }

    #[test]
    fn a_transpose_of_the_minor_dimension_is_caught_and_one_of_a_broadcast_is_not() {
        let s = workspace(&[
            "p0 = f32[64,128] parameter(0)",
            "t = f32[128,64] transpose(p0), dimensions={1,0}",
            "e = f32[128,64] exponential(t)",
            "v = f32[64] parameter(1)",
            "b = f32[128,64] broadcast(v), dimensions={1}",
            "tb = f32[64,128] transpose(b), dimensions={1,0}",
            "n = f32[64,128] negate(tb)",
        ]);
        let (c, t) = instr(&s, "t");
        let (_, e) = instr(&s, "e");
        assert!(transposes_minor_dimension(&s.module, c, t));
        assert!(!heuristic(&s.module, c, t, e, FusionKind::Loop).coalesced);
        assert!(heuristic(&s.module, c, t, e, FusionKind::Transpose).coalesced);
        let (_, tb) = instr(&s, "tb");
        let (_, n) = instr(&s, "n");
        assert!(transposes_minor_dimension(&s.module, c, tb));
        assert!(heuristic(&s.module, c, tb, n, FusionKind::Loop).coalesced);
        let f = fuse(c, t, e).expect("e uses t");
        assert_eq!(f.instrs.len(), 3);
        assert_eq!(f.instrs[0].opcode, "parameter");
        assert_eq!(f.instrs[f.root].name, "e");
    }

    #[test]
    fn a_transpose_that_keeps_the_minor_dimension_or_moves_unit_dims_is_fine() {
        let s = workspace(&[
            "p0 = f32[8,16,32] parameter(0)",
            "t = f32[16,8,32] transpose(p0), dimensions={1,0,2}",
            "q = f32[32,1] parameter(1)",
            "u = f32[1,32] transpose(q), dimensions={1,0}",
        ]);
        let (c, t) = instr(&s, "t");
        assert!(!transposes_minor_dimension(&s.module, c, t));
        let (_, u) = instr(&s, "u");
        // q's most minor dimension has size 1: the first non-trivial one is dimension 0,
        // which stays the most minor non-trivial one of u.
        assert!(!transposes_minor_dimension(&s.module, c, u));
    }
}
