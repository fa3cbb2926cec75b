//! RFC 6298 (5.7) in the RTO estimator: the one mutant cargo-mutants left alive in
//! tcp/rtte.rs (BENCHMARKS.md, mutation check) made `reset_after_syn_loss` do nothing, and
//! no test noticed: after a lost SYN and no RTT sample, data must start from the 3 s
//! fallback (Linux: TCP_TIMEOUT_FALLBACK), not from the backed-off SYN timer.

use shortflow_sim::profile::RtoConfig;
use shortflow_sim::tcp::rtte::RttEstimator;
use shortflow_sim::time::Duration;

fn linux() -> RtoConfig {
    RtoConfig {
        initial: Duration::from_secs(1),
        min: Duration::from_millis(200),
        max: Duration::from_secs(120),
        granularity: Duration::from_millis(1),
        min_on_variance: true,
        after_syn_loss: Some(Duration::from_secs(3)),
    }
}

#[test]
fn a_lost_syn_without_a_sample_restarts_data_at_the_fallback() {
    let mut e = RttEstimator::new(linux());
    e.back_off(); // the SYN timer expired once: 2 s armed next
    assert_eq!(e.timer(), Duration::from_secs(2));
    e.reset_after_syn_loss(Duration::from_secs(3));
    assert_eq!((e.timer(), e.backoff), (Duration::from_secs(3), 0));
    e.reset_after_syn_loss(Duration::from_secs(500)); // capped at the maximum (2.5)
    assert_eq!(e.timer(), Duration::from_secs(120));
}

#[test]
fn a_measured_rto_is_kept_after_a_lost_syn() {
    let mut e = RttEstimator::new(linux());
    e.sample(Duration::from_millis(100)); // SRTT 100 + max(200, 4 x 50) = 300 ms
    e.back_off();
    e.reset_after_syn_loss(Duration::from_secs(3));
    assert_eq!((e.timer(), e.backoff), (Duration::from_millis(300), 0));
}
