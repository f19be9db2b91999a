//! Layouts as launches (issue 31): a CuTe thread/value layout, a Triton blocked layout and
//! a column-per-lane layout, each made the launch of fusions of several kinds
//! (elementwise through a reshape, transpose, broadcast, a reduction at the root), with
//! tiles that divide the output and tiles masked at its edges. Every kernel is checked
//! element by element against the reference on the CPU: the CUDA text run on the CPU
//! (`check`), and the host kernel that walks the layout's launch (`bench`'s); the CUDA text
//! is compiled by NVRTC when it is found (under `CI=true` it must be).

#[path = "common/gpu_specs.rs"]
#[allow(dead_code)] // the shared specs; this test takes a few kinds
mod specs;

use ixmap::gpu::bench::{self, Device, Options};
use ixmap::gpu::cuda_cpu;
use ixmap::gpu::emit::cpu;
use ixmap::gpu::mapping::{layout_launch, LayoutLaunch};
use ixmap::gpu::nvcc::Nvrtc;
use ixmap::gpu::spec::KernelSpec;
use ixmap::layout::launch::block_layout;
use ixmap::layout::{cute, ttgir, LayoutValue, Notation};
use specs::*;

fn blocked(attr: &str, shape: &[i64]) -> LayoutValue {
    let ll = ttgir::parse(attr, shape).expect("attribute parses");
    LayoutValue {
        notation: Notation::LinearLayout,
        text: ll.to_text(),
        map: ll.to_map(),
        notes: vec![],
        picture: None,
        shape: Some(ll.outs.iter().map(|(_, s)| *s).collect()),
    }
}

/// A CuTe layout read as (thread, value) → offset (a flat tile), or laid out column-major
/// over `tile`.
fn cute_tv(text: &str, tile: Option<(i64, i64)>) -> LayoutValue {
    let c = cute::parse(text).expect("CuTe text parses");
    LayoutValue {
        notation: Notation::Cute,
        text: c.to_string(),
        map: c.mode_map(tile),
        notes: vec![],
        picture: None,
        shape: Some(match tile {
            Some((m, n)) => vec![m, n],
            None => vec![c.layout.cosize().expect("small")],
        }),
    }
}

fn layouts() -> Vec<(&'static str, LayoutValue)> {
    vec![
        // 64 threads, 4 consecutive values each: a flat tile of 256 (masked unless it divides).
        ("flat", cute_tv("(64,4):(4,1)", None)),
        // Values a block apart: thread t, value v at t + 32 v.
        ("strided", cute_tv("(32,3):(1,32)", None)),
        // 2 warps, lanes 4 x 8, each lane 4 consecutive columns: an 8 x 32 tile.
        (
            "blocked",
            blocked(
                "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [2, 1], order = [1, 0]}>",
                &[8, 32],
            ),
        ),
        // Lanes down a column: a 32 x 2 tile, one element per thread.
        (
            "column",
            blocked(
                "#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [1, 2], order = [0, 1]}>",
                &[32, 2],
            ),
        ),
        // CuTe over a 4 x 8 tile, column-major offsets, two values a thread.
        ("cute tile", cute_tv("(16,2):(2,1)", Some((4, 8)))),
    ]
}

fn kinds() -> Vec<KernelSpec> {
    vec![
        reshape_add(3, 5, 40),
        transpose(33, 70),
        broadcast_mul(9, 13),
        reduce(7, 45, true),
        reduce(45, 7, false),
    ]
}

fn launches(spec: &KernelSpec) -> Vec<(String, LayoutLaunch)> {
    let mut out = Vec::new();
    for (name, l) in layouts() {
        let block = block_layout(&l).unwrap_or_else(|e| panic!("{name}: {}", e.message));
        let tile_rank = block.tile.len();
        match layout_launch(spec, name, block) {
            Ok(ll) => out.push((format!("{} with {name}", spec.name), ll)),
            Err(e) => {
                // Only a 2-D tile on an output of another rank is refused.
                assert!(
                    tile_rank == 2 && spec.output.rank() != 2,
                    "{} with {name}: {e}",
                    spec.name
                );
                assert!(e.to_string().contains("gives 2 coordinates"), "{e}");
            }
        }
    }
    out
}

#[test]
fn layout_launches_compute_every_element_once_on_the_cpu() {
    let mut n = 0;
    for spec in kinds() {
        for (what, ll) in launches(&spec) {
            for naive in [false, true] {
                cuda_cpu::check(&spec, &ll.launch, naive)
                    .unwrap_or_else(|e| panic!("{what} (CUDA on the CPU, naive {naive}): {e}"));
            }
            let opts = Options {
                device: Device::Cpu,
                reps: 1,
                warmups: 0,
                progress: false,
                ..Default::default()
            };
            let kernels = vec![
                (
                    "layout".to_string(),
                    ll.emit_cpu(&spec, false).expect("emits"),
                ),
                (
                    "naive".to_string(),
                    ll.emit_cpu(&spec, true).expect("emits"),
                ),
                (
                    "untiled".to_string(),
                    cpu::emit(&spec, false).expect("emits"),
                ),
            ];
            let o = bench::cpu::run_kernels(&spec, &opts, kernels)
                .unwrap_or_else(|e| panic!("{what} (host kernel): {e}"));
            assert!(o.variants.iter().all(|v| v.verified), "{what}");
            n += 1;
        }
    }
    // Every kind with every layout of its rank: 5 kinds, 2 flat layouts, and the three
    // 2-D layouts on the 2-D outputs (all but the reductions to one dimension).
    assert!(n >= 16, "{n} launches checked");
}

#[test]
fn a_masked_tile_is_said_and_its_edge_switched_off() {
    // The transpose writes 70 x 33: 8 x 32 tiles, 9 x 2 of them, the last row and column cut.
    let spec = transpose(33, 70);
    let (_, ll) = launches(&spec)
        .into_iter()
        .find(|(w, _)| w.ends_with("with blocked"))
        .expect("the blocked layout launches the transpose");
    assert!(ll.masked);
    assert_eq!(ll.tiles, vec![9, 2]);
    assert!(
        ll.describe().contains("(masked at the edges)"),
        "{}",
        ll.describe()
    );
    assert!(!ll.launch.write_map.constraints.is_empty());
}

/// The host kernels compile without a warning, as the sweep holds every session kernel to.
#[test]
fn layout_host_kernels_compile_with_wall_werror() {
    let dir = std::env::temp_dir().join(format!("ixmap-layout-cc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let mut files = Vec::new();
    for spec in kinds() {
        for (what, ll) in launches(&spec) {
            for naive in [false, true] {
                let e = ll.emit_cpu(&spec, naive).expect("emits");
                let p = dir.join(format!("k{}.c", files.len()));
                std::fs::write(&p, format!("// {what}\n{}", e.source)).expect("write");
                files.push(p);
            }
        }
    }
    let out = std::process::Command::new(bench::cpu::compiler())
        .current_dir(&dir)
        .args(["-std=c11", "-O1", "-fopenmp", "-Wall", "-Werror", "-c"])
        .args(files.iter())
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let Ok(out) = out else {
        eprintln!("SKIPPED: no C compiler");
        return;
    };
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn layout_kernels_compile_with_nvrtc() {
    let nvrtc = match Nvrtc::load() {
        Ok(n) => n,
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("CI=true and {e}"),
        Err(e) => {
            eprintln!("SKIPPED: {e}");
            return;
        }
    };
    for spec in kinds() {
        for (what, ll) in launches(&spec) {
            for naive in [false, true] {
                let e = ixmap::gpu::emit::cuda::emit(&spec, &ll.launch, naive)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let src = ll.source_header() + &e.source;
                let c = nvrtc
                    .compile(&src, "layout.cu", &["--gpu-architecture=compute_90"])
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(
                    c.ptx.is_some(),
                    "{what}: NVRTC rejected it:\n{}\n{src}",
                    c.log
                );
                assert!(c.log.trim().is_empty(), "{what}: warnings:\n{}", c.log);
            }
        }
    }
}
