//! The pest parser over `grammar.pest`. `Rule` never leaves the `syntax` folder.

#[derive(pest_derive::Parser)]
#[grammar = "../grammar.pest"]
pub(crate) struct IxParser;
