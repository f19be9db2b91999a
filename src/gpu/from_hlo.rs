//! The adapter from the HLO model to a [`KernelSpec`]: a fused computation (or one
//! instruction) becomes inputs (its parameters, or the instruction's operands), an output
//! (the root), and functions, one per partition.
//!
//! Partitioning follows seed 003's criterion in its safe form: an instruction is emitted
//! with its user when it has one user; an instruction with several users, and the operand
//! of a reduction, become functions of their own, called at the index each user needs.
//! Index-only ops (broadcast, reshape, transpose, bitcast, slice, reverse, copy, ...) are
//! folded into the maps: a load carries the composition of every map between the function's
//! index and the parameter.
//!
//! ```text
//! fused {                                  function 0 (d0, d1): add(
//!   p0 = f32[64,32] parameter(0)             load p0 (d0, d1) -> (d0 floordiv 2, d0 mod 2, d1)
//!   r  = f32[128,32] reshape(p0')  ...       load p1 (d0, d1) -> (d1))
//! ```

use super::spec::{
    BinOp, Body, CmpDir, ElemType, Function, KernelSpec, MoreOutput, Root, Tensor, UnOp,
};
use crate::hlo::{ops, Computation, Instr, InstrId, Module, Shape};
use crate::map::{compose, IndexingMap};
use crate::simplify::{simplify, SimplifyLimits};

fn tensor(name: &str, shape: &Shape) -> Result<Tensor, String> {
    if shape.is_tuple() {
        return Err(format!(
            "`{name}` has a tuple shape; only arrays are emitted"
        ));
    }
    let elem = ElemType::from_hlo(shape.elem()).ok_or_else(|| {
        format!(
            "`{name}` has element type {}; kernels are emitted for pred, s8-s64, u8-u64, f16, bf16, f32 and f64 (complex element types are not supported)",
            shape.elem()
        )
    })?;
    Ok(Tensor {
        name: name.to_string(),
        elem,
        dims: shape.dims().to_vec(),
        minor_to_major: shape.minor_to_major(),
    })
}

/// Opcodes that only move elements: their output → input map says everything.
const INDEX_ONLY: &[&str] = &[
    "broadcast",
    "reshape",
    "transpose",
    "bitcast",
    "slice",
    "reverse",
    "copy",
];

fn parse_literal(lit: &str) -> Option<f64> {
    let t = lit
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim();
    match t {
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        "true" => Some(1.0),
        "false" => Some(0.0),
        _ => t.parse::<f64>().ok(),
    }
}

struct Builder<'a> {
    module: &'a Module,
    comp: &'a Computation,
    users: Vec<Vec<InstrId>>,
    /// The input number of each instruction read as an input (parameters, or the operands of
    /// a lone instruction).
    input_of: Vec<Option<usize>>,
    /// The function rooted at each instruction, once made.
    func_of: Vec<Option<usize>>,
    functions: Vec<Function>,
    /// The functions a variadic reduction folds (its operands'), by the reduction: every
    /// output `#k` of one reduction reads the same functions, so the emitters can tell the
    /// outputs of one reduction apart from distinct reductions and fold it once.
    variadic_funcs: Vec<(InstrId, Vec<usize>)>,
}

impl<'a> Builder<'a> {
    /// Whether instruction `id` gets a function of its own: it is read more than once,
    /// by several users or several times by one (`add(x, x)`). Counting the reads, not
    /// the distinct users, keeps every body a tree over a DAG of functions: a chain of
    /// `n_i = add(n_{i-1}, n_{i-1})` inlined would be 2^depth nodes.
    fn is_partition_root(&self, id: InstrId) -> bool {
        self.users[id].len() > 1
            && self.input_of[id].is_none()
            && self.comp.instrs[id].opcode != "constant"
    }

    /// The function computing instruction `id` at its own index.
    fn function(&mut self, id: InstrId) -> Result<usize, String> {
        if let Some(f) = self.func_of[id] {
            return Ok(f);
        }
        let k = self.functions.len();
        let ins = &self.comp.instrs[id];
        self.functions.push(Function {
            name: ins.name.clone(),
            dims: ins.dims().to_vec(),
            body: Body::Const(0.0),
        });
        self.func_of[id] = Some(k);
        let body = self.body(id, &IndexingMap::identity(ins.dims()), true)?;
        self.functions[k].body = body;
        Ok(k)
    }

    fn op_map(&self, id: InstrId, k: usize) -> Result<IndexingMap, String> {
        let ins = &self.comp.instrs[id];
        let maps = ops::output_to_input(self.comp, id);
        let m = maps
            .get(k)
            .and_then(|s| if s.len() == 1 { s.first() } else { None })
            .ok_or_else(|| {
                format!(
                    "`{}` ({}) reads operand {k} through several maps",
                    ins.name, ins.opcode
                )
            })?;
        if m.is_undefined() {
            return Err(format!(
                "the indexing of `{}` ({}) is UNDEFINED, so it cannot be emitted",
                ins.name, ins.opcode
            ));
        }
        Ok(m.clone())
    }

    fn then(map: &IndexingMap, op: &IndexingMap) -> Result<IndexingMap, String> {
        let m = compose(map, op).map_err(|e| e.to_string())?;
        Ok(simplify(&m, &SimplifyLimits::default()).map)
    }

    /// Most elements of an array constant emitted in a kernel (as a chain of selects on its
    /// linear index).
    const MAX_CONSTANT_ELEMENTS: usize = 64;

    /// A small array constant at `map(index)`: its element at the linear index, as a chain
    /// `lin == 0 ? v0 : lin == 1 ? v1 : ...` (the last element where no earlier one
    /// matched: the index is in bounds). Values must be exact in f64 as scalar constants.
    fn array_constant(&self, ins: &Instr, map: &IndexingMap) -> Result<Body, String> {
        let lit = ins.attrs.literal.as_deref().unwrap_or("");
        let elem = ElemType::from_hlo(ins.shape.elem()).ok_or_else(|| {
            format!(
                "`{}` has element type {}, which is not emitted",
                ins.name,
                ins.shape.elem()
            )
        })?;
        let words: Vec<&str> = lit
            .split(|c: char| c == '{' || c == '}' || c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .collect();
        let n = ins.shape.num_elements().unwrap_or(i64::MAX);
        if words.is_empty() || words.len() as i64 != n || words.len() > Self::MAX_CONSTANT_ELEMENTS
        {
            return Err(format!(
                "`{}`: array constants of at most {} elements, written out, are emitted",
                ins.name,
                Self::MAX_CONSTANT_ELEMENTS
            ));
        }
        let mut values = Vec::with_capacity(words.len());
        for w in &words {
            let v = parse_literal(w)
                .ok_or_else(|| format!("`{}`: the element `{w}` is not read", ins.name))?;
            if elem.is_int() && !w.parse::<i128>().is_ok_and(|i| v as i128 == i) {
                return Err(format!(
                    "`{}`: the integer constant {w} is not emitted (constants must be exact in f64, |c| <= 2^53)",
                    ins.name
                ));
            }
            values.push(v);
        }
        // The linear (row-major) index of the element the map reads.
        let dims = ins.dims();
        let mut lin = crate::expr::Expr::constant(0);
        for (k, &r) in map.results.iter().enumerate() {
            lin = lin.mul(crate::expr::Expr::constant(dims[k])).add(r);
        }
        let mut m = map.clone();
        m.results = vec![crate::expr::canonical(lin)];
        m.is_simplified = false;
        let index = Body::Index { map: m };
        let value = |v: f64| Body::Convert(elem, Box::new(Body::Const(v)));
        let last = values.len() - 1;
        let mut body = value(values[last]);
        for k in (0..last).rev() {
            let at = Body::Compare(
                CmpDir::Eq,
                Box::new(index.clone()),
                Box::new(Body::Convert(
                    ElemType::S64,
                    Box::new(Body::Const(k as f64)),
                )),
            );
            body = Body::Select(Box::new(at), Box::new(value(values[k])), Box::new(body));
        }
        Ok(body)
    }

    /// Instruction `id` at `map(index)`; `own` when `id` is the function being built.
    fn body(&mut self, id: InstrId, map: &IndexingMap, own: bool) -> Result<Body, String> {
        if let Some(input) = self.input_of[id] {
            return Ok(Body::Load {
                input,
                map: map.clone(),
            });
        }
        if !own && self.is_partition_root(id) {
            let func = self.function(id)?;
            return Ok(Body::Call {
                func,
                map: map.clone(),
            });
        }
        let ins: &Instr = &self.comp.instrs[id];
        let op = ins.opcode.as_str();
        if op == "constant" {
            let lit = ins.attrs.literal.as_deref().unwrap_or("");
            if !ins.dims().is_empty() {
                return self.array_constant(ins, map);
            }
            let v = parse_literal(lit)
                .ok_or_else(|| format!("`{}`: the constant `{lit}` is not read", ins.name))?;
            let elem = ElemType::from_hlo(ins.shape.elem()).ok_or_else(|| {
                format!(
                    "`{}` has element type {}, which is not emitted",
                    ins.name,
                    ins.shape.elem()
                )
            })?;
            // Constants are carried as f64: an integer that f64 does not hold exactly would
            // silently change.
            if elem.is_int() {
                let t = lit
                    .trim()
                    .trim_start_matches('{')
                    .trim_end_matches('}')
                    .trim();
                let exact = t.parse::<i128>().ok().is_some_and(|i| v as i128 == i);
                if !exact {
                    return Err(format!(
                        "`{}`: the integer constant {t} is not emitted (constants must be exact in f64, |c| <= 2^53)",
                        ins.name
                    ));
                }
            }
            return Ok(Body::Convert(elem, Box::new(Body::Const(v))));
        }
        if op == "convert" && ins.operands.len() == 1 {
            let elem = ElemType::from_hlo(ins.shape.elem()).ok_or_else(|| {
                format!(
                    "`{}` converts to {}, which is not emitted",
                    ins.name,
                    ins.shape.elem()
                )
            })?;
            let m = Self::then(map, &self.op_map(id, 0)?)?;
            let x = self.body(ins.operands[0], &m, false)?;
            return Ok(Body::Convert(elem, Box::new(x)));
        }
        if op == "compare" && ins.operands.len() == 2 {
            let dir = ins
                .attrs
                .other("direction")
                .and_then(CmpDir::from_hlo)
                .ok_or_else(|| {
                    format!(
                        "`{}`: compare needs direction=EQ, NE, LT, LE, GT or GE",
                        ins.name
                    )
                })?;
            let m0 = Self::then(map, &self.op_map(id, 0)?)?;
            let m1 = Self::then(map, &self.op_map(id, 1)?)?;
            let x = self.body(ins.operands[0], &m0, false)?;
            let y = self.body(ins.operands[1], &m1, false)?;
            return Ok(Body::Compare(dir, Box::new(x), Box::new(y)));
        }
        if op == "select" && ins.operands.len() == 3 {
            let mut parts = Vec::new();
            for k in 0..3 {
                let m = Self::then(map, &self.op_map(id, k)?)?;
                parts.push(self.body(ins.operands[k], &m, false)?);
            }
            let (c, a, b) = (parts.remove(0), parts.remove(0), parts.remove(0));
            return Ok(Body::Select(Box::new(c), Box::new(a), Box::new(b)));
        }
        let unary = match op {
            "bitcast-convert" => ElemType::from_hlo(ins.shape.elem()).map(UnOp::BitcastConvert),
            _ => UnOp::from_hlo(op),
        };
        if let (Some(u), [a0]) = (unary, ins.operands.as_slice()) {
            let t = self.elem_of_id(*a0)?;
            u.check(t).map_err(|e| format!("`{}`: {e}", ins.name))?;
            let m = Self::then(map, &self.op_map(id, 0)?)?;
            return Ok(Body::Unary(u, Box::new(self.body(*a0, &m, false)?)));
        }
        if op == "clamp" && ins.operands.len() == 3 {
            // clamp(lo, x, hi) = min(max(x, lo), hi), with max and min's NaN semantics.
            let mut parts = Vec::new();
            for k in 0..3 {
                let m = Self::then(map, &self.op_map(id, k)?)?;
                parts.push(self.body(ins.operands[k], &m, false)?);
            }
            let (lo, x, hi) = (parts.remove(0), parts.remove(0), parts.remove(0));
            let max = Body::Binary(BinOp::Max, Box::new(x), Box::new(lo));
            return Ok(Body::Binary(BinOp::Min, Box::new(max), Box::new(hi)));
        }
        // `real` of a real number is the number, `imag` of it 0 (XLA's semantics define both
        // on floats); on complex types they are refused below.
        if let ("real" | "imag", [a0]) = (op, ins.operands.as_slice()) {
            let t = self.elem_of_id(*a0)?;
            if t.is_float() {
                if op == "imag" {
                    return Ok(Body::Convert(t, Box::new(Body::Const(0.0))));
                }
                let m = Self::then(map, &self.op_map(id, 0)?)?;
                return self.body(*a0, &m, false);
            }
        }
        if let Some(why) = elementwise_refusal(op) {
            return Err(format!("`{}`: {why}", ins.name));
        }
        if let (Some(b), [a0, a1]) = (BinOp::from_hlo(op), ins.operands.as_slice()) {
            let (a0, a1) = (*a0, *a1);
            let t = self.elem_of_id(a0)?;
            b.check(t).map_err(|e| format!("`{}`: {e}", ins.name))?;
            let m0 = Self::then(map, &self.op_map(id, 0)?)?;
            let m1 = Self::then(map, &self.op_map(id, 1)?)?;
            let x = self.body(a0, &m0, false)?;
            let y = self.body(a1, &m1, false)?;
            return Ok(Body::Binary(b, Box::new(x), Box::new(y)));
        }
        if INDEX_ONLY.contains(&op) && ins.operands.len() == 1 {
            let m = Self::then(map, &self.op_map(id, 0)?)?;
            return self.body(ins.operands[0], &m, false);
        }
        if op == "reduce" && ins.operands.len() == 2 {
            let red = self.reducer(ins)?;
            let m = Self::then(map, &self.op_map(id, 0)?)?;
            let func = self.operand_function(ins.operands[0])?;
            return self.reduction(ins, red, func, m, map);
        }
        self.shape_op(id, map)
    }

    /// The element type of instruction `id`'s value.
    fn elem_of_id(&self, id: InstrId) -> Result<ElemType, String> {
        self.elem_of(&self.comp.instrs[id])
    }

    /// The binary op a reduction applies, from its `to_apply` computation.
    fn reducer(&self, ins: &Instr) -> Result<BinOp, String> {
        let name = ins
            .attrs
            .to_apply
            .as_deref()
            .ok_or_else(|| format!("`{}` has no to_apply", ins.name))?;
        let c = self
            .module
            .computation(name)
            .ok_or_else(|| format!("no computation `{name}` (to_apply of `{}`)", ins.name))?;
        reducer_op(c).ok_or_else(|| {
            let root = &c.instrs[c.root];
            let args: Vec<&str> = root
                .operands
                .iter()
                .map(|&o| c.instrs[o].name.as_str())
                .collect();
            format!(
                "the reducer `{name}` computes {}({}); a reducer that applies one op to its two parameters (add, multiply, maximum, minimum, ...), or computes it in f32 between converts of 16-bit floats, is emitted",
                root.opcode,
                args.join(", ")
            )
        })
    }
}

/// The op a scalar reducer computation applies to its accumulator and value: its root is
/// `op(p0, p1)` on its two parameters (`op(p1, p0)` too for a commutative op), or a 16-bit
/// float's `convert(op(convert(p0), convert(p1)))` through f32, which is that op on the
/// 16-bit type as the kernels compute it (in f32, rounded once to the type). Anything else
/// (`add(p0, p0)`, `subtract(p1, p0)`, `add(p0, negate(p1))`) is no such op: the reducer
/// was once recognised by its root's opcode alone, and `add(a, a)` was emitted as a sum.
fn reducer_op(c: &Computation) -> Option<BinOp> {
    let params = c.parameters();
    let [p0, p1] = params[..] else {
        return None;
    };
    let is = |id: InstrId, opcode: &str| c.instrs[id].opcode == opcode;
    // `op(a, b)` on exactly the two parameters, the accumulator first unless commutative
    let on_params = |id: InstrId, a: InstrId, b: InstrId| -> Option<BinOp> {
        let ins = &c.instrs[id];
        let op = BinOp::from_hlo(&ins.opcode)?;
        let commutative = matches!(
            op,
            BinOp::Add | BinOp::Mul | BinOp::Max | BinOp::Min | BinOp::And | BinOp::Or | BinOp::Xor
        );
        match ins.operands[..] {
            [x, y] if x == a && y == b => Some(op),
            [x, y] if commutative && x == b && y == a => Some(op),
            _ => None,
        }
    };
    if let Some(op) = on_params(c.root, p0, p1) {
        return Some(op);
    }
    // convert(op(convert(p0), convert(p1))): 16-bit floats added in f32
    let root = &c.instrs[c.root];
    let narrow = c.instrs[p0].shape.elem();
    if !is(c.root, "convert")
        || !matches!(narrow, "bf16" | "f16")
        || root.shape.elem() != narrow
        || c.instrs[p1].shape.elem() != narrow
    {
        return None;
    }
    let inner = *root.operands.first()?;
    if c.instrs[inner].shape.elem() != "f32" {
        return None;
    }
    let widened = |p: InstrId| {
        c.instrs
            .iter()
            .position(|i| i.opcode == "convert" && i.operands == [p] && i.shape.elem() == "f32")
    };
    let (w0, w1) = (widened(p0)?, widened(p1)?);
    on_params(inner, w0, w1)
        .filter(|op| matches!(op, BinOp::Add | BinOp::Mul | BinOp::Max | BinOp::Min))
}

/// Why an elementwise op of XLA's that has no emitter is refused.
fn elementwise_refusal(op: &str) -> Option<&'static str> {
    Some(match op {
        "complex" | "real" | "imag" => {
            "complex element types (c64, c128) are not supported, so complex, real and imag are not emitted"
        }
        "stochastic-convert" => {
            "stochastic-convert is not emitted: how its rounding uses the random bits is not specified by XLA's operation semantics"
        }
        "reduce-precision" => "reduce-precision has no emitter yet",
        "map" => "map (an elementwise call of a computation) has no emitter yet",
        _ => return None,
    })
}

/// The spec of a fused computation: its parameters are the inputs, its root the output.
pub fn from_computation(module: &Module, comp: &Computation) -> Result<KernelSpec, String> {
    let params = comp.parameters();
    let mut input_of = vec![None; comp.instrs.len()];
    let mut inputs = Vec::new();
    for (k, &p) in params.iter().enumerate() {
        input_of[p] = Some(k);
        inputs.push(tensor(&comp.instrs[p].name, &comp.instrs[p].shape)?);
    }
    build(module, comp, comp.root, inputs, input_of)
}

/// The spec of one instruction of a computation: its operands are the inputs.
pub fn from_instr(module: &Module, comp: &Computation, id: InstrId) -> Result<KernelSpec, String> {
    let ins = &comp.instrs[id];
    let mut input_of = vec![None; comp.instrs.len()];
    let mut inputs = Vec::new();
    for &o in &ins.operands {
        if input_of[o].is_none() && comp.instrs[o].opcode != "constant" {
            input_of[o] = Some(inputs.len());
            inputs.push(tensor(&comp.instrs[o].name, &comp.instrs[o].shape)?);
        }
    }
    build(module, comp, id, inputs, input_of)
}

fn build(
    module: &Module,
    comp: &Computation,
    root: InstrId,
    inputs: Vec<Tensor>,
    input_of: Vec<Option<usize>>,
) -> Result<KernelSpec, String> {
    let r = &comp.instrs[root];
    if matches!(
        r.opcode.as_str(),
        "tuple" | "concatenate" | "dynamic-update-slice" | "scatter"
    ) {
        return build_root(module, comp, root, inputs, input_of);
    }
    if matches!(r.opcode.as_str(), "reduce" | "reduce-window") && r.shape.is_tuple() {
        return build_variadic(module, comp, root, inputs, input_of);
    }
    let output = tensor(&r.name, &r.shape)?;
    let mut b = Builder {
        module,
        comp,
        users: comp.users(),
        input_of,
        func_of: vec![None; comp.instrs.len()],
        functions: Vec::new(),
        variadic_funcs: Vec::new(),
    };
    b.function(root)?;
    Ok(KernelSpec {
        name: comp_label(comp, root),
        more_outputs: vec![],
        root: crate::gpu::spec::Root::Elementwise,
        inputs,
        output,
        functions: b.functions,
        xla_tile: None,
    })
}

/// A variadic reduction at the root: one output per reduced value, all of one shape,
/// written at the same index; function `k` computes output `k`.
fn build_variadic(
    module: &Module,
    comp: &Computation,
    root: InstrId,
    inputs: Vec<Tensor>,
    input_of: Vec<Option<usize>>,
) -> Result<KernelSpec, String> {
    let r = &comp.instrs[root];
    let parts = r.shape.tuple_elements();
    let mut b = Builder {
        module,
        comp,
        users: comp.users(),
        input_of,
        func_of: vec![None; comp.instrs.len()],
        functions: Vec::new(),
        variadic_funcs: Vec::new(),
    };
    let mut tensors = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        let t = tensor(&format!("{}#{k}", r.name), p)?;
        if t.dims != r.dims() {
            return Err(format!(
                "`{}`: the outputs of a variadic reduction have one shape",
                r.name
            ));
        }
        tensors.push(t);
        b.functions.push(Function {
            name: format!("{}#{k}", r.name),
            dims: r.dims().to_vec(),
            body: Body::Const(0.0),
        });
    }
    if tensors.is_empty() {
        return Err(format!("`{}` has no outputs", r.name));
    }
    let id = IndexingMap::identity(r.dims());
    for k in 0..tensors.len() {
        b.functions[k].body = b.variadic(root, k, &id)?;
    }
    let output = tensors.remove(0);
    let more_outputs = tensors
        .into_iter()
        .enumerate()
        .map(|(k, t)| MoreOutput::same_index(t, k + 1, r.dims()))
        .collect();
    Ok(KernelSpec {
        name: comp_label(comp, root),
        inputs,
        output,
        functions: b.functions,
        more_outputs,
        root: Root::Elementwise,
        xla_tile: None,
    })
}

fn comp_label(comp: &Computation, root: InstrId) -> String {
    if comp.root == root && !comp.name.starts_with('(') {
        comp.name.clone()
    } else {
        comp.instrs[root].name.clone()
    }
}

/// The roots that are not one element per output index: a tuple (a multi-output fusion,
/// every output of one shape), a concatenate (one function per operand, XLA's emitter
/// gives each its own loop) and an in-place dynamic-update-slice (its operand a parameter,
/// aliased by the output; its start indices scalar parameters).
fn build_root(
    module: &Module,
    comp: &Computation,
    root: InstrId,
    inputs: Vec<Tensor>,
    input_of: Vec<Option<usize>>,
) -> Result<KernelSpec, String> {
    let r = &comp.instrs[root];
    let mut b = Builder {
        module,
        comp,
        users: comp.users(),
        input_of,
        func_of: vec![None; comp.instrs.len()],
        functions: Vec::new(),
        variadic_funcs: Vec::new(),
    };
    let name = comp_label(comp, root);
    if r.opcode == "scatter" {
        return build_scatter(b, r, name, inputs);
    }
    if r.operands.is_empty() {
        return Err(format!("`{}` ({}) has no operands", r.name, r.opcode));
    }
    // Function 0 of a tuple or a concatenate is a call of the first operand's function:
    // another operand may call that function too, and function 0 has no C function of its
    // own (the entry point writes its body in place).
    // When the root is its only user, its function is function 0 itself (so a transpose's
    // loads stay in the entry point, where the tiled emitter stages them).
    let op0 = &comp.instrs[r.operands[0]];
    let mut u = b.users[r.operands[0]].clone();
    u.sort_unstable();
    u.dedup();
    let wrap = u != [root] || r.opcode != "tuple";
    if wrap {
        b.functions.push(Function {
            name: op0.name.clone(),
            dims: op0.dims().to_vec(),
            body: Body::Const(0.0),
        });
    }
    let first = b.function(r.operands[0])?;
    if wrap {
        b.functions[0].body = Body::Call {
            func: first,
            map: IndexingMap::identity(op0.dims()),
        };
    }
    match r.opcode.as_str() {
        "tuple" => {
            let output = tensor(
                &comp.instrs[r.operands[0]].name,
                &comp.instrs[r.operands[0]].shape,
            )?;
            let more_outputs = tuple_outputs(&mut b, comp, root, &output)?;
            Ok(KernelSpec {
                name,
                inputs,
                output,
                functions: b.functions,
                more_outputs,
                root: Root::Elementwise,
                xla_tile: None,
            })
        }
        "concatenate" => {
            let output = tensor(&r.name, &r.shape)?;
            let dim = r
                .attrs
                .dimensions
                .as_deref()
                .and_then(|d| d.first().copied())
                .filter(|&d| d >= 0 && (d as usize) < output.rank())
                .ok_or_else(|| format!("`{}` has no dimension to concatenate along", r.name))?
                as usize;
            let mut parts = Vec::new();
            let mut off = 0i64;
            for (k, &o) in r.operands.iter().enumerate() {
                let f = if k == 0 { first } else { b.function(o)? };
                parts.push((f, off));
                off = off
                    .checked_add(comp.instrs[o].dims().get(dim).copied().unwrap_or(0))
                    .ok_or_else(|| format!("`{}`: the concatenated size overflows", r.name))?;
            }
            if off != output.dims[dim] {
                return Err(format!(
                    "`{}`: the operands' sizes along dimension {dim} add up to {off}, not {}",
                    r.name, output.dims[dim]
                ));
            }
            Ok(KernelSpec {
                name,
                inputs,
                output,
                functions: b.functions,
                more_outputs: vec![],
                root: Root::Concatenate { dim, parts },
                xla_tile: None,
            })
        }
        _ => {
            // dynamic-update-slice(operand, update, start...): function 0 must be the
            // update's, so it is made first.
            let output = tensor(&r.name, &r.shape)?;
            if r.operands.len() != 2 + output.rank() {
                return Err(format!(
                    "`{}` needs an operand, an update and {} start indices",
                    r.name,
                    output.rank()
                ));
            }
            let operand = b.input_of[r.operands[0]].ok_or_else(|| {
                format!(
                    "`{}`: the operand of an in-place dynamic-update-slice is emitted when it is a parameter (the output aliases it)",
                    r.name
                )
            })?;
            let mut b = Builder {
                module,
                comp,
                users: comp.users(),
                input_of: b.input_of,
                func_of: vec![None; comp.instrs.len()],
                functions: Vec::new(),
                variadic_funcs: Vec::new(),
            };
            let upd = b.function(r.operands[1])?;
            if upd != 0 {
                return Err(format!("`{}`: the update is not function 0", r.name));
            }
            let mut starts = Vec::new();
            let mut computed = Vec::new();
            for &s in &r.operands[2..] {
                let ok = comp.instrs[s].dims().is_empty();
                let int =
                    ElemType::from_hlo(comp.instrs[s].shape.elem()).is_some_and(|t| t.is_int());
                match b.input_of[s] {
                    Some(k) if ok && inputs[k].elem == ElemType::S32 => {
                        starts.push(k);
                        computed.push(None);
                    }
                    // A start computed in the fusion: a function of no dimensions.
                    None if ok && int => {
                        starts.push(usize::MAX);
                        computed.push(Some(b.function(s)?));
                    }
                    _ => {
                        return Err(format!(
                            "`{}`: start indices are emitted when they are s32[] parameters or integer scalars computed in the fusion (`{}` is neither)",
                            r.name, comp.instrs[s].name
                        ))
                    }
                }
            }
            let op = &inputs[operand];
            if op.dims != output.dims
                || op.elem != output.elem
                || op.minor_to_major != output.minor_to_major
            {
                return Err(format!(
                    "`{}`: the output of an in-place dynamic-update-slice has its operand's shape and layout",
                    r.name
                ));
            }
            let ud = &b.functions[0].dims;
            if ud.len() != output.rank() || ud.iter().zip(&output.dims).any(|(u, o)| u > o) {
                return Err(format!(
                    "`{}`: the update does not fit in the operand",
                    r.name
                ));
            }
            Ok(KernelSpec {
                name,
                inputs,
                output,
                functions: b.functions,
                more_outputs: vec![],
                root: Root::DynamicUpdateSlice {
                    operand,
                    starts,
                    computed,
                },
                xla_tile: None,
            })
        }
    }
}

/// scatter(operand, indices, updates): the operand and the indices parameters (the output
/// aliases the operand), function 0 the updates' (over their shape).
fn build_scatter(
    mut b: Builder,
    r: &Instr,
    name: String,
    inputs: Vec<Tensor>,
) -> Result<KernelSpec, String> {
    if r.operands.len() != 3 {
        return Err(format!(
            "`{}`: scatters of one operand, its indices and its updates are emitted",
            r.name
        ));
    }
    let input = |k: usize, what: &str| {
        b.input_of[r.operands[k]].ok_or_else(|| {
            format!(
                "`{}`: the scatter's {what} is emitted when it is a parameter",
                r.name
            )
        })
    };
    let operand = input(0, "operand (the output aliases it)")?;
    let op = b.reducer(r)?;
    let upd = b.function(r.operands[2])?;
    if upd != 0 {
        return Err(format!("`{}`: the updates are not function 0", r.name));
    }
    // Indices computed in the fusion (the max-pool gradient concatenates the index
    // tensors a reduce-window computed) are a function over their shape.
    let (indices, indices_func) = match b.input_of[r.operands[1]] {
        Some(k) => {
            if inputs[k].elem != ElemType::S32 {
                return Err(format!(
                    "`{}`: the scatter's indices are emitted as s32",
                    r.name
                ));
            }
            (k, None)
        }
        None => {
            let it = b.comp.instrs[r.operands[1]].shape.elem();
            if !ElemType::from_hlo(it).is_some_and(|t| t.is_int()) {
                return Err(format!(
                    "`{}`: the scatter's indices are {it}, not integers",
                    r.name
                ));
            }
            (usize::MAX, Some(b.function(r.operands[1])?))
        }
    };
    let sd = r.attrs.scatter.clone().unwrap_or_default();
    let ivd = r.attrs.gather.as_ref().map_or(0, |g| g.index_vector_dim);
    let dims = |v: &[i64]| -> Result<Vec<usize>, String> {
        v.iter()
            .map(|&d| usize::try_from(d).map_err(|_| format!("`{}`: a negative dimension", r.name)))
            .collect()
    };
    let output = tensor(&r.name, &r.shape)?;
    let op_t = &inputs[operand];
    if op_t.dims != output.dims
        || op_t.elem != output.elem
        || op_t.minor_to_major != output.minor_to_major
    {
        return Err(format!(
            "`{}`: the output of a scatter has its operand's shape and layout",
            r.name
        ));
    }
    let spec = KernelSpec {
        name,
        inputs,
        output,
        functions: b.functions,
        more_outputs: vec![],
        root: Root::Scatter {
            operand,
            indices,
            op,
            update_window_dims: dims(&sd.update_window_dims)?,
            inserted_window_dims: dims(&sd.inserted_window_dims)?,
            scatter_dims_to_operand_dims: dims(&sd.scatter_dims_to_operand_dims)?,
            index_vector_dim: usize::try_from(ivd)
                .map_err(|_| format!("`{}`: a negative index_vector_dim", r.name))?,
            indices_func,
        },
        xla_tile: None,
    };
    if spec.scatter_geometry().is_none() {
        return Err(format!(
            "`{}`: the scatter's dimension numbers do not fit its shapes",
            spec.name
        ));
    }
    Ok(spec)
}

/// The reduction at the top of a function's body (possibly converted to the output type):
/// its map from the function's index, with the reduced dimensions as range variables.
fn top_reduce(body: &Body) -> Option<&IndexingMap> {
    let b = match body {
        Body::Convert(_, inner) => &**inner,
        b => b,
    };
    match b {
        Body::Reduce { map, .. } => Some(map),
        _ => None,
    }
}

/// Whether two reductions reduce the same elements to the same index (their maps agree up
/// to the names of their variables).
fn same_reduction(a: &IndexingMap, b: &IndexingMap) -> bool {
    a.dims.len() == b.dims.len()
        && a.ranges.len() == b.ranges.len()
        && a.ranges
            .iter()
            .zip(&b.ranges)
            .all(|(x, y)| x.bounds == y.bounds)
        && a.results == b.results
        && a.constraints == b.constraints
}

/// The bitcast map from `from`'s index to `to`'s (same element count): the element of `to`
/// at the same linear offset in its physical layout, as XLA writes a multi-output loop
/// fusion's outputs of another shape (`GetBitcastMap`).
fn bitcast_map(from: &Tensor, to: &Tensor) -> Result<IndexingMap, String> {
    use crate::expr::Expr;
    let strides = from.strides().map_err(|e| e.to_string())?;
    let lin = (0..from.rank()).fold(Expr::constant(0), |acc, d| {
        acc.add(Expr::var(d as u32).mul(Expr::constant(strides[d])))
    });
    let mut results = vec![Expr::constant(0); to.rank()];
    let phys = to.physical_dims();
    let mut inner = 1i64;
    for (p, &d) in phys.iter().enumerate().rev() {
        let q = lin.floordiv(Expr::constant(inner));
        results[d] = if p == 0 {
            q
        } else {
            q.modulo(Expr::constant(to.dims[d]))
        };
        inner = inner
            .checked_mul(to.dims[d])
            .ok_or_else(|| format!("the element count of `{}` overflows", to.name))?;
    }
    let m = IndexingMap::new(
        crate::map::default_vars(crate::map::VarKind::Dim, &from.dims),
        vec![],
        vec![],
        results,
        vec![],
    );
    Ok(simplify(&m, &SimplifyLimits::default()).map)
}

/// The further outputs of a tuple root, each with its map from output 0's index (see
/// [`MoreOutput`]) and its reduction group. What XLA fuses into one multi-output kernel:
///
/// - a loop fusion: outputs of output 0's shape (element types may differ), or of its
///   element count (XLA: a reshape or a transpose that is a bitcast), written at the
///   bitcast map of output 0's index; an output in the shape of an operand that output 0
///   reads transposed is a side output of the transpose, written at that permutation;
/// - a reduction fusion (output 0 a reduction): further reductions of the same operand
///   shape and dimensions, outputs of the reduced shape, and side outputs in the reduced
///   operand's shape, written where the reduction reads them. Independent groups
///   (`hlo::groups`) get their own blocks.
///
/// Everything else is refused, saying why.
fn tuple_outputs(
    b: &mut Builder,
    comp: &Computation,
    root: InstrId,
    output: &Tensor,
) -> Result<Vec<MoreOutput>, String> {
    let r = &comp.instrs[root];
    let reduce0 = b
        .functions
        .first()
        .and_then(|f| top_reduce(&f.body))
        .cloned();
    let callee_dims = match b.functions.first().map(|f| &f.body) {
        Some(Body::Reduce { func, .. }) => Some(b.functions[*func].dims.clone()),
        Some(Body::Convert(_, inner)) => match &**inner {
            Body::Reduce { func, .. } => Some(b.functions[*func].dims.clone()),
            _ => None,
        },
        _ => None,
    };
    let groups = if reduce0.is_some() && comp.root == root {
        crate::hlo::groups::reduction_groups(comp)
    } else {
        vec![]
    };
    let group_of = |id: InstrId| {
        groups
            .iter()
            .position(|g| g.roots.contains(&id))
            .unwrap_or(0)
    };
    let count = |t: &Tensor| t.num_elements().map_err(|e| e.to_string());
    let mut out = Vec::new();
    for &o in &r.operands[1..] {
        let t = tensor(&comp.instrs[o].name, &comp.instrs[o].shape)?;
        let f = b.function(o)?;
        let fr = top_reduce(&b.functions[f].body).cloned();
        let map = match (&reduce0, &fr) {
            (Some(m0), Some(m)) => {
                if t.dims != output.dims || !same_reduction(m0, m) {
                    return Err(format!(
                        "`{}`: the reductions of a multi-output fusion are emitted when they reduce the same dimensions of one shape (XLA's rule); `{}` reduces differently than `{}`",
                        r.name, t.name, output.name
                    ));
                }
                IndexingMap::identity(&output.dims)
            }
            (None, Some(_)) => {
                return Err(format!(
                    "`{}`: a reduction in a tuple root is emitted as the first output (the reduction emitter's hero); `{}` is not first",
                    r.name, t.name
                ))
            }
            _ if t.dims == output.dims => IndexingMap::identity(&output.dims),
            (Some(m0), None) if callee_dims.as_deref() == Some(&t.dims[..]) => m0.clone(),
            (Some(_), None) => {
                return Err(format!(
                    "`{}`: the outputs of a multi-output reduction have the reduction's shape or its operand's ({} is {}, {} is {})",
                    r.name,
                    output.name,
                    output.shape_text(),
                    t.name,
                    t.shape_text()
                ))
            }
            (None, None) if count(&t)? == count(output)? => {
                transposed_side(b, &t, output.rank()).map_or_else(|| bitcast_map(output, &t), Ok)?
            }
            (None, None) => {
                return Err(format!(
                    "`{}`: the outputs of a tuple root share output 0's loop when they have its element count (XLA: one shape, or a bitcast of it); {} is {}, {} is {}",
                    r.name,
                    output.name,
                    output.shape_text(),
                    t.name,
                    t.shape_text()
                ))
            }
        };
        out.push(MoreOutput {
            tensor: t,
            func: f,
            map,
            group: group_of(o),
        });
    }
    Ok(out)
}

/// The permutation through which function 0 loads an input of `t`'s dims (a transpose of
/// it), when there is one: a side output of a transpose in its operand's shape is written
/// there.
fn transposed_side(b: &Builder, t: &Tensor, rank: usize) -> Option<IndexingMap> {
    let mut found = None;
    let f0 = b.functions.first()?;
    f0.body.visit(&mut |x| {
        if let (None, Body::Load { input, map }) = (&found, x) {
            let dims_match = b
                .input_of
                .iter()
                .enumerate()
                .find(|(_, k)| **k == Some(*input))
                .is_some_and(|(id, _)| b.comp.instrs[id].dims() == t.dims.as_slice());
            let vars: Vec<Option<u32>> = map.results.iter().map(|e| e.as_var()).collect();
            let mut sorted: Vec<u32> = vars.iter().flatten().copied().collect();
            sorted.sort_unstable();
            let perm = map.results.len() == rank
                && map.ranges.is_empty()
                && map.constraints.is_empty()
                && sorted == (0..rank as u32).collect::<Vec<_>>()
                && vars.iter().enumerate().any(|(i, v)| *v != Some(i as u32));
            if dims_match && perm {
                found = Some(map.clone());
            }
        }
    });
    found
}

/// The identity of `op` on type `t`, when f64 holds it exactly.
fn identity(op: BinOp, t: ElemType) -> Option<f64> {
    let int_lo = || -> f64 {
        if t.is_signed_int() {
            -((1u64 << (t.bits() - 1)) as f64)
        } else {
            0.0
        }
    };
    Some(match op {
        // -0 + x is x for every x, -0 included.
        BinOp::Add if t.is_float() => -0.0,
        BinOp::Add => 0.0,
        BinOp::Mul => 1.0,
        BinOp::Max if t.is_float() => f64::NEG_INFINITY,
        BinOp::Max if t == ElemType::Pred => 0.0,
        BinOp::Max => int_lo(),
        BinOp::Min if t.is_float() => f64::INFINITY,
        BinOp::Min if t == ElemType::Pred => 1.0,
        // The largest value must be exact in f64.
        BinOp::Min if t.bits() <= 32 => {
            if t.is_signed_int() {
                ((1u64 << (t.bits() - 1)) - 1) as f64
            } else {
                ((1u64 << t.bits()) - 1) as f64
            }
        }
        _ => return None,
    })
}

/// The ops of fused computations that are not elementwise: iota, pad, reduce-window,
/// dynamic-slice, a reduce whose init value is computed, and ops with no emitter yet (kept
/// as [`Body::Opaque`], their operands' maps known).
impl Builder<'_> {
    /// The function whose index space is `operand`'s: its own, or a load of it when it is
    /// an input.
    fn operand_function(&mut self, operand: InstrId) -> Result<usize, String> {
        match self.input_of[operand] {
            Some(input) => {
                let d = self.comp.instrs[operand].dims().to_vec();
                let k = self.functions.len();
                self.functions.push(Function {
                    name: format!("{} (load)", self.comp.instrs[operand].name),
                    dims: d.clone(),
                    body: Body::Load {
                        input,
                        map: IndexingMap::identity(&d),
                    },
                });
                Ok(k)
            }
            None => self.function(operand),
        }
    }

    /// The reduction of `func` over `m` starting from `ins`'s init value (operand
    /// `operands.len() / 2`): a constant is the reduction's own; a computed init value
    /// (a parameter) is combined after a reduction from the op's identity (XLA requires
    /// the init value to be an identity of the reducer, and may apply it any number of
    /// times).
    fn reduction(
        &mut self,
        ins: &Instr,
        op: BinOp,
        func: usize,
        m: IndexingMap,
        map: &IndexingMap,
    ) -> Result<Body, String> {
        let init_id = ins.operands[ins.operands.len() / 2];
        let scalar = Self::then(map, &self.scalar_map(ins)?)?;
        let init_body = self.body(init_id, &scalar, false)?;
        let constant = match &init_body {
            Body::Const(v) => Some(*v),
            Body::Convert(_, c) => match **c {
                Body::Const(v) => Some(v),
                _ => None,
            },
            _ => None,
        };
        if let Some(init) = constant {
            return Ok(Body::Reduce {
                op,
                init,
                func,
                map: m,
            });
        }
        let t = ElemType::from_hlo(ins.shape.elem()).ok_or_else(|| {
            format!(
                "`{}` has element type {}, which has no emitter",
                ins.name,
                ins.shape.elem()
            )
        })?;
        let id = identity(op, t).ok_or_else(|| {
            format!(
                "`{}`: a computed init value is emitted for add, multiply, maximum and minimum reductions with an identity exact in f64 ({op:?} on {} has none)",
                ins.name,
                t.hlo_name()
            )
        })?;
        Ok(Body::Binary(
            op,
            Box::new(Body::Reduce {
                op,
                init: id,
                func,
                map: m,
            }),
            Box::new(init_body),
        ))
    }

    /// `(d..) -> ()` over `ins`'s output: how it reads a scalar operand.
    fn scalar_map(&self, ins: &Instr) -> Result<IndexingMap, String> {
        Ok(IndexingMap::new(
            crate::map::default_vars(crate::map::VarKind::Dim, ins.dims()),
            vec![],
            vec![],
            vec![],
            vec![],
        ))
    }

    fn shape_op(&mut self, id: InstrId, map: &IndexingMap) -> Result<Body, String> {
        let ins: &Instr = &self.comp.instrs[id];
        let op = ins.opcode.as_str();
        match op {
            "iota" if ins.operands.is_empty() => {
                let dim = ins
                    .attrs
                    .iota_dimension
                    .and_then(|d| usize::try_from(d).ok())
                    .filter(|&d| d < ins.dims().len())
                    .ok_or_else(|| format!("`{}`: iota_dimension is not a dimension", ins.name))?;
                let elem = self.elem_of(ins)?;
                let mut m = map.clone();
                m.results = vec![*map
                    .results
                    .get(dim)
                    .ok_or_else(|| format!("`{}`: the index has no dimension {dim}", ins.name))?];
                m.is_simplified = false;
                Ok(Body::Convert(elem, Box::new(Body::Index { map: m })))
            }
            "pad" if ins.operands.len() == 2 => {
                let m0 = Self::then(map, &self.op_map(id, 0)?)?;
                let m1 = Self::then(map, &self.op_map(id, 1)?)?;
                let (a, v) = (ins.operands[0], ins.operands[1]);
                let then = self.body(a, &m0, false)?;
                let otherwise = self.body(v, &m1, false)?;
                Ok(Body::Guard {
                    map: m0,
                    then: Box::new(then),
                    otherwise: Box::new(otherwise),
                })
            }
            "reduce-window" if ins.operands.len() == 2 => self.reduce_window(id, map),
            "get-tuple-element" if ins.operands.len() == 1 => {
                let src = ins.operands[0];
                let which = ins
                    .attrs
                    .index
                    .and_then(|k| usize::try_from(k).ok())
                    .ok_or_else(|| format!("`{}` has no index", ins.name))?;
                let s = &self.comp.instrs[src];
                if matches!(s.opcode.as_str(), "reduce" | "reduce-window") && s.operands.len() > 2 {
                    self.variadic(src, which, map)
                } else {
                    self.opaque(id, map)
                }
            }
            // Inside a body: the operand whose slice holds the index, the others guarded
            // out (a concatenate at the root gives each operand its own loop instead).
            "concatenate" if !ins.operands.is_empty() => {
                let n = ins.operands.len();
                let m = Self::then(map, &self.op_map(id, n - 1)?)?;
                let mut body = self.body(ins.operands[n - 1], &m, false)?;
                for k in (0..n - 1).rev() {
                    let m = Self::then(map, &self.op_map(id, k)?)?;
                    let then = self.body(ins.operands[k], &m, false)?;
                    body = Body::Guard {
                        map: m,
                        then: Box::new(then),
                        otherwise: Box::new(body),
                    };
                }
                Ok(body)
            }
            "dynamic-slice" if ins.operands.len() >= 1 => {
                let operand = ins.operands[0];
                let od = self.comp.instrs[operand].dims().to_vec();
                let sd = ins.dims().to_vec();
                if ins.operands.len() != 1 + od.len() || sd.len() != od.len() {
                    return Err(format!(
                        "`{}`: a dynamic-slice takes one start index per dimension",
                        ins.name
                    ));
                }
                // The op's own check: one scalar start per dimension, sizes that fit.
                if ins.operands.len() > 1 {
                    self.op_map(id, 1)?;
                }
                let limits: Vec<i64> = od.iter().zip(&sd).map(|(o, s)| o - s).collect();
                if limits.iter().any(|&l| l < 0) {
                    return Err(format!(
                        "`{}`: the slice is larger than its operand",
                        ins.name
                    ));
                }
                let scalar = Self::then(map, &self.scalar_map(ins)?)?;
                let mut starts = Vec::new();
                for k in 1..ins.operands.len() {
                    let s = ins.operands[k];
                    let st = self.comp.instrs[s].shape.elem();
                    if !ElemType::from_hlo(st).is_some_and(|t| t.is_int()) {
                        return Err(format!(
                            "`{}`: start index `{}` is {st}, not an integer",
                            ins.name, self.comp.instrs[s].name
                        ));
                    }
                    starts.push(self.body(s, &scalar, false)?);
                }
                let func = self.operand_function(operand)?;
                Ok(Body::DynCall {
                    func,
                    map: map.clone(),
                    starts,
                    limits,
                })
            }
            "gather" if ins.operands.len() == 2 => self.gather(id, map),
            "dot" if ins.operands.len() == 2 => self.dot(id, map),
            "scaled-dot" if ins.operands.len() == 4 => self.dot(id, map),
            _ => self.opaque(id, map),
        }
    }

    /// `gather(operand, indices)` with XLA's semantics: output index = (batch dims,
    /// offset dims); operand coordinate `k` is the offset dim that walks it (0 for a
    /// collapsed dimension) plus the start read from the indices row at the batch position
    /// (entry `j` of the index vector for `k = start_index_map[j]`, 0 for the others),
    /// clamped into `[0, operand dim - slice size]` so the slice stays in bounds. That is
    /// a [`Body::DynCall`] of the operand's function whose starts are loads of the indices
    /// at maps of the output index.
    fn gather(&mut self, id: InstrId, map: &IndexingMap) -> Result<Body, String> {
        use crate::expr::Expr;
        // The op's own check: dimension numbers that fit the shapes.
        self.op_map(id, 1)?;
        let ins: &Instr = &self.comp.instrs[id];
        let g = ins
            .attrs
            .gather
            .clone()
            .ok_or_else(|| format!("`{}`: a gather without dimension numbers", ins.name))?;
        let (operand, indices) = (ins.operands[0], ins.operands[1]);
        let od = self.comp.instrs[operand].dims().to_vec();
        let xd = self.comp.instrs[indices].dims().to_vec();
        let out = ins.dims().to_vec();
        let it = self.comp.instrs[indices].shape.elem();
        if !ElemType::from_hlo(it).is_some_and(|t| t.is_int()) {
            return Err(format!(
                "`{}`: the gather's indices are {it}, not integers",
                ins.name
            ));
        }
        let ivd = usize::try_from(g.index_vector_dim)
            .ok()
            .filter(|&v| v <= xd.len())
            .ok_or_else(|| format!("`{}`: index_vector_dim is not a dimension", ins.name))?;
        let is_offset = |j: usize| g.offset_dims.contains(&(j as i64));
        let batch_out: Vec<usize> = (0..out.len()).filter(|&j| !is_offset(j)).collect();
        let offset_out: Vec<usize> = (0..out.len()).filter(|&j| is_offset(j)).collect();
        let vars = || crate::map::default_vars(crate::map::VarKind::Dim, &out);
        let plain = |results: Vec<Expr>| IndexingMap::new(vars(), vec![], vec![], results, vec![]);
        // The operand coordinate before the start is added.
        let mut next = offset_out.iter();
        let mut base = Vec::with_capacity(od.len());
        let mut starts = Vec::with_capacity(od.len());
        let mut limits = Vec::with_capacity(od.len());
        for k in 0..od.len() {
            let slice = *g
                .slice_sizes
                .get(k)
                .ok_or_else(|| format!("`{}`: slice_sizes is short", ins.name))?;
            base.push(if g.collapsed_slice_dims.contains(&(k as i64)) {
                Expr::constant(0)
            } else {
                let j = next
                    .next()
                    .ok_or_else(|| format!("`{}`: too few offset dims", ins.name))?;
                Expr::var(*j as u32)
            });
            let limit = od[k] - slice;
            if limit < 0 {
                return Err(format!(
                    "`{}`: the slice is larger than its operand",
                    ins.name
                ));
            }
            // A start the indices do not give is 0, and stays 0 whatever the clamp: its
            // limit is 0 too, so the analyses do not see a run-time shift there.
            let mapped = g.start_index_map.contains(&(k as i64));
            limits.push(if mapped { limit } else { 0 });
            match g.start_index_map.iter().position(|&x| x == k as i64) {
                Some(j) => {
                    // The indices element: the batch dims in order, `j` at ivd.
                    let mut b = batch_out.iter();
                    let mut r = Vec::with_capacity(xd.len());
                    for q in 0..xd.len() {
                        r.push(if q == ivd {
                            Expr::constant(j as i64)
                        } else {
                            Expr::var(
                                *b.next()
                                    .ok_or_else(|| format!("`{}`: too few batch dims", ins.name))?
                                    as u32,
                            )
                        });
                    }
                    let m = Self::then(map, &plain(r))?;
                    starts.push(self.body(indices, &m, false)?);
                }
                None => starts.push(Body::Const(0.0)),
            }
        }
        let func = self.operand_function(operand)?;
        Ok(Body::DynCall {
            func,
            map: Self::then(map, &plain(base))?,
            starts,
            limits,
        })
    }

    /// `dot(lhs, rhs)` as a reduction of products, for a fusion the GEMM kernel does not take
    /// (an epilogue that reduces the dot's rows, as an attention's softmax does): a
    /// function over (output index, contracting index) whose value is the product of the
    /// two operands (each converted to the dot's element type), summed over the
    /// contracting index from 0 in the dot's type.
    fn dot(&mut self, id: InstrId, map: &IndexingMap) -> Result<Body, String> {
        let ins: &Instr = &self.comp.instrs[id];
        let t = self.elem_of(ins)?;
        if !t.is_float() {
            return Err(format!(
                "`{}`: a dot of {} is emitted as a GEMM only for floats",
                ins.name,
                t.hlo_name()
            ));
        }
        let ml = self.op_map(id, 0)?;
        let mr = self.op_map(id, 1)?;
        // A contracting dimension of extent 0 (K = 0): each element is the empty sum, 0,
        // and no operand element is read (the maps are KNOWN EMPTY, with no range left to
        // sum over: a one-term sum would read an empty buffer).
        if ml.is_known_empty() || mr.is_known_empty() {
            return Ok(Body::Convert(t, Box::new(Body::Const(0.0))));
        }
        if ml.ranges.len() != mr.ranges.len()
            || ml.dims.len() != ins.dims().len()
            || mr.dims.len() != ins.dims().len()
            || !ml.runtimes.is_empty()
            || !mr.runtimes.is_empty()
            || ml
                .ranges
                .iter()
                .zip(&mr.ranges)
                .any(|(a, b)| a.bounds != b.bounds)
        {
            return Err(format!(
                "`{}`: the dot's operand maps do not share their contracting dimensions",
                ins.name
            ));
        }
        // The product's index space: the output's dimensions, then the contracting ones.
        let mut dims = ins.dims().to_vec();
        let mut vars = ml.dims.clone();
        for (k, r) in ml.ranges.iter().enumerate() {
            dims.push(r.bounds.hi - r.bounds.lo + 1);
            if r.bounds.lo != 0 {
                return Err(format!(
                    "`{}`: a contracting range that does not start at 0",
                    ins.name
                ));
            }
            vars.push(crate::map::Variable::new(
                format!("d{}", ml.dims.len() + k),
                0,
                r.bounds.hi,
            ));
        }
        // Variables number dimensions then ranges, so the results read the same over
        // (output, contracting) as dimensions.
        let over = |m: &IndexingMap| {
            IndexingMap::new(
                vars.clone(),
                vec![],
                vec![],
                m.results.clone(),
                m.constraints.clone(),
            )
        };
        let (pl, pr) = (over(&ml), over(&mr));
        let (a, b) = (ins.operands[0], ins.operands[1]);
        let k = self.functions.len();
        self.functions.push(Function {
            name: format!("{} (products)", ins.name),
            dims: dims.clone(),
            body: Body::Const(0.0),
        });
        let x = self.body(a, &pl, false)?;
        let y = self.body(b, &pr, false)?;
        let conv = |v: Body, from: ElemType| {
            if from == t {
                v
            } else {
                Body::Convert(t, Box::new(v))
            }
        };
        let (ta, tb) = (self.elem_of_id(a)?, self.elem_of_id(b)?);
        let (mut x, mut y) = (conv(x, ta), conv(y, tb));
        // scaled-dot: (lhs · lhs_scale) @ (rhs · rhs_scale), each operand element times
        // the scale of its block: the scale read at the operand's index divided by the
        // block, as the op's maps to operands 2 and 3 read it (`hlo::ops::dot`), over the
        // product's variables.
        if ins.opcode == "scaled-dot" {
            // The op's own check (scales of the operands' ranks, dividing them).
            self.op_map(id, 2)?;
            for (side, v) in [(0usize, &mut x), (1, &mut y)] {
                let scale = ins.operands[2 + side];
                let p = if side == 0 { &pl } else { &pr };
                let od = self.comp.instrs[ins.operands[side]].dims();
                let sd = self.comp.instrs[scale].dims();
                let results = p
                    .results
                    .iter()
                    .zip(od.iter().zip(sd))
                    .map(|(&r, (&n, &z))| {
                        let blk = if z > 0 { n / z } else { 1 };
                        if blk == 1 {
                            r
                        } else {
                            r.floordiv(crate::expr::Expr::constant(blk))
                        }
                    })
                    .collect();
                let sm = IndexingMap::new(
                    p.dims.clone(),
                    vec![],
                    vec![],
                    results,
                    p.constraints.clone(),
                );
                let s = self.body(scale, &sm, false)?;
                let ts = self.elem_of_id(scale)?;
                let prod = Body::Binary(
                    BinOp::Mul,
                    Box::new(std::mem::replace(v, Body::Const(0.0))),
                    Box::new(conv(s, ts)),
                );
                *v = prod;
            }
        }
        self.functions[k].body = Body::Binary(BinOp::Mul, Box::new(x), Box::new(y));
        // (d out)[s contracting] -> (d out, s contracting).
        let nd = ml.dims.len();
        let results: Vec<crate::expr::Expr> = (0..nd + ml.ranges.len())
            .map(|v| crate::expr::Expr::var(v as u32))
            .collect();
        let red = IndexingMap::new(ml.dims.clone(), ml.ranges.clone(), vec![], results, vec![]);
        Ok(Body::Reduce {
            op: BinOp::Add,
            init: 0.0,
            func: k,
            map: Self::then(map, &red)?,
        })
    }

    fn elem_of(&self, ins: &Instr) -> Result<ElemType, String> {
        if ins.shape.is_tuple() {
            return Err(format!("`{}` has a tuple shape", ins.name));
        }
        ElemType::from_hlo(ins.shape.elem()).ok_or_else(|| {
            format!(
                "`{}` has element type {}, which has no emitter",
                ins.name,
                ins.shape.elem()
            )
        })
    }

    /// An op with no emitter: its operands' values at its maps, so the analyses see every
    /// read; `emit`, `bench` and `check` refuse it.
    fn opaque(&mut self, id: InstrId, map: &IndexingMap) -> Result<Body, String> {
        let ins: &Instr = &self.comp.instrs[id];
        let elem = self
            .elem_of(ins)
            .map_err(|e| format!("{e}; {} has no emitter yet (`{}`)", ins.opcode, ins.name))?;
        let mut args = Vec::new();
        for k in 0..ins.operands.len() {
            let m = self
                .op_map(id, k)
                .map_err(|e| format!("{e}; {} has no emitter yet (`{}`)", ins.opcode, ins.name))?;
            let m = Self::then(map, &m)?;
            args.push(self.body(ins.operands[k], &m, false)?);
        }
        Ok(Body::Opaque {
            op: ins.opcode.clone(),
            name: ins.name.clone(),
            elem,
            args,
        })
    }

    /// `reduce-window(x, init)`: a reduction over the window's positions of the padded,
    /// base-dilated operand. Positions in the padding (and between dilated elements) hold
    /// the init value (XLA's semantics): they are a function over the padded index space
    /// that guards the operand's read.
    fn reduce_window(&mut self, id: InstrId, map: &IndexingMap) -> Result<Body, String> {
        use crate::expr::Expr;
        use crate::interval::Interval;
        // The op's own check (the window fits the operand, the output has the window's
        // shape): the maps below index only what it allows.
        self.op_map(id, 0)?;
        let ins: &Instr = &self.comp.instrs[id];
        let red = self.reducer(ins)?;
        let operand = ins.operands[0];
        let od = self.comp.instrs[operand].dims().to_vec();
        let w = ins.attrs.window.clone().unwrap_or_default();
        let out = ins.dims().to_vec();
        if w.len() != od.len() || out.len() != od.len() {
            return Err(format!(
                "`{}`: the window's rank is not its operand's",
                ins.name
            ));
        }
        let overflow = || format!("`{}`: the padded operand's size overflows", ins.name);
        let plain = w
            .iter()
            .all(|d| d.pad_lo == 0 && d.pad_hi == 0 && d.lhs_dilate == 1);
        // The padded, dilated operand's sizes.
        let mut padded = Vec::new();
        for (&n, d) in od.iter().zip(&w) {
            if d.lhs_dilate < 1 || d.rhs_dilate < 1 || d.stride < 1 || d.size < 1 {
                return Err(format!(
                    "`{}`: a window with a size, stride or dilation below 1",
                    ins.name
                ));
            }
            let dil = if n == 0 {
                0
            } else {
                (n - 1)
                    .checked_mul(d.lhs_dilate)
                    .and_then(|x| x.checked_add(1))
                    .ok_or_else(overflow)?
            };
            let p = dil
                .checked_add(d.pad_lo)
                .and_then(|x| x.checked_add(d.pad_hi))
                .ok_or_else(overflow)?;
            padded.push(p.max(0));
        }
        // Output index d, window position s: padded index d * stride + s * rhs_dilate.
        let nd = out.len();
        let mut results = Vec::new();
        let mut ranges = Vec::new();
        for (i, d) in w.iter().enumerate() {
            let mut e = Expr::var(i as u32).mul(Expr::constant(d.stride));
            if d.size > 1 {
                let v = Expr::var((nd + ranges.len()) as u32);
                ranges.push(crate::map::Variable::new(
                    format!("s{}", ranges.len()),
                    0,
                    d.size - 1,
                ));
                e = e.add(v.mul(Expr::constant(d.rhs_dilate)));
            }
            results.push(e);
        }
        let win = IndexingMap::new(
            crate::map::default_vars(crate::map::VarKind::Dim, &out),
            ranges,
            vec![],
            results,
            vec![],
        );
        let m = Self::then(map, &win)?;
        let func = if plain {
            self.operand_function(operand)?
        } else {
            // The padded operand: the operand's element where the padded index is one,
            // else the init value.
            let mut res = Vec::new();
            let mut cons = Vec::new();
            for (i, (&n, d)) in od.iter().zip(&w).enumerate() {
                let p = Expr::var(i as u32).add(Expr::constant(-d.pad_lo));
                if d.lhs_dilate > 1 {
                    cons.push((p.modulo(Expr::constant(d.lhs_dilate)), Interval::point(0)));
                }
                let hi = (n - 1).checked_mul(d.lhs_dilate).ok_or_else(overflow)?;
                cons.push((p, Interval::new(0, hi)));
                res.push(if d.lhs_dilate > 1 {
                    p.floordiv(Expr::constant(d.lhs_dilate))
                } else {
                    p
                });
            }
            let to_operand = IndexingMap::new(
                crate::map::default_vars(crate::map::VarKind::Dim, &padded),
                vec![],
                vec![],
                res,
                cons,
            );
            let to_operand = simplify(&to_operand, &SimplifyLimits::default()).map;
            let k = self.functions.len();
            self.functions.push(Function {
                name: format!("{} (padded)", self.comp.instrs[operand].name),
                dims: padded.clone(),
                body: Body::Const(0.0),
            });
            let then = self.body(operand, &to_operand, false)?;
            let init_id = ins.operands[1];
            let none = IndexingMap::new(
                crate::map::default_vars(crate::map::VarKind::Dim, &padded),
                vec![],
                vec![],
                vec![],
                vec![],
            );
            let otherwise = self.body(init_id, &none, false)?;
            self.functions[k].body = Body::Guard {
                map: to_operand,
                then: Box::new(then),
                otherwise: Box::new(otherwise),
            };
            k
        };
        let ins: &Instr = &self.comp.instrs[id];
        self.reduction(ins, red, func, m, map)
    }
}

/// Variadic reductions (argmax: a value and its index, reduced together by a computation
/// that returns a tuple).
impl Builder<'_> {
    /// Output `which` of the variadic `reduce` or `reduce-window` `id` at `map(index)`.
    fn variadic(&mut self, id: InstrId, which: usize, map: &IndexingMap) -> Result<Body, String> {
        let ins: &Instr = &self.comp.instrs[id];
        let window = ins.opcode == "reduce-window";
        let n = ins.operands.len() / 2;
        if n == 0 || ins.operands.len() != 2 * n || which >= n {
            return Err(format!(
                "`{}`: a variadic reduction takes inputs and as many init values",
                ins.name
            ));
        }
        let parts = ins.shape.tuple_elements();
        if parts.len() != n {
            return Err(format!(
                "`{}` has {} outputs for {n} inputs",
                ins.name,
                parts.len()
            ));
        }
        let mut elems = Vec::new();
        for p in parts {
            elems.push(ElemType::from_hlo(p.elem()).ok_or_else(|| {
                format!(
                    "`{}` has element type {}, which has no emitter",
                    ins.name,
                    p.elem()
                )
            })?);
        }
        if ins.opcode == "reduce-window" {
            let w = ins.attrs.window.clone().unwrap_or_default();
            if w.iter()
                .any(|d| d.pad_lo != 0 || d.pad_hi != 0 || d.lhs_dilate != 1)
            {
                return Err(format!(
                    "`{}`: a variadic reduce-window with padding or base dilation has no emitter yet",
                    ins.name
                ));
            }
        }
        let reducer = self.scalar_computation(ins, &elems)?;
        // Every input is read through the same map (the window's without padding:
        // its constraints always hold).
        let m = Self::then(map, &self.op_map(id, 0)?)?;
        let scalar = Self::then(map, &self.scalar_map(ins)?)?;
        let funcs = match self.variadic_funcs.iter().find(|(r, _)| *r == id) {
            Some((_, f)) => f.clone(),
            None => {
                let mut funcs = Vec::new();
                for k in 0..n {
                    funcs.push(self.operand_function(self.comp.instrs[id].operands[k])?);
                }
                self.variadic_funcs.push((id, funcs.clone()));
                funcs
            }
        };
        let mut inits = Vec::new();
        for k in 0..n {
            inits.push(self.body(ins.operands[n + k], &scalar, false)?);
        }
        Ok(Body::ReduceTuple {
            inits,
            funcs,
            map: m,
            reducer,
            which,
            window,
        })
    }

    /// The reducer of `ins` as scalar bodies over [`Body::Param`] (accumulators, then
    /// values): one per output. `and`, `or` and `not` of `pred` are written as selects
    /// and comparisons.
    fn scalar_computation(&self, ins: &Instr, elems: &[ElemType]) -> Result<Vec<Body>, String> {
        let name = ins
            .attrs
            .to_apply
            .as_deref()
            .ok_or_else(|| format!("`{}` has no to_apply", ins.name))?;
        let c = self
            .module
            .computation(name)
            .ok_or_else(|| format!("no computation `{name}` (to_apply of `{}`)", ins.name))?;
        let params = c.parameters();
        let n = elems.len();
        if params.len() != 2 * n {
            return Err(format!(
                "the reducer `{name}` takes {} arguments, not {}",
                params.len(),
                2 * n
            ));
        }
        let root = &c.instrs[c.root];
        let outs: Vec<InstrId> = if root.opcode == "tuple" {
            root.operands.clone()
        } else {
            vec![c.root]
        };
        if outs.len() != n {
            return Err(format!(
                "the reducer `{name}` returns {} values, not {n}",
                outs.len()
            ));
        }
        outs.iter()
            .map(|&o| scalar_body(c, &params, elems, o, name, 0))
            .collect()
    }
}

/// Instruction `id` of the scalar computation `c` (named `name`) as a body over its
/// parameters ([`Body::Param`]).
fn scalar_body(
    c: &Computation,
    params: &[InstrId],
    elems: &[ElemType],
    id: InstrId,
    name: &str,
    depth: usize,
) -> Result<Body, String> {
    if depth > c.instrs.len() {
        return Err(format!("the reducer `{name}` is cyclic"));
    }
    let ins = &c.instrs[id];
    let op = ins.opcode.as_str();
    let arg = |k: usize| -> Result<Body, String> {
        let o = *ins
            .operands
            .get(k)
            .ok_or_else(|| format!("`{}` in `{name}` lacks operand {k}", ins.name))?;
        scalar_body(c, params, elems, o, name, depth + 1)
    };
    let elem = || {
        ElemType::from_hlo(ins.shape.elem()).ok_or_else(|| {
            format!(
                "`{}` in `{name}` has element type {}",
                ins.name,
                ins.shape.elem()
            )
        })
    };
    let pred = |v: f64| Body::Convert(ElemType::Pred, Box::new(Body::Const(v)));
    if !ins.dims().is_empty() || ins.shape.is_tuple() {
        return Err(format!(
            "`{}` in the reducer `{name}` is not a scalar",
            ins.name
        ));
    }
    Ok(match op {
        "parameter" => {
            let k = params
                .iter()
                .position(|&p| p == id)
                .ok_or_else(|| format!("`{}` is not a parameter of `{name}`", ins.name))?;
            Body::Param(k, elems[k % elems.len()])
        }
        "constant" => {
            let lit = ins.attrs.literal.as_deref().unwrap_or("");
            let v = parse_literal(lit)
                .ok_or_else(|| format!("`{}`: the constant {lit} in `{name}`", ins.name))?;
            let t = elem()?;
            if t.is_int() && (v.fract() != 0.0 || v.abs() > 9_007_199_254_740_992.0) {
                return Err(format!(
                    "`{}`: the integer constant {lit} in `{name}` is not exact in f64",
                    ins.name
                ));
            }
            Body::Convert(t, Box::new(Body::Const(v)))
        }
        "compare" => {
            let dir = ins
                .attrs
                .other("direction")
                .and_then(CmpDir::from_hlo)
                .ok_or_else(|| format!("`{}` in `{name}` has no direction", ins.name))?;
            Body::Compare(dir, Box::new(arg(0)?), Box::new(arg(1)?))
        }
        "select" => Body::Select(Box::new(arg(0)?), Box::new(arg(1)?), Box::new(arg(2)?)),
        "convert" => Body::Convert(elem()?, Box::new(arg(0)?)),
        "not" if elem()? == ElemType::Pred => {
            Body::Compare(CmpDir::Eq, Box::new(arg(0)?), Box::new(pred(0.0)))
        }
        "and" if elem()? == ElemType::Pred => {
            Body::Select(Box::new(arg(0)?), Box::new(arg(1)?), Box::new(pred(0.0)))
        }
        "or" if elem()? == ElemType::Pred => {
            Body::Select(Box::new(arg(0)?), Box::new(pred(1.0)), Box::new(arg(1)?))
        }
        _ => {
            if let Some(u) = UnOp::from_hlo(op) {
                Body::Unary(u, Box::new(arg(0)?))
            } else if let Some(b) = BinOp::from_hlo(op) {
                Body::Binary(b, Box::new(arg(0)?), Box::new(arg(1)?))
            } else {
                return Err(format!(
                    "the reducer `{name}` computes {op} (`{}`), which has no emitter yet",
                    ins.name
                ));
            }
        }
    })
}
