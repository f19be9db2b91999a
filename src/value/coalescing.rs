//! `coalescing PRODUCER, CONSUMER heuristic` as a [`Table`]: XLA's quick verdict for the
//! fused pair beside XLA's own analysis and ixmap's count, per operand of the pair.

use crate::gpu::coalescing::heuristic::PairReport;
use crate::value::Table;

fn word(c: bool) -> &'static str {
    if c {
        "coalesced"
    } else {
        "not coalesced"
    }
}

pub fn heuristic(r: &PairReport) -> Table {
    let mut t = Table {
        title: Some(format!(
            "read coalescing of {} fused into {}: XLA's heuristic (IsReadCoalescedHeuristic), a {} fusion{}",
            r.producer,
            r.consumer,
            r.kind.name(),
            match &r.exact {
                Ok((l, _)) => format!(" ({l}, XLA's default launch)"),
                Err(_) => String::new(),
            }
        )),
        headers: ["operand", "layout", "heuristic", "XLA's analysis", "count"]
            .map(String::from)
            .to_vec(),
        ..Default::default()
    };
    let h = r.heuristic.coalesced;
    for rule in &r.heuristic.rules {
        t.notes.push(format!("heuristic: {rule}"));
    }
    t.notes
        .push(format!("heuristic: {} for every operand", word(h)));
    match &r.exact {
        Ok((_, rep)) => {
            let reads: Vec<_> = rep
                .operands
                .iter()
                .filter(|o| o.operand.is_some())
                .collect();
            let (mut with_xla, mut with_count) = (0, 0);
            for o in &reads {
                let xla = o.xla.unwrap_or(true);
                let count = o.coalesced || !o.read();
                with_xla += usize::from(xla == h);
                with_count += usize::from(count == h);
                t.rows.push(vec![
                    o.label.clone(),
                    o.tensor.shape_text(),
                    word(h).into(),
                    word(xla).into(),
                    if o.read() {
                        word(count).into()
                    } else {
                        "not read".into()
                    },
                ]);
            }
            t.notes.push(format!(
                "the heuristic agrees with XLA's analysis on {with_xla} of {} operand{} and with the count on {with_count}",
                reads.len(),
                if reads.len() == 1 { "" } else { "s" }
            ));
        }
        Err(e) => t
            .notes
            .push(format!("no exact analysis of the fused pair: {e}")),
    }
    t
}
