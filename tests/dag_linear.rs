//! Fusions whose instructions share subexpressions many levels deep (a chain of
//! `n_i = add(n_{i-1}, n_{i-1})`, JAX's unrolled threefry2x32) load, index, launch, emit and
//! verify in sizes linear in their instructions: each shared instruction is one function,
//! computed once per index, in the spec, the analyses, the emitted text and the kernels'
//! calls. Exponential expansion would show in every count below (2^40 nodes, or a 12-round
//! threefry's 28 s before), so the counts are asserted, not timings.

use ixmap::gpu::spec::{Body, KernelSpec};
use ixmap::hlo::workspace::Target;

fn has_cxx() -> bool {
    std::process::Command::new(ixmap::gpu::cuda_cpu::compiler())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `n_i = add(n_{i-1}, n_{i-1})`, `depth` deep, between two negates.
fn diamond(depth: usize) -> String {
    let mut s = String::from(
        "diamond (p0: f32[5]) -> f32[5] {\n  p0 = f32[5]{0} parameter(0)\n  n0 = f32[5]{0} negate(p0)\n",
    );
    for i in 1..depth {
        s += &format!("  n{i} = f32[5]{{0}} add(n{}, n{})\n", i - 1, i - 1);
    }
    s += &format!("  ROOT r = f32[5]{{0}} negate(n{})\n}}\n", depth - 1);
    s
}

/// `rounds` rounds of threefry2x32 on u32[64], as JAX unrolls them for GPUs: each round's
/// sum and rotated xor read the previous round's twice.
fn threefry(rounds: usize) -> String {
    const ROT: [(u32, u32); 8] = [
        (13, 19),
        (15, 17),
        (26, 6),
        (6, 26),
        (17, 15),
        (29, 3),
        (16, 16),
        (24, 8),
    ];
    let mut s = String::from(
        "threefry (p0: u32[64], p1: u32[64]) -> u32[64] {\n  p0 = u32[64]{0} parameter(0)\n  p1 = u32[64]{0} parameter(1)\n  a0 = u32[64]{0} add(p0, p1)\n",
    );
    for i in 0..rounds {
        let (r, l) = ROT[i % 8];
        let x = if i == 0 {
            "p1".to_string()
        } else {
            format!("x{}", i - 1)
        };
        s += &format!("  rs{i} = u32[] constant({r})\n  rb{i} = u32[64]{{0}} broadcast(rs{i}), dimensions={{}}\n");
        s += &format!("  ls{i} = u32[] constant({l})\n  lb{i} = u32[64]{{0}} broadcast(ls{i}), dimensions={{}}\n");
        s += &format!("  sl{i} = u32[64]{{0}} shift-left({x}, rb{i})\n");
        s += &format!("  sr{i} = u32[64]{{0}} shift-right-logical({x}, lb{i})\n");
        s += &format!(
            "  o{i} = u32[64]{{0}} or(sl{i}, sr{i})\n  x{i} = u32[64]{{0}} xor(a{i}, o{i})\n"
        );
        let a = if i + 1 == rounds {
            "ROOT out".to_string()
        } else {
            format!("a{}", i + 1)
        };
        s += &format!("  {a} = u32[64]{{0}} add(a{i}, x{i})\n");
    }
    s += "}\n";
    s
}

fn spec(src: &str, name: &str) -> (KernelSpec, usize) {
    let mut s = ixmap::Session::new();
    for o in s.execute(src) {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    let Some(Target::Computation(c)) = s.hlo.resolve(name) else {
        panic!("{name} is defined")
    };
    let n = c.instrs.len();
    let spec = ixmap::gpu::from_hlo::from_computation(&s.hlo.module, c).expect("adapts");
    (spec, n)
}

/// Every node of every function's body: the spec's size.
fn nodes(spec: &KernelSpec) -> usize {
    let mut n = 0;
    for f in &spec.functions {
        f.body.visit(&mut |_| n += 1);
    }
    n
}

/// Calls of the C functions `fN(` in emitted source.
fn calls(src: &str) -> usize {
    src.match_indices(" = f")
        .filter(|(i, _)| {
            let rest = &src[i + 4..];
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            digits > 0 && rest[digits..].starts_with('(')
        })
        .count()
}

/// Loads, launches, emits for CUDA and the CPU, and verifies both on the CPU; every size
/// linear in `instrs`.
fn linear_through_every_phase(spec: &KernelSpec, instrs: usize) {
    use ixmap::gpu::launch::{self, DeviceLimits};
    assert!(
        nodes(spec) <= 4 * instrs,
        "{} nodes for {instrs} instructions",
        nodes(spec)
    );
    let acc = spec.input_accesses().expect("accesses");
    assert_eq!(acc.len(), spec.inputs.len(), "{acc:?}");
    let (l, _) = launch::choose_default(spec, None, DeviceLimits::H100).expect("launch");
    let cuda = ixmap::gpu::emit::cuda::emit(spec, &l, false).expect("CUDA");
    let c = ixmap::gpu::emit::cpu::emit(spec, false).expect("C");
    for (what, src) in [("CUDA", &cuda.source), ("C", &c.source)] {
        let lines = src.lines().count();
        assert!(
            lines <= 10 * instrs + 60,
            "{what}: {lines} lines for {instrs} instructions"
        );
        // Each function called at most twice per caller, not once per path to it.
        assert!(
            calls(src) <= 2 * spec.functions.len(),
            "{what}: {} calls for {} functions:\n{src}",
            calls(src),
            spec.functions.len()
        );
    }
    if has_cxx() {
        ixmap::gpu::cuda_cpu::check_cuda_and_c(spec, &l, true)
            .unwrap_or_else(|(k, e)| panic!("{k}: {e}"));
    }
}

#[test]
fn a_diamond_forty_deep_is_one_function_per_level_and_verifies() {
    let (spec, instrs) = spec(&diamond(40), "diamond");
    // The root (with n39, read once), and each of n0..n38 (each read twice by its user).
    assert_eq!(spec.functions.len(), 40);
    linear_through_every_phase(&spec, instrs);
    // Each level calls the one below once, at the same index, though it reads it twice.
    let c = ixmap::gpu::emit::cpu::emit(&spec, false).expect("C");
    assert_eq!(calls(&c.source), 39, "{}", c.source);
}

#[test]
fn twenty_threefry_rounds_are_linear_and_verify() {
    let (spec, instrs) = spec(&threefry(20), "threefry");
    // The shared sums and xors of each round; the rotations are inlined in their xor.
    assert!(
        spec.functions.len() <= 2 * 20 + 1,
        "{}",
        spec.functions.len()
    );
    assert!(ixmap::gpu::emit::deeply_shared(&spec));
    linear_through_every_phase(&spec, instrs);
}

#[test]
fn an_ordinary_kernel_calls_its_functions() {
    // Three rounds reach each function by few paths: calls stay calls of `fN`.
    let (spec, instrs) = spec(&threefry(3), "threefry");
    assert!(!ixmap::gpu::emit::deeply_shared(&spec));
    linear_through_every_phase(&spec, instrs);
}

#[test]
fn a_body_walk_counts_each_shared_node_once() {
    let (spec, _) = spec(&diamond(40), "diamond");
    let walked = |b: &Body| {
        let mut n = 0;
        b.visit(&mut |_| n += 1);
        n
    };
    // add(call n_{i-1}, call n_{i-1}): three nodes a level (four in the root, under its
    // negate), not 2^i.
    assert!(spec.functions.iter().all(|f| walked(&f.body) <= 4));
}

/// `n_i = add(n_{i-1}, n_{i-1})` 40 deep on f32[8,64], then a row normalization
/// (`n_40 / sum(n_40)` per row): the row kernels and the coalescing analysis of the rows
/// keep each shared function's value once per index instead of writing it in place along
/// every path (2^40 copies; `coalescing` of such a fusion took 100 s and 14 GB).
#[test]
fn a_diamond_under_a_row_normalization_stays_linear() {
    let depth = 40;
    let mut src = String::from(
        "addf {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nrows {\n  n0 = f32[8,64] parameter(0)\n",
    );
    for i in 1..=depth {
        src += &format!("  n{i} = f32[8,64] add(n{}, n{})\n", i - 1, i - 1);
    }
    src += &format!(
        "  z = f32[] constant(0)\n  s = f32[8] reduce(n{depth}, z), dimensions={{1}}, to_apply=addf\n  sb = f32[8,64] broadcast(s), dimensions={{0}}\n  ROOT o = f32[8,64] divide(n{depth}, sb)\n}}\n"
    );
    let (spec, instrs) = spec(&src, "rows");
    assert!(spec.inline_nodes_exceed(ixmap::gpu::spec::INLINE_NODES));
    use ixmap::gpu::launch::{self, DeviceLimits};
    let (l, _) = launch::choose_default(&spec, None, DeviceLimits::H100).expect("launch");
    let report = ixmap::gpu::coalescing::analyse(&spec, &l).expect("coalescing");
    // the one parameter, read by the sum and by the elements: a few accesses, not 2^40
    let accesses: usize = report.operands.len();
    assert!(accesses <= 4, "{accesses} accesses");
    let cuda = ixmap::gpu::emit::cuda::emit(&spec, &l, false).expect("CUDA");
    let c = ixmap::gpu::emit::cpu::emit(&spec, false).expect("C");
    for (what, src) in [("CUDA", &cuda.source), ("C", &c.source)] {
        let lines = src.lines().count();
        assert!(
            lines <= 20 * instrs + 100,
            "{what}: {lines} lines for {instrs} instructions"
        );
    }
    if has_cxx() {
        ixmap::gpu::cuda_cpu::check_cuda_and_c(&spec, &l, true)
            .unwrap_or_else(|(k, e)| panic!("{k}: {e}"));
    }
}
