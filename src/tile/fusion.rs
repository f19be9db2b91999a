//! Tiles of every instruction of a fusion, over the fusion's *iteration space*: the output's
//! dimensions and, for a fusion with a dot, the dot's contraction dimensions (the K loop).
//!
//! A block-level emitter (seed 001: "block-level tiling … lowering to Triton") computes a
//! fusion one output tile at a time, and inside a dot one K step at a time. So the tile of
//! each instruction is a function of the tile index `(t0, .., tK)`:
//!
//! ```text
//! lhs = f32[64, 128]   rhs = f32[128, 96]   dot = f32[64, 96] dot(lhs, rhs)  (contract 128)
//! iteration space (d0, d1, d2): d0 in [0, 63], d1 in [0, 95], d2 in [0, 127] (d2 = K)
//! sizes=(16, 32) k=64:   lhs tile (t0 * 16, t2 * 64) sizes (16, 64)    M x K per K step
//!                        rhs tile (t2 * 64, t1 * 32) sizes (64, 32)    K x N per K step
//!                        dot tile (t0 * 16, t1 * 32) sizes (16, 32)    the accumulator
//! ```
//!
//! The maps from the iteration space to every instruction are built as
//! [`crate::hlo::fusion::output_to_input_from`] builds them to the parameters (users
//! before operands, composed and deduplicated), except at the dot: there the dot's
//! contraction range variables become the iteration space's K dimensions. An instruction
//! with several users gets one set of maps, so shared instructions are tiled once. Every
//! tile comes from [`super::derive`] and is checked by [`super::check_exact`].

use super::check::Verdict;
use super::{check_exact, contains, derive, NotATile, OperandTile};
use crate::hlo::{fusion as hf, Computation, InstrId, Module};
use crate::map::{IndexingMap, Limits, Variable};

/// The iteration space of a fusion: its output's extents, then the contraction's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IterSpace {
    pub out: Vec<i64>,
    /// Extents of the dot's contraction dimensions (empty without `k`).
    pub k: Vec<i64>,
    /// The dot whose contraction is tiled.
    pub dot: Option<InstrId>,
}

impl IterSpace {
    pub fn extents(&self) -> Vec<i64> {
        self.out.iter().chain(&self.k).copied().collect()
    }
}

/// The maps from the iteration space to one instruction.
#[derive(Clone, Debug)]
pub struct Reach {
    pub id: InstrId,
    pub maps: Vec<IndexingMap>,
}

/// Maps from the iteration space of `root` to every instruction it reaches (users before
/// operands). With `contract`, the fusion's dot (exactly one) contributes its contraction
/// dimensions to the space.
pub fn instruction_maps(
    module: &Module,
    comp: &Computation,
    root: InstrId,
    contract: bool,
) -> Result<(IterSpace, Vec<Reach>), String> {
    let order = hf::reverse_topological(comp, &[root]);
    let out: Vec<i64> = comp.instrs[root].dims().to_vec();
    let n = out.len();
    let (dot, k) = if contract {
        let dots: Vec<InstrId> = order
            .iter()
            .copied()
            .filter(|&i| matches!(comp.instrs[i].opcode.as_str(), "dot" | "scaled-dot"))
            .collect();
        match dots.as_slice() {
            [] => {
                return Err(format!(
                    "`k=` tiles a dot's contraction, and `{}` reaches no dot (a dot inside a nested fusion is not looked into)",
                    comp.instrs[root].name
                ))
            }
            [d] => {
                let ins = &comp.instrs[*d];
                let dd = ins.attrs.dot.clone().unwrap_or_default();
                let lhs = ins
                    .operands
                    .first()
                    .map(|&o| comp.instrs[o].dims().to_vec())
                    .unwrap_or_default();
                let k: Option<Vec<i64>> = dd
                    .lhs_contracting
                    .iter()
                    .map(|&i| usize::try_from(i).ok().and_then(|i| lhs.get(i).copied()))
                    .collect();
                match k {
                    Some(k) if !k.is_empty() => (Some(*d), k),
                    _ => {
                        return Err(format!(
                            "the dot `{}` contracts no dimension: there is no K loop to tile",
                            ins.name
                        ))
                    }
                }
            }
            _ => {
                return Err(format!(
                    "`k=` tiles one dot's contraction, and `{}` reaches {} dots",
                    comp.instrs[root].name,
                    dots.len()
                ))
            }
        }
    } else {
        (None, vec![])
    };
    let c = k.len();
    let space = IterSpace {
        out: out.clone(),
        k: k.clone(),
        dot,
    };
    // (d0, .., d_{n-1}, d_n, .., d_{n+c-1}) -> (d0, .., d_{n-1})
    let start = {
        let dims = crate::map::default_vars(crate::map::VarKind::Dim, &space.extents());
        let results = (0..n as u32).map(crate::expr::Expr::var).collect();
        IndexingMap::new(dims, vec![], vec![], results, vec![])
    };
    let mut sets: Vec<Option<Vec<IndexingMap>>> = vec![None; comp.instrs.len()];
    sets[root] = Some(vec![start]);
    let mut reached = Vec::new();
    for id in order {
        let Some(set) = sets[id].take() else { continue };
        reached.push(Reach {
            id,
            maps: set.clone(),
        });
        let ins = &comp.instrs[id];
        if ins.opcode == "parameter" {
            continue;
        }
        let mut per_operand = hf::op_output_to_input(module, comp, id);
        let mut incoming = set;
        if Some(id) == dot {
            // The contraction's range variables become the K dimensions: the dot's own
            // maps gain them as dimensions, and the maps reaching the dot pass them on.
            for maps in &mut per_operand {
                for m in maps.iter_mut() {
                    *m = promote(m, c)?;
                }
            }
            for m in &mut incoming {
                *m = extend(m, n, c);
            }
        }
        for (kk, &opnd) in ins.operands.iter().enumerate() {
            let Some(op_maps) = per_operand.get(kk) else {
                continue;
            };
            let target = sets[opnd].get_or_insert_with(Vec::new);
            for m in &incoming {
                for o in op_maps {
                    let x = hf::compose_simplified(m, o);
                    if !target.contains(&x) {
                        target.push(x);
                    }
                }
            }
        }
    }
    Ok((space, reached))
}

/// A map whose first `c` range variables become its last `c` dimensions (same variable
/// indices: dimensions come first, then range variables).
pub fn promote(m: &IndexingMap, c: usize) -> Result<IndexingMap, String> {
    if m.ranges.len() < c {
        return Err(format!(
            "the map has {} range variable{} but {c} contraction size{} given",
            m.ranges.len(),
            if m.ranges.len() == 1 { "" } else { "s" },
            if c == 1 { " is" } else { "s are" }
        ));
    }
    let mut out = m.clone();
    let moved: Vec<Variable> = out.ranges.drain(..c).collect();
    out.dims.extend(moved);
    Ok(out)
}

/// `(d0, ..)[..] -> (r0, ..)` over a space of `n + c` dims, with `d_n, .., d_{n+c-1}`
/// appended to its results.
fn extend(m: &IndexingMap, n: usize, c: usize) -> IndexingMap {
    let mut out = m.clone();
    for i in 0..c {
        out.results.push(crate::expr::Expr::var((n + i) as u32));
    }
    out
}

/// The tile of a tensor read through a set of maps, for tiles of `sizes`.
#[derive(Clone, Debug)]
pub struct SetTile {
    /// One tile when one contains the others' (then it is what is read), else one per map.
    pub tiles: Vec<OperandTile>,
    /// Whether `tiles` is one tile covering several maps.
    pub covers: usize,
    /// Tiles enumerated to prove the tiles exact; `None` when the domain is too large.
    pub checked: Option<u64>,
}

/// Why a set of maps has no tile: the map at fault and the reason.
#[derive(Clone, Debug)]
pub struct SetError {
    pub map: usize,
    pub error: NotATile,
}

/// Derives and checks the tile of every map; one when one contains the others.
/// A tile that the enumeration finds wrong is an internal error (a bug), returned as such.
pub fn tile_set(maps: &[IndexingMap], sizes: &[i64], limits: &Limits) -> Result<SetTile, SetError> {
    let mut derived = Vec::new();
    for (i, m) in maps.iter().enumerate() {
        match derive(m, sizes) {
            Ok(x) => derived.push(x),
            Err(mut error) => {
                if let Some(which) = super::check::first_non_box(m, sizes, limits) {
                    error.reason.push_str(&format!("; e.g. {which}"));
                }
                return Err(SetError { map: i, error });
            }
        }
    }
    let mut checked = Some(0u64);
    for (m, x) in maps.iter().zip(&derived) {
        match check_exact(m, sizes, x, limits) {
            Ok(Verdict::Exact { tiles }) => checked = checked.map(|c| c.max(tiles)),
            Ok(Verdict::Differs {
                tile,
                element,
                only_in_map,
            }) => {
                return Err(SetError {
                    map: 0,
                    error: NotATile::new(format!(
                        "internal error: the derived tile differs from the map at tile {tile:?}: element {element:?} {}",
                        if only_in_map { "is read but not in the tile" } else { "is in the tile but not read" }
                    )),
                })
            }
            Err(_) => checked = None,
        }
    }
    let cover = (0..derived.len()).find(|&i| derived.iter().all(|b| contains(&derived[i], b)));
    Ok(match cover {
        Some(i) => SetTile {
            covers: derived.len(),
            tiles: vec![derived.swap_remove(i)],
            checked,
        },
        None => SetTile {
            covers: 1,
            tiles: derived,
            checked,
        },
    })
}

/// The tile of one instruction of a fusion.
#[derive(Clone, Debug)]
pub struct InstrTile {
    pub id: InstrId,
    pub name: String,
    pub opcode: String,
    /// How many instructions use it (more than one: shared, tiled once).
    pub users: usize,
    pub maps: Vec<IndexingMap>,
    pub tile: Result<SetTile, SetError>,
}

/// Every instruction's tile, for tiles of `sizes` (output sizes, then the K step sizes).
pub fn tile_instructions(
    module: &Module,
    comp: &Computation,
    root: InstrId,
    sizes: &[i64],
    contract: bool,
    limits: &Limits,
) -> Result<(IterSpace, Vec<InstrTile>), String> {
    let (space, reached) = instruction_maps(module, comp, root, contract)?;
    let want = space.out.len() + space.k.len();
    if sizes.len() != want {
        return Err(format!(
            "the iteration space has {want} dimension{} ({} of the output{}) but {} size{} given",
            if want == 1 { "" } else { "s" },
            space.out.len(),
            if space.k.is_empty() {
                String::new()
            } else {
                format!(", {} of the contraction", space.k.len())
            },
            sizes.len(),
            if sizes.len() == 1 { " is" } else { "s are" }
        ));
    }
    let users = comp.users();
    let tiles = reached
        .into_iter()
        .map(|r| {
            let ins = &comp.instrs[r.id];
            let mut us = users[r.id].clone();
            us.sort();
            us.dedup();
            InstrTile {
                id: r.id,
                name: ins.name.clone(),
                opcode: ins.opcode.clone(),
                users: us.len(),
                tile: tile_set(&r.maps, sizes, limits),
                maps: r.maps,
            }
        })
        .collect();
    Ok((space, tiles))
}
