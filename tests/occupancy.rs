//! The occupancy rules (`gpu::occupancy`) against Nsight Compute's own: for every kernel
//! XLA launched in the H100 dump's CSV (`xla-kernel-times-ncu.csv`: Triton, loop, input,
//! transpose and cuDNN kernels, 1 to 1024 threads a block, 16 to 64 registers, 0 to 4 KiB
//! of shared memory), ncu's per-limit block counts, allocations and theoretical warps
//! an SM are what the rules compute from the kernel's threads, registers and shared memory.

use ixmap::dump::csv_row;
use ixmap::gpu::occupancy::{allocated_registers, allocated_shared, occupancy, SmLimits};

const CSV: &str = "tests/data/xla-dumps/h100-jax-0.11.2/xla-kernel-times-ncu.csv";

fn num(s: &str) -> f64 {
    s.replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

#[test]
fn occupancy_matches_nsight_compute() {
    let text = std::fs::read_to_string(CSV).unwrap();
    let mut lines = text.lines();
    let header = csv_row(lines.next().unwrap());
    let _units = lines.next();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    };
    let (name, threads, regs, regs_alloc) = (
        col("Kernel Name"),
        col("launch__block_size"),
        col("launch__registers_per_thread"),
        col("launch__registers_per_thread_allocated"),
    );
    let (st, dy, sh_alloc, sh_config) = (
        col("launch__shared_mem_per_block_static"),
        col("launch__shared_mem_per_block_dynamic"),
        col("launch__shared_mem_per_block_allocated"),
        col("launch__shared_mem_config_size"),
    );
    let (lim_regs, lim_warps, lim_blocks, lim_shared, warps) = (
        col("launch__occupancy_limit_registers"),
        col("launch__occupancy_limit_warps"),
        col("launch__occupancy_limit_blocks"),
        col("launch__occupancy_limit_shared_mem"),
        col("sm__maximum_warps_avg_per_active_cycle"),
    );
    let l = SmLimits::SM_90;
    let mut checked = 0;
    let mut distinct = std::collections::BTreeSet::new();
    for line in lines {
        let r = csv_row(line);
        let at = |c: usize| num(&r[c]) as i64;
        let (t, g, s) = (at(threads), at(regs), at(st) + at(dy));
        let o = occupancy(t, g, s, l).unwrap();
        let what = format!("{} ({t} threads, {g} registers, {s} bytes shared)", r[name]);
        assert_eq!(o.by_registers, at(lim_regs), "registers limit of {what}");
        assert_eq!(o.by_warps, at(lim_warps), "warps limit of {what}");
        assert_eq!(o.by_blocks, at(lim_blocks), "blocks limit of {what}");
        assert_eq!(
            allocated_shared(s, l),
            at(sh_alloc),
            "shared allocation of {what}"
        );
        // ncu's shared-memory limit is against the carveout the driver picked for the
        // launch; the rules take the largest, which the driver picks when it matters.
        assert_eq!(
            at(sh_config) / allocated_shared(s, l),
            at(lim_shared),
            "shared limit of {what}"
        );
        assert!(o.by_shared >= at(lim_shared));
        // A warp's registers are allocated as a whole: ncu divides them among the block's
        // threads when the block is less than a warp.
        let alloc = allocated_registers(g, l) * 32 / t.min(32);
        assert_eq!(alloc, at(regs_alloc), "register allocation of {what}");
        // Theoretical occupancy: the least of the limits, in warps.
        let least = at(lim_regs)
            .min(at(lim_warps))
            .min(at(lim_blocks))
            .min(at(lim_shared));
        assert_eq!(o.blocks, least, "blocks an SM of {what}");
        assert_eq!(o.warps() as f64, num(&r[warps]), "warps an SM of {what}");
        checked += 1;
        distinct.insert((t, g, s));
    }
    assert!(checked >= 100, "only {checked} launches in {CSV}");
    assert!(
        distinct.len() >= 20,
        "only {} distinct kernels",
        distinct.len()
    );
}
