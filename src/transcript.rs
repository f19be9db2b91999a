//! Transcripts (`sessions/*.ixm`, SPEC §4): recorded sessions replayed as tests.
//!
//! Lines starting `ixmap> ` (and `   ...> ` continuations) are input; the lines after
//! them, up to the next prompt, prose line or blank line before prose, are expected output.
//! `#` lines are prose, `#!` lines directives (`#! requires: cuda`). `[..]` inside a line
//! and `...` alone on a line match anything.

use crate::render::{text, Style};
use crate::session::Session;

pub const PROMPT: &str = "ixmap> ";
pub const CONT: &str = "   ...> ";

/// One prompt and what must follow it.
#[derive(Clone, Debug)]
pub struct Case {
    /// 1-based line of the prompt.
    pub line: usize,
    pub input: String,
    pub expected: Vec<String>,
    /// Index range of the expected lines in the file's line list.
    pub out_start: usize,
    pub out_end: usize,
}

#[derive(Clone, Debug)]
pub struct Transcript {
    pub lines: Vec<String>,
    pub cases: Vec<Case>,
    pub requires: Vec<String>,
}

/// Why a transcript file is malformed.
#[derive(Debug, thiserror::Error)]
#[error("{line}: {message}")]
pub struct FormatError {
    pub line: usize,
    pub message: String,
}

impl Transcript {
    pub fn parse(src: &str) -> Result<Transcript, FormatError> {
        let lines: Vec<String> = src
            .replace("\r\n", "\n")
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect();
        let mut cases = Vec::new();
        let mut requires = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let l = &lines[i];
            if let Some(rest) = l.strip_prefix("#!") {
                if let Some(req) = rest.trim().strip_prefix("requires:") {
                    requires.extend(
                        req.split(',')
                            .map(|s| s.trim().to_string())
                            .filter(|s| !s.is_empty()),
                    );
                }
                i += 1;
                continue;
            }
            if let Some(input) = l.strip_prefix(PROMPT.trim_end()) {
                let line = i + 1;
                let mut text = input.strip_prefix(' ').unwrap_or(input).to_string();
                i += 1;
                while i < lines.len() && lines[i].starts_with(CONT.trim_end()) {
                    let c = &lines[i][CONT.trim_end().len()..];
                    text.push('\n');
                    text.push_str(c.strip_prefix(' ').unwrap_or(c));
                    i += 1;
                }
                let out_start = i;
                while i < lines.len()
                    && !lines[i].starts_with(PROMPT.trim_end())
                    && !lines[i].starts_with('#')
                {
                    i += 1;
                }
                // Trailing blank lines separate cases; they are not output.
                let mut out_end = i;
                while out_end > out_start && lines[out_end - 1].is_empty() {
                    out_end -= 1;
                }
                cases.push(Case {
                    line,
                    input: text,
                    expected: lines[out_start..out_end].to_vec(),
                    out_start,
                    out_end,
                });
                continue;
            }
            i += 1;
        }
        Ok(Transcript {
            lines,
            cases,
            requires,
        })
    }
}

/// What a session prints for one input, colour off, as transcripts record it.
pub fn run_input(session: &mut Session, input: &str) -> Vec<String> {
    let mut out = Vec::new();
    for o in session.execute(input) {
        let s = match &o.result {
            Ok(v) => text(v, Style::Plain),
            Err(d) => d.render(input),
        };
        out.extend(s.lines().map(|l| l.trim_end().to_string()));
    }
    out
}

/// Whether `actual` matches the `expected` line, with `[..]` matching any run of text.
pub fn line_matches(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split("[..]").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let mut rest = actual;
    for (k, p) in parts.iter().enumerate() {
        if k == 0 {
            let Some(r) = rest.strip_prefix(p) else {
                return false;
            };
            rest = r;
        } else if k == parts.len() - 1 {
            return rest.ends_with(p);
        } else {
            match rest.find(p) {
                Some(idx) => rest = &rest[idx + p.len()..],
                None => return false,
            }
        }
    }
    true
}

/// Whether `actual` lines match `expected`, where a lone `...` matches any lines.
pub fn output_matches(expected: &[String], actual: &[String]) -> bool {
    match expected.first() {
        None => actual.is_empty(),
        Some(e) if e == "..." => {
            (0..=actual.len()).any(|k| output_matches(&expected[1..], &actual[k..]))
        }
        Some(e) => {
            !actual.is_empty()
                && line_matches(e, &actual[0])
                && output_matches(&expected[1..], &actual[1..])
        }
    }
}

/// One mismatching case.
#[derive(Clone, Debug)]
pub struct Mismatch {
    pub line: usize,
    pub input: String,
    pub expected: Vec<String>,
    pub actual: Vec<String>,
}

/// The result of replaying one file.
#[derive(Clone, Debug)]
pub struct Replay {
    pub cases: usize,
    pub mismatches: Vec<Mismatch>,
    /// Requirements not met (the file is skipped, never passed).
    pub skipped: Option<String>,
    /// The file with every output replaced by the actual output (for `--bless`).
    pub blessed: String,
}

/// Requirements this build can meet.
pub fn requirement_met(req: &str) -> bool {
    match req {
        "cuda" => crate::gpu::cuda_available(),
        "no-cuda" => !crate::gpu::cuda_available(),
        "cc" => which("cc") || which("gcc"),
        "ptxas" => crate::gpu::nvcc::find_ptxas().is_some() && crate::gpu::nvcc::shared_nvrtc().is_some(),
        _ => false,
    }
}

fn which(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

/// Replays a transcript in a fresh session.
pub fn replay(src: &str) -> Result<Replay, FormatError> {
    let t = Transcript::parse(src)?;
    if let Some(r) = t.requires.iter().find(|r| !requirement_met(r)) {
        return Ok(Replay {
            cases: t.cases.len(),
            mismatches: vec![],
            skipped: Some(r.clone()),
            blessed: src.to_string(),
        });
    }
    let mut session = Session::new();
    let mut mismatches = Vec::new();
    let mut new_lines: Vec<String> = Vec::new();
    let mut cursor = 0;
    for case in &t.cases {
        let actual = run_input(&mut session, &case.input);
        for l in &actual {
            if l.starts_with('#') {
                return Err(FormatError {
                    line: case.line,
                    message: "an output line starts with `#`; indent code output".into(),
                });
            }
        }
        new_lines.extend_from_slice(&t.lines[cursor..case.out_start]);
        if output_matches(&case.expected, &actual) {
            new_lines.extend_from_slice(&case.expected);
        } else {
            mismatches.push(Mismatch {
                line: case.line,
                input: case.input.clone(),
                expected: case.expected.clone(),
                actual: actual.clone(),
            });
            new_lines.extend(actual);
        }
        cursor = case.out_end;
    }
    new_lines.extend_from_slice(&t.lines[cursor..]);
    let mut blessed = new_lines.join("\n");
    blessed.push('\n');
    Ok(Replay {
        cases: t.cases.len(),
        mismatches,
        skipped: None,
        blessed,
    })
}

/// Every `.ixm` file under `paths` (files or folders), sorted.
pub fn collect_files(paths: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    fn walk(p: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        if p.is_dir() {
            if let Ok(rd) = std::fs::read_dir(p) {
                let mut es: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
                es.sort();
                for e in es {
                    walk(&e, out);
                }
            }
        } else if p.extension().is_some_and(|e| e == "ixm") {
            out.push(p.to_path_buf());
        }
    }
    for p in paths {
        walk(p, &mut out);
    }
    out
}

/// Writes `contents` to `path` atomically (temp file in the same folder, then rename).
pub fn write_atomic(path: &std::path::Path, contents: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elisions_match_volatile_text() {
        assert!(line_matches("took [..] ms", "took 3.2 ms"));
        assert!(!line_matches("took [..] ms", "took 3.2 s"));
        let exp = vec!["a".to_string(), "...".to_string(), "z".to_string()];
        let act: Vec<String> = ["a", "b", "c", "z"].iter().map(|s| s.to_string()).collect();
        assert!(output_matches(&exp, &act));
    }
}
