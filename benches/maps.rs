//! Figures for the foundation (issue 2):
//!
//! - `parse_print/seed_maps`: parse + canonical print of every indexing map in seeds 000 and
//!   001, reported as maps per second (criterion's element throughput);
//! - `compose/6d`: `compose` of two 6-dimensional maps (a reshape-like map, then a
//!   transpose with a range variable);
//! - `startup/repl_first_prompt`: the REPL started with standard input closed, to exit
//!   (start-up to the first prompt, plus reading end-of-input); `startup/c_empty`: `ixmap -c ''`.
//!
//! - `exact/*`: `equal`, `inverse` and `is_bijection` on domains of 4,000,000 points (issue 13),
//!   the statements of `benches/data/exact-4m.ixm`; `scripts/bench-exact` reports their
//!   peak memory too.
//!
//! Run: `cargo bench --bench maps` (add `-- --quick` for a short run).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use std::process::{Command, Stdio};

/// The pure indexing maps printed in seeds 000 and 001, as written there.
const SEED_MAPS: &[&str] = &[
    "(d0, d1) -> (d0, d1), domain: d0 in [0, 9], d1 in [0, 19]",
    "(d0, d1, d2) -> (d1), domain: d0 in [0, 9], d1 in [0, 19], d2 in [0, 29]",
    "(d0)[s0, s1] -> (s0, d0, s1), domain: d0 in [0, 19], s0 in [0, 9], s1 in [0, 29]",
    "(d0, d1) -> (), domain: d0 in [0, 1], d1 in [0, 3]",
    "()[s0, s1] -> (s0, s1), domain: s0 in [0, 1], s1 in [0, 3]",
    "(d0, d1, d2){rt0, rt1, rt2} -> (d0 + rt0, d1 + rt1, d2 + rt2), domain: d0 in [0, 0], d1 in [0, 1], d2 in [0, 31], rt0 in [0, 1], rt1 in [0, 0], rt2 in [0, 226]",
    "(d0, d1){rt0, rt1} -> (d0 - rt0, d1 - rt1), domain: d0 in [0, 19], d1 in [0, 29], rt0 in [0, 15], rt1 in [0, 20]",
    "(d0, d1, d2, d3){rt0, rt1} -> (d1 + rt0, d2 + rt1, d3), domain: d0 in [0, 1805], d1 in [0, 6], d2 in [0, 7], d3 in [0, 3], rt0 in [0, 26], rt1 in [0, 68]",
    "(d0, d1, d2, d3)[s0] -> (d0, s0), domain: d0 in [0, 1805], d1 in [0, 6], d2 in [0, 7], d3 in [0, 3], s0 in [0, 1]",
    "(d0, d1, d2, d3) -> (d0, d3, d1, d2), domain: d0 in [0, 2], d1 in [0, 5], d2 in [0, 127], d3 in [0, 12287]",
    "(d0, d1, d2, d3) -> (d0, -d1 + 16, -d2 + 8, d3), domain: d0 in [0, 0], d1 in [0, 16], d2 in [0, 8], d3 in [0, 8]",
    "(d0)[s0] -> (s0, d0), domain: d0 in [0, 9], s0 in [0, 255]",
    "(d0, d1, d2) -> (d0 + 5, d1 * 7 + 3, d2 * 2), domain: d0 in [0, 4], d1 in [0, 2], d2 in [0, 24]",
    "(d0, d1, d2) -> (d0 - 5, (d1 - 3) floordiv 7, d2 floordiv 2), domain: d0 in [5, 9], d1 in [3, 17], d2 in [0, 48], (d1 - 3) mod 7 in [0, 0], d2 mod 2 in [0, 0]",
    "(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]",
    "(d0, d1) -> (d0 * 8 + d1), domain: d0 in [0, 3], d1 in [0, 7]",
    "(d0, d1, d2) -> (d0 * 2 + d1 floordiv 2, d2 + (d1 mod 2) * 4), domain: d0 in [0, 1], d1 in [0, 3], d2 in [0, 3]",
    "(d0, d1) -> (d0 floordiv 2, d1 floordiv 4 + (d0 mod 2) * 2, d1 mod 4), domain: d0 in [0, 3], d1 in [0, 7]",
    "(d0, d1, d2) -> (d0 floordiv 8, d0 mod 8, d1 * 4 + d2), domain: d0 in [0, 31], d1 in [0, 2], d2 in [0, 3]",
    "(d0, d1) -> ((d0 - 1) floordiv 2, d1 - 4), domain: d0 in [1, 7], d1 in [4, 7], (d0 - 1) mod 2 in [0, 0]",
    "(d0, d1)[s0] -> (d0, d1 + s0), domain: d0 in [0, 1023], d1 in [0, 2], s0 in [0, 511]",
    "(d0)[s0, s1] -> (s1 mod 3, 2 * d0, s1, s0),\ndomain:\nd0 in [0, 9],\ns0 in [0, 69],\ns1 in [0, 19],\nd0 + s1 in [0, 20],\nd0 mod 8 in [0, 0],\ns0 mod 3 in [1, 1],\nis_simplified: true",
    "(th_x, th_y, th_z, bl_x, bl_y, bl_z)[vector_elem] -> (\n    (bl_x * 128 + th_x) floordiv 3000,\n    ((bl_x * 128 + th_x) floordiv 75) mod 40,\n    ((bl_x * 128 + th_x) mod 75) * 4 + vector_elem\n),\ndomain:\n    th_x in [0, 127], th_y in [0, 0], th_z in [0, 0],\n    bl_x in [0, 468], bl_y in [0, 0], bl_z in [0, 0],\n    vector_elem in [0, 3],\n    bl_x * 128 + th_x in [0, 59999],\n    is_simplified: true",
    "(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14]",
    "(d0, d1, d2) -> ((d0 * 100 + d1 * 10 + d2) floordiv 100, ((d0 * 100 + d1 * 10 + d2) mod 100) floordiv 10, d2 mod 10), domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]",
    "(d0, d1) -> (-(-11 * d0 - d1 + 109) floordiv 11 + 9), domain: d0 in [0, 9], d1 in [0, 10]",
];

fn parse(text: &str) -> ixmap::IndexingMap {
    let lit = ixmap::syntax::parse_map_lit(text).unwrap_or_else(|d| panic!("{}", d.render(text)));
    ixmap::session::build::build_map(&lit).unwrap_or_else(|d| panic!("{}", d.render(text)))
}

fn parse_print(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse_print");
    g.throughput(Throughput::Elements(SEED_MAPS.len() as u64));
    g.bench_function("seed_maps", |b| {
        b.iter(|| {
            let mut bytes = 0;
            for t in SEED_MAPS {
                bytes += parse(black_box(t)).to_string().len();
            }
            bytes
        })
    });
    g.finish();
}

fn compose(c: &mut Criterion) {
    // A: a 6-d output index to a linearized-then-split 6-d index (reshape-like).
    let a = parse(
        "(d0, d1, d2, d3, d4, d5) -> (d0, d1 * 4 + d2 floordiv 2, d2 mod 2, d3, d4 * 3 + d5, d5 mod 2), \
         domain: d0 in [0, 3], d1 in [0, 7], d2 in [0, 3], d3 in [0, 15], d4 in [0, 9], d5 in [0, 2]",
    );
    // B: a transpose of 6 dims with a range variable added to one of them.
    let b = parse(
        "(d0, d1, d2, d3, d4, d5)[s0] -> (d5, d3, d4 + s0, d1, d0, d2), \
         domain: d0 in [0, 3], d1 in [0, 33], d2 in [0, 1], d3 in [0, 15], d4 in [0, 31], d5 in [0, 1], s0 in [0, 7]",
    );
    c.bench_function("compose/6d", |bench| {
        bench.iter(|| ixmap::map::compose(black_box(&a), black_box(&b)))
    });
}

fn startup(c: &mut Criterion) {
    let exe = env!("CARGO_BIN_EXE_ixmap");
    let mut g = c.benchmark_group("startup");
    g.sample_size(20);
    g.bench_function("repl_first_prompt", |b| {
        b.iter(|| {
            let s = Command::new(exe)
                .env("IXMAP_HISTORY", "")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("ixmap starts");
            assert!(s.success());
        })
    });
    g.bench_function("c_empty", |b| {
        b.iter(|| {
            let s = Command::new(exe)
                .args(["-c", ""])
                .stdout(Stdio::null())
                .status()
                .expect("ixmap starts");
            assert!(s.success());
        })
    });
    g.finish();
}

fn exact(c: &mut Criterion) {
    use ixmap::Limits;
    let text = include_str!("data/exact-4m.ixm");
    let stmts: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    let map_after = |s: &str, cmd: &str| parse(s.strip_prefix(cmd).expect("command").trim());
    // `equal A, B`: split at the second map's opening parenthesis after ", (".
    let eq = stmts[0].strip_prefix("equal ").expect("equal");
    let cut = eq.find(", (d0, d1) ->").expect("two maps");
    let (a, b) = (parse(&eq[..cut]), parse(&eq[cut + 2..]));
    let inv = map_after(stmts[1], "inverse");
    let bij = map_after(stmts[2], "is_bijection");
    let not_bij = map_after(stmts[3], "is_bijection");
    let mut g = c.benchmark_group("exact");
    g.sample_size(10);
    g.bench_function("equal_4m", |bench| {
        bench.iter(|| assert!(ixmap::map::equal(&a, &b, &Limits::default()).expect("fits")))
    });
    g.bench_function("inverse_4m", |bench| {
        bench.iter(|| ixmap::map::inverse(&inv, &Limits::default()).expect("invertible"))
    });
    g.bench_function("is_bijection_4m", |bench| {
        bench.iter(|| assert!(ixmap::map::is_bijection(&bij, &Limits::default()).expect("fits")))
    });
    g.bench_function("is_bijection_4m_false", |bench| {
        bench.iter(|| {
            assert!(!ixmap::map::is_bijection(&not_bij, &Limits::default()).expect("fits"))
        })
    });
    g.finish();
}

criterion_group!(benches, parse_print, compose, startup, exact);
criterion_main!(benches);
