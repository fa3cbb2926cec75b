//! `GapClass::is_standard`, public API with no caller inside the crate: the three mutants
//! cargo-mutants left alive in diag/ladder.rs (BENCHMARKS.md, mutation check) all lived here.

use shortflow_trace::GapClass;

#[test]
fn standard_means_a_step_of_either_ladder() {
    for gap in [1.0, 2.0, 3.0, 6.0, 64.0, 384.0] {
        assert!(GapClass::classify(gap).is_standard(), "{gap} s is a ladder step");
    }
    for gap in [0.0, 0.2, 1.5, 3.4, 1000.0] {
        assert!(!GapClass::classify(gap).is_standard(), "{gap} s is outside");
    }
}
