//! Sums. Wildcards: ?a ?b any expression.
//!
//! There are no commutativity or associativity rules: the analysis keeps every sum's
//! linear view (`Σ kᵢ·classᵢ + k`, like terms collected across the whole sum), and
//! `add-collect` adds that view back as a sum, so `d0 + d1 - d0` meets `d1`.

use super::{build_view, view, Compute, Rule};
use crate::simplify::analysis::EGraph;
use egg::{rewrite as rw, Id};

#[rustfmt::skip]
pub fn rules() -> Vec<Rule> { vec![
    // a + 0 = a
    rw!("add-zero";    "(+ ?a 0)" => "?a"),
    // a + b = Σ kᵢ·tᵢ + k        (the sum's linear view, like terms collected)
    rw!("add-collect"; "(+ ?a ?b)" => { Compute::new(&["?a", "?b"], collect) }),
]}

fn collect(egraph: &mut EGraph, ab: &[Id]) -> Option<Id> {
    let v = view(egraph, ab[0])?.add(&view(egraph, ab[1])?)?;
    Some(build_view(egraph, &v))
}
