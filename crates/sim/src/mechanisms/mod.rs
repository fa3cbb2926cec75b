//! Mechanisms from the source documents that change when a sender (re)transmits, each a
//! plug-in in its own file that acts on an endpoint only through the `Mechanism` hooks
//! below and `tcp::hooks`:
//! * `syn_optimizer`: document 000's SYN optimizer, a copy of the SYN (SYN/ACK) resent
//!   beside the endpoint's own timers;
//! * `sfr`: Super Fast Retransmit (document 001), a second timer beside the RTO;
//! * `min_rto_004`: the delayed-ACK-aware minimum RTO (document 004), a retransmission-
//!   timer hook.
//!
//! The world keeps, per connection and side, the mechanisms that side runs (`for_side`:
//! an empty list, no allocation, when the scenario configures none), calls their hooks
//! where the endpoint sends, receives and is established, and keeps each one's timer in
//! the event queue under one event kind.
//!
//! A file here is its own registration: the crate's build script declares every file of
//! this folder as a module and lists its `ORDER` and `plug` (see `PLUGINS`).

include!(concat!(env!("OUT_DIR"), "/mechanisms.rs"));

use crate::packet::Segment;
use crate::report::ConnReport;
use crate::scenario::Mechanisms;
use crate::tcp::Tcb;
use crate::time::Instant;

/// What a mechanism's timer did when it fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fired {
    /// Nothing (the reason to act passed).
    Nothing,
    /// It changed the endpoint (e.g. queued a retransmission): the endpoint is pumped.
    Endpoint,
    /// It sends this copy itself, beside the endpoint (the endpoint knows nothing of it).
    Send(Segment),
}

/// A mechanism beside one endpoint of one connection. Every hook but the timer's has a
/// default that does nothing: a mechanism implements the ones it needs.
pub trait Mechanism {
    /// The endpoint was created: a mechanism that acts inside TCP installs its hook here.
    fn attach(&mut self, _tcb: &mut Tcb) {}
    /// A segment reached the endpoint, before TCP processes it.
    fn on_receive(&mut self, _seg: &Segment) {}
    /// The handshake just completed at this endpoint.
    fn on_established(&mut self, _tcb: &Tcb, _now: Instant) {}
    /// A segment acknowledged new data of this endpoint.
    fn on_ack(&mut self, _tcb: &Tcb, _now: Instant) {}
    /// The endpoint is about to send `out` (one pump's segments, in order).
    fn on_send(&mut self, _tcb: &Tcb, _out: &[Segment], _now: Instant) {}
    /// When the mechanism's timer should fire (None: not running).
    fn deadline(&self) -> Option<Instant> {
        None
    }
    /// Its timer fired at `now` (the deadline it gave).
    fn on_timer(&mut self, _tcb: Option<&mut Tcb>, _now: Instant) -> Fired {
        Fired::Nothing
    }
    /// Adds what it did to the connection's report (once, when the connection is kept).
    fn report(&self, _r: &mut ConnReport) {}
}

/// One side's mechanism with the deadline of its timer already in the event queue.
pub struct Plugged {
    pub mechanism: Box<dyn Mechanism>,
    pub scheduled: Option<Instant>,
}

impl Plugged {
    /// The deadline to queue, if it moved since the last one queued (None when it did not
    /// or the timer stopped; a queued event whose deadline moved is ignored when it fires).
    pub fn reschedule(&mut self) -> Option<Instant> {
        let want = self.mechanism.deadline();
        if want == self.scheduled {
            return None;
        }
        self.scheduled = want;
        want
    }
}

/// A mechanism's plug: the mechanism configured to run beside one side (`client` or the
/// server) of a connection to `port`, None when the scenario does not run it there.
pub type Plug = fn(configured: &Mechanisms, client: bool, port: u16) -> Option<Box<dyn Mechanism>>;

/// The mechanisms in the order their files declare: hooks are called and timers queued in
/// it, so it decides which of two timers due at the same instant fires first.
const PLUGINS: [(u8, Plug); DECLARED.len()] = by_order(DECLARED);

/// `declared` sorted by order; two mechanisms declaring the same place fail the build.
const fn by_order<const N: usize>(mut declared: [(u8, Plug); N]) -> [(u8, Plug); N] {
    let mut i = 1;
    while i < N {
        let mut j = i;
        while j > 0 && declared[j - 1].0 >= declared[j].0 {
            assert!(declared[j - 1].0 != declared[j].0, "two mechanisms declare the same ORDER");
            let t = declared[j];
            declared[j] = declared[j - 1];
            declared[j - 1] = t;
            j -= 1;
        }
        i += 1;
    }
    declared
}

/// The mechanisms configured to run beside one side of a connection to `port`, in
/// `PLUGINS` order.
pub fn for_side(configured: &Mechanisms, client: bool, port: u16) -> Vec<Plugged> {
    PLUGINS
        .iter()
        .filter_map(|(_, plug)| plug(configured, client, port))
        .map(|mechanism| Plugged { mechanism, scheduled: None })
        .collect()
}
