//! Simplifier benchmark over `benches/data/simplify-corpus.txt` (341 maps: the seed
//! examples, reshape chains, thread-id maps, random maps; regenerate with
//! `python3 benches/data/make_corpus.py`).
//!
//! Before the criterion groups run, a report is printed (and written to
//! `target/simplify-report.txt`): per-map time of `simplify` (the fastest of 15 runs, as
//! the machine may be shared),
//! the median, p99 and max over the corpus, e-nodes, bounds hit, and the total cost (sum of
//! operator weights) before and after, for the e-graph simplifier and for the baseline (the
//! canonical linear form only, enumeration-free, what ixmap did before the e-graph).
//!
//! `cargo bench --bench simplify` (add `-- --report-only` to skip the criterion groups).

use criterion::{black_box, Criterion};
use ixmap::map::{remove_unused_symbols, IndexingMap};
use ixmap::simplify::cost::{div_count, expr_cost};
use ixmap::simplify::{simplify, SimplifyLimits};
use std::time::{Duration, Instant};

fn corpus() -> Vec<(String, IndexingMap)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/data/simplify-corpus.txt"
    );
    // From the checkout that built the bench, or (a copied binary) the current directory.
    let text = std::fs::read_to_string(path)
        .or_else(|_| std::fs::read_to_string("benches/data/simplify-corpus.txt"))
        .expect("the corpus file exists");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (kind, src) = l.split_once('\t').expect("KIND<TAB>MAP");
            let lit = ixmap::syntax::parse_map_lit(src).unwrap_or_else(|e| panic!("{src}: {e:?}"));
            let m =
                ixmap::session::build::build_map(&lit).unwrap_or_else(|e| panic!("{src}: {e:?}"));
            (kind.to_string(), m)
        })
        .collect()
}

/// The baseline: canonical linear form and unused symbols removed, nothing else.
fn baseline(m: &IndexingMap) -> IndexingMap {
    let mut m = m.clone();
    m.canonicalize();
    remove_unused_symbols(&m).0
}

fn cost(m: &IndexingMap) -> u64 {
    m.results
        .iter()
        .chain(m.constraints.iter().map(|(e, _)| e))
        .map(|&e| expr_cost(e))
        .sum()
}

fn divs(m: &IndexingMap) -> usize {
    m.results
        .iter()
        .chain(m.constraints.iter().map(|(e, _)| e))
        .map(|&e| div_count(e))
        .sum()
}

fn time_of(f: &mut dyn FnMut()) -> Duration {
    let mut ts: Vec<Duration> = (0..15)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    ts.sort();
    // The fastest of 15 runs: on a shared, loaded machine the least disturbed estimate.
    ts[0]
}

fn pct(ts: &[Duration], p: f64) -> Duration {
    let i = ((ts.len() as f64 - 1.0) * p).round() as usize;
    ts[i]
}

fn report(maps: &[(String, IndexingMap)]) -> String {
    let limits = SimplifyLimits::default();
    let mut lines = Vec::new();
    let mut all_t = Vec::new();
    let mut all_b = Vec::new();
    let (mut before, mut after, mut base_after) = (0u64, 0u64, 0u64);
    let (mut hits, mut grew, mut lower, mut same, mut max_nodes, mut nodes_sum) =
        (0, 0, 0, 0, 0usize, 0usize);
    let (mut div_before, mut div_after) = (0usize, 0usize);
    for kind in ["seed", "reshape", "thread", "random", "all"] {
        let group: Vec<&IndexingMap> = maps
            .iter()
            .filter(|(k, _)| kind == "all" || k == kind)
            .map(|(_, m)| m)
            .collect();
        let mut ts = Vec::new();
        let mut bs = Vec::new();
        for m in &group {
            ts.push(time_of(&mut || {
                black_box(simplify(black_box(m), &limits));
            }));
            bs.push(time_of(&mut || {
                black_box(baseline(black_box(m)));
            }));
            if kind == "all" {
                let s = simplify(m, &limits);
                let b = baseline(m);
                let (c0, c1) = (
                    cost(&baseline(m)),
                    if s.map.is_known_empty() {
                        0
                    } else {
                        cost(&s.map)
                    },
                );
                before += c0;
                after += c1;
                base_after += cost(&b);
                div_before += divs(&b);
                div_after += if s.map.is_known_empty() {
                    0
                } else {
                    divs(&s.map)
                };
                hits += usize::from(s.limit_hit.is_some());
                max_nodes = max_nodes.max(s.nodes);
                nodes_sum += s.nodes;
                match c1.cmp(&c0) {
                    std::cmp::Ordering::Less => lower += 1,
                    std::cmp::Ordering::Equal => same += 1,
                    std::cmp::Ordering::Greater => {
                        grew += 1;
                        lines.push(format!("  cost grew: {m}  =>  {}", s.map));
                    }
                }
            }
        }
        ts.sort();
        bs.sort();
        lines.push(format!(
            "{kind:>8}: {:>3} maps | e-graph simplify: median {:>9.1?}  p99 {:>9.1?}  max {:>9.1?} | baseline: median {:>8.1?}  p99 {:>8.1?}",
            group.len(),
            pct(&ts, 0.5),
            pct(&ts, 0.99),
            ts[ts.len() - 1],
            pct(&bs, 0.5),
            pct(&bs, 0.99),
        ));
        if kind == "all" {
            all_t = ts;
            all_b = bs;
        }
    }
    let total: Duration = all_t.iter().sum();
    let total_b: Duration = all_b.iter().sum();
    lines.push(format!(
        "mean per map: e-graph {:.1?}, baseline {:.1?}",
        total / all_t.len() as u32,
        total_b / all_b.len() as u32
    ));
    lines.push(format!(
        "cost (sum of operator weights; canonical input): before {before}, baseline after {base_after}, e-graph after {after} ({:.1}% removed)",
        100.0 * (before - after.min(before)) as f64 / before.max(1) as f64
    ));
    lines.push(format!(
        "div/mod/ceildiv operators: before {div_before}, after {div_after}"
    ));
    lines.push(format!(
        "maps with cost lower: {lower}, equal: {same}, higher: {grew}"
    ));
    lines.push(format!(
        "e-nodes at the end: max {max_nodes}, mean {:.0}; runs stopped by a bound: {hits}",
        nodes_sum as f64 / maps.len() as f64
    ));
    lines.join("\n")
}

fn main() {
    let maps = corpus();
    let text = report(&maps);
    println!("{text}");
    let _ = std::fs::write("target/simplify-report.txt", &text);
    if std::env::args().any(|a| a == "--report-only") {
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    let limits = SimplifyLimits::default();
    let mut g = c.benchmark_group("simplify");
    for kind in ["seed", "reshape", "thread", "random"] {
        let group: Vec<&IndexingMap> = maps
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, m)| m)
            .collect();
        g.bench_function(format!("e-graph/{kind} ({} maps)", group.len()), |b| {
            b.iter(|| {
                for m in &group {
                    black_box(simplify(black_box(m), &limits));
                }
            })
        });
        g.bench_function(format!("baseline/{kind} ({} maps)", group.len()), |b| {
            b.iter(|| {
                for m in &group {
                    black_box(baseline(black_box(m)));
                }
            })
        });
    }
    g.finish();
    c.final_summary();
}
