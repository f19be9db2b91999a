//! `ceildiv` by a positive constant, by way of `floordiv` (whose rules then apply).
//! Wildcards: ?a any expression; ?c a constant (the condition checks it is positive).

use super::{num, positive, range, Compute, Rule};
use crate::interval::Interval;
use crate::simplify::analysis::EGraph;
use crate::simplify::language::IxLang;
use egg::{rewrite as rw, Id};

#[rustfmt::skip]
pub fn rules() -> Vec<Rule> { vec![
    // a ceildiv 1 = a
    rw!("ceildiv-one";           "(ceildiv ?a 1)"  => "?a"),
    // a ceildiv c = (a + c - 1) floordiv c     when c > 0
    rw!("ceildiv-to-floordiv";   "(ceildiv ?a ?c)" => { Compute::new(&["?a", "?c"], to_floordiv) }),
]}

fn to_floordiv(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    let c = positive(egraph, ac[1])?;
    if range(egraph, ac[0]).add(&Interval::point(c - 1)).is_full() {
        return None; // a + c - 1 might overflow
    }
    let shift = num(egraph, c - 1);
    let sum = egraph.add(IxLang::Add([ac[0], shift]));
    Some(egraph.add(IxLang::FloorDiv([sum, ac[1]])))
}
