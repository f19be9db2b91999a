//! Commands about the session itself: `vars`, `reset`, `load FILE`, `save FILE`.

use super::commands::Command;
use super::{Args, Session};
use crate::syntax::{Arg, Diagnostic};
use crate::value::Value;
use crate::value::{Loaded, Table};

pub static COMMANDS: [Command; 4] = [
    Command {
        name: "vars",
        usage: "vars",
        summary: "lists the names bound in this session with their kinds",
        example: "m = (d0) -> (d0), domain: d0 in [0, 3]; vars",
        run: vars,
    },
    Command {
        name: "reset",
        usage: "reset",
        summary: "forgets every binding and every HLO definition",
        example: "m = (d0) -> (d0), domain: d0 in [0, 3]; reset",
        run: reset,
    },
    Command {
        name: "load",
        usage: "load FILE",
        summary: "runs a script, or the statements of a transcript, in this session; it stops at the first statement that fails, and fails with it",
        example: "load sessions/map/commands.ixm",
        run: load,
    },
    Command {
        name: "save",
        usage: "save FILE",
        summary: "writes this session's statements: FILE.ixm as a transcript `ixmap test` checks, any other name as a script `ixmap run` replays",
        example: "m = (d0) -> (d0 * 2), domain: d0 in [0, 3]; save /tmp/ixmap-save-example.ixs",
        run: save,
    },
];

/// Statements `save` leaves out: they inspect or change the session, not its content.
pub const NOT_SAVED: &[&str] = &["vars", "save", "load", "help", "reset"];

fn no_arguments(a: &Args, name: &str) -> Result<(), Diagnostic> {
    match a.items().next() {
        Some(x) => Err(Diagnostic::at(
            format!("`{name}` takes no arguments"),
            x.span(),
        )),
        None => Ok(()),
    }
}

fn vars(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    no_arguments(a, "vars")?;
    use crate::hlo::workspace::Target;
    let mut rows: Vec<Vec<String>> = s
        .values
        .iter()
        .map(|(k, v)| vec![k.clone(), v.kind().to_string()])
        .collect();
    // the session's HLO names (each can be shown: `NAME` or `NAME?`); a computation's
    // instructions are in its own scope
    let mut computations = 0;
    for (name, t) in s.hlo.session_names() {
        let kind = match t {
            Target::Computation(_) => {
                computations += 1;
                "computation"
            }
            Target::Instr(..) => "instruction",
        };
        rows.push(vec![name, kind.to_string()]);
    }
    let mut notes = Vec::new();
    if rows.is_empty() {
        notes.push("nothing is bound yet".to_string());
    }
    if computations > 0 {
        notes.push("a computation's instructions: COMPUTATION.NAME, or NAME alone where only one computation has it".to_string());
    }
    Ok(Value::Table(Table {
        title: None,
        headers: if rows.is_empty() {
            vec![]
        } else {
            vec!["name".into(), "kind".into()]
        },
        rows,
        notes,
    }))
}

fn reset(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    no_arguments(a, "reset")?;
    let n = s.values.len() + s.hlo.session_names().len();
    s.values.clear();
    s.hlo = crate::hlo::Workspace::new();
    s.hlo_source.clear();
    s.statements.clear();
    Ok(Value::Text(format!(
        "forgot {n} name{}",
        if n == 1 { "" } else { "s" }
    )))
}

fn file_arg(a: &Args, name: &str) -> Result<(String, crate::syntax::Span), Diagnostic> {
    let mut items = a.items();
    let (path, span) = match items.next() {
        Some(Arg::Word(w, sp)) | Some(Arg::Str(w, sp)) => (w.clone(), *sp),
        Some(x) => {
            return Err(Diagnostic::at(
                format!("`{name}` takes a file name, e.g. `{name} work.ixs`"),
                x.span(),
            ))
        }
        None => {
            return Err(
                Diagnostic::at(format!("`{name}` needs a file name"), a.span())
                    .with_help(format!("usage: {name} FILE")),
            )
        }
    };
    if let Some(x) = items.next() {
        return Err(Diagnostic::at(
            format!("`{name}` takes one file name"),
            x.span(),
        ));
    }
    Ok((path, span))
}

/// The statements of `src`: itself for a script, or the inputs of a transcript (lines after
/// `ixmap> ` and `   ...> `). None when `src` is a script.
pub fn transcript_statements(src: &str) -> Option<String> {
    let mut out = String::new();
    let mut any = false;
    for line in src.lines() {
        if let Some(rest) = line.strip_prefix("ixmap>") {
            any = true;
            out.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            out.push('\n');
        } else if let Some(rest) = line.strip_prefix("   ...>") {
            // a continuation joins the statement before it
            if out.ends_with('\n') {
                out.pop();
            }
            out.push('\n');
            out.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            out.push('\n');
        }
    }
    any.then_some(out)
}

/// How deep files may load files (each `load` inside a loaded file one level).
const LOAD_DEPTH: usize = 64;

fn load(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (path, span) = file_arg(a, "load")?;
    let text = crate::syntax::read_source(&path).map_err(|e| Diagnostic::at(e, span))?;
    let real = std::fs::canonicalize(&path).unwrap_or_else(|_| std::path::PathBuf::from(&path));
    if let Some(k) = s.loading.iter().position(|p| *p == real) {
        let cycle: Vec<String> = s.loading[k..]
            .iter()
            .chain(std::iter::once(&real))
            .map(|p| p.display().to_string())
            .collect();
        return Err(Diagnostic::at(
            format!(
                "{path} is already being loaded: a load cycle ({})",
                cycle.join(" → ")
            ),
            span,
        ));
    }
    if s.loading.len() >= LOAD_DEPTH {
        return Err(Diagnostic::at(
            format!("{path}: files load files {LOAD_DEPTH} deep; no deeper"),
            span,
        ));
    }
    let source = transcript_statements(&text).unwrap_or(text);
    let mut outcomes = Vec::new();
    s.loading.push(real);
    for (i, piece) in crate::syntax::split(&source).iter().enumerate() {
        let mut o = s.execute_nested(&source, piece);
        for x in &mut o {
            x.stmt = i + 1;
        }
        // a file it loads that stopped, a dump that failed: the file stops too
        let failed = o.iter().any(crate::value::Outcome::failed);
        outcomes.extend(o);
        if failed || crate::interrupted() {
            break;
        }
    }
    s.loading.pop();
    Ok(Value::Loaded(Loaded {
        file: path,
        source,
        outcomes,
    }))
}

/// The session's statements as a transcript (SPEC §4): each statement after `ixmap> `
/// (continuation lines after `   ...> `) and what it prints, replayed in a fresh session so
/// that `ixmap test FILE` passes.
pub fn as_transcript(statements: &[String]) -> String {
    let mut fresh = Session::new();
    let mut text = String::from("# ixmap session, saved by `save`; check it with `ixmap test`\n");
    for st in statements {
        for (k, line) in st.lines().enumerate() {
            text.push_str(if k == 0 {
                crate::transcript::PROMPT
            } else {
                crate::transcript::CONT
            });
            text.push_str(line.trim_end());
            text.push('\n');
        }
        for out in crate::transcript::run_input(&mut fresh, st) {
            // a transcript's `#` lines are prose: indent an output line that starts so
            if out.starts_with('#') {
                text.push(' ');
            }
            text.push_str(&out);
            text.push('\n');
        }
    }
    text
}

fn save(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (path, span) = file_arg(a, "save")?;
    let text = if path.ends_with(".ixm") {
        as_transcript(&s.statements)
    } else {
        let mut text = String::from("# ixmap session, saved by `save`; replay with `ixmap run`\n");
        for st in &s.statements {
            text.push_str(st);
            text.push('\n');
        }
        text
    };
    std::fs::write(&path, &text)
        .map_err(|e| Diagnostic::at(format!("cannot write {path}: {e}"), span))?;
    let n = s.statements.len();
    Ok(Value::Text(format!(
        "wrote {n} statement{} to {path}",
        if n == 1 { "" } else { "s" }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that loads itself, directly or through another, is an error at the `load`
    /// that closes the cycle (it recursed until memory ran out), and every file on the way
    /// stops there; the session goes on.
    #[test]
    fn a_load_cycle_is_an_error_that_stops_each_file() {
        let d = std::env::temp_dir().join(format!("ixmap-load-cycle-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let (a, b) = (d.join("a.txt"), d.join("b.txt"));
        std::fs::write(&a, format!("x = (d0) -> (d0)\nload \"{}\"\n", b.display())).unwrap();
        std::fs::write(&b, format!("load \"{}\"\ny = x\n", a.display())).unwrap();
        let mut s = Session::new();
        let o = s.execute(&format!("load \"{}\"", a.display()));
        assert_eq!(o.len(), 1);
        assert!(o[0].failed());
        let Ok(Value::Loaded(l)) = &o[0].result else {
            panic!("{:?}", o[0].result)
        };
        let e = l.error().expect("the cycle stops the files");
        assert!(
            e.message.contains("already being loaded: a load cycle"),
            "{}",
            e.message
        );
        // the statement that failed is b's first, as --json reports it
        let (f, o) = l.failure().expect("a failure");
        assert!(
            f.file.ends_with("b.txt") && o.stmt == 1,
            "{} {}",
            f.file,
            o.stmt
        );
        // b stopped at its load of a: `y = x` never ran
        assert!(!s.values.contains_key("y"));
        assert!(s.loading.is_empty());
        let o = s.execute("z = (d0) -> (d0 * 2)");
        assert!(!o[0].failed());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_session_saved_as_ixm_is_a_passing_transcript() {
        let dir = std::env::temp_dir().join(format!("ixmap-save-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.ixm");
        let mut s = Session::new();
        for st in [
            "m = (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 4]",
            "fused {\n  p0 = f32[4,8] parameter(0)\n  ROOT n = f32[4,8] negate(p0)\n}",
            "inverse m",
            "simplify m explan",
            "indexing fused",
            "vars",
        ] {
            s.execute(st);
        }
        let out = s.execute(&format!("save \"{}\"", file.display())).remove(0);
        assert!(out.result.is_ok(), "{:?}", out.result.err());
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("ixmap> m = (d0, d1)"), "{text}");
        assert!(
            text.contains("   ...>   ROOT n = f32[4,8] negate(p0)"),
            "{text}"
        );
        assert!(
            !text.contains("ixmap> vars") && !text.contains("explan"),
            "{text}"
        );
        let r = crate::transcript::replay(&text).unwrap();
        assert_eq!(r.cases, 4);
        assert!(r.mismatches.is_empty(), "{:?}", r.mismatches);
        // loading it and saving again gives the same statements, once
        let mut t = Session::new();
        assert!(t
            .execute(&format!("load \"{}\"", file.display()))
            .remove(0)
            .result
            .is_ok());
        assert_eq!(t.statements, s.statements);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
