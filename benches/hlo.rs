//! HLO analysis at scale (issue 4):
//!
//! 1. `indexing` of every parameter of generated fusions of 1,000 and 10,000 instructions
//!    (chains mixing elementwise, transpose, reshape, broadcast, slice, with a new
//!    parameter every few instructions). Goal: 10,000 in <= 1 s and <= 500 MB.
//! 2. `partition` of a chain of diamonds (each diamond's top is read at two different
//!    indices), to show the cost is linear.
//!
//! Run: `cargo bench --bench hlo` (plain timing; peak memory from /proc/self/status).

use ixmap::hlo::parse::parse_hlo;
use ixmap::hlo::{fusion, partition, Workspace};
use std::time::Instant;

fn peak_rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// A fusion of about `n` instructions over [8, 16] tensors.
fn chain(n: usize) -> String {
    let mut lines = vec!["  p0 = f32[8,16] parameter(0)".to_string()];
    let mut params = 1;
    let mut cur = "p0".to_string();
    let mut i = 0;
    while lines.len() < n {
        let v = format!("v{i}");
        let line = match i % 8 {
            0 => {
                lines.push(format!("  p{params} = f32[8,16] parameter({params})"));
                let l = format!("  {v} = f32[8,16] add({cur}, p{params})");
                params += 1;
                l
            }
            1 => format!("  {v} = f32[16,8] transpose({cur}), dimensions={{1,0}}"),
            2 => format!("  {v} = f32[8,16] transpose({cur}), dimensions={{1,0}}"),
            3 => format!("  {v} = f32[128] reshape({cur})"),
            4 => format!("  {v} = f32[8,16] reshape({cur})"),
            5 => format!("  {v} = f32[8,8] slice({cur}), slice={{[0:8], [0:16:2]}}"),
            6 => format!("  {v} = f32[8,8,2] broadcast({cur}), dimensions={{0,1}}"),
            _ => format!("  {v} = f32[8,16] reshape({cur})"),
        };
        lines.push(line);
        cur = v;
        i += 1;
    }
    let last = lines.len() - 1;
    lines[last] = lines[last].replacen("  ", "  ROOT ", 1);
    format!("chain {{\n{}\n}}", lines.join("\n"))
}

/// `n` diamonds: x -> (negate x, transpose x) -> add.
fn diamonds(n: usize) -> String {
    let mut lines = vec!["  x0 = f32[16,16] parameter(0)".to_string()];
    for i in 0..n {
        lines.push(format!("  l{i} = f32[16,16] log(x{i})"));
        lines.push(format!(
            "  t{i} = f32[16,16] transpose(l{i}), dimensions={{1,0}}"
        ));
        lines.push(format!("  x{} = f32[16,16] add(l{i}, t{i})", i + 1));
    }
    let last = lines.len() - 1;
    lines[last] = lines[last].replacen("  ", "  ROOT ", 1);
    format!("d {{\n{}\n}}", lines.join("\n"))
}

fn define(src: &str) -> Workspace {
    let mut ws = Workspace::new();
    let item = parse_hlo(src, 0).expect("generated HLO parses");
    ws.define(item).expect("generated HLO is valid");
    ws
}

fn main() {
    for n in [1_000usize, 10_000] {
        let src = chain(n);
        let t0 = Instant::now();
        let ws = define(&src);
        let parse_s = t0.elapsed().as_secs_f64();
        let comp = &ws.module.computations[0];
        let t1 = Instant::now();
        let fi = fusion::output_to_input(&ws.module, comp);
        let index_s = t1.elapsed().as_secs_f64();
        let maps: usize = fi.outputs[0].iter().map(|m| m.len()).sum();
        println!(
            "fusion of {} instructions ({} parameters, {maps} maps): parse {:.3} s, indexing of all parameters {:.3} s, peak RSS {:.0} MB",
            comp.instrs.len(),
            fi.outputs[0].len(),
            parse_s,
            index_s,
            peak_rss_mb()
        );
    }
    for n in [1_000usize, 10_000] {
        let ws = define(&diamonds(n));
        let comp = &ws.module.computations[0];
        let t = Instant::now();
        let p = partition::partition(comp);
        println!(
            "partition of {} diamonds ({} instructions): {} functions in {:.3} s, peak RSS {:.0} MB",
            n,
            comp.instrs.len(),
            p.functions.len(),
            t.elapsed().as_secs_f64(),
            peak_rss_mb()
        );
    }
}
