//! Fuzzes the front end: any bytes, as UTF-8 text, are split into statements, parsed and
//! run in a fresh session. Every outcome must be a value or a diagnostic whose span lies in
//! the input; a panic, an abort or a stack overflow is a bug.
//!
//! Run with `cargo +nightly fuzz run parse` from the repository root.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    let _ = ixmap::syntax::is_complete(src);
    for stmt in ixmap::syntax::parse(src) {
        if let Err(d) = stmt {
            let _ = d.render(src);
        }
    }
    let mut session = ixmap::Session::new();
    for o in session.execute(src) {
        if let Err(d) = &o.result {
            if let Some(span) = d.span {
                assert!(span.start <= span.end && span.end <= src.len(), "span outside the input");
            }
            let _ = d.render(src);
        }
    }
});
