//! What one warp's accesses through a layout cost: global-memory sectors and lines, and
//! shared-memory bank conflicts, per value (register) index.
//!
//! The threads and values of the map's dimensions are read as in [`super::picture::roles`];
//! the element a point touches is its offset (one result) or its coordinates linearized
//! row-major over `shape` (several results; by default the extent of each result). Byte
//! address = element · `bytes`. For each value index, over the 32 lanes of the first warp
//! (thread indices 0..31; every warp is checked, and the worst is reported):
//!
//! - global: the distinct 32-byte sectors and 128-byte lines touched, against the fewest
//!   possible for that many distinct bytes;
//! - shared: 32 banks of 4 bytes; a bank serving `k` distinct 4-byte words needs `k`
//!   wavefronts (lanes reading the same word share it), so the access takes
//!   `max over banks of k` wavefronts: `1` is conflict-free. Vector accesses of 8 or 16
//!   bytes are served in phases of 16 or 8 lanes, each counted so.
//!
//! Consecutive values of a thread at consecutive addresses are one vector access (up to 16
//! bytes), as a compiler emits them; the width found is reported.

use super::picture::roles;
use super::{LayoutError, Result};
use crate::map::{DomainPoints, IndexingMap, Limits};
use std::collections::{BTreeMap, BTreeSet};

/// One access: a group of `width` consecutive values (a vector load of `width · bytes`
/// bytes per thread), across a warp's lanes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// The first value of the group.
    pub value: i64,
    pub width: i64,
    /// Lanes taking part.
    pub lanes: usize,
    pub sectors: usize,
    pub ideal_sectors: usize,
    pub lines: usize,
    /// Shared-memory wavefronts, and the fewest possible (one per phase).
    pub wavefronts: usize,
    pub ideal_wavefronts: usize,
}

#[derive(Clone, Debug)]
pub struct Report {
    /// The worst warp's accesses, by value index.
    pub accesses: Vec<Access>,
    pub warp: i64,
    pub bytes: i64,
    /// Values per vector access (consecutive values at consecutive addresses, up to 16 bytes).
    pub width: i64,
    pub shape: Vec<i64>,
}

pub fn analyse(m: &IndexingMap, bytes: i64, shape: Option<Vec<i64>>) -> Result<Report> {
    if !(1..=16).contains(&bytes) {
        return Err(LayoutError::new(
            "bytes= takes an element size from 1 to 16",
        ));
    }
    let r = roles(m);
    if !r.has_threads {
        return Err(LayoutError::new(
            "the map has no thread dimension (name one `lane`, or give the thread as the first of several dimensions)",
        ));
    }
    let nres = m.results.len();
    let mut pts: Vec<(i64, i64, Vec<i64>)> = Vec::new();
    DomainPoints::for_each(
        m,
        &Limits {
            max_points: 1 << 22,
        },
        &mut |p, res| {
            let (t, v) = r.thread_value(p);
            pts.push((t, v, res.to_vec()));
            Ok(true)
        },
    )
    .map_err(|e| LayoutError::new(e.to_string()))?;
    let shape = match shape {
        Some(s) => {
            if s.len() != nres {
                return Err(LayoutError::new(format!(
                    "shape= has {} entries but the map has {nres} results",
                    s.len()
                )));
            }
            s
        }
        None => (0..nres)
            .map(|k| {
                pts.iter()
                    .map(|(_, _, r)| r[k] + 1)
                    .max()
                    .unwrap_or(1)
                    .max(1)
            })
            .collect(),
    };
    let ws = r.warp_size.max(1);
    // thread -> value -> address.
    let mut by: BTreeMap<i64, BTreeMap<i64, i64>> = BTreeMap::new();
    for (t, v, res) in &pts {
        let mut e: i64 = 0;
        for (x, s) in res.iter().zip(&shape) {
            if *x < 0 {
                return Err(LayoutError::new(format!("a result is negative ({x})")));
            }
            if x >= s {
                // Past its extent an element would alias one of the next row.
                return Err(LayoutError::new(format!(
                    "the element ({}) is outside the tensor [{}]",
                    res.iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    shape
                        .iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            e = e
                .checked_mul(*s)
                .and_then(|e| e.checked_add(*x))
                .ok_or_else(|| LayoutError::new("integer overflow in an address"))?;
        }
        let addr = e
            .checked_mul(bytes)
            .ok_or_else(|| LayoutError::new("integer overflow in an address"))?;
        by.entry(*t).or_default().insert(*v, addr);
    }
    let width = vector_width(&by, bytes);
    // warp -> group -> (lane, first address).
    let mut groups: BTreeMap<i64, BTreeMap<i64, Vec<(i64, i64)>>> = BTreeMap::new();
    for (t, vals) in &by {
        for (v, a) in vals {
            if v % width == 0 {
                groups
                    .entry(t / ws)
                    .or_default()
                    .entry(*v)
                    .or_default()
                    .push((t % ws, *a));
            }
        }
    }
    let mut worst: Option<(i64, Vec<Access>, usize)> = None;
    for (w, gs) in &groups {
        let acc: Vec<Access> = gs
            .iter()
            .map(|(v, a)| access(*v, a, bytes, width))
            .collect();
        let cost: usize = acc.iter().map(|a| a.sectors * 64 + a.wavefronts).sum();
        if worst.as_ref().is_none_or(|(_, _, c)| cost > *c) {
            worst = Some((*w, acc, cost));
        }
    }
    let (warp, accesses, _) = worst.unwrap_or((0, vec![], 0));
    Ok(Report {
        accesses,
        warp,
        bytes,
        width,
        shape,
    })
}

/// The widest vector (a power of two, at most 16 bytes) such that every thread's values
/// `g·k .. g·k + k - 1` are present and at consecutive, `k · bytes`-aligned addresses.
fn vector_width(by: &BTreeMap<i64, BTreeMap<i64, i64>>, bytes: i64) -> i64 {
    let mut k = 16 / bytes;
    while k > 1 {
        let k2 = k;
        let ok = by.values().all(|vals| {
            vals.iter().all(|(v, a)| {
                let g = v - v % k2;
                let Some(a0) = vals.get(&g) else { return false };
                // A vector of k2 needs k2 values: a thread holding 2 moves no 4-vector.
                (g..g + k2).all(|w| vals.contains_key(&w))
                    && a0 % (k2 * bytes) == 0
                    && *a == a0 + (v - g) * bytes
            })
        });
        if ok {
            return k;
        }
        k /= 2;
    }
    1
}

fn access(value: i64, lanes: &[(i64, i64)], bytes: i64, width: i64) -> Access {
    let vb = bytes * width;
    let mut sectors = BTreeSet::new();
    let mut lines = BTreeSet::new();
    let mut distinct = BTreeSet::new();
    // Shared memory serves a warp's request in phases of 128 bytes' worth of threads.
    let per_phase = if vb <= 4 { 32 } else { (128 / vb).max(1) };
    let mut phases: BTreeMap<i64, BTreeMap<i64, BTreeSet<i64>>> = BTreeMap::new();
    for &(lane, a) in lanes {
        for b in 0..vb {
            let x = a + b;
            sectors.insert(x / 32);
            lines.insert(x / 128);
            distinct.insert(x);
            let word = x / 4;
            phases
                .entry(lane / per_phase)
                .or_default()
                .entry(word % 32)
                .or_default()
                .insert(word);
        }
    }
    Access {
        value,
        width,
        lanes: lanes.len(),
        sectors: sectors.len(),
        ideal_sectors: distinct.len().div_ceil(32),
        lines: lines.len(),
        wavefronts: phases
            .values()
            .map(|banks| banks.values().map(|s| s.len()).max().unwrap_or(0))
            .sum(),
        ideal_wavefronts: phases.len(),
    }
}
