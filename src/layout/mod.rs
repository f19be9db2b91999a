//! Layouts are maps: CuTe layouts (`(4,2):(1,4)`, nested, swizzled) and Triton linear
//! layouts (bases per register/lane/warp/block, and the TTGIR attributes behind them) read
//! into indexing maps, printed back in their own notation where a map is one, and their
//! algebra computed from the definitions.
//!
//! ```text
//! (4,2):(1,4)                 natural coordinate  (d0, d1) -> (d0 + d1 * 4), d0 in [0, 3], d1 in [0, 1]
//!                             flat index          (d0) -> (d0 mod 4 + (d0 floordiv 4) * 4), d0 in [0, 7]
//! Sw<1,0,1> o 4:1             bit 0 of the offset XOR bit 1: 0, 3, 2, 1
//! ```
//!
//! - [`cute`]: CuTe text, the [`cute::Layout`] tree, its maps, and the algebra (coalesce,
//!   composition, complement, inverses, divides, products);
//! - [`recognize`]: a map back to a CuTe layout, or the point where it stops being one;
//! - [`linear`]: Triton's linear layouts (F2-linear maps), their text, their maps, and a
//!   map back to bases (decided exactly);
//! - [`ttgir`]: TTGIR layout attributes (`#ttg.blocked<...>`, ...) for a tensor shape;
//! - [`access`]: global transactions and shared-memory banks of a warp's accesses;
//! - [`picture`]: the thread/value table of a layout;
//! - [`launch`]: a layout as one block's work, checked to cover its tile exactly once (the
//!   launch of `emit ... mapping=LAYOUT`).
//!
//! Errors carry the byte offset into the layout text, so a command reports them at the
//! line and column of the bad character.

pub mod access;
pub mod cute;
pub mod launch;
pub mod linear;
pub mod picture;
pub mod recognize;
pub mod ttgir;

use crate::map::IndexingMap;

/// Most points any layout operation enumerates (sizes of domains, images).
pub const MAX_POINTS: i64 = 1 << 22;

/// What went wrong in layout text or a layout operation; `at` is a byte offset into the
/// text when the error is about the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutError {
    pub message: String,
    pub at: Option<usize>,
    pub label: Option<String>,
}

impl LayoutError {
    pub fn new(message: impl Into<String>) -> LayoutError {
        LayoutError {
            message: message.into(),
            at: None,
            label: None,
        }
    }
    pub fn at(message: impl Into<String>, at: usize) -> LayoutError {
        LayoutError {
            message: message.into(),
            at: Some(at),
            label: None,
        }
    }
    pub fn with_label(mut self, label: impl Into<String>) -> LayoutError {
        self.label = Some(label.into());
        self
    }
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

pub type Result<T> = std::result::Result<T, LayoutError>;

/// The notation a layout value came in (and is printed in).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notation {
    Cute,
    LinearLayout,
}

/// A layout as a value of the session: its notation, printed, and its map. A picture (the
/// thread/value table) when asked for one.
#[derive(Clone, Debug)]
pub struct LayoutValue {
    pub notation: Notation,
    /// The layout in its own notation (CuTe's `S:D`, or Triton's bases text).
    pub text: String,
    pub map: IndexingMap,
    /// Extra lines under the layout (the definition used, a reason, a note).
    pub notes: Vec<String>,
    pub picture: Option<picture::Picture>,
    /// The extent of each coordinate the map gives (the tensor or tile it covers): a
    /// linear layout's output sizes, a CuTe layout's `tile=` or its cosize; `None` when
    /// not known (a map read as a layout).
    pub shape: Option<Vec<i64>>,
}

/// Checked helpers for i64 arithmetic on layout sizes and strides.
pub(crate) fn mul(a: i64, b: i64) -> Result<i64> {
    a.checked_mul(b)
        .ok_or_else(|| LayoutError::new(format!("integer overflow in {a} * {b}")))
}
pub(crate) fn add(a: i64, b: i64) -> Result<i64> {
    a.checked_add(b)
        .ok_or_else(|| LayoutError::new(format!("integer overflow in {a} + {b}")))
}
