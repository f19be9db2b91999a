//! The `ixmap` command line: the REPL, scripts, transcripts, the Jupyter kernel.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use clap::{Parser, Subcommand};
use ixmap::render::{json, text, Style};
use ixmap::session::Session;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "ixmap", version, about = "A workbench for XLA-style indexing maps", disable_help_subcommand = true)]
struct Cli {
    /// Run these statements instead of starting the REPL.
    #[arg(short = 'c', value_name = "STATEMENTS")]
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
        #[arg(long)]
        bless: bool,
        paths: Vec<PathBuf>,
    },
    /// Help on a command or topic.
    Help { topic: Option<String> },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match (&cli.command, cli.sub) {
        (Some(src), _) => run_source(&mut Session::new(), src, cli.json, cli.keep_going),
        (None, Some(Sub::Run { files })) => {
            let mut session = Session::new();
            let mut code = 0;
            for f in if files.is_empty() { vec![PathBuf::from("-")] } else { files } {
                let src = if f.as_os_str() == "-" {
                    let mut s = String::new();
                    if let Err(e) = std::io::stdin().read_to_string(&mut s) {
                        eprintln!("error: cannot read standard input: {e}");
                        return ExitCode::from(2);
                    }
                    s
                } else {
                    match std::fs::read_to_string(&f) {
                        Ok(s) => s,
                        Err(e) => {
                            eprintln!("error: cannot read {}: {e}", f.display());
                            return ExitCode::from(2);
                        }
                    }
                };
                code = run_source(&mut session, &src, cli.json, cli.keep_going);
                if code != 0 && !cli.keep_going {
                    break;
                }
            }
            code
        }
        (None, Some(Sub::Test { bless, paths })) => test(bless, paths),
        (None, Some(Sub::Help { topic })) => {
            let src = match topic {
                Some(t) => format!("help {t}"),
                None => "help".to_string(),
            };
            run_source(&mut Session::new(), &src, false, false)
        }
        (None, None) => ixmap::repl::run(),
    };
    ExitCode::from(code as u8)
}

/// Runs `src` statement by statement; 1 if any statement failed.
fn run_source(session: &mut Session, src: &str, as_json: bool, keep_going: bool) -> i32 {
    let style = if ixmap::repl::use_color() && !as_json { Style::Ansi } else { Style::Plain };
    let base = session.executed;
    let mut failed = false;
    for piece in ixmap::syntax::split(src) {
        let stmt_src = &src[..piece.end];
        let outcomes = session.execute_piece(src, &piece);
        let _ = stmt_src;
        for o in outcomes {
            let n = base + o.stmt;
            if as_json {
                println!("{}", json::outcome(&o, src, session.executed.max(n)));
            } else {
                match &o.result {
                    Ok(v) => {
                        let s = text(v, style);
                        if !s.is_empty() {
                            println!("{s}");
                        }
                    }
                    Err(d) => eprintln!("{}", d.render(src)),
                }
            }
            if o.result.is_err() {
                failed = true;
                if !keep_going {
                    return 1;
                }
            }
        }
    }
    i32::from(failed)
}

fn test(bless: bool, paths: Vec<PathBuf>) -> i32 {
    use colored::Colorize;
    let paths = if paths.is_empty() { vec![PathBuf::from("sessions")] } else { paths };
    let files = ixmap::transcript::collect_files(&paths);
    if files.is_empty() {
        eprintln!("error: no .ixm transcripts under {}", paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
        return 1;
    }
    if !ixmap::repl::use_color() {
        colored::control::set_override(false);
    }
    let (mut passed, mut failed, mut skipped, mut bad_files) = (0, 0, 0, Vec::new());
    for f in &files {
        let src = match std::fs::read_to_string(f) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", f.display());
                failed += 1;
                continue;
            }
        };
        let r = match ixmap::transcript::replay(&src) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {}:{e}", f.display());
                failed += 1;
                bad_files.push(f.clone());
                continue;
            }
        };
        if let Some(req) = &r.skipped {
            skipped += r.cases;
            println!("skip {} (requires {req})", f.display());
            continue;
        }
        passed += r.cases - r.mismatches.len();
        failed += r.mismatches.len();
        for m in &r.mismatches {
            println!("{}", format!("FAIL {}:{}", f.display(), m.line).red().bold());
            println!("  ixmap> {}", m.input.replace('\n', "\n     ...> "));
            for l in &m.expected {
                println!("{}", format!("- {l}").red());
            }
            for l in &m.actual {
                println!("{}", format!("+ {l}").green());
            }
        }
        if !r.mismatches.is_empty() {
            bad_files.push(f.clone());
            if bless {
                if let Err(e) = ixmap::transcript::write_atomic(f, &r.blessed) {
                    eprintln!("error: cannot write {}: {e}", f.display());
                }
            }
        }
    }
    let nfiles = bad_files.len();
    println!(
        "{} case{} differ{} in {} file{} ({} passed, {} skipped).",
        failed,
        if failed == 1 { "" } else { "s" },
        if failed == 1 { "s" } else { "" },
        nfiles,
        if nfiles == 1 { "" } else { "s" },
        passed,
        skipped
    );
    println!("{passed} passed, {failed} failed, {skipped} skipped");
    if failed > 0 {
        if bless {
            println!("blessed: {}", bad_files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" "));
        } else {
            println!(
                "If the new output is right: ixmap test --bless {}",
                bad_files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ")
            );
        }
        return 1;
    }
    0
}
