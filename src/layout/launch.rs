//! A layout as the work of one block of a launch: thread `t` of the block, in its value
//! (register) `v`, computes the element `L(t, v)` of a tile; the launch repeats the tile
//! over the output (`gpu::mapping::layout_launch`). Before that, the layout must cover its
//! tile exactly once, decided here by enumerating the map (never sampled):
//!
//! ```text
//! #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>
//! for shape [4, 32]:  (thread, value) -> (thread floordiv 8, (thread mod 8) * 4 + value)
//!                     thread in [0, 31], value in [0, 3]: each of the 4 x 32 elements once
//! "(32,4):(4,1)"      (thread, value) -> (thread * 4 + value): a flat tile of 128 offsets
//! "(32,4):(8,1)"      misses offsets 4..7, 12..15, ...: an error naming them
//! ```
//!
//! Threads and values are read from the map's variables as [`picture::roles`] reads them
//! (Triton's `lane`, `warp`; CuTe's two modes; `th_x`, `unroll_id`), so a launch is drawn by
//! `picture` exactly as it runs. Shown running in `sessions/layout/launch.ixm`.

use super::picture::roles;
use super::{LayoutError, LayoutValue, Result, MAX_POINTS};
use crate::expr::Expr;
use crate::map::{DomainPoints, IndexingMap, Limits, Status, Variable};

/// One block's work: `(thread, value) -> tile coordinates`, every coordinate in `tile`.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockLayout {
    pub map: IndexingMap,
    /// The extent of each coordinate (one: a flat tile of offsets).
    pub tile: Vec<i64>,
    pub threads: i64,
    pub values: i64,
}

/// Most threads a block may have (CUDA's limit).
pub const MAX_THREADS: i64 = 1024;

/// The block layout of a layout value: its map read as `(thread, value)`, its tile the
/// extent the layout declares (a linear layout's output sizes, a CuTe layout's `tile=` or
/// its cosize). Errors: variables that are not read from 0, symbols, a Triton layout over
/// several CTAs, more threads than a block holds.
pub fn block_layout(l: &LayoutValue) -> Result<BlockLayout> {
    let cute_map;
    let m = if l.notation == super::Notation::Cute {
        cute_map = cute_thread_value(l)?;
        &cute_map
    } else {
        &l.map
    };
    let Some(tile) = l.shape.clone() else {
        return Err(LayoutError::new(
            "has no known extent (bind it with `layout \"...\"`)",
        ));
    };
    if m.status != Status::Defined {
        return Err(LayoutError::new("has an undefined map"));
    }
    if tile.len() != m.results.len() || tile.iter().any(|&n| n < 1) {
        return Err(LayoutError::new(format!(
            "has {} results for a tile of {} dimensions",
            m.results.len(),
            tile.len()
        )));
    }
    if !m.runtimes.is_empty() {
        return Err(LayoutError::new(
            "has runtime variables: a launch is known before it runs",
        ));
    }
    let r = roles(m);
    let vars: Vec<&Variable> = m.vars().collect();
    let mut threads = 1i64;
    let mut values = 1i64;
    for (v, &(is_thread, _)) in vars.iter().zip(&r.dims) {
        if v.bounds.lo != 0 {
            return Err(LayoutError::new(format!(
                "has its variable {} from {}, not 0",
                v.name, v.bounds.lo
            )));
        }
        let size = super::add(v.bounds.hi, 1)?;
        if v.name == "block" && size > 1 {
            return Err(LayoutError::new(format!(
                "spreads over {size} CTAs (its `block` dimension): a launch's block is one CTA"
            )));
        }
        if is_thread {
            threads = super::mul(threads, size)?;
        } else {
            values = super::mul(values, size)?;
        }
    }
    if threads > MAX_THREADS {
        return Err(LayoutError::new(format!(
            "has {threads} threads; a block has at most {MAX_THREADS}"
        )));
    }
    // Variable i is digit i of the thread (or value) index, in the weights `roles` gives.
    let subst: Vec<Expr> = vars
        .iter()
        .zip(&r.dims)
        .map(|(v, &(is_thread, w))| {
            let x = Expr::var(if is_thread { 0 } else { 1 });
            let size = v.bounds.hi + 1;
            if size == 1 {
                Expr::constant(0)
            } else {
                x.floordiv(Expr::constant(w)).modulo(Expr::constant(size))
            }
        })
        .collect();
    let sub = |e: Expr| e.substitute(&mut |i| subst[i as usize]);
    let map = IndexingMap::new(
        vec![
            Variable::new("thread", 0, threads - 1),
            Variable::new("value", 0, values - 1),
        ],
        vec![],
        vec![],
        m.results.iter().map(|&e| sub(e)).collect(),
        m.constraints.iter().map(|&(e, iv)| (sub(e), iv)).collect(),
    );
    let map = crate::simplify::simplify(&map, &crate::simplify::SimplifyLimits::default()).map;
    Ok(BlockLayout {
        map,
        tile,
        threads,
        values,
    })
}

/// A CuTe layout read as CuTe reads a thread/value layout: its first top-level mode the
/// thread, its second the value (one mode: threads of one value each), whatever map the
/// value shows (the natural coordinate has a variable per leaf).
fn cute_thread_value(l: &LayoutValue) -> Result<IndexingMap> {
    let c = super::cute::parse(&l.text)?;
    let tile = match l.shape.as_deref() {
        Some(&[m, n]) => Some((m, n)),
        _ => None,
    };
    let mut m = c.mode_map(tile);
    match m.dims.len() {
        1 => {
            m.dims[0].name = "thread".into();
            m.dims.push(Variable::new("value", 0, 0));
            Ok(m)
        }
        2 => Ok(m),
        n => Err(LayoutError::new(format!(
            "has {n} top-level modes; as a launch, a CuTe layout is (threads, values)"
        ))),
    }
}

fn point(c: &[i64]) -> String {
    match c {
        [x] => x.to_string(),
        _ => format!(
            "({})",
            c.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `4 x 32 tile`, or `tile of 128 offsets` for a flat tile.
pub fn tile_text(tile: &[i64]) -> String {
    match tile {
        [1] => "tile of 1 offset".to_string(),
        [n] => format!("tile of {n} offsets"),
        _ => format!(
            "{} tile",
            tile.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" x ")
        ),
    }
}

/// A (thread, value) pair.
type Pair = (i64, i64);

/// At most this many elements are named in an error; the rest are counted.
const NAMED: usize = 6;

fn listed(items: &[String], total: usize) -> String {
    let mut s = items.join(", ");
    if total > items.len() {
        s += &format!(" and {} more", total - items.len());
    }
    s
}

impl BlockLayout {
    /// Checks that every element of the tile is computed by exactly one (thread, value)
    /// and that none lands outside it; the error names the elements missed or written
    /// twice (and by whom), counted exactly.
    pub fn check_covers(&self) -> Result<()> {
        let n = self.tile.iter().try_fold(1i64, |a, &b| super::mul(a, b))?;
        if n > MAX_POINTS || super::mul(self.threads, self.values)? > MAX_POINTS {
            return Err(LayoutError::new(format!(
                "has {} (thread, value) pairs for a tile of {n} elements: more than {MAX_POINTS} are not checked",
                self.threads.saturating_mul(self.values)
            )));
        }
        let tile = &self.tile;
        let mut owner: Vec<Option<Pair>> = vec![None; n as usize];
        // (element index, its first holder, another holder, its coordinates)
        let mut twice: Vec<(usize, Pair, Pair, Vec<i64>)> = Vec::new();
        let mut outside: Option<String> = None;
        let mut pairs = 0i64;
        DomainPoints::for_each(
            &self.map,
            &Limits {
                max_points: MAX_POINTS as u64,
            },
            &mut |p, res| {
                pairs += 1;
                let (t, v) = (p[0], p[1]);
                if res.iter().zip(tile).any(|(&x, &e)| x < 0 || x >= e) {
                    outside = Some(format!(
                        "puts thread {t} value {v} at {}, outside its {}",
                        point(res),
                        tile_text(tile)
                    ));
                    return Ok(false);
                }
                let k = res.iter().zip(tile).fold(0i64, |a, (&x, &e)| a * e + x) as usize;
                match owner[k] {
                    None => owner[k] = Some((t, v)),
                    Some(first) => twice.push((k, first, (t, v), res.to_vec())),
                }
                Ok(true)
            },
        )
        .map_err(|e| LayoutError::new(e.to_string()))?;
        if let Some(o) = outside {
            return Err(LayoutError::new(o));
        }
        let mut missed = Vec::new();
        let mut missed_n = 0usize;
        for (k, o) in owner.iter().enumerate() {
            if o.is_none() {
                missed_n += 1;
                if missed.len() < NAMED {
                    let mut c = vec![0i64; tile.len()];
                    let mut rest = k as i64;
                    for (d, &e) in tile.iter().enumerate().rev() {
                        c[d] = rest % e;
                        rest /= e;
                    }
                    missed.push(point(&c));
                }
            }
        }
        // By element, in the tile's order (as the missed ones): each with its holders.
        twice.sort_by_key(|x| x.0);
        let mut groups: Vec<(Vec<i64>, Vec<Pair>)> = Vec::new();
        let mut last = None;
        for (k, first, other, c) in &twice {
            if last != Some(*k) {
                groups.push((c.clone(), vec![*first]));
                last = Some(*k);
            }
            if let Some(g) = groups.last_mut() {
                g.1.push(*other);
            }
        }
        let twice_n = groups.len();
        let twice: Vec<String> = groups
            .iter()
            .take(NAMED)
            .map(|(c, who)| {
                let named: Vec<String> = who
                    .iter()
                    .take(2)
                    .map(|(t, v)| format!("thread {t} value {v}"))
                    .collect();
                match who.len() {
                    2 => format!("{} ({})", point(c), named.join(", ")),
                    n => format!("{} ({n} times: {}, ..)", point(c), named.join(", ")),
                }
            })
            .collect();
        if twice_n == 0 && missed_n == 0 {
            return Ok(());
        }
        let mut why = format!(
            "does not cover its {} exactly once ({pairs} (thread, value) pairs for {n} elements)",
            tile_text(tile)
        );
        if twice_n > 0 {
            why += &format!("; computed more than once: {}", listed(&twice, twice_n));
        }
        if missed_n > 0 {
            why += &format!("; never computed: {}", listed(&missed, missed_n));
        }
        Err(LayoutError::new(why))
    }

    /// The most consecutive values `w` (a power of two dividing the values, at most `max`)
    /// that every thread spends on consecutive elements along coordinate `minor`, starting
    /// at a multiple of `w`: `value = chunk · w + u` then touches one aligned run of `w`
    /// elements for each chunk (a vector access). 1 when there is none.
    pub fn vector_width(&self, minor: usize, max: i64) -> i64 {
        let mut w = 1i64;
        while w * 2 <= max && self.values % (w * 2) == 0 && self.runs_of(w * 2, minor) {
            w *= 2;
        }
        w
    }

    fn runs_of(&self, w: i64, minor: usize) -> bool {
        if self.map.constraints.is_empty() && self.tile.get(minor).is_some_and(|&e| e % w == 0) {
            for t in 0..self.threads {
                for c in 0..self.values / w {
                    let Ok(Some(first)) = self.map.eval_point(&[t, c * w]) else {
                        return false;
                    };
                    if first[minor] % w != 0 {
                        return false;
                    }
                    for u in 1..w {
                        let Ok(Some(r)) = self.map.eval_point(&[t, c * w + u]) else {
                            return false;
                        };
                        let same = r.iter().zip(&first).enumerate().all(|(d, (&x, &y))| {
                            if d == minor {
                                x == y + u
                            } else {
                                x == y
                            }
                        });
                        if !same {
                            return false;
                        }
                    }
                }
            }
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{cute, ttgir, Notation};

    fn blocked(attr: &str, shape: &[i64]) -> LayoutValue {
        let ll = ttgir::parse(attr, shape).expect("attribute parses");
        LayoutValue {
            notation: Notation::LinearLayout,
            text: ll.to_text(),
            map: ll.to_map(),
            notes: vec![],
            picture: None,
            shape: Some(ll.outs.iter().map(|(_, s)| *s).collect()),
        }
    }

    fn cute_tv(text: &str) -> LayoutValue {
        let c = cute::parse(text).expect("CuTe text parses");
        LayoutValue {
            notation: Notation::Cute,
            text: c.to_string(),
            map: c.mode_map(None),
            notes: vec![],
            picture: None,
            shape: Some(vec![c.layout.cosize().expect("small")]),
        }
    }

    #[test]
    fn a_blocked_layout_is_lanes_and_warps_by_registers() {
        let b = block_layout(&blocked(
            "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [2, 1], order = [1, 0]}>",
            &[8, 32],
        ))
        .expect("a block");
        assert_eq!((b.threads, b.values, b.tile.clone()), (64, 4, vec![8, 32]));
        b.check_covers().expect("covers");
        assert_eq!(b.vector_width(1, 4), 4);
        assert_eq!(b.vector_width(1, 2), 2);
        // Along the rows nothing is contiguous.
        assert_eq!(b.vector_width(0, 4), 1);
    }

    #[test]
    fn a_cute_thread_value_layout_is_a_flat_tile() {
        let b = block_layout(&cute_tv("(32,4):(4,1)")).expect("a block");
        assert_eq!((b.threads, b.values, b.tile.clone()), (32, 4, vec![128]));
        b.check_covers().expect("covers");
        assert_eq!(b.vector_width(0, 4), 4);
        // Values a thread apart: no run.
        let c = block_layout(&cute_tv("(32,4):(1,32)")).expect("a block");
        c.check_covers().expect("covers");
        assert_eq!(c.vector_width(0, 4), 1);
    }

    #[test]
    fn holes_and_overlaps_are_named_exactly() {
        let gaps = block_layout(&cute_tv("(4,2):(4,1)")).expect("a block");
        let e = gaps
            .check_covers()
            .expect_err("offsets 2, 3, 6, 7, .. are missed");
        assert_eq!(
            e.message,
            "does not cover its tile of 14 offsets exactly once (8 (thread, value) pairs for 14 elements); never computed: 2, 3, 6, 7, 10, 11"
        );
        let twice = block_layout(&cute_tv("(4,2):(1,2)")).expect("a block");
        let e = twice.check_covers().expect_err("offsets 2, 3 twice");
        assert!(e.message.contains("computed more than once: 2 (thread 0 value 1, thread 2 value 0), 3 (thread 1 value 1, thread 3 value 0)"), "{}", e.message);
        // Broadcast: 4 x 8 threads over a 2 x 8 tile hold each element twice.
        let bc = block_layout(&blocked(
            "#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>",
            &[2, 8],
        ))
        .expect("a block");
        let e = bc.check_covers().expect_err("duplicates");
        assert!(e.message.contains("(32 (thread, value) pairs for 16 elements); computed more than once: (0, 0) (thread 0 value 0, thread 16 value 0), (0, 1) (thread 1 value 0, thread 17 value 0)"), "{}", e.message);
        assert!(e.message.ends_with("and 10 more"), "{}", e.message);
        // Held by more than two: counted.
        let bc4 = block_layout(&blocked(
            "#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>",
            &[1, 8],
        ))
        .expect("a block");
        let e = bc4.check_covers().expect_err("each element 4 times");
        assert!(
            e.message.contains(
                "computed more than once: (0, 0) (4 times: thread 0 value 0, thread 8 value 0, ..)"
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_nested_cute_layout_reads_its_top_modes_as_thread_and_value() {
        // ((8,4),4):((16,1),4): thread t = t0 + 8 t1 at 16 t0 + t1, value v at 4 v; bound
        // without tile= its map has a variable per leaf, but the launch reads the modes.
        let c = cute::parse("((8,4),4):((16,1),4)").expect("parses");
        let l = LayoutValue {
            notation: Notation::Cute,
            text: c.to_string(),
            map: c.natural_map(),
            notes: vec![],
            picture: None,
            shape: Some(vec![128]),
        };
        let b = block_layout(&l).expect("a block");
        assert_eq!((b.threads, b.values), (32, 4));
        b.check_covers().expect("covers its 128 offsets");
        let three = cute::parse("(4,2,2):(1,4,8)").expect("parses");
        let e = block_layout(&LayoutValue {
            text: three.to_string(),
            map: three.natural_map(),
            ..l
        })
        .expect_err("three modes");
        assert!(e.message.contains("3 top-level modes"), "{}", e.message);
    }

    #[test]
    fn too_many_threads_and_several_ctas_are_refused() {
        let big = cute_tv("(2048,1):(1,1)");
        assert!(block_layout(&big)
            .expect_err("2048 threads")
            .message
            .contains("has 2048 threads; a block has at most 1024"));
    }
}
