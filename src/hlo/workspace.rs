//! The HLO a session has seen: named computations (from blocks and `HloModule` texts) and
//! a scratch computation collecting loose instruction lines. Definitions are checked as
//! they arrive: every operand must exist, and shapes and attributes must fit the op.
//!
//! ```text
//! p0 = f32[4, 8] parameter(0)                 -> scratch: [p0]
//! r  = f32[32] reshape(p0)                    -> scratch: [p0, r]
//! f { p0 = ... ROOT a = ... }                 -> computation f
//! ```

use super::frames::FrameTable;
use super::parse::{HloItem, RawComputation, RawInstr};
use super::{ops, Computation, Instr, InstrId, Module, Shape};
use crate::syntax::{suggest, Diagnostic, Span};
use std::collections::HashMap;

/// What a name refers to.
#[derive(Clone, Copy)]
pub enum Target<'a> {
    Computation(&'a Computation),
    Instr(&'a Computation, InstrId),
}

/// One meaning of an ambiguous name, with the qualified name that means only it.
#[derive(Clone)]
pub struct Meaning<'a> {
    pub qualified: String,
    pub target: Target<'a>,
}

/// The answer of [`Workspace::lookup`].
pub enum Lookup<'a> {
    Found(Target<'a>),
    /// Several instructions have the name: each with the qualified name that means it.
    Ambiguous(Vec<Meaning<'a>>),
    Missing,
}

#[derive(Clone, Debug)]
pub struct Workspace {
    pub module: Module,
    pub scratch: Computation,
    /// The stack-frame table the last statement opened, which rows typed alone extend.
    pub open_table: Option<FrameTable>,
    /// Each computation's depth ([`MAX_DEPTH`]), by name.
    depths: HashMap<String, usize>,
    /// The depth of each instruction of `scratch`, by id.
    scratch_depths: Vec<usize>,
}

/// The longest chain of operands ixmap reads: an instruction at the end of a longer one is
/// an error where it is defined. The analyses and emitters follow operands recursively (a
/// fusion's kernel is one expression of its root), and a chain long enough overflows even
/// the 1 GiB stack they run on (`crate::STACK_BYTES`): measured with a chain of `negate`s
/// in one fusion, `emit` for CUDA aborted at 300,000 and passed at 200,000, `dump` passed at
/// 200,000; a chain of 100,000 must work (`tests/cli.rs`). A fusion or call counts its
/// computation's depth, since the analyses inline it.
pub const MAX_DEPTH: usize = 131_072;

impl Default for Workspace {
    fn default() -> Self {
        Workspace {
            module: Module::default(),
            scratch: Computation {
                name: "(session)".into(),
                instrs: vec![],
                root: 0,
                is_entry: false,
                span: Span::default(),
            },
            open_table: None,
            depths: HashMap::new(),
            scratch_depths: Vec::new(),
        }
    }
}

impl Workspace {
    pub fn new() -> Workspace {
        Workspace::default()
    }

    /// Adds a parsed statement. Returns the names defined.
    pub fn define(&mut self, item: HloItem) -> Result<Vec<String>, Diagnostic> {
        let open = self.open_table.take();
        match item {
            HloItem::Module { name, .. } => {
                self.module.name = name;
                // A new module's tables replace the last one's.
                self.module.frames = Default::default();
                Ok(vec![])
            }
            HloItem::Table { table, rows, .. } => {
                for (id, text, span) in rows {
                    add_row(&mut self.module.frames, table, id, &text, span)?;
                }
                self.open_table = Some(table);
                Ok(vec![])
            }
            HloItem::TableRow { id, text, span } => {
                let Some(table) = open else {
                    return Err(Diagnostic::at(
                        "a stack-frame table row outside a table",
                        span,
                    )
                    .with_help(
                        "rows follow a `FileNames`, `FunctionNames`, `FileLocations` or `StackFrames` line",
                    ));
                };
                add_row(&mut self.module.frames, table, id, &text, span)?;
                self.open_table = Some(table);
                Ok(vec![])
            }
            HloItem::Computation(mut rc) => {
                expand_tuple_refs(&mut rc.instrs, &[]);
                let comp = build_computation(&rc)?;
                check_calls(&self.module, &comp)?;
                let mut depths = Vec::with_capacity(comp.instrs.len());
                for id in 0..comp.instrs.len() {
                    let d = self.depth(&comp, id, &depths);
                    if d > MAX_DEPTH {
                        let ins = &comp.instrs[id];
                        let at = rc
                            .instrs
                            .iter()
                            .find(|r| r.name == ins.name)
                            .map_or(ins.span, |r| r.name_span);
                        return Err(too_deep(&ins.name, d, at));
                    }
                    depths.push(d);
                }
                let name = comp.name.clone();
                self.depths
                    .insert(name.clone(), depths.iter().copied().max().unwrap_or(0));
                self.module.computations.retain(|c| c.name != name);
                self.module.computations.push(comp);
                Ok(vec![name])
            }
            HloItem::Instr(ri) => {
                let mut scratch = self.scratch.clone();
                let mut more = vec![ri];
                let known: Vec<String> = scratch.instrs.iter().map(|i| i.name.clone()).collect();
                expand_tuple_refs(&mut more, &known);
                let ri = more.pop().expect("the instruction itself stays last");
                let mut depths = self.scratch_depths.clone();
                for gte in more {
                    let id = add_instr(&mut scratch, &gte)?;
                    check_instr(&scratch, id, &gte)?;
                    depths.push(self.depth(&scratch, id, &depths));
                }
                let id = add_instr(&mut scratch, &ri)?;
                check_instr(&scratch, id, &ri)?;
                check_call(&self.module, &scratch, id)?;
                let d = self.depth(&scratch, id, &depths);
                if d > MAX_DEPTH {
                    return Err(too_deep(&ri.name, d, ri.name_span));
                }
                depths.push(d);
                scratch.root = id;
                let name = ri.name.clone();
                self.scratch = scratch;
                self.scratch_depths = depths;
                Ok(vec![name])
            }
        }
    }

    /// The depth of instruction `id` of `comp` ([`MAX_DEPTH`]): one more than its deepest
    /// operand's (`depths`, by id, holds those before it), plus the depth of the computation
    /// a fusion or call runs.
    fn depth(&self, comp: &Computation, id: InstrId, depths: &[usize]) -> usize {
        let ins = &comp.instrs[id];
        let operands = ins
            .operands
            .iter()
            .map(|&o| depths.get(o).copied().unwrap_or(0))
            .max()
            .unwrap_or(0);
        let callee = match ins.opcode.as_str() {
            "fusion" | "call" => ins
                .attrs
                .calls
                .as_deref()
                .or(ins.attrs.to_apply.as_deref())
                .and_then(|c| self.depths.get(c.strip_prefix('%').unwrap_or(c)))
                .copied()
                .unwrap_or(0),
            _ => 0,
        };
        operands.saturating_add(1).saturating_add(callee)
    }

    /// What `name` refers to, as [`Workspace::lookup`] finds it; where it is ambiguous, the
    /// most recent meaning (the interpreter reports the ambiguity before a command runs).
    pub fn resolve(&self, name: &str) -> Option<Target<'_>> {
        match self.lookup(name) {
            Lookup::Found(t) => Some(t),
            Lookup::Ambiguous(ms) => ms.into_iter().last().map(|m| m.target),
            Lookup::Missing => None,
        }
    }

    /// What `name` refers to. Names have two scopes: the session's (loose instruction lines
    /// and computations) and each computation's own (its instructions). A loose instruction
    /// or a computation is found by its name; an instruction of a computation by
    /// `COMPUTATION.NAME`, or by `NAME` alone when no loose line or computation has that
    /// name and exactly one computation has such an instruction. XLA's names hold dots
    /// (`add.1`, `param_0.3`): `add.1` is an instruction named so as well as `add`'s `1`,
    /// and both meanings are counted.
    pub fn lookup(&self, name: &str) -> Lookup<'_> {
        let name = name.strip_prefix('%').unwrap_or(name);
        if let Some(id) = self.scratch.find(name) {
            return Lookup::Found(Target::Instr(&self.scratch, id));
        }
        if let Some(c) = self.module.computation(name) {
            return Lookup::Found(Target::Computation(c));
        }
        let mut found: Vec<Meaning<'_>> = Vec::new();
        for c in &self.module.computations {
            if let Some(id) = c.find(name) {
                found.push(Meaning {
                    qualified: format!("{}.{name}", c.name),
                    target: Target::Instr(c, id),
                });
            }
        }
        for (i, _) in name.match_indices('.') {
            let (comp, inner) = (&name[..i], &name[i + 1..]);
            if let Some(c) = self.module.computation(comp) {
                if let Some(id) = c.find(inner) {
                    let same = found.iter().any(|m| {
                        matches!(m.target, Target::Instr(x, j) if std::ptr::eq(x, c) && j == id)
                    });
                    if !same {
                        found.push(Meaning {
                            qualified: name.to_string(),
                            target: Target::Instr(c, id),
                        });
                    }
                }
            }
        }
        match found.len() {
            0 => Lookup::Missing,
            1 => Lookup::Found(found.remove(0).target),
            _ => Lookup::Ambiguous(found),
        }
    }

    /// The names of the session's scope: loose instructions and computations, in the order
    /// they were defined.
    pub fn session_names(&self) -> Vec<(String, Target<'_>)> {
        let mut v: Vec<(String, Target<'_>)> = Vec::new();
        for (id, i) in self.scratch.instrs.iter().enumerate() {
            // a loose name defined again means its last definition (as `find` does)
            if self.scratch.find(&i.name) == Some(id) {
                v.push((i.name.clone(), Target::Instr(&self.scratch, id)));
            }
        }
        for c in &self.module.computations {
            v.push((c.name.clone(), Target::Computation(c)));
        }
        v
    }

    /// Every name that [`Workspace::lookup`] finds unambiguously: the session's names, each
    /// computation's instructions as `COMPUTATION.NAME`, and alone where unambiguous (for
    /// completion).
    pub fn reachable_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.session_names().into_iter().map(|(n, _)| n).collect();
        let session: std::collections::HashSet<String> = v.iter().cloned().collect();
        // in how many computations each bare name is
        let mut count: HashMap<&str, usize> = HashMap::new();
        for c in &self.module.computations {
            let mut seen = std::collections::HashSet::new();
            for i in &c.instrs {
                if seen.insert(i.name.as_str()) {
                    *count.entry(i.name.as_str()).or_default() += 1;
                }
            }
        }
        for c in &self.module.computations {
            for i in &c.instrs {
                v.push(format!("{}.{}", c.name, i.name));
                if count.get(i.name.as_str()) == Some(&1) && !session.contains(&i.name) {
                    v.push(i.name.clone());
                }
            }
        }
        v.sort();
        v.dedup();
        v
    }

    /// Every defined name, for suggestions and completion.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.scratch.instrs.iter().map(|i| i.name.clone()).collect();
        for c in &self.module.computations {
            v.push(c.name.clone());
            v.extend(c.instrs.iter().map(|i| i.name.clone()));
        }
        v
    }
}

/// An instruction past [`MAX_DEPTH`], at its name.
fn too_deep(name: &str, depth: usize, at: Span) -> Diagnostic {
    Diagnostic::at(
        format!(
            "`{name}` is {depth} instructions deep (its longest chain of operands, through the computations fusions and calls run), past ixmap's limit of {MAX_DEPTH}"
        ),
        at,
    )
    .with_label("the chain passes the limit here")
    .with_help("ixmap follows operands recursively, and a longer chain would overflow its stack")
}

fn add_row(
    frames: &mut super::frames::StackFrames,
    table: FrameTable,
    id: u64,
    text: &str,
    span: Span,
) -> Result<(), Diagnostic> {
    frames.add_row(table, id, text).map_err(|(msg, at)| {
        let at = span.start + at.min(text.len());
        Diagnostic::at(msg, Span::new(at, (at + 1).min(span.end.max(at + 1))))
    })
}

/// Operands written `name#k` (element `k` of a tuple-shaped instruction, as XLA prints the
/// users of multi-output fusions) become a `get-tuple-element` instruction of that name,
/// added once before the first instruction that reads it (shape inferred). `known`: names
/// defined outside `instrs` (a session's loose lines) that already hold such an element.
fn expand_tuple_refs(instrs: &mut Vec<RawInstr>, known: &[String]) {
    let mut made: Vec<String> = known.to_vec();
    made.extend(instrs.iter().map(|i| i.name.clone()));
    let mut out = Vec::with_capacity(instrs.len());
    for ri in instrs.drain(..) {
        for o in &ri.operands {
            let Some((base, k)) = o.name.rsplit_once('#') else {
                continue;
            };
            let Ok(index) = k.parse::<i64>() else {
                continue;
            };
            if made.iter().any(|m| m == &o.name) {
                continue;
            }
            made.push(o.name.clone());
            let mut attrs = super::attrs::Attrs::default();
            attrs.index = Some(index);
            out.push(RawInstr {
                name: o.name.clone(),
                name_span: o.span,
                shape: None,
                shape_span: o.span,
                opcode: "get-tuple-element".into(),
                opcode_span: o.span,
                operands: vec![super::parse::RawOperand {
                    name: base.to_string(),
                    span: o.span,
                    shape: None,
                }],
                attrs,
                attr_spans: vec![],
                is_root: false,
                span: o.span,
            });
        }
        out.push(ri);
    }
    *instrs = out;
}

fn unknown_operand(name: &str, span: Span, user: &str, comp: &Computation) -> Diagnostic {
    let known: Vec<&str> = comp.instrs.iter().map(|i| i.name.as_str()).collect();
    let mut d = Diagnostic::at(format!("unknown operand `{name}` of `{user}`"), span).with_label(
        if known.is_empty() {
            "nothing is defined before it".to_string()
        } else {
            "not defined before this instruction".to_string()
        },
    );
    if let Some(s) = suggest(name, known.iter().copied()) {
        d = d.with_help(format!("did you mean `{s}`?"));
    }
    d
}

/// Appends `ri` to `comp`, resolving its operands among the instructions before it.
fn add_instr(comp: &mut Computation, ri: &RawInstr) -> Result<InstrId, Diagnostic> {
    add_instr_indexed(comp, ri, None)
}

fn add_instr_indexed(
    comp: &mut Computation,
    ri: &RawInstr,
    index: Option<&HashMap<String, InstrId>>,
) -> Result<InstrId, Diagnostic> {
    let mut operands = Vec::new();
    for o in &ri.operands {
        let found = match index {
            Some(ix) => ix.get(&o.name).copied(),
            None => comp.find(&o.name),
        };
        let Some(id) = found else {
            return Err(unknown_operand(&o.name, o.span, &ri.name, comp));
        };
        if let Some(s) = &o.shape {
            let have = &comp.instrs[id].shape;
            if s.dims() != have.dims() || s.is_tuple() != have.is_tuple() {
                return Err(Diagnostic::at(
                    format!(
                        "operand `{}` of `{}` is written as {s} but was defined as {have}",
                        o.name, ri.name
                    ),
                    o.span,
                )
                .with_label("shape differs from the definition"));
            }
        }
        operands.push(id);
    }
    let shape = match &ri.shape {
        Some(s) => s.clone(),
        None => infer_shape(comp, ri, &operands)?,
    };
    comp.instrs.push(Instr {
        name: ri.name.clone(),
        shape,
        opcode: ri.opcode.clone(),
        operands,
        attrs: ri.attrs.clone(),
        span: ri.span,
    });
    Ok(comp.instrs.len() - 1)
}

/// The shape of an instruction written without one (`ROOT r = negate(x)`), from its
/// operands: elementwise ops keep their operands' shape (`compare` gives `pred`, `select`
/// its second operand's), `tuple` collects its operands' shapes, `get-tuple-element`
/// picks one. Anything else needs its shape written.
fn infer_shape(
    comp: &Computation,
    ri: &RawInstr,
    operands: &[InstrId],
) -> Result<Shape, Diagnostic> {
    let shape_of = |k: usize| operands.get(k).map(|&id| comp.instrs[id].shape.clone());
    let op = ri.opcode.as_str();
    let need = |why: &str| {
        Diagnostic::at(
            format!("`{}` is written without a shape, and {why}", ri.name),
            ri.opcode_span,
        )
        .with_label("write its shape before the opcode, e.g. `f32[4] negate(x)`")
    };
    let inferred = match op {
        "tuple" => Some(Shape::Tuple(
            (0..operands.len()).filter_map(shape_of).collect(),
        )),
        "get-tuple-element" => {
            let t = shape_of(0);
            let k = ri.attrs.index.unwrap_or(-1);
            match t {
                Some(Shape::Tuple(v)) if k >= 0 && (k as usize) < v.len() => {
                    Some(v[k as usize].clone())
                }
                _ => return Err(need("its operand is not a tuple with that index")),
            }
        }
        // The result type differs from the operands' (or needs more than them).
        "convert" | "bitcast-convert" | "complex" | "real" | "imag" | "reduce-precision"
        | "map" => None,
        _ if ops::elementwise::OPCODES.contains(&op) => {
            let first_array = |k: usize| shape_of(k).filter(|s| !s.dims().is_empty());
            let base = if op == "select" {
                shape_of(1)
            } else {
                // Clamp's bounds may be scalars: the widest operand gives the shape.
                (0..operands.len())
                    .find_map(first_array)
                    .or_else(|| shape_of(0))
            };
            match (op, base) {
                ("compare" | "is-finite", Some(s)) => Some(Shape::array("pred", s.dims())),
                (_, b) => b,
            }
        }
        _ => None,
    };
    inferred.ok_or_else(|| {
        need(&format!(
            "ixmap infers shapes only for elementwise ops whose result type is their operands', `tuple` and `get-tuple-element`, not `{op}`"
        ))
    })
}

fn check_instr(comp: &Computation, id: InstrId, ri: &RawInstr) -> Result<(), Diagnostic> {
    ops::check(comp, id).map_err(|msg| {
        // A message that starts by quoting an attribute (`` `key=value`: ..``) points at it.
        let attr = msg
            .strip_prefix('`')
            .and_then(|m| m.split_once('='))
            .and_then(|(key, _)| ri.attr_spans.iter().find(|(k, _)| k == key));
        let (span, label) = match attr {
            Some((_, span)) => (*span, "this attribute"),
            None => (ri.opcode_span, "this instruction"),
        };
        Diagnostic::at(format!("`{}` ({}): {msg}", ri.name, ri.opcode), span).with_label(label)
    })
}

/// Shapes equal but for their layouts (a fusion's operand may be laid out otherwise than
/// the parameter it feeds: the layouts are the caller's business).
fn same_but_layout(a: &Shape, b: &Shape) -> bool {
    match (a, b) {
        (
            Shape::Array { elem, dims, .. },
            Shape::Array {
                elem: e2, dims: d2, ..
            },
        ) => elem == e2 && dims == d2,
        (Shape::Tuple(x), Shape::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_but_layout(a, b))
        }
        (Shape::Token, Shape::Token) => true,
        _ => false,
    }
}

/// Each `fusion`/`call` of `comp` against the computation it calls, where the module has
/// it: one operand for each parameter, of its shape, and the result the root's shape
/// (XLA's semantics of a call; a mismatch was taken, and its kernel wrote the callee's
/// shape into the caller's buffer).
fn check_calls(module: &Module, comp: &Computation) -> Result<(), Diagnostic> {
    (0..comp.instrs.len()).try_for_each(|id| check_call(module, comp, id))
}

fn check_call(module: &Module, comp: &Computation, id: InstrId) -> Result<(), Diagnostic> {
    let ins = &comp.instrs[id];
    if !matches!(ins.opcode.as_str(), "fusion" | "call") {
        return Ok(());
    }
    let err = |msg: String| {
        Diagnostic::at(format!("`{}` ({}): {msg}", ins.name, ins.opcode), ins.span)
            .with_label("this instruction")
    };
    let Some(name) = ins.attrs.calls.as_deref().or(ins.attrs.to_apply.as_deref()) else {
        return Ok(());
    };
    // HLO has no recursion (XLA's verifier refuses a call graph with a cycle): a callee
    // that calls this computation again, directly or through others, is a cycle.
    if name == comp.name || calls_reach(module, name, &comp.name) {
        return Err(err(format!(
            "`{}` calls `{name}`{}, a cycle: HLO computations cannot call themselves",
            comp.name,
            if name == comp.name {
                String::new()
            } else {
                format!(", which calls `{}` again", comp.name)
            }
        )));
    }
    let Some(callee) = module.computation(name) else {
        return Ok(());
    };
    let params = callee.parameters();
    if params.len() != ins.operands.len() {
        return Err(err(format!(
            "it passes {} operand{} to `{}`, which has {} parameter{}",
            ins.operands.len(),
            if ins.operands.len() == 1 { "" } else { "s" },
            callee.name,
            params.len(),
            if params.len() == 1 { "" } else { "s" }
        )));
    }
    for (k, (&o, &p)) in ins.operands.iter().zip(&params).enumerate() {
        let (have, want) = (&comp.instrs[o].shape, &callee.instrs[p].shape);
        if !same_but_layout(have, want) {
            return Err(err(format!(
                "operand {k} (`{}`) is {have}, but parameter {k} of `{}` (`{}`) is {want}",
                comp.instrs[o].name, callee.name, callee.instrs[p].name
            )));
        }
    }
    let root = &callee.instrs[callee.root].shape;
    if !same_but_layout(&ins.shape, root) {
        return Err(err(format!(
            "it is {}, but `{}` returns {root}",
            ins.shape, callee.name
        )));
    }
    Ok(())
}

/// Whether computation `from` calls `target`, directly or through the computations it
/// calls (fusions' and calls' `calls`, and `to_apply`).
fn calls_reach(module: &Module, from: &str, target: &str) -> bool {
    let mut seen: Vec<&str> = vec![];
    let mut stack = vec![from];
    while let Some(name) = stack.pop() {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        let Some(c) = module.computation(name) else {
            continue;
        };
        for ins in &c.instrs {
            for callee in [ins.attrs.calls.as_deref(), ins.attrs.to_apply.as_deref()]
                .into_iter()
                .flatten()
            {
                if callee == target {
                    return true;
                }
                stack.push(callee);
            }
        }
    }
    false
}

/// The parameter numbers of a computation's block: each once, from 0 up without a gap
/// (XLA's parser refuses a repeated number, and its verifier a gap).
fn check_parameter_numbers(rc: &RawComputation, comp: &Computation) -> Result<(), Diagnostic> {
    let mut seen: HashMap<i64, &str> = HashMap::new();
    let params: Vec<&Instr> = comp
        .instrs
        .iter()
        .filter(|i| i.opcode == "parameter")
        .collect();
    for ins in &params {
        let Some(k) = ins.attrs.parameter_number else {
            continue;
        };
        let at = rc
            .instrs
            .iter()
            .find(|r| r.name == ins.name)
            .map_or(ins.span, |r| r.opcode_span);
        if let Some(first) = seen.insert(k, &ins.name) {
            return Err(Diagnostic::at(
                format!(
                    "`{}` is parameter({k}) of `{}`, as `{first}` is: each parameter number once",
                    ins.name, comp.name
                ),
                at,
            ));
        }
        if k < 0 || k as usize >= params.len() {
            return Err(Diagnostic::at(
                format!(
                    "`{}` is parameter({k}), but `{}` has {} parameter{}: they are numbered from 0 to {}",
                    ins.name,
                    comp.name,
                    params.len(),
                    if params.len() == 1 { "" } else { "s" },
                    params.len() - 1
                ),
                at,
            ));
        }
    }
    Ok(())
}

/// A computation from its parsed block; operands may only refer to earlier instructions.
pub fn build_computation(rc: &RawComputation) -> Result<Computation, Diagnostic> {
    let mut comp = Computation {
        name: rc.name.clone(),
        instrs: vec![],
        root: 0,
        is_entry: rc.is_entry,
        span: rc.span,
    };
    if rc.instrs.is_empty() {
        return Err(Diagnostic::at(
            format!("computation `{}` has no instructions", rc.name),
            rc.name_span,
        ));
    }
    // Operands may be defined later in the block (XLA prints in post order, but hand-written
    // blocks need not be): resolve against the whole block.
    let order = definition_order(rc)?;
    let mut root = None;
    let mut ids = vec![0; rc.instrs.len()];
    let mut by_name: HashMap<String, InstrId> = HashMap::new();
    for &k in &order {
        let ri = &rc.instrs[k];
        let id = add_instr_indexed(&mut comp, ri, Some(&by_name))?;
        by_name.insert(ri.name.clone(), id);
        ids[k] = id;
        if ri.is_root {
            if root.is_some() {
                return Err(Diagnostic::at(
                    format!("computation `{}` has two ROOT instructions", rc.name),
                    ri.name_span,
                ));
            }
            root = Some(id);
        }
    }
    for &k in &order {
        check_instr(&comp, ids[k], &rc.instrs[k])?;
    }
    check_parameter_numbers(rc, &comp)?;
    comp.root = root.unwrap_or(ids[rc.instrs.len() - 1]);
    Ok(comp)
}

/// The block's instructions ordered so that operands come first; errors on unknown
/// operands and cycles.
fn definition_order(rc: &RawComputation) -> Result<Vec<usize>, Diagnostic> {
    let n = rc.instrs.len();
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (k, i) in rc.instrs.iter().enumerate() {
        // One instruction a name in a computation (XLA's rule): with two, every use of the
        // name is ambiguous.
        if let Some(&first) = names.get(i.name.as_str()) {
            return Err(Diagnostic::at(
                format!("`{}` is defined twice in computation `{}`", i.name, rc.name),
                i.name_span,
            )
            .with_label("defined again here")
            .with_help_at(
                "the first definition is at {at}; give this one another name",
                rc.instrs[first].name_span.start,
            ));
        }
        names.insert(i.name.as_str(), k);
    }
    let index = |name: &str| names.get(name).copied();
    for ri in &rc.instrs {
        for o in &ri.operands {
            if index(&o.name).is_none() {
                let known: Vec<&str> = rc.instrs.iter().map(|i| i.name.as_str()).collect();
                let mut d = Diagnostic::at(
                    format!("unknown operand `{}` of `{}`", o.name, ri.name),
                    o.span,
                )
                .with_label(format!("not defined in computation `{}`", rc.name));
                if let Some(s) = suggest(&o.name, known) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                return Err(d);
            }
        }
    }
    let mut state = vec![0u8; n];
    let mut order = Vec::new();
    for start in 0..n {
        let mut stack = vec![(start, 0usize)];
        while let Some((v, i)) = stack.pop() {
            if i == 0 {
                if state[v] == 2 {
                    continue;
                }
                state[v] = 1;
            }
            let ops = &rc.instrs[v].operands;
            if i < ops.len() {
                stack.push((v, i + 1));
                let w = index(&ops[i].name).unwrap_or(v);
                match state[w] {
                    0 => stack.push((w, 0)),
                    1 => {
                        return Err(Diagnostic::at(
                            format!("`{}` depends on itself", rc.instrs[w].name),
                            rc.instrs[w].name_span,
                        ))
                    }
                    _ => {}
                }
            } else {
                state[v] = 2;
                order.push(v);
            }
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(blocks: &[&str]) -> Workspace {
        let mut w = Workspace::new();
        for b in blocks {
            let item = super::super::parse::parse_hlo(b, 0).expect("parses");
            w.define(item).expect("defines");
        }
        w
    }

    fn found(w: &Workspace, name: &str) -> Option<String> {
        match w.lookup(name) {
            Lookup::Found(Target::Instr(c, id)) => {
                Some(format!("{}.{}", c.name, c.instrs[id].name))
            }
            Lookup::Found(Target::Computation(c)) => Some(c.name.clone()),
            _ => None,
        }
    }

    #[test]
    fn names_are_scoped_by_computation() {
        let w = ws(&[
            "add { x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y) }",
            "f { p0 = f32[4] parameter(0)\n add.1 = f32[4] add(p0, p0)\n ROOT n = f32[4] negate(add.1) }",
            "g { p0 = f32[4] parameter(0)\n ROOT e = f32[4] exponential(p0) }",
        ]);
        // a dotted XLA name is found as it is; `COMPUTATION.NAME` as the computation's
        assert_eq!(found(&w, "add.1").as_deref(), Some("f.add.1"));
        assert_eq!(found(&w, "f.add.1").as_deref(), Some("f.add.1"));
        assert_eq!(found(&w, "add.s").as_deref(), Some("add.s"));
        assert_eq!(found(&w, "%g.p0").as_deref(), Some("g.p0"));
        assert_eq!(found(&w, "add").as_deref(), Some("add"));
        assert_eq!(found(&w, "n").as_deref(), Some("f.n"));
        // `p0` is in two computations: both meanings, each by the name that tells it apart
        let Lookup::Ambiguous(ms) = w.lookup("p0") else {
            panic!("p0 is ambiguous")
        };
        let q: Vec<&str> = ms.iter().map(|m| m.qualified.as_str()).collect();
        assert_eq!(q, ["f.p0", "g.p0"]);
        assert!(matches!(w.lookup("h.p0"), Lookup::Missing));
        // what completion offers: session names, qualified names, bare where unambiguous
        let r = w.reachable_names();
        for n in [
            "add", "f", "g", "f.p0", "g.p0", "n", "e", "add.1", "f.add.1",
        ] {
            assert!(r.iter().any(|x| x == n), "{n} not in {r:?}");
        }
        assert!(!r.iter().any(|x| x == "p0"), "{r:?}");
        // `resolve` (for callers that do not report ambiguity) keeps the most recent
        assert!(matches!(w.resolve("p0"), Some(Target::Instr(c, _)) if c.name == "g"));
    }
}
