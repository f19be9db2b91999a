//! Values to bytes: plain or coloured text, JSON (and, for the notebook, HTML, LaTeX, SVG).
//! No front end knows how a map looks; they all ask here.

pub mod dump;
pub mod gpu;
pub mod html;
pub mod json;
pub mod latex;
pub mod layout;
pub mod svg;
pub mod text;

pub use html::html;
pub use latex::latex;
pub use text::{text, Style};
