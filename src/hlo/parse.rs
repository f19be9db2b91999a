//! HLO text to the model: the `hlo_*` rules of `grammar.pest`, lowered one function per
//! rule. The statement grammar already classified the text as HLO; this parser reads the
//! same rules again with spans, so every error points at the user's token.
//!
//! ```text
//! "bc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}"
//!   -> HloItem::Instr(RawInstr { name: "bc0", opcode: "broadcast", operands: ["p0"],
//!                                attrs.dimensions: Some([1]), .. })
//! ```
//!
//! Operand names are resolved later (by [`super::workspace::Workspace`]), since loose
//! instruction lines refer to instructions from earlier statements.

use super::attrs::Attrs;
use super::shape::Shape;
use crate::syntax::{Diagnostic, Span};
use pest::iterators::Pair;
use pest::Parser;

#[derive(pest_derive::Parser)]
#[grammar = "../grammar.pest"]
struct HloParser;

/// An operand as written: `p0`, `%p0` or `f32[10] p0`.
#[derive(Clone, Debug)]
pub struct RawOperand {
    pub name: String,
    pub span: Span,
    pub shape: Option<Shape>,
}

/// An instruction line before its operands are resolved.
#[derive(Clone, Debug)]
pub struct RawInstr {
    pub name: String,
    pub name_span: Span,
    /// `None` when left out (`ROOT r = negate(x)` in a computation): inferred from the
    /// operands when the computation is built.
    pub shape: Option<Shape>,
    pub shape_span: Span,
    pub opcode: String,
    pub opcode_span: Span,
    pub operands: Vec<RawOperand>,
    pub attrs: Attrs,
    /// Span of each attribute's value, by key.
    pub attr_spans: Vec<(String, Span)>,
    pub is_root: bool,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct RawComputation {
    pub name: String,
    pub name_span: Span,
    pub is_entry: bool,
    pub instrs: Vec<RawInstr>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum HloItem {
    Module {
        name: String,
        span: Span,
    },
    /// A stack-frame table with the rows written in the same statement (a file's rows), each
    /// row's id, text and span.
    Table {
        table: super::frames::FrameTable,
        rows: Vec<(u64, String, Span)>,
        span: Span,
    },
    /// One row typed alone (the REPL reads a pasted table line by line): it belongs to the
    /// table opened last.
    TableRow {
        id: u64,
        text: String,
        span: Span,
    },
    Computation(RawComputation),
    Instr(RawInstr),
}

/// XLA's opcodes (`hlo_opcode.h`), as HLO text spells them.
pub const XLA_OPCODES: &[&str] = &[
    "abs",
    "add",
    "add-dependency",
    "after-all",
    "all-gather",
    "all-gather-done",
    "all-gather-start",
    "all-reduce",
    "all-reduce-done",
    "all-reduce-start",
    "all-to-all",
    "and",
    "async-done",
    "async-start",
    "async-update",
    "atan2",
    "batch-norm-grad",
    "batch-norm-inference",
    "batch-norm-training",
    "bitcast",
    "bitcast-convert",
    "broadcast",
    "call",
    "cbrt",
    "ceil",
    "cholesky",
    "clamp",
    "clz",
    "collective-broadcast",
    "collective-permute",
    "collective-permute-done",
    "collective-permute-start",
    "compare",
    "complex",
    "concatenate",
    "conditional",
    "constant",
    "convert",
    "convolution",
    "copy",
    "copy-done",
    "copy-start",
    "cosine",
    "count-leading-zeros",
    "custom-call",
    "divide",
    "domain",
    "dot",
    "dynamic-reshape",
    "dynamic-slice",
    "dynamic-update-slice",
    "erf",
    "exponential",
    "exponential-minus-one",
    "fft",
    "floor",
    "fusion",
    "gather",
    "get-dimension-size",
    "get-tuple-element",
    "imag",
    "infeed",
    "iota",
    "is-finite",
    "log",
    "log-plus-one",
    "logistic",
    "map",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "optimization-barrier",
    "or",
    "outfeed",
    "pad",
    "parameter",
    "partition-id",
    "popcnt",
    "power",
    "ragged-all-to-all",
    "real",
    "recv",
    "recv-done",
    "reduce",
    "reduce-precision",
    "reduce-scatter",
    "reduce-window",
    "remainder",
    "replica-id",
    "reshape",
    "reverse",
    "rng",
    "rng-bit-generator",
    "rng-get-and-update-state",
    "round-nearest-afz",
    "round-nearest-even",
    "rsqrt",
    "scaled-dot",
    "scatter",
    "select",
    "select-and-scatter",
    "send",
    "send-done",
    "set-dimension-size",
    "shift-left",
    "shift-right-arithmetic",
    "shift-right-logical",
    "sign",
    "sine",
    "slice",
    "sort",
    "sqrt",
    "stochastic-convert",
    "subtract",
    "tan",
    "tanh",
    "topk",
    "transpose",
    "triangular-solve",
    "tuple",
    "while",
    "xor",
];

/// Parses one HLO statement: `text` starts at byte `offset` of the session source.
pub fn parse_hlo(text: &str, offset: usize) -> Result<HloItem, Diagnostic> {
    let mut pairs = HloParser::parse(Rule::hlo_stmt, text).map_err(|e| {
        use pest::error::InputLocation;
        let pos = match e.location {
            InputLocation::Pos(p) => p,
            InputLocation::Span((s, _)) => s,
        };
        Diagnostic::at(
            "cannot read this HLO",
            Span::new(offset + pos, offset + pos + 1),
        )
    })?;
    let stmt = pairs.next().expect("grammar: hlo_stmt matched");
    let lw = Lower { offset };
    let body = stmt
        .into_inner()
        .next()
        .expect("grammar: hlo_stmt has a body");
    match body.as_rule() {
        Rule::hlo_module => {
            let span = lw.span(&body);
            let name = body
                .into_inner()
                .next()
                .expect("grammar: module has a name");
            Ok(HloItem::Module {
                name: strip(name.as_str()),
                span,
            })
        }
        Rule::hlo_table => {
            let span = lw.span(&body);
            let mut it = body.into_inner();
            let name = it.next().expect("grammar: a table has a name");
            let table = super::frames::FrameTable::from_name(name.as_str())
                .expect("grammar: the four table names");
            let rows = it.map(|r| lw.table_row(r)).collect::<Result<_, _>>()?;
            Ok(HloItem::Table { table, rows, span })
        }
        Rule::hlo_table_row => {
            let (id, text, span) = lw.table_row(body)?;
            Ok(HloItem::TableRow { id, text, span })
        }
        Rule::hlo_computation => Ok(HloItem::Computation(lw.computation(body)?)),
        Rule::hlo_instr => Ok(HloItem::Instr(lw.instr(body)?)),
        r => unreachable!("grammar: hlo_stmt cannot be {r:?}"),
    }
}

fn strip(name: &str) -> String {
    name.strip_prefix('%').unwrap_or(name).to_string()
}

struct Lower {
    offset: usize,
}

impl Lower {
    fn span(&self, p: &Pair<Rule>) -> Span {
        let s = p.as_span();
        Span::new(self.offset + s.start(), self.offset + s.end())
    }

    /// `1 "models.py"` or `1 {file_location_id=1 parent_frame_id=1}`: the id, the text
    /// after it and the text's span.
    fn table_row(&self, p: Pair<Rule>) -> Result<(u64, String, Span), Diagnostic> {
        let mut it = p.into_inner();
        let id = it.next().expect("grammar: a row has an id");
        let text = it.next().expect("grammar: a row has a value");
        let n = id
            .as_str()
            .parse::<u64>()
            .map_err(|_| Diagnostic::at("a table row's id must fit in 64 bits", self.span(&id)))?;
        Ok((n, text.as_str().to_string(), self.span(&text)))
    }

    fn computation(&self, p: Pair<Rule>) -> Result<RawComputation, Diagnostic> {
        let span = self.span(&p);
        let mut c = RawComputation {
            name: String::new(),
            name_span: span,
            is_entry: false,
            instrs: vec![],
            span,
        };
        for part in p.into_inner() {
            match part.as_rule() {
                Rule::hlo_entry => c.is_entry = true,
                Rule::hlo_name => {
                    c.name = strip(part.as_str());
                    c.name_span = self.span(&part);
                }
                Rule::hlo_signature => {}
                Rule::hlo_body_instr => c.instrs.push(self.instr(part)?),
                // Computation attributes (`execution_thread=...`): kept by XLA, not used here.
                Rule::hlo_attr => {}
                r => unreachable!("grammar: a computation cannot contain {r:?}"),
            }
        }
        Ok(c)
    }

    fn instr(&self, p: Pair<Rule>) -> Result<RawInstr, Diagnostic> {
        let span = self.span(&p);
        let mut it = p.into_inner().peekable();
        let is_root = it.peek().is_some_and(|x| x.as_rule() == Rule::hlo_root);
        if is_root {
            it.next();
        }
        let name = it.next().expect("grammar: instruction has a name");
        let shape = match it.peek() {
            Some(x) if x.as_rule() == Rule::hlo_shape => it.next(),
            _ => None,
        };
        let opcode = it.next().expect("grammar: instruction has an opcode");
        let operands = it.next().expect("grammar: instruction has operands");
        let opname = opcode.as_str().to_string();
        let parsed_shape = shape.as_ref().map(|s| self.shape(s.clone())).transpose()?;
        // An opcode XLA does not have, one typo from one it has, is that typo; others pass
        // (a newer XLA's opcode loads as an unknown op).
        if !XLA_OPCODES.contains(&opname.as_str()) {
            if let Some(s) = crate::syntax::suggest(&opname, XLA_OPCODES.iter().copied()) {
                return Err(Diagnostic::at(
                    format!("unknown opcode `{opname}`"),
                    self.span(&opcode),
                )
                .with_label("not an XLA opcode")
                .with_help(format!("did you mean `{s}`?")));
            }
        }
        let mut attrs = Attrs::default();
        let mut raw_ops = Vec::new();
        let operands_span = self.span(&operands);
        let operands_text = operands.as_str();
        for o in operands.into_inner() {
            let ospan = self.span(&o);
            let inner: Vec<Pair<Rule>> = o.into_inner().collect();
            match inner.as_slice() {
                [s, n] => raw_ops.push(RawOperand {
                    name: strip(n.as_str()),
                    span: self.span(n),
                    shape: Some(self.shape(s.clone())?),
                }),
                [l] => raw_ops.push(RawOperand {
                    name: strip(l.as_str()),
                    span: ospan,
                    shape: None,
                }),
                _ => unreachable!("grammar: hlo_operand is a name, a shaped name or a literal"),
            }
        }
        // Nullary ops take their payload in the operand list.
        match opname.as_str() {
            "parameter" => {
                let n = raw_ops
                    .first()
                    .and_then(|o| o.name.parse::<i64>().ok())
                    .filter(|n| *n >= 0);
                match n {
                    Some(n) if raw_ops.len() == 1 => attrs.parameter_number = Some(n),
                    _ => {
                        return Err(Diagnostic::at(
                            "`parameter` takes its number, e.g. parameter(0)",
                            operands_span,
                        )
                        .with_label("expected a non-negative integer"))
                    }
                }
                raw_ops.clear();
            }
            "constant" => {
                if let Some(s) = &parsed_shape {
                    check_literal(operands_text, operands_span.start, s)?;
                }
                let text = operands_span_text(&raw_ops);
                attrs.literal = Some(text);
                raw_ops.clear();
            }
            _ => {}
        }
        let mut attr_spans = Vec::new();
        for a in it {
            let mut kv = a.into_inner();
            let key = kv.next().expect("grammar: attribute has a key");
            let val = kv.next().expect("grammar: attribute has a value");
            let vspan = self.span(&val);
            attrs.set(key.as_str(), val.as_str()).map_err(|e| {
                Diagnostic::at(
                    format!(
                        "bad attribute `{}` of `{}`: {}",
                        key.as_str(),
                        strip(name.as_str()),
                        e.message
                    ),
                    Span::new(vspan.start + e.start, vspan.start + e.end.max(e.start + 1)),
                )
                .with_label("here")
            })?;
            attr_spans.push((key.as_str().to_string(), vspan));
        }
        Ok(RawInstr {
            name: strip(name.as_str()),
            name_span: self.span(&name),
            shape_span: shape.as_ref().map_or(self.span(&opcode), |s| self.span(s)),
            shape: parsed_shape,
            opcode: opname,
            opcode_span: self.span(&opcode),
            operands: raw_ops,
            attrs,
            attr_spans,
            is_root,
            span,
        })
    }

    fn shape(&self, p: Pair<Rule>) -> Result<Shape, Diagnostic> {
        let inner = match p.as_rule() {
            Rule::hlo_shape => p
                .into_inner()
                .next()
                .expect("grammar: hlo_shape has a body"),
            _ => p,
        };
        match inner.as_rule() {
            Rule::hlo_tuple_shape => Ok(Shape::Tuple(
                inner
                    .into_inner()
                    .map(|s| self.shape(s))
                    .collect::<Result<_, _>>()?,
            )),
            Rule::hlo_array_shape => {
                let mut elem = String::new();
                let mut dims = Vec::new();
                let mut layout = None;
                for part in inner.into_inner() {
                    match part.as_rule() {
                        Rule::hlo_elem_type => {
                            elem = part.as_str().to_string();
                            if super::shape::elem_class(&elem).is_none() {
                                return Err(unknown_elem_type(&elem, self.span(&part)));
                            }
                        }
                        Rule::hlo_token_type => return Ok(Shape::Token),
                        Rule::hlo_dims => {
                            for d in part.into_inner() {
                                let t = d.as_str();
                                if t == "?" {
                                    return Err(Diagnostic::at(
                                        "an unbounded dynamic dimension has no size to index",
                                        self.span(&d),
                                    )
                                    .with_help("give it a bound, as in `f32[<=8]`: bounded dimensions are indexed at their bound"));
                                }
                                // A bounded dynamic dimension `<=N` is indexed at its
                                // bound N, as XLA's analysis does (a dynamic shape's
                                // dimensions are its bounds).
                                let t = t.strip_prefix("<=").unwrap_or(t).trim();
                                let v = t.parse::<i64>().map_err(|_| {
                                    Diagnostic::at(
                                        format!("dimension `{t}` does not fit in 64 bits"),
                                        self.span(&d),
                                    )
                                })?;
                                dims.push(v);
                            }
                        }
                        Rule::hlo_layout => layout = Some(self.layout(&part, dims.len())?),
                        r => unreachable!("grammar: an array shape cannot contain {r:?}"),
                    }
                }
                Ok(Shape::Array { elem, dims, layout })
            }
            r => unreachable!("grammar: a shape cannot be {r:?}"),
        }
    }

    /// `{1,0}` or `{1,0:T(8,128)}`: the minor-to-major list before any `:`.
    fn layout(&self, p: &Pair<Rule>, rank: usize) -> Result<Vec<usize>, Diagnostic> {
        let t = p.as_str();
        let body = &t[1..t.len() - 1];
        let body = body.split(':').next().unwrap_or("");
        let mut out = Vec::new();
        for x in body.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            match x.parse::<usize>() {
                Ok(v) if v < rank && !out.contains(&v) => out.push(v),
                _ => {
                    return Err(Diagnostic::at(
                        format!("bad layout `{t}` for a rank-{rank} shape"),
                        self.span(p),
                    )
                    .with_help("a layout lists every dimension once, minor to major, e.g. {1,0}"))
                }
            }
        }
        if out.len() != rank {
            return Err(Diagnostic::at(
                format!("bad layout `{t}` for a rank-{rank} shape"),
                self.span(p),
            )
            .with_help("a layout lists every dimension once, minor to major, e.g. {1,0}"));
        }
        Ok(out)
    }
}

/// An element type XLA does not have (`f33[4]`): the list of those it has.
fn unknown_elem_type(elem: &str, span: Span) -> Diagnostic {
    use super::shape::ELEMENT_TYPES;
    let known: Vec<&str> = ELEMENT_TYPES.iter().map(|(n, _, _)| *n).collect();
    let mut help = String::new();
    if let Some(s) = crate::syntax::suggest(elem, known.iter().copied()) {
        help = format!("did you mean `{s}`? ");
    }
    help += &format!(
        "XLA's element types are {} (and `token[]`)",
        known.join(", ")
    );
    Diagnostic::at(format!("unknown element type `{elem}`"), span)
        .with_label("not an XLA element type")
        .with_help(help)
}

/// Every number of a `constant`'s literal (`(300)`, `({1, 300})`, `((1, -2))` for a
/// complex, at byte `base`) fits the element type, as XLA's parser requires: an integer
/// within the type's range (`s8[] constant(300)` is an error, not -44), a `pred` true,
/// false, 1 or 0, a float finite where it is written finite (`f16[] constant(70000)` would
/// round to infinity). The 8- and 4-bit float types are not checked; `{...}` (a large
/// constant XLA printed elided) passes.
fn check_literal(text: &str, base: usize, shape: &Shape) -> Result<(), Diagnostic> {
    use super::shape::{elem_class, ElemClass, ELEMENT_TYPES};
    let Shape::Array { elem, .. } = shape else {
        return Ok(());
    };
    let Some(class) = elem_class(elem) else {
        return Ok(());
    };
    let bits = ELEMENT_TYPES
        .iter()
        .find(|(n, _, _)| n == elem)
        .map_or(0, |&(_, _, b)| b);
    let part = super::shape::real_part_type(elem);
    let separators = text
        .char_indices()
        .filter(|&(_, c)| matches!(c, '{' | '}' | '(' | ')' | ',') || c.is_whitespace());
    let mut start = 0;
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    for (i, c) in separators {
        if i > start {
            cuts.push((start, i));
        }
        start = i + c.len_utf8();
    }
    if start < text.len() {
        cuts.push((start, text.len()));
    }
    for (a, b) in cuts {
        let w = &text[a..b];
        let span = Span::new(base + a, base + b);
        // `...` (elided), and a shape written before the literal (`s32[2] {1, 2}`)
        if w == "..." || w.contains('[') || w.contains(']') {
            continue;
        }
        let bad =
            |msg: String, label: &str| Err(Diagnostic::at(msg, span).with_label(label.to_string()));
        match class {
            ElemClass::Pred => {
                if !matches!(w, "true" | "false" | "1" | "0") {
                    return Err(Diagnostic::at(format!("`{w}` is not a pred literal"), span)
                        .with_label("not true or false")
                        .with_help("a pred is `true` or `false` (or 1 or 0)"));
                }
            }
            ElemClass::Signed | ElemClass::Unsigned => {
                if matches!(w, "true" | "false") {
                    continue;
                }
                let Ok(v) = w.parse::<i128>() else {
                    return bad(
                        format!("`{w}` is not an integer, as an {elem} literal must be"),
                        "not an integer",
                    );
                };
                let (lo, hi) = if class == ElemClass::Signed {
                    (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
                } else {
                    (0, (1i128 << bits) - 1)
                };
                if v < lo || v > hi {
                    return bad(
                        format!("`{w}` does not fit in {elem}, whose values are {lo} to {hi}"),
                        "out of range",
                    );
                }
            }
            ElemClass::Float | ElemClass::Complex => {
                // The least magnitude that rounds to infinity (the largest finite value
                // plus half its unit in the last place).
                let (limit, largest) = match part {
                    "f16" => (65520.0, "65504"),
                    "bf16" => (2f64.powi(128) - 2f64.powi(119), "3.38953139e+38"),
                    "f32" => (2f64.powi(128) - 2f64.powi(103), "3.40282347e+38"),
                    "f64" => (f64::INFINITY, "1.7976931348623157e+308"),
                    _ => continue,
                };
                let unsigned = w.trim_start_matches(['-', '+']).to_ascii_lowercase();
                if unsigned.starts_with("inf") || unsigned.starts_with("nan") {
                    continue;
                }
                if let Ok(v) = w.parse::<f64>() {
                    if v.is_infinite() || v.abs() >= limit {
                        return Err(Diagnostic::at(
                            format!("`{w}` is beyond {part}'s largest finite value, {largest}"),
                            span,
                        )
                        .with_label("out of range")
                        .with_help("write `inf` (or `-inf`) for an infinity"));
                    }
                }
            }
            ElemClass::Opaque => {}
        }
    }
    Ok(())
}

fn operands_span_text(ops: &[RawOperand]) -> String {
    ops.iter()
        .map(|o| o.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_opcode_one_typo_from_xla_s_is_an_error_with_the_opcode() {
        let e = super::parse_hlo("n = f32[4] negat(p0)", 0).unwrap_err();
        assert_eq!(e.message, "unknown opcode `negat`");
        assert_eq!(e.span, Some(crate::syntax::Span::new(11, 16)));
        assert_eq!(e.help.as_deref(), Some("did you mean `negate`?"));
        let e = super::parse_hlo("p = f32[4] paramter(0)", 0).unwrap_err();
        assert_eq!(e.help.as_deref(), Some("did you mean `parameter`?"));
        // every opcode of the op table is XLA's; one far from all of them still loads
        for op in crate::hlo::ops::known_opcodes() {
            assert!(super::XLA_OPCODES.contains(&op), "{op}");
        }
        assert!(super::parse_hlo("x = f32[4] frobnicate-widgets(p0)", 0).is_ok());
    }

    use super::*;

    #[track_caller]
    fn literal_error(line: &str) -> Option<String> {
        parse_hlo(line, 0).err().map(|e| e.message)
    }

    #[test]
    fn literals_fit_their_types_at_the_edges() {
        for ok in [
            "k = s8[] constant(-128)",
            "k = u64[] constant(18446744073709551615)",
            "k = s64[] constant(-9223372036854775808)",
            "k = f16[] constant(-65504)",
            "k = f16[] constant(65519.99)",
            "k = f32[] constant(-3.4028235e+38)",
            "k = bf16[] constant(nan)",
            "k = f32[2] constant({inf, -inf})",
            "k = c64[] constant((1, -2.5e38))",
            "k = s32[100] constant({...})",
            "k = pred[2] constant({true, 0})",
            "k = f8e4m3fn[] constant(1000)",
        ] {
            assert_eq!(literal_error(ok), None, "{ok}");
        }
        for bad in [
            "k = s8[] constant(-129)",
            "k = u64[] constant(18446744073709551616)",
            "k = s64[] constant(9223372036854775808)",
            "k = s4[] constant(8)",
            "k = f16[] constant(65520)",
            "k = f32[] constant(3.4028236e+38)",
            "k = c64[] constant((1, 1e39))",
            "k = pred[] constant(-1)",
            "k = u8[] constant(x)",
        ] {
            assert!(literal_error(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn reads_an_instruction_line() {
        let HloItem::Instr(i) = parse_hlo(
            "bc0 = f32[10, 20, 30]{2,1,0} broadcast(f32[20] %p0), dimensions={1}",
            0,
        )
        .unwrap() else {
            panic!("expected an instruction")
        };
        assert_eq!(i.name, "bc0");
        assert_eq!(i.opcode, "broadcast");
        assert_eq!(i.shape.as_ref().unwrap().dims(), &[10, 20, 30]);
        assert_eq!(i.operands[0].name, "p0");
        assert_eq!(i.attrs.dimensions, Some(vec![1]));
    }

    #[test]
    fn reads_a_computation() {
        let src = "f {\n p0 = f32[4] parameter(0)\n ROOT n = f32[4] negate(p0), metadata={op_name=\"x\"}\n}";
        let HloItem::Computation(c) = parse_hlo(src, 0).unwrap() else {
            panic!("expected a computation")
        };
        assert_eq!(c.instrs.len(), 2);
        assert!(c.instrs[1].is_root);
        assert_eq!(c.instrs[0].attrs.parameter_number, Some(0));
    }
}
