//! The command table: one entry per command drives dispatch, `help` and completion.
//! Each area keeps its commands in its own `cmd_*.rs` table; [`all`] chains them.

use super::{Args, Session, Value};
use crate::syntax::Diagnostic;

pub struct Command {
    pub name: &'static str,
    /// `simplify MAP [explain] [raw]`
    pub usage: &'static str,
    /// One line, shown by `help` and in completion.
    pub summary: &'static str,
    /// A statement that works in a fresh session (with the definitions it needs).
    pub example: &'static str,
    pub run: fn(&mut Session, &Args) -> Result<Value, Diagnostic>,
}

/// Every command, in the order `help` lists them.
pub fn all() -> impl Iterator<Item = &'static Command> {
    super::cmd_map::COMMANDS
        .iter()
        .chain(super::cmd_plot::COMMANDS.iter())
        .chain(HELP.iter())
}

pub fn find(name: &str) -> Option<&'static Command> {
    all().find(|c| c.name == name)
}

static HELP: [Command; 1] = [Command {
    name: "help",
    usage: "help [COMMAND]",
    summary: "lists the commands, or explains one with an example",
    example: "help compose",
    run: help,
}];

fn help(_: &mut Session, args: &Args) -> Result<Value, Diagnostic> {
    if let Some(crate::syntax::Arg::Word(w, span)) = args.items().next() {
        let Some(c) = find(w) else {
            let mut d = Diagnostic::at(format!("no command `{w}`"), *span);
            if let Some(s) = crate::syntax::suggest(w, all().map(|c| c.name)) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            return Err(d);
        };
        return Ok(Value::Text(format!(
            "{}\n  {}\nexample:\n  {}",
            c.usage, c.summary, c.example
        )));
    }
    let width = all().map(|c| c.usage.len()).max().unwrap_or(0);
    let mut s = String::from("commands:\n");
    for c in all() {
        s += &format!("  {:width$}  {}\n", c.usage, c.summary);
    }
    s += "statements:\n";
    s += "  NAME = MAP | COMMAND ...   binds a name\n";
    s += "  MAP                        prints the map in canonical form\n";
    s += "maps are written as XLA prints them, e.g.\n";
    s += "  (d0, d1)[s0] -> (d0 * 8 + s0, d1), domain: d0 in [0, 9], d1 in [0, 15], s0 in [0, 7]\n";
    s += "or as MLIR's affine_map<(d0, d1) -> (d1, d0)>. `help COMMAND` shows an example.";
    Ok(Value::Text(s))
}
