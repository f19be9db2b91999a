//! The command table: one entry per command drives dispatch, `help` and completion.
//! Each area keeps its commands in its own `cmd_*.rs` table; [`all`] chains them.

use super::{Args, Session};
use crate::syntax::Diagnostic;
use crate::value::Value;

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
        .chain(super::cmd_hlo::COMMANDS.iter())
        .chain(super::cmd_plot::COMMANDS.iter())
        .chain(super::cmd_gpu::COMMANDS.iter())
        .chain(super::cmd_tile::COMMANDS.iter())
        .chain(super::cmd_dump::COMMANDS.iter())
        .chain(super::cmd_layout::COMMANDS.iter())
        .chain(super::cmd_session::COMMANDS.iter())
        .chain(HELP.iter())
}

/// The commands in groups, as `help` shows them: (word for `help GROUP`, title, commands).
pub fn groups() -> Vec<(&'static str, &'static str, &'static [Command])> {
    vec![
        ("algebra", "map algebra", &super::cmd_map::COMMANDS[..]),
        ("hlo", "HLO indexing", &super::cmd_hlo::COMMANDS[..]),
        ("pictures", "pictures", &super::cmd_plot::COMMANDS[..]),
        (
            "gpu",
            "GPU mappings, kernels, benchmarks",
            &super::cmd_gpu::COMMANDS[..],
        ),
        ("tiling", "tiles", &super::cmd_tile::COMMANDS[..]),
        ("dumps", "XLA dumps", &super::cmd_dump::COMMANDS[..]),
        (
            "layouts",
            "CuTe and Triton layouts",
            &super::cmd_layout::COMMANDS[..],
        ),
        ("session", "the session", &super::cmd_session::COMMANDS[..]),
        ("help", "help", &HELP[..]),
    ]
}

/// Every `key=` some command's usage names (`block=`, `mapping=`, `tile=`...), sorted: the
/// completers offer them, so a new argument is completed as soon as its usage says so.
pub fn argument_keys() -> Vec<String> {
    let mut keys: Vec<String> = all()
        .flat_map(|c| {
            c.usage
                .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '='))
                .filter_map(|w| w.split_once('=').map(|(k, _)| k))
                .filter(|k| !k.is_empty())
                .map(|k| format!("{k}="))
                .collect::<Vec<_>>()
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

pub fn find(name: &str) -> Option<&'static Command> {
    all().find(|c| c.name == name)
}

static HELP: [Command; 1] = [Command {
    name: "help",
    usage: "help [COMMAND|TOPIC]",
    summary: "lists the commands, or explains one with an example and what it prints",
    example: "help eval",
    run: help,
}];

/// Topics `help` explains besides the commands: (name, one-line summary, text).
pub const TOPICS: &[(&str, &str, &str)] = &[
    (
        "maps",
        "how indexing maps are written",
        "An indexing map is written exactly as XLA prints it:
  (d0, d1)[s0]{r0} -> (d0 * 8 + s0, d1 floordiv 2 + r0),
  domain:
  d0 in [0, 9],
  d1 in [0, 15],
  s0 in [0, 7],
  r0 in [0, 4],
  d0 + s0 in [0, 12],
  is_simplified: false
- `(dims)`, optional `[range variables]`, optional `{runtime variables}`, `->`, `(results)`;
- `domain:` gives each variable an inclusive interval, then constraints `EXPR in [lo, hi]`;
- names are free (`th_x`, `bl_x`, `vector_elem`); the defaults are d*, s*, r*;
- expressions: 64-bit integers, variables, + - * floordiv ceildiv mod, parentheses;
  floordiv, ceildiv and mod bind like *, everything is left-associative, and mod by a
  positive constant is never negative;
- `KNOWN EMPTY` and `UNDEFINED` are maps too, and MLIR's
  `affine_map<(d0, d1)[s0] -> (d1, d0)>` is accepted wherever a map is.",
    ),
    (
        "statements",
        "statements, bindings, comments, multi-line input",
        "One statement per line, or several separated by `;`.
- `NAME = MAP` or `NAME = COMMAND ...` binds a name; a name alone prints its value.
- A statement continues onto the next line while a bracket is open or the line ends with
  `,`, `->` or `:`, so XLA's multi-line maps paste as they are.
- `#` and `//` start comments.
- HLO as XLA prints it (an instruction line, a computation block, a module) defines
  instructions and computations, each definition saying what it defined in one line.
- A computation's instructions are `COMPUTATION.NAME`, or `NAME` alone where only one
  computation has one; an HLO name alone (or `NAME?`) shows its text; `CMD?` is `help CMD`.
- Arguments of a command are separated by commas; an argument may itself be a command:
  `equal m, simplify m` or `equal (compose a, b), c`.",
    ),
];

thread_local! {
    /// Set while `help` runs an example, so an example of `help` does not run examples.
    static IN_EXAMPLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// What a command's example gives in a fresh session (its last statement's outcome).
fn example_outcome(c: &Command) -> Option<Box<crate::value::Outcome>> {
    // an example that reads or writes a file (`load FILE`, `save FILE`, `dump DIR|FILE`)
    // is shown, not run: help never writes files, nor fails outside the repository
    let touches_files = super::args::Signature::parse(c.usage).is_ok_and(|s| {
        s.slots
            .iter()
            .any(|x| x.name.split('|').any(|p| p == "FILE"))
    });
    if touches_files || IN_EXAMPLE.with(|f| f.replace(true)) {
        return None;
    }
    // Cleared when the example ends, however it ends: the REPL and the notebook survive a
    // panic in a statement, and `help` must run examples after it.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            IN_EXAMPLE.with(|f| f.set(false));
        }
    }
    let _clear = Clear;
    let mut session = Session::new();
    let outcomes = session.execute(c.example);
    outcomes.into_iter().last().map(Box::new)
}

fn entry(c: &Command) -> crate::value::HelpEntry {
    crate::value::HelpEntry {
        name: c.name.to_string(),
        usage: c.usage.to_string(),
        summary: c.summary.to_string(),
    }
}

fn help_groups(only: Option<&str>) -> Vec<crate::value::HelpGroup> {
    groups()
        .into_iter()
        .filter(|(k, _, _)| only.is_none_or(|o| o == *k))
        .map(|(key, title, cmds)| crate::value::HelpGroup {
            key: key.to_string(),
            title: title.to_string(),
            entries: cmds.iter().map(entry).collect(),
        })
        .collect()
}

fn help(_: &mut Session, args: &Args) -> Result<Value, Diagnostic> {
    use crate::value::Help;
    if let Some(crate::syntax::Arg::Word(w, span)) = args.items().next() {
        if let Some((t, _, text)) = TOPICS.iter().find(|(t, _, _)| t == w) {
            return Ok(Value::Help(Help::Topic {
                name: t.to_string(),
                text: text.to_string(),
            }));
        }
        if w == "all" {
            return Ok(Value::Help(Help::Groups(help_groups(None))));
        }
        if let Some(c) = find(w) {
            return Ok(Value::Help(Help::Command {
                entry: entry(c),
                example: c.example.to_string(),
                output: example_outcome(c),
            }));
        }
        if groups().iter().any(|g| g.0 == w) {
            return Ok(Value::Help(Help::Groups(help_groups(Some(w)))));
        }
        let known = all()
            .map(|c| c.name)
            .chain(TOPICS.iter().map(|t| t.0))
            .chain(groups().into_iter().map(|g| g.0))
            .chain(["all"]);
        let mut d = Diagnostic::at(format!("no command or help topic `{w}`"), *span)
            .with_label("not a command");
        d = match crate::syntax::suggest(w, known) {
            Some(s) => d.with_help(format!("did you mean `{s}`?")),
            None => d.with_help("`help` lists the commands and topics"),
        };
        return Err(d);
    }
    if let Some(a) = args.items().next() {
        return Err(Diagnostic::at(
            "`help` takes a command name, e.g. `help compose`",
            a.span(),
        ));
    }
    Ok(Value::Help(Help::Index {
        groups: help_groups(None),
        topics: TOPICS
            .iter()
            .map(|(t, s, _)| (t.to_string(), s.to_string()))
            .collect(),
    }))
}

#[cfg(test)]
mod tests {
    use crate::session::args::Signature;
    use crate::session::Session;

    /// Runs `text` in a fresh session; the error it must give, starting at `at`.
    fn error_at(text: &str, at: usize) -> crate::syntax::Diagnostic {
        let o = Session::new().execute(text).remove(0);
        let d = match o.result {
            Err(d) => d,
            Ok(v) => panic!("`{text}` ran and gave a {}", v.kind()),
        };
        assert_eq!(
            d.span.map(|s| s.start),
            Some(at),
            "`{text}`: {}",
            d.render(text)
        );
        d
    }

    /// Every command (those merged later too): a misspelled option and a stray word are
    /// errors at their column, before the command runs, with a suggestion where one is close.
    #[test]
    fn every_command_refuses_a_misspelled_option_and_a_stray_word() {
        for c in super::all() {
            let sig = Signature::parse(c.usage).unwrap();
            let head = if sig.slots.is_empty() {
                c.name.to_string()
            } else {
                format!("{} x", c.name)
            };
            // a misspelled option (or, for a command without options, any; a command that
            // takes any key, `fold MAP RVAR=INSTR`, checks its keys itself)
            if sig.options.is_empty() && sig.any_key.is_some() {
                continue;
            }
            let key = sig
                .options
                .first()
                .map_or("bogus".to_string(), |(k, _)| format!("{k}x"));
            let text = format!("{head} {key}=1");
            let d = error_at(&text, head.len() + 1);
            assert!(
                d.message.contains(&format!("no option `{key}=`")),
                "`{text}`: {}",
                d.message
            );
            if let Some((k, _)) = sig.options.first() {
                assert!(
                    d.help
                        .as_deref()
                        .unwrap_or("")
                        .contains(&format!("did you mean `{k}=`?")),
                    "`{text}`: {:?}",
                    d.help
                );
            }
            // a misspelled flag, or a stray word
            if sig.rest {
                continue;
            }
            let word = sig
                .flags
                .iter()
                .find(|f| f.len() >= 4)
                .map_or("zzqq".to_string(), |f| format!("{f}x"));
            let text = format!("{head} {word}");
            let d = error_at(&text, head.len() + 1);
            if let Some(f) = word.strip_suffix('x').filter(|_| word != "zzqq") {
                assert_eq!(
                    d.help.as_deref(),
                    Some(format!("did you mean `{f}`?").as_str())
                );
            } else if c.usage != c.name && !sig.slots.is_empty() {
                assert!(
                    d.message
                        .contains(&format!("`{}` has no option `zzqq`", c.name))
                        || d.message.contains("unexpected"),
                    "`{text}`: {}",
                    d.message
                );
            }
        }
    }

    #[test]
    fn option_values_are_validated_and_completed() {
        let d = error_at("bench b device=gpy", 15);
        assert_eq!(d.message, "`device=` takes auto, gpu or cpu, not `gpy`");
        assert_eq!(d.help.as_deref(), Some("did you mean `gpu`?"));
        let sig = Signature::parse(super::find("emit").unwrap().usage).unwrap();
        assert_eq!(sig.values_after("target="), vec!["cuda", "cpu"]);
    }
    #[test]
    fn argument_keys_come_from_the_usages() {
        let keys = super::argument_keys();
        for k in ["block=", "mapping=", "tile=", "device=", "sizes=", "reps="] {
            assert!(keys.contains(&k.to_string()), "{k} in {keys:?}");
        }
        assert!(keys.iter().all(|k| k.ends_with('=') && k.len() > 1));
    }
}
