//! Connection vectors written as tmix's text read back as written: for random vectors,
//! sequential and concurrent, `parse(format(v))` gives the vectors as `writable` puts
//! them, and `writable` changes nothing it already put. (A request left unanswered in its
//! epoch followed by a response alone in the next once gave a file that did not read back:
//! the text reads the two as one epoch.)

use proptest::prelude::*;
use shortflow_scenario::abt::{format, parse, writable, Adu, ConnVector, Epoch, Units};

/// Sizes with zeros among them (epochs without request or response), waits likewise.
fn size() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), 1u64..2_000_000]
}

fn epoch() -> impl Strategy<Value = Epoch> {
    (size(), 0u64..5_000_000, size(), 0u64..5_000_000).prop_map(|(request, response_delay_us, response, interval_us)| Epoch {
        request,
        response_delay_us,
        response,
        interval_us,
    })
}

fn adu() -> impl Strategy<Value = Adu> {
    (1u64..2_000_000, 0u64..5_000_000).prop_map(|(bytes, wait_us)| Adu { bytes, wait_us })
}

fn vector() -> impl Strategy<Value = ConnVector> {
    let units = prop_oneof![
        prop::collection::vec(epoch(), 1..8).prop_map(Units::Sequential),
        (prop::collection::vec(adu(), 1..5), prop::collection::vec(adu(), 1..5)).prop_map(|(a, b)| Units::Concurrent([a, b])),
    ];
    (0u64..1_000_000_000, 0u64..1000, 0u64..2_000_000, 0u32..=1_000_000, 0u32..=1_000_000, units).prop_map(
        |(start_us, id, min_rtt_us, l0, l1, units)| ConnVector {
            start_us,
            id,
            window: [0, 0],
            min_rtt_us,
            // Six decimals, as the text carries them.
            loss: [f64::from(l0) / 1e6, f64::from(l1) / 1e6],
            units,
        },
    )
}

fn as_written(v: &ConnVector) -> ConnVector {
    let units = match &v.units {
        Units::Sequential(e) => Units::Sequential(writable(e)),
        c => c.clone(),
    };
    ConnVector { units, ..v.clone() }
}

proptest! {
    #[test]
    fn written_vectors_read_back_as_written(vs in prop::collection::vec(vector(), 1..6)) {
        let text = format(&vs);
        let back = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let want: Vec<ConnVector> = vs.iter().map(as_written).collect();
        prop_assert_eq!(&back, &want, "{}", text);
        for v in &want {
            if let Units::Sequential(e) = &v.units {
                prop_assert_eq!(&writable(e), e);
            }
        }
    }
}

#[test]
fn an_unanswered_request_and_a_lone_response_are_one_epoch() {
    let e = |request, response_delay_us, response, interval_us| Epoch { request, response_delay_us, response, interval_us };
    let epochs = [e(400, 0, 0, 702_556), e(0, 0, 100, 1_170_109), e(100, 50_284, 150_000, 0)];
    assert_eq!(writable(&epochs), [e(400, 702_556, 100, 1_170_109), e(100, 50_284, 150_000, 0)]);
}
