//! HLO shapes: `f32[10,20]{1,0}` (element type, dimensions, minor-to-major layout), tuples
//! `(f32[10], s32[10])`, `token[]`.
//!
//! The layout lists dimensions from the most minor (fastest varying in memory) to the most
//! major; `{1,0}` is row-major for rank 2 and is the default when no layout is written.
//!
//! ```text
//! f32[10,20]{0,1}:  logical (i, j)  lives at physical offset  j * 10 + i
//! ```

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    Array {
        elem: String,
        dims: Vec<i64>,
        layout: Option<Vec<usize>>,
    },
    Tuple(Vec<Shape>),
    Token,
}

impl Shape {
    pub fn array(elem: &str, dims: &[i64]) -> Shape {
        Shape::Array {
            elem: elem.to_string(),
            dims: dims.to_vec(),
            layout: None,
        }
    }
    /// The first array in the shape (itself, or the first tuple element, recursively).
    pub fn first_array(&self) -> Option<(&[i64], &str)> {
        match self {
            Shape::Array { elem, dims, .. } => Some((dims, elem)),
            Shape::Tuple(v) => v.iter().find_map(|s| s.first_array()),
            Shape::Token => None,
        }
    }
    pub fn dims(&self) -> &[i64] {
        self.first_array().map_or(&[], |s| s.0)
    }
    pub fn elem(&self) -> &str {
        self.first_array().map_or("token", |s| s.1)
    }
    pub fn is_tuple(&self) -> bool {
        matches!(self, Shape::Tuple(_))
    }
    pub fn tuple_elements(&self) -> &[Shape] {
        match self {
            Shape::Tuple(v) => v,
            _ => std::slice::from_ref(self),
        }
    }
    /// Number of elements, if it fits in i64.
    pub fn num_elements(&self) -> Option<i64> {
        self.dims().iter().try_fold(1i64, |a, &d| a.checked_mul(d))
    }
    /// Minor-to-major order of the dimensions; the default is row-major (`{r-1, ..., 0}`).
    pub fn minor_to_major(&self) -> Vec<usize> {
        match self {
            Shape::Array {
                layout: Some(l),
                dims,
                ..
            } if l.len() == dims.len() => l.clone(),
            _ => (0..self.dims().len()).rev().collect(),
        }
    }
    /// Major-to-minor order: the physical dimension order, outermost first.
    pub fn major_to_minor(&self) -> Vec<usize> {
        let mut v = self.minor_to_major();
        v.reverse();
        v
    }
    /// Whether the layout is the default row-major one.
    pub fn has_default_layout(&self) -> bool {
        self.minor_to_major()
            .iter()
            .rev()
            .copied()
            .eq(0..self.dims().len())
    }
    /// The shape with its dims permuted into physical (major-to-minor) order and a default
    /// layout: the "physical shape" that bitcasts and coalescing reason about.
    pub fn physical(&self) -> Shape {
        let d = self.dims();
        let dims: Vec<i64> = self.major_to_minor().iter().map(|&k| d[k]).collect();
        Shape::Array {
            elem: self.elem().to_string(),
            dims,
            layout: None,
        }
    }
}

/// What an element type holds: the classes that decide which ops take it (the table in
/// `ops/elementwise.rs`) and which literals fit it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElemClass {
    Pred,
    Signed,
    Unsigned,
    Float,
    Complex,
    /// `opaque` (and `token`): no values an elementwise op or a literal can hold.
    Opaque,
}

/// XLA's element types as HLO text spells them (`PrimitiveType` in `xla_data.proto`), each
/// with its class and width in bits (a complex type's width is its two parts').
pub const ELEMENT_TYPES: &[(&str, ElemClass, u32)] = &[
    ("pred", ElemClass::Pred, 8),
    ("s1", ElemClass::Signed, 1),
    ("s2", ElemClass::Signed, 2),
    ("s4", ElemClass::Signed, 4),
    ("s8", ElemClass::Signed, 8),
    ("s16", ElemClass::Signed, 16),
    ("s32", ElemClass::Signed, 32),
    ("s64", ElemClass::Signed, 64),
    ("u1", ElemClass::Unsigned, 1),
    ("u2", ElemClass::Unsigned, 2),
    ("u4", ElemClass::Unsigned, 4),
    ("u8", ElemClass::Unsigned, 8),
    ("u16", ElemClass::Unsigned, 16),
    ("u32", ElemClass::Unsigned, 32),
    ("u64", ElemClass::Unsigned, 64),
    ("f4e2m1fn", ElemClass::Float, 4),
    ("f8e3m4", ElemClass::Float, 8),
    ("f8e4m3", ElemClass::Float, 8),
    ("f8e4m3fn", ElemClass::Float, 8),
    ("f8e4m3b11fnuz", ElemClass::Float, 8),
    ("f8e4m3fnuz", ElemClass::Float, 8),
    ("f8e5m2", ElemClass::Float, 8),
    ("f8e5m2fnuz", ElemClass::Float, 8),
    ("f8e8m0fnu", ElemClass::Float, 8),
    ("bf16", ElemClass::Float, 16),
    ("f16", ElemClass::Float, 16),
    ("f32", ElemClass::Float, 32),
    ("f64", ElemClass::Float, 64),
    ("c64", ElemClass::Complex, 64),
    ("c128", ElemClass::Complex, 128),
    ("opaque", ElemClass::Opaque, 0),
];

/// The class of an element type; `None` for a name XLA does not have (`f33`).
pub fn elem_class(elem: &str) -> Option<ElemClass> {
    if elem == "token" {
        return Some(ElemClass::Opaque);
    }
    ELEMENT_TYPES
        .iter()
        .find(|(n, _, _)| *n == elem)
        .map(|&(_, c, _)| c)
}

/// The element type of a complex type's parts (`c64` -> `f32`); a real type is its own.
pub fn real_part_type(elem: &str) -> &str {
    match elem {
        "c64" => "f32",
        "c128" => "f64",
        e => e,
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Token => write!(f, "token[]"),
            Shape::Tuple(v) => {
                write!(f, "(")?;
                for (i, s) in v.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{s}")?;
                }
                write!(f, ")")
            }
            Shape::Array { elem, dims, layout } => {
                let ds: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
                write!(f, "{elem}[{}]", ds.join(","))?;
                if let Some(l) = layout {
                    let ls: Vec<String> = l.iter().map(|d| d.to_string()).collect();
                    write!(f, "{{{}}}", ls.join(","))?;
                }
                Ok(())
            }
        }
    }
}

impl Shape {
    /// The map from a logical index to the physical one (the dims in major-to-minor order):
    /// `f32[10,20]{0,1}`: `(d0, d1) -> (d1, d0)`. The identity for the default layout.
    pub fn logical_to_physical(&self) -> crate::map::IndexingMap {
        let d = self.dims();
        let order = self.major_to_minor();
        let mut m = crate::map::IndexingMap::identity(d);
        m.results = order
            .iter()
            .map(|&k| crate::expr::Expr::var(k as u32))
            .collect();
        m
    }
    /// The inverse of [`Shape::logical_to_physical`]: from a physical index (over the
    /// physical shape) to the logical one.
    pub fn physical_to_logical(&self) -> crate::map::IndexingMap {
        let order = self.major_to_minor();
        let phys = self.physical();
        let mut m = crate::map::IndexingMap::identity(phys.dims());
        let mut results = vec![crate::expr::Expr::constant(0); order.len()];
        for (p, &k) in order.iter().enumerate() {
            results[k] = crate::expr::Expr::var(p as u32);
        }
        m.results = results;
        m
    }
}
