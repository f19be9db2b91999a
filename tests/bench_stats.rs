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
