//! Every rewrite rule of the simplifier is proven for all integers by z3
//! (`tests/smt/rules.py`), and every rule the simplifier runs has a proof there: a rule
//! added to `src/simplify/rules/` without its identity in the script fails this test.
//!
//! Needs a Python with the `z3-solver` wheel (`IXMAP_PYTHON`, else `python3`);
//! `scripts/test-all` installs it into its venv and sets `IXMAP_REQUIRE_SMT=1`, so there a
//! missing z3 is a failure. Elsewhere the test says it was skipped.

use std::collections::BTreeSet;
use std::process::Command;

fn python() -> String {
    std::env::var("IXMAP_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn has_z3(py: &str) -> bool {
    Command::new(py)
        .args(["-c", "import z3"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn every_rule_is_proven_by_z3() {
    let py = python();
    if !has_z3(&py) {
        assert!(
            std::env::var_os("IXMAP_REQUIRE_SMT").is_none(),
            "IXMAP_REQUIRE_SMT is set but {py} cannot import z3 (pip install -r tests/smt/requirements.txt)"
        );
        eprintln!("skipped: {py} cannot import z3 (pip install -r tests/smt/requirements.txt)");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/smt/rules.py");
    let out = Command::new(&py)
        .arg(script)
        .output()
        .expect("runs the SMT script");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "a rule was not proven:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let proven: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("proved "))
        .map(|l| l.split(" (").next().unwrap_or(l).to_string())
        .collect();
    let mut needed: BTreeSet<String> = ixmap::simplify::rules::all_rules()
        .iter()
        .map(|r| r.name.to_string())
        .collect();
    // The analysis' own rewrite (a class whose interval is one point is that constant).
    needed.insert("interval-constant".into());
    // The congruence analysis' transfer functions (congruence.rs) and the constraint facts
    // (rewrite.rs) decide rewrites too.
    for n in [
        "congruence-add",
        "congruence-mul",
        "congruence-floordiv",
        "congruence-ceildiv",
        "congruence-mod",
        "congruence-minmax",
        "congruence-snap",
        "constraint-fact",
    ] {
        needed.insert(n.into());
    }
    let missing: Vec<_> = needed.difference(&proven).collect();
    assert!(
        missing.is_empty(),
        "rules without an SMT proof: {missing:?}\n{text}"
    );
    for n in [
        "normalise-floordiv-negative",
        "normalise-ceildiv-negative",
        "normalise-mod-negative",
    ] {
        assert!(proven.contains(n), "{n} not proven\n{text}");
    }
}
