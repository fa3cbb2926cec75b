//! Each congestion control and recovery the scenario model names is built as the plug-in
//! of that name (the enums are matched exhaustively; this checks the arms point right).

use shortflow_scenario::profile::{self, CongestionControlName, RecoveryName, PROFILE_NAMES};
use shortflow_sim::tcp::{cc, recovery};

#[test]
fn every_name_builds_the_plug_in_of_that_name() {
    for name in PROFILE_NAMES {
        let c = profile::profile(name).unwrap();
        for &cc_name in CongestionControlName::ALL {
            assert_eq!(cc::build(cc_name, &c, 1).name(), cc_name.name(), "{name}");
        }
    }
    for &r in RecoveryName::ALL {
        assert_eq!(recovery::build(r).name(), r.name());
    }
}
