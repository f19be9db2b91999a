//! The stack-frame tables XLA prints after a module's `HloModule` line (JAX 0.10 and later),
//! and the source location they give an instruction's `stack_frame_id`.
//!
//! ```text
//! FileNames                 1 "models.py"
//! FunctionNames             2 "pool_grad"
//! FileLocations             2 {file_name_id=1 function_name_id=2 line=29 end_line=29 column=11 end_column=124}
//! StackFrames               4 {file_location_id=2 parent_frame_id=4}
//! %add.1 = ... metadata={op_name="..." stack_frame_id=4}    ->  models.py:29:11 (pool_grad)
//! ```
//!
//! Rows are kept as read; a row that does not parse is an error naming its column, and an
//! id a row refers to that no row defines gives no location (never a failure: the tables
//! are documentation of the source, not part of the computation).

use std::collections::BTreeMap;
use std::fmt;

/// Which of the four tables.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FrameTable {
    FileNames,
    FunctionNames,
    FileLocations,
    StackFrames,
}

impl FrameTable {
    pub fn from_name(s: &str) -> Option<FrameTable> {
        Some(match s {
            "FileNames" => FrameTable::FileNames,
            "FunctionNames" => FrameTable::FunctionNames,
            "FileLocations" => FrameTable::FileLocations,
            "StackFrames" => FrameTable::StackFrames,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            FrameTable::FileNames => "FileNames",
            FrameTable::FunctionNames => "FunctionNames",
            FrameTable::FileLocations => "FileLocations",
            FrameTable::StackFrames => "StackFrames",
        }
    }
}

/// One row of `FileLocations`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileLocation {
    pub file_name_id: u64,
    pub function_name_id: u64,
    pub line: i64,
    pub column: i64,
}

/// One row of `StackFrames`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    pub file_location_id: u64,
    pub parent_frame_id: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackFrames {
    pub file_names: BTreeMap<u64, String>,
    pub function_names: BTreeMap<u64, String>,
    pub file_locations: BTreeMap<u64, FileLocation>,
    pub frames: BTreeMap<u64, Frame>,
}

/// A source location: `models.py:29:11 (pool_grad)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLocation {
    pub file: String,
    pub function: String,
    pub line: i64,
    pub column: i64,
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if self.column > 0 {
            write!(f, ":{}", self.column)?;
        }
        if !self.function.is_empty() {
            write!(f, " ({})", self.function)?;
        }
        Ok(())
    }
}

/// `"text"` with `\"` and `\\` unescaped.
fn unquote(s: &str) -> Option<String> {
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.push(chars.next()?);
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// `{key=value key=value ...}` as pairs, with each value's byte offset in `s`.
fn fields(s: &str) -> Option<Vec<(&str, &str, usize)>> {
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    let base = 1;
    let mut out = Vec::new();
    let mut off = 0;
    for word in inner.split(|c: char| c.is_whitespace() || c == ',') {
        let at = off;
        off += word.len() + 1;
        if word.is_empty() {
            continue;
        }
        let (k, v) = word.split_once('=')?;
        out.push((k, v, base + at + k.len() + 1));
    }
    Some(out)
}

impl StackFrames {
    pub fn is_empty(&self) -> bool {
        self.file_names.is_empty()
            && self.function_names.is_empty()
            && self.file_locations.is_empty()
            && self.frames.is_empty()
    }

    /// Adds row `id` of `table` written as `text` (a string, or `{...}` fields). Errors
    /// carry a message and the byte offset in `text` they concern.
    pub fn add_row(
        &mut self,
        table: FrameTable,
        id: u64,
        text: &str,
    ) -> Result<(), (String, usize)> {
        let t = text.trim();
        match table {
            FrameTable::FileNames | FrameTable::FunctionNames => {
                let v = unquote(t).ok_or_else(|| {
                    (
                        format!("a {} row is a number and a quoted name", table.name()),
                        0,
                    )
                })?;
                let m = if table == FrameTable::FileNames {
                    &mut self.file_names
                } else {
                    &mut self.function_names
                };
                m.insert(id, v);
            }
            FrameTable::FileLocations | FrameTable::StackFrames => {
                let fs = fields(t).ok_or_else(|| {
                    (
                        format!("a {} row is a number and `{{key=value ...}}`", table.name()),
                        0,
                    )
                })?;
                let num = |v: &str, at: usize| -> Result<i64, (String, usize)> {
                    v.parse::<i64>()
                        .map_err(|_| (format!("expected an integer, found `{v}`"), at))
                };
                if table == FrameTable::FileLocations {
                    let mut loc = FileLocation::default();
                    for (k, v, at) in fs {
                        match k {
                            "file_name_id" => loc.file_name_id = num(v, at)?.max(0) as u64,
                            "function_name_id" => loc.function_name_id = num(v, at)?.max(0) as u64,
                            "line" => loc.line = num(v, at)?,
                            "column" => loc.column = num(v, at)?,
                            // end_line, end_column and fields of later versions: kept out.
                            _ => {}
                        }
                    }
                    self.file_locations.insert(id, loc);
                } else {
                    let mut fr = Frame::default();
                    for (k, v, at) in fs {
                        match k {
                            "file_location_id" => fr.file_location_id = num(v, at)?.max(0) as u64,
                            "parent_frame_id" => fr.parent_frame_id = num(v, at)?.max(0) as u64,
                            _ => {}
                        }
                    }
                    self.frames.insert(id, fr);
                }
            }
        }
        Ok(())
    }

    /// The source location of stack frame `id` (its innermost location), when the tables
    /// define it.
    pub fn location(&self, id: u64) -> Option<SourceLocation> {
        let fr = self.frames.get(&id)?;
        let loc = self.file_locations.get(&fr.file_location_id)?;
        Some(SourceLocation {
            file: self
                .file_names
                .get(&loc.file_name_id)
                .cloned()
                .unwrap_or_default(),
            function: self
                .function_names
                .get(&loc.function_name_id)
                .cloned()
                .unwrap_or_default(),
            line: loc.line,
            column: loc.column,
        })
    }
}

/// The `stack_frame_id=N` of an instruction's `metadata={...}` text, if any.
pub fn stack_frame_id(metadata: &str) -> Option<u64> {
    let at = metadata.find("stack_frame_id=")?;
    let rest = &metadata[at + "stack_frame_id=".len()..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_give_a_location() {
        let mut t = StackFrames::default();
        t.add_row(FrameTable::FileNames, 1, "\"models.py\"")
            .unwrap();
        t.add_row(FrameTable::FunctionNames, 2, "\"pool_grad\"")
            .unwrap();
        t.add_row(
            FrameTable::FileLocations,
            2,
            "{file_name_id=1 function_name_id=2 line=29 end_line=29 column=11 end_column=124}",
        )
        .unwrap();
        t.add_row(
            FrameTable::StackFrames,
            4,
            "{file_location_id=2 parent_frame_id=4}",
        )
        .unwrap();
        assert_eq!(
            t.location(4).unwrap().to_string(),
            "models.py:29:11 (pool_grad)"
        );
        assert_eq!(t.location(5), None);
        assert_eq!(
            stack_frame_id("op_name=\"x\" scheduling_name=\"a\" stack_frame_id=17"),
            Some(17)
        );
    }

    #[test]
    fn bad_rows_say_where() {
        let mut t = StackFrames::default();
        assert!(t.add_row(FrameTable::FileNames, 1, "models.py").is_err());
        let e = t
            .add_row(
                FrameTable::StackFrames,
                1,
                "{file_location_id=x parent_frame_id=1}",
            )
            .unwrap_err();
        assert_eq!(e.1, "{file_location_id=".len());
    }
}
