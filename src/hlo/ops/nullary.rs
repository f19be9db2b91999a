//! Ops without tensor operands: `iota`, `constant`, `parameter`. Each output element
//! depends on its index alone; there is nothing to map to.
//!
//! ```text
//! iota = f32[2,4] iota(), iota_dimension=1
//! output → (no operand):  (d0, d1) -> ()
//! ```

use super::{want_operands, Cx, Family};
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "nullary",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

fn check(cx: &Cx) -> Result<(), String> {
    want_operands(cx, 0)?;
    if cx.instr.opcode == "iota" {
        let rank = cx.out().len() as i64;
        match cx.instr.attrs.iota_dimension.or_else(|| {
            cx.instr
                .attrs
                .dimensions
                .as_ref()
                .and_then(|v| v.first().copied())
        }) {
            Some(k) if (0..rank).contains(&k) => {}
            Some(k) => return Err(format!("iota_dimension={k} is not below the rank {rank}")),
            None => return Err("`iota` needs the attribute `iota_dimension`".into()),
        }
    }
    Ok(())
}

fn out_to_in(_: &Cx) -> Vec<IndexingMap> {
    vec![]
}

fn in_to_out(_: &Cx, _: usize) -> IndexingMap {
    IndexingMap::undefined()
}
