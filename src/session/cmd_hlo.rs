//! Commands on HLO: `indexing`, `partition`, `fuse`; and the definition of HLO text
//! (instruction lines, computation blocks, `HloModule` texts) in the session.

use super::commands::Command;
use super::{Args, Session};
use crate::hlo::fusion;
use crate::hlo::ops::{self, MapSet};
use crate::hlo::parse::parse_hlo;
use crate::hlo::workspace::Target;
use crate::hlo::{Computation, InstrId, Shape};
use crate::syntax::{suggest, Arg, Diagnostic, HloText, Span};
use crate::value::{Indexing, OperandMaps, Value};

pub static COMMANDS: [Command; 5] = [
    Command {
        name: "indexing",
        usage: "indexing OP [from K] [physical]",
        summary: "output-to-input maps of every operand of an instruction or fusion; `from K`: input-to-output maps from operand K (approximate for pad's value, dynamic-update-slice and gather's operand; UNDEFINED from convolution inputs); `physical`: between physical indices (the layouts' dimension orders)",
        example: "p0 = f32[20] parameter(0); bc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}; indexing bc0",
        run: indexing,
    },
    Command {
        name: "partition",
        usage: "partition COMPUTATION [roots=NAME,...]",
        summary: "the functions a computation splits into (an instruction joins its users only if they all read it at the same indices), and why each cut was made; `roots=` marks extra function roots (as XLA's emitters mark heroes)",
        example: "f { p = f32[4,4] parameter(0)\n l = f32[4,4] log(p)\n t = f32[4,4] transpose(l), dimensions={1,0}\n ROOT a = f32[4,4] add(l, t) }; partition f",
        run: partition,
    },
    Command {
        name: "fuse",
        usage: "fuse PRODUCER_ARG, PRODUCER_RESULT, CONSUMER_ARG",
        summary: "linalg producer/consumer fusion: PRODUCER_ARG ∘ inverse(PRODUCER_RESULT) ∘ CONSUMER_ARG, also for non-permutation bijections",
        example: "fuse (d0, d1) -> (d0, d1), (d0, d1) -> (d1, d0), (d0, d1) -> (d0, d1)",
        run: fuse,
    },
    Command {
        name: "reduction_groups",
        usage: "reduction_groups COMPUTATION",
        summary: "the groups a multi-output reduction fusion's roots fall into: roots that share a computed instruction stay together, independent ones form their own groups",
        example: "f { p = f32[4,8] parameter(0)\n z = f32[] constant(0)\n e = f32[4,8] exponential(p)\n r0 = f32[4] reduce(e, z), dimensions={1}, to_apply=add\n r1 = f32[4] reduce(p, z), dimensions={1}, to_apply=add\n ROOT t = (f32[4], f32[4]) tuple(r0, r1) }; reduction_groups f",
        run: reduction_groups,
    },
    Command {
        name: "epilogues",
        usage: "epilogues COMPUTATION [heroes=NAME,...]",
        summary: "the heroes of a fusion (reductions, transposes of the minor-most dimension; `heroes=` adds more), and for each the roots it reaches, the maps from the hero's index to theirs, the epilogue subgraph and its function signature",
        example: "f { p = f32[4,8] parameter(0)\n z = f32[] constant(0)\n r = f32[4] reduce(p, z), dimensions={1}, to_apply=add\n ROOT n = f32[4] negate(r) }; epilogues f",
        run: epilogues,
    },
];

/// Names given as `key=NAME`, `key=(A, B)`, or `key=A, B` (the later comma-separated
/// groups of bare words), resolved in `comp`.
fn name_list(comp: &Computation, a: &Args, key: &str) -> Result<Vec<InstrId>, Diagnostic> {
    let mut words: Vec<(String, Span)> = Vec::new();
    match a.kv(key) {
        None => return Ok(Vec::new()),
        Some(Arg::Word(w, sp)) => words.push((w.clone(), *sp)),
        Some(Arg::Tuple(items, _)) => {
            for it in items {
                match it {
                    Arg::Word(w, sp) => words.push((w.clone(), *sp)),
                    other => {
                        return Err(Diagnostic::at(
                            format!("`{key}=` takes instruction names"),
                            other.span(),
                        ))
                    }
                }
            }
        }
        Some(other) => {
            return Err(Diagnostic::at(
                format!("`{key}=` takes instruction names"),
                other.span(),
            ))
        }
    }
    for g in a.groups().iter().skip(1) {
        for it in &g.items {
            if let Arg::Word(w, sp) = it {
                words.push((w.clone(), *sp));
            }
        }
    }
    words
        .into_iter()
        .map(|(w, sp)| {
            comp.find(&w).ok_or_else(|| {
                let mut d =
                    Diagnostic::at(format!("no instruction named `{w}` in `{}`", comp.name), sp);
                if let Some(x) = suggest(&w, comp.instrs.iter().map(|i| i.name.as_str())) {
                    d = d.with_help(format!("did you mean `{x}`?"));
                }
                d
            })
        })
        .collect()
}

fn epilogues(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let comp = computation_arg(s, a)?;
    let comp = &*flattened(&s.hlo.module, comp);
    let extra = name_list(comp, a, "heroes")?;
    let es = crate::hlo::epilogue::epilogues(comp, &extra);
    Ok(Value::Text(crate::hlo::epilogue::describe(comp, &es)))
}

fn partition(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let comp = computation_arg(s, a)?;
    let comp = &*flattened(&s.hlo.module, comp);
    let extra = name_list(comp, a, "roots")?;
    let p = crate::hlo::partition::partition_with_roots(comp, &extra);
    Ok(Value::Text(crate::hlo::partition::describe(comp, &p)))
}

fn reduction_groups(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let comp = computation_arg(s, a)?;
    let comp = &*flattened(&s.hlo.module, comp);
    let groups = crate::hlo::groups::reduction_groups(comp);
    let names = |ids: &[InstrId]| -> Vec<String> {
        ids.iter().map(|&i| comp.instrs[i].name.clone()).collect()
    };
    Ok(Value::Groups(crate::value::Groups {
        computation: comp.name.clone(),
        groups: groups
            .iter()
            .map(|g| crate::value::Group {
                roots: names(&g.roots),
                shared: names(&g.shared),
            })
            .collect(),
    }))
}

/// `comp` with its nested fusions and calls inlined (borrowed when there are none).
fn flattened<'a>(
    module: &crate::hlo::Module,
    comp: &'a Computation,
) -> std::borrow::Cow<'a, Computation> {
    if crate::hlo::inline::has_nesting(module, comp) {
        std::borrow::Cow::Owned(crate::hlo::inline::flatten(module, comp))
    } else {
        std::borrow::Cow::Borrowed(comp)
    }
}

/// The computation a command names: a computation block, or a fusion instruction's.
fn computation_arg<'a>(s: &'a Session, a: &Args) -> Result<&'a Computation, Diagnostic> {
    let (name, span) = target_name(a)?;
    let comp = match s.hlo.resolve(&name) {
        Some(Target::Computation(c)) => c,
        Some(Target::Instr(c, id)) => {
            let ins = &c.instrs[id];
            match ins
                .attrs
                .calls
                .as_deref()
                .and_then(|n| s.hlo.module.computation(n))
            {
                Some(f) => f,
                None => {
                    return Err(Diagnostic::at(
                        format!("`{name}` is an instruction, not a computation"),
                        span,
                    )
                    .with_help("partition a computation block or a fusion instruction"))
                }
            }
        }
        None => return Err(unknown_hlo(s, &name, span)),
    };
    Ok(comp)
}

fn fuse(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    a.expect_groups(3, "fuse PRODUCER_ARG, PRODUCER_RESULT, CONSUMER_ARG")?;
    let arg = a.map(s, 0)?;
    let result = a.map(s, 1)?;
    let consumer = a.map(s, 2)?;
    let f = crate::hlo::linalg::fuse(&arg, &result, &consumer)
        .map_err(|e| Diagnostic::at(e, a.span()))?;
    Ok(Value::Fused(crate::value::Fused {
        map: f.map,
        how: f.how,
    }))
}

/// Defines HLO text in the session: what was defined, in one line (SPEC §3).
pub fn define(s: &mut Session, h: &HloText) -> Result<Value, Diagnostic> {
    let item = parse_hlo(&h.text, h.span.start)?;
    use crate::hlo::parse::HloItem;
    let module = match &item {
        HloItem::Module { name, .. } => Some(name.clone()),
        _ => None,
    };
    let is_computation = matches!(item, HloItem::Computation(_));
    let names = s.hlo.define(item)?;
    if let (Some(name), false) = (names.last(), module.is_some()) {
        // the text, to show the name later (comments blanked, offsets kept)
        s.hlo_source.insert(
            name.clone(),
            (h.span.start, crate::syntax::blank_comments(&h.text)),
        );
    }
    if let Some(name) = module {
        return Ok(Value::Defined(crate::value::Defined {
            kind: "module",
            name,
            shape: String::new(),
            detail: String::new(),
        }));
    }
    let Some(name) = names.last() else {
        return Ok(Value::None);
    };
    if is_computation {
        if let Some(c) = s.hlo.module.computation(name) {
            let root = &c.instrs[c.root];
            return Ok(Value::Defined(crate::value::Defined {
                kind: "computation",
                name: c.name.clone(),
                shape: root.shape.to_string(),
                detail: format!(
                    "{} instruction{}, root {}",
                    c.instrs.len(),
                    if c.instrs.len() == 1 { "" } else { "s" },
                    root.name
                ),
            }));
        }
    } else if let Some(id) = s.hlo.scratch.find(name) {
        let i = &s.hlo.scratch.instrs[id];
        return Ok(Value::Defined(crate::value::Defined {
            kind: "instruction",
            name: i.name.clone(),
            shape: i.shape.to_string(),
            detail: i.opcode.clone(),
        }));
    }
    Ok(Value::None)
}

fn target_name(a: &Args) -> Result<(String, Span), Diagnostic> {
    match a.items().next() {
        Some(Arg::Word(w, span)) => Ok((w.clone(), *span)),
        Some(other) => Err(Diagnostic::at(
            "expected the name of an instruction or computation",
            other.span(),
        )),
        None => Err(
            Diagnostic::at("`indexing` needs an instruction or computation", a.span())
                .with_help("usage: indexing OP [from K]"),
        ),
    }
}

fn unknown_hlo(s: &Session, name: &str, span: Span) -> Diagnostic {
    let names = s.hlo.names();
    let mut d = Diagnostic::at(
        format!("no instruction or computation named `{name}`"),
        span,
    )
    .with_label("not defined in this session");
    if let Some(x) = suggest(name, names.iter().map(String::as_str)) {
        d = d.with_help(format!("did you mean `{x}`?"));
    }
    d
}

fn section(label: String, index: usize, maps: &MapSet) -> OperandMaps {
    let maps = if maps.iter().any(|m| m.is_undefined()) {
        vec![]
    } else {
        maps.clone()
    };
    OperandMaps {
        label,
        index,
        name: None,
        maps,
    }
}

/// `from K`: the operand number, if given.
fn from_operand(a: &Args) -> Result<Option<(usize, Span)>, Diagnostic> {
    match a.after("from") {
        None if a.flag("from") => Err(Diagnostic::at("`from` needs an operand number", a.span())),
        None => Ok(None),
        Some(Arg::Int(k, span)) if *k >= 0 => Ok(Some((*k as usize, *span))),
        Some(other) => Err(Diagnostic::at(
            "`from` takes an operand number, e.g. `from 0`",
            other.span(),
        )),
    }
}

fn no_such_operand(k: usize, n: usize, what: &str, span: Span) -> Diagnostic {
    Diagnostic::at(
        format!(
            "{what} has {n} operand{}, so there is no operand {k}",
            if n == 1 { "" } else { "s" }
        ),
        span,
    )
}

/// `physical`: every map goes between physical indices (dimensions in the layouts'
/// major-to-minor order) instead of logical ones.
struct Physical(bool);

impl Physical {
    fn apply(&self, maps: MapSet, from: &Shape, to: &Shape) -> MapSet {
        if !self.0 {
            return maps;
        }
        maps.iter().map(|m| ops::to_physical(m, from, to)).collect()
    }
    fn title(&self, t: String) -> String {
        if self.0 {
            format!("{t} (physical indices)")
        } else {
            t
        }
    }
}

fn indexing(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (name, span) = target_name(a)?;
    let from = from_operand(a)?;
    let phys = Physical(a.flag("physical"));
    let Some(target) = s.hlo.resolve(&name) else {
        return Err(unknown_hlo(s, &name, span));
    };
    let module = &s.hlo.module;
    let (comp, fusion_of): (&Computation, Option<(&Computation, InstrId)>) = match target {
        Target::Computation(c) => (c, None),
        Target::Instr(c, id) => match module.fused_computation(&c.instrs[id]) {
            Some(f) => (f, Some((c, id))),
            None => return instr_indexing(c, id, from, &phys),
        },
    };
    let _ = fusion_of;
    let comp = &*flattened(module, comp);
    let n_params = comp.parameters().len();
    let multi = comp.outputs().len() > 1;
    match from {
        None => {
            let fi = fusion::output_to_input(module, comp);
            let mut sections = Vec::new();
            let outs = comp.outputs();
            let params = comp.parameters();
            for (o, per_param) in fi.outputs.iter().enumerate() {
                for (p, maps) in per_param.iter().enumerate() {
                    let maps = &phys.apply(
                        maps.clone(),
                        &comp.instrs[outs[o]].shape,
                        &comp.instrs[params[p]].shape,
                    );
                    let label = if multi {
                        format!("output {o}, operand {p}")
                    } else {
                        format!("operand {p}")
                    };
                    sections.push(section(label, p, maps));
                }
            }
            Ok(Value::Indexing(Indexing {
                notes: comp_clamp_notes(comp),
                title: phys.title(format!("computation {}", comp.name)),
                operands: sections,
            }))
        }
        Some((k, kspan)) => {
            if k >= n_params {
                return Err(no_such_operand(
                    k,
                    n_params,
                    &format!("computation `{}`", comp.name),
                    kspan,
                ));
            }
            let outs = fusion::input_to_output(comp, k);
            let out_ids = comp.outputs();
            let param = &comp.instrs[comp.parameters()[k]].shape;
            let sections = outs
                .iter()
                .enumerate()
                .map(|(o, maps)| {
                    let maps = &phys.apply(maps.clone(), param, &comp.instrs[out_ids[o]].shape);
                    section(
                        if multi {
                            format!("output {o}")
                        } else {
                            "output".into()
                        },
                        o,
                        maps,
                    )
                })
                .collect();
            Ok(Value::Indexing(Indexing {
                notes: comp_clamp_notes(comp),
                title: phys.title(format!("operand {k} of {}", comp.name)),
                operands: sections,
            }))
        }
    }
}

/// Which start indices of the computation's instructions were folded by their op's clamp.
fn comp_clamp_notes(comp: &Computation) -> Vec<String> {
    (0..comp.instrs.len())
        .flat_map(|i| {
            ops::clamp_notes(comp, i)
                .into_iter()
                .map(move |n| format!("{}: {n}", comp.instrs[i].name))
        })
        .collect()
}

fn instr_indexing(
    c: &Computation,
    id: InstrId,
    from: Option<(usize, Span)>,
    phys: &Physical,
) -> Result<Value, Diagnostic> {
    let ins = &c.instrs[id];
    if let (Some((k, kspan)), true) = (from, ins.operands.is_empty()) {
        return Err(no_such_operand(k, 0, &format!("`{}`", ins.name), kspan));
    }
    if ins.operands.is_empty() {
        let mut m = ops::finish(crate::map::IndexingMap::identity(ins.dims()));
        m.results.clear();
        return Ok(Value::NoOperands(crate::value::NoOperands {
            name: ins.name.clone(),
            opcode: ins.opcode.clone(),
            domain: m,
        }));
    }
    match from {
        None => {
            let per = ops::output_to_input(c, id);
            let sections = per
                .iter()
                .enumerate()
                .map(|(k, maps)| {
                    let maps =
                        phys.apply(maps.clone(), &ins.shape, &c.instr(ins.operands[k]).shape);
                    section(format!("operand {k}"), k, &maps)
                })
                .collect();
            Ok(Value::Indexing(Indexing {
                notes: ops::clamp_notes(c, id),
                title: phys.title(format!("output of {}", ins.name)),
                operands: sections,
            }))
        }
        Some((k, kspan)) => {
            if k >= ins.operands.len() {
                return Err(no_such_operand(
                    k,
                    ins.operands.len(),
                    &format!("`{}`", ins.name),
                    kspan,
                ));
            }
            let maps = phys.apply(
                ops::input_to_output(c, id, k),
                &c.instr(ins.operands[k]).shape,
                &ins.shape,
            );
            Ok(Value::Indexing(Indexing {
                notes: ops::clamp_notes(c, id),
                title: phys.title(format!("operand {k} of {}", ins.name)),
                operands: vec![section("output".into(), 0, &maps)],
            }))
        }
    }
}
