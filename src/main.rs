//! The `ixmap` command line: the REPL, scripts, transcripts, the Jupyter kernel.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use clap::{Parser, Subcommand};

/// mimalloc (Cargo.toml says why), through `ixmap::expr::alloc::Mi` (its comment says
/// why); the benchmarks use the same.
#[global_allocator]
static ALLOC: ixmap::expr::alloc::Mi = ixmap::expr::alloc::Mi;
use ixmap::render::{json, text, Style};
use ixmap::session::Session;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ixmap",
    version,
    about = "A workbench for XLA-style indexing maps",
    disable_help_subcommand = true
)]
struct Cli {
    /// Run these statements instead of starting the REPL.
    /// (`-c '-1 + 2'` is a statement: the value may start with `-`.)
    #[arg(short = 'c', value_name = "STATEMENTS", allow_hyphen_values = true)]
    command: Option<String>,
    /// One JSON object per statement (with -c).
    #[arg(long, global = true)]
    json: bool,
    /// Keep going after an error (with -c).
    #[arg(long, global = true)]
    keep_going: bool,
    #[command(subcommand)]
    sub: Option<Sub>,
}

#[derive(Subcommand)]
enum Sub {
    /// Run scripts (`-` is standard input), printing each statement's result.
    Run { files: Vec<PathBuf> },
    /// Replay transcripts under the paths (default `sessions/`).
    Test {
        /// Rewrite the failing cases' output with what the session prints now, keeping
        /// every `[..]`, `{{...}}` and `...` that still matches.
        #[arg(long)]
        bless: bool,
        /// Write a JUnit XML report (one test case per prompt) for CI systems.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        paths: Vec<PathBuf>,
    },
    /// Survey an XLA dump (`--xla_dump_to=DIR --xla_dump_hlo_as_text`): every fusion of
    /// every module after optimizations, indexed, launched, emitted and verified.
    Dump {
        /// Dump directories or module files.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Index and launch only: no kernel emitted.
        #[arg(long)]
        no_emit: bool,
        /// Emit but do not run the kernels to verify them.
        #[arg(long)]
        no_check: bool,
        /// Time each kernel on the GPU, beside XLA's time when the dump has it.
        #[arg(long)]
        bench: bool,
        /// Assemble each CUDA kernel (NVRTC, ptxas) and show its registers and occupancy
        /// on an H100 beside XLA's (from the dump's Nsight Compute CSV).
        #[arg(long)]
        occupancy: bool,
    },
    /// Help on a command or topic.
    Help { topic: Option<String> },
    /// The Jupyter kernel: `kernel install` writes the kernelspec; `kernel --connection-file
    /// FILE` is what Jupyter runs.
    #[command(args_conflicts_with_subcommands = true)]
    Kernel {
        /// The connection file Jupyter wrote.
        #[arg(long, value_name = "FILE")]
        connection_file: Option<PathBuf>,
        #[command(subcommand)]
        action: Option<KernelAction>,
    },
}

#[derive(Subcommand)]
enum KernelAction {
    /// Install the kernelspec so that Jupyter lists `ixmap` (default: --user).
    Install {
        /// In the user's Jupyter data folder.
        #[arg(long, conflicts_with_all = ["sys_prefix", "prefix"])]
        user: bool,
        /// In the active Python environment (virtualenv or conda).
        #[arg(long, conflicts_with = "prefix")]
        sys_prefix: bool,
        /// Under DIR/share/jupyter.
        #[arg(long, value_name = "DIR")]
        prefix: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    // Deep fusions recurse deeply: the work runs on a thread with a large stack.
    ixmap::on_big_stack(cli_main)
}

fn cli_main() -> ExitCode {
    // Writing to a closed pipe (`ixmap ... | head`) ends the process quietly, as Unix tools do.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of a signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let code = match (&cli.command, cli.sub) {
        (Some(src), _) => run_source(&mut Session::new(), src, None, cli.json, cli.keep_going),
        (None, Some(Sub::Run { files })) => {
            let mut session = Session::new();
            let mut code = 0;
            for f in if files.is_empty() {
                vec![PathBuf::from("-")]
            } else {
                files
            } {
                let bytes = if f.as_os_str() == "-" {
                    let mut s = Vec::new();
                    if let Err(e) = std::io::stdin().read_to_end(&mut s) {
                        eprintln!("error: cannot read standard input: {e}");
                        return ExitCode::from(2);
                    }
                    s
                } else {
                    match std::fs::read(&f) {
                        Ok(s) => s,
                        Err(e) => {
                            eprintln!("error: cannot read {}: {e}", f.display());
                            return ExitCode::from(2);
                        }
                    }
                };
                // Invalid UTF-8: an error with its position; --keep-going goes on with the
                // next file.
                let src = match ixmap::syntax::decode_utf8(bytes).map(ixmap::syntax::without_bom) {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("error: {}: {e}", f.display());
                        code = code.max(1);
                        if cli.keep_going {
                            continue;
                        }
                        break;
                    }
                };
                let name = (f.as_os_str() != "-").then(|| f.display().to_string());
                // A transcript's statements are its `ixmap> ` lines; its recorded output is
                // what `ixmap test` compares against.
                let src = match ixmap::session::cmd_session::transcript_statements(&src) {
                    Some(stmts) => {
                        eprintln!(
                            "note: {} is a transcript: running its statements (`ixmap test {}` checks their output)",
                            f.display(),
                            f.display()
                        );
                        stmts
                    }
                    None => src,
                };
                code = code.max(run_source(
                    &mut session,
                    &src,
                    name.as_deref(),
                    cli.json,
                    cli.keep_going,
                ));
                if code != 0 && !cli.keep_going {
                    break;
                }
            }
            code
        }
        (
            None,
            Some(Sub::Test {
                bless,
                junit,
                paths,
            }),
        ) => test(bless, cli.json, junit, paths),
        (
            None,
            Some(Sub::Dump {
                paths,
                no_emit,
                no_check,
                bench,
                occupancy,
            }),
        ) => {
            // The statement `dump` with the same arguments, so the CLI, the REPL and the
            // notebook give one survey.
            let mut src = String::from("dump");
            for p in &paths {
                let p = p.display().to_string();
                if p.contains('"') {
                    eprintln!("error: a path with a double quote cannot be surveyed: {p}");
                    return ExitCode::from(2);
                }
                src += &format!(" \"{p}\"");
            }
            if no_emit {
                src += " emit=false";
            }
            if no_check {
                src += " check=false";
            }
            if bench {
                src += " bench";
            }
            if occupancy {
                src += " occupancy=true";
            }
            run_source(&mut Session::new(), &src, None, cli.json, false)
        }
        (None, Some(Sub::Help { topic })) => {
            let src = match topic {
                Some(t) => format!("help {t}"),
                None => "help".to_string(),
            };
            run_source(&mut Session::new(), &src, None, false, false)
        }
        (
            None,
            Some(Sub::Kernel {
                connection_file,
                action,
            }),
        ) => kernel(connection_file, action),
        (None, None) => ixmap::repl::run(),
    };
    ExitCode::from(code as u8)
}

/// Runs `src` statement by statement; 1 if any statement failed. Errors name `file` when
/// the source came from one.
fn run_source(
    session: &mut Session,
    src: &str,
    file: Option<&str>,
    as_json: bool,
    keep_going: bool,
) -> i32 {
    let style = if ixmap::repl::use_color() && !as_json {
        Style::Ansi
    } else {
        Style::Plain
    };
    let err_color = ixmap::repl::use_color_stderr() && !as_json;
    let mut failed = false;
    for piece in ixmap::syntax::split(src) {
        let outcomes = session.execute_piece(src, &piece);
        for o in outcomes {
            if as_json {
                println!("{}", json::outcome_in(&o, src, session.executed, file));
            } else {
                match &o.result {
                    Ok(v) => {
                        let s = text::with_notes(text(v, style), &o);
                        if !s.is_empty() {
                            println!("{s}");
                        }
                    }
                    Err(d) => {
                        let r = text::error_text(d, src, file);
                        eprintln!("{}", ixmap::repl::paint_error(&r, err_color));
                    }
                }
            }
            // (a `load` whose file stopped at an error fails too)
            if o.failed() {
                failed = true;
                if !keep_going {
                    return 1;
                }
            }
        }
    }
    i32::from(failed)
}

/// One case of `ixmap test`, as `--json` and `--junit` report it.
struct CaseReport {
    file: String,
    line: usize,
    input: String,
    /// pass, fail, skip, xfail (failing in a `#! xfail` file), xpass (passing in one whose
    /// every case passes: the directive is stale), error (the file could not be checked)
    status: &'static str,
    message: String,
    expected: Vec<String>,
    actual: Vec<String>,
}

impl CaseReport {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "file": self.file,
            "line": self.line,
            "input": self.input,
            "status": self.status,
            "message": self.message,
            "expected": self.expected,
            "actual": self.actual,
        })
    }
}

fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // A carriage return as a reference, or a parser reads it as a line end.
            '\r' => o.push_str("&#13;"),
            // XML 1.0's Char excludes the other C0 controls, the surrogates and U+FFFE,
            // U+FFFF: written as `\xNN` / `\u{NNNN}` text.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t') => {
                o.push_str(&format!("\\x{:02x}", c as u32))
            }
            '\u{fffe}' | '\u{ffff}' => o.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

/// A JUnit XML report: one `<testsuite>` per file, one `<testcase>` per prompt.
fn junit_xml(reports: &[CaseReport]) -> String {
    let mut files: Vec<&str> = Vec::new();
    for r in reports {
        if !files.contains(&r.file.as_str()) {
            files.push(&r.file);
        }
    }
    let count =
        |rs: &[&CaseReport], st: &[&str]| rs.iter().filter(|r| st.contains(&r.status)).count();
    let all: Vec<&CaseReport> = reports.iter().collect();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x += &format!(
        "<testsuites name=\"ixmap\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
        all.len(),
        count(&all, &["fail", "xpass"]),
        count(&all, &["error"]),
        count(&all, &["skip", "xfail"])
    );
    for f in files {
        let rs: Vec<&CaseReport> = reports.iter().filter(|r| r.file == f).collect();
        x += &format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
            xml_escape(f),
            rs.len(),
            count(&rs, &["fail", "xpass"]),
            count(&rs, &["error"]),
            count(&rs, &["skip", "xfail"])
        );
        for r in rs {
            let first = r.input.lines().next().unwrap_or("");
            x += &format!(
                "    <testcase classname=\"{}\" name=\"{}: {}\" file=\"{}\" line=\"{}\"",
                xml_escape(&f.trim_end_matches(".ixm").replace('/', ".")),
                r.line,
                xml_escape(first),
                xml_escape(f),
                r.line
            );
            let body = || {
                let mut b = String::new();
                for l in &r.expected {
                    b += &format!("- {l}\n");
                }
                for l in &r.actual {
                    b += &format!("+ {l}\n");
                }
                xml_escape(&b)
            };
            match r.status {
                "pass" => x += "/>\n",
                "fail" | "xpass" => {
                    x += &format!(
                        ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                        xml_escape(&r.message),
                        body()
                    )
                }
                "error" => {
                    x += &format!(
                        ">\n      <error message=\"{}\"/>\n    </testcase>\n",
                        xml_escape(&r.message)
                    )
                }
                _ => {
                    x += &format!(
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                        xml_escape(&r.message)
                    )
                }
            }
        }
        x += "  </testsuite>\n";
    }
    x += "</testsuites>\n";
    x
}

/// The actual lines around index `j` (two before, two after), numbered, `>` at `j`.
fn around(actual: &[String], j: usize) -> Vec<String> {
    let lo = j.saturating_sub(2);
    let hi = (j + 3).min(actual.len());
    (lo..hi)
        .map(|k| {
            format!(
                "{} {:>3} | {}",
                if k == j { ">" } else { " " },
                k + 1,
                actual[k]
            )
        })
        .collect()
}

fn test(bless: bool, as_json: bool, junit: Option<PathBuf>, paths: Vec<PathBuf>) -> i32 {
    let code = test_files(bless, as_json, junit.is_some(), paths);
    let (code, reports) = code;
    if let Some(path) = junit {
        if let Err(e) = std::fs::write(&path, junit_xml(&reports)) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return 1;
        }
    }
    if as_json {
        for r in &reports {
            println!("{}", r.json());
        }
    }
    code
}

/// The directory a transcript's relative paths are read from: the parent of the nearest
/// `sessions` folder the file lies in (`PROJECT/sessions/hlo/x.ixm` → `PROJECT`), taken
/// lexically (no symbolic link resolved, so `../shared` beside the project stays where the
/// user sees it); `None` for a file outside any `sessions` folder (the current directory).
fn transcript_root(f: &std::path::Path) -> Option<PathBuf> {
    let abs = std::path::absolute(f).ok()?;
    abs.ancestors()
        .skip(1)
        .find(|a| a.file_name() == Some("sessions".as_ref()))?
        .parent()
        .map(PathBuf::from)
}

fn test_files(
    bless: bool,
    as_json: bool,
    collect: bool,
    paths: Vec<PathBuf>,
) -> (i32, Vec<CaseReport>) {
    let mut reports: Vec<CaseReport> = Vec::new();
    let collect = collect || as_json;
    // With --json, stdout is the JSON lines; the human report goes to stderr.
    macro_rules! say {
        ($($t:tt)*) => {
            if as_json { eprintln!($($t)*) } else { println!($($t)*) }
        };
    }
    use colored::Colorize;
    let paths = if paths.is_empty() {
        vec![PathBuf::from("sessions")]
    } else {
        paths
    };
    let files = match ixmap::transcript::collect_files(&paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return (1, reports);
        }
    };
    if files.is_empty() {
        eprintln!(
            "error: no .ixm transcripts under {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return (1, reports);
    }
    if !ixmap::repl::use_color() {
        colored::control::set_override(false);
    }
    let (mut passed, mut failed, mut skipped, mut bad_files) = (0, 0, 0, Vec::new());
    // Files that could not be checked at all (unreadable, malformed, without cases): errors
    // of their own, never counted as mismatching cases that `--bless` would fix.
    let mut broken: Vec<PathBuf> = Vec::new();
    // Whether every file --bless had to write was written (and none was malformed).
    let mut blessed_ok = true;
    for f in &files {
        let src = match std::fs::read(f)
            .map_err(|e| e.to_string())
            .and_then(ixmap::syntax::decode_utf8)
        {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", f.display());
                broken.push(f.clone());
                reports.push(file_error(f, format!("cannot read: {e}")));
                continue;
            }
        };
        // Relative paths in a project's transcripts (`benches/data/...`, `../shared/...`)
        // name files from the project's root: the replay runs there, wherever `ixmap test`
        // was started (back in the starting directory before anything is reported or
        // blessed, so `f` keeps naming the same file).
        let here = std::env::current_dir().ok();
        let root = transcript_root(f).filter(|r| Some(r) != here.as_ref());
        let moved = root
            .as_ref()
            .is_some_and(|r| std::env::set_current_dir(r).is_ok());
        let replayed = ixmap::transcript::replay_with(&src, bless);
        if let (true, Some(h)) = (moved, &here) {
            let _ = std::env::set_current_dir(h);
        }
        let r = match replayed {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {}:{e}", f.display());
                broken.push(f.clone());
                reports.push(file_error(f, format!("{}:{e}", f.display())));
                continue;
            }
        };
        if r.cases == 0 {
            eprintln!(
                "error: {}: no cases (a case is a line starting `ixmap> ` and the output after it)",
                f.display()
            );
            broken.push(f.clone());
            reports.push(file_error(f, "no cases".to_string()));
            continue;
        }
        let file = f.display().to_string();
        if let Some(req) = &r.skipped {
            skipped += r.cases;
            say!("skip {} (requires {req})", f.display());
            if collect {
                for c in &r.results {
                    reports.push(CaseReport {
                        file: file.clone(),
                        line: c.line,
                        input: c.input.clone(),
                        status: "skip",
                        message: format!("requires {req}"),
                        expected: vec![],
                        actual: vec![],
                    });
                }
            }
            continue;
        }
        // `#! xfail`: failing cases are expected; the file fails only when none does
        let xpass = r.xfail.is_some() && r.mismatches.is_empty();
        if let Some(why) = &r.xfail {
            if xpass {
                failed += r.cases;
                bad_files.push(f.clone());
                say!(
                    "{}",
                    format!(
                        "XPASS {} (every case passes: remove its `#! xfail`)",
                        f.display()
                    )
                    .red()
                    .bold()
                );
            } else {
                passed += r.cases - r.mismatches.len();
                skipped += r.mismatches.len();
                say!(
                    "xfail {} ({} case{} fail{} as expected{})",
                    f.display(),
                    r.mismatches.len(),
                    if r.mismatches.len() == 1 { "" } else { "s" },
                    if r.mismatches.len() == 1 { "s" } else { "" },
                    if why.is_empty() {
                        String::new()
                    } else {
                        format!(": {why}")
                    }
                );
            }
        } else {
            passed += r.cases - r.mismatches.len();
            failed += r.mismatches.len();
        }
        if collect {
            for c in &r.results {
                let m = r.mismatches.iter().find(|m| m.line == c.line);
                let status = match (m.is_some(), r.xfail.is_some()) {
                    (false, false) => "pass",
                    (false, true) if xpass => "xpass",
                    (false, true) => "pass",
                    (true, false) => "fail",
                    (true, true) => "xfail",
                };
                reports.push(CaseReport {
                    file: file.clone(),
                    line: c.line,
                    input: c.input.clone(),
                    status,
                    message: match m {
                        Some(m) => first_difference(&file, m),
                        None if xpass => "passes in a `#! xfail` file".to_string(),
                        None => String::new(),
                    },
                    expected: m.map(|m| m.expected.clone()).unwrap_or_default(),
                    actual: m.map(|m| m.actual.clone()).unwrap_or_default(),
                });
            }
        }
        if r.xfail.is_some() {
            continue;
        }
        for m in &r.mismatches {
            let out = |t: String| {
                if as_json {
                    eprintln!("{t}")
                } else {
                    println!("{t}")
                }
            };
            out(format!(
                "{}",
                format!("FAIL {}:{}", f.display(), m.line).red().bold()
            ));
            out(format!(
                "  ixmap> {}",
                m.input.replace('\n', "\n     ...> ")
            ));
            let (el, j) = m.first_unmatched;
            out(format!("  {}", first_difference(&file, m)));
            if !m.actual.is_empty() && el > 0 {
                out("  actual output there:".to_string());
                for l in around(&m.actual, j.min(m.actual.len().saturating_sub(1))) {
                    out(format!("  {l}"));
                }
            }
            if !as_json {
                print_mismatch(&m.expected, &m.actual);
            }
        }
        if !r.mismatches.is_empty() {
            bad_files.push(f.clone());
            if bless {
                if let Err(e) = ixmap::transcript::write_atomic(f, &r.blessed) {
                    eprintln!("error: cannot write {}: {e}", f.display());
                    blessed_ok = false;
                }
            }
        }
    }
    let wrote_all = bless && blessed_ok;
    let nfiles = bad_files.len();
    let skipped_note = if skipped > 0 {
        format!(", {skipped} skipped")
    } else {
        String::new()
    };
    if !broken.is_empty() {
        eprintln!(
            "error: {} file{} could not be checked: {}",
            broken.len(),
            if broken.len() == 1 { "" } else { "s" },
            broken
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    if failed == 0 && broken.is_empty() {
        say!(
            "{passed} passed in {} file{}{skipped_note}.",
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        );
    } else if failed > 0 {
        say!(
            "{} case{} differ{} in {} file{} ({} passed{skipped_note}).",
            failed,
            if failed == 1 { "" } else { "s" },
            if failed == 1 { "s" } else { "" },
            nfiles,
            if nfiles == 1 { "" } else { "s" },
            passed,
        );
    }
    if failed > 0 {
        if bless {
            say!(
                "blessed: {}",
                bad_files
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            // Blessing wrote what it was asked to: success, as `cargo insta accept` does.
            if wrote_all && broken.is_empty() {
                return (0, reports);
            }
        } else {
            say!(
                "If the new output is right: ixmap test --bless {}",
                bad_files
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        return (1, reports);
    }
    (i32::from(!broken.is_empty()), reports)
}

/// A file that could not be checked, as a report.
fn file_error(f: &std::path::Path, message: String) -> CaseReport {
    CaseReport {
        file: f.display().to_string(),
        line: 0,
        input: String::new(),
        status: "error",
        message,
        expected: vec![],
        actual: vec![],
    }
}

/// "FILE:LINE: expected `...` not found" (or: the output goes on past the expected end).
fn first_difference(file: &str, m: &ixmap::transcript::Mismatch) -> String {
    let (line, j) = m.first_unmatched;
    match m.expected.get(m.expected_index) {
        Some(e) => format!("{file}:{line}: expected line not found: {e}"),
        None => format!(
            "{file}:{line}: the expected output ends here, but the output goes on at line {}: {}",
            j + 1,
            m.actual.get(j).map_or("", |l| l.as_str())
        ),
    }
}

/// Expected lines (`-`, red) then actual lines (`+`, green). A changed line paired with the
/// expected line at the same place has its changed part highlighted (inverse video on a
/// terminal, a `^^^` line under it otherwise).
fn print_mismatch(expected: &[String], actual: &[String]) {
    use colored::Colorize;
    let color = colored::control::SHOULD_COLORIZE.should_colorize();
    let paired = expected.len() == actual.len();
    let mark = |l: &str, other: Option<&String>, sign: &str, green: bool| {
        let paint = |s: &str| if green { s.green() } else { s.red() };
        let Some(o) = other.filter(|o| *o != l && !o.contains("[..]") && !o.contains("{{")) else {
            println!("{}", paint(&format!("{sign} {l}")));
            return;
        };
        let (pre, suf) = ixmap::transcript::changed_span(l, o);
        let end = l.len().saturating_sub(suf).max(pre);
        if color {
            println!(
                "{}{}{}",
                paint(&format!("{sign} {}", &l[..pre])),
                paint(&l[pre..end]).bold().reversed(),
                paint(&l[end..])
            );
        } else {
            println!("{sign} {l}");
            let width = l[pre..end].chars().count().max(1);
            println!(
                "  {}{}",
                " ".repeat(l[..pre].chars().count()),
                "^".repeat(width)
            );
        }
    };
    for (k, l) in expected.iter().enumerate() {
        mark(l, if paired { actual.get(k) } else { None }, "-", false);
    }
    for (k, l) in actual.iter().enumerate() {
        mark(l, if paired { expected.get(k) } else { None }, "+", true);
    }
}

/// `ixmap kernel install ...` and `ixmap kernel --connection-file FILE`.
fn kernel(connection_file: Option<PathBuf>, action: Option<KernelAction>) -> i32 {
    use ixmap::jupyter::install::{install, Target};
    match (connection_file, action) {
        (Some(file), None) => match ixmap::jupyter::run(&file) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("error: {e}");
                1
            }
        },
        (
            None,
            Some(KernelAction::Install {
                user: _,
                sys_prefix,
                prefix,
            }),
        ) => {
            let target = match (sys_prefix, prefix) {
                (_, Some(dir)) => Target::Prefix(dir),
                (true, None) => Target::SysPrefix,
                (false, None) => Target::User,
            };
            let exe = match std::env::current_exe().and_then(|p| p.canonicalize()) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("error: cannot find the ixmap binary's path: {e}");
                    return 1;
                }
            };
            match install(&target, &exe) {
                Ok(dir) => {
                    println!("installed the ixmap kernelspec in {}", dir.display());
                    0
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    1
                }
            }
        }
        _ => {
            eprintln!("usage: ixmap kernel install [--user | --sys-prefix | --prefix DIR]\n       ixmap kernel --connection-file FILE");
            2
        }
    }
}
