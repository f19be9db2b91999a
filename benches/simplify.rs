//! Simplifier benchmark over `benches/data/simplify-corpus.txt` (633 maps: the seed
//! examples, reshape chains, thread-id maps, random maps; regenerate with
//! `python3 benches/data/make_corpus.py`; and 200 maps of the fusions of the XLA dumps,
//! group `dumps`: `cargo bench --bench simplify -- --dumps-corpus
//! tests/data/xla-dumps/h100-jax-0.11.2 tests/data/xla-dumps/cpu-jax-0.10.2`, appended).
//!
//! Before the criterion groups run, a report is printed (and written to
//! `target/simplify-report.txt`): per-map time of `simplify` (the fastest of 15 runs, as
//! the machine may be shared),
//! the median, p99 and max over the corpus, e-nodes, bounds hit, and the total cost (sum of
//! operator weights) before and after, for the e-graph simplifier and for the baseline (the
//! canonical linear form only, enumeration-free, what ixmap did before the e-graph).
//!
//! `cargo bench --bench simplify` (add `-- --report-only` to skip the criterion groups).
//!
//! With `-- --isl-worker` the binary is instead the ixmap side of `scripts/bench-isl`
//! (`benches/simplify_isl.py`): a persistent process that times `simplify` on the parsed
//! corpus batch by batch, as the driver asks, and checks isl's outputs by brute force.

use criterion::{black_box, Criterion};
use ixmap::map::{remove_unused_symbols, IndexingMap};
use ixmap::simplify::cost::{div_count, expr_cost};
use ixmap::simplify::{simplify, SimplifyLimits};
use std::time::{Duration, Instant};

/// mimalloc (Cargo.toml says why), through `ixmap::expr::alloc::Mi` (which says why).
#[global_allocator]
static ALLOC: ixmap::expr::alloc::Mi = ixmap::expr::alloc::Mi;

fn corpus() -> Vec<(String, IndexingMap)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/data/simplify-corpus.txt"
    );
    // From the checkout that built the bench, or (a copied binary) the current directory.
    // IXMAP_CORPUS: another corpus file (a few maps to profile alone)
    let path = std::env::var("IXMAP_CORPUS").unwrap_or(path.to_string());
    let text = std::fs::read_to_string(&path)
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
    for kind in ["seed", "reshape", "thread", "random", "dumps", "all"] {
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

/// `-- --once [GROUP] [REPEAT]`: one `simplify` of each map (of GROUP, or all), REPEAT
/// times over (for `perf record`), then per map its time, e-nodes and bound hit, slowest
/// first, and the totals per group: where the corpus's time goes.
fn once(maps: &[(String, IndexingMap)]) {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--once").unwrap_or(0);
    let group = args.get(at + 1).filter(|g| !g.starts_with('-')).cloned();
    let repeat: usize = args.get(at + 2).and_then(|r| r.parse().ok()).unwrap_or(1);
    let limits = SimplifyLimits {
        max_plateau: std::env::var("IXMAP_PLATEAU")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(SimplifyLimits::default().max_plateau),
        max_nodes: std::env::var("IXMAP_MAX_NODES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(SimplifyLimits::default().max_nodes),
        ..SimplifyLimits::default()
    };
    let compare = args.iter().any(|a| a == "--compare");
    ixmap::simplify::rules::profile::enable();
    let outputs = args.iter().any(|a| a == "--outputs");
    let mut rows = Vec::new();
    let (mut worse, mut better, mut same_out, mut t_old) = (0, 0, 0, Duration::ZERO);
    for (kind, m) in maps {
        if group.as_ref().is_some_and(|g| g != "all" && g != kind) {
            continue;
        }
        if compare {
            // the same map without the pre-pass: output rank and time, old against new
            let off = SimplifyLimits {
                prepass: false,
                ..limits
            };
            let t = Instant::now();
            let a = simplify(m, &off);
            t_old += t.elapsed();
            let b = simplify(m, &limits);
            let rank = |s: &ixmap::simplify::Simplified| -> Vec<ixmap::simplify::cost::Rank> {
                s.map
                    .results
                    .iter()
                    .chain(s.map.constraints.iter().map(|c| &c.0))
                    .map(|&e| ixmap::simplify::cost::expr_rank(e))
                    .collect()
            };
            let sum = |v: Vec<ixmap::simplify::cost::Rank>| {
                v.iter().fold((0u64, 0u64, 0u64, 0u64, 0u64), |a, r| {
                    (a.0 + r.0, a.1 + r.1, a.2 + r.2, a.3 + r.3, a.4 + r.4)
                })
            };
            let (ra, rb) = (sum(rank(&a)), sum(rank(&b)));
            if a.map.to_string() == b.map.to_string() {
                same_out += 1;
            } else if rb > ra {
                worse += 1;
                println!("WORSE {kind} {m}\n  old {}\n  new {}", a.map, b.map);
            } else {
                better += 1;
                println!("BETTER {kind} {m}\n  old {}\n  new {}", a.map, b.map);
            }
        }
        let mut best = Duration::MAX;
        let mut last = None;
        for _ in 0..repeat {
            let t = Instant::now();
            let s = simplify(black_box(m), &limits);
            best = best.min(t.elapsed());
            last = Some(s);
        }
        let s = last.expect("repeat >= 1");
        if outputs {
            // every map's output and the deterministic counts, in corpus order (diff two
            // builds' files to see what a change did to the printed results)
            println!(
                "OUT\t{kind}\tnodes {}\titerations {}\t{}\t{m}\t=> {}",
                s.nodes,
                s.phases.iterations,
                s.limit_hit.clone().unwrap_or_default(),
                s.map
            );
        }
        rows.push((
            best,
            kind.clone(),
            s.nodes,
            s.limit_hit.clone(),
            m.to_string(),
            s.map.to_string(),
            s.phases,
        ));
    }
    type Group = (Duration, usize, usize, ixmap::simplify::rewrite::Phases);
    let mut by_group: std::collections::BTreeMap<String, Group> = Default::default();
    for (t, k, _, hit, _, _, ph) in &rows {
        let e = by_group.entry(k.clone()).or_default();
        e.0 += *t;
        e.1 += 1;
        e.2 += usize::from(hit.is_some());
        e.3.add(ph);
    }
    // the per-phase split of one (the last) run of each map
    let split = |ph: &ixmap::simplify::rewrite::Phases| {
        let ms = |s: f64| s * 1e3;
        format!(
            "pre-pass {:.2} ms, e-graph runs {} ({} iterations): search {:.2} ms, apply {:.2} ms, rebuild {:.2} ms, extract {:.2} ms",
            ms(ph.prepass_s), ph.runs, ph.iterations, ms(ph.search_s), ms(ph.apply_s), ms(ph.rebuild_s), ms(ph.extract_s)
        )
    };
    rows.sort_by(|a, b| b.0.cmp(&a.0));
    // `--all`: every map, slowest first (else the 25 slowest)
    let shown = if args.iter().any(|a| a == "--all") {
        rows.len()
    } else {
        25
    };
    for (t, k, n, hit, src, out, ph) in rows.iter().take(shown) {
        println!(
            "{t:>10.1?} {k:>8} nodes {n:>6} {}\n    {}\n    {src}\n => {out}",
            hit.clone().unwrap_or_default(),
            split(ph)
        );
    }
    if compare {
        println!("compare (pre-pass off vs on): same output {same_out}, new cheaper {better}, new dearer {worse}; time without the pre-pass {t_old:.1?}");
    }
    // per rule: the Compute appliers' calls, time, e-nodes added and unions, dearest first
    let mut stats: Vec<_> = ixmap::simplify::rules::profile::take()
        .into_iter()
        .collect();
    stats.sort_by(|a, b| b.1.time.cmp(&a.1.time));
    for (rule, st) in &stats {
        println!(
            "rule {rule:>26}: calls {:>9}, time {:>10.1?}, nodes added {:>8}, unions {:>7}",
            st.calls, st.time, st.nodes_added, st.unions
        );
    }
    for (k, (t, n, h, ph)) in &by_group {
        println!(
            "{k:>8}: {n:>4} maps, total {t:>10.1?}, bound hit {h}; {}",
            split(ph)
        );
    }
}

/// `-- --cold [GROUP] [ROUNDS]`: the timed loop of `scripts/bench-isl` without isl, for
/// `perf record`: every map simplified once untimed (as the worker does before it
/// answers), then ROUNDS times over the maps (of GROUP, or all) in chunks of 16, one
/// `simplify` each, with the caches evicted between chunks (16 MiB written, as isl's side
/// of the interleaving leaves them; `--churn`: other code run too, parsing and printing);
/// prints the median per map over rounds, per group.
fn cold(maps: &[(String, IndexingMap)]) {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--cold").unwrap_or(0);
    let group = args.get(at + 1).filter(|g| !g.starts_with('-')).cloned();
    let rounds: usize = args.get(at + 2).and_then(|r| r.parse().ok()).unwrap_or(9);
    let limits = SimplifyLimits::default();
    let picked: Vec<&(String, IndexingMap)> = maps
        .iter()
        .filter(|(k, _)| group.as_ref().is_none_or(|g| g == "all" || g == k))
        .collect();
    for (_, m) in &picked {
        black_box(simplify(m, &limits));
    }
    // `--focus G`: the maps of group G go through `focused` (a function of their own), so
    // `valgrind --tool=callgrind --cache-sim=yes --toggle-collect='*focused*'` counts the
    // instructions and simulated cache misses of those maps alone, in whatever company.
    let focus = args
        .iter()
        .position(|a| a == "--focus")
        .and_then(|i| args.get(i + 1))
        .cloned();
    // `--no-evict`: no 16 MiB written between chunks (the warm cost, in the same order).
    let no_evict = args.iter().any(|a| a == "--no-evict");
    // `--collect` (experiment): mimalloc's `mi_collect(false)` after each map outside
    // the focus group.
    let collect = args
        .iter()
        .any(|a| a == "--collect" || a == "--collect-force");
    let force_collect = args.iter().any(|a| a == "--collect-force");
    // `--churn`: between chunks, also run other code than the simplifier's (parse, build and
    // print 64 corpus maps, the JSON of their text): code and branch history evicted too, as
    // the other side of `scripts/bench-isl` leaves them, where the 16 MiB write evicts data.
    let churn = args.iter().any(|a| a == "--churn");
    let srcs: Vec<String> = maps.iter().take(64).map(|(_, m)| m.to_string()).collect();
    let mut evict = vec![0u8; 16 << 20];
    let mut times = vec![Vec::new(); picked.len()];
    for round in 0..rounds {
        for (c, chunk) in picked.chunks(16).enumerate() {
            for (j, (k, m)) in chunk.iter().enumerate() {
                let t = Instant::now();
                if focus.as_ref().is_some_and(|f| f == k) {
                    focused(m, &limits);
                } else {
                    black_box(simplify(black_box(m), &limits));
                    if collect {
                        // SAFETY: mimalloc's own entry point, no arguments to uphold.
                        unsafe { mi_collect(force_collect) };
                    }
                }
                times[c * 16 + j].push(t.elapsed());
            }
            if churn {
                for src in &srcs {
                    if let Ok(lit) = ixmap::syntax::parse_map_lit(src) {
                        if let Ok(m) = ixmap::session::build::build_map(&lit) {
                            black_box(serde_json::to_string(&m.to_string()).ok());
                        }
                    }
                }
            }
            if !no_evict {
                for (i, b) in evict.iter_mut().enumerate().step_by(64) {
                    *b = b.wrapping_add((i + round) as u8);
                }
            }
            black_box(&evict);
        }
    }
    let mut by_group: std::collections::BTreeMap<&str, Vec<Duration>> = Default::default();
    let all = args.iter().any(|a| a == "--all");
    for ((k, m), ts) in picked.iter().zip(&mut times) {
        ts.sort();
        by_group.entry(k).or_default().push(ts[ts.len() / 2]);
        if all {
            // `--all`: every map's median, with the map (sort them to find the median map)
            println!("{:>10.1?} {k:>8} {m}", ts[ts.len() / 2]);
        }
    }
    for (k, mut ts) in by_group {
        ts.sort();
        println!(
            "{k:>8}: {:>4} maps, median {:>9.1?}, p99 {:>9.1?}, max {:>9.1?}",
            ts.len(),
            pct(&ts, 0.5),
            pct(&ts, 0.99),
            ts[ts.len() - 1]
        );
    }
}

extern "C" {
    fn mi_collect(force: bool);
}

#[inline(never)]
fn focused(m: &IndexingMap, limits: &SimplifyLimits) {
    black_box(simplify(black_box(m), limits));
}

/// `-- --fold [GROUP]`: what the deterministic pre-pass (`simplify/fold.rs`) alone makes of
/// each map's results (under the map's bounds and constraints, as `simplify` hands them
/// over), beside what `simplify` prints: per map its corpus line, whether the pre-pass
/// result is flat (`fold::is_flat`: what `mod.rs` hands on to the e-graph instead of the
/// input), the operator weights, the e-nodes of the whole run.
/// Maps the pre-pass does not finish are the ones the e-graph spends its time on.
fn fold_report(maps: &[(String, IndexingMap)]) {
    use ixmap::simplify::cost::expr_rank;
    use ixmap::simplify::fold;
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--fold").unwrap_or(0);
    let group = args.get(at + 1).filter(|g| !g.starts_with('-')).cloned();
    let limits = SimplifyLimits::default();
    let (mut n, mut finished, mut fin_nodes) = (0, 0, 0usize);
    for (line, (kind, m)) in maps.iter().enumerate() {
        if group.as_ref().is_some_and(|g| g != "all" && g != kind) {
            continue;
        }
        n += 1;
        let mut c = m.clone();
        c.canonicalize();
        c.normalize_divisors();
        let bounds = c.bounds();
        let folded = fold::fold_all(&c.results, &bounds, &c.constraints);
        let fin = folded.iter().all(|&e| fold::is_flat(e));
        let s = simplify(m, &limits);
        let names = c.names();
        let shown: Vec<String> = folded
            .iter()
            .map(|&e| ixmap::expr::display(e, &names).to_string())
            .collect();
        let r_in: u64 = c.results.iter().map(|&e| expr_rank(e).0).sum();
        let r_fold: u64 = folded.iter().map(|&e| expr_rank(e).0).sum();
        let r_out: u64 = s.map.results.iter().map(|&e| expr_rank(e).0).sum();
        finished += usize::from(fin);
        if fin {
            fin_nodes = fin_nodes.max(s.nodes);
        }
        println!(
            "line {} {kind} flat {fin} weight in {r_in} pre-pass {r_fold} simplify {r_out} nodes {} {}\n  pre-pass: ({})\n  simplify: {}",
            line + 1,
            s.nodes,
            s.limit_hit.clone().unwrap_or_default(),
            shown.join(", "),
            s.map
        );
    }
    println!(
        "{n} maps; the pre-pass leaves {finished} flat; most e-nodes among those: {fin_nodes}"
    );
}

/// `-- --dumps-corpus DIR...`: the corpus's `dumps` group, printed as `dumps<TAB>MAP`
/// lines: every map the simplifier is handed while the operand maps of every fusion of
/// the XLA dumps under DIR are composed through the fusion (`hlo::fusion`'s walk from each
/// root to the parameters: each instruction's operand maps composed after the maps that
/// reach it, then simplified; here the composed map is kept before it is simplified),
/// where it is not a plain linear map (`fusion::finish` does not simplify those), each
/// distinct map once, in the order met, at most `--max N` (default 200) taken evenly
/// over the list.
fn dumps_corpus() {
    use ixmap::hlo::fusion;
    use ixmap::map::compose;
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == "--dumps-corpus").unwrap_or(0);
    let max: usize = args
        .iter()
        .position(|a| a == "--max")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let dirs: Vec<std::path::PathBuf> = args[at + 1..]
        .iter()
        .take_while(|a| !a.starts_with("--"))
        .map(std::path::PathBuf::from)
        .collect();
    let files = ixmap::dump::module_files(&dirs).expect("dump directories");
    let mut seen = std::collections::HashSet::new();
    let mut found: Vec<String> = Vec::new();
    let mut operand_maps: Vec<String> = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a module file");
        let Ok(ws) = ixmap::dump::load_module(&text) else {
            eprintln!("skipped (does not load): {}", file.display());
            continue;
        };
        let module = &ws.module;
        let Some(entry) = module.entry() else {
            continue;
        };
        for ins in &entry.instrs {
            let Some(comp) = module.fused_computation(ins) else {
                continue;
            };
            let flat;
            let comp = if ixmap::hlo::inline::has_nesting(module, comp) {
                flat = ixmap::hlo::inline::flatten(module, comp);
                &flat
            } else {
                comp
            };
            // the input-to-output maps from each parameter (`indexing F from K`)
            for k in 0..comp.parameters().len() {
                for m in fusion::input_to_output_in(module, comp, k).iter().flatten() {
                    let text = m.to_string();
                    if !m.is_undefined() && m.runtimes.is_empty() && seen.insert(text.clone()) {
                        operand_maps.push(text);
                    }
                }
            }
            for root in comp.outputs() {
                let order = fusion::reverse_topological(comp, &[root]);
                let mut sets: Vec<Vec<IndexingMap>> = vec![Vec::new(); comp.instrs.len()];
                sets[root].push(IndexingMap::identity(comp.instrs[root].dims()));
                for id in order {
                    let set = std::mem::take(&mut sets[id]);
                    if comp.instrs[id].opcode == "parameter" {
                        // the operand's maps as `indexing` prints them
                        for m in set {
                            let text = m.to_string();
                            if !m.is_undefined()
                                && m.runtimes.is_empty()
                                && seen.insert(text.clone())
                            {
                                operand_maps.push(text);
                            }
                        }
                        continue;
                    }
                    if set.is_empty() {
                        continue;
                    }
                    let per_operand = fusion::op_output_to_input(module, comp, id);
                    for (k, &opnd) in comp.instrs[id].operands.iter().enumerate() {
                        let Some(op_maps) = per_operand.get(k) else {
                            continue;
                        };
                        for m in &set {
                            for o in op_maps {
                                let Ok(raw) = compose(m, o) else { continue };
                                if raw.is_undefined() {
                                    continue;
                                }
                                let plain = raw.constraints.is_empty()
                                    && !raw.has_symbols()
                                    && !raw.results.iter().any(|r| r.has_div());
                                let mut named = raw.clone();
                                ixmap::hlo::ops::default_names(&mut named);
                                let text = named.to_string();
                                // only what reads back as the same map (no runtime values)
                                let reads_back = ixmap::syntax::parse_map_lit(&text)
                                    .ok()
                                    .and_then(|l| ixmap::session::build::build_map(&l).ok())
                                    .is_some_and(|b| b == named);
                                if !plain && reads_back && seen.insert(text.clone()) {
                                    found.push(text);
                                }
                                let next = fusion::finish(raw);
                                if !sets[opnd].contains(&next) {
                                    sets[opnd].push(next);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    // the composed maps first, then the operand maps (simplified already, as a user who
    // simplifies a fusion's maps has them) up to the total
    eprintln!(
        "{} composed maps handed to the simplifier, {} operand maps besides",
        found.len(),
        operand_maps.len()
    );
    let take = found.len().min(max);
    let mut out: Vec<&String> = (0..take).map(|j| &found[j * found.len() / take]).collect();
    let rest = (max - take).min(operand_maps.len());
    out.extend((0..rest).map(|j| &operand_maps[j * operand_maps.len() / rest]));
    for m in out {
        println!("dumps\t{m}");
    }
}

fn main() {
    if std::env::args().any(|a| a == "--dumps-corpus") {
        dumps_corpus();
        return;
    }
    if std::env::args().any(|a| a == "--isl-worker") {
        isl_worker::run();
        return;
    }
    if std::env::args().any(|a| a == "--rank") {
        // `-- --rank`: each stdin line a map as printed; its summed rank (cost.rs) out
        use std::io::BufRead;
        for line in std::io::stdin().lock().lines() {
            let line = line.expect("stdin");
            let m = ixmap::syntax::parse_map_lit(&line)
                .map_err(|e| format!("{e:?}"))
                .and_then(|l| ixmap::session::build::build_map(&l).map_err(|e| format!("{e:?}")));
            match m {
                Ok(m) => println!("{:?}", isl_worker::rank_of(&m)),
                Err(e) => println!("error {e}"),
            }
        }
        return;
    }
    if std::env::args().any(|a| a == "--fold") {
        fold_report(&corpus());
        return;
    }
    if std::env::args().any(|a| a == "--once") {
        once(&corpus());
        return;
    }
    if std::env::args().any(|a| a == "--cold") {
        cold(&corpus());
        return;
    }
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
    for kind in ["seed", "reshape", "thread", "random", "dumps"] {
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

/// The ixmap side of `benches/simplify_isl.py`: one process for the whole run, driven by
/// lines on stdin, answering one JSON line each on stdout.
///
/// - at start: `{"maps": [...]}` — per map its group, source, the isl text of its results
///   and of its domain (or why isl cannot take it), ixmap's simplified results and their
///   cost (the cost of the printed form, parsed back as any other map text would be);
/// - `time I J` — `[ns, ...]`: one `simplify` of each map `I..J`, already parsed;
/// - `warm I J N` — `[ns, ...]`: per map of `I..J`, the median of N `simplify`s in a row
///   after an untimed one (code and caches warm: `--warm` of the script);
/// - `check I E1;E2;...` — isl's results converted to our syntax, over map `I`'s variables
///   and domain: their cost, and whether they equal map `I` at every domain point (all
///   points up to 2M, else 200,000 points drawn from the box);
/// - `quit`.
///
/// With `--smoke`, the corpus is the first 3 maps of each group.
mod isl_worker {
    use ixmap::expr::{Expr, ExprKind, Op};
    use ixmap::map::IndexingMap;
    use ixmap::simplify::{simplify, SimplifyLimits};
    use serde_json::json;
    use std::io::{BufRead, Write};
    use std::time::Instant;

    /// The cost both outputs are compared by: `(floordiv/ceildiv/mod nodes, operation
    /// nodes)`, lexicographically, summed over the results.
    pub fn cost(m: &IndexingMap) -> (u64, u64) {
        fn walk(e: Expr, c: &mut (u64, u64)) {
            if let ExprKind::Bin(op, a, b) = e.kind() {
                c.0 += u64::from(matches!(op, Op::FloorDiv | Op::CeilDiv | Op::Mod));
                c.1 += 1;
                walk(a, c);
                walk(b, c);
            }
        }
        let mut c = (0, 0);
        for &r in &m.results {
            walk(r, &mut c);
        }
        c
    }

    /// The summed [`ixmap::simplify::cost::Rank`] of the results and constraints (what the
    /// simplifier minimises), to compare two builds' outputs map by map.
    pub fn rank_of(m: &IndexingMap) -> [u64; 5] {
        let mut r = [0u64; 5];
        for &e in m.results.iter().chain(m.constraints.iter().map(|c| &c.0)) {
            let x = ixmap::simplify::cost::expr_rank(e);
            for (a, b) in r.iter_mut().zip([x.0, x.1, x.2, x.3, x.4]) {
                *a = a.saturating_add(b);
            }
        }
        r
    }

    fn parse(src: &str) -> Result<IndexingMap, String> {
        let lit = ixmap::syntax::parse_map_lit(src).map_err(|e| format!("{e:?}"))?;
        ixmap::session::build::build_map(&lit).map_err(|e| format!("{e:?}"))
    }

    /// `e` in isl's syntax (integer coefficients and divisors must be constants).
    fn isl_expr(e: Expr, names: &[String]) -> Result<String, String> {
        Ok(match e.kind() {
            ExprKind::Const(c) => format!("({c})"),
            ExprKind::Var(v) => names[v as usize].clone(),
            ExprKind::Bin(op, a, b) => {
                let x = isl_expr(a, names)?;
                let konst = |e: Expr| match e.kind() {
                    ExprKind::Const(c) => Some(c),
                    _ => None,
                };
                match op {
                    Op::Add => format!("({x} + {})", isl_expr(b, names)?),
                    Op::Min => format!("min({x}, {})", isl_expr(b, names)?),
                    Op::Max => format!("max({x}, {})", isl_expr(b, names)?),
                    Op::Mul => match (konst(a), konst(b)) {
                        (_, Some(c)) => format!("({x}*{c})"),
                        (Some(c), None) => format!("({}*{c})", isl_expr(b, names)?),
                        _ => return Err("a product of two non-constants".into()),
                    },
                    Op::FloorDiv | Op::CeilDiv | Op::Mod => {
                        let c = konst(b).ok_or("a non-constant divisor")?;
                        let (x, k) = match c {
                            0 => return Err("division by zero".into()),
                            c if c > 0 => (x, c),
                            // floor(a / c) = floor(-a / -c); a mod c = a - c * floor(a / c).
                            c => (format!("(-{x})"), c.checked_neg().ok_or("divisor")?),
                        };
                        match (op, c > 0) {
                            (Op::FloorDiv, _) => format!("floor({x}/{k})"),
                            (Op::CeilDiv, _) => format!("ceil({x}/{k})"),
                            (_, true) => format!("({x} mod {k})"),
                            (_, false) => {
                                format!("({} + (floor({x}/{k})*{k}))", isl_expr(a, names)?)
                            }
                        }
                    }
                }
            }
        })
    }

    /// `({ [vars] -> [results] }, { [vars] : domain })` for isl, symbols as input dims.
    fn isl_text(m: &IndexingMap) -> Result<(String, String), String> {
        if m.status != ixmap::map::Status::Defined {
            return Err(format!("status {:?}", m.status));
        }
        let names = m.names();
        let tuple = format!("[{}]", names.join(", "));
        let results = m
            .results
            .iter()
            .map(|&r| isl_expr(r, &names))
            .collect::<Result<Vec<_>, _>>()?;
        let mut conds = Vec::new();
        for v in m.vars() {
            let b = v.bounds;
            if b.lo != i64::MIN {
                conds.push(format!("{} >= {}", v.name, b.lo));
            }
            if b.hi != i64::MAX {
                conds.push(format!("{} <= {}", v.name, b.hi));
            }
        }
        for (e, b) in &m.constraints {
            let x = isl_expr(*e, &names)?;
            if b.lo != i64::MIN {
                conds.push(format!("{x} >= {}", b.lo));
            }
            if b.hi != i64::MAX {
                conds.push(format!("{x} <= {}", b.hi));
            }
        }
        let dom = if conds.is_empty() {
            format!("{{ {tuple} }}")
        } else {
            format!("{{ {tuple} : {} }}", conds.join(" and "))
        };
        Ok((format!("{{ {tuple} -> [{}] }}", results.join(", ")), dom))
    }

    /// Whether `b` (the same variables and domain as `a`) equals `a` at every domain point:
    /// `(equal, points compared, sampled)`.
    fn brute_equal(a: &IndexingMap, b: &IndexingMap) -> Result<(bool, u64, bool), String> {
        let bounds = ixmap::map::enumerate::narrowed_bounds(a);
        let mut size: u64 = 1;
        for iv in &bounds {
            if iv.is_empty() {
                return Ok((true, 0, false));
            }
            let n = (iv.hi as i128 - iv.lo as i128 + 1) as u128;
            size = size.saturating_mul(u64::try_from(n).unwrap_or(u64::MAX));
        }
        let (mut ok, mut n) = (true, 0u64);
        let mut cmp = |p: &[i64]| -> Result<(), String> {
            let ra = a.eval_point(p).map_err(|e| e.to_string())?;
            if let Some(ra) = ra {
                n += 1;
                let rb: Vec<i64> = b
                    .results
                    .iter()
                    .map(|&r| ixmap::expr::eval(r, p))
                    .collect::<Result<_, _>>()
                    .map_err(|e| e.to_string())?;
                ok &= ra == rb;
            }
            Ok(())
        };
        if size <= 2_000_000 {
            let mut err = None;
            ixmap::map::enumerate::for_each_in_box(&bounds, &mut |p| {
                if let Err(e) = cmp(p) {
                    err = Some(e);
                    return Ok(false);
                }
                Ok(true)
            })
            .map_err(|e| e.to_string())?;
            if let Some(e) = err {
                return Err(e);
            }
            Ok((ok, n, false))
        } else {
            // xorshift64*: a fixed sequence, so a run is reproducible.
            let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
            let mut p = vec![0i64; bounds.len()];
            for _ in 0..200_000 {
                for (x, iv) in p.iter_mut().zip(&bounds) {
                    s ^= s >> 12;
                    s ^= s << 25;
                    s ^= s >> 27;
                    let r = s.wrapping_mul(0x2545_F491_4F6C_DD1D);
                    let w = (iv.hi as i128 - iv.lo as i128 + 1) as u128;
                    *x = (iv.lo as i128 + (r as u128 % w) as i128) as i64;
                }
                cmp(&p)?;
            }
            Ok((ok, n, true))
        }
    }

    pub fn run() {
        // `--no-prepass`: the simplifier without its pre-pass (`simplify/fold.rs`), to
        // measure what the pre-pass changes.
        let limits = SimplifyLimits {
            prepass: !std::env::args().any(|a| a == "--no-prepass"),
            ..SimplifyLimits::default()
        };
        let maps = super::corpus();
        let srcs: Vec<String> = {
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/benches/data/simplify-corpus.txt"
            );
            // IXMAP_CORPUS: another corpus file (a few maps to profile alone)
            let path = std::env::var("IXMAP_CORPUS").unwrap_or(path.to_string());
            let text = std::fs::read_to_string(&path)
                .or_else(|_| std::fs::read_to_string("benches/data/simplify-corpus.txt"))
                .expect("the corpus file exists");
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.split_once('\t').expect("KIND<TAB>MAP").1.to_string())
                .collect()
        };
        // `--smoke`: the first 3 maps of each group only.
        let (maps, srcs): (Vec<_>, Vec<_>) = if std::env::args().any(|a| a == "--smoke") {
            let mut seen = std::collections::HashMap::new();
            maps.into_iter()
                .zip(srcs)
                .filter(|((g, _), _)| {
                    let n = seen.entry(g.clone()).or_insert(0);
                    *n += 1;
                    *n <= 3
                })
                .unzip()
        } else {
            (maps, srcs)
        };
        let mut infos = Vec::new();
        for ((group, m), src) in maps.iter().zip(&srcs) {
            let s = simplify(m, &limits);
            let out = s.map.to_string();
            let out_cost = if s.map.is_known_empty() {
                Ok((0, 0))
            } else {
                parse(&out).map(|p| cost(&p))
            };
            let input_cost = cost(m);
            let (isl_in, isl_dom, isl_err) = match isl_text(m) {
                Ok((a, b)) => (a, b, String::new()),
                Err(e) => (String::new(), String::new(), e),
            };
            let results: Vec<String> = s.map.results.iter().map(|&r| s.map.show_expr(r)).collect();
            infos.push(json!({
                "group": group,
                "src": src,
                "in_cost": [input_cost.0, input_cost.1],
                "isl_in": isl_in,
                "isl_dom": isl_dom,
                "isl_err": isl_err,
                "ixmap_out": out,
                "ixmap_results": results,
                "ixmap_cost": out_cost.as_ref().map(|c| json!([c.0, c.1])).unwrap_or(json!(null)),
                "ixmap_cost_err": out_cost.err().unwrap_or_default(),
                "limit_hit": s.limit_hit,
                "nodes": s.nodes,
                "rank": rank_of(&s.map),
            }));
        }
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        writeln!(out, "{}", json!({ "maps": infos })).unwrap();
        out.flush().unwrap();
        for line in std::io::stdin().lock().lines() {
            let line = line.expect("stdin");
            let mut parts = line.splitn(3, ' ');
            let reply = match parts.next().unwrap_or("") {
                "time" => {
                    let i: usize = parts.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                    let j: usize = parts
                        .next()
                        .and_then(|x| x.parse().ok())
                        .unwrap_or(maps.len())
                        .min(maps.len());
                    let ns: Vec<u64> = maps[i..j]
                        .iter()
                        .map(|(_, m)| {
                            let t = Instant::now();
                            criterion::black_box(simplify(criterion::black_box(m), &limits));
                            t.elapsed().as_nanos() as u64
                        })
                        .collect();
                    json!(ns)
                }
                "warm" => {
                    // `warm I J N`: per map of `I..J`, the median of N `simplify`s in a row
                    // (the first untimed): the cost with the code and the caches warm, which
                    // the interleaved `time` rounds never see (see `--warm` in the script)
                    let nums: Vec<usize> = line
                        .split(' ')
                        .skip(1)
                        .filter_map(|x| x.parse().ok())
                        .collect();
                    let j = nums.get(1).copied().unwrap_or(maps.len()).min(maps.len());
                    let i = nums.first().copied().unwrap_or(0).min(j);
                    let n = nums.get(2).copied().unwrap_or(21).max(1);
                    let ns: Vec<u64> = maps[i..j]
                        .iter()
                        .map(|(_, m)| {
                            criterion::black_box(simplify(criterion::black_box(m), &limits));
                            let mut ts: Vec<u64> = (0..n)
                                .map(|_| {
                                    let t = Instant::now();
                                    criterion::black_box(simplify(
                                        criterion::black_box(m),
                                        &limits,
                                    ));
                                    t.elapsed().as_nanos() as u64
                                })
                                .collect();
                            ts.sort_unstable();
                            ts[ts.len() / 2]
                        })
                        .collect();
                    json!(ns)
                }
                "check" => {
                    let i: usize = parts.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                    let exprs = parts.next().unwrap_or("").replace(';', ", ");
                    let src = &srcs[i];
                    let head = &src[..src.find(" -> ").expect("a map")];
                    let dom = src.rfind(", domain:").map(|k| &src[k..]).unwrap_or("");
                    let text = format!("{head} -> ({exprs}){dom}");
                    match parse(&text) {
                        Err(e) => json!({ "err": e, "text": text }),
                        Ok(b) => {
                            let c = cost(&b);
                            match brute_equal(&maps[i].1, &b) {
                                Ok((eq, n, sampled)) => json!({
                                    "equal": eq, "points": n, "sampled": sampled,
                                    "cost": [c.0, c.1],
                                }),
                                Err(e) => json!({ "err": e, "cost": [c.0, c.1] }),
                            }
                        }
                    }
                }
                "quit" | "" => break,
                other => json!({ "err": format!("unknown command {other}") }),
            };
            writeln!(out, "{reply}").unwrap();
            out.flush().unwrap();
        }
    }
}
