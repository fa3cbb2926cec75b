//! A SYN flood's tries are held compactly (`track::syn_try`): the tracker's memory per try,
//! measured by the allocator. Alone in its test binary, so that no other test's
//! allocations are counted.

mod common;
use common::*;
use shortflow_trace::track::{Conn, Tracker, TrackerConfig};
use shortflow_trace::Endpoint;

#[test]
fn a_flood_of_unanswered_syns_is_held_in_little_memory() {
    // 200,000 SYNs from as many ports in 2 s, none answered: held as tries, not as
    // connections of 2 kB each. The allocator is asked how much the tracker holds.
    let mut tr = Tracker::new(TrackerConfig::default(), |_: &Conn| {});
    let before = allocated();
    for i in 0..200_000u32 {
        let mut s = seg(true, i, 0, S, 0);
        s.src = Endpoint::v4([10, 1, (i >> 8) as u8, i as u8], 1024 + (i % 60_000) as u16);
        tr.observe(u64::from(i) * 10_000, &s);
    }
    assert_eq!(tr.open_connections(), 200_000);
    let per_try = (allocated() - before) / 200_000;
    // A try's 128 bytes and its end time, its share of the hash table, and the room
    // vectors grown by doubling keep spare; a connection held in full took 2.2 kB.
    assert!(per_try <= 256, "{per_try} bytes a try");
    let _ = tr.finish();
}

/// Bytes this process has allocated and not freed (glibc's `mallinfo2`).
fn allocated() -> usize {
    #[repr(C)]
    struct MallInfo2 {
        arena: usize,
        ordblks: usize,
        smblks: usize,
        hblks: usize,
        hblkhd: usize,
        usmblks: usize,
        fsmblks: usize,
        uordblks: usize,
        fordblks: usize,
        keepcost: usize,
    }
    extern "C" {
        fn mallinfo2() -> MallInfo2;
    }
    // SAFETY: a glibc function without arguments that returns a plain struct.
    let m = unsafe { mallinfo2() };
    m.uordblks + m.hblkhd
}
