//! The syntax tree. Every node carries a [`Span`] (byte offsets into the source given to
//! [`crate::syntax::parse`]), so errors found later still point at the user's text.

use crate::expr::Op;

/// Byte offsets `start..end` into the source.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }
    pub fn join(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

#[derive(Clone, Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum StmtKind {
    /// `NAME = MAP` or `NAME = COMMAND ...`
    Bind { name: String, name_span: Span, value: Rhs },
    /// A map or a command whose result is printed.
    Eval(Rhs),
    /// HLO text: an instruction line, a computation, a module header.
    Hlo(HloText),
}

/// HLO text, kept verbatim; `crate::hlo` parses it.
#[derive(Clone, Debug)]
pub struct HloText {
    pub text: String,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum Rhs {
    Map(MapLit),
    Command(CommandCall),
}

#[derive(Clone, Debug)]
pub struct CommandCall {
    pub name: String,
    pub name_span: Span,
    pub groups: Vec<ArgGroup>,
    pub span: Span,
}

/// Arguments between two commas.
#[derive(Clone, Debug)]
pub struct ArgGroup {
    pub items: Vec<Arg>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum Arg {
    Map(MapLit),
    Word(String, Span),
    Int(i64, Span),
    Str(String, Span),
    Tuple(Vec<Arg>, Span),
    /// `(command args, ...)`: a nested command with its own argument groups.
    Command(Box<CommandCall>),
    /// `key=value`; the value is a word, an int, a tuple or a string.
    Kv(String, Box<Arg>, Span),
}

impl Arg {
    pub fn span(&self) -> Span {
        match self {
            Arg::Map(m) => m.span,
            Arg::Command(c) => c.span,
            Arg::Word(_, s) | Arg::Int(_, s) | Arg::Str(_, s) | Arg::Tuple(_, s) | Arg::Kv(_, _, s) => *s,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MapForm {
    Xla,
    Affine,
    Undefined,
    KnownEmpty,
}

#[derive(Clone, Debug)]
pub struct MapLit {
    pub form: MapForm,
    pub dims: Vec<(String, Span)>,
    pub ranges: Vec<(String, Span)>,
    pub runtimes: Vec<(String, Span)>,
    pub results: Vec<ExprLit>,
    pub domain: Vec<DomainItem>,
    pub domain_known_empty: bool,
    pub is_simplified: Option<bool>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct DomainItem {
    pub expr: ExprLit,
    pub lo: i64,
    pub hi: i64,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum ExprLit {
    Int(i64, Span),
    Var(String, Span),
    Neg(Box<ExprLit>, Span),
    Bin(Op, Box<ExprLit>, Box<ExprLit>, Span),
}

impl ExprLit {
    pub fn span(&self) -> Span {
        match self {
            ExprLit::Int(_, s) | ExprLit::Var(_, s) | ExprLit::Neg(_, s) | ExprLit::Bin(_, _, _, s) => *s,
        }
    }
}
