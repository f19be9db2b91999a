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
    /// The file's lines, trailing white space trimmed (what cases are read from).
    pub lines: Vec<String>,
    /// The same lines as the file has them (trailing white space kept), which `--bless`
    /// writes back wherever it changes nothing.
    pub raw: Vec<String>,
    /// How the file ends its lines (`"\r\n"` or `"\n"`), whether it starts with a byte
    /// order mark and ends with a line end: kept by `--bless`.
    pub newline: &'static str,
    pub bom: bool,
    pub final_newline: bool,
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

/// The requirements a transcript may name (`#! requires: ...`), as [`requirement_met`]
/// checks them.
pub const REQUIREMENTS: [&str; 5] = ["cuda", "no-cuda", "cc", "ptxas", "cuobjdump"];

impl Transcript {
    pub fn parse(src: &str) -> Result<Transcript, FormatError> {
        // A byte order mark is not part of the first line (it would hide its prompt).
        let bom = src.starts_with('\u{feff}');
        let body = src.strip_prefix('\u{feff}').unwrap_or(src);
        let final_newline = body.ends_with('\n');
        let newline = if body.split('\n').next().is_some_and(|l| l.ends_with('\r'))
            && body.contains("\r\n")
        {
            "\r\n"
        } else {
            "\n"
        };
        let mut raw: Vec<String> = body
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
            .collect();
        if final_newline || body.is_empty() {
            raw.pop();
        }
        let lines: Vec<String> = raw.iter().map(|l| l.trim_end().to_string()).collect();
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
                    for r in req.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                        if !REQUIREMENTS.contains(&r) {
                            return Err(FormatError {
                                line: i + 1,
                                message: unknown_requirement(r),
                            });
                        }
                        requires.push(r.to_string());
                    }
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
                // A check that is not a regular expression is the author's mistake, said
                // where it is (it would compare as text and `--bless` would drop it).
                for (k, e) in lines[out_start..out_end].iter().enumerate() {
                    if let Err((col, why)) = check_pattern(e) {
                        return Err(FormatError {
                            line: out_start + k + 1,
                            message: format!("column {col}: {why}"),
                        });
                    }
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
            // Outside a case only prose, directives and blank lines: a line that is none
            // (a mistyped prompt after prose, `ixamp> ...`) would be skipped unsaid.
            if !l.is_empty() && !l.starts_with('#') {
                return Err(FormatError {
                    line: i + 1,
                    message: format!(
                        "`{}` is neither a prompt (`ixmap> `) nor `#` prose, and no case's output (output follows its prompt, before any prose)",
                        short(l)
                    ),
                });
            }
            i += 1;
        }
        Ok(Transcript {
            lines,
            raw,
            newline,
            bom,
            final_newline,
            cases,
            requires,
            xfail,
        })
    }
}

/// Why a `#! requires:` name is unknown, with the nearest known one.
fn unknown_requirement(r: &str) -> String {
    let known = REQUIREMENTS.join(", ");
    let hint = if r.contains(char::is_whitespace) {
        " (requirements are separated by commas)".to_string()
    } else {
        REQUIREMENTS
            .iter()
            .map(|k| (strsim::normalized_levenshtein(k, r), k))
            .filter(|(d, _)| *d >= 0.5)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map_or(String::new(), |(_, k)| format!("; did you mean `{k}`?"))
    };
    format!("unknown requirement `{r}` (the requirements are {known}){hint}")
}

/// A line for a message: at most 60 characters.
fn short(l: &str) -> String {
    if l.chars().count() <= 60 {
        l.to_string()
    } else {
        format!("{}…", l.chars().take(59).collect::<String>())
    }
}

/// Whether every `{{...}}` of an expected line is a valid regular expression (or a
/// numeric range): else the 1-based column of the `{{` and why.
fn check_pattern(expected: &str) -> Result<(), (usize, String)> {
    let mut from = 0;
    while let Some(k) = expected[from..].find("{{") {
        let at = from + k;
        let after = &expected[at + 2..];
        let Some(close) = after.find("}}") else {
            return Ok(());
        };
        let inner = &after[..close];
        if numeric_range(inner).is_none() {
            if let Err(e) = regex::Regex::new(inner) {
                let col = expected[..at].chars().count() + 1;
                let why = e.to_string();
                let why = why.lines().last().unwrap_or("").trim();
                let why = why.strip_prefix("error: ").unwrap_or(why).to_string();
                return Err((
                    col,
                    format!("`{{{{{inner}}}}}` is not a valid regular expression ({why})"),
                ));
            }
        }
        from = at + 2 + close + 2;
    }
    Ok(())
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
    LineMatcher::new(expected).matches(actual)
}

/// An expected line made ready to compare with many actual lines: its regular expression
/// (for `[..]` and `{{...}}`) is compiled once, not once per comparison.
enum LineMatcher<'a> {
    Exact(&'a str),
    Pattern(regex::Regex, Vec<(f64, f64)>),
}

impl<'a> LineMatcher<'a> {
    fn new(expected: &'a str) -> LineMatcher<'a> {
        if !is_pattern(expected) {
            return LineMatcher::Exact(expected);
        }
        match line_regex(expected) {
            Some((re, ranges)) => LineMatcher::Pattern(re, ranges),
            None => LineMatcher::Exact(expected),
        }
    }
    fn matches(&self, actual: &str) -> bool {
        match self {
            LineMatcher::Exact(e) => *e == actual,
            LineMatcher::Pattern(re, ranges) => match re.captures(actual) {
                Some(caps) => ranges.iter().enumerate().all(|(k, (lo, hi))| {
                    caps.name(&format!("n{k}"))
                        .and_then(|m| m.as_str().parse::<f64>().ok())
                        .is_some_and(|x| *lo <= x && x <= *hi)
                }),
                None => false,
            },
        }
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
/// 1000 to 1999 by how unlike its new text it is, a line gone 2000, a new line 999, what
/// `...` swallows nothing). A new line costs less than any change, so a line that still
/// matches is kept and the new one inserted beside it, rather than a `...` swallowing the
/// match and the line after it rewritten into the new one.
pub fn bless_case(expected: &[String], actual: &[String]) -> Vec<String> {
    // Lines that match at the start and at the end stay as they are: when an expected line
    // (not `...`) matches the first actual line, some cheapest alignment pairs the two (a
    // match costs nothing, and any alignment that does not pair them can be made to,
    // without costing more), and likewise at the end. Only the middle needs the quadratic
    // alignment, which for a long case with a few changed lines is nearly nothing.
    let kept = |e: &String, a: &String| -> String {
        if is_pattern(e) {
            e.clone()
        } else {
            a.clone()
        }
    };
    let fixed = |e: &String, a: &String| e != "..." && line_matches(e, a);
    let mut pre = 0;
    while pre < expected.len() && pre < actual.len() && fixed(&expected[pre], &actual[pre]) {
        pre += 1;
    }
    let mut suf = 0;
    while suf < expected.len() - pre
        && suf < actual.len() - pre
        && fixed(
            &expected[expected.len() - 1 - suf],
            &actual[actual.len() - 1 - suf],
        )
    {
        suf += 1;
    }
    let mut out: Vec<String> = (0..pre).map(|k| kept(&expected[k], &actual[k])).collect();
    out.extend(
        bless_middle(
            &expected[pre..expected.len() - suf],
            &actual[pre..actual.len() - suf],
        )
        .1,
    );
    out.extend((0..suf).rev().map(|k| {
        kept(
            &expected[expected.len() - 1 - k],
            &actual[actual.len() - 1 - k],
        )
    }));
    out
}

/// [`bless_case`]'s alignment of what is left between the lines that match at both ends:
/// its cost and its lines.
fn bless_middle(expected: &[String], actual: &[String]) -> (usize, Vec<String>) {
    let (n, m) = (expected.len(), actual.len());
    let matchers: Vec<LineMatcher> = expected.iter().map(|e| LineMatcher::new(e)).collect();
    // cost[i][j]: fewest changed lines to turn expected[i..] into a match of actual[j..]
    let inf = usize::MAX / 4;
    let mut cost = vec![vec![inf; m + 1]; n + 1];
    // a changed line costs 1000 to 1999, the less the more it is like the new line (so a
    // rewritten line pairs with the actual line it became); a line gone 2000 (a check
    // rewritten beats a check dropped), a new one 999
    const GONE: usize = 2000;
    const NEW: usize = 999;
    let bare: Vec<String> = expected.iter().map(|e| e.replace("[..]", "")).collect();
    let change = |i: usize, j: usize| -> usize {
        1000 + ((1.0 - strsim::normalized_levenshtein(&bare[i], &actual[j])) * 999.0) as usize
    };
    cost[n][m] = 0;
    for i in (0..=n).rev() {
        for j in (0..=m).rev() {
            if i == n && j == m {
                continue;
            }
            let mut best = inf;
            if j < m {
                best = NEW + cost[i][j + 1]; // a new line
            }
            if i < n {
                let e = &expected[i];
                if e == "..." {
                    best = best.min(cost[i + 1][j]); // `...` matching nothing more
                    if j < m {
                        best = best.min(cost[i][j + 1]); // `...` swallowing a line
                    }
                } else {
                    best = best.min(GONE + cost[i + 1][j]); // a line gone
                    if j < m && matchers[i].matches(&actual[j]) {
                        best = best.min(cost[i + 1][j + 1]);
                    }
                    // a changed line costs at least 1000: its distance is measured only
                    // where it could be the cheapest
                    if j < m && 1000 + cost[i + 1][j + 1] < best {
                        best = best.min(change(i, j) + cost[i + 1][j + 1]); // a changed line
                    }
                }
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
                if j < m && matchers[i].matches(&actual[j]) && cost[i + 1][j + 1] == c {
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
                if GONE + cost[i + 1][j] == c {
                    i += 1;
                    continue;
                }
            }
        }
        out.push(actual[j].clone());
        j += 1;
    }
    (cost[0][0], out)
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
    reach(expected, actual)[expected.len()][actual.len()]
}

/// `reach[i][j]`: `expected[..i]` matches `actual[..j]` (each expected line compared with
/// each actual line at most once: `...` cannot make the matching exponential).
fn reach(expected: &[String], actual: &[String]) -> Vec<Vec<bool>> {
    let (n, m) = (expected.len(), actual.len());
    let matchers: Vec<LineMatcher> = expected.iter().map(|e| LineMatcher::new(e)).collect();
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
                break;
            } else if j < m && matchers[i].matches(&actual[j]) {
                reach[i + 1][j + 1] = true;
            }
        }
    }
    reach
}

/// Where a case's output stops matching: the first expected line that no alignment of the
/// actual output reaches (its index in `expected`, or `expected.len()` when every expected
/// line matched but actual lines are left over), and the index of the actual line it was
/// compared with. None when the output matches.
pub fn first_unmatched(expected: &[String], actual: &[String]) -> Option<(usize, usize)> {
    let (n, m) = (expected.len(), actual.len());
    let reach = reach(expected, actual);
    if reach[n][m] {
        return None;
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
    /// The index in `expected` of that line (`expected.len()` when lines are left over).
    pub expected_index: usize,
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

/// Replays a transcript in a fresh session, with the blessed file made ([`replay_with`]).
pub fn replay(src: &str) -> Result<Replay, FormatError> {
    replay_with(src, true)
}

/// Replays a transcript in a fresh session; `bless`: make [`Replay::blessed`] (the
/// alignment of a long mismatching case costs more than its replay), else it is empty.
pub fn replay_with(src: &str, bless: bool) -> Result<Replay, FormatError> {
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
        new_lines.extend_from_slice(&t.raw[cursor..case.out_start]);
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
                expected_index: i,
            });
            if bless {
                new_lines.extend(bless_case(&case.expected, &actual));
            }
        } else {
            new_lines.extend_from_slice(&t.raw[case.out_start..case.out_end]);
        }
        cursor = case.out_end;
    }
    // Every line `--bless` does not rewrite as the file has it: its line ends, its
    // trailing white space, its byte order mark.
    new_lines.extend_from_slice(&t.raw[cursor..]);
    let mut blessed = String::new();
    if bless {
        if t.bom {
            blessed.push('\u{feff}');
        }
        blessed += &new_lines.join(t.newline);
        if t.final_newline || t.raw.is_empty() {
            blessed += t.newline;
        }
    }
    Ok(Replay {
        cases: t.cases.len(),
        mismatches,
        skipped: None,
        blessed,
        results,
        xfail: t.xfail,
    })
}

/// Every `.ixm` file under `paths` (files or folders), sorted; an error naming a path that
/// does not exist. A folder reached twice (through a link back to it) is walked once.
pub fn collect_files(paths: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>, String> {
    use std::collections::HashSet;
    use std::path::{Path, PathBuf};
    fn walk(p: &Path, out: &mut Vec<PathBuf>, seen: &mut HashSet<PathBuf>) {
        if p.is_dir() {
            let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            if !seen.insert(real) {
                return;
            }
            if let Ok(rd) = std::fs::read_dir(p) {
                let mut es: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
                es.sort();
                for e in es {
                    walk(&e, out, seen);
                }
            }
        } else if p.extension().is_some_and(|e| e == "ixm") {
            out.push(p.to_path_buf());
        }
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for p in paths {
        if !p.exists() {
            return Err(format!("{} does not exist", p.display()));
        }
        walk(p, &mut out, &mut seen);
    }
    Ok(out)
}

/// Writes `contents` to `path` atomically (temp file in the same folder, then rename): to
/// the file a link names (the link stays), with the file's permissions.
pub fn write_atomic(path: &std::path::Path, contents: &str) -> std::io::Result<()> {
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = target.parent().unwrap_or(std::path::Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    std::fs::write(&tmp, contents)?;
    if let Ok(m) = std::fs::metadata(&target) {
        std::fs::set_permissions(&tmp, m.permissions())?;
    }
    std::fs::rename(&tmp, &target)
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

    /// Matching is a table over (expected, actual) lines: many `...` before a line that
    /// matches nowhere is answered at once (the recursion it replaced tried every split
    /// for each `...`: five took minutes).
    #[test]
    fn many_ellipses_before_a_missing_line_match_in_polynomial_steps() {
        let mut exp: Vec<String> = vec!["...".into(); 12];
        exp.push("nowhere".into());
        let act: Vec<String> = (0..300).map(|k| format!("line {k}")).collect();
        assert!(!output_matches(&exp, &act));
        assert_eq!(first_unmatched(&exp, &act).map(|(i, _)| i), Some(12));
        exp.pop();
        assert!(output_matches(&exp, &act));
    }

    /// `--bless` keeps a `[..]` line that still matches and inserts the new line after it,
    /// rather than letting a `...` swallow the match and rewriting the line after it; a
    /// changed check is rewritten, not dropped.
    #[test]
    fn bless_sets_matching_ends_aside_at_no_cost() {
        // Random cases over a few lines, checks and `...`: the blessed lines always match the
        // new output, and setting the matching ends aside costs nothing: the alignment of
        // the middle costs what the alignment of the whole case costs.
        let pool = [
            "a",
            "b",
            "c",
            "a1",
            "b2",
            "x[..]",
            "a[..]",
            "{{[ab]}}",
            "...",
            "c{{0..5}}",
        ];
        let actual_pool = ["a", "b", "c", "a1", "b2", "x9", "c3", "c7"];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |k: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % k as u64) as usize
        };
        for _ in 0..3000 {
            let e: Vec<String> = (0..next(7))
                .map(|_| pool[next(pool.len())].into())
                .collect();
            let a: Vec<String> = (0..next(7))
                .map(|_| actual_pool[next(actual_pool.len())].into())
                .collect();
            let trimmed = bless_case(&e, &a);
            assert!(output_matches(&trimmed, &a), "{e:?} {a:?} -> {trimmed:?}");
            let (whole, _) = bless_middle(&e, &a);
            let fixed = |x: &String, y: &String| x != "..." && line_matches(x, y);
            let pre = e.iter().zip(&a).take_while(|(x, y)| fixed(x, y)).count();
            let suf = e[pre..]
                .iter()
                .rev()
                .zip(a[pre..].iter().rev())
                .take_while(|(x, y)| fixed(x, y))
                .count();
            let (middle, _) = bless_middle(&e[pre..e.len() - suf], &a[pre..a.len() - suf]);
            assert_eq!(middle, whole, "{e:?} {a:?} -> {trimmed:?}");
        }
    }

    #[test]
    fn bless_inserts_beside_a_line_that_still_matches() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let exp = v(&["...", "the [..]:", "kinds", "reset EVERY", "..."]);
        let act = v(&[
            "intro",
            "the session:",
            "vars",
            "kinds",
            "reset every",
            "save",
        ]);
        let b = bless_case(&exp, &act);
        assert_eq!(
            b,
            v(&["...", "the [..]:", "vars", "kinds", "reset every", "..."])
        );
        assert!(output_matches(&b, &act));
    }

    /// Lines `--bless` does not rewrite are written as the file has them: CRLF line ends,
    /// trailing spaces, a byte order mark, no final line end.
    #[test]
    fn bless_rewrites_only_failing_output() {
        let src = "\u{feff}# prose with a trailing space \r\nixmap> m = (d0) -> (d0), domain: d0 in [0, 3]\r\nWRONG\r\n\r\n# more\r\nixmap> m\r\n(d0) -> (d0), domain: d0 in [0, 3]  ";
        let r = replay(src).unwrap();
        assert_eq!(r.mismatches.len(), 1);
        assert_eq!(
            r.blessed,
            "\u{feff}# prose with a trailing space \r\nixmap> m = (d0) -> (d0), domain: d0 in [0, 3]\r\n(d0) -> (d0), domain: d0 in [0, 3]\r\n\r\n# more\r\nixmap> m\r\n(d0) -> (d0), domain: d0 in [0, 3]  "
        );
        // the byte order mark does not hide the first prompt
        assert_eq!(Transcript::parse(src).unwrap().cases.len(), 2);
        // without --bless nothing is aligned or written
        assert!(replay_with(src, false).unwrap().blessed.is_empty());
    }

    /// What would make a file's lines silently not checked is a format error at its line:
    /// an unknown requirement (the file always skipped), a line outside any case that is
    /// not prose (a mistyped prompt), a `{{...}}` that is not a regular expression.
    #[test]
    fn lines_that_would_go_unchecked_are_format_errors() {
        let e = Transcript::parse("#! requires: cdua\nixmap> 1\n").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("did you mean `cuda`"), "{}", e.message);
        let e = Transcript::parse("#! requires: cc cuda\n").unwrap_err();
        assert!(e.message.contains("separated by commas"), "{}", e.message);
        let e = Transcript::parse("# prose\nixamp> inverse q\nout\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("neither a prompt"), "{}", e.message);
        let e =
            Transcript::parse("ixmap> m\n(d0) -> (d0), domain: d0 in [0, {{[0-9}}]\n").unwrap_err();
        assert_eq!((e.line, &e.message[..10]), (2, "column 33:"));
        // a numeric range and a valid expression are fine, as is text before any prompt
        // that is prose
        assert!(Transcript::parse("# a\n\nixmap> m\n{{0..3}} {{[a-z]+}}\n").is_ok());
    }

    /// A path that does not exist is an error even beside one that does, and a folder
    /// reached again through a link is walked once.
    #[test]
    fn collecting_files_names_a_missing_path_and_walks_a_folder_once() {
        let d = std::env::temp_dir().join(format!("ixmap-collect-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("a.ixm"), "ixmap> 1\n").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(".", d.join("again")).unwrap();
            std::os::unix::fs::symlink(".", d.join("more")).unwrap();
        }
        let files = collect_files(std::slice::from_ref(&d)).unwrap();
        assert_eq!(files.len(), 1, "{files:?}");
        let e = collect_files(&[d.clone(), d.join("nope")]).unwrap_err();
        assert!(e.contains("nope does not exist"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
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
