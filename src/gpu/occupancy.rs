//! Occupancy: how many blocks of a kernel one SM holds at once, from the kernel's threads
//! a block, registers a thread (ptxas) and shared memory a block.
//!
//! The rules are those of NVIDIA's CUDA Occupancy Calculator and of
//! `cudaOccupancyMaxActiveBlocksPerMultiprocessor`, with the allocation granularities the
//! calculator lists for compute capability 9.0 (the CUDA C++ Programming Guide's
//! "Compute Capabilities" table gives the per-SM limits):
//!
//! - **warps**: at most 64 resident warps an SM, a block taking `ceil(threads / 32)`;
//! - **blocks**: at most 32 resident blocks an SM;
//! - **registers**: a warp's registers are allocated in units of 256 (a thread's count
//!   rounded up to a multiple of 8); of the SM's 65536, the warps they allow are rounded
//!   down to a multiple of 4 (the warp allocation granularity), then divided among blocks;
//! - **shared memory**: each block also takes 1 KiB reserved by the system, the total
//!   rounded up to 128 bytes; the SM has at most 228 KiB (the driver picks the carveout,
//!   and picks one large enough when nothing else asks otherwise).
//!
//! The test `occupancy_matches_nsight_compute` checks these rules against Nsight Compute's
//! own limits (`launch__occupancy_limit_*`) for every XLA kernel in the H100 dump's CSV.

/// One SM's limits and allocation granularities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmLimits {
    /// `sm_90`.
    pub arch: &'static str,
    pub max_threads_per_block: i64,
    pub max_warps_per_sm: i64,
    pub max_blocks_per_sm: i64,
    pub registers_per_sm: i64,
    pub max_registers_per_block: i64,
    pub max_registers_per_thread: i64,
    /// Registers are allocated to a warp in units of this many.
    pub register_unit: i64,
    /// The warps the registers allow are a multiple of this.
    pub warp_granularity: i64,
    /// The most shared memory an SM gives its blocks (the largest carveout).
    pub shared_per_sm: i64,
    /// The most one block may ask for (opt-in).
    pub max_shared_per_block: i64,
    /// Shared memory the system reserves for each resident block.
    pub reserved_shared_per_block: i64,
    /// Shared memory is allocated in units of this many bytes.
    pub shared_unit: i64,
}

impl SmLimits {
    /// Compute capability 9.0 (H100, H200).
    pub const SM_90: SmLimits = SmLimits {
        arch: "sm_90",
        max_threads_per_block: 1024,
        max_warps_per_sm: 64,
        max_blocks_per_sm: 32,
        registers_per_sm: 65536,
        max_registers_per_block: 65536,
        max_registers_per_thread: 255,
        register_unit: 256,
        warp_granularity: 4,
        shared_per_sm: 233_472,
        max_shared_per_block: 232_448,
        reserved_shared_per_block: 1024,
        shared_unit: 128,
    };
}

/// What bounds the resident blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limiter {
    Warps,
    Blocks,
    Registers,
    SharedMemory,
}

impl Limiter {
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Warps => "warps",
            Limiter::Blocks => "blocks",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
        }
    }
}

/// A kernel's occupancy on one SM: the resident blocks under each limit, and the least.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occupancy {
    pub threads_per_block: i64,
    pub warps_per_block: i64,
    pub registers: i64,
    pub shared_bytes: i64,
    pub by_warps: i64,
    pub by_blocks: i64,
    pub by_registers: i64,
    pub by_shared: i64,
    /// Resident blocks: the least of the four.
    pub blocks: i64,
    pub limits: SmLimits,
}

/// The blocks an SM holds of a kernel of `threads` threads a block, `registers` registers
/// a thread and `shared_bytes` bytes of shared memory a block (static and dynamic); an
/// error saying why when no block of it can be launched at all.
pub fn occupancy(
    threads: i64,
    registers: i64,
    shared_bytes: i64,
    limits: SmLimits,
) -> Result<Occupancy, String> {
    let l = limits;
    if threads < 1 || threads > l.max_threads_per_block {
        return Err(format!(
            "{threads} threads a block: {} takes 1 to {}",
            l.arch, l.max_threads_per_block
        ));
    }
    if registers < 0 || registers > l.max_registers_per_thread {
        return Err(format!(
            "{registers} registers a thread: {} allows at most {}",
            l.arch, l.max_registers_per_thread
        ));
    }
    if shared_bytes < 0 || shared_bytes > l.max_shared_per_block {
        return Err(format!(
            "{shared_bytes} bytes of shared memory a block: {} allows at most {}",
            l.arch, l.max_shared_per_block
        ));
    }
    let warps = ceil_div(threads, 32);
    let by_warps = l.max_warps_per_sm / warps;
    let by_registers = blocks_by_registers(warps, registers, l);
    if by_registers == 0 {
        return Err(format!(
            "{registers} registers a thread on {threads} threads: more than the {} a block may have",
            l.max_registers_per_block
        ));
    }
    let by_shared = l.shared_per_sm / allocated_shared(shared_bytes, l);
    let blocks = by_warps
        .min(l.max_blocks_per_sm)
        .min(by_registers)
        .min(by_shared);
    Ok(Occupancy {
        threads_per_block: threads,
        warps_per_block: warps,
        registers,
        shared_bytes,
        by_warps,
        by_blocks: l.max_blocks_per_sm,
        by_registers,
        by_shared,
        blocks,
        limits: l,
    })
}

/// The shared memory a block of `shared_bytes` (static and dynamic) takes of an SM: with
/// the system's reserve, in whole allocation units.
pub fn allocated_shared(shared_bytes: i64, l: SmLimits) -> i64 {
    round_up(
        shared_bytes.saturating_add(l.reserved_shared_per_block),
        l.shared_unit,
    )
}

/// The registers a thread is allocated for `registers` used (a warp's allocation, in units
/// of [`SmLimits::register_unit`], shared among its 32 threads).
pub fn allocated_registers(registers: i64, l: SmLimits) -> i64 {
    round_up(registers * 32, l.register_unit) / 32
}

/// Blocks of `warps` warps the SM's registers hold at `registers` a thread (0: not one).
fn blocks_by_registers(warps: i64, registers: i64, l: SmLimits) -> i64 {
    if registers == 0 {
        return l.max_blocks_per_sm;
    }
    let per_warp = allocated_registers(registers, l) * 32;
    if per_warp * warps > l.max_registers_per_block {
        return 0;
    }
    let resident_warps = (l.registers_per_sm / per_warp) / l.warp_granularity * l.warp_granularity;
    resident_warps / warps
}

fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

fn round_up(a: i64, unit: i64) -> i64 {
    ceil_div(a, unit) * unit
}

impl Occupancy {
    /// Resident warps an SM.
    pub fn warps(&self) -> i64 {
        self.blocks * self.warps_per_block
    }

    /// Resident warps as a share of the SM's most.
    pub fn percent(&self) -> f64 {
        100.0 * self.warps() as f64 / self.limits.max_warps_per_sm as f64
    }

    /// What bounds it: the first limit (warps, blocks, registers, shared memory) that
    /// gives exactly [`Occupancy::blocks`].
    pub fn limiter(&self) -> Limiter {
        if self.by_registers == self.blocks && self.by_registers < self.by_warps.min(self.by_blocks)
        {
            Limiter::Registers
        } else if self.by_shared == self.blocks
            && self.by_shared < self.by_warps.min(self.by_blocks)
        {
            Limiter::SharedMemory
        } else if self.by_warps <= self.by_blocks {
            Limiter::Warps
        } else {
            Limiter::Blocks
        }
    }

    /// The most registers a thread that would let one more block reside, when registers
    /// are what bounds it and the other limits leave room for that block.
    pub fn registers_for_one_more_block(&self) -> Option<i64> {
        if self.limiter() != Limiter::Registers {
            return None;
        }
        let want = self.blocks + 1;
        if want > self.by_warps.min(self.by_blocks).min(self.by_shared) {
            return None;
        }
        (1..self.registers)
            .rev()
            .find(|&r| blocks_by_registers(self.warps_per_block, r, self.limits) >= want)
    }

    /// Waves of a grid of `grid` blocks on `sms` SMs (the grid over what the device holds
    /// at once).
    pub fn waves(&self, grid: i64, sms: i64) -> f64 {
        grid as f64 / (self.blocks.max(1) * sms.max(1)) as f64
    }

    /// `the grid's 1024 blocks: 1.94 waves`.
    pub fn waves_summary(&self, grid: i64, sms: i64) -> String {
        let w = self.waves(grid, sms);
        let w = if w >= 0.01 {
            format!("{w:.2}")
        } else {
            "under 0.01".to_string()
        };
        format!(
            "the grid's {grid} block{}: {w} waves",
            if grid == 1 { "" } else { "s" }
        )
    }

    /// The blocks an SM holds of a grid of `grid` blocks spread over `sms` SMs: its
    /// occupancy's, or fewer when the grid does not fill it (a grid of 1024 blocks on 132
    /// SMs gives each at most 8, however many it could hold).
    pub fn resident_blocks(&self, grid: i64, sms: i64) -> i64 {
        let per_sm = if sms > 0 {
            (grid.max(0) + sms - 1) / sms
        } else {
            grid
        };
        self.blocks.min(per_sm)
    }

    /// Warps an SM holds at once of a grid of `grid` blocks ([`Occupancy::resident_blocks`]).
    pub fn resident_warps(&self, grid: i64, sms: i64) -> i64 {
        self.resident_blocks(grid, sms) * self.warps_per_block
    }

    /// `4 blocks of 256 threads an SM, 32 of 64 warps (50 %), bound by registers (48 or
    /// fewer: 5 blocks)`.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} block{} of {} thread{} an SM, {} of {} warps ({}), bound by {}",
            self.blocks,
            if self.blocks == 1 { "" } else { "s" },
            self.threads_per_block,
            if self.threads_per_block == 1 { "" } else { "s" },
            self.warps(),
            self.limits.max_warps_per_sm,
            percent(self.percent()),
            self.limiter().name()
        );
        if let Some(r) = self.registers_for_one_more_block() {
            s += &format!(" ({r} registers or fewer: {} blocks)", self.blocks + 1);
        }
        s
    }
}

/// `50 %`, `62.5 %`.
pub fn percent(p: f64) -> String {
    if (p - p.round()).abs() < 0.05 {
        format!("{:.0} %", p)
    } else {
        format!("{:.1} %", p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: SmLimits = SmLimits::SM_90;

    #[test]
    fn a_row_kernel_of_256_threads_at_51_registers_holds_4_blocks() {
        let o = occupancy(256, 51, 32, L).unwrap();
        assert_eq!((o.by_registers, o.by_warps, o.blocks), (4, 8, 4));
        assert_eq!(o.limiter(), Limiter::Registers);
        assert_eq!(o.registers_for_one_more_block(), Some(48));
        assert_eq!(o.percent(), 50.0);
        assert_eq!(
            o.summary(),
            "4 blocks of 256 threads an SM, 32 of 64 warps (50 %), bound by registers (48 registers or fewer: 5 blocks)"
        );
        // At 48 registers: 5 blocks, 40 warps.
        let o = occupancy(256, 48, 32, L).unwrap();
        assert_eq!((o.blocks, o.warps()), (5, 40));
        assert_eq!(percent(o.percent()), "62.5 %");
    }

    #[test]
    fn the_warp_granularity_rounds_the_register_bound_down() {
        // 40 registers on 64 threads: 65536 / 1280 = 51 warps, 48 after rounding to 4: 24
        // blocks of 2 warps (not 25).
        assert_eq!(occupancy(64, 40, 0, L).unwrap().by_registers, 24);
    }

    #[test]
    fn small_blocks_are_bound_by_the_block_count() {
        let o = occupancy(32, 16, 0, L).unwrap();
        assert_eq!((o.blocks, o.limiter()), (32, Limiter::Blocks));
        assert_eq!(o.registers_for_one_more_block(), None);
        let o = occupancy(1024, 32, 0, L).unwrap();
        assert_eq!((o.blocks, o.limiter()), (2, Limiter::Warps));
    }

    #[test]
    fn shared_memory_counts_the_reserved_kilobyte_and_rounds_to_128_bytes() {
        // 48 KiB + 1 KiB reserved: 4 blocks of 228 KiB.
        let o = occupancy(128, 32, 48 * 1024, L).unwrap();
        assert_eq!((o.by_shared, o.limiter()), (4, Limiter::SharedMemory));
        // 1 byte takes 1024 + 128.
        assert_eq!(occupancy(128, 32, 1, L).unwrap().by_shared, 233_472 / 1152);
    }

    #[test]
    fn impossible_launches_are_errors() {
        assert!(occupancy(2048, 32, 0, L).is_err());
        assert!(occupancy(1024, 72, 0, L).is_err());
        assert!(occupancy(128, 256, 0, L).is_err());
        assert!(occupancy(128, 32, 300_000, L).is_err());
        assert!(occupancy(0, 32, 0, L).is_err());
    }

    #[test]
    fn waves_divide_the_grid_by_what_the_device_holds() {
        let o = occupancy(128, 32, 0, L).unwrap();
        assert_eq!(o.blocks, 16);
        assert!((o.waves(4096, 132) - 1.939).abs() < 1e-3);
        assert_eq!(
            o.waves_summary(4096, 132),
            "the grid's 4096 blocks: 1.94 waves"
        );
        assert_eq!(
            o.waves_summary(1, 132),
            "the grid's 1 block: under 0.01 waves"
        );
        // A grid that does not fill the device: 1024 blocks on 132 SMs, 8 an SM at most.
        assert_eq!(o.resident_blocks(1024, 132), 8);
        assert_eq!(o.resident_warps(1024, 132), 32);
        assert_eq!(o.resident_blocks(1 << 20, 132), 16);
    }

    #[test]
    fn allocation_rounds_registers_to_eight_and_shared_memory_to_128_bytes() {
        assert_eq!(allocated_registers(30, L), 32);
        assert_eq!(allocated_registers(18, L), 24);
        assert_eq!(allocated_registers(48, L), 48);
        assert_eq!(allocated_shared(0, L), 1024);
        assert_eq!(allocated_shared(64, L), 1152);
        assert_eq!(allocated_shared(4224, L), 5248);
    }
}
