//! GPU commands: `threads`, `coalescing`, `emit`, `bench` (issue 5). Each takes a fusion —
//! a fused computation, a `fusion` instruction, or any single instruction — and a launch
//! configuration, and returns a typed value for the front ends to render.

use super::commands::Command;
use super::{Args, Session};
use crate::gpu::bench::{self, Device};
use crate::gpu::coalescing;
use crate::gpu::emit::{self, Target};
use crate::gpu::launch::{self, thread_to_input, DeviceLimits, Launch, Strategy, XlaDefault};
use crate::gpu::mapping::{LayoutLaunch, Mapping};
use crate::gpu::spec::KernelSpec;
use crate::syntax::{suggest, Arg, Diagnostic, Span};
use crate::value::{Indexing, OperandMaps, Value};

pub static COMMANDS: [Command; 6] = [
    Command {
        name: "threads",
        usage: "threads FUSION [mapping=NAME] [block=N] [vector=N] [unroll=N] [max_blocks=N] [tiled=true|false] [output]",
        summary: "the thread/block-id → output map of a launch, and thread-id → every input; `output`: the thread → output map alone, as a map; mapping= names a mapping or a layout (bound by `layout`)",
        example: "p0 = f32[20, 40, 300] parameter(0); p1 = f32[20, 40, 300] parameter(1); add0 = f32[20, 40, 300] add(p0, p1); threads add0 block=128 vector=4",
        run: threads,
    },
    Command {
        name: "coalescing",
        usage: "coalescing FUSION [mapping=NAME] [block=N] [vector=N] [unroll=N] [max_blocks=N] [tiled=true|false] | coalescing FUSION tile=(T0, .., Tn) [verdict=xla|ratio] | coalescing PRODUCER, CONSUMER heuristic",
        summary: "per operand: sectors and lines per warp load against the ideal, the worst warp, a verdict and XLA's; with tile=, the 64-byte transactions each tile reads; with a consumer and `heuristic`, XLA's quick producer-consumer check against the analysis",
        example: "p0 = f32[20, 40, 300] parameter(0); p1 = f32[20, 40, 300] parameter(1); add0 = f32[20, 40, 300] add(p0, p1); coalescing add0 vector=4",
        run: coalescing_cmd,
    },
    Command {
        name: "emit",
        usage: "emit FUSION [mapping=NAME] [block=N] [vector=N] [unroll=N] [max_blocks=N] [tiled=true|false] [tile=(n, ...)] [target=cuda|cpu] [naive] [sass] [warps=N] [stages=N]",
        summary: "the kernel source for that mapping: CUDA C, or C for the host compiler; mapping= may name a layout (its threads the block, a block per tile); `sass` adds the CUDA kernel's machine code for sm_90 (ptxas, cuobjdump)",
        example: "p0 = f32[20, 40, 300] parameter(0); p1 = f32[20, 40, 300] parameter(1); add0 = f32[20, 40, 300] add(p0, p1); emit add0 target=cpu",
        run: emit_cmd,
    },
    Command {
        name: "bench",
        usage: "bench FUSION [device=auto|gpu|cpu] [naive] [hot] [reps=N] [threads=N] [mapping=NAME] [block=N] [vector=N] [unroll=N] [max_blocks=N] [tiled=true|false] [tile=(n, ...)] [warps=N] [stages=N]",
        summary: "runs the kernel, checks every element against the reference, times it against a copy; mapping= may name a layout",
        example: "p0 = f32[64, 64] parameter(0); p1 = f32[64, 64] parameter(1); add0 = f32[64, 64] add(p0, p1); bench add0 device=cpu reps=3",
        run: bench_cmd,
    },
    Command {
        name: "mapping",
        usage: "mapping [FUSION] [mapping=NAME] [block=N] [vector=N] [unroll=N] [max_blocks=N] [tiled=true|false] [tile=(n, ...)]",
        summary: "a mapping to reuse: the GPU launch and the CPU tiling that threads, coalescing, emit and bench take as mapping=NAME (a layout bound by `layout` is taken there too)",
        example: "p0 = f32[64, 64] parameter(0); t = f32[64, 64] transpose(p0), dimensions={1, 0}; mapping t tile=(32, 16) block=256",
        run: mapping_cmd,
    },
    Command {
        name: "check",
        usage: "check FUSION [mapping=NAME] [block=N] [vector=N] [unroll=N] [max_blocks=N] [tiled=true|false] [naive] [tile=(BM, BN, BK)] [warps=N] [stages=N] [target=cuda|cpu]",
        summary: "runs the emitted CUDA source on the CPU (threads of a block as real threads), or with target=cpu the C kernel, and checks every element; mapping= may name a layout",
        example: "p0 = f32[40, 70] parameter(0); t = f32[70, 40] transpose(p0), dimensions={1, 0}; check t",
        run: check_cmd,
    },
];

/// `check FUSION ...`: the CUDA kernel `emit` writes, run on the CPU through
/// `src/gpu/cuda_on_cpu.h` and verified element by element.
fn check_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    if let Some(g) = super::cmd_gemm::gemm_of(s, a)? {
        return super::cmd_gemm::check(a, g);
    }
    let naive = a.flag("naive");
    let outputs = |spec: &KernelSpec| match spec.outputs().as_slice() {
        [one] => one.shape_text(),
        all => format!(
            "its {} outputs ({})",
            all.len(),
            all.iter()
                .map(|t| t.shape_text())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let spec = spec(s, a)?;
    no_gemm_keys(&spec, a)?;
    // `target=cpu` (or a mapping that tiles the CPU loop nest): the C kernel `emit` writes
    // for the same arguments, compiled and run, checked against the same reference.
    let layout = layout_of(s, a, &spec)?;
    let m = match layout {
        Some(_) => Mapping::default(),
        None => mapping_of(s, a)?,
    };
    if let Target::Cpu = target(a, &m)? {
        let (e, how) = match &layout {
            Some(ll) => (
                ll.emit_cpu(&spec, naive)
                    .map_err(|e| Diagnostic::at(e.to_string(), a.span()))?,
                format!(
                    " (walking layout `{}`)",
                    a.kv_word("mapping")?.unwrap_or_default()
                ),
            ),
            None => (
                c_kernel(&spec, &m, a, naive)?,
                match &m.tile {
                    Some(t) => format!(" (loop nest tiled ({}))", join(t)),
                    None => String::new(),
                },
            ),
        };
        crate::gpu::cuda_cpu::check_c_kernel(&spec, &e, None)
            .map_err(|e| Diagnostic::at(e.to_string(), a.span()))?;
        return Ok(Value::Text(format!(
            "{}: the C kernel{how}{} ran; every element of {} matches the reference",
            spec.name,
            if naive {
                " (naive index arithmetic)"
            } else {
                ""
            },
            outputs(&spec)
        )));
    }
    no_tile_here(a, "the CUDA kernel runs the GPU launch")?;
    let (l, words) = match layout {
        Some(ll) => {
            let words = ll.describe();
            (ll.launch, words)
        }
        None => {
            let l = launch_with(&spec, &m, a)?;
            let words = describe(&l);
            (l, words)
        }
    };
    let bits = crate::gpu::cuda_cpu::check(&spec, &l, naive)
        .map_err(|e| Diagnostic::at(e.to_string(), a.span()))?;
    Ok(Value::Text(format!(
        "{}: the CUDA kernel ({}{}, {bits}-bit indices) ran on the CPU; every element of {} matches the reference",
        spec.name,
        words,
        if naive { ", naive index arithmetic" } else { "" },
        outputs(&spec)
    )))
}

pub(super) fn fusion_name(a: &Args) -> Result<(String, Span), Diagnostic> {
    match a.items().next() {
        Some(Arg::Word(w, span)) => Ok((w.clone(), *span)),
        Some(other) => Err(Diagnostic::at(
            "expected the name of a fusion or instruction",
            other.span(),
        )),
        None => Err(
            Diagnostic::at(format!("`{}` needs a fusion", a.call.name), a.span()).with_help(
                "define one with HLO text, e.g. a fused computation or an instruction line",
            ),
        ),
    }
}

/// The kernel spec of the fusion named by the first argument.
pub(super) fn spec(s: &Session, a: &Args) -> Result<KernelSpec, Diagnostic> {
    let (name, span) = fusion_name(a)?;
    // The fusion's computation, as the sweep of tests/gpu_sweep.rs adapts it.
    let r = match crate::gpu::sweep::spec_for(&s.hlo, &name) {
        Some(r) => r,
        None => {
            let names = s.hlo.names();
            let mut d = Diagnostic::at(format!("no fusion or instruction named `{name}`"), span)
                .with_label("not defined in this session");
            if let Some(x) = suggest(&name, names.iter().map(String::as_str)) {
                d = d.with_help(format!("did you mean `{x}`?"));
            }
            return Err(d);
        }
    };
    r.map_err(|m| Diagnostic::at(m, span))
}

/// The options that set a CUDA launch: a mapping, its launch keys, `tiled=`.
const LAUNCH_OPTIONS: [&str; 6] = [
    "mapping",
    "block",
    "vector",
    "unroll",
    "max_blocks",
    "tiled",
];

/// The first launch option given ([`LAUNCH_OPTIONS`]) and where, for the commands and
/// targets that take none.
pub(super) fn launch_option_given(a: &Args) -> Option<(&'static str, Span)> {
    LAUNCH_OPTIONS
        .into_iter()
        .find_map(|k| a.kv(k).map(|v| (k, v.span())))
}

/// The mapping the arguments give: the one named by `mapping=NAME` (or the default), with
/// `block=`, `vector=`, `unroll=`, `tiled=` and `tile=` given alongside taking precedence.
fn mapping_of(s: &Session, a: &Args) -> Result<Mapping, Diagnostic> {
    let mut m = match (a.kv("mapping"), a.kv_word("mapping")?) {
        (Some(arg), Some(name)) => {
            match s.values.get(&name) {
                Some(Value::Mapping(m)) => m.clone(),
                Some(Value::Layout(_)) => return Err(Diagnostic::at(
                    format!("`{name}` is a layout: it gives a launch of its own, not a mapping to keep"),
                    arg.span(),
                )
                .with_help(
                    "give it to threads, coalescing, emit, check or bench as mapping=NAME",
                )),
                Some(other) => return Err(Diagnostic::at(
                    format!("`{name}` is a {}, not a mapping", other.kind()),
                    arg.span(),
                )
                .with_help(
                    "write one with `NAME = mapping block=N tile=(...)`, or let `tune` find one, or bind a layout with `layout`",
                )),
                None => {
                    let mut d = Diagnostic::at(format!("no mapping named `{name}`"), arg.span())
                        .with_label("not defined in this session");
                    let mappings = s
                        .values
                        .iter()
                        .filter(|(_, v)| matches!(v, Value::Mapping(_) | Value::Layout(_)))
                        .map(|(k, _)| k.as_str());
                    d = match suggest(&name, mappings) {
                    Some(x) => d.with_help(format!("did you mean `{x}`?")),
                    None => d.with_help(
                        "`tune FUSION` binds its best mapping to FUSION_best; `NAME = mapping ...` writes one",
                    ),
                };
                    return Err(d);
                }
            }
        }
        _ => Mapping::default(),
    };
    for (key, field) in [
        ("block", &mut m.config.block),
        ("vector", &mut m.config.vector),
        ("unroll", &mut m.config.unroll),
        ("max_blocks", &mut m.config.max_blocks),
    ] {
        if let Some(v) = a.kv_int(key)? {
            if v < 1 {
                return Err(Diagnostic::at(
                    format!("`{key}=` must be at least 1, not {v}"),
                    a.kv_span(key),
                ));
            }
            *field = v;
        }
    }
    match a.kv_word("tiled")?.as_deref() {
        None => {}
        Some("true") => m.tiled = Some(true),
        Some("false") => m.tiled = Some(false),
        Some(w) => {
            return Err(Diagnostic::at(
                format!("`tiled=` takes true or false, not `{w}`"),
                a.kv_span("tiled"),
            ))
        }
    }
    if let Some(t) = a.kv_tuple("tile")? {
        m.tile = Some(t);
    }
    Ok(m)
}

/// Checks the mapping's CPU tile against the fusion's output: one size per dimension, each
/// dividing its extent.
fn check_tile(spec: &KernelSpec, m: &Mapping, a: &Args) -> Result<(), Diagnostic> {
    let Some(tile) = &m.tile else { return Ok(()) };
    let out = &spec.output;
    let span = a
        .kv("tile")
        .or_else(|| a.kv("mapping"))
        .map_or(a.span(), |v| v.span());
    let whose = match (a.kv("tile"), a.kv_word("mapping").ok().flatten(), &m.fusion) {
        (None, Some(n), Some(f)) => format!(" of mapping `{n}` (chosen for {f})"),
        (None, Some(n), None) => format!(" of mapping `{n}`"),
        _ => String::new(),
    };
    if tile.len() != out.rank() {
        return Err(Diagnostic::at(
            format!(
                "the tile ({}){whose} has {} size{} but {}'s output {} has {} dimension{}",
                join(tile),
                tile.len(),
                if tile.len() == 1 { "" } else { "s" },
                spec.name,
                out.shape_text(),
                out.rank(),
                if out.rank() == 1 { "" } else { "s" }
            ),
            span,
        ));
    }
    if let Some(i) = (0..tile.len()).find(|&i| tile[i] < 1 || out.dims[i] % tile[i] != 0) {
        return Err(Diagnostic::at(
            format!(
                "the tile ({}){whose} does not divide {}'s output {}: {} along dimension {i} of {}",
                join(tile),
                spec.name,
                out.shape_text(),
                tile[i],
                out.dims[i]
            ),
            span,
        )
        .with_help("each tile size must divide its extent (tiles are whole)"));
    }
    Ok(())
}

/// An explicit `tile=` where only the GPU launch applies is a mistake worth naming.
fn no_tile_here(a: &Args, what: &str) -> Result<(), Diagnostic> {
    match a.kv("tile") {
        Some(v) => Err(Diagnostic::at(
            format!("`tile=` tiles the CPU loop nest; {what}"),
            v.span(),
        )
        .with_help("the GPU mapping is block=, vector=, unroll= and tiled=")),
        None => Ok(()),
    }
}

fn join(xs: &[i64]) -> String {
    crate::gpu::mapping::join(xs)
}

/// The fusion's spec, its launch (a layout's when `mapping=` names one) and the launch in
/// words.
fn launch_for(s: &Session, a: &Args) -> Result<(KernelSpec, Launch, String), Diagnostic> {
    let spec = spec(s, a)?;
    if let Some(ll) = layout_of(s, a, &spec)? {
        let words = ll.describe();
        return Ok((spec, ll.launch, words));
    }
    let m = mapping_of(s, a)?;
    let l = launch_with(&spec, &m, a)?;
    let words = describe(&l);
    Ok((spec, l, words))
}

/// The launch of a layout given as `mapping=NAME` (a CuTe, Triton or TTGIR layout bound
/// by `layout`): `None` when `mapping=` is absent or names no layout. The layout gives the
/// whole launch, so the launch options beside it are errors; a layout that does not fit
/// the fusion (its rank, its tile covered other than once, too many threads) is an error at
/// `mapping=`.
fn layout_of(s: &Session, a: &Args, spec: &KernelSpec) -> Result<Option<LayoutLaunch>, Diagnostic> {
    let (Some(arg), Some(name)) = (a.kv("mapping"), a.kv_word("mapping")?) else {
        return Ok(None);
    };
    let Some(Value::Layout(l)) = s.values.get(&name) else {
        return Ok(None);
    };
    for k in ["block", "vector", "unroll", "max_blocks", "tiled", "tile"] {
        if let Some(v) = a.kv(k) {
            return Err(Diagnostic::at(
                format!("`{k}=` does not apply: the layout `{name}` gives the launch"),
                v.span(),
            )
            .with_help("its threads make the block and its values each thread's elements; bind another layout to change them"));
        }
    }
    let block = crate::layout::launch::block_layout(l)
        .map_err(|e| Diagnostic::at(format!("layout `{name}` {}", e.message), arg.span()))?;
    crate::gpu::mapping::layout_launch(spec, &name, block)
        .map(Some)
        .map_err(|e| Diagnostic::at(e.to_string(), arg.span()))
}

fn launch_with(spec: &KernelSpec, m: &Mapping, a: &Args) -> Result<Launch, Diagnostic> {
    Ok(launch_and_default(spec, m, a, DeviceLimits::H100)?.0)
}

/// The launch keys `block=`, `vector=`, `unroll=`, `max_blocks=`.
const LAUNCH_KEYS: [&str; 4] = ["block", "vector", "unroll", "max_blocks"];

/// The mapping the launch runs: a named mapping (`mapping=NAME`) as it is; otherwise XLA's
/// default launch for this fusion on `dev` ([`launch::xla_default`]), each of `block=`,
/// `vector=`, `unroll=` and `max_blocks=` given taking precedence. With the default, its
/// rules (those for what no argument set).
fn resolve(
    spec: &KernelSpec,
    m: &Mapping,
    a: &Args,
    dev: DeviceLimits,
) -> Result<(Mapping, Option<XlaDefault>), Diagnostic> {
    if a.kv("mapping").is_some() {
        return Ok((m.clone(), None));
    }
    let d = launch::xla_default(spec, m.tiled, dev).map_err(|e| {
        let span = a.kv_span("tiled");
        Diagnostic::at(e.to_string(), span)
    })?;
    let mut out = m.clone();
    out.config = d.config;
    for key in LAUNCH_KEYS {
        if a.kv(key).is_some() {
            match key {
                "block" => out.config.block = m.config.block,
                "vector" => out.config.vector = m.config.vector,
                "unroll" => out.config.unroll = m.config.unroll,
                _ => out.config.max_blocks = m.config.max_blocks,
            }
        }
    }
    Ok((out, Some(d)))
}

/// [`launch_with`], and XLA's default when it gave the launch.
fn launch_and_default(
    spec: &KernelSpec,
    m: &Mapping,
    a: &Args,
    dev: DeviceLimits,
) -> Result<(Launch, Option<XlaDefault>), Diagnostic> {
    let (m, d) = resolve(spec, m, a, dev)?;
    let l = choose_launch(spec, &m, a)?;
    options_apply(spec, &l, a)?;
    Ok((l, d))
}

/// How the launch came about, for `threads`, `emit` and `bench`: `XLA's default launch`
/// when no launch argument (nor a named mapping) set any of it; `None` otherwise (the
/// arguments given are then what the launch says).
fn default_words(d: &Option<XlaDefault>, a: &Args) -> Option<String> {
    d.as_ref()?;
    if LAUNCH_KEYS.iter().any(|k| a.kv(k).is_some()) {
        return None;
    }
    Some("XLA's default launch".to_string())
}

/// Options given on the command line that the chosen strategy does not use are said, not
/// ignored (issue 17): a tiled transpose always runs 32x32 tiles on blocks of 128 threads,
/// one element per thread and tile row; a reduction reads one element per thread and step,
/// and is a reduction whatever `tiled=` says; a row reduction gives each row a warp.
fn options_apply(spec: &KernelSpec, l: &Launch, a: &Args) -> Result<(), Diagnostic> {
    let what = match l.strategy {
        Strategy::Loop
        | Strategy::Concatenate
        | Strategy::DynamicUpdateSlice
        | Strategy::Scatter => return Ok(()),
        Strategy::TiledTranspose { .. } => "a tiled transpose",
        Strategy::RowReduction => "a row reduction",
        Strategy::ColumnReduction => "a column reduction",
        Strategy::RowNormalization => "a row normalization",
    };
    let reduction = what != "a tiled transpose";
    let unused = |key: &str, why: String, help: &str| {
        Err(Diagnostic::at(
            format!("`{key}=` does not apply: {} is {what}; {why}", spec.name),
            a.kv_span(key),
        )
        .with_help(help.to_string()))
    };
    let loop_help = "`tiled=false` launches a plain loop, which takes block=, vector= and unroll=";
    let red_help = match l.strategy {
        Strategy::RowReduction => {
            "a row reduction's launch takes block= and vector= (elements per load)"
        }
        Strategy::ColumnReduction => {
            "a column reduction's launch takes vector= (adjacent columns per thread)"
        }
        Strategy::RowNormalization => {
            "a row normalization's launch takes block= and vector= (consecutive elements a lane, dividing the row)"
        }
        _ => "a reduction's launch takes block= only",
    };
    if let Some(b) = a.kv_int("block")? {
        if b != l.block[0] {
            if !reduction {
                return unused(
                    "block",
                    format!(
                        "its 32x32 tiles run on blocks of {} threads, not {b}",
                        l.block[0]
                    ),
                    loop_help,
                );
            }
            if l.strategy == Strategy::ColumnReduction {
                return unused(
                    "block",
                    format!(
                        "its 32x32 tiles of columns run on blocks of {} threads, not {b}",
                        l.block[0]
                    ),
                    "a column reduction's launch is XLA's 32x32 tile; it takes vector= (adjacent columns per thread)",
                );
            }
            if l.strategy == Strategy::RowReduction || l.strategy == Strategy::RowNormalization {
                return unused(
                    "block",
                    format!(
                        "each row gets a warp of 32 threads, so block={b} would run as block {}",
                        l.block[0]
                    ),
                    "give block= a multiple of 32",
                );
            }
        }
    }
    for key in ["vector", "unroll"] {
        if let Some(v) = a.kv_int(key)? {
            // A row reduction reads `vector` elements per load, a column reduction
            // `vector` adjacent columns per thread (XLA's vectorized reductions), a row
            // normalization `vector` consecutive elements a lane: that option is theirs.
            let honoured = key == "vector"
                && matches!(
                    l.strategy,
                    Strategy::RowReduction | Strategy::ColumnReduction | Strategy::RowNormalization
                );
            if v != 1 && !honoured {
                let why = if l.strategy == Strategy::RowReduction {
                    format!("its lanes stride along the row with no unrolled repeat, so {key}={v} would be ignored")
                } else if reduction {
                    format!("each thread reads one element per step, so {key}={v} would be ignored")
                } else {
                    format!(
                        "each thread moves one element per tile row, so {key}={v} would be ignored"
                    )
                };
                return unused(key, why, if reduction { red_help } else { loop_help });
            }
        }
    }
    if reduction && a.kv("tiled").is_some() {
        return unused(
            "tiled",
            "a reduction is launched as one whatever `tiled=` says".to_string(),
            red_help,
        );
    }
    Ok(())
}

/// The GPU launch's options given on the command line: `block=`, `vector=`, `unroll=`, `tiled=`.
fn gpu_only_keys(a: &Args) -> Vec<String> {
    ["block", "vector", "unroll", "tiled"]
        .into_iter()
        .filter(|k| a.kv(k).is_some())
        .map(|k| format!("{k}="))
        .collect()
}

fn choose_launch(spec: &KernelSpec, m: &Mapping, a: &Args) -> Result<Launch, Diagnostic> {
    launch::choose(spec, m.config, m.tiled).map_err(|e| {
        let key = ["vector", "block", "unroll", "max_blocks", "tiled"]
            .into_iter()
            .find(|k| {
                e.to_string().contains(&format!("{k}="))
                    || (*k == "tiled" && e.to_string().contains("tile"))
            });
        let span = key
            .and_then(|k| a.kv(k))
            .or_else(|| a.kv("mapping"))
            .map_or(a.span(), |v| v.span());
        Diagnostic::at(e.to_string(), span)
    })
}

/// A launch in words (also `dump`'s launch column): [`Launch::describe`].
pub fn describe(l: &Launch) -> String {
    l.describe()
}

fn threads(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let spec = spec(s, a)?;
    let (l, words) = match layout_of(s, a, &spec)? {
        Some(ll) => {
            let w = ll.describe();
            (ll.launch, w)
        }
        None => {
            no_tile_here(a, "`threads` shows the GPU launch")?;
            let m = mapping_of(s, a)?;
            let (l, d) = launch_and_default(&spec, &m, a, DeviceLimits::H100)?;
            let how = default_words(&d, a).map_or(String::new(), |w| format!("; {w}"));
            let w = format!("{}{how}", describe(&l));
            (l, w)
        }
    };
    let err = |e: crate::MapError| Diagnostic::at(e.to_string(), a.span());
    if a.flag("output") {
        if !l.parts.is_empty() {
            return Err(Diagnostic::at(
                format!(
                    "`output`: the {} launch of {} runs one loop per part, each with its own map",
                    l.strategy.name(),
                    spec.name
                ),
                a.span(),
            )
            .with_help("`threads` without `output` shows every part's maps"));
        }
        return Ok(Value::Map(l.write_map.clone()));
    }
    let mut sections = vec![OperandMaps {
        label: format!("thread → output ({words})"),
        index: 0,
        name: None,
        maps: vec![l.write_map.clone()],
    }];
    match l.strategy {
        Strategy::TiledTranspose { .. } => sections.push(OperandMaps {
            label: "thread → tile read, in output coordinates (phase 1, before the shared-memory transpose)".into(),
            index: 0,
            name: None,
            maps: vec![l.read_map.clone()],
        }),
        Strategy::RowReduction | Strategy::ColumnReduction => sections.push(OperandMaps {
            label: "thread → reduced operand element".into(),
            index: 0,
            name: None,
            maps: vec![l.read_map.clone()],
        }),
        Strategy::Loop | Strategy::RowNormalization => {}
        Strategy::Concatenate | Strategy::DynamicUpdateSlice | Strategy::Scatter => {
            return Ok(Value::Indexing(Indexing {
                notes: Vec::new(),
                title: format!("threads {}", spec.name),
                operands: launch::part_sections(&spec, &l, &describe(&l))
                    .map_err(err)?
                    .into_iter()
                    .map(OperandMaps::from)
                    .collect(),
            }))
        }
    }
    for acc in launch::accesses(&spec, &l).map_err(err)? {
        let m = thread_to_input(&spec, &l, &acc).map_err(err)?;
        let t = &spec.inputs[acc.input];
        let label = format!("thread → operand {} ({})", acc.input, t.name);
        match sections.iter_mut().find(|x| x.label == label) {
            Some(sec) => {
                if !sec.maps.contains(&m) {
                    sec.maps.push(m)
                }
            }
            None => sections.push(OperandMaps {
                label,
                index: acc.input,
                name: None,
                maps: vec![m],
            }),
        }
    }
    // A tuple root's further outputs: each one's thread → output map (and its reads).
    sections.extend(
        launch::more_output_sections(&spec, &l)
            .map_err(err)?
            .into_iter()
            .map(OperandMaps::from),
    );
    Ok(Value::Indexing(Indexing {
        notes: Vec::new(),
        title: format!("threads {}", spec.name),
        operands: sections,
    }))
}

fn coalescing_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    if a.flag("heuristic") || a.groups().len() > 1 {
        return heuristic_cmd(s, a);
    }
    if a.kv("tile").is_some() {
        return tiled_coalescing(s, a);
    }
    if let Some(v) = a.kv("verdict") {
        return Err(Diagnostic::at(
            "`verdict=` judges the tiles of `tile=(..)`; a launch's loads are judged by their sectors",
            v.span(),
        )
        .with_help("coalescing FUSION tile=(T0, .., Tn) verdict=ratio"));
    }
    let (spec, l, words) = launch_for(s, a)?;
    let report =
        coalescing::analyse(&spec, &l).map_err(|e| Diagnostic::at(e.to_string(), a.span()))?;
    Ok(Value::Coalescing(crate::value::Coalescing {
        fusion: spec.name.clone(),
        launch: words,
        report,
    }))
}

/// `coalescing FUSION tile=(..)`: the output cut into tiles of those sizes, each operand's
/// 64-byte transactions per representative tile (`gpu::tile_coalescing`).
fn tiled_coalescing(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    use crate::gpu::tile_coalescing::{check_tile, tiled_report_with};
    if let Some((k, span)) = launch_option_given(a) {
        return Err(Diagnostic::at(
            format!("`{k}=` sets the GPU launch; `tile=` counts tiles of the output instead"),
            span,
        )
        .with_help("give either tile=(..) or the launch options, not both"));
    }
    let spec = spec(s, a)?;
    let verdict = match a.kv_word("verdict")?.as_deref() {
        None | Some("xla") => crate::gpu::tile_coalescing::Verdict::Xla,
        Some("ratio") => crate::gpu::tile_coalescing::Verdict::Ratio,
        Some(w) => {
            return Err(Diagnostic::at(
                format!("`verdict=` takes xla or ratio, not `{w}`"),
                a.kv_span("verdict"),
            ))
        }
    };
    let tile = a.kv_tuple("tile")?.unwrap_or_default();
    let Some(arg) = a.kv("tile") else {
        return Err(Diagnostic::at("`tile=` is missing", a.span()));
    };
    if let Err((at, msg)) = check_tile(&spec.output.dims, &tile) {
        let span = match (at, arg) {
            (Some(i), Arg::Tuple(items, _)) if i < items.len() => items[i].span(),
            _ => arg.span(),
        };
        return Err(Diagnostic::at(
            format!("{msg} ({} is {})", spec.name, spec.output.shape_text()),
            span,
        )
        .with_help("one size per output dimension, each at least 1 (a size over its extent is clipped to it)"));
    }
    let r = tiled_report_with(&spec, &tile, verdict)
        .map_err(|e| Diagnostic::at(e.to_string(), a.span()))?;
    Ok(Value::TiledCoalescing(r))
}

/// `coalescing PRODUCER, CONSUMER heuristic`: XLA's quick read-coalescing verdict for the
/// producer fused into the consumer, beside the exact analysis of the fused pair.
fn heuristic_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    use crate::hlo::workspace::Target;
    let usage = "coalescing PRODUCER, CONSUMER heuristic";
    let groups = a.groups();
    if groups.len() != 2 {
        let span = groups.get(2).map_or(a.span(), |g| g.span);
        return Err(Diagnostic::at(
            "`heuristic` judges a producer fused into its consumer: give both",
            span,
        )
        .with_help(format!("usage: {usage}")));
    }
    if !a.flag("heuristic") {
        return Err(Diagnostic::at(
            "a producer and a consumer are compared by XLA's heuristic: add `heuristic`",
            groups[1].span,
        )
        .with_help(format!("usage: {usage}")));
    }
    for &k in LAUNCH_OPTIONS.iter().chain(&["tile", "verdict"]) {
        if let Some(v) = a.kv(k) {
            return Err(Diagnostic::at(
                format!("`{k}=` does not apply: the heuristic looks at the instructions, and the exact analysis runs XLA's default launch"),
                v.span(),
            ));
        }
    }
    let mut found = Vec::new();
    for g in groups {
        let Some(Arg::Word(name, span)) = g.items.first() else {
            return Err(Diagnostic::at(
                "expected the name of an instruction",
                g.span,
            ));
        };
        match s.hlo.resolve(name) {
            Some(Target::Instr(c, id)) => found.push((c.name.clone(), id, name.clone(), *span)),
            Some(Target::Computation(_)) => {
                return Err(Diagnostic::at(
                    format!("`{name}` is a computation; the heuristic takes two instructions (a fusion instruction, or any op)"),
                    *span,
                ))
            }
            None => {
                let mut d = Diagnostic::at(format!("no instruction named `{name}`"), *span)
                    .with_label("not defined in this session");
                if let Some(x) = suggest(name, s.hlo.names().iter().map(String::as_str)) {
                    d = d.with_help(format!("did you mean `{x}`?"));
                }
                return Err(d);
            }
        }
    }
    let (pc, p, pname, _) = &found[0];
    let (cc, q, qname, qspan) = &found[1];
    if pc != cc {
        return Err(Diagnostic::at(
            format!("`{qname}` is in {cc} and `{pname}` in {pc}: a producer and its consumer share a computation"),
            *qspan,
        ));
    }
    let comp = match s.hlo.resolve(qname) {
        Some(Target::Instr(c, _)) => c,
        _ => {
            return Err(Diagnostic::at(
                format!("no instruction named `{qname}`"),
                *qspan,
            ))
        }
    };
    let r = crate::gpu::coalescing::heuristic::pair(&s.hlo.module, comp, *p, *q)
        .map_err(|e| Diagnostic::at(e, *qspan))?;
    Ok(Value::Table(crate::value::coalescing::heuristic(&r)))
}

/// The target `emit` writes for: `target=` if given, else the CPU for a mapping with a CPU
/// tile, else CUDA.
fn target(a: &Args, m: &Mapping) -> Result<Target, Diagnostic> {
    match a.kv_word("target")?.as_deref() {
        None if m.tile.is_some() => Ok(Target::Cpu),
        None | Some("cuda") | Some("gpu") => Ok(Target::Cuda),
        Some("cpu") => Ok(Target::Cpu),
        Some(w) => Err(Diagnostic::at(
            format!("`target=` takes cuda or cpu, not `{w}`"),
            a.kv_span("target"),
        )),
    }
}

/// `emit`, and with `sass` the kernel's SASS for `sm_90` after its source (CUDA only).
fn emit_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let v = emit_kernel(s, a)?;
    let Some(where_) = a.flag_span("sass") else {
        return Ok(v);
    };
    let Value::Kernel(mut k) = v else {
        return Ok(v);
    };
    if k.target != "cuda" {
        return Err(Diagnostic::at(
            "`sass` lists the machine code of a CUDA kernel: it takes target=cuda",
            where_,
        ));
    }
    let listing = crate::gpu::nvcc::sass_comment(&k.source)
        .map_err(|e| Diagnostic::at(format!("no SASS: {e}"), where_))?;
    k.source += &listing;
    Ok(Value::Kernel(k))
}

fn emit_kernel(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    if let Some(g) = super::cmd_gemm::gemm_of(s, a)? {
        return super::cmd_gemm::emit(a, g);
    }
    let naive = a.flag("naive");
    let spec = spec(s, a)?;
    no_gemm_keys(&spec, a)?;
    let err = |e: crate::MapError| Diagnostic::at(e.to_string(), a.span());
    if let Some(ll) = layout_of(s, a, &spec)? {
        let tgt = target(a, &Mapping::default())?;
        let e = match tgt {
            Target::Cuda => {
                let mut e = emit::cuda::emit(&spec, &ll.launch, naive).map_err(err)?;
                e.source = ll.source_header() + &e.source;
                let at = ll.launch.size();
                if let Some(c) = crate::gpu::nvcc::resource_comment_for(&e.source, Some(at)) {
                    e.source += &c;
                }
                e
            }
            Target::Cpu => ll.emit_cpu(&spec, naive).map_err(err)?,
        };
        return Ok(Value::Kernel(crate::value::Kernel {
            name: e.name,
            target: tgt.name().into(),
            source: e.source,
        }));
    }
    let m = mapping_of(s, a)?;
    let tgt = target(a, &m)?;
    let e = match tgt {
        Target::Cuda => {
            no_tile_here(a, "CUDA kernels take the GPU launch")?;
            let (l, d) = launch_and_default(&spec, &m, a, DeviceLimits::H100)?;
            let mut e = emit::cuda::emit(&spec, &l, naive).map_err(err)?;
            // The launch it was written for, and the rules of XLA's default that chose it.
            // The rules only when they chose it (no launch argument given).
            let words = default_words(&d, a);
            let rules: Vec<String> = d
                .iter()
                .filter(|_| words.is_some())
                .flat_map(|d| d.rules.iter().cloned())
                .collect();
            e.source = l.source_header(words.as_deref(), &rules) + &e.source;
            // Registers, spills and shared memory from ptxas, when NVRTC and ptxas are found,
            // and the occupancy they give.
            let at = l.size();
            if let Some(c) = crate::gpu::nvcc::resource_comment_for(&e.source, Some(at)) {
                e.source += &c;
            }
            e
        }
        Target::Cpu => c_kernel(&spec, &m, a, naive)?,
    };
    Ok(Value::Kernel(crate::value::Kernel {
        name: e.name,
        target: tgt.name().into(),
        source: e.source,
    }))
}

/// The C kernel of `target=cpu` for mapping `m` (no layout): the CPU loop nest tiled by
/// the mapping's `tile=`, a column reduction's `vector=` adjacent columns, or the plain
/// loop; a GPU launch key is an error. `emit` writes it and `check` runs it.
fn c_kernel(
    spec: &KernelSpec,
    m: &Mapping,
    a: &Args,
    naive: bool,
) -> Result<crate::gpu::emit::Emitted, Diagnostic> {
    let err = |e: crate::MapError| Diagnostic::at(e.to_string(), a.span());
    match &m.tile {
        // A column reduction reads `vector` adjacent columns per step on the CPU too.
        None if gpu_only_keys(a) == ["vector="] && emit::cpu::is_column_reduction(spec) => {
            emit::cpu::emit_column(spec, naive, m.config.vector)
                .map_err(|e| Diagnostic::at(e.to_string(), a.kv_span("vector")))
        }
        _ if !gpu_only_keys(a).is_empty() => {
            let keys = gpu_only_keys(a);
            let key = keys[0].trim_end_matches('=');
            Err(Diagnostic::at(
                format!(
                    "`{key}=` does not apply: a CPU kernel runs the loop nest, not a GPU launch"
                ),
                a.kv_span(key),
            )
            .with_help("`tile=` tiles the CPU loop nest; target=cuda takes block=, vector=, unroll= and tiled="))
        }
        Some(tile) => {
            check_tile(spec, m, a)?;
            crate::tile::tune::emit_tiled_with(spec, tile, naive).map_err(err)
        }
        None => emit::cpu::emit(spec, naive).map_err(err),
    }
}

/// `warps=` and `stages=` set a GEMM's tiling: an error at the key for any other fusion
/// (they were taken and ignored).
fn no_gemm_keys(spec: &KernelSpec, a: &Args) -> Result<(), Diagnostic> {
    for key in ["warps", "stages"] {
        if let Some(v) = a.kv(key) {
            return Err(Diagnostic::at(
                format!(
                    "`{key}=` does not apply: {} is not a dot fusion; `{key}=` sets a GEMM kernel's tiling",
                    spec.name
                ),
                v.span(),
            )
            .with_help("its launch takes mapping=, block=, vector=, unroll= and tiled= (tile= on the CPU)"));
        }
    }
    Ok(())
}

fn bench_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    if let Some(g) = super::cmd_gemm::gemm_of(s, a)? {
        return super::cmd_gemm::bench(a, g);
    }
    let spec = spec(s, a)?;
    no_gemm_keys(&spec, a)?;
    let device = match a.kv_word("device")?.as_deref() {
        None | Some("auto") => Device::Auto,
        Some("gpu") | Some("cuda") => Device::Gpu,
        Some("cpu") => Device::Cpu,
        Some(w) => {
            return Err(Diagnostic::at(
                format!("`device=` takes auto, gpu or cpu, not `{w}`"),
                a.kv_span("device"),
            ))
        }
    };
    let reps = match a.kv_int("reps")? {
        None => 10,
        Some(n) if (1..=10_000).contains(&n) => n as usize,
        Some(n) => {
            return Err(Diagnostic::at(
                format!("reps={n} is not in [1, 10000]"),
                a.kv_span("reps"),
            ))
        }
    };
    let naive = a.flag("naive");
    let on_gpu = match device {
        Device::Gpu => true,
        Device::Cpu => false,
        Device::Auto => bench::cuda::available().is_ok(),
    };
    if let Some(ll) = layout_of(s, a, &spec)? {
        return bench_layout(&spec, &ll, a, on_gpu, naive, reps, device);
    }
    let m = mapping_of(s, a)?;
    let mut m = m;
    let mut launch_words = None;
    if on_gpu {
        no_tile_here(a, "on the GPU the kernel runs the launch")?;
        // XLA's default for what is not given, for the device it runs on; block=,
        // vector=, unroll= and tiled= that the launch would not use are errors.
        let dev = bench::cuda::device_info().map_or(DeviceLimits::H100, |i| i.limits());
        let (rm, d) = resolve(&spec, &m, a, dev)?;
        let l = choose_launch(&spec, &rm, a)?;
        options_apply(&spec, &l, a)?;
        if let Some(w) = default_words(&d, a) {
            let rules = d.map(|d| d.rules).unwrap_or_default();
            launch_words = Some((format!("{} ({w})", describe(&l)), rules));
        }
        // The bench launches the same configuration.
        m = rm;
    } else {
        check_tile(&spec, &m, a)?;
    }
    if a.flag("hot") && !on_gpu {
        return Err(Diagnostic::at(
            "`hot` times cache-resident data on the GPU; the CPU bench's rounds are hot already",
            a.span(),
        ));
    }
    let threads = match a.kv_int("threads")? {
        None => 0,
        Some(n) if (1..=1024).contains(&n) => n as usize,
        Some(n) => {
            return Err(Diagnostic::at(
                format!("threads={n} is not in [1, 1024]"),
                a.kv_span("threads"),
            ))
        }
    };
    if on_gpu && a.kv("threads").is_some() {
        return Err(Diagnostic::at(
            "`threads=` is the CPU kernels' thread count; on the GPU the launch is block=",
            a.kv_span("threads"),
        ));
    }
    let req = bench::measure::Request {
        mapping: m,
        on_gpu,
        naive,
        reps,
        threads,
        launch_keys: gpu_only_keys(a),
        launch: launch_words,
        hot: a.flag("hot"),
    };
    let report = bench::measure::measure(&spec, &req).map_err(|e| {
        Diagnostic::at(
            e.to_string(),
            if device == Device::Gpu {
                a.kv_span("device")
            } else {
                a.span()
            },
        )
    })?;
    Ok(Value::Bench(report))
}

/// `bench FUSION mapping=LAYOUT`: on the CPU the host kernel that walks the layout's launch
/// (simplified, then naive indexing unless `naive`) against the untiled loop; on the GPU
/// the CUDA kernel of the layout's launch (simplified and naive). Every output is checked
/// against the reference before anything is timed.
fn bench_layout(
    spec: &KernelSpec,
    ll: &LayoutLaunch,
    a: &Args,
    on_gpu: bool,
    naive: bool,
    reps: usize,
    device: Device,
) -> Result<Value, Diagnostic> {
    let threads = match a.kv_int("threads")? {
        None => 0,
        Some(n) if (1..=1024).contains(&n) && !on_gpu => n as usize,
        Some(n) if on_gpu => {
            return Err(Diagnostic::at(
                format!("`threads={n}` is the CPU kernels' thread count; on the GPU the layout's threads make the block"),
                a.kv_span("threads"),
            ))
        }
        Some(n) => {
            return Err(Diagnostic::at(
                format!("threads={n} is not in [1, 1024]"),
                a.kv_span("threads"),
            ))
        }
    };
    if a.flag("hot") && !on_gpu {
        return Err(Diagnostic::at(
            "`hot` times cache-resident data on the GPU; the CPU bench's rounds are hot already",
            a.span(),
        ));
    }
    let err_at = |e: crate::MapError| {
        Diagnostic::at(
            e.to_string(),
            if device == Device::Gpu {
                a.kv_span("device")
            } else {
                a.span()
            },
        )
    };
    let opts = bench::Options {
        device: if on_gpu { Device::Gpu } else { Device::Cpu },
        reps,
        warmups: 2,
        progress: true,
        config: ll.launch.config,
        tiled: None,
        threads,
        hot: a.flag("hot"),
    };
    let outcome = if on_gpu {
        bench::cuda::run_launch(spec, &opts, &ll.launch, !naive, naive).map_err(err_at)?
    } else {
        let label = format!("layout {}", ll.name);
        let mut kernels = Vec::new();
        if !naive {
            kernels.push((label.clone(), ll.emit_cpu(spec, false).map_err(err_at)?));
        }
        kernels.push((
            format!("{label}, naive"),
            ll.emit_cpu(spec, true).map_err(err_at)?,
        ));
        kernels.push((
            if naive { "untiled, naive" } else { "untiled" }.to_string(),
            emit::cpu::emit(spec, naive).map_err(err_at)?,
        ));
        bench::cpu::run_kernels(spec, &opts, kernels).map_err(err_at)?
    };
    Ok(Value::Bench(bench::measure::Report {
        fusion: spec.name.clone(),
        outcome,
        notes: vec![bench::measure::Note::Launch(ll.describe())],
        reps,
        on_gpu,
    }))
}

/// `mapping [FUSION] ...`: a mapping value. With a fusion, it is checked against it (the
/// launch must be one the GPU code accepts, the tile must divide the output) and remembers
/// the fusion it was written for.
fn mapping_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let mut m = mapping_of(s, a)?;
    if let Some(Arg::Word(..)) = a.items().next() {
        let spec = spec(s, a)?;
        // A mapping is a value (its block may serve `tiled=false` or a CPU tile later): the
        // launch must exist, but options the default strategy would not use are kept.
        choose_launch(&spec, &m, a)?;
        check_tile(&spec, &m, a)?;
        m.fusion = Some(spec.name.clone());
        m.origin = None;
    }
    if let Some(t) = &m.tile {
        if let Some(z) = t.iter().find(|&&z| z < 1) {
            return Err(Diagnostic::at(
                format!("tile sizes are at least 1, not {z}"),
                a.kv_span("tile"),
            ));
        }
    }
    Ok(Value::Mapping(m))
}
