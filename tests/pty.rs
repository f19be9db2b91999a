//! The REPL as a person meets it: the real `ixmap` binary on a pseudo-terminal (through
//! `rexpect`), so that rustyline runs in raw mode exactly as in a terminal emulator.
//!
//! Covered (issue 17): typed-ahead input while a statement runs, unbracketed multi-line
//! paste (a map over several lines, an XLA computation, three statements in one paste),
//! history across restarts, completion by context, Ctrl-C during `bench` ("interrupted"
//! once, the session goes on), Ctrl-D, `exit`/`quit`, `?` and `CMD?`, `_`, `vars`, `reset`,
//! `load`/`save`, and the highlighted mismatch diff of `ixmap test` on a terminal.
//!
//! Synchronisation is by what the program prints (never by sleeping); every wait has a
//! generous time limit, so a loaded machine is slow, not flaky. Output is matched with ANSI
//! escapes stripped, and a result is matched as a whole line (`^...$`), so the echo of the
//! typed input (which follows a prompt) never counts as a result.
#![cfg(unix)]

use rexpect::session::{spawn_with_options, Options, PtySession};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How long any one expected output may take (a loaded 2-core CI machine, a debug build).
const WAIT_MS: u64 = 120_000;

struct Repl {
    s: PtySession,
}

/// A fresh folder (HOME, history, scratch files) for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("pty-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn command(dir: &Path, args: &[&str], color: bool) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ixmap"));
    c.args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("TERM", "xterm")
        .env("IXMAP_HISTORY", dir.join("history"))
        .env_remove("COLUMNS");
    if color {
        c.env_remove("NO_COLOR");
    } else {
        c.env("NO_COLOR", "1");
    }
    c
}

impl Repl {
    /// The REPL in `dir`, waiting at its first prompt.
    fn start(dir: &Path) -> Repl {
        let s = spawn_with_options(
            command(dir, &[], false),
            Options {
                timeout_ms: Some(WAIT_MS),
                strip_ansi_escape_codes: true,
            },
        )
        .expect("ixmap starts on a pseudo-terminal");
        let mut r = Repl { s };
        r.until("indexing maps workbench");
        r.prompt();
        r
    }

    /// [`Repl::start`] on a terminal 200 columns wide, so that no typed line wraps (the
    /// echo of a statement is then one line of the screen).
    fn start_wide(dir: &Path) -> Repl {
        let s = spawn_with_options(
            command(dir, &[], false),
            Options {
                timeout_ms: Some(WAIT_MS),
                strip_ansi_escape_codes: true,
            },
        )
        .expect("ixmap starts on a pseudo-terminal");
        use std::os::fd::AsRawFd;
        let size = libc::winsize {
            ws_row: 50,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ reads a winsize from the pointer; the fd is the terminal's.
        let ok = unsafe { libc::ioctl(s.process().pty.as_raw_fd(), libc::TIOCSWINSZ, &size) };
        assert_eq!(ok, 0, "set the terminal's size");
        let mut r = Repl { s };
        r.until("indexing maps workbench");
        r.prompt();
        r
    }

    /// Types `text` (`\r` is Enter) in one write, as a paste or fast typing delivers it.
    fn send(&mut self, text: &str) {
        self.s.send(text).expect("write to the terminal");
        self.s.flush().expect("flush the terminal");
    }

    /// Waits for `needle`; returns what came before it.
    fn until(&mut self, needle: &str) -> String {
        self.s
            .exp_string(needle)
            .unwrap_or_else(|e| panic!("waiting for {needle:?}: {e}"))
    }

    /// Waits for a fresh prompt, on a new line (rustyline draws every prompt as `\r`, clear
    /// line, prompt: a redraw while typing follows the typed text, a fresh prompt follows a
    /// newline); returns what came before it.
    fn prompt(&mut self) -> String {
        self.s
            .exp_regex("\n\r?ixmap> ")
            .map(|(before, _)| before)
            .unwrap_or_else(|e| panic!("waiting for a prompt: {e}"))
    }

    /// Waits for an output line that is exactly `line`; returns what came before it.
    fn line(&mut self, line: &str) -> String {
        let re = format!(r"(?m)^{}\r?$", regex::escape(line));
        self.s
            .exp_regex(&re)
            .map(|(before, _)| before)
            .unwrap_or_else(|e| panic!("waiting for the line {line:?}: {e}"))
    }

    /// Waits for an output line matching the regular expression `re` as a whole.
    fn line_re(&mut self, re: &str) -> String {
        self.s
            .exp_regex(&format!(r"(?m)^{re}\r?$"))
            .map(|(before, _)| before)
            .unwrap_or_else(|e| panic!("waiting for a line matching {re:?}: {e}"))
    }

    /// Runs one statement and returns everything printed up to the next prompt (the echo
    /// of the statement included).
    fn run(&mut self, stmt: &str) -> String {
        self.send(&format!("{stmt}\r"));
        self.prompt()
    }

    /// Types one statement line by line as a person does (Enter after each line, the next
    /// line after the continuation prompt), waits for the next prompt, and returns what the
    /// REPL printed for it (standard output and error as the terminal shows them, the echo
    /// of the typed lines left out), one entry per line.
    fn record(&mut self, stmt: &str) -> Vec<String> {
        let lines: Vec<&str> = stmt.lines().collect();
        for (k, line) in lines.iter().enumerate() {
            self.send(&format!("{line}\r"));
            if k + 1 < lines.len() {
                self.s
                    .exp_regex("\n\r?   \\.\\.\\.> ")
                    .unwrap_or_else(|e| panic!("waiting for the continuation prompt: {e}"));
            }
        }
        let seen = self.prompt();
        // the echo of the last line ends at the first line break; the output follows
        let out = seen.split_once('\n').map_or("", |(_, o)| o);
        out.split('\n')
            .map(|l| l.replace('\r', "").trim_end().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// Waits for the process to end; its exit code.
    fn finish(mut self) -> i32 {
        self.s.exp_eof().expect("the REPL ends");
        match self.s.process.wait().expect("wait for ixmap") {
            rexpect::process::wait::WaitStatus::Exited(_, code) => code,
            other => panic!("ixmap did not exit normally: {other:?}"),
        }
    }
}

const M: &str = "(d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]";
const M_INV: &str = "(d0, d1) -> (d1, d0), domain: d0 in [0, 4], d1 in [0, 3], is_simplified: true";

/// A statement that runs for a while: a CPU benchmark (a C compiler builds the kernels).
const SLOW: &str = "bench e device=cpu reps=3";
const SLOW_SETUP: &str = "p = f32[256,256] parameter(0); e = f32[256,256] exponential(p)";

#[test]
fn typed_ahead_input_and_unbracketed_paste_keep_every_line() {
    let dir = scratch("typeahead");
    let mut r = Repl::start(&dir);
    r.run(SLOW_SETUP);
    // A statement that takes a while, and, before it has printed anything, the next lines:
    // a map over three lines, then three statements, then an XLA computation, all typed
    // ahead as one unbracketed paste (Enter is `\r` on a terminal).
    r.send(&format!("{SLOW}\r"));
    r.send(
        "m = (d0, d1) -> (d1, d0),\r  domain: d0 in [0, 3],\r  d1 in [0, 4]\r\
         inverse m\rcompose m, _\ris_permutation m\r\
         add_f32 {\r  x = f32[] parameter(0)\r  y = f32[] parameter(1)\r  ROOT s = f32[] add(x, y)\r}\r\
         vars\r",
    );
    // Every line ran, in order.
    r.until("e (simplified) on cpu");
    r.line(M);
    r.line(M_INV);
    r.line("(d0, d1) -> (d0, d1), domain: d0 in [0, 3], d1 in [0, 4], is_simplified: true");
    r.line("true");
    // Defining a computation says what was defined, in one line.
    r.line("defined computation add_f32: f32[] (3 instructions, root s)");
    r.line_re("name +kind");
    r.line_re("add_f32 +computation");
    r.send("exit\r");
    assert_eq!(r.finish(), 0);
}

#[test]
fn up_in_a_continuation_line_edits_the_statement_not_history() {
    let dir = scratch("blockup");
    // A history entry that Up would recall if it went to history.
    std::fs::write(dir.join("history"), "#V2\nvars\n").expect("history");
    let mut r = Repl::start_wide(&dir);
    // The first line has a mistake (d1 + 1); the second line is typed but not entered.
    r.send("m = (d0, d1) -> (d1 + 1, d0),\r");
    r.s.exp_regex("\n\r?   \\.\\.\\.> ")
        .unwrap_or_else(|e| panic!("waiting for the continuation prompt: {e}"));
    r.send("domain: d0 in [0, 3], d1 in [0, 4]");
    r.until("d1 in [0, 4]");
    // Up: the statement comes back as one buffer, the cursor at the end of its first line;
    // six Lefts (past ", d0),") and four Backspaces remove " + 1"; Enter runs it all.
    r.send("\x1b[A");
    // The edit keys once the statement is redrawn, as a person sees it: keys that reach the
    // terminal in the instant between two line reads are read by the kernel's cooked mode,
    // whose line editing takes a Backspace itself (rustyline reads the rest raw).
    r.until("d1 in [0, 4]");
    r.send("\x1b[D\x1b[D\x1b[D\x1b[D\x1b[D\x1b[D\x7f\x7f\x7f\x7f\r");
    r.line(M);
    r.prompt();
    // Up at a fresh prompt still recalls history: the statement just run, as one entry.
    r.send("\x1b[A\r");
    r.line(M);
    r.prompt();
    r.send("exit\r");
    assert_eq!(r.finish(), 0);
    let history = std::fs::read_to_string(dir.join("history")).expect("history");
    assert!(
        history.contains("m = (d0, d1) -> (d1, d0),"),
        "the edited statement is one history entry: {history}"
    );
}

#[test]
fn history_survives_a_restart() {
    let dir = scratch("history");
    let mut r = Repl::start(&dir);
    r.run("h = (d0) -> (d0 * 3), domain: d0 in [0, 5]");
    r.send("\x04"); // Ctrl-D
    assert_eq!(r.finish(), 0);
    let saved = std::fs::read_to_string(dir.join("history")).expect("history written");
    assert!(saved.contains("h = (d0) -> (d0 * 3)"), "{saved}");
    // A new session: Up recalls the statement of the last one, Enter runs it (so `h` is
    // bound again: `inverse h` works).
    let mut r = Repl::start(&dir);
    r.send("\x1b[A\r");
    r.line("(d0) -> (d0 * 3), domain: d0 in [0, 5]");
    r.prompt();
    let out = r.run("eval h at (4)");
    assert!(out.contains("(12)"), "{out}");
    r.send("quit\r");
    assert_eq!(r.finish(), 0);
}

#[test]
fn completion_by_context() {
    let dir = scratch("complete");
    let mut r = Repl::start(&dir);
    r.run("zz_map = (d0) -> (d0 + 0), domain: d0 in [0, 3]");
    r.run("zz_p = f32[4] parameter(0)");
    // After `simplify `, only maps: `zz_` completes to the map, not the HLO name.
    r.send("simplify zz_\t\r");
    r.line("(d0) -> (d0), domain: d0 in [0, 3], is_simplified: true");
    r.prompt();
    // After `indexing `, only HLO names: `zz_` completes to the parameter.
    r.send("indexing zz_\t\r");
    r.until("`zz_p` (parameter) has no operands");
    r.prompt();
    // After `help `, topics too: `statem` completes to the topic `statements`.
    r.send("help statem\t\r");
    r.line("One statement per line, or several separated by `;`.");
    r.prompt();
    // A command's own options: `vec` after `threads FUSION ` completes to `vector=`.
    r.run("q = f32[64] parameter(0); n = f32[64] negate(q)");
    r.send("threads n vec\t4\r");
    // (rexpect reads bytes as Latin-1: needles stay ASCII, so not the `→` before it)
    r.until(" output (loop, block 16, grid 1, vector 4):");
    r.prompt();
    // Two Tabs list the candidates when there are several: the maps after `simplify `.
    r.run("zz_other = (d0) -> (d0), domain: d0 in [0, 1]");
    r.send("simplify zz_\t\t");
    let listed = r.until("ixmap> simplify zz_");
    assert!(
        listed.contains("zz_map") && listed.contains("zz_other") && !listed.contains("zz_p"),
        "{listed:?}"
    );
    r.send("\x15exit\r"); // Ctrl-U clears the line
    assert_eq!(r.finish(), 0);
}

#[test]
fn ctrl_c_interrupts_a_long_bench_once_and_the_session_goes_on() {
    let dir = scratch("interrupt");
    let mut r = Repl::start(&dir);
    r.run("m = (d0) -> (d0 * 2), domain: d0 in [0, 3]");
    r.run(SLOW_SETUP);
    // Thousands of rounds would take minutes; the progress bar says the timing has begun.
    r.send("bench e device=cpu reps=5000\r");
    r.until("/15000");
    r.send("\x03");
    let before = r.until("interrupted");
    assert!(!before.contains("verified"), "the bench finished: {before}");
    let after = r.prompt();
    assert!(!after.contains("interrupted"), "said twice: {after:?}");
    // The session is intact.
    let out = r.run("eval m at (3)");
    assert!(out.contains("(6)"), "{out}");
    // Ctrl-C at the prompt drops the line being typed, and the REPL stays.
    r.send("inverse m\x03");
    r.prompt();
    let out = r.run("is_permutation m");
    assert!(
        out.contains("false") && !out.contains("is_simplified"),
        "{out}"
    );
    r.send("\x04");
    assert_eq!(r.finish(), 0);
}

#[test]
fn exit_quit_and_ctrl_d_leave() {
    for leave in ["exit\r", "quit\r", "\x04", "exit()\r"] {
        let dir = scratch(&format!("leave{}", leave.len()));
        let mut r = Repl::start(&dir);
        r.run("(d0) -> (d0)");
        r.send(leave);
        assert_eq!(r.finish(), 0, "{leave:?} leaves with exit code 0");
    }
}

#[test]
fn help_shorthands_last_result_vars_and_reset() {
    let dir = scratch("session");
    let mut r = Repl::start(&dir);
    // `?` is `help` (grouped); `CMD?` is `help CMD`.
    let out = r.run("?");
    assert!(
        out.contains("commands, by group") && out.contains("compose"),
        "{out}"
    );
    let out = r.run("compose?");
    assert!(out.contains("usage: compose"), "{out}");
    // `_` is the last result.
    r.run(&format!("m = {M}"));
    r.send("inverse m\r");
    r.line(M_INV);
    r.prompt();
    r.send("inverse _\r");
    r.line("(d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4], is_simplified: true");
    r.prompt();
    // Defining an instruction says what was defined (name, shape, kind) in one line.
    r.send("p0 = f32[4,8] parameter(0)\r");
    r.line("defined instruction p0: f32[4,8] (parameter)");
    r.prompt();
    // `vars` lists the bindings and their kinds.
    r.send("vars\r");
    r.line("_     map");
    r.line("m     map");
    r.line("p0    instruction");
    r.prompt();
    // `reset` forgets them.
    r.send("reset\r");
    r.line("forgot 3 names");
    r.prompt();
    r.send("vars\r");
    r.line("nothing is bound yet");
    r.prompt();
    r.send("inverse m\r");
    r.until("error: unknown");
    r.prompt();
    r.send("exit\r");
    assert_eq!(r.finish(), 0);
}

#[test]
fn save_then_load_in_a_new_session() {
    let dir = scratch("save");
    let mut r = Repl::start(&dir);
    r.run(&format!("m = {M}"));
    r.run("p0 = f32[4,8] parameter(0)");
    r.run("t = f32[8,4] transpose(p0), dimensions={1,0}");
    r.run("vars"); // not saved
    r.send("save saved.ixs\r");
    r.line("wrote 3 statements to saved.ixs");
    r.prompt();
    r.send("exit\r");
    assert_eq!(r.finish(), 0);
    let saved = std::fs::read_to_string(dir.join("saved.ixs")).expect("save wrote the file");
    assert!(!saved.contains("vars"), "{saved}");
    // A new session loads it: the bindings are back.
    let mut r = Repl::start(&dir);
    r.send("load saved.ixs\r");
    r.line("ran 3 statements of saved.ixs");
    r.prompt();
    r.send("inverse m\r");
    r.line(M_INV);
    r.prompt();
    r.send("indexing t\r");
    r.line("  (d0, d1) -> (d1, d0), domain: d0 in [0, 7], d1 in [0, 3]");
    r.prompt();
    r.send("\x04");
    assert_eq!(r.finish(), 0);
    // `ixmap run` replays the saved file too.
    let o = command(&dir, &["run", "saved.ixs"], false)
        .output()
        .expect("ixmap run");
    assert_eq!(o.status.code(), Some(0));
    // (definitions say what they defined, as in the REPL)
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{M}\ndefined instruction p0: f32[4,8] (parameter)\ndefined instruction t: f32[8,4] (transpose)\n")
    );
}

/// On a terminal, `ixmap test` colours the diff and shows the changed part of a line in
/// inverse video.
#[test]
fn test_highlights_the_changed_part_on_a_terminal() {
    let dir = scratch("colour-diff");
    std::fs::write(
        dir.join("d.ixm"),
        "ixmap> (d0) -> (d0 * 25), domain: d0 in [0, 3]\n(d0) -> (d0 * 24), domain: d0 in [0, 3]\n",
    )
    .expect("write");
    let mut s = spawn_with_options(
        command(&dir, &["test", "d.ixm"], true),
        Options {
            timeout_ms: Some(WAIT_MS),
            strip_ansi_escape_codes: false,
        },
    )
    .expect("ixmap test starts");
    let out = s.exp_eof().expect("ixmap test ends");
    // `4` then `5`, each in inverse video (SGR 7) inside the red and green lines.
    let reversed =
        |c: &str| regex::Regex::new(&format!(r"\x1b\[[0-9;]*7[0-9;]*m{c}\x1b\[0m")).expect("regex");
    assert!(reversed("4").is_match(&out), "{out:?}");
    assert!(reversed("5").is_match(&out), "{out:?}");
    assert!(out.contains("\x1b[31m- (d0) -> (d0 * 2"), "{out:?}");
    assert!(!out.contains("^"), "no caret line on a terminal: {out:?}");
}

/// Issue 29: a REPL session copied into a `.ixm` file is a transcript that passes. The
/// real REPL on a terminal is given a session mixing maps, instruction lines, a computation
/// typed line by line, inspection (`NAME?`), an error and a note; what it printed for each
/// statement is written under the statement as a transcript, which `ixmap test` replays in
/// a fresh session and passes. `save FILE.ixm` of the same session passes as well.
#[test]
fn a_recorded_repl_session_replays_as_a_passing_transcript() {
    let dir = scratch("recorded");
    let mut r = Repl::start_wide(&dir);
    let session = [
        "m = (d0, d1) -> (d1, d0),\n  domain: d0 in [0, 3], d1 in [0, 4]",
        "inverse m",
        "p0 = f32[4,8] parameter(0)",
        "fused {\n  p0 = f32[4,8] parameter(0)\n  e = f32[4,8] exponential(p0)\n  ROOT t = f32[8,4] transpose(e), dimensions={1,0}\n}",
        "indexing fused",
        "fused.e",
        "t?",
        "simplify (d0) -> (d0 floordiv 8 * 8 + d0 mod 8), domain: d0 in [0, 63] explian",
        "simplify (d0) -> (d0 floordiv 8 * 8 + d0 mod 8), domain: d0 in [0, 63]",
        "e = (d0) -> (d0 + 1), domain: d0 in [0, 3]",
        "vars",
    ];
    let mut transcript = String::from("# recorded from the REPL\n");
    for stmt in session {
        let out = r.record(stmt);
        assert!(!out.is_empty(), "{stmt} printed nothing");
        for (k, line) in stmt.lines().enumerate() {
            transcript += if k == 0 { "ixmap> " } else { "   ...> " };
            transcript += line;
            transcript += "\n";
        }
        for line in out {
            transcript += &line;
            transcript += "\n";
        }
    }
    // what it printed: a definition's line, an error at its column, a note
    for said in [
        "defined instruction p0: f32[4,8] (parameter)\n",
        "defined computation fused: f32[8,4] (3 instructions, root t)\n",
        "e = f32[4,8] exponential(p0)  // in fused\n",
        "error: `simplify` has no option `explian`",
        "note: `e` also names the instruction `fused.e`",
    ] {
        assert!(transcript.contains(said), "{said:?} not in:\n{transcript}");
    }
    r.send("save saved.ixm\r");
    r.line("wrote 7 statements to saved.ixm");
    r.prompt();
    r.send("\x04");
    assert_eq!(r.finish(), 0);
    std::fs::write(dir.join("recorded.ixm"), &transcript).expect("write the transcript");
    for file in ["recorded.ixm", "saved.ixm"] {
        let o = command(&dir, &["test", file], false)
            .output()
            .expect("ixmap test");
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{file} does not replay:\n{out}{}\n--- the file:\n{}",
            String::from_utf8_lossy(&o.stderr),
            std::fs::read_to_string(dir.join(file)).unwrap_or_default()
        );
        assert!(out.contains("passed"), "{out}");
    }
}
