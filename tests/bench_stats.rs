//! The statistics `bench` and `tune` report: times never print as zero, and a variant is
//! called faster or slower only when the sign-test interval of per-round ratios excludes 1
//! with at least 90% confidence.

use ixmap::gpu::bench::{ms, Ratio};
use std::cmp::Ordering;

#[test]
fn small_times_keep_three_significant_digits() {
    for (s, want) in [
        (0.0123, "12.3"),
        (1.5e-7, "0.000150"),
        (4.56e-5, "0.0456"),
        (0.25, "250.0"),
    ] {
        assert_eq!(ms(s), want, "{s} s");
    }
    for k in 1..40 {
        let s = 10f64.powi(-k) * 3.0;
        assert_ne!(
            ms(s).trim_start_matches(['0', '.']),
            "",
            "{s} s printed as {}",
            ms(s)
        );
    }
}

#[test]
fn the_interval_is_between_order_statistics() {
    // Ten rounds: the sign test's interval is the 2nd smallest to the 2nd largest ratio,
    // with confidence 1 - 2 (1 + 10) / 1024.
    let base: Vec<f64> = (1..=10).map(|k| k as f64).collect();
    let var = vec![1.0; 10];
    let r = Ratio::paired(&base, &var).expect("ten rounds");
    assert_eq!((r.lo, r.hi), (2.0, 9.0));
    assert!((r.confidence - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
    assert_eq!(r.median, 5.5);
    assert_eq!(r.verdict(), Ordering::Greater);
}

#[test]
fn a_verdict_needs_the_interval_to_exclude_one() {
    let ones = vec![1.0; 10];
    // Twice as fast every round: faster.
    let r = Ratio::paired(&ones, &[0.5; 10]).unwrap();
    assert_eq!(r.verdict(), Ordering::Greater);
    assert!(r.describe().starts_with("2.00x faster"), "{}", r.describe());
    // Slower every round: reads "slower", never "0.5x faster".
    let r = Ratio::paired(&ones, &[2.0; 10]).unwrap();
    assert_eq!(r.verdict(), Ordering::Less);
    assert!(r.describe().starts_with("2.00x slower"), "{}", r.describe());
    // Faster in most rounds but not in enough of them: no verdict.
    let noisy = [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 2.0, 2.0, 2.0, 0.5];
    let r = Ratio::paired(&ones, &noisy).unwrap();
    assert_eq!(r.verdict(), Ordering::Equal, "{r:?}");
    assert!(
        r.describe().starts_with("no clear difference"),
        "{}",
        r.describe()
    );
    // Three rounds cannot give 90%: too few to tell, however clear they look.
    let r = Ratio::paired(&[1.0; 3], &[0.5; 3]).unwrap();
    assert_eq!(r.verdict(), Ordering::Equal);
    assert!(
        r.describe().starts_with("too few rounds"),
        "{}",
        r.describe()
    );
}

#[test]
fn a_slower_factor_has_its_interval_in_its_own_terms() {
    // Each round 1.2x to 1.33x slower: the speed-ups are 0.75 to 0.83, but the line reads
    // `1.25x slower (.. CI 1.2x to 1.33x ..)`, never a factor above 1 beside an interval
    // below it (the GPU run of 2026-11-27 printed `1.01x slower (96% CI 0.98 to 1.00, ..)`).
    let ones = vec![1.0; 10];
    let var = [1.2, 1.2, 1.25, 1.25, 1.25, 1.25, 1.25, 1.3, 1.3, 1.3333];
    let r = Ratio::paired(&ones, &var).unwrap();
    assert_eq!(r.verdict(), Ordering::Less);
    let d = r.describe();
    assert!(d.starts_with("1.25x slower ("), "{d}");
    let ci = d.split("CI ").nth(1).expect("an interval");
    let mut it = ci.split(|c: char| c == ' ' || c == ',');
    let lo: f64 = it.next().unwrap().parse().unwrap();
    assert_eq!(it.next(), Some("to"));
    let hi: f64 = it.next().unwrap().parse().unwrap();
    assert!(lo <= 1.25 && 1.25 <= hi && lo > 1.0, "{d}");
}
