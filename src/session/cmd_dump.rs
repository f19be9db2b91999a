//! `dump`: the survey of an XLA dump (`crate::dump`) as a statement of the REPL, the
//! notebook and scripts; `ixmap dump DIR` on the command line is the same survey.

use super::commands::Command;
use super::{Args, Session};
use crate::dump::{self, ModuleReport, Options};
use crate::syntax::{Arg, Diagnostic};
use crate::value::Value;
use std::path::PathBuf;

pub static COMMANDS: [Command; 1] = [Command {
    name: "dump",
    usage: "dump [DIR|FILE ...] [emit=false] [check=false] [occupancy=true] [bench]",
    summary: "surveys an XLA dump (every *after_optimizations.txt under DIR, or the session's own module): each fusion's kind, source line, indexing, ixmap's and XLA's launch, coalescing, whether it emits and verifies; `occupancy=true` assembles each kernel (NVRTC, ptxas) and sets its registers and occupancy on an H100 beside XLA's (Nsight Compute's CSV); `bench` times each kernel beside a copy (on the GPU when one is found, else the C kernel on the CPU)",
    example: "HloModule m\nfused { p = f32[64,32] parameter(0)\n ROOT e = f32[64,32] exponential(p) }\nENTRY main { x = f32[64,32] parameter(0)\n ROOT f = f32[64,32] fusion(x), kind=kLoop, calls=fused }; dump",
    run: dump_cmd,
}];

/// `dump` options: `emit=`, `check=` (true|false) and the `bench` flag; anything else is
/// a path.
pub fn options(a: &Args) -> Result<(Options, Vec<PathBuf>), Diagnostic> {
    let mut o = Options::default();
    let mut paths = Vec::new();
    for it in a.items() {
        match it {
            Arg::Kv(k, v, sp) => {
                let b = match &**v {
                    Arg::Word(w, _) if w == "true" => true,
                    Arg::Word(w, _) if w == "false" => false,
                    _ => {
                        return Err(Diagnostic::at(
                            format!("`{k}=` takes true or false"),
                            v.span(),
                        ))
                    }
                };
                match k.as_str() {
                    "emit" => o.emit = b,
                    "check" | "verify" => o.verify = b,
                    "occupancy" => o.occupancy = b,
                    _ => {
                        return Err(Diagnostic::at(format!("`dump` has no option `{k}=`"), *sp)
                            .with_help("dump takes emit=true|false, check=true|false, occupancy=true|false and bench"))
                    }
                }
            }
            Arg::Word(w, _) if w == "bench" => o.bench = true,
            Arg::Word(w, sp) | Arg::Str(w, sp) => {
                let p = PathBuf::from(w);
                if !p.exists() {
                    return Err(
                        Diagnostic::at(format!("{w}: no such file or directory"), *sp).with_help(
                            "give an XLA dump directory (--xla_dump_to) or module files",
                        ),
                    );
                }
                paths.push(p)
            }
            other => {
                return Err(Diagnostic::at(
                    "`dump` takes directories or files of XLA's HLO text, and options",
                    other.span(),
                )
                .with_help("usage: dump [DIR|FILE ...] [emit=false] [check=false] [bench]"))
            }
        }
    }
    if !o.emit {
        o.verify = false;
    }
    Ok((o, paths))
}

fn dump_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (opts, paths) = options(a)?;
    if paths.is_empty() {
        if s.hlo.module.entry().is_none() {
            return Err(Diagnostic::at(
                "`dump` with no path surveys the session's module, which has no ENTRY computation",
                a.span(),
            )
            .with_help("give a dump directory or a module file: dump /tmp/xla_dump"));
        }
        let m = ModuleReport {
            file: "(session)".into(),
            name: String::new(),
            error: None,
            fusions: Vec::new(),
            others: Vec::new(),
        };
        let m = dump::survey_workspace(&s.hlo, m, &opts, None);
        return Ok(Value::Dump(dump::DumpReport::new(vec![m], opts)));
    }
    // A progress bar on a terminal: a real model's dump has dozens of modules.
    let bar = {
        use std::io::IsTerminal;
        if std::io::stderr().is_terminal() {
            let b = indicatif::ProgressBar::new(0);
            b.set_style(
                indicatif::ProgressStyle::with_template("dump {bar:30} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        } else {
            indicatif::ProgressBar::hidden()
        }
    };
    let r = dump::survey(&paths, &opts, &mut |done, total, file| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        let name = std::path::Path::new(file)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        crate::report_progress(done as u64, total as u64, &format!("modules ({name})"));
        bar.set_message(name);
    });
    bar.finish_and_clear();
    Ok(Value::Dump(r.map_err(|e| Diagnostic::at(e, a.span()))?))
}
