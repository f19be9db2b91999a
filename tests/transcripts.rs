//! Replays every transcript under `sessions/` as one test each (libtest-mimic), so
//! `cargo test` fails with the same per-case diff that `ixmap test` prints.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::PathBuf;

fn main() {
    let args = Arguments::from_args();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sessions");
    let files = ixmap::transcript::collect_files(std::slice::from_ref(&root))
        .expect("the sessions folder exists");
    assert!(!files.is_empty(), "no transcripts under {}", root.display());
    let trials = files
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .display()
                .to_string();
            let src = std::fs::read_to_string(&path).unwrap_or_default();
            let ignored = ixmap::transcript::Transcript::parse(&src)
                .map(|t| {
                    t.requires
                        .iter()
                        .any(|r| !ixmap::transcript::requirement_met(r))
                })
                .unwrap_or(false);
            Trial::test(name, move || check(&path, &src)).with_ignored_flag(ignored)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

fn check(path: &std::path::Path, src: &str) -> Result<(), Failed> {
    colored::control::set_override(false);
    let r = ixmap::transcript::replay(src).map_err(|e| format!("{}:{e}", path.display()))?;
    if r.mismatches.is_empty() {
        return Ok(());
    }
    let mut msg = String::new();
    for m in &r.mismatches {
        msg.push_str(&format!(
            "{}:{}\n  ixmap> {}\n",
            path.display(),
            m.line,
            m.input
        ));
        for l in &m.expected {
            msg.push_str(&format!("- {l}\n"));
        }
        for l in &m.actual {
            msg.push_str(&format!("+ {l}\n"));
        }
    }
    msg.push_str(&format!(
        "If the new output is right: ixmap test --bless {}",
        path.display()
    ));
    Err(msg.into())
}
