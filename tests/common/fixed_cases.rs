//! A property run with a fixed number of cases, for tests whose every case compiles C++
//! for the CPU (a second or more): not `PROPTEST_CASES` (test-all's 1000 would be an
//! hour), with proptest's shrinking.

use proptest::prelude::*;

pub fn run<S: Strategy>(
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{e}");
    }
}
