//! The Jupyter kernel driven by a real client: `tests/jupyter/client.py` (jupyter_client)
//! for the protocol (`tests/jupyter/stop_on_error.py` for aborting the queue after an
//! error), `tests/jupyter/notebook.py` (nbclient, nbconvert) for the tour notebook.
//!
//! Python comes from `IXMAP_PYTHON` (scripts/test-all makes a venv with
//! `kernel/requirements.txt` and sets it, with `IXMAP_REQUIRE_JUPYTER=1`). Without it the
//! tests are skipped with the reason printed; with `IXMAP_REQUIRE_JUPYTER=1` anything
//! missing is a failure. Tests run one at a time so the latency figures are not disturbed.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::PathBuf;
use std::process::Command;

const CLIENT_TESTS: &[&str] = &[
    "kernel_info",
    "execute",
    "error",
    "state",
    "complete_inspect",
    "is_complete",
    "interrupt",
    "bad_signature",
    "plot",
    "shutdown",
    "exit",
    "definitions_and_names",
    "progress",
    "parent_exit",
    "connection_loss",
    "latency",
];

/// `tests/jupyter/stop_on_error.py`: queued cells after a failing one are aborted.
const STOP_ON_ERROR_TESTS: &[&str] = &[
    "error",
    "interrupt",
    "off",
    "other_requests_are_served_while_aborting",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python to use, or why there is none.
fn python() -> Result<PathBuf, String> {
    let py = std::env::var_os("IXMAP_PYTHON").ok_or(
        "IXMAP_PYTHON is not set (scripts/test-all sets it to a venv with kernel/requirements.txt)",
    )?;
    let out = Command::new(&py)
        .args(["-c", "import jupyter_client, nbclient, nbconvert, nbformat"])
        .output()
        .map_err(|e| {
            format!(
                "cannot run IXMAP_PYTHON={}: {e}",
                PathBuf::from(&py).display()
            )
        })?;
    if !out.status.success() {
        return Err(format!(
            "IXMAP_PYTHON={} lacks kernel/requirements.txt: {}",
            PathBuf::from(&py).display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(py))
}

fn run_script(py: &PathBuf, script: &str, arg: &str) -> Result<(), Failed> {
    let out = Command::new(py)
        .arg(root().join("tests/jupyter").join(script))
        .arg(arg)
        .env("IXMAP_BIN", env!("CARGO_BIN_EXE_ixmap"))
        .current_dir(root())
        .output()
        .map_err(|e| format!("cannot run {script}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines().filter(|l| {
        l.starts_with("latency ")
            || l.starts_with("interrupt ")
            || l.starts_with("tour")
            || l.starts_with("parent_exit")
            || l.starts_with("connection_loss")
            || l.contains("code cells ran")
    }) {
        println!("    {line}");
    }
    if !out.status.success() {
        return Err(format!(
            "{script} {arg} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(())
}

fn main() {
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    let required = std::env::var("IXMAP_REQUIRE_JUPYTER").as_deref() == Ok("1");
    let py = python();
    if let Err(why) = &py {
        if required {
            println!("IXMAP_REQUIRE_JUPYTER=1 but {why}");
        } else {
            println!("skipping the Jupyter kernel tests: {why}");
        }
    }
    let mut trials = Vec::new();
    let mut add = |name: String, script: &'static str, arg: &'static str| {
        let py = py.clone();
        let ignored = py.is_err() && !required;
        trials.push(
            Trial::test(name, move || match py {
                Ok(py) => run_script(&py, script, arg),
                Err(why) => Err(why.into()),
            })
            .with_ignored_flag(ignored),
        );
    };
    for t in CLIENT_TESTS {
        add(format!("client::{t}"), "client.py", t);
    }
    for t in STOP_ON_ERROR_TESTS {
        add(format!("stop_on_error::{t}"), "stop_on_error.py", t);
    }
    add(
        "notebook::tour_runs_without_error".into(),
        "notebook.py",
        "execute",
    );
    add(
        "notebook::html_has_svg_and_tables".into(),
        "notebook.py",
        "html",
    );
    libtest_mimic::run(&args, trials).exit();
}
