//! MLIR's `affine_map<...>` form. MLIR has dimensions and symbols only, so range and
//! runtime variables print as symbols `s0..` (range variables first) and dimensions as
//! `d0..`; the domain, which MLIR's affine map does not carry, follows after a comma.
//!
//! ```text
//! (d0, d1)[s0]{r0} -> (d0 + s0, d1 + r0)
//!   = affine_map<(d0, d1)[s0, s1] -> (d0 + s0, d1 + s1)>, domain: ...
//! ```

use super::IndexingMap;

pub fn to_mlir(m: &IndexingMap) -> String {
    if m.is_undefined() {
        return "UNDEFINED".into();
    }
    let mut renamed = m.clone();
    for (i, v) in renamed.dims.iter_mut().enumerate() {
        v.name = format!("d{i}");
    }
    for (i, v) in renamed
        .ranges
        .iter_mut()
        .chain(renamed.runtimes.iter_mut())
        .enumerate()
    {
        v.name = format!("s{i}");
    }
    let names = renamed.names();
    let dims: Vec<String> = renamed.dims.iter().map(|v| v.name.clone()).collect();
    let syms: Vec<String> = renamed
        .ranges
        .iter()
        .chain(&renamed.runtimes)
        .map(|v| v.name.clone())
        .collect();
    let results: Vec<String> = renamed
        .results
        .iter()
        .map(|&r| crate::expr::display(r, &names).to_string())
        .collect();
    let mut s = format!("affine_map<({})", dims.join(", "));
    if !syms.is_empty() {
        s += &format!("[{}]", syms.join(", "));
    }
    s += &format!(" -> ({})>", results.join(", "));
    // MLIR's affine_map has no domain; ixmap's `, domain: ...` after it keeps an empty
    // domain empty (XLA's own `KNOWN EMPTY` would lose the variables).
    if m.is_known_empty() {
        return s + ", domain: KNOWN EMPTY";
    }
    let full = renamed.to_string();
    if let Some(idx) = full.find(", domain: ") {
        s += &full[idx..];
    }
    s
}
