//! Reduction groups of a multi-output reduction fusion: which roots can be emitted as
//! independent groups (each group its own slice of the kernel, as XLA's reduction emitter
//! does), and which must stay together because they share computed values.
//!
//! Two roots are in one group when an instruction other than a parameter, a constant or
//! a broadcast of a scalar (all cheap to read again) is reachable from both, i.e. when
//! emitting them apart would compute that instruction twice; and every root that is not
//! a reduction joins one group with the other non-reduction roots.
//!
//! ```text
//! p -> exp -> reduce r0          r0, r1 share exp:  group 0: r0, r1
//!         \-> reduce r1          r2 reads only p:   group 1: r2
//! p -> reduce r2
//! ```

use super::{Computation, InstrId};
use std::collections::HashSet;

/// One group: its roots (instruction ids, in output order) and the shared instructions
/// that forced them together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub roots: Vec<InstrId>,
    pub shared: Vec<InstrId>,
}

fn cheap(comp: &Computation, id: InstrId) -> bool {
    let ins = &comp.instrs[id];
    match ins.opcode.as_str() {
        "parameter" | "constant" | "iota" => true,
        "broadcast" => ins
            .operands
            .first()
            .is_some_and(|&o| comp.instrs[o].dims().is_empty() || cheap(comp, o)),
        _ => false,
    }
}

/// The reduction groups of `comp`'s outputs, in the order of their first root.
pub fn reduction_groups(comp: &Computation) -> Vec<Group> {
    let mut outs = comp.outputs();
    let mut seen_out = HashSet::new();
    outs.retain(|o| seen_out.insert(*o));
    let n = outs.len();
    let reach: Vec<HashSet<InstrId>> = outs
        .iter()
        .map(|&r| {
            let mut seen = HashSet::new();
            let mut stack = vec![r];
            while let Some(v) = stack.pop() {
                if cheap(comp, v) || !seen.insert(v) {
                    continue;
                }
                stack.extend(comp.instrs[v].operands.iter().copied());
            }
            seen
        })
        .collect();
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
    let mut shared: Vec<HashSet<InstrId>> = vec![HashSet::new(); n];
    for i in 0..n {
        for j in i + 1..n {
            let common: Vec<InstrId> = reach[i].intersection(&reach[j]).copied().collect();
            if !common.is_empty() {
                let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                parent[b.max(a)] = a.min(b);
                shared[i].extend(common.iter().copied());
            }
        }
    }
    let is_reduce = |k: usize| comp.instrs[outs[k]].opcode == "reduce";
    let others: Vec<usize> = (0..n).filter(|&k| !is_reduce(k)).collect();
    for w in others.windows(2) {
        let (a, b) = (find(&mut parent, w[0]), find(&mut parent, w[1]));
        parent[b.max(a)] = a.min(b);
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
        let src = "f {\n p = f32[4,8] parameter(0)\n z = f32[] constant(0)\n e = f32[4,8] exponential(p)\n r0 = f32[4] reduce(e, z), dimensions={1}, to_apply=add\n r1 = f32[8] reduce(e, z), dimensions={0}, to_apply=add\n r2 = f32[4] reduce(p, z), dimensions={1}, to_apply=add\n ROOT t = (f32[4], f32[8], f32[4]) tuple(r0, r1, r2)\n}";
        assert_eq!(
            groups_of(src),
            vec![vec!["r0".to_string(), "r1".into()], vec!["r2".into()]]
        );
    }

    #[test]
    fn non_reduction_roots_share_a_group() {
        let src = "f {\n p = f32[4,8] parameter(0)\n q = f32[4,8] parameter(1)\n z = f32[] constant(0)\n r0 = f32[4] reduce(p, z), dimensions={1}, to_apply=add\n n = f32[4,8] negate(p)\n m = f32[4,8] negate(q)\n ROOT t = (f32[4], f32[4,8], f32[4,8]) tuple(r0, n, m)\n}";
        assert_eq!(
            groups_of(src),
            vec![vec!["r0".to_string()], vec!["n".into(), "m".into()]]
        );
    }
}
