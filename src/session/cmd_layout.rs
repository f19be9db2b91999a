//! Layout commands: CuTe layouts, Triton linear layouts and TTGIR attributes read as maps,
//! CuTe's layout algebra, F2 composition and inversion, pictures and access costs.
//!
//! ```text
//! layout "(4,2):(1,4)"                       (d0, d1) -> (d0 + d1 * 4)
//! composition "(6,2):(8,2)", "(4,3):(3,1)"   ((2,2),3):((24,2),8)
//! layout "#ttg.blocked<{...}>" shape=(16, 32)
//! show m as cute                             the map in CuTe notation, or why not
//! picture "((4,8),2):((16,1),8)" tile=(8,8)  the thread/value table
//! ```
//!
//! A layout argument is a string in CuTe or Triton notation (errors point into it), a name
//! bound to a layout, or a map (read back as a layout when it is one).

use super::commands::Command;
use super::{Args, Session};
use crate::layout::cute::{self, Composed, Layout, Tiler};
use crate::layout::linear::{self, LinearLayout};
use crate::layout::{access, picture, recognize, ttgir, LayoutError, LayoutValue, Notation};
use crate::syntax::{Arg, Diagnostic, Span};
use crate::value::{Table, Value};

pub static COMMANDS: [Command; 17] = [
    Command {
        name: "layout",
        usage: "layout TEXT [shape=(..)] [tile=(M, N)] [flat|tv]",
        summary: "reads a CuTe layout, a Triton linear layout or a TTGIR layout attribute (with shape=) as a map: from the natural coordinate, the flat index (flat), or (thread, value) (tv)",
        example: "layout \"(4,2):(1,4)\"",
        run: layout,
    },
    Command {
        name: "coalesce",
        usage: "coalesce LAYOUT",
        summary: "CuTe's coalesce: the same function with the fewest modes",
        example: "coalesce \"(2,(1,6)):(1,(6,2))\"",
        run: coalesce,
    },
    Command {
        name: "composition",
        usage: "composition A, B",
        summary: "CuTe's composition A ∘ B: R(c) = A(B(c)) with B's shape",
        example: "composition \"(6,2):(8,2)\", \"(4,3):(3,1)\"",
        run: composition,
    },
    Command {
        name: "complement",
        usage: "complement LAYOUT [cotarget=N]",
        summary: "CuTe's complement(A, M): the offsets A leaves out, up to M (default cosize A)",
        example: "complement \"4:2\" cotarget=24",
        run: complement,
    },
    Command {
        name: "right_inverse",
        usage: "right_inverse LAYOUT",
        summary: "CuTe's right_inverse: R with A(R(i)) = i",
        example: "right_inverse \"(4,2):(2,1)\"",
        run: right_inverse,
    },
    Command {
        name: "left_inverse",
        usage: "left_inverse LAYOUT",
        summary: "CuTe's left_inverse: L with L(A(x)) = x, for an injective A",
        example: "left_inverse \"(4,2):(2,1)\"",
        run: left_inverse,
    },
    Command {
        name: "logical_divide",
        usage: "logical_divide A, TILER",
        summary: "CuTe's logical_divide: A ∘ (T, complement(T, size A)), by mode for a tuple of tilers or a shape (\"(2,4)\" is \"(2:1,4:1)\")",
        example: "logical_divide \"24:1\", \"4:2\"",
        run: logical_divide,
    },
    Command {
        name: "zipped_divide",
        usage: "zipped_divide A, TILER",
        summary: "CuTe's zipped_divide: ((tiles), (rests))",
        example: "zipped_divide \"(8,8):(1,8)\", \"(2:1,4:1)\"",
        run: zipped_divide,
    },
    Command {
        name: "tiled_divide",
        usage: "tiled_divide A, TILER",
        summary: "CuTe's tiled_divide: ((tiles), rest0, rest1, ...)",
        example: "tiled_divide \"(8,8):(1,8)\", \"(2:1,4:1)\"",
        run: tiled_divide,
    },
    Command {
        name: "logical_product",
        usage: "logical_product A, B",
        summary: "CuTe's logical_product: (A, complement(A, size A · cosize B) ∘ B)",
        example: "logical_product \"(2,2):(4,1)\", \"6:1\"",
        run: logical_product,
    },
    Command {
        name: "blocked_product",
        usage: "blocked_product A, B",
        summary: "CuTe's blocked_product: A's block then B's arrangement, mode by mode",
        example: "blocked_product \"(2,2):(1,2)\", \"(2,3):(1,2)\"",
        run: blocked_product,
    },
    Command {
        name: "raked_product",
        usage: "raked_product A, B",
        summary: "CuTe's raked_product: B's arrangement then A, mode by mode (A raked across tiles)",
        example: "raked_product \"(2,2):(1,2)\", \"(2,3):(1,2)\"",
        run: raked_product,
    },
    Command {
        name: "linear_compose",
        usage: "linear_compose A, B [shape=(..)]",
        summary: "Triton linear layouts A then B (A's outputs are B's inputs), by F2 matrices",
        example: "linear_compose \"register=1 -> (1) register=2 -> (2)\", \"dim0=1 -> (2) dim0=2 -> (1)\"",
        run: linear_compose,
    },
    Command {
        name: "linear_inverse",
        usage: "linear_inverse LAYOUT [shape=(..)]",
        summary: "the inverse of a bijective Triton linear layout, by Gaussian elimination over F2",
        example: "linear_inverse \"lane=1 -> (0, 1) lane=2 -> (1, 0)\"",
        run: linear_inverse,
    },
    Command {
        name: "picture",
        usage: "picture LAYOUT [shape=(..)] [tile=(M, N)] [warp=N]",
        summary: "the thread/value table of a layout (each element: thread and value index, coloured by thread); warp=N: one warp's elements",
        example: "picture \"((2,4),2):((8,1),4)\" tile=(4,4)",
        run: picture_cmd,
    },
    Command {
        name: "access",
        usage: "access LAYOUT [shape=(..)] [tile=(M, N)] [bytes=N]",
        summary: "one warp's accesses through a layout: 32-byte sectors and 128-byte lines (global), bank wavefronts (shared)",
        example: "access \"#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>\" shape=(4, 32)",
        run: access_cmd,
    },
    Command {
        name: "layouts",
        usage: "layouts",
        summary: "the layout notations ixmap reads, with one example each",
        example: "layouts",
        run: layouts,
    },
];

/// The span of the character `at` bytes into a string argument.
fn in_string(span: Span, at: usize, len: usize) -> Span {
    let start = span.start + 1 + at;
    let end = (start + 1).min(span.start + 1 + len).max(start);
    Span::new(start, end)
}

fn text_err(e: LayoutError, span: Span, len: usize) -> Diagnostic {
    let s = match e.at {
        Some(at) => in_string(span, at, len),
        None => span,
    };
    let mut d = Diagnostic::at(e.message, s);
    if let Some(l) = e.label {
        d = d.with_label(l);
    }
    d
}

fn op_err(e: LayoutError, span: Span) -> Diagnostic {
    Diagnostic::at(e.message, span)
}

/// A CuTe layout argument (group `i`).
fn cute_arg(s: &mut Session, a: &Args, i: usize) -> Result<(Composed, Span), Diagnostic> {
    let g = a.groups().get(i).ok_or_else(|| {
        Diagnostic::at(format!("`{}` needs a layout here", a.call.name), a.span())
    })?;
    if let Some(Arg::Str(t, span)) = g.items.first() {
        return cute::parse(t)
            .map(|c| (c, *span))
            .map_err(|e| text_err(e, *span, t.len()));
    }
    match a.value(s, i)? {
        Value::Layout(l) if l.notation == Notation::Cute => cute::parse(&l.text)
            .map(|c| (c, g.span))
            .map_err(|e| op_err(e, g.span)),
        Value::Layout(_) => Err(Diagnostic::at(
            "a Triton linear layout, where a CuTe layout is needed",
            g.span,
        )),
        v => {
            let m = match v {
                Value::Map(m) => m,
                Value::Explained { map, .. } => map,
                v => {
                    return Err(Diagnostic::at(
                        format!("expected a layout, found a {}", v.kind()),
                        g.span,
                    ))
                }
            };
            recognize::to_cute(&m)
                .map(|l| (Composed::plain(l), g.span))
                .map_err(|why| {
                    Diagnostic::at("the map is not a CuTe layout", g.span).with_help(why)
                })
        }
    }
}

fn plain_arg(s: &mut Session, a: &Args, i: usize) -> Result<(Layout, Span), Diagnostic> {
    let (c, span) = cute_arg(s, a, i)?;
    if c.swizzle.is_some() || c.offset != 0 {
        return Err(Diagnostic::at(
            "the layout algebra takes layouts without a swizzle",
            span,
        ));
    }
    Ok((c.layout, span))
}

fn tiler_arg(s: &mut Session, a: &Args, i: usize) -> Result<Tiler, Diagnostic> {
    if let Some(Arg::Str(t, span)) = a.groups().get(i).and_then(|g| g.items.first()) {
        return cute::parse_tiler(t).map_err(|e| text_err(e, *span, t.len()));
    }
    Ok(Tiler::Layout(plain_arg(s, a, i)?.0))
}

fn shape_opt(a: &Args) -> Result<Option<Vec<i64>>, Diagnostic> {
    a.kv_tuple_positive("shape")
}

/// `shape=` where nothing reads it (it is a TTGIR attribute's tensor shape, and the shape
/// `access` addresses a linear layout's tensor by): an error at it saying why, after the
/// checks every shape= gets.
fn shape_unused(a: &Args, why: &str) -> Result<(), Diagnostic> {
    if a.kv("shape").is_none() {
        return Ok(());
    }
    shape_opt(a)?;
    Err(Diagnostic::at(
        format!("`shape=` does not apply: {why}"),
        a.kv_span("shape"),
    )
    .with_help(
        "shape=(M, N) gives a TTGIR layout attribute (\"#ttg.blocked<{...}>\") its tensor's shape",
    ))
}

/// Why shape= does not apply to a linear layout written out.
fn linear_has_shape(ll: &LinearLayout) -> String {
    let outs: Vec<String> = ll.outs.iter().map(|(_, n)| n.to_string()).collect();
    format!(
        "a linear layout's out dims are in its text ([{}])",
        outs.join(", ")
    )
}

const CUTE_HAS_SHAPE: &str =
    "a CuTe layout's shape is in its text (tile=(M, N) lays its offsets out over a tile)";

fn tile_opt(a: &Args) -> Result<Option<(i64, i64)>, Diagnostic> {
    match a.kv_tuple("tile")? {
        None => Ok(None),
        Some(v) if v.len() == 2 && v[0] > 0 && v[1] > 0 => Ok(Some((v[0], v[1]))),
        Some(_) => Err(Diagnostic::at(
            "`tile=` takes two positive sizes, (M, N)",
            a.kv_span("tile"),
        )),
    }
}

/// With `tile=(M, N)`, every offset of a CuTe layout must fall in the tile: offset `o` is
/// drawn at (o mod M, o floordiv M), so the tile holds the offsets [0, M·N). An offset past
/// it would widen the tile unsaid (tile=(2, 2) drawn 2 x 4), so it is an error at `tile=`.
fn check_tile(c: &Composed, tile: Option<(i64, i64)>, a: &Args) -> Result<(), Diagnostic> {
    let Some((m, n)) = tile else {
        return Ok(());
    };
    let size = c.layout.size();
    if size > 1 << 20 {
        // Too many to check here; the picture and the access analysis have their limits.
        return Ok(());
    }
    let cells = m.saturating_mul(n);
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    let mut first_out = None;
    for x in 0..size {
        let o = c.eval(x).map_err(|e| op_err(e, a.span()))?;
        lo = lo.min(o);
        hi = hi.max(o);
        if !(0..cells).contains(&o) && first_out.is_none() {
            first_out = Some((x, o));
        }
    }
    let Some((x, o)) = first_out else {
        return Ok(());
    };
    let d = Diagnostic::at(
        format!(
            "tile=({m}, {n}) holds the offsets 0 to {}, and the layout puts index {x} at offset {o}, outside the tile",
            cells - 1
        ),
        a.kv_span("tile"),
    );
    Err(if lo >= 0 {
        d.with_help(format!(
            "the offsets reach {hi}: tile=({m}, {}) holds them all",
            hi / m + 1
        ))
    } else {
        d
    })
}

/// A linear layout argument: Triton's printed text, a TTGIR attribute (with `shape=`), a
/// bound layout, or an F2-linear map.
fn linear_arg(
    s: &mut Session,
    a: &Args,
    i: usize,
) -> Result<(LinearLayout, Option<String>), Diagnostic> {
    let g = a.groups().get(i).ok_or_else(|| {
        Diagnostic::at(format!("`{}` needs a layout here", a.call.name), a.span())
    })?;
    if let Some(Arg::Str(t, span)) = g.items.first() {
        if ttgir::is_attribute(t) {
            let Some(shape) = shape_opt(a)? else {
                return Err(Diagnostic::at(
                    "a TTGIR layout attribute needs the tensor's shape",
                    *span,
                )
                .with_help("add shape=(M, N)"));
            };
            // The tensor's extents are powers of two: an error at the entry that is not.
            if let Some(d) = shape
                .iter()
                .position(|&x| x < 1 || x & (x - 1) != 0 || x > 1 << 24)
            {
                return Err(Diagnostic::at(
                    format!(
                        "shape[{d}] = {}: a TTGIR layout's tensor dimensions are powers of two (up to 2^24)",
                        shape[d]
                    ),
                    a.kv_item_span("shape", d),
                ));
            }
            let ll = ttgir::parse(t, &shape).map_err(|e| match e.at {
                Some(_) => text_err(e, *span, t.len()),
                // What has no place in the text is about the shape.
                None => op_err(e, a.kv("shape").map_or(*span, |x| x.span())),
            })?;
            let dims: Vec<String> = shape.iter().map(|x| x.to_string()).collect();
            return Ok((
                ll,
                Some(format!("{} for shape [{}]", t.trim(), dims.join(", "))),
            ));
        }
        return linear::parse(t)
            .map(|l| (l, None))
            .map_err(|e| text_err(e, *span, t.len()));
    }
    match a.value(s, i)? {
        Value::Layout(l) if l.notation == Notation::LinearLayout => linear::parse(&l.text)
            .map(|x| (x, None))
            .map_err(|e| op_err(e, g.span)),
        Value::Layout(l) => linear::from_map(&l.map).map(|x| (x, None)).map_err(|why| {
            Diagnostic::at("the layout is not linear over F2", g.span).with_help(why)
        }),
        Value::Map(m) | Value::Explained { map: m, .. } => linear::from_map(&m)
            .map(|x| (x, None))
            .map_err(|why| Diagnostic::at("the map is not a linear layout", g.span).with_help(why)),
        v => Err(Diagnostic::at(
            format!("expected a layout, found a {}", v.kind()),
            g.span,
        )),
    }
}

fn cute_value(c: &Composed, notes: Vec<String>) -> Value {
    Value::Layout(Box::new(LayoutValue {
        notation: Notation::Cute,
        text: c.to_string(),
        map: c.natural_map(),
        notes,
        picture: None,
        shape: cute_shape(&c.layout, None),
    }))
}

/// The extent of a CuTe layout's coordinates: `tile=(M, N)` when given (the offset laid
/// out over it), else the offsets up to its cosize.
fn cute_shape(l: &Layout, tile: Option<(i64, i64)>) -> Option<Vec<i64>> {
    match tile {
        Some((m, n)) => Some(vec![m, n]),
        None => l.cosize().ok().map(|c| vec![c]),
    }
}

fn linear_shape(ll: &LinearLayout) -> Option<Vec<i64>> {
    Some(ll.outs.iter().map(|(_, s)| *s).collect())
}

fn linear_layout(ll: &LinearLayout, tv: bool, notes: Vec<String>) -> LayoutValue {
    LayoutValue {
        notation: Notation::LinearLayout,
        text: ll.to_text(),
        map: if tv { tv_map(ll) } else { ll.to_map() },
        notes,
        picture: None,
        shape: linear_shape(ll),
    }
}

fn linear_value(ll: &LinearLayout, tv: bool, notes: Vec<String>) -> Value {
    Value::Layout(Box::new(linear_layout(ll, tv, notes)))
}

/// `(thread, value) -> outputs`: thread `lane + lanes · (warp + warps · block)`, value the
/// register (and any other input, first fastest).
fn tv_map(ll: &LinearLayout) -> crate::map::IndexingMap {
    use crate::expr::Expr;
    use crate::map::{IndexingMap, Variable};
    let m = ll.to_map();
    let size = |i: usize| ll.in_size(i);
    let mut thread_w = 1i64;
    let mut value_w = 1i64;
    let mut subst = vec![Expr::constant(0); ll.ins.len()];
    let thread_dims = ["lane", "warp", "block"];
    for key in thread_dims {
        if let Some(i) = ll.ins.iter().position(|(n, _)| n == key) {
            subst[i] = Expr::var(0)
                .floordiv(Expr::constant(thread_w))
                .modulo(Expr::constant(size(i)));
            thread_w *= size(i);
        }
    }
    for (i, (n, _)) in ll.ins.iter().enumerate() {
        if !thread_dims.contains(&n.as_str()) {
            subst[i] = Expr::var(1)
                .floordiv(Expr::constant(value_w))
                .modulo(Expr::constant(size(i)));
            value_w *= size(i);
        }
    }
    let results = m
        .results
        .iter()
        .map(|e| e.substitute(&mut |v| subst[v as usize]))
        .collect();
    let mut out = IndexingMap::new(
        vec![
            Variable::new("thread", 0, thread_w - 1),
            Variable::new("value", 0, value_w - 1),
        ],
        vec![],
        vec![],
        results,
        vec![],
    );
    out = crate::simplify::simplify(&out, &crate::simplify::SimplifyLimits::default()).map;
    out
}

fn layout(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let g = a.groups().first().ok_or_else(|| {
        Diagnostic::at("`layout` needs the layout's text in quotes", a.span())
            .with_help("e.g. layout \"(4,2):(1,4)\"")
    })?;
    let flat = a.flag("flat");
    let tv = a.flag("tv");
    let tile = tile_opt(a)?;
    let text = match g.items.first() {
        Some(Arg::Str(t, _)) => t.clone(),
        _ => {
            // A bound layout or a map: as a CuTe layout when it is one, else linear.
            let v = a.value(s, 0)?;
            shape_unused(a, "a bound layout or map has its shape")?;
            return Ok(v);
        }
    };
    let looks_linear = ttgir::is_attribute(&text) || text.contains("->");
    if looks_linear {
        let (ll, from) = linear_arg(s, a, 0)?;
        if from.is_none() {
            shape_unused(a, &linear_has_shape(&ll))?;
        }
        return Ok(linear_value(
            &ll,
            tv,
            from.into_iter().map(|f| format!("from {f}")).collect(),
        ));
    }
    let (c, _) = cute_arg(s, a, 0)?;
    shape_unused(a, CUTE_HAS_SHAPE)?;
    check_tile(&c, tile, a)?;
    let mut v = LayoutValue {
        notation: Notation::Cute,
        text: c.to_string(),
        map: if tv || tile.is_some() {
            c.mode_map(tile)
        } else if flat {
            c.flat_map()
        } else {
            c.natural_map()
        },
        notes: vec![],
        picture: None,
        shape: cute_shape(&c.layout, tile),
    };
    if tile.is_some() {
        v.notes.push(
            "offsets laid out column-major over the tile: (offset mod M, offset floordiv M)".into(),
        );
    }
    Ok(Value::Layout(Box::new(v)))
}

fn coalesce(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (l, _) = plain_arg(s, a, 0)?;
    Ok(cute_value(&Composed::plain(l.coalesce()), vec![]))
}

fn composition(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (ca, _) = cute_arg(s, a, 0)?;
    let (b, _) = plain_arg(s, a, 1)?;
    // (Sw o off o A) ∘ B = Sw o off o (A ∘ B).
    let r = cute::composition(&ca.layout, &b).map_err(|e| op_err(e, a.span()))?;
    Ok(cute_value(
        &Composed {
            swizzle: ca.swizzle,
            offset: ca.offset,
            layout: r,
        },
        vec![],
    ))
}

fn complement(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (l, span) = plain_arg(s, a, 0)?;
    let m = match a.kv_int("cotarget")? {
        // CuTe's complement(A, M) fills the codomain [0, M): M is a size, at least 1
        // (ceil_div(M, ...) of zero or a negative M is no layout of offsets).
        Some(m) if m < 1 => {
            return Err(Diagnostic::at(
                format!("`cotarget=` is the size of the codomain to fill, a positive integer, not {m}"),
                a.kv_span("cotarget"),
            )
            .with_help("complement(A, M) gives the offsets in [0, M) that A leaves out; M defaults to cosize A"))
        }
        Some(m) => m,
        None => l.cosize().map_err(|e| op_err(e, span))?,
    };
    let r = l.complement(m).map_err(|e| op_err(e, span))?;
    Ok(cute_value(&Composed::plain(r), vec![]))
}

fn right_inverse(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (l, _) = plain_arg(s, a, 0)?;
    Ok(cute_value(&Composed::plain(l.right_inverse()), vec![]))
}

fn left_inverse(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (l, span) = plain_arg(s, a, 0)?;
    let r = l.left_inverse().map_err(|e| op_err(e, span))?;
    Ok(cute_value(&Composed::plain(r), vec![]))
}

fn divide(
    s: &mut Session,
    a: &Args,
    f: fn(&Layout, &Tiler) -> crate::layout::Result<Layout>,
) -> Result<Value, Diagnostic> {
    let (l, _) = plain_arg(s, a, 0)?;
    let t = tiler_arg(s, a, 1)?;
    let r = f(&l, &t).map_err(|e| op_err(e, a.span()))?;
    Ok(cute_value(&Composed::plain(r), vec![]))
}

fn logical_divide(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    divide(s, a, cute::logical_divide)
}
fn zipped_divide(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    divide(s, a, cute::zipped_divide)
}
fn tiled_divide(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    divide(s, a, cute::tiled_divide)
}

fn product(
    s: &mut Session,
    a: &Args,
    f: fn(&Layout, &Layout) -> crate::layout::Result<Layout>,
) -> Result<Value, Diagnostic> {
    let (l, _) = plain_arg(s, a, 0)?;
    let (b, _) = plain_arg(s, a, 1)?;
    let r = f(&l, &b).map_err(|e| op_err(e, a.span()))?;
    Ok(cute_value(&Composed::plain(r), vec![]))
}

fn logical_product(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    product(s, a, cute::logical_product)
}
fn blocked_product(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    product(s, a, cute::blocked_product)
}
fn raked_product(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    product(s, a, cute::raked_product)
}

fn linear_compose(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (x, fx) = linear_arg(s, a, 0)?;
    let (y, fy) = linear_arg(s, a, 1)?;
    if fx.is_none() && fy.is_none() {
        shape_unused(
            a,
            "neither layout is a TTGIR attribute, and a linear layout's out dims are in its text",
        )?;
    }
    let r = LinearLayout::compose(&x, &y).map_err(|e| op_err(e, a.span()))?;
    Ok(linear_value(&r, false, vec![]))
}

fn linear_inverse(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (x, from) = linear_arg(s, a, 0)?;
    if from.is_none() {
        shape_unused(a, &linear_has_shape(&x))?;
    }
    let r = x.inverse().map_err(|e| op_err(e, a.span()))?;
    Ok(linear_value(&r, false, vec![]))
}

/// The layout argument of `picture` and `access`, as a value with a (thread, value) map,
/// whether `tile=` laid out its offsets (a CuTe layout's; checked to fit the tile), and
/// whether it is a TTGIR attribute (which read `shape=`).
fn tv_layout(s: &mut Session, a: &Args) -> Result<(LayoutValue, bool, bool), Diagnostic> {
    let tile = tile_opt(a)?;
    let g = a
        .groups()
        .first()
        .ok_or_else(|| Diagnostic::at(format!("`{}` needs a layout", a.call.name), a.span()))?;
    let linear_text = matches!(g.items.first(), Some(Arg::Str(t, _)) if ttgir::is_attribute(t) || t.contains("->"));
    if linear_text {
        let (ll, from) = linear_arg(s, a, 0)?;
        return Ok((linear_layout(&ll, false, vec![]), false, from.is_some()));
    }
    if let Some(Arg::Str(_, _)) = g.items.first() {
        let (c, _) = cute_arg(s, a, 0)?;
        check_tile(&c, tile, a)?;
        return Ok((
            LayoutValue {
                notation: Notation::Cute,
                text: c.to_string(),
                map: c.mode_map(tile),
                notes: vec![],
                picture: None,
                shape: cute_shape(&c.layout, tile),
            },
            tile.is_some(),
            false,
        ));
    }
    match a.value(s, 0)? {
        Value::Layout(l) if l.notation == Notation::Cute && tile.is_some() => {
            let c = cute::parse(&l.text).map_err(|e| op_err(e, g.span))?;
            check_tile(&c, tile, a)?;
            Ok((
                LayoutValue {
                    map: c.mode_map(tile),
                    shape: cute_shape(&c.layout, tile),
                    ..*l
                },
                true,
                false,
            ))
        }
        Value::Layout(l) => Ok((*l, false, false)),
        Value::Map(m) | Value::Explained { map: m, .. } => Ok((
            LayoutValue {
                notation: Notation::Cute,
                text: String::new(),
                map: m,
                notes: vec![],
                picture: None,
                shape: None,
            },
            false,
            false,
        )),
        v => Err(Diagnostic::at(
            format!("expected a layout or a map, found a {}", v.kind()),
            g.span,
        )),
    }
}

fn picture_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (mut l, _, ttgir) = tv_layout(s, a)?;
    if !ttgir {
        shape_unused(
            a,
            "the picture spans the layout's own coordinates; shape= is read by a TTGIR attribute",
        )?;
    }
    let tile = tile_opt(a)?;
    if let Some((m, n)) = tile {
        if m.saturating_mul(n) > picture::MAX_CELLS {
            return Err(Diagnostic::at(
                format!(
                    "tile=({m}, {n}) has more than {} cells, the most a picture draws",
                    picture::MAX_CELLS
                ),
                a.kv_span("tile"),
            ));
        }
    }
    let full = picture::picture(&l.map, tile, None).map_err(|e| op_err(e, a.span()))?;
    // The tile is the picture: an element drawn past it (a map's, a linear layout's) would
    // widen it unsaid.
    if let Some((m, n)) = tile {
        if full.rows as i64 > m || full.cols as i64 > n {
            return Err(Diagnostic::at(
                format!(
                    "tile=({m}, {n}): the layout has elements outside the tile, which its picture draws {} x {}",
                    full.rows, full.cols
                ),
                a.kv_span("tile"),
            ));
        }
    }
    let warp = a.kv_int("warp")?;
    if let Some(w) = warp {
        let span = a.kv_span("warp");
        if !full.has_threads {
            return Err(Diagnostic::at(
                "`warp=` keeps one warp's elements, and the layout has no threads",
                span,
            ));
        }
        let ws = picture::roles(&l.map).warp_size.max(1);
        let warps = ((full.threads + ws - 1) / ws).max(1);
        if !(0..warps).contains(&w) {
            return Err(Diagnostic::at(
                format!(
                    "`warp=` takes 0 to {}: the layout's {} threads make {warps} warp{} of {ws}, not {w}",
                    warps - 1,
                    full.threads,
                    if warps == 1 { "" } else { "s" }
                ),
                span,
            ));
        }
    }
    let p = match warp {
        Some(_) => picture::picture(&l.map, tile, warp).map_err(|e| op_err(e, a.span()))?,
        None => full,
    };
    if let Some(w) = warp {
        l.notes.push(format!(
            "warp {w} only: `.` where another warp (or none) holds the element"
        ));
    }
    l.notes.push(format!(
        "{} x {}: each element's {}",
        p.rows,
        p.cols,
        if p.has_threads {
            "thread T and value V (+k: k more threads hold a copy)"
        } else {
            "index"
        }
    ));
    l.picture = Some(p);
    Ok(Value::Layout(Box::new(l)))
}

fn access_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (l, tiled, _) = tv_layout(s, a)?;
    if l.notation != Notation::LinearLayout {
        shape_unused(
            a,
            "the tensor of a CuTe layout or a map is what it reaches, or tile=(M, N)",
        )?;
    }
    let bytes = a.kv_int_in("bytes", 1, 16)?.unwrap_or(4);
    let shape = match tile_opt(a)? {
        // The tensor is the tile, every offset checked to fall in it.
        Some((m, n)) if tiled => Some(vec![m, n]),
        Some(_) => {
            return Err(Diagnostic::at(
                "`tile=` lays out a CuTe layout's offsets over (M, N); this layout's results are coordinates already",
                a.kv_span("tile"),
            ))
        }
        None if l.notation == Notation::LinearLayout => shape_opt(a)?,
        None => None,
    };
    let r = access::analyse(&l.map, bytes, shape).map_err(|e| op_err(e, a.span()))?;
    let rows: Vec<Vec<String>> = r
        .accesses
        .iter()
        .map(|x| {
            vec![
                if x.width == 1 {
                    x.value.to_string()
                } else {
                    format!("{}..{}", x.value, x.value + x.width - 1)
                },
                x.lanes.to_string(),
                x.sectors.to_string(),
                x.ideal_sectors.to_string(),
                x.lines.to_string(),
                x.wavefronts.to_string(),
                x.ideal_wavefronts.to_string(),
            ]
        })
        .collect();
    let total: usize = r.accesses.iter().map(|x| x.sectors).sum();
    let ideal: usize = r.accesses.iter().map(|x| x.ideal_sectors).sum();
    let waves: usize = r.accesses.iter().map(|x| x.wavefronts).sum();
    let ideal_waves: usize = r.accesses.iter().map(|x| x.ideal_wavefronts).sum();
    let dims: Vec<String> = r.shape.iter().map(|x| x.to_string()).collect();
    Ok(Value::Table(Table {
        title: Some(format!(
            "warp {}: {}-byte elements, {} per access ({} bytes), tensor [{}] row-major",
            r.warp,
            r.bytes,
            r.width,
            r.width * r.bytes,
            dims.join(", ")
        )),
        headers: vec![
            "values".into(),
            "lanes".into(),
            "sectors".into(),
            "ideal".into(),
            "lines".into(),
            "wavefronts".into(),
            "ideal".into(),
        ],
        rows,
        notes: vec![
            format!(
                "global: {total} sectors of 32 bytes per warp, {ideal} at best{}",
                if total == ideal { " (coalesced)" } else { "" }
            ),
            format!(
                "shared: {waves} wavefronts per warp, {ideal_waves} at best{}",
                if waves == ideal_waves {
                    " (no bank conflict)"
                } else {
                    " (bank conflicts)"
                }
            ),
        ],
    }))
}

fn layouts(_: &mut Session, _: &Args) -> Result<Value, Diagnostic> {
    let row = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
    Ok(Value::Table(crate::value::Table {
        title: None,
        headers: vec!["notation".into(), "written (in quotes)".into()],
        rows: vec![
            row(
                "CuTe",
                "\"(4,2):(1,4)\"  \"((2,2),4):((1,4),2)\"  \"(_8,_4):(_4,_1)\"  \"(4,2)\" (compact)  \"Sw<3,4,3> o (8,64):(64,1)\"",
            ),
            row(
                "Triton linear layout",
                "the text Triton prints, one basis a line: \" - register=1 -> (0, 1)\", \" - lane=1 -> (1, 0)\", then \"where out dims are: [dim0 (size 2), dim1 (size 2)]\"",
            ),
            row(
                "TTGIR attribute",
                "\"#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>\" shape=(16, 32)",
            ),
            row(
                "",
                "also #ttg.slice, #ttg.nvidia_mma (versionMajor 2, 3), #ttg.dot_op, #ttg.swizzled_shared, #ttg.nvmma_shared",
            ),
            row(
                "maps",
                "`show M as cute`, `show M as linear_layout` print a map in either notation, or say why it is not one",
            ),
        ],
        notes: vec![],
    }))
}

/// `show M as cute` / `show M as linear_layout`: the map in that notation, or why not.
pub fn show_as(m: crate::map::IndexingMap, how: &str, span: Span) -> Result<Value, Diagnostic> {
    if how == "cute" {
        return match recognize::to_cute(&m) {
            Ok(l) => Ok(Value::Layout(Box::new(LayoutValue {
                notation: Notation::Cute,
                text: l.to_string(),
                shape: cute_shape(&l, None),
                map: m,
                notes: vec![],
                picture: None,
            }))),
            Err(why) => Err(Diagnostic::at("the map is not a CuTe layout", span).with_help(why)),
        };
    }
    match linear::from_map(&m) {
        Ok(ll) => Ok(Value::Layout(Box::new(LayoutValue {
            notation: Notation::LinearLayout,
            text: ll.to_text(),
            shape: linear_shape(&ll),
            map: m,
            notes: vec![],
            picture: None,
        }))),
        Err(why) => Err(Diagnostic::at("the map is not a linear layout", span).with_help(why)),
    }
}
