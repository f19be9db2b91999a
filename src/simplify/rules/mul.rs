//! Products by constants. Wildcards: ?a any expression; ?k a constant (the conditions
//! check it). Products of two non-constant expressions are left as they are.

use super::{build_view, constant, view, Compute, Rule};
use crate::simplify::analysis::EGraph;
use egg::{rewrite as rw, Id};

#[rustfmt::skip]
pub fn rules() -> Vec<Rule> { vec![
    // a * 1 = a
    rw!("mul-one";        "(* ?a 1)"  => "?a"),
    // a * 0 = 0
    rw!("mul-zero";       "(* ?a 0)"  => "0"),
    // (Σ kᵢ·tᵢ + k) * c = Σ (c·kᵢ)·tᵢ + c·k        when c is a constant (no overflow)
    rw!("mul-distribute"; "(* ?a ?k)" => { Compute::new(&["?a", "?k"], distribute) }),
]}

fn distribute(egraph: &mut EGraph, ak: &[Id]) -> Option<Id> {
    let k = constant(egraph, ak[1])?;
    egraph[ak[0]].data.view.as_ref()?;
    let v = view(egraph, ak[0])?.scale(k)?;
    Some(build_view(egraph, &v))
}
