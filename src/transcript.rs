//! Transcripts (`sessions/*.ixm`, SPEC §4): recorded sessions replayed as tests.
//!
//! Lines starting `ixmap> ` (and `   ...> ` continuations) are input; the lines after
//! them, up to the next prompt, prose line or blank line before prose, are expected output.
//! `#` lines are prose, `#!` lines directives (`#! requires: cuda`). `[..]` inside a line
//! and `...` alone on a line match anything. As in LLVM's FileCheck, `{{REGEX}}` inside a
//! line matches what the regular expression matches, and `{{LO..HI}}` matches a number
//! between LO and HI inclusive (`median {{0.001..50}} ms`), so volatile figures are checked
//! for shape instead of elided.

use crate::render::text::{self, text};
use crate::render::Style;
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
    /// `#! xfail` or `#! xfail: why`: the file is known to fail (a known bug); it fails
    /// the run only if every case passes (the bug fixed, the directive to remove).
    pub xfail: Option<String>,
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
        let mut xfail = None;
        let mut i = 0;
        while i < lines.len() {
            let l = &lines[i];
            if let Some(rest) = l.strip_prefix("#!") {
                let rest = rest.trim();
                if let Some(why) = rest.strip_prefix("xfail") {
                    xfail = Some(why.trim_start_matches(':').trim().to_string());
                } else if !rest.starts_with("requires:") {
                    return Err(FormatError {
                        line: i + 1,
                        message: format!(
                            "unknown directive `#! {rest}` (the directives are `#! requires: WHAT, ...` and `#! xfail: WHY`)"
                        ),
                    });
                }
                if let Some(req) = rest.strip_prefix("requires:") {
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
            xfail,
        })
    }
}

/// What a session prints for one input, colour off, as transcripts record it.
pub fn run_input(session: &mut Session, input: &str) -> Vec<String> {
    let mut out = Vec::new();
    for o in session.execute(input) {
        let s = match &o.result {
            Ok(v) => text::with_notes(text(v, Style::Plain), &o),
            Err(d) => d.render(input),
        };
        out.extend(s.lines().map(|l| l.trim_end().to_string()));
    }
    out
}

/// Whether `actual` matches the `expected` line: `[..]` matches any run of text,
/// `{{REGEX}}` what the regular expression matches, `{{LO..HI}}` a number in [LO, HI].
pub fn line_matches(expected: &str, actual: &str) -> bool {
    if !expected.contains("[..]") && !expected.contains("{{") {
        return expected == actual;
    }
    match line_regex(expected) {
        Some((re, ranges)) => match re.captures(actual) {
            Some(caps) => ranges.iter().enumerate().all(|(k, (lo, hi))| {
                caps.name(&format!("n{k}"))
                    .and_then(|m| m.as_str().parse::<f64>().ok())
                    .is_some_and(|x| *lo <= x && x <= *hi)
            }),
            None => false,
        },
        None => expected == actual,
    }
}

/// `{{LO..HI}}`: the bounds, when both are numbers.
fn numeric_range(inner: &str) -> Option<(f64, f64)> {
    let (lo, hi) = inner.split_once("..")?;
    Some((lo.trim().parse().ok()?, hi.trim().parse().ok()?))
}

/// An expected line as an anchored regular expression, and the numeric ranges to check on
/// its named groups `n0`, `n1`...; None when a `{{...}}` is not a valid expression.
fn line_regex(expected: &str) -> Option<(regex::Regex, Vec<(f64, f64)>)> {
    let mut pat = String::from("^");
    let mut ranges = Vec::new();
    let mut rest = expected;
    loop {
        let next_elide = rest.find("[..]");
        let next_check = rest.find("{{");
        let (idx, is_check) = match (next_elide, next_check) {
            (None, None) => {
                pat += &regex::escape(rest);
                break;
            }
            (Some(a), Some(b)) if b < a => (b, true),
            (Some(a), _) => (a, false),
            (None, Some(b)) => (b, true),
        };
        pat += &regex::escape(&rest[..idx]);
        if is_check {
            let after = &rest[idx + 2..];
            let Some(close) = after.find("}}") else {
                pat += &regex::escape(&rest[idx..]);
                break;
            };
            let inner = &after[..close];
            if let Some(r) = numeric_range(inner) {
                pat += &format!(
                    "(?P<n{}>[-+]?[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?)",
                    ranges.len()
                );
                ranges.push(r);
            } else {
                regex::Regex::new(inner).ok()?;
                pat += &format!("(?:{inner})");
            }
            rest = &after[close + 2..];
        } else {
            pat += ".*";
            rest = &rest[idx + 4..];
        }
    }
    pat.push('$');
    regex::Regex::new(&pat).ok().map(|re| (re, ranges))
}

/// Whether an expected line checks its text loosely (`[..]`, `{{...}}`).
fn is_pattern(expected: &str) -> bool {
    expected.contains("[..]") || expected.contains("{{")
}

/// The new expected output of a mismatching case: the actual lines, except that every
/// expected line that still matches its actual line keeps its elisions and checks, and every
/// `...` that still has a place is kept (the fewest lines rewritten: a changed line costs
/// 1000 to 1999 by how unlike its new text it is, a line gone or new 2000, what `...`
/// swallows nothing).
pub fn bless_case(expected: &[String], actual: &[String]) -> Vec<String> {
    let (n, m) = (expected.len(), actual.len());
    // cost[i][j]: fewest changed lines to turn expected[i..] into a match of actual[j..]
    let inf = usize::MAX / 4;
    let mut cost = vec![vec![inf; m + 1]; n + 1];
    // a changed line costs 1000 to 1999, the less the more it is like the new line (so a
    // rewritten line pairs with the actual line it became); a line gone or new 2000
    let change = |i: usize, j: usize| -> usize {
        let e = expected[i].replace("[..]", "");
        1000 + ((1.0 - strsim::normalized_levenshtein(&e, &actual[j])) * 999.0) as usize
    };
    cost[n][m] = 0;
    for i in (0..=n).rev() {
        for j in (0..=m).rev() {
            if i == n && j == m {
                continue;
            }
            let mut best = inf;
            if i < n {
                let e = &expected[i];
                if e == "..." {
                    best = best.min(cost[i + 1][j]); // `...` matching nothing more
                    if j < m {
                        best = best.min(cost[i][j + 1]); // `...` swallowing a line
                    }
                } else {
                    if j < m && line_matches(e, &actual[j]) {
                        best = best.min(cost[i + 1][j + 1]);
                    }
                    if j < m {
                        best = best.min(change(i, j) + cost[i + 1][j + 1]); // a changed line
                    }
                    best = best.min(2000 + cost[i + 1][j]); // a line gone
                }
            }
            if j < m {
                best = best.min(2000 + cost[i][j + 1]); // a new line
            }
            cost[i][j] = best;
        }
    }
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        let c = cost[i][j];
        if i < n {
            let e = &expected[i];
            if e == "..." {
                if j < m && cost[i][j + 1] == c {
                    // swallowed: stay on `...`, emit it once at its first line
                    if out.last() != Some(e) {
                        out.push(e.clone());
                    }
                    j += 1;
                    continue;
                }
                if cost[i + 1][j] == c {
                    if out.last() != Some(e) {
                        out.push(e.clone());
                    }
                    i += 1;
                    continue;
                }
            } else {
                if j < m && line_matches(e, &actual[j]) && cost[i + 1][j + 1] == c {
                    out.push(if is_pattern(e) {
                        e.clone()
                    } else {
                        actual[j].clone()
                    });
                    i += 1;
                    j += 1;
                    continue;
                }
                if j < m && change(i, j) + cost[i + 1][j + 1] == c {
                    out.push(actual[j].clone());
                    i += 1;
                    j += 1;
                    continue;
                }
                if 2000 + cost[i + 1][j] == c {
                    i += 1;
                    continue;
                }
            }
        }
        out.push(actual[j].clone());
        j += 1;
    }
    out
}

/// The changed middle of a line against another: (common prefix, common suffix) byte
/// lengths, on character boundaries.
pub fn changed_span(a: &str, b: &str) -> (usize, usize) {
    let pre: usize = a
        .chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    let suf: usize = a[pre..]
        .chars()
        .rev()
        .zip(b[pre..].chars().rev())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    (pre, suf)
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

/// Where a case's output stops matching: the first expected line that no alignment of the
/// actual output reaches (its index in `expected`, or `expected.len()` when every expected
/// line matched but actual lines are left over), and the index of the actual line it was
/// compared with. None when the output matches.
pub fn first_unmatched(expected: &[String], actual: &[String]) -> Option<(usize, usize)> {
    if output_matches(expected, actual) {
        return None;
    }
    let (n, m) = (expected.len(), actual.len());
    // reach[i][j]: expected[..i] matches actual[..j]
    let mut reach = vec![vec![false; m + 1]; n + 1];
    reach[0][0] = true;
    for i in 0..n {
        for j in 0..=m {
            if !reach[i][j] {
                continue;
            }
            if expected[i] == "..." {
                for r in reach[i + 1].iter_mut().skip(j) {
                    *r = true;
                }
            } else if j < m && line_matches(&expected[i], &actual[j]) {
                reach[i + 1][j + 1] = true;
            }
        }
    }
    let i = (0..=n).rev().find(|&i| reach[i].iter().any(|&r| r))?;
    // where it was sought: of the actual lines it could have matched, the most like it
    let wanted = expected
        .get(i)
        .map_or("", |e| e.as_str())
        .replace("[..]", "");
    let j = (0..m)
        .filter(|&j| reach[i][j])
        .max_by(|&a, &b| {
            let sa = strsim::normalized_levenshtein(&wanted, &actual[a]);
            let sb = strsim::normalized_levenshtein(&wanted, &actual[b]);
            sa.total_cmp(&sb).then(b.cmp(&a))
        })
        .unwrap_or(m);
    Some((i, j))
}

/// One mismatching case.
#[derive(Clone, Debug)]
pub struct Mismatch {
    pub line: usize,
    pub input: String,
    pub expected: Vec<String>,
    pub actual: Vec<String>,
    /// 1-based line in the file of the first expected line not matched (the line after the
    /// case's output when lines are left over), and the index in `actual` where it was
    /// sought.
    pub first_unmatched: (usize, usize),
}

/// One case's outcome, for `--json` and `--junit`.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub line: usize,
    pub input: String,
    pub passed: bool,
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
    /// Every case, in order.
    pub results: Vec<CaseResult>,
    /// The file's `#! xfail` reason, if it has the directive.
    pub xfail: Option<String>,
}

/// Requirements this build can meet.
pub fn requirement_met(req: &str) -> bool {
    match req {
        "cuda" => crate::gpu::cuda_available(),
        "no-cuda" => !crate::gpu::cuda_available(),
        "cc" => which("cc") || which("gcc"),
        "ptxas" => {
            crate::gpu::nvcc::find_ptxas().is_some() && crate::gpu::nvcc::shared_nvrtc().is_some()
        }
        // SASS instruction counts: NVRTC, ptxas and cuobjdump (with nvdisasm) that lists
        // a cubin.
        "cuobjdump" => crate::gpu::nvcc::sass_available(),
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
            results: t
                .cases
                .iter()
                .map(|c| CaseResult {
                    line: c.line,
                    input: c.input.clone(),
                    passed: false,
                })
                .collect(),
            xfail: t.xfail.clone(),
        });
    }
    let mut session = Session::new();
    let mut mismatches = Vec::new();
    let mut results = Vec::new();
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
        let unmatched = first_unmatched(&case.expected, &actual);
        results.push(CaseResult {
            line: case.line,
            input: case.input.clone(),
            passed: unmatched.is_none(),
        });
        if let Some((i, j)) = unmatched {
            mismatches.push(Mismatch {
                line: case.line,
                input: case.input.clone(),
                expected: case.expected.clone(),
                actual: actual.clone(),
                first_unmatched: (case.out_start + i + 1, j),
            });
            new_lines.extend(bless_case(&case.expected, &actual));
        } else {
            new_lines.extend_from_slice(&case.expected);
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
        results,
        xfail: t.xfail,
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
    fn checks_match_by_regex_and_numeric_range() {
        assert!(line_matches("median {{0.001..50}} ms", "median 3.25 ms"));
        assert!(!line_matches("median {{0.001..50}} ms", "median 51 ms"));
        assert!(line_matches("took {{[0-9]+}} ms, [..]", "took 12 ms, fine"));
        assert!(!line_matches("took {{[0-9]+}} ms", "took 1.2 ms"));
        // outside the checks, text is literal: `.` and `(` are not regex syntax
        assert!(!line_matches("a.b {{[0-9]}}", "axb 1"));
        assert!(line_matches("f(x) {{[0-9]}}", "f(x) 1"));
    }

    #[test]
    fn bless_keeps_elisions_that_still_match() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let exp = v(&["head", "took [..] ms", "...", "count 3", "tail"]);
        let act = v(&["head", "took 9.1 ms", "x", "y", "count 4", "tail"]);
        assert_eq!(
            bless_case(&exp, &act),
            v(&["head", "took [..] ms", "...", "count 4", "tail"])
        );
        let blessed = bless_case(&exp, &act);
        assert!(output_matches(&blessed, &act));
    }

    #[test]
    fn a_mismatch_names_the_first_expected_line_not_found_and_where() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let exp = v(&["head", "...", "load FILE runs a script", "...", "tail"]);
        let act = v(&[
            "head",
            "vars lists",
            "load FILE runs THE script",
            "save",
            "tail",
        ]);
        // `...` may swallow any line: the line sought is the most like it
        assert_eq!(first_unmatched(&exp, &act), Some((2, 2)));
        assert_eq!(
            first_unmatched(&exp[..1], &act),
            Some((1, 1)),
            "output left over"
        );
        assert_eq!(first_unmatched(&v(&["head", "..."]), &act), None);
        assert_eq!(first_unmatched(&v(&["x"]), &[]), Some((0, 0)));
    }

    #[test]
    fn bless_round_trip_keeps_every_wildcard_that_still_matches() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let src = "# timings\nixmap> x = (d0) -> (d0 * 2), domain: d0 in [0, 3]\n(d0) -> (d0 * {{[0-9]}}), domain: d0 in [0, [..]]\nwrong line\nixmap> help session\nthe session:\n...\n  reset                       forgets every binding and EVERY HLO definition\n...\nixmap> inverse x\n(d0) -> ({{.*}}), domain: d0 in [0, {{0..100}}], [..]\nstale\n";
        let r = replay(src).unwrap();
        assert_eq!(r.mismatches.len(), 3);
        let blessed = r.blessed.clone();
        // the wildcards of every line that still matches are kept, in every rewritten case
        for kept in [
            "(d0) -> (d0 * {{[0-9]}}), domain: d0 in [0, [..]]",
            "(d0) -> ({{.*}}), domain: d0 in [0, {{0..100}}], [..]",
            "...",
            "# timings",
        ] {
            assert!(
                blessed.lines().any(|l| l == kept),
                "{kept} lost:\n{blessed}"
            );
        }
        assert!(!blessed.contains("wrong line") && !blessed.contains("stale"));
        assert!(!blessed.contains("EVERY HLO"));
        // both `...` around the rewritten line stay, and the line between them is the new one
        assert!(
            blessed.contains("the session:\n...\n  reset                       forgets every binding and every HLO definition\n...\nixmap> inverse"),
            "{blessed}"
        );
        // and the blessed file passes, and blessing it again changes nothing
        let again = replay(&blessed).unwrap();
        assert!(again.mismatches.is_empty(), "{:?}", again.mismatches);
        assert_eq!(again.blessed, blessed);
        let _ = v;
    }

    #[test]
    fn directives_are_requires_and_xfail_only() {
        let t = Transcript::parse("#! xfail: issue 12\nixmap> 1\n").unwrap();
        assert_eq!(t.xfail.as_deref(), Some("issue 12"));
        let t = Transcript::parse("#! requires: cc, cuda\n").unwrap();
        assert_eq!(t.requires, ["cc", "cuda"]);
        let e = Transcript::parse("# x\n#! require: cc\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("unknown directive"), "{}", e.message);
    }

    #[test]
    fn changed_span_is_the_differing_middle() {
        assert_eq!(changed_span("count 3 of 9", "count 4 of 9"), (6, 5));
    }

    #[test]
    fn elisions_match_volatile_text() {
        assert!(line_matches("took [..] ms", "took 3.2 ms"));
        assert!(!line_matches("took [..] ms", "took 3.2 s"));
        let exp = vec!["a".to_string(), "...".to_string(), "z".to_string()];
        let act: Vec<String> = ["a", "b", "c", "z"].iter().map(|s| s.to_string()).collect();
        assert!(output_matches(&exp, &act));
    }
}
