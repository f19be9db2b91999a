//! A *mapping*: how a fusion's elements are laid onto hardware, as one value the commands
//! share. `threads`, `coalescing`, `emit` and `bench` read it (`mapping=NAME`), `tune`
//! produces it (bound to `FUSION_best`), and `mapping ...` writes one by hand.
//!
//! Two halves, each used where it applies:
//! - the GPU launch: threads per block, elements per vector, vectors per thread, and
//!   whether a transpose goes through a shared-memory tile;
//! - the CPU loop nest: tile sizes of the output (the loops run over tiles, then over the
//!   elements of a tile, as `tile` and `tune` derive them), or none for the plain loop.

use super::launch::LaunchConfig;

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Mapping {
    /// The fusion it was chosen for (`tune` sets it); `None` for one written by hand.
    pub fusion: Option<String>,
    pub config: LaunchConfig,
    /// Tile transposes through shared memory (`None`: when the launch finds it pays).
    pub tiled: Option<bool>,
    /// Tile sizes of the output for the CPU loop nest (`None`: the untiled loop).
    pub tile: Option<Vec<i64>>,
    /// Where it came from, e.g. `tune t on cpu: 5.76x the default`.
    pub origin: Option<String>,
}

impl Mapping {
    /// `block=128 vector=4 unroll=1 tiled=auto tile=(32, 64)`: the arguments that give it.
    pub fn args(&self) -> String {
        let mut s = format!(
            "block={} vector={} unroll={}",
            self.config.block, self.config.vector, self.config.unroll
        );
        if self.config.max_blocks != super::launch::MAX_GRID {
            s += &format!(" max_blocks={}", self.config.max_blocks);
        }
        if let Some(t) = self.tiled {
            s += &format!(" tiled={t}");
        }
        if let Some(t) = &self.tile {
            s += &format!(" tile=({})", join(t));
        }
        s
    }

    /// The CPU half in words.
    pub fn cpu_text(&self) -> String {
        match &self.tile {
            Some(t) => format!("tiles of ({}), then the elements of a tile", join(t)),
            None => "the untiled loop over the output".into(),
        }
    }

    /// The GPU half in words.
    pub fn gpu_text(&self) -> String {
        let c = &self.config;
        let mut s = format!(
            "{} threads per block, {} element{} per vector, {} vector{} per thread",
            c.block,
            c.vector,
            if c.vector == 1 { "" } else { "s" },
            c.unroll,
            if c.unroll == 1 { "" } else { "s" }
        );
        if c.max_blocks != super::launch::MAX_GRID {
            s += &format!(
                ", at most {} block{} (more elements become more vectors per thread)",
                c.max_blocks,
                if c.max_blocks == 1 { "" } else { "s" }
            );
        }
        match self.tiled {
            Some(true) => s += ", transposes through a shared-memory tile",
            Some(false) => s += ", no shared-memory tile",
            None => {}
        }
        s
    }
}

pub fn join(xs: &[i64]) -> String {
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_name_every_field_that_is_set() {
        let m = Mapping {
            config: LaunchConfig {
                block: 256,
                vector: 4,
                unroll: 2,
                ..Default::default()
            },
            tiled: Some(false),
            tile: Some(vec![32, 64]),
            ..Default::default()
        };
        assert_eq!(
            m.args(),
            "block=256 vector=4 unroll=2 tiled=false tile=(32, 64)"
        );
        assert_eq!(Mapping::default().args(), "block=128 vector=1 unroll=1");
        assert_eq!(
            Mapping::default().cpu_text(),
            "the untiled loop over the output"
        );
        assert!(m.gpu_text().contains("4 elements per vector, 2 vectors"));
    }
}
