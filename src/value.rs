//! The typed results of statements. Every front end renders the same `Value`.
//!
//! This module sits below both the interpreter (`session/`, which produces values) and the
//! renderers (`render/`, which read them), so neither imports the other.

use crate::map::IndexingMap;
use crate::syntax::{Diagnostic, Span};

pub mod coalescing;
pub mod tile;

/// The result of one statement.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// 1-based statement number within the executed source.
    pub stmt: usize,
    pub span: Span,
    /// The name bound by `NAME = ...`, if any.
    pub bound: Option<String>,
    pub result: Result<Value, Diagnostic>,
    /// Notes printed after the value, one line each (`note: ...`): a name that now means
    /// something else.
    pub notes: Vec<String>,
}

impl Outcome {
    /// Whether the statement failed: an error, a `load` whose file stopped at one, or a `dump`
    /// that found a failure (printed in full first).
    pub fn failed(&self) -> bool {
        match &self.result {
            Err(_) => true,
            Ok(Value::Loaded(l)) => l.error().is_some(),
            Ok(Value::Dump(d)) => d.failed(),
            Ok(_) => false,
        }
    }
}

#[derive(Clone, Debug)]
pub enum Value {
    /// Nothing to print (a definition such as an HLO instruction).
    None,
    Map(IndexingMap),
    Maps(Vec<IndexingMap>),
    Indexing(Indexing),
    Bool(bool),
    Table(Table),
    Kernel(Kernel),
    Bench(Bench),
    /// A chosen mapping of a fusion onto hardware (`mapping`, or `tune`'s best).
    Mapping(crate::gpu::mapping::Mapping),
    Svg(Svg),
    Text(String),
    /// A map followed by the rewrite steps that produced it (`simplify M explain`).
    Explained {
        map: IndexingMap,
        steps: Vec<crate::simplify::Step>,
        limit_hit: Option<String>,
    },
    /// Result tuples of `eval`.
    Points(Vec<Vec<i64>>),
    /// An access-pattern picture (`plot`).
    Plot(Plot),
    /// What an HLO statement defined (an instruction, a computation, a module name).
    Defined(Defined),
    /// `help`, `help GROUP`, `help COMMAND`, `help TOPIC`.
    Help(Help),
    /// `load FILE`: the outcomes of the file's statements, in order.
    Loaded(Loaded),
    /// `coalescing`: every operand's sectors per warp load, rendered as a table.
    Coalescing(Coalescing),
    /// `reduction_groups`: the reductions of a computation that XLA launches together.
    Groups(Groups),
    /// `fuse`: the consumer's map through the producer, and how it was composed.
    Fused(Fused),
    /// `show M as mlir` / `as xla`: a map in another tool's syntax.
    Shown(Shown),
    /// A file a command wrote (`plot ... to FILE.svg`).
    Written(Written),
    /// `indexing` of an instruction with no operands (a parameter, a constant, an iota).
    NoOperands(NoOperands),
    /// `coalescing FUSION tile=(..)`: each operand's 64-byte transactions per tile.
    TiledCoalescing(crate::gpu::tile_coalescing::TiledReport),
    /// `dump`: every fusion of an XLA dump, indexed, launched, emitted and verified.
    Dump(crate::dump::DumpReport),
    /// A CuTe or Triton layout (`layout`, the layout algebra): its notation and its map.
    Layout(Box<crate::layout::LayoutValue>),
    /// An HLO name shown (`fused`, `fused.p0`, `p0?`): its text as it was defined.
    Hlo(HloShown),
}

impl Value {
    /// The `kind` field of `--json` output.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::None => "none",
            Value::Map(_) => "map",
            Value::Maps(_) => "maps",
            Value::Indexing(_) => "indexing",
            Value::Bool(_) => "bool",
            Value::Table(_) => "table",
            Value::Kernel(_) => "kernel",
            Value::Bench(_) => "bench",
            Value::Mapping(_) => "mapping",
            Value::Svg(_) => "svg",
            Value::Text(_) => "text",
            Value::Explained { .. } => "map",
            Value::Points(_) => "points",
            Value::Plot(_) => "plot",
            Value::Defined(_) => "defined",
            Value::Help(_) => "help",
            Value::Loaded(_) => "loaded",
            // A table with a role per row (SPEC §1 named it a table first).
            Value::Coalescing(_) => "table",
            Value::Groups(_) => "groups",
            Value::Fused(_) => "fused",
            Value::Shown(_) => "shown",
            Value::Written(_) => "written",
            Value::NoOperands(_) => "no_operands",
            Value::TiledCoalescing(_) => "table",
            Value::Dump(_) => "dump",
            Value::Layout(_) => "layout",
            Value::Hlo(_) => "hlo",
        }
    }
}

/// An HLO computation or instruction, as the session shows a name of it.
#[derive(Clone, Debug)]
pub struct HloShown {
    /// `computation` or `instruction`.
    pub kind: &'static str,
    pub name: String,
    /// The computation an instruction belongs to (None for a loose line or a computation).
    pub computation: Option<String>,
    /// The shape of the instruction (of a computation's root).
    pub shape: String,
    /// The text as it was written: a computation's block, an instruction's line.
    pub text: String,
}

/// Output-to-input (or input-to-output) maps, one section per operand.
#[derive(Clone, Debug)]
pub struct Indexing {
    /// What the maps start from, e.g. `output` or `operand 0`.
    pub title: String,
    pub operands: Vec<OperandMaps>,
    /// Lines printed after the maps: which rule folded a runtime variable, where it was not
    /// the plain one (a constant clamped by the op that reads it).
    pub notes: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct OperandMaps {
    /// Section heading, e.g. `operand 0` or `output 1`.
    pub label: String,
    pub index: usize,
    /// Name of the instruction that is the operand, if known (`p0`).
    pub name: Option<String>,
    /// Distinct maps; empty with `undefined` means UNDEFINED.
    pub maps: Vec<IndexingMap>,
}

impl From<crate::gpu::launch::Section> for OperandMaps {
    fn from(s: crate::gpu::launch::Section) -> Self {
        OperandMaps {
            label: s.label,
            index: s.index,
            name: s.name,
            maps: s.maps,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Table {
    pub title: Option<String>,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Lines printed after the table (notes, verdicts).
    pub notes: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    /// `cuda` or `cpu`.
    pub target: String,
    pub source: String,
}

/// A measured `bench`: the library's report, which the renderers lay out.
pub use crate::gpu::bench::measure::Report as Bench;

#[derive(Clone, Debug)]
pub struct Svg {
    pub title: String,
    pub svg: String,
}

/// An access-pattern picture (`plot`): which elements of the map's target (the input
/// tensor) each point of its dimensions (an output element, or a thread) reads. Rendered as
/// SVG for the notebook and files, as a character grid for the REPL and transcripts.
#[derive(Clone, Debug)]
pub struct Plot {
    /// The map drawn, printed.
    pub map: String,
    /// What a colour stands for, e.g. `output element (d0, d1)` or `th_x`.
    pub color_by: String,
    /// The dimension points (threads / output elements), coloured by group.
    pub from: Grid,
    /// The elements of the target, coloured by the groups that read them.
    pub to: Grid,
    /// Number of colour groups.
    pub groups: usize,
    /// Lines printed under the picture (counts, what was fixed).
    pub notes: Vec<String>,
}

/// A 2-D grid of cells; each cell lists the colour groups that touch it (empty: untouched).
#[derive(Clone, Debug, Default)]
pub struct Grid {
    pub title: String,
    /// Axis names, e.g. `d0` and `d1`, or `(d0, d1) row-major` for flattened axes.
    pub row_axis: String,
    pub col_axis: String,
    /// Index of the first row and column (the lower bounds of the axes).
    pub row0: i64,
    pub col0: i64,
    pub rows: usize,
    pub cols: usize,
    /// `rows * cols` cells, row-major.
    pub cells: Vec<Vec<u32>>,
    /// Elements per memory sector, when sectors are drawn (0: not drawn).
    pub sector: usize,
}

/// What an HLO statement defined, for a one-line confirmation.
#[derive(Clone, Debug)]
pub struct Defined {
    /// `instruction`, `computation` or `module`.
    pub kind: &'static str,
    pub name: String,
    /// The output shape (`f32[4,8]`); empty for a module.
    pub shape: String,
    /// The opcode of an instruction, or `N instructions, root R` of a computation.
    pub detail: String,
}

/// One command in a help listing.
#[derive(Clone, Debug)]
pub struct HelpEntry {
    pub name: String,
    pub usage: String,
    pub summary: String,
}

/// A group of commands (`map algebra`, `HLO`...), with the word `help GROUP` takes.
#[derive(Clone, Debug)]
pub struct HelpGroup {
    pub key: String,
    pub title: String,
    pub entries: Vec<HelpEntry>,
}

#[derive(Clone, Debug)]
pub enum Help {
    /// `help`: the groups with their command names, and the topics.
    Index {
        groups: Vec<HelpGroup>,
        topics: Vec<(String, String)>,
    },
    /// `help GROUP` or `help all`: each command's usage and summary.
    Groups(Vec<HelpGroup>),
    /// `help COMMAND`: usage, summary, an example and what it prints in a fresh session.
    Command {
        entry: HelpEntry,
        example: String,
        output: Option<Box<Outcome>>,
    },
    /// `help TOPIC`.
    Topic { name: String, text: String },
}

/// `load FILE`: the statements it ran and their outcomes (stopped at the first error).
#[derive(Clone, Debug)]
pub struct Loaded {
    pub file: String,
    /// The statements run (a transcript's inputs, or the script itself).
    pub source: String,
    pub outcomes: Vec<Outcome>,
}

impl Loaded {
    /// The error the file stopped at, if it did (in a file it loads, where that stopped).
    pub fn error(&self) -> Option<&Diagnostic> {
        self.failure().and_then(|(_, o)| o.result.as_ref().err())
    }

    /// Where the file stopped: the innermost loaded file holding the failing statement
    /// (this one, or one it loads), and that statement's outcome (an error).
    pub fn failure(&self) -> Option<(&Loaded, &Outcome)> {
        self.outcomes.iter().find_map(|o| match &o.result {
            Err(_) => Some((self, o)),
            Ok(Value::Loaded(l)) => l.failure(),
            Ok(_) => None,
        })
    }
}

/// `coalescing FUSION`: the analysis of one launch of a fusion.
#[derive(Clone, Debug)]
pub struct Coalescing {
    pub fusion: String,
    /// The launch in words (`loop, block 128, grid 6, vector 4`).
    pub launch: String,
    pub report: crate::gpu::coalescing::Report,
}

/// `reduction_groups C`: groups of root instructions, with the instructions they share.
#[derive(Clone, Debug)]
pub struct Groups {
    pub computation: String,
    pub groups: Vec<Group>,
}

#[derive(Clone, Debug)]
pub struct Group {
    pub roots: Vec<String>,
    pub shared: Vec<String>,
}

/// `fuse A, R, C`: the fused map and a sentence on how it was built.
#[derive(Clone, Debug)]
pub struct Fused {
    pub map: IndexingMap,
    pub how: String,
}

/// Which syntax `show ... as` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// MLIR's `affine_map` / `#xla.indexing_map` attribute.
    Mlir,
    /// XLA's multi-line `ToString` form.
    Xla,
}

#[derive(Clone, Debug)]
pub struct Shown {
    pub map: IndexingMap,
    pub syntax: Syntax,
}

/// A file written by a command: where, and how many bytes.
#[derive(Clone, Debug)]
pub struct Written {
    pub path: String,
    pub bytes: usize,
}

/// An instruction without operands: each output element depends only on its index.
#[derive(Clone, Debug)]
pub struct NoOperands {
    pub name: String,
    pub opcode: String,
    /// The output's domain, as a map with no results.
    pub domain: IndexingMap,
}
