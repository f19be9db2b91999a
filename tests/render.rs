//! Renderers read values; these tests make the values with a session, from outside both
//! (the renderers never import the interpreter).

use ixmap::render::{html, latex};
use ixmap::{Session, Value};

fn value(src: &str) -> Value {
    let mut s = Session::new();
    let o = s.execute(src).pop().expect("one statement");
    o.result.expect("statement succeeds")
}

#[test]
fn map_domain_is_a_table_with_one_row_per_variable_and_constraint() {
    let h = html::html(&value("(d0, d1)[s0] -> (d0 * 8 + s0, d1), domain: d0 in [0, 9], d1 in [0, 15], s0 in [0, 7], d0 + s0 in [0, 12]"));
    assert!(
        h.contains("<code>(d0, d1)[s0] -&gt; (d0 * 8 + s0, d1)</code>"),
        "{h}"
    );
    assert_eq!(
        h.matches("<tr>").count(),
        1 + 4,
        "header + 3 variables + 1 constraint: {h}"
    );
    assert!(
        h.contains(">s0</td>") && h.contains(">range variable</td>") && h.contains(">[0, 7]</td>")
    );
    assert!(
        h.contains(">d0 + s0</td>")
            && h.contains(">constraint</td>")
            && h.contains(">[0, 12]</td>")
    );
}

#[test]
fn booleans_text_and_errors_are_escaped() {
    assert!(html::html(&Value::Bool(true)).contains(">true</code>"));
    assert_eq!(
        html::html(&Value::Text("a < b".into())),
        "<pre>a &lt; b</pre>"
    );
    let src = "inverse (d0) -> (d7)";
    let mut s = Session::new();
    let d = s
        .execute(src)
        .pop()
        .expect("one")
        .result
        .expect_err("d7 is unknown");
    let h = html::diagnostic(&d, src);
    assert!(
        h.contains("error:") && h.contains("1:") && h.contains("-&gt; (d7)"),
        "{h}"
    );
}

fn check(src: &str, expected: &str) {
    let mut s = Session::new();
    let v = s
        .execute(src)
        .pop()
        .expect("one statement")
        .result
        .expect("a map");
    assert_eq!(
        latex::latex(&v).expect("maps have LaTeX"),
        expected,
        "\n input: {src}"
    );
}

#[test]
fn divisions_become_brackets_and_names_get_subscripts() {
    check(
        "(d0, d1) -> (d0 floordiv 4, d1 mod 8), domain: d0 in [0, 15], d1 in [0, 7]",
        "$$\\begin{aligned}(d_{0}, d_{1}) &\\mapsto \\left(\\left\\lfloor \\frac{d_{0}}{4} \\right\\rfloor,\\; d_{1} \\bmod 8\\right)\\\\\n&d_{0} \\in [0, 15],\\; d_{1} \\in [0, 7]\\end{aligned}$$",
    );
}

#[test]
fn coefficients_lead_and_symbols_are_bracketed() {
    check(
        "(th_x)[s0] -> (th_x * 4 + s0 - 1), domain: th_x in [0, 3], s0 in [0, 3]",
        "$$\\begin{aligned}(\\mathrm{th\\_x})[s_{0}] &\\mapsto \\left(4 \\mathrm{th\\_x} + s_{0} - 1\\right)\\\\\n&\\mathrm{th\\_x} \\in [0, 3],\\; s_{0} \\in [0, 3]\\end{aligned}$$",
    );
}
