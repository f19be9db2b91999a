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
        summary: "runs a script, or the statements of a transcript, in this session",
        example: "load sessions/tour/first-steps.ixm",
        run: load,
    },
    Command {
        name: "save",
        usage: "save FILE",
        summary: "writes this session's statements as a script `ixmap run` replays",
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
    let mut rows: Vec<Vec<String>> = s
        .values
        .iter()
        .map(|(k, v)| vec![k.clone(), v.kind().to_string()])
        .collect();
    for name in s.hlo.names() {
        if !rows.iter().any(|r| r[0] == name) {
            rows.push(vec![name, "hlo".to_string()]);
        }
    }
    let notes = if rows.is_empty() {
        vec!["nothing is bound yet".to_string()]
    } else {
        vec![]
    };
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
    let n = s.values.len() + s.hlo.names().len();
    s.values.clear();
    s.hlo = crate::hlo::Workspace::new();
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

fn load(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (path, span) = file_arg(a, "load")?;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Diagnostic::at(format!("cannot read {path}: {e}"), span))?;
    let source = transcript_statements(&text).unwrap_or(text);
    let mut outcomes = Vec::new();
    for (i, piece) in crate::syntax::split(&source).iter().enumerate() {
        let mut o = s.execute_piece(&source, piece);
        for x in &mut o {
            x.stmt = i + 1;
        }
        let failed = o.iter().any(|x| x.result.is_err());
        outcomes.extend(o);
        if failed || crate::interrupted() {
            break;
        }
    }
    Ok(Value::Loaded(Loaded {
        file: path,
        source,
        outcomes,
    }))
}

fn save(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (path, span) = file_arg(a, "save")?;
    let mut text = String::from("# ixmap session, saved by `save`; replay with `ixmap run`\n");
    for st in &s.statements {
        text.push_str(st);
        text.push('\n');
    }
    std::fs::write(&path, &text)
        .map_err(|e| Diagnostic::at(format!("cannot write {path}: {e}"), span))?;
    let n = s.statements.len();
    Ok(Value::Text(format!(
        "wrote {n} statement{} to {path}",
        if n == 1 { "" } else { "s" }
    )))
}
