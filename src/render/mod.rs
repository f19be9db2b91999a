//! Values to bytes: plain or coloured text, JSON (and, for the notebook, HTML, LaTeX, SVG).
//! No front end knows how a map looks; they all ask here.

pub mod json;
pub mod text;

pub use text::{text, Style};
