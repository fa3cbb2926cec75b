//! The scenario model's names of congestion controls and recoveries are the simulator's
//! plug-ins: every name the model accepts runs here, and every profile names known ones.

use shortflow_scenario::profile::{self, CONGESTION_CONTROL_NAMES, PROFILE_NAMES, RECOVERY_NAMES, SPURIOUS_RTO_NAMES};
use shortflow_sim::tcp::{cc, recovery, spurious};

#[test]
fn every_name_the_model_accepts_is_a_simulator_plug_in() {
    let c = profile::profile("linux").unwrap();
    for name in CONGESTION_CONTROL_NAMES {
        assert!(cc::by_name(name, &c, 1).is_some(), "{name}");
    }
    assert_eq!(CONGESTION_CONTROL_NAMES, cc::NAMES);
    for name in RECOVERY_NAMES {
        assert!(recovery::by_name(name).is_some(), "{name}");
        assert_eq!(profile::needs_sack(name), recovery::needs_sack(name), "{name}");
    }
    assert_eq!(RECOVERY_NAMES, recovery::NAMES);
    for name in SPURIOUS_RTO_NAMES {
        assert!(spurious::by_name(name).is_some(), "{name}");
    }
    assert_eq!(SPURIOUS_RTO_NAMES, spurious::NAMES);
}

#[test]
fn every_profile_names_known_plug_ins() {
    for name in PROFILE_NAMES {
        let c = profile::profile(name).unwrap();
        assert!(cc::by_name(&c.congestion_control, &c, 1).is_some(), "{name}");
        assert!(recovery::by_name(&c.recovery).is_some(), "{name}");
        assert!(spurious::by_name(&c.spurious_rto).is_some(), "{name}");
    }
}
