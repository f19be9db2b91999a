//! Moved to [`crate::value`] (below both `session/` and `render/`). This re-export keeps
//! the old path `session::value::*` compiling until every branch has moved; the lead
//! removes it at the end of the merge.
pub use crate::value::*;
