//! C for the host compiler: the entry point loops over the output in its physical order
//! (`i`), so the loop index is the output offset and, for an elementwise chain through
//! reshapes, the simplified input offsets are `i` as well: the compiler then vectorizes the
//! loop. The source is compiled with the system C compiler (see `bench/cpu.rs` and the
//! README for why a compiler rather than a JIT).

use super::{c_ident, helper_functions, input_params, BodyWriter, Emitted, Target, C_HELPERS};
use crate::expr::Expr;
use crate::gpu::spec::{KernelSpec, Tensor};
use crate::interval::Interval;
use crate::map::{IndexingMap, Variable};
use crate::MapError;

/// `(i) -> (output index)`: `i` runs over the output's elements in physical order.
pub fn loop_map(out: &Tensor) -> Result<IndexingMap, MapError> {
    let n = out.num_elements()?;
    let phys = out.physical_dims();
    let mut results = vec![Expr::constant(0); out.rank()];
    let mut inner = 1i64;
    for (p, &d) in phys.iter().enumerate().rev() {
        let q = Expr::var(0).floordiv(Expr::constant(inner));
        results[d] = if p == 0 {
            q
        } else {
            q.modulo(Expr::constant(out.dims[d]))
        };
        inner = inner
            .checked_mul(out.dims[d])
            .ok_or_else(|| MapError::Overflow("the output size".into()))?;
    }
    Ok(IndexingMap::new(
        vec![Variable::new("i", 0, n - 1)],
        vec![],
        vec![],
        results,
        vec![],
    ))
}

/// `(others.., ta, tb, ia, ib) -> (output index)`: output dims `a` and `b` in 32x32 tiles
/// (`ta`, `tb` the tile, `ia`, `ib` the place in it), the other dims outside, in physical
/// order; ragged tiles are cut by constraints.
pub fn tiled_map(out: &Tensor, a: usize, b: usize) -> Result<IndexingMap, MapError> {
    const T: i64 = crate::gpu::launch::TILE;
    let others: Vec<usize> = out
        .physical_dims()
        .into_iter()
        .filter(|&d| d != a && d != b)
        .collect();
    let mut dims: Vec<Variable> = others
        .iter()
        .map(|&d| Variable::new(format!("x{d}"), 0, out.dims[d] - 1))
        .collect();
    let n = others.len() as u32;
    let (da, db) = (out.dims[a], out.dims[b]);
    dims.push(Variable::new("ta", 0, (da + T - 1) / T - 1));
    dims.push(Variable::new("tb", 0, (db + T - 1) / T - 1));
    dims.push(Variable::new("ia", 0, T.min(da) - 1));
    dims.push(Variable::new("ib", 0, T.min(db) - 1));
    let mut results = vec![Expr::constant(0); out.rank()];
    for (k, &d) in others.iter().enumerate() {
        results[d] = Expr::var(k as u32);
    }
    let c = Expr::constant;
    results[a] = Expr::var(n).mul(c(T)).add(Expr::var(n + 2));
    results[b] = Expr::var(n + 1).mul(c(T)).add(Expr::var(n + 3));
    let constraints = vec![
        (results[a], Interval::new(0, da - 1)),
        (results[b], Interval::new(0, db - 1)),
    ];
    let m = IndexingMap::new(dims, vec![], vec![], results, constraints);
    Ok(crate::simplify::simplify(&m, &Default::default()).map)
}

/// What every host kernel starts with after its includes: the index helpers, the epoch of
/// memoized reductions, and one function per partition but the root.
pub fn prelude(spec: &KernelSpec, naive: bool) -> Result<String, MapError> {
    let mut src = String::from(C_HELPERS);
    src += super::EPOCH_DECL;
    src += "\n";
    for f in helper_functions(spec, naive, "static ", "restrict", true)? {
        src += &f;
        src += "\n";
    }
    Ok(src)
}

pub fn emit(spec: &KernelSpec, naive: bool) -> Result<Emitted, MapError> {
    let name = c_ident(&spec.name);
    let ty = spec.output.elem.c_name();
    let mut src = String::new();
    src += &format!(
        "// {} for the CPU: {} = {} with {} partition(s); index arithmetic {}.\n",
        spec.name,
        spec.output.name,
        spec.output.shape_text(),
        spec.functions.len(),
        if naive {
            "naive (delinearize, apply each map, linearize)"
        } else {
            "from the simplified maps"
        }
    );
    src += "#include <stdint.h>\n#include <math.h>\n\n";
    src += &prelude(spec, naive)?;
    // A transpose of the minor dimension is walked in 32x32 tiles, so the strided side of
    // each tile stays in cache; everything else is one loop in the output's physical order.
    let lm = match crate::gpu::launch::transpose_dims(spec)? {
        Some((a, b)) if spec.root_reduction().is_none() => tiled_map(&spec.output, a, b)?,
        _ => loop_map(&spec.output)?,
    };
    let params: String = (0..spec.inputs.len())
        .map(|k| format!("p{k}"))
        .collect::<Vec<_>>()
        .join(", ");
    let depth = lm.dims.len();
    let mut w = BodyWriter::new(spec, naive, 1 + depth);
    w.memo = true;
    w.line(format!("// output index: {lm}"));
    for &(e, iv) in &lm.constraints {
        if let Some(cond) = super::outside(e, iv, &lm.names(), &lm.bounds()) {
            w.line(format!("if ({cond}) continue;"));
        }
    }
    let ctx = if naive {
        // The multi-index, computed once from the loop index.
        let names: Vec<String> = (0..spec.output.rank()).map(|d| format!("o{d}")).collect();
        for (d, &r) in lm.results.iter().enumerate() {
            let e = super::c_expr(r, &lm.names(), &lm.bounds());
            w.line(format!("const int64_t {} = {e};", names[d]));
        }
        let dims = names
            .iter()
            .zip(&spec.output.dims)
            .map(|(nm, &d)| Variable::new(nm.clone(), 0, d - 1))
            .collect();
        IndexingMap::new(
            dims,
            vec![],
            vec![],
            (0..spec.output.rank() as u32).map(Expr::var).collect(),
            vec![],
        )
    } else {
        lm.clone()
    };
    let v = w.body(&spec.functions[0].body, &ctx, &params)?;
    let k = w.offset(
        &ctx,
        &IndexingMap::identity(&spec.output.dims),
        &spec.output.strides()?,
        "out",
    )?;
    w.line(format!("out[{k}] = {v};"));
    let mut decl = input_params(spec, "restrict");
    decl.push(format!("{ty} *restrict out"));
    src += &format!("static void {name}_body({}) {{\n", decl.join(", "));
    for (k, v) in lm.dims.iter().enumerate() {
        src += &format!(
            "{}for (int64_t {1} = {2}; {1} <= {3}; ++{1}) {{\n",
            "  ".repeat(k + 1),
            v.name,
            v.bounds.lo,
            v.bounds.hi
        );
    }
    for l in &w.lines {
        src += l;
        src += "\n";
    }
    for k in (0..depth).rev() {
        src += &format!("{}}}\n", "  ".repeat(k + 1));
    }
    src += "}\n\n";
    src += &entry_point(spec, &name, &ty);
    Ok(Emitted {
        name: spec.name.clone(),
        target: Target::Cpu,
        source: crate::gpu::emit::finish_epoch(src),
        entry: name,
    })
}

/// The exported entry of a CPU kernel: `void NAME(void **args)` casting the inputs, in
/// order, then the output, and calling `NAME_body`.
pub fn entry_point(spec: &KernelSpec, name: &str, ty: &str) -> String {
    let casts: Vec<String> = spec
        .inputs
        .iter()
        .enumerate()
        .map(|(k, t)| format!("(const {} *)args[{k}]", t.elem.c_name()))
        .chain(std::iter::once(format!(
            "({ty} *)args[{}]",
            spec.inputs.len()
        )))
        .collect();
    format!(
        "// entry: args = inputs in order, then the output\nvoid {name}(void **args) {{\n{}  {name}_body({});\n}}\n",
        crate::gpu::emit::EPOCH_STEP,
        casts.join(", ")
    )
}
