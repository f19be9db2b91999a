//! The command line as a user (or a script) meets it: the built binary, driven through
//! `std::process::Command`. Exit codes, `--json` (SPEC §1), `-c`, `run` (files and `-`),
//! `--version`, `help`, colour rules, the REPL on a pipe, and `test --bless`.

use serde_json::Value as Json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn ixmap() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ixmap"));
    c.env_remove("NO_COLOR");
    // Never touch the user's real history from a test.
    c.env("IXMAP_HISTORY", "");
    c
}

fn run(args: &[&str]) -> Output {
    ixmap().args(args).output().expect("the ixmap binary runs")
}

fn run_stdin(args: &[&str], input: &str, env: &[(&str, &str)]) -> Output {
    let mut c = ixmap();
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("the ixmap binary starts");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("stdin accepts input");
    child.wait_with_output().expect("ixmap finishes")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_lines(o: &Output) -> Vec<Json> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// A fresh folder under the target directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// A file `file` holding `text`, alone in a fresh scratch folder for test `test`.
fn scratch_file(test: &str, file: &str, text: &str) -> PathBuf {
    let f = scratch(test).join(file);
    std::fs::write(&f, text).expect("write");
    f
}

/// The command failed (exit code 1) and said `text` on standard error.
fn assert_fails_saying(o: &Output, text: &str) {
    assert_eq!(o.status.code(), Some(1), "{}", stderr(o));
    assert!(stderr(o).contains(text), "{}", stderr(o));
}

const DONE_WHEN: &str = "m = (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]; inverse m";

#[test]
fn done_when_inverse_of_a_transpose() {
    let o = run(&["-c", DONE_WHEN]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "(d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]\n\
         (d0, d1) -> (d1, d0), domain: d0 in [0, 4], d1 in [0, 3], is_simplified: true\n"
    );
    assert_eq!(stderr(&o), "");
}

#[test]
fn json_follows_spec_section_1() {
    let o = run(&["-c", DONE_WHEN, "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v = json_lines(&o);
    assert_eq!(v.len(), 2);
    assert_eq!(v[0]["ok"], true);
    assert_eq!(v[0]["stmt"], 1);
    assert_eq!(v[0]["kind"], "bound");
    assert_eq!(v[0]["name"], "m");
    assert_eq!(
        v[0]["text"],
        "(d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]"
    );
    assert_eq!(v[1]["ok"], true);
    assert_eq!(v[1]["stmt"], 2);
    assert_eq!(v[1]["kind"], "map");
    assert_eq!(
        v[1]["text"],
        "(d0, d1) -> (d1, d0), domain: d0 in [0, 4], d1 in [0, 3], is_simplified: true"
    );
    // The fields come in the order SPEC shows them.
    let first = stdout(&o).lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with(r#"{"ok":true,"stmt":1,"kind":"bound","name":"m""#),
        "{first}"
    );
    // No colour in JSON, even when asked for a terminal's worth of it.
    assert!(!stdout(&o).contains('\u{1b}'));
}

#[test]
fn json_bool_and_errors_with_line_and_column() {
    let src = "m = (d0) -> (d0), domain: d0 in [0, 7]\nequal m, m\n\nx = (d0) -> (d0 + d7), domain: d0 in [0, 7]";
    let o = run(&["--json", "--keep-going", "-c", src]);
    assert_eq!(o.status.code(), Some(1));
    let v = json_lines(&o);
    assert_eq!(v.len(), 3);
    assert_eq!(v[1]["kind"], "bool");
    assert_eq!(v[1]["value"], true);
    assert_eq!(v[1]["text"], "true");
    assert_eq!(v[2]["ok"], false);
    assert_eq!(v[2]["stmt"], 3);
    assert_eq!(v[2]["error"], "unknown variable `d7`");
    assert_eq!(v[2]["line"], 4);
    assert_eq!(v[2]["column"], 19);
}

#[test]
fn json_text_is_exactly_the_plain_output() {
    let src = "a = (d0, d1) -> (d0 * 8 + d1), domain: d0 in [0, 3], d1 in [0, 7]\n\
               inverse a\neval a at (1, 2)\nshow a as mlir\nis_permutation a\nhelp eval";
    let plain = run(&["-c", src]);
    let json = run(&["-c", src, "--json"]);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    let texts: Vec<String> = json_lines(&json)
        .iter()
        .map(|v| v["text"].as_str().unwrap_or_default().to_string() + "\n")
        .collect();
    assert_eq!(texts.concat(), stdout(&plain));
}

#[test]
fn exit_codes_of_c_and_run() {
    // An error stops the run with exit code 1; what came before is printed.
    let o = run(&["-c", "(d0) -> (d0); (d0) -> (d1); (d0) -> (d0 * 2)"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "(d0) -> (d0)\n");
    assert!(stderr(&o).contains("unknown variable `d1`"));
    // --keep-going runs the rest, and still reports the failure.
    let o = run(&[
        "--keep-going",
        "-c",
        "(d0) -> (d0); (d0) -> (d1); (d0) -> (d0 * 2)",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "(d0) -> (d0)\n(d0) -> (d0 * 2)\n");
    // Success is 0, an empty program too.
    assert_eq!(run(&["-c", ""]).status.code(), Some(0));
    assert_eq!(run(&["-c", "# only a comment"]).status.code(), Some(0));
    // A usage error is 2.
    assert_eq!(run(&["--no-such-flag"]).status.code(), Some(2));
    // A file that cannot be read is 2.
    assert_eq!(run(&["run", "/no/such/file.ixm"]).status.code(), Some(2));
}

#[test]
fn run_files_and_standard_input() {
    let dir = scratch("run");
    let a = dir.join("a.ixm");
    let b = dir.join("b.ixm");
    std::fs::write(
        &a,
        "m = (d0, d1) -> (d0 * 4 + d1),\n  domain: d0 in [0, 1], d1 in [0, 3]\n",
    )
    .expect("write a");
    std::fs::write(&b, "# uses m from a.ixm\ninverse m\n").expect("write b");
    let o = run(&[
        "run",
        a.to_str().unwrap_or_default(),
        b.to_str().unwrap_or_default(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "(d0, d1) -> (d0 * 4 + d1), domain: d0 in [0, 1], d1 in [0, 3]\n\
         (d0) -> (d0 floordiv 4, d0 mod 4), domain: d0 in [0, 7], is_simplified: true\n"
    );
    // `-` is standard input; errors name the place.
    let o = run_stdin(&["run", "-"], "x = (d0) -> (d0)\ny = (d0) -> (x)\n", &[]);
    assert_fails_saying(&o, " --> 2:14");
    // A script file's errors name the file.
    let bad = dir.join("bad.ixm");
    std::fs::write(&bad, "\n\ninverse (d0) -> (d0 +)\n").expect("write bad");
    let o = run(&["run", bad.to_str().unwrap_or_default()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(" --> {}:3:22", bad.display())),
        "{err}"
    );
    assert!(err.contains("expected an expression, found `)`"), "{err}");
}

#[test]
fn version_and_help() {
    let o = run(&["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), format!("ixmap {}\n", env!("CARGO_PKG_VERSION")));
    // `help` lists every command by name, in groups; `help all` gives every usage.
    let o = run(&["help"]);
    assert_eq!(o.status.code(), Some(0));
    let all = run(&["help", "all"]);
    assert_eq!(all.status.code(), Some(0));
    for c in ixmap::session::commands::all() {
        assert!(stdout(&o).contains(c.name), "`help` lists {}", c.name);
        assert!(
            stdout(&all).contains(c.usage),
            "`help all` lists {}",
            c.usage
        );
    }
    let o = run(&["help", "maps"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("KNOWN EMPTY"));
    let o = run(&["help", "compse"]);
    assert_fails_saying(&o, "did you mean `compose`?");
}

/// Every command has an example, `help NAME` shows it, and it runs without error in a fresh
/// session, printing what `help` says it prints.
#[test]
fn every_help_example_runs() {
    let mut n = 0;
    for c in ixmap::session::commands::all() {
        assert!(!c.example.is_empty(), "{} has an example", c.name);
        assert!(
            c.example
                .split(';')
                .any(|stmt| stmt.trim_start().starts_with(c.name)),
            "the example of {} uses it",
            c.name
        );
        let o = run(&["-c", c.example]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "example of {}: {}\n{}",
            c.name,
            c.example,
            stderr(&o)
        );
        assert!(
            !stdout(&o).trim().is_empty(),
            "example of {} prints something",
            c.name
        );
        let h = run(&["help", c.name]);
        assert_eq!(h.status.code(), Some(0));
        let help = stdout(&h);
        assert!(
            help.contains(&format!("ixmap> {}", c.example)),
            "help {} shows its example",
            c.name
        );
        // Timings differ from run to run; only deterministic output is compared. Help shows
        // the outcome of the example's last statement (a binding before it sets the scene).
        // An example that reads or writes a file is shown, never run, by help.
        let touches_files = ixmap::session::args::Signature::parse(c.usage).is_ok_and(|s| {
            s.slots
                .iter()
                .any(|x| x.name.split('|').any(|p| p == "FILE"))
        });
        if touches_files {
            assert!(!help.contains("wrote "), "help {} ran its example", c.name);
        }
        if !["help", "bench", "tune"].contains(&c.name) && !touches_files {
            let j = run(&["-c", c.example, "--json"]);
            let last = stdout(&j).lines().last().unwrap_or_default().to_string();
            let last: serde_json::Value = serde_json::from_str(&last).expect("json line");
            let text = last["text"].as_str().unwrap_or_default().to_string();
            assert!(
                !text.trim().is_empty(),
                "example of {} prints something",
                c.name
            );
            for line in text.lines() {
                assert!(
                    help.contains(&format!("  {line}")),
                    "help {} shows the example's output {line:?}",
                    c.name
                );
            }
        }
        n += 1;
    }
    assert!(n >= 11, "the foundation's commands are all there");
}

#[test]
fn no_colour_when_not_a_terminal_or_no_color() {
    let src = "equal (d0) -> (d0), domain: d0 in [0, 3], (d0) -> (d0), domain: d0 in [0, 3]; inverse (d0, d1) -> (d0)";
    let o = run(&["-c", src]);
    assert!(!stdout(&o).contains('\u{1b}') && !stderr(&o).contains('\u{1b}'));
    let o = ixmap()
        .args(["-c", src])
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    assert!(!stdout(&o).contains('\u{1b}') && !stderr(&o).contains('\u{1b}'));
    let o = run(&["test", "/no/such/folder"]);
    assert!(!stdout(&o).contains('\u{1b}') && !stderr(&o).contains('\u{1b}'));
}

#[test]
fn malformed_map_gets_line_column_and_the_session_goes_on() {
    // Piped input is a script: an error names the line of the input, as `ixmap run` does
    // (it said 1:25, the line within the statement, whatever line the statement was on).
    let src = "m = (d0) -> (d0), domain: d0 in [0, 3]\nbad = (d0, d1) -> (d0 + , d1)\ninverse m\n";
    let o = run_stdin(&[], src, &[]);
    // piped input exits 1 when a statement failed, as `ixmap run` does
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "(d0) -> (d0), domain: d0 in [0, 3]\n(d0) -> (d0), domain: d0 in [0, 3], is_simplified: true\n"
    );
    assert_eq!(
        stderr(&o),
        "error: expected an expression, found `,`\n --> 2:25\n  |\n2 | bad = (d0, d1) -> (d0 + , d1)\n  |                         ^ unexpected here\n"
    );
}

/// Multi-line input over a pipe; piped input is not the user's typing, so it stays out of
/// the history file (history on a terminal: tests/pty.rs, tests/repl.rs).
#[test]
fn repl_multi_line_input_and_persistent_history() {
    let dir = scratch("history");
    let hist = dir.join("sub").join("history");
    let input =
        "m = (d0, d1) -> (d1, d0),\ndomain:\nd0 in [0, 3],\nd1 in [0, 4]\nis_permutation m\n";
    let o = run_stdin(
        &[],
        input,
        &[("IXMAP_HISTORY", hist.to_str().unwrap_or_default())],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "(d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]\ntrue\n"
    );
    assert!(!hist.exists(), "piped input is not written to the history");
}

#[test]
fn unwritable_history_is_a_warning_not_a_crash() {
    let dir = scratch("nohistory");
    let file = dir.join("a-file");
    std::fs::write(&file, "").expect("write");
    let hist = file.join("history"); // a path below a plain file can never be created
    let o = run_stdin(
        &[],
        "(d0) -> (d0)\n(d0) -> (d0 * 2)\n",
        &[("IXMAP_HISTORY", hist.to_str().unwrap_or_default())],
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "(d0) -> (d0)\n(d0) -> (d0 * 2)\n");
    // piped input never touches the history (a terminal's warning: tests/repl.rs)
    assert_eq!(stderr(&o), "");
}

#[test]
fn repl_starts_and_exits_on_end_of_input() {
    let o = run_stdin(&[], "", &[]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "");
}

const GOOD: &str = "# a transcript\n\nixmap> (d0) -> (d0 * 2), domain: d0 in [0, 3]\n(d0) -> (d0 * 2), domain: d0 in [0, 3]\n";
const STALE: &str = "# a transcript\n\nixmap> (d0) -> (d0 * 2), domain: d0 in [0, 3]\n(d0) -> (d0 + d0), domain: d0 in [0, 3]\n";

fn replace_atomically(path: &Path, contents: &str) {
    let tmp = path.with_extension("writing");
    std::fs::write(&tmp, contents).expect("write temp");
    std::fs::rename(&tmp, path).expect("rename");
}

#[test]
fn test_reports_mismatch_and_bless_fixes_it() {
    let f = scratch_file("bless", "case.ixm", STALE);
    let o = run(&["test", f.to_str().unwrap_or_default()]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains(&format!("FAIL {}:3", f.display())), "{out}");
    assert!(
        out.contains("- (d0) -> (d0 + d0), domain: d0 in [0, 3]"),
        "{out}"
    );
    assert!(
        out.contains("+ (d0) -> (d0 * 2), domain: d0 in [0, 3]"),
        "{out}"
    );
    assert!(
        out.contains(&format!("ixmap test --bless {}", f.display())),
        "{out}"
    );
    let o = run(&["test", "--bless", f.to_str().unwrap_or_default()]);
    // Issue 17: --bless exits 0 once it has written the new output.
    assert_eq!(
        o.status.code(),
        Some(0),
        "bless succeeds once it has written"
    );
    assert_eq!(std::fs::read_to_string(&f).expect("read"), GOOD);
    let o = run(&["test", f.to_str().unwrap_or_default()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // Nothing but the transcript is left in the folder.
    let names: Vec<_> = std::fs::read_dir(f.parent().expect("the scratch folder"))
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

/// A reader watching the file while `--bless` rewrites it sees the old text or the new, never
/// a truncated or half-written file.
#[test]
fn bless_is_atomic() {
    let f = scratch_file("atomic", "case.ixm", STALE);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (f, stop) = (f.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(s) = std::fs::read_to_string(&f) {
                    assert!(
                        s == GOOD || s == STALE,
                        "a reader saw a partial file: {s:?}"
                    );
                    reads += 1;
                }
            }
            reads
        })
    };
    for _ in 0..15 {
        replace_atomically(&f, STALE);
        let o = run(&["test", "--bless", f.to_str().unwrap_or_default()]);
        assert_eq!(o.status.code(), Some(0));
        assert_eq!(std::fs::read_to_string(&f).expect("read"), GOOD);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().expect("the reader saw only whole files");
    assert!(reads > 0);
}

#[test]
fn big_numbers_and_overflow_are_errors_not_crashes() {
    let o = run(&["-c", "(d0) -> (d0), domain: d0 in [0, 9223372036854775808]"]);
    assert_fails_saying(&o, "does not fit in 64 bits");
    let o = run(&[
        "-c",
        "eval (d0) -> (d0 * 9223372036854775807), domain: d0 in [0, 3] at (2)",
    ]);
    assert_fails_saying(&o, "overflow");
}

/// A transcript whose first case is stale in one line (the other line keeps its `[..]`),
/// whose second case is right (and must stay byte for byte, checks and all), and whose third
/// case has an elision that no longer matches (that line is rewritten).
const MIXED: &str = "# bless rewrites only what mismatches\n\
\n\
ixmap> p = f32[4,8] parameter(0)\n\
defined instruction p: f32[4,8] (parameter)\n\
ixmap> t = f32[8,4] transpose(p), dimensions={1,0}\n\
defined instruction t: f32[8,4] ([..])\n\
ixmap> indexing t\n\
operand 1:\n\
\x20 (d0, d1) -> (d1, d0), domain: d0 in [0, 7], d1 in [0, [..]]\n\
\n\
# right as it is\n\
ixmap> m = (d0) -> (d0 * 2), domain: d0 in [0, 3]\n\
(d0) -> (d0 * {{[0-9]+}}), domain: d0 in [0, {{2..4}}]\n\
\n\
ixmap> inverse (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]\n\
(d0, d1) -> (d1, d0), domain: d0 in [0, 9], [..]\n";

/// MIXED as `--bless` must leave it: the stale line and the line whose elision no longer
/// matches rewritten, every other byte as it was.
fn mixed_blessed() -> String {
    [
        ("operand 1:\n", "operand 0:\n"),
        (
            "(d0, d1) -> (d1, d0), domain: d0 in [0, 9], [..]\n",
            "(d0, d1) -> (d1, d0), domain: d0 in [0, 4], d1 in [0, 3], is_simplified: true\n",
        ),
    ]
    .iter()
    .fold(MIXED.to_string(), |text, (stale, fresh)| {
        assert_eq!(text.matches(stale).count(), 1, "{stale}");
        text.replacen(stale, fresh, 1)
    })
}

#[test]
fn bless_rewrites_only_mismatches_and_keeps_elisions() {
    let f = scratch_file("bless-mixed", "mixed.ixm", MIXED);
    let path = f.to_str().unwrap_or_default();
    let o = run(&["test", path]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("2 cases differ in 1 file (3 passed)."),
        "{out}"
    );
    assert!(out.contains(&format!("FAIL {path}:7")), "{out}");
    assert!(out.contains(&format!("FAIL {path}:15")), "{out}");
    assert!(!out.contains(&format!("FAIL {path}:12")), "{out}");
    let o = run(&["test", "--bless", path]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains(&format!("blessed: {path}")));
    assert_eq!(std::fs::read_to_string(&f).expect("read"), mixed_blessed());
    // The blessed file passes, elisions and checks included.
    let o = run(&["test", path]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(stdout(&o), "5 passed in 1 file.\n");
    // A second --bless finds nothing to write, and leaves the file alone.
    let o = run(&["test", "--bless", path]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&f).expect("read"), mixed_blessed());
}

#[test]
fn regex_and_numeric_range_checks() {
    let ok = scratch_file(
        "checks",
        "ok.ixm",
        "ixmap> m = (d0) -> (d0 * 25), domain: d0 in [0, 3]\n\
         (d0) -> (d0 * {{2[0-9]}}), domain: d0 in [{{-1..0}}, {{2.5..3.5}}]\n",
    );
    let o = run(&["test", ok.to_str().unwrap_or_default()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // A number outside the range, and a regular expression that does not match: failures.
    for (k, line) in [
        "(d0) -> (d0 * {{0..24}}), domain: d0 in [0, 3]",
        "(d0) -> (d0 * {{3[0-9]}}), domain: d0 in [0, 3]",
        // a check matches a whole number, not a part of one
        "(d0) -> (d0 * {{5..5}}), domain: d0 in [0, 3]",
    ]
    .iter()
    .enumerate()
    {
        let bad = ok.with_file_name(format!("bad{k}.ixm"));
        let src = format!("ixmap> (d0) -> (d0 * 25), domain: d0 in [0, 3]\n{line}\n");
        std::fs::write(&bad, &src).expect("write");
        let o = run(&["test", bad.to_str().unwrap_or_default()]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{line} must not match: {}",
            stdout(&o)
        );
        // --bless keeps the check only where it still matches: here it is rewritten.
        let o = run(&["test", "--bless", bad.to_str().unwrap_or_default()]);
        assert_eq!(o.status.code(), Some(0));
        assert_eq!(
            std::fs::read_to_string(&bad).expect("read"),
            "ixmap> (d0) -> (d0 * 25), domain: d0 in [0, 3]\n(d0) -> (d0 * 25), domain: d0 in [0, 3]\n"
        );
    }
}

#[test]
fn mismatch_diff_marks_the_changed_part() {
    let f = scratch_file(
        "diff",
        "diff.ixm",
        "ixmap> (d0) -> (d0 * 25), domain: d0 in [0, 3]\n(d0) -> (d0 * 24), domain: d0 in [0, 3]\n",
    );
    let o = run(&["test", f.to_str().unwrap_or_default()]);
    assert_eq!(o.status.code(), Some(1));
    // Off a terminal, a `^` line under the changed characters of each paired line.
    let want = "- (d0) -> (d0 * 24), domain: d0 in [0, 3]\n                 ^\n\
                + (d0) -> (d0 * 25), domain: d0 in [0, 3]\n                 ^\n";
    assert!(stdout(&o).contains(want), "{}", stdout(&o));
}

#[test]
fn run_on_a_transcript_runs_its_statements() {
    let f = scratch_file("run-transcript", "t.ixm", "# prose is not a statement\n\nixmap> m = (d0, d1) -> (d1, d0),\n   ...>   domain: d0 in [0, 1], d1 in [0, 2]\n(a recorded output, not a statement)\n\nixmap> is_permutation m\nfalse\n");
    let path = f.to_str().unwrap_or_default();
    let o = run(&["run", path]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The statements run (the recorded `false` is not checked: that is `ixmap test`).
    assert_eq!(
        stdout(&o),
        "(d0, d1) -> (d1, d0), domain: d0 in [0, 1], d1 in [0, 2]\ntrue\n"
    );
    assert!(
        stderr(&o).contains(&format!("note: {path} is a transcript: running its statements (`ixmap test {path}` checks their output)")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn test_without_cases_is_an_error() {
    let f = scratch_file("nocases", "prose.ixm", "# only prose\n# and no prompt\n");
    let o = run(&["test", f.to_str().unwrap_or_default()]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains(&format!("error: {}: no cases", f.display())),
        "{}",
        stderr(&o)
    );
    // Not a mismatch that --bless would fix: no "differs", no bless hint.
    assert!(!stdout(&o).contains("differ"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("--bless"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("error: 1 file could not be checked"),
        "{}",
        stderr(&o)
    );
    let o = run(&["test", "--bless", f.to_str().unwrap_or_default()]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "bless cannot fix a file without cases"
    );
    // A folder without transcripts too.
    let empty = f.with_file_name("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let o = run(&["test", empty.to_str().unwrap_or_default()]);
    assert_fails_saying(&o, "error: no .ixm transcripts under");
}

#[test]
fn json_error_text_names_the_file_as_the_plain_run_does() {
    let f = scratch_file(
        "json-file",
        "bad.ixm",
        "(d0) -> (d0)\n\ninverse (d0) -> (d0 +)\n",
    );
    let path = f.to_str().unwrap_or_default();
    let plain = run(&["run", path]);
    let json = run(&["run", path, "--json"]);
    assert_eq!(plain.status.code(), Some(1));
    assert_eq!(json.status.code(), Some(1));
    let v = json_lines(&json);
    assert_eq!(v.len(), 2);
    assert_eq!(
        v[0]["text"].as_str().unwrap_or_default().to_string() + "\n",
        stdout(&plain)
    );
    let text = v[1]["text"].as_str().unwrap_or_default().to_string();
    assert!(text.contains(&format!(" --> {path}:3:22")), "{text}");
    assert_eq!(text + "\n", stderr(&plain));
    assert_eq!(v[1]["line"], 3);
    assert_eq!(v[1]["column"], 22);
}

const TRANSPOSE: &str =
    "t = f32[64,96] parameter(0); tr = f32[96,64] transpose(t), dimensions={1,0}";

#[test]
fn json_entries_say_their_role() {
    // `threads`: the output, the tile read, then operand 0, each with its role (the output
    // is not `"operand": 0`).
    let o = run(&["--json", "-c", &format!("{TRANSPOSE}; threads tr")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_lines(&o);
    let ops = v[2]["operands"].as_array().cloned().unwrap_or_default();
    assert_eq!(ops.len(), 3, "{ops:?}");
    assert_eq!(ops[0]["role"], "output");
    assert!(ops[0].get("operand").is_none(), "{}", ops[0]);
    assert_eq!(ops[1]["role"], "tile read");
    assert!(ops[1].get("operand").is_none(), "{}", ops[1]);
    assert_eq!(ops[2]["role"], "operand");
    assert_eq!(ops[2]["operand"], 0);
    for op in &ops {
        assert!(op["maps"].as_array().is_some_and(|m| m.len() == 1), "{op}");
        assert!(op["label"]
            .as_str()
            .is_some_and(|l| l.starts_with("thread → ")));
    }
    // `indexing`: operand K from the output; `from K`: the output from operand K.
    let o = run(&[
        "--json",
        "-c",
        "p = f32[4] parameter(0); q = f32[4] parameter(1); s = f32[4] add(p, q); indexing s; indexing s from 1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_lines(&o);
    let ops = v[3]["operands"].as_array().cloned().unwrap_or_default();
    assert_eq!(ops.len(), 2);
    for (k, op) in ops.iter().enumerate() {
        assert_eq!(op["role"], "operand");
        assert_eq!(op["operand"], k);
    }
    let ops = v[4]["operands"].as_array().cloned().unwrap_or_default();
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0]["role"], "output");
    assert!(ops[0].get("operand").is_none(), "{}", ops[0]);
    // `coalescing`: a role per row, the written output last.
    let o = run(&["--json", "-c", &format!("{TRANSPOSE}; coalescing tr")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_lines(&o);
    let rows = v[2]["rows"].as_array().cloned().unwrap_or_default();
    let roles = v[2]["roles"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), roles.len());
    assert_eq!(roles[0]["role"], "operand");
    assert_eq!(roles[0]["operand"], 0);
    assert_eq!(roles[0]["name"], "t");
    assert_eq!(roles[1]["role"], "output");
    assert!(roles[1].get("operand").is_none(), "{}", roles[1]);
    assert_eq!(roles[1]["name"], "tr");
    // Two operands: each row names its operand's number, as `threads` and `indexing` do.
    let o = run(&[
        "--json",
        "-c",
        "p = f32[8,8] parameter(0); q = f32[8,8] parameter(1); s = f32[8,8] add(p, q); coalescing s",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_lines(&o);
    let last = v.last().cloned().unwrap_or_default();
    let roles = last["roles"].as_array().cloned().unwrap_or_default();
    let rows = last["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), roles.len(), "{last}");
    let got: Vec<(String, Option<u64>)> = roles
        .iter()
        .map(|r| {
            (
                r["role"].as_str().unwrap_or("").to_string(),
                r["operand"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("operand".to_string(), Some(0)),
            ("operand".to_string(), Some(1)),
            ("output".to_string(), None),
        ],
        "{last}"
    );
}

#[test]
fn options_a_launch_does_not_use_are_errors() {
    // A tiled transpose always runs 32x32 tiles on 128 threads: block=32 is said, not
    // silently replaced by 128.
    for (stmt, key) in [
        ("threads tr block=32", "block"),
        ("coalescing tr vector=4", "vector"),
        ("emit tr unroll=2", "unroll"),
    ] {
        let o = run(&["-c", &format!("{TRANSPOSE}; {stmt}")]);
        assert_eq!(o.status.code(), Some(1), "{stmt}: {}", stdout(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!(
                "error: `{key}=` does not apply: tr is a tiled transpose"
            )),
            "{err}"
        );
        assert!(err.contains("tiled=false"), "{err}");
    }
    // What the launch does use is fine: block=128 on the transpose, block=32 on a loop.
    let o = run(&[
        "-c",
        &format!("{TRANSPOSE}; threads tr block=128; threads tr tiled=false block=32"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("thread → output (loop, block 32, grid 192)"),
        "{}",
        stdout(&o)
    );
    // A reduction: unroll= and tiled= do not apply; a row reduction's block is whole warps
    // (its vector= is the elements a lane loads at once: it applies, issue 14).
    let red = "add_f32 {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\nr = f32[100,200] parameter(0)\nzero = f32[] constant(0)\nrowsum = f32[100] reduce(r, zero), dimensions={1}, to_apply=add_f32\n";
    for (stmt, want) in [
        (
            "threads rowsum unroll=2",
            "`unroll=` does not apply: rowsum is a row reduction",
        ),
        (
            "threads rowsum tiled=false",
            "`tiled=` does not apply: rowsum is a row reduction",
        ),
        ("threads rowsum block=40", "block=40 would run as block 32"),
    ] {
        let o = run(&["-c", &format!("{red}{stmt}")]);
        assert_eq!(o.status.code(), Some(1), "{stmt}");
        assert!(stderr(&o).contains(want), "{stmt}: {}", stderr(&o));
    }
    let o = run(&["-c", &format!("{red}threads rowsum block=64")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["-c", &format!("{red}threads rowsum vector=2")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("vector 2"), "{}", stdout(&o));
}

#[test]
fn gpu_launch_options_on_the_cpu_are_said() {
    let e = "p = f32[64,64] parameter(0); e = f32[64,64] exponential(p)";
    // A CPU kernel has no launch: emit target=cpu block=64 is an error, not a silent default.
    let o = run(&["-c", &format!("{e}; emit e target=cpu block=64")]);
    assert_fails_saying(
        &o,
        "`block=` does not apply: a CPU kernel runs the loop nest",
    );
    // bench on the CPU with a tile and a block: the block is named as not applying.
    let o = run(&[
        "-c",
        &format!("{e}; bench e device=cpu reps=1 tile=(8, 8) block=64"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "mapping: block= sets the GPU launch; on the CPU the kernel runs the loop nest tiled by tile="
        ),
        "{}",
        stdout(&o)
    );
}

/// What used to be text built by the commands is a value now: its JSON has fields, and its
/// `text` is still exactly what the plain run prints.
#[test]
fn reports_are_values_with_json_fields() {
    let script = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = add(x, y)\n}\nf {\n  p = f32[16,64] parameter(0)\n  z = f32[] constant(0)\n  e = f32[16,64] exponential(p)\n  r0 = f32[16] reduce(e, z), dimensions={1}, to_apply=add\n  r1 = f32[16] reduce(e, z), dimensions={1}, to_apply=add\n  ROOT t = (f32[16], f32[16]) tuple(r0, r1)\n}\nreduction_groups f\nfuse (d0, d1) -> (d0, d1), (d0, d1) -> (d1, d0), (d0, d1) -> (d0, d1)\nshow (d0) -> (d0 floordiv 2), domain: d0 in [0, 7] as xla\nq = f32[4] parameter(0)\nindexing q";
    let plain = run(&["-c", script]);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    let o = run(&["--json", "-c", script]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_lines(&o);
    let by_kind = |k: &str| {
        v.iter()
            .find(|x| x["kind"] == k)
            .cloned()
            .unwrap_or_else(|| panic!("no {k} in {v:?}"))
    };
    let g = by_kind("groups");
    assert_eq!(g["computation"], "f");
    assert_eq!(g["groups"][0]["roots"], serde_json::json!(["r0", "r1"]));
    // XLA's rule: the parameter both read ties them too.
    assert_eq!(g["groups"][0]["shared"], serde_json::json!(["p", "e"]));
    let f = by_kind("fused");
    assert_eq!(f["map"], "(d0, d1) -> (d1, d0)");
    assert!(
        f["how"].as_str().is_some_and(|h| h.contains("permutation")),
        "{f}"
    );
    let s = by_kind("shown");
    assert_eq!(s["syntax"], "xla");
    assert!(
        s["text"].as_str().is_some_and(|t| t.lines().count() > 1),
        "{s}"
    );
    let n = by_kind("no_operands");
    assert_eq!(n["name"], "q");
    assert_eq!(n["opcode"], "parameter");
    // Each `text` is the plain run's output, in order.
    let texts: String = v
        .iter()
        .filter_map(|x| x["text"].as_str())
        .filter(|t| !t.is_empty())
        .map(|t| format!("{t}\n"))
        .collect();
    assert_eq!(texts, stdout(&plain));
}

/// `ixmap test --json`: one object per case; `--junit FILE`: a JUnit report; a failing
/// case names the first expected line not found; `#! xfail` files fail only on a pass.
#[test]
fn test_reports_json_junit_and_the_first_line_not_found() {
    let dir = scratch("test-reports");
    std::fs::write(
        dir.join("a.ixm"),
        "ixmap> m = (d0) -> (d0 * 2), domain: d0 in [0, 3]\n(d0) -> (d0 * 2), domain: d0 in [0, [..]]\nixmap> inverse m\n...\nnot this line\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("b.ixm"),
        "#! xfail: a known bug\nixmap> equal (d0) -> (d0), domain: d0 in [0, 1], (d0) -> (d0), domain: d0 in [0, 1]\nfalse\n",
    )
    .unwrap();
    // an input ending with an empty continuation line, and a character XML 1.0 forbids
    std::fs::write(
        dir.join("c.ixm"),
        "ixmap> m = (d0) -> (d0), domain: d0 in [0, 3]\n   ...>\nWRONG1 \u{fffe}\nWRONG2\n",
    )
    .unwrap();
    let junit = dir.join("report.xml");
    let o = run(&[
        "test",
        "--json",
        "--junit",
        junit.to_str().unwrap(),
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let cases = json_lines(&o);
    let status: Vec<&str> = cases
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["pass", "fail", "xfail", "fail"]);
    assert_eq!(cases[1]["line"], 3);
    let msg = cases[1]["message"].as_str().unwrap();
    assert!(
        msg.ends_with("a.ixm:5: expected line not found: not this line"),
        "{msg}"
    );
    let msg = cases[3]["message"].as_str().unwrap();
    assert!(
        msg.ends_with("c.ixm:3: expected line not found: WRONG1 \u{fffe}"),
        "{msg}"
    );
    assert!(
        stderr(&o).contains("actual output there:"),
        "{}",
        stderr(&o)
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.starts_with("<?xml"));
    assert!(
        xml.contains(
            "<testsuites name=\"ixmap\" tests=\"4\" failures=\"2\" errors=\"0\" skipped=\"1\">"
        ),
        "{xml}"
    );
    assert!(xml.contains("<failure message=\""), "{xml}");
    assert!(
        !xml.contains('\u{fffe}') && xml.contains("WRONG1 \\u{fffe}"),
        "{xml}"
    );
    // an xfail file whose cases all pass fails the run
    std::fs::write(
        dir.join("b.ixm"),
        "#! xfail\nixmap> equal (d0) -> (d0), domain: d0 in [0, 1], (d0) -> (d0), domain: d0 in [0, 1]\ntrue\n",
    )
    .unwrap();
    let o = run(&["test", dir.join("b.ixm").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("XPASS"), "{}", stdout(&o));
}

/// A project's transcripts name files from the project's root (`simplify_file
/// data/maps.txt`): `ixmap test` replays each transcript from the folder holding its
/// `sessions/`, so they pass whatever directory it is started in, and `--bless` still
/// rewrites the file it was given.
#[test]
fn test_reads_a_transcripts_paths_from_its_project_root() {
    let dir = scratch("root");
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("sessions/sub")).expect("folders");
    std::fs::create_dir_all(project.join("data")).expect("folders");
    std::fs::write(
        project.join("data/maps.txt"),
        "(d0) -> ((d0 floordiv 8) * 8 + d0 mod 8), domain: d0 in [0, 100]\n",
    )
    .expect("write");
    let case = "ixmap> simplify_file data/maps.txt\n\
                line  simplified\n   \
                1  (d0) -> (d0), domain: d0 in [0, 100], is_simplified: true\n\
                1 map simplified\n";
    let f = project.join("sessions/sub/paths.ixm");
    std::fs::write(&f, case).expect("write");
    // started from the scratch folder, outside the project
    let o = ixmap()
        .current_dir(&dir)
        .args(["test", f.to_str().unwrap_or_default()])
        .output()
        .expect("the ixmap binary runs");
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("1 passed"), "{}", stdout(&o));
    // and a stale one is blessed in place, by the path as given (relative to where it ran)
    std::fs::write(&f, case.replace("(d0) -> (d0),", "(d0) -> (d0 + 0),")).expect("write");
    let o = ixmap()
        .current_dir(&dir)
        .args(["test", "--bless", "project/sessions/sub/paths.ixm"])
        .output()
        .expect("the ixmap binary runs");
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(std::fs::read_to_string(&f).expect("read"), case);
}

/// A fusion of 3000 chained instructions: its body is a tree walked recursively (adapting,
/// emitting, the reference), which overflowed the default stacks and aborted the process
/// at a few hundred, in `dump`'s workers and on the command line's thread.
#[test]
fn a_deep_fusion_does_not_overflow_the_stack() {
    let mut text = String::from("HloModule deep\nfused {\n  n0 = f32[8] parameter(0)\n");
    for i in 1..3000 {
        text += &format!("  n{i} = f32[8] negate(n{})\n", i - 1);
    }
    text += "  ROOT r = f32[8] negate(n2999)\n}\nENTRY main {\n  x = f32[8] parameter(0)\n  ROOT f = f32[8] fusion(x), kind=kLoop, calls=fused\n}\n";
    let file = scratch_file("deep_fusion", "deep.txt", &text);
    let path = file.to_str().expect("a UTF-8 path");
    let o = run(&["dump", path]);
    assert!(o.status.success(), "dump: {}", stderr(&o));
    assert!(stdout(&o).contains("1 for C, 1 verified"), "{}", stdout(&o));
    let o = run(&["-c", &format!("load \"{path}\"; emit fused target=cpu")]);
    assert!(o.status.success(), "emit: {}", stderr(&o));
    assert!(stdout(&o).contains("kernel fused (cpu)"), "{}", stdout(&o));
}

/// A `load` whose file stops at an error fails: `-c` stops there with exit code 1, and
/// `--json` says `ok: false` with the error and its place in the file (it printed the
/// error, went on and exited 0, and the JSON said `ok: true`).
#[test]
fn a_load_that_stops_at_an_error_fails() {
    let file = scratch_file(
        "load_fails",
        "bad.hlo",
        "HloModule m\nENTRY main {\n  x = f32[4] parameter(0)\n  ROOT y = f32[5] negate(x)\n}\n",
    );
    let path = file.to_str().expect("a UTF-8 path");
    let o = run(&["-c", &format!("load \"{path}\"; 40 + 2 + 1000")]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("stopped after"), "{}", stdout(&o));
    assert!(
        !stdout(&o).contains("1042"),
        "the next statement ran: {}",
        stdout(&o)
    );
    let o = run(&["--json", "-c", &format!("load \"{path}\"")]);
    assert_eq!(o.status.code(), Some(1));
    let j = &json_lines(&o)[0];
    assert_eq!(j["ok"], false, "{j}");
    assert_eq!(j["kind"], "loaded", "{j}");
    assert!(
        j["error"].as_str().is_some_and(|e| e.contains("f32[5]")),
        "{j}"
    );
    assert_eq!(
        (j["file_line"].as_i64(), j["file_column"].as_i64()),
        (Some(4), Some(19)),
        "{j}"
    );
}

/// A bracket left open is named at its line in the file, not in its statement (the help
/// said 3:25 for a `(` at 4:25: lines were counted from the statement's start).
#[test]
fn an_open_bracket_is_named_at_its_line_in_the_file() {
    let file = scratch_file(
        "open_bracket",
        "open.hlo",
        "HloModule m\nENTRY main {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] negate(x\n",
    );
    let o = run(&["run", file.to_str().expect("a UTF-8 path")]);
    assert_fails_saying(&o, "the `(` at 4:25 is never closed");
    let file = scratch_file(
        "wrong_bracket",
        "wrong.ixm",
        "m = (d0) -> (d0)\nx = (d0) -> (d0,\n  d0]\n",
    );
    let o = run(&["run", file.to_str().expect("a UTF-8 path")]);
    assert_fails_saying(&o, "the `(` at 2:13 is still open");
    let o = run(&["--json", "run", file.to_str().expect("a UTF-8 path")]);
    let j = json_lines(&o);
    assert!(
        j.iter()
            .any(|j| j["help"] == "the `(` at 2:13 is still open"),
        "{j:?}"
    );
}

/// A loaded file that is not UTF-8 names the place of the first bad byte (as `run` does),
/// not only the file.
#[test]
fn load_names_the_place_of_invalid_utf8() {
    let f = scratch("load_utf8").join("bad.hlo");
    std::fs::write(
        &f,
        b"HloModule m\nENTRY main {\n  x\xff\xfe = f32[4] parameter(0)\n}\n",
    )
    .expect("write");
    let o = run(&[
        "-c",
        &format!("load \"{}\"", f.to_str().expect("a UTF-8 path")),
    ]);
    assert_fails_saying(&o, "invalid UTF-8 at 3:4 (byte 0xff)");
}

/// `--json` numbers the script's own statements: a `load` is one statement, whatever its
/// file holds (a file of three statements made `load` statement 3, and the statement after
/// it 4). Where the file stops at an error, `file_stmt` is that statement's number in it.
#[test]
fn a_load_is_one_statement_in_json() {
    let file = scratch_file(
        "load_stmt",
        "three.ixm",
        "a = (d0) -> (d0), domain: d0 in [0, 3]\nb = (d0) -> (d0 * 2), domain: d0 in [0, 3]\nc = compose a, b\n",
    );
    let path = file.to_str().expect("a UTF-8 path");
    let o = run(&["--json", "-c", &format!("load \"{path}\"; c; c")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j = json_lines(&o);
    let stmts: Vec<_> = j.iter().map(|j| j["stmt"].as_i64()).collect();
    assert_eq!(stmts, [Some(1), Some(2), Some(3)], "{j:?}");
    assert_eq!(j[0]["kind"], "loaded", "{j:?}");

    let file = scratch_file(
        "load_stmt_fails",
        "bad.ixm",
        "a = (d0) -> (d0), domain: d0 in [0, 3]\nb = (d0) -> (d7)\nc = a\n",
    );
    let path = file.to_str().expect("a UTF-8 path");
    let o = run(&[
        "--json",
        "-c",
        &format!("a = (d0) -> (d0); load \"{path}\""),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let j = json_lines(&o);
    assert_eq!(j.len(), 2, "{j:?}");
    assert_eq!(j[1]["stmt"], 2, "{}", j[1]);
    assert_eq!(j[1]["ok"], false, "{}", j[1]);
    assert_eq!(j[1]["file_stmt"], 2, "{}", j[1]);
    assert_eq!(j[1]["file_line"], 2, "{}", j[1]);
}

/// `ixmap dump` exits 1 when a fusion failed (a step an error, or a verification that
/// failed), after printing its whole survey; a step skipped with its reason (`--no-check`)
/// is not a failure. It exited 0 whatever failed, so a CI script could not rely on it.
#[test]
fn a_dump_with_a_failed_fusion_exits_1_after_its_survey() {
    let ok = "fused {\n  p = f32[8] parameter(0)\n  ROOT n = f32[8] negate(p)\n}\n";
    let text = format!(
        "HloModule m\n{ok}ENTRY main {{\n  x = f32[8] parameter(0)\n  a = f32[8] fusion(x), kind=kLoop, calls=fused\n  ROOT b = f32[8] fusion(a), kind=kLoop, calls=nowhere\n}}\n"
    );
    let file = scratch_file("dump_fails", "m.txt", &text);
    let path = file.to_str().expect("a UTF-8 path");
    let o = run(&["dump", path]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("the fused computation `nowhere` is not in the module"),
        "{out}"
    );
    assert!(
        out.contains("2 fusions"),
        "the survey is printed in full: {out}"
    );
    // in a script's --json, the dump statement is not ok either
    let o = run(&["--json", "-c", &format!("dump \"{path}\"")]);
    assert_eq!(o.status.code(), Some(1));
    let j = json_lines(&o);
    assert_eq!(j[0]["ok"], false, "{}", j[0]);
    // the passing fusion alone, with verification skipped: exit 0
    let text = format!(
        "HloModule m\n{ok}ENTRY main {{\n  x = f32[8] parameter(0)\n  ROOT a = f32[8] fusion(x), kind=kLoop, calls=fused\n}}\n"
    );
    let file = scratch_file("dump_passes", "m.txt", &text);
    let path = file.to_str().expect("a UTF-8 path");
    let o = run(&["dump", path, "--no-check"]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(!stdout(&o).contains("verify: ok"), "{}", stdout(&o));
    let o = run(&["dump", path]);
    assert!(o.status.success(), "{}", stdout(&o));
}

/// A fusion whose kernel differs from the reference only where the HLO leaves the values
/// undetermined (here a row sum started from 5, not from add's identity: XLA's semantics
/// leave it undefined, and the row kernel adds 5 once per lane) is counted as undetermined,
/// not as a failed verification, and `dump` exits 0; the reason is in the report.
#[test]
fn a_dump_whose_values_the_hlo_leaves_open_is_undetermined_not_failed() {
    let text = "HloModule m
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
fused {
  x = s32[64,1024] parameter(0)
  five = s32[] constant(5)
  ROOT s = s32[64] reduce(x, five), dimensions={1}, to_apply=add
}
ENTRY main {
  x = s32[64,1024] parameter(0)
  ROOT f = s32[64] fusion(x), kind=kInput, calls=fused
}
";
    let file = scratch_file("dump_undetermined", "m.txt", text);
    let path = file.to_str().expect("a UTF-8 path");
    let o = run(&["dump", path]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("verify: undetermined (CUDA on the CPU: "),
        "{out}"
    );
    assert!(
        out.contains("initial value 5 is not an identity of `add`"),
        "{out}"
    );
    assert!(
        out.contains("0 verified (1 undetermined: the HLO leaves the values that differ open)"),
        "{out}"
    );
    let o = run(&["--json", "-c", &format!("dump \"{path}\"")]);
    assert!(o.status.success(), "{}", stdout(&o));
    let j = json_lines(&o);
    assert_eq!(j[0]["ok"], true, "{}", j[0]);
}

/// A byte-order mark, which Windows editors write first, is no part of a script, a loaded
/// file, piped input or a dump: each reads as without it (it was refused as an unexpected
/// invisible token).
#[test]
fn a_byte_order_mark_is_no_part_of_the_source() {
    let script = "\u{feff}m = (d0) -> (d0 * 2), domain: d0 in [0, 3]\nsimplify m\n";
    let file = scratch_file("bom", "s.ixm", script);
    let path = file.to_str().expect("a UTF-8 path");
    let want = "(d0) -> (d0 * 2), domain: d0 in [0, 3]\n(d0) -> (d0 * 2), domain: d0 in [0, 3], is_simplified: true\n";
    let o = run(&["run", path]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), want);
    let o = run_stdin(&[], script, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), want);
    let o = run(&["-c", &format!("load \"{path}\"")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let module = "\u{feff}HloModule m\nfused {\n  p = f32[8] parameter(0)\n  ROOT n = f32[8] negate(p)\n}\nENTRY main {\n  x = f32[8] parameter(0)\n  ROOT f = f32[8] fusion(x), kind=kLoop, calls=fused\n}\n";
    let file = scratch_file("bom", "m.txt", module);
    let o = run(&["dump", file.to_str().expect("a UTF-8 path"), "--no-check"]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains("1 module (1 loaded)"), "{}", stdout(&o));
}

/// A chain of operands deeper than ixmap follows (`MAX_DEPTH`, 131,072) is an error where
/// it passes the limit, when the HLO is read: a million chained instructions aborted
/// `emit` with a stack overflow. Computations that fusions run count their depth (here a
/// million through nested fusions, in a few thousand lines); 100,000 in one fusion work.
#[test]
fn a_chain_past_the_depth_limit_is_an_error_not_an_abort() {
    let chain = |n: usize, name: &str, op: &str| {
        let mut t = format!("{name} {{\n  n0 = f32[8] parameter(0)\n");
        for i in 1..n {
            t += &format!("  n{i} = f32[8] {op}(n{})\n", i - 1);
        }
        t + &format!("  ROOT r = f32[8] negate(n{})\n}}\n", n - 1)
    };
    let entry = "ENTRY main {\n  x = f32[8] parameter(0)\n  ROOT f = f32[8] fusion(x), kind=kLoop, calls=fused\n}\n";
    let flat = format!(
        "HloModule deep\n{}{entry}",
        chain(140_000, "fused", "negate")
    );
    let file = scratch_file("too_deep", "flat.txt", &flat);
    let path = file.to_str().expect("a UTF-8 path");
    let o = run(&["-c", &format!("load \"{path}\"")]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        out.contains("`n131072` is 131073 instructions deep") && out.contains("limit of 131072"),
        "{out}"
    );
    assert!(out.contains("flat.txt:131075:3"), "{out}");
    // a million deep: a thousand fusions in a chain, each running a thousand negates
    let mut nested = String::from("HloModule nested\n");
    nested += &chain(1000, "inner", "negate");
    nested += &chain(1000, "fused", "fusion")
        .lines()
        .map(|l| {
            if l.contains("fusion(") {
                format!("{l}, kind=kLoop, calls=inner\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect::<String>();
    nested += entry;
    let file = scratch_file("too_deep", "nested.txt", &nested);
    let path = file.to_str().expect("a UTF-8 path");
    let o = run(&["-c", &format!("load \"{path}\"; emit fused target=cpu")]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        out.contains("instructions deep") && out.contains("limit of 131072"),
        "{out}"
    );
    // 100,000 in one fusion load and index
    let ok = format!(
        "HloModule deep\n{}{entry}",
        chain(100_000, "fused", "negate")
    );
    let file = scratch_file("too_deep", "ok.txt", &ok);
    let path = file.to_str().expect("a UTF-8 path");
    let o = run(&["-c", &format!("load \"{path}\"; indexing fused")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("(d0) -> (d0)"), "{}", stdout(&o));
}
