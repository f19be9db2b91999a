//! Reduction groups of a multi-output reduction fusion: which roots can be emitted as
//! independent groups (each group its own slice of the kernel, as XLA's reduction emitter
//! does), and which must stay together. XLA's rule (`GroupDisjointReductions`,
//! reduction_base.cc): roots are grouped when they share any instruction of the fusion —
//! parameters included, so the groups have disjoint sets of parameters and of the
//! instructions that reach them — with two exceptions:
//!
//! - every root that is not a reduction joins one group with the other non-reduction
//!   roots (XLA: read-after-write hazards between them are not tracked), and a side output
//!   that a reduction reads stays in the reduction's group;
//! - a constant, a scalar, or a broadcast of one is cheap to compute again: it ties at
//!   most one reduction to the roots it reaches (the first in output order).
//!
//! ```text
//! p -> exp -> reduce r0          r0, r1 share exp (and p):  group 0: r0, r1
//!         \-> reduce r1          r2 reads q alone:          group 1: r2
//! q -> reduce r2
//! ```

use super::{Computation, InstrId};
use std::collections::HashSet;

/// One group: its roots (instruction ids, in output order) and the shared instructions
/// that tied them together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub roots: Vec<InstrId>,
    pub shared: Vec<InstrId>,
}

/// XLA's `IsBroadcastedConstantOrScalar`: a constant, a scalar, or a broadcast of one.
fn broadcasted_constant_or_scalar(comp: &Computation, id: InstrId) -> bool {
    let ins = &comp.instrs[id];
    let plain = |i: &super::Instr| {
        i.opcode == "constant" || (!i.shape.is_tuple() && i.shape.dims().is_empty())
    };
    plain(ins)
        || (ins.opcode == "broadcast"
            && ins
                .operands
                .first()
                .is_some_and(|&o| plain(&comp.instrs[o])))
}

/// Whether a root is a reduction (its hero, through conversions, bitcasts and copies, is a
/// `reduce`).
fn reduction_root(comp: &Computation, mut id: InstrId) -> bool {
    for _ in 0..=comp.instrs.len() {
        let ins = &comp.instrs[id];
        match ins.opcode.as_str() {
            "reduce" => return true,
            "convert" | "bitcast" | "copy" if ins.operands.len() == 1 => id = ins.operands[0],
            _ => return false,
        }
    }
    false
}

/// The reduction groups of `comp`'s outputs, in the order of their first root.
pub fn reduction_groups(comp: &Computation) -> Vec<Group> {
    let mut outs = comp.outputs();
    let mut seen_out = HashSet::new();
    outs.retain(|o| seen_out.insert(*o));
    let n = outs.len();
    if n <= 1 {
        return vec![Group {
            roots: outs,
            shared: vec![],
        }];
    }
    // The outputs each instruction reaches (itself, when it is one).
    let mut reach: Vec<Vec<bool>> = vec![vec![false; n]; comp.instrs.len()];
    for (k, &r) in outs.iter().enumerate() {
        let mut stack = vec![r];
        while let Some(v) = stack.pop() {
            if reach[v][k] {
                continue;
            }
            reach[v][k] = true;
            stack.extend(comp.instrs[v].operands.iter().copied());
        }
    }
    let is_reduce: Vec<bool> = outs.iter().map(|&r| reduction_root(comp, r)).collect();
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while p[r] != r {
            r = p[r];
        }
        let mut y = x;
        while p[y] != r {
            let next = p[y];
            p[y] = r;
            y = next;
        }
        r
    }
    fn union(p: &mut [usize], a: usize, b: usize) {
        let (a, b) = (find(p, a), find(p, b));
        p[b.max(a)] = a.min(b);
    }
    let others: Vec<usize> = (0..n).filter(|&k| !is_reduce[k]).collect();
    for w in others.windows(2) {
        union(&mut parent, w[0], w[1]);
    }
    let mut shared: Vec<Vec<InstrId>> = vec![Vec::new(); n];
    for (id, outs_reached) in reach.iter().enumerate() {
        let cheap = broadcasted_constant_or_scalar(comp, id);
        let mut to_reduce = false;
        let mut reached = Vec::new();
        for k in 0..n {
            if is_reduce[k] && cheap && to_reduce {
                continue;
            }
            if outs_reached[k] {
                reached.push(k);
                to_reduce |= is_reduce[k];
            }
        }
        for &k in reached.iter().skip(1) {
            union(&mut parent, reached[0], k);
        }
        // Record what tied roots together: an instruction no root is alone in reaching,
        // and not a root itself.
        if reached.len() > 1 && !outs.contains(&id) {
            shared[reached[0]].push(id);
        }
    }
    let mut groups: Vec<(usize, Group)> = Vec::new();
    for k in 0..n {
        let r = find(&mut parent, k);
        let pos = match groups.iter().position(|(g, _)| *g == r) {
            Some(p) => p,
            None => {
                groups.push((
                    r,
                    Group {
                        roots: vec![],
                        shared: vec![],
                    },
                ));
                groups.len() - 1
            }
        };
        let g = &mut groups[pos].1;
        g.roots.push(outs[k]);
        for &s in &shared[k] {
            if !g.shared.contains(&s) {
                g.shared.push(s);
            }
        }
    }
    groups
        .into_iter()
        .map(|(_, mut g)| {
            g.shared.sort();
            g
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::parse::parse_hlo;
    use crate::hlo::Workspace;

    fn groups_of(src: &str) -> Vec<Vec<String>> {
        let mut ws = Workspace::new();
        let names = ws.define(parse_hlo(src, 0).unwrap()).unwrap();
        let c = ws.module.computation(&names[0]).unwrap();
        reduction_groups(c)
            .iter()
            .map(|g| g.roots.iter().map(|&r| c.instrs[r].name.clone()).collect())
            .collect()
    }

    #[test]
    fn shared_exponential_joins_two_reductions() {
        let src = "f {\n p = f32[4,8] parameter(0)\n q = f32[4,8] parameter(1)\n z = f32[] constant(0)\n e = f32[4,8] exponential(p)\n r0 = f32[4] reduce(e, z), dimensions={1}, to_apply=add\n r1 = f32[8] reduce(e, z), dimensions={0}, to_apply=add\n r2 = f32[4] reduce(q, z), dimensions={1}, to_apply=add\n ROOT t = (f32[4], f32[8], f32[4]) tuple(r0, r1, r2)\n}";
        assert_eq!(
            groups_of(src),
            vec![vec!["r0".to_string(), "r1".into()], vec!["r2".into()]]
        );
    }

    #[test]
    fn a_shared_parameter_joins_reductions_and_a_shared_scalar_does_not() {
        // r0 and r2 both read p (XLA's groups have disjoint parameters); the constant z
        // is the init of all three, and ties none of them.
        let src = "f {\n p = f32[4,8] parameter(0)\n q = f32[4,8] parameter(1)\n z = f32[] constant(0)\n e = f32[4,8] exponential(p)\n r0 = f32[4] reduce(e, z), dimensions={1}, to_apply=add\n r1 = f32[4] reduce(q, z), dimensions={1}, to_apply=add\n r2 = f32[4] reduce(p, z), dimensions={1}, to_apply=add\n ROOT t = (f32[4], f32[4], f32[4]) tuple(r0, r1, r2)\n}";
        assert_eq!(
            groups_of(src),
            vec![vec!["r0".to_string(), "r2".into()], vec!["r1".into()]]
        );
    }

    #[test]
    fn non_reduction_roots_share_a_group() {
        let src = "f {\n p = f32[4,8] parameter(0)\n q = f32[4,8] parameter(1)\n s = f32[4,8] parameter(2)\n z = f32[] constant(0)\n r0 = f32[4] reduce(s, z), dimensions={1}, to_apply=add\n n = f32[4,8] negate(p)\n m = f32[4,8] negate(q)\n ROOT t = (f32[4], f32[4,8], f32[4,8]) tuple(r0, n, m)\n}";
        assert_eq!(
            groups_of(src),
            vec![vec!["r0".to_string()], vec!["n".into(), "m".into()]]
        );
    }

    #[test]
    fn a_side_output_stays_with_its_reduction() {
        let src = "f {\n p = f32[4,8] parameter(0)\n q = f32[4,8] parameter(1)\n z = f32[] constant(0)\n e = f32[4,8] exponential(p)\n r0 = f32[4] reduce(e, z), dimensions={1}, to_apply=add\n r1 = f32[4] reduce(q, z), dimensions={1}, to_apply=add\n ROOT t = (f32[4], f32[4,8], f32[4]) tuple(r0, e, r1)\n}";
        assert_eq!(
            groups_of(src),
            vec![vec!["r0".to_string(), "e".into()], vec!["r1".into()]]
        );
    }
}
