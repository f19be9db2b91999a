//! The REPL's front end under bad input (the front-end fuzz report): standard input that is
//! not a terminal (`ixmap < FILE`, a pipe) and a pseudo-terminal.
//!
//! - a line that is not valid UTF-8 is skipped with an error and the session goes on (piped
//!   input names the line; a statement containing it is not run);
//! - piped input that ends inside a statement is an error naming where it started;
//! - piped input exits 1 when a statement failed, as `ixmap run` does;
//! - piped input is not written to the history file;
//! - on a terminal, lines typed ahead while a statement runs survive Ctrl-C.
#![cfg(unix)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("repl-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// `ixmap` with `input` on standard input (a pipe); history goes to `history`.
fn piped(input: &[u8], history: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ixmap"))
        .env("NO_COLOR", "1")
        .env("IXMAP_HISTORY", history)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ixmap starts");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input)
        .expect("stdin accepts input");
    child.wait_with_output().expect("ixmap ends")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn piped_invalid_utf8_line_is_skipped_and_the_rest_runs() {
    let dir = scratch("utf8");
    let o = piped(
        b"a = (d0) -> (d0), domain: d0 in [0, 3]\n# caf\xe9\nb = (d0) -> (d0 * 2), domain: d0 in [0, 3]\nb\n",
        &dir.join("history"),
    );
    assert_eq!(
        err(&o),
        "error: line 2 of standard input is not valid UTF-8 (byte 0xE9 at column 6); it was skipped\n"
    );
    assert_eq!(
        out(&o),
        "(d0) -> (d0), domain: d0 in [0, 3]\n(d0) -> (d0 * 2), domain: d0 in [0, 3]\n(d0) -> (d0 * 2), domain: d0 in [0, 3]\n"
    );
    assert_eq!(o.status.code(), Some(1), "bad input is a failure");
}

#[test]
fn piped_statement_with_an_invalid_line_is_not_run() {
    let dir = scratch("utf8-block");
    // the statement spans lines 1-3; its line 2 is bad: running it without that line
    // would run something else
    let o = piped(
        b"m = (d0, d1) -> (d1, d0),\ndomain: d0 in [0, 3], \xff\nd1 in [0, 4]\nn = (d0) -> (d0)\nm\n",
        &dir.join("history"),
    );
    let e = err(&o);
    assert!(
        e.contains("error: line 2 of standard input is not valid UTF-8 (byte 0xFF at column 23); it was skipped\n"),
        "{e}"
    );
    assert!(
        e.contains("error: the statement on lines 1-3 of standard input was not run: its line 2 is not valid UTF-8\n"),
        "{e}"
    );
    assert!(e.contains("unknown command or name `m`"), "{e}");
    assert_eq!(out(&o), "(d0) -> (d0)\n", "the statements after it ran");
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn piped_input_ending_inside_a_statement_is_an_error_naming_its_start() {
    let dir = scratch("eof");
    let o = piped(
        b"m = (d0) -> (d0), domain: d0 in [0, 3]\n\nx = fused {\n  p0 = f32[4] parameter(0)\n",
        &dir.join("history"),
    );
    let e = err(&o);
    assert!(
        e.starts_with("error: standard input ended inside the statement that starts at line 3\n"),
        "{e}"
    );
    // the statement's own error names its place in the input (line 3, not line 1)
    assert!(e.contains("3:"), "{e}");
    assert!(!e.contains("--> 1:"), "{e}");
    assert_eq!(out(&o), "(d0) -> (d0), domain: d0 in [0, 3]\n");
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn piped_exit_code_says_whether_a_statement_failed() {
    let dir = scratch("exit");
    let h = dir.join("history");
    let o = piped(b"m = (d0) -> (d0)\ninverse m\n", &h);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let o = piped(b"inverse nosuch\nm = (d0) -> (d0)\nm\n", &h);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("nosuch"), "{}", err(&o));
    assert_eq!(
        out(&o),
        "(d0) -> (d0)\n(d0) -> (d0)\n",
        "later statements still ran"
    );
    // `exit` ends the input early, keeping the code
    let o = piped(b"inverse nosuch\nexit\nm = (d0) -> (d0)\n", &h);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(out(&o), "");
}

#[test]
fn piped_input_is_not_written_to_the_history() {
    let dir = scratch("history");
    let h = dir.join("history");
    std::fs::write(&h, "").expect("an empty history");
    let o = piped(b"m = (d0) -> (d0)\ninverse m\n", &h);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let saved = std::fs::read_to_string(&h).expect("history still there");
    assert!(!saved.contains("inverse m"), "{saved}");
}

mod terminal {
    use rexpect::session::{spawn_with_options, Options, PtySession};
    use std::io::Write;
    use std::path::Path;
    use std::process::Command;

    const WAIT_MS: u64 = 120_000;

    fn start(dir: &Path) -> PtySession {
        start_with_history(dir, &dir.join("history"))
    }

    fn start_with_history(dir: &Path, history: &Path) -> PtySession {
        let mut c = Command::new(env!("CARGO_BIN_EXE_ixmap"));
        c.current_dir(dir)
            .env("HOME", dir)
            .env("TERM", "xterm")
            .env("IXMAP_HISTORY", history)
            .env("NO_COLOR", "1")
            .env_remove("COLUMNS");
        let mut s = spawn_with_options(
            c,
            Options {
                timeout_ms: Some(WAIT_MS),
                strip_ansi_escape_codes: true,
            },
        )
        .expect("ixmap starts on a pseudo-terminal");
        s.exp_string("indexing maps workbench").expect("banner");
        prompt(&mut s);
        s
    }

    fn prompt(s: &mut PtySession) -> String {
        s.exp_regex("\n\r?ixmap> ")
            .map(|(before, _)| before)
            .unwrap_or_else(|e| panic!("waiting for a prompt: {e}"))
    }

    fn line(s: &mut PtySession, line: &str) -> String {
        let re = format!(r"(?m)^{}\r?$", regex::escape(line));
        s.exp_regex(&re)
            .map(|(before, _)| before)
            .unwrap_or_else(|e| panic!("waiting for the line {line:?}: {e}"))
    }

    fn send(s: &mut PtySession, bytes: &[u8]) {
        s.stream.writer.write_all(bytes).expect("write");
        s.stream.writer.flush().expect("flush");
    }

    #[test]
    fn invalid_utf8_on_a_terminal_skips_the_line_and_the_session_goes_on() {
        let dir = super::scratch("pty-utf8");
        let mut s = start(&dir);
        send(&mut s, b"a = (d0) -> (d0), domain: d0 in [0, 3]\r");
        prompt(&mut s);
        send(&mut s, b"# caf\xe9\r");
        line(&mut s, "error: the line is not valid UTF-8; it was skipped");
        prompt(&mut s);
        // in a statement of several lines: the statement is dropped, Up brings it back
        send(&mut s, b"b = (d0) -> (d0 * 2),\r");
        s.exp_regex("\n\r?   \\.\\.\\.> ")
            .expect("continuation prompt");
        send(&mut s, b"\xe9\r");
        line(&mut s, "error: the line is not valid UTF-8; it was skipped, and the unfinished statement above it was not run (Up brings it back)");
        prompt(&mut s);
        send(&mut s, b"a\r");
        line(&mut s, "(d0) -> (d0), domain: d0 in [0, 3]");
        prompt(&mut s);
        send(&mut s, b"exit\r");
        s.exp_eof().expect("the REPL ends");
        let h = std::fs::read_to_string(dir.join("history")).expect("history");
        assert!(h.contains("b = (d0) -> (d0 * 2),"), "{h}");
    }

    #[test]
    fn lines_typed_ahead_survive_ctrl_c() {
        let dir = super::scratch("pty-noflsh");
        let mut s = start(&dir);
        // seconds of work that polls the interrupt flag: 4M-point walks, each a few tens
        // of milliseconds, one after another
        let slow = (0..150)
            .map(|i| format!("is_bijection (d0, d1) -> (d0, (d1 + d0 * d0 + {i}) mod 2000), domain: d0 in [0, 1999], d1 in [0, 1999]"))
            .collect::<Vec<_>>()
            .join("; ");
        send(&mut s, format!("{slow}\r").as_bytes());
        // the first result: the statement runs (the terminal is out of raw mode)
        line(&mut s, "true");
        send(&mut s, b"b = (d0) -> (d0 * 5), domain: d0 in [0, 3]\r");
        std::thread::sleep(std::time::Duration::from_millis(300));
        send(&mut s, b"\x03");
        line(&mut s, "interrupted");
        // the typed-ahead line was not thrown away by the terminal: it runs
        line(&mut s, "(d0) -> (d0 * 5), domain: d0 in [0, 3]");
        prompt(&mut s);
        send(&mut s, b"exit\r");
        s.exp_eof().expect("the REPL ends");
    }

    #[test]
    fn unwritable_history_is_one_warning_on_a_terminal() {
        let dir = super::scratch("pty-nohistory");
        let file = dir.join("a-file");
        std::fs::write(&file, "").expect("write");
        // a path below a plain file can never be created
        let mut s = start_with_history(&dir, &file.join("history"));
        send(&mut s, b"(d0) -> (d0)\r");
        let seen = prompt(&mut s);
        assert!(seen.contains("warning: cannot save history"), "{seen}");
        send(&mut s, b"(d0) -> (d0 * 2)\r");
        line(&mut s, "(d0) -> (d0 * 2)");
        let seen = prompt(&mut s);
        assert!(!seen.contains("warning"), "said once: {seen}");
        send(&mut s, b"exit\r");
        s.exp_eof().expect("the REPL ends");
    }
}
