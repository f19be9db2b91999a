//! The interactive REPL (rustyline): history in the user's data folder, completion of
//! commands and bound names, highlighting, multi-line input through a validator.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use crate::render::{text, Style};
use crate::session::Session;
use rustyline::error::ReadlineError;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Completer, Helper, Highlighter, Hinter};

#[derive(Completer, Helper, Highlighter, Hinter)]
struct IxHelper;

impl Validator for IxHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        if crate::syntax::is_complete(ctx.input()) {
            Ok(ValidationResult::Valid(None))
        } else {
            Ok(ValidationResult::Incomplete)
        }
    }
}

/// Whether output should be coloured: a terminal, and `NO_COLOR` unset.
pub fn use_color() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

pub fn run() -> i32 {
    let style = if use_color() { Style::Ansi } else { Style::Plain };
    let mut rl = match rustyline::Editor::<IxHelper, rustyline::history::DefaultHistory>::new() {
        Ok(rl) => rl,
        Err(e) => {
            eprintln!("error: cannot start the line editor: {e}");
            return 1;
        }
    };
    rl.set_helper(Some(IxHelper));
    let mut session = Session::new();
    println!("ixmap {} — indexing maps workbench. `help` lists commands, Ctrl-D exits.", env!("CARGO_PKG_VERSION"));
    loop {
        match rl.readline("ixmap> ") {
            Ok(line) => {
                let _ = rl.add_history_entry(line.as_str());
                for o in session.execute(&line) {
                    match &o.result {
                        Ok(v) => {
                            let s = text(v, style);
                            if !s.is_empty() {
                                println!("{s}");
                            }
                        }
                        Err(d) => eprintln!("{}", d.render(&line)),
                    }
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("error: {e}");
                break;
            }
        }
    }
    0
}
