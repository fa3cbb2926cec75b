//! The simulated world: a topology of hosts and links, the connections a workload starts
//! on it as they arrive, and the event loop that drives it all.

use std::rc::Rc;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;

use crate::app::{ClientApp, Later, ServerApp};
use crate::byte_loss::ByteLoss;
use crate::capture::CaptureSink;
use crate::engine::EventQueue;
use crate::loss::{Fate, LossModel};
use crate::mechanisms::{self, Fired, Plugged};
use crate::packet::Segment;
use crate::profile::StackConfig;
use crate::report::{ConnReport, LinkReport, RequestReport, RunReport, Summary, Totals};
use crate::scenario::{CapturePoint, Scenario};
use crate::tcp::{State, Tcb, TimerKind, TIMER_KINDS};
use crate::time::{Duration, Instant};
use crate::topology::Topology;
use crate::workload::{self, ConnSpec, Workload};

/// What a run should keep besides the per-connection report.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Hand every segment the capture point sees to the run's `CaptureSink`.
    pub capture: bool,
    /// Keep each connection's delivery timeline.
    pub timeline: bool,
    /// Keep only the run's totals (`Summary::totals`): each connection's report is added
    /// to them when it finishes and dropped, so memory follows the connections open at
    /// once, not the run's length (`RunReport::connections` stays empty). For runs of
    /// millions of connections whose capture is the product (the trace generator).
    pub totals_only: bool,
}

/// What a run may use at most before it stops with a `LimitError` (0: no limit).
#[derive(Debug, Clone, Copy, Default)]
pub struct Budget {
    /// Bytes of the run's own data: connections, the capture sink's state, waiting events.
    pub max_memory: u64,
    pub max_events: u64,
}

/// A run stopped because it reached its budget; the message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LimitError(pub String);

/// Events between two looks at the budget (a look costs a few additions). An event may
/// open a connection (~2 kB with its two TCBs): 4,096 of them pass the limit by at most
/// ~8 MB before the look that stops the run.
const BUDGET_EVERY: u64 = 1 << 12;

#[derive(Clone, Copy)]
enum Event {
    /// `seg` crossed hop `hop` of its route.
    Arrive {
        hop: u8,
        seg: Segment,
    },
    Timer {
        conn: u32,
        client: bool,
        kind: TimerKind,
    },
    /// The workload's next connection arrives.
    Start,
    NextRequest {
        conn: u32,
    },
    Respond {
        conn: u32,
    },
    /// The timer of mechanism `slot` of one side (`Conn::mechanisms`).
    Mechanism {
        conn: u32,
        client: bool,
        slot: u8,
    },
    /// A segment that arrived at a host with a `processing_time` reaches its TCP.
    Process {
        seg: Segment,
        client: bool,
    },
}

struct Conn {
    spec: ConnSpec,
    client: Option<Box<Tcb>>,
    server: Option<Box<Tcb>>,
    /// Timer deadlines already in the event queue: [client, server][kind].
    scheduled: [[Option<Instant>; 3]; 2],
    client_app: ClientApp,
    server_app: ServerApp,
    start: Instant,
    first_synack_at_client: Option<Instant>,
    last_syn_before_synack: Option<Instant>,
    report: ConnReport,
    done: bool,
    /// The mechanisms each side runs ([client, server]; empty, unallocated, without).
    mechanisms: [Vec<Plugged>; 2],
    /// Per side: when the last segment that arrived reaches TCP (`processing_time`).
    processed_until: [Instant; 2],
    /// What the capture point saw of this connection's handshake.
    seen: Seen,
}

/// One connection's handshake as the capture point saw it (for `Totals`).
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    syns: u32,
    synacks: u32,
    /// The client's ACK of a SYN/ACK (a segment with ACK and without SYN or RST).
    client_ack: bool,
}

impl Conn {
    /// Bytes the connection holds from the allocator beside itself (its TCBs, its
    /// exchanges, its application's and its report's lists), each allocation with the
    /// allocator's own 16 bytes: the run's memory budget counts open connections by it.
    fn heap_bytes(&self) -> usize {
        const PER_ALLOCATION: usize = 16;
        let tcbs = [&self.client, &self.server].into_iter().flatten();
        let tcb_bytes: usize = tcbs.map(|t| std::mem::size_of::<Tcb>() + t.heap_bytes() + 8 * PER_ALLOCATION).sum();
        let exchanges = self.spec.exchanges.capacity() * std::mem::size_of::<crate::workload::Exchange>()
            + self.spec.exchanges.iter().map(|x| x.response_writes.capacity() * 8 + PER_ALLOCATION).sum::<usize>();
        let mechanisms: usize = self
            .mechanisms
            .iter()
            .map(|side| {
                let boxes: usize = side.iter().map(|p| std::mem::size_of_val(&*p.mechanism) + PER_ALLOCATION).sum();
                side.capacity() * std::mem::size_of::<Plugged>() + boxes
            })
            .sum();
        tcb_bytes + exchanges + mechanisms + self.client_app.heap_bytes() + self.report.heap_bytes() + 4 * PER_ALLOCATION
    }

    fn new(spec: ConnSpec) -> Self {
        Conn {
            spec,
            client: None,
            server: None,
            scheduled: [[None; 3]; 2],
            client_app: ClientApp::default(),
            server_app: ServerApp::default(),
            start: Instant::ZERO,
            first_synack_at_client: None,
            last_syn_before_synack: None,
            report: ConnReport::default(),
            done: false,
            mechanisms: [Vec::new(), Vec::new()],
            processed_until: [Instant::ZERO; 2],
            seen: Seen::default(),
        }
    }
}

/// A run's world; `'s` is the capture sink's borrow (see `capture_to`).
pub struct World<'s> {
    sc: Rc<Scenario>,
    client_cfg: Rc<StackConfig>,
    server_cfg: Rc<StackConfig>,
    q: EventQueue<Event>,
    topo: Topology,
    workload: Box<dyn Workload>,
    loss: LossModel,
    /// Losses by byte (`drop.*_bytes`), only when the scenario names some.
    byte_loss: Option<ByteLoss>,
    queue_rng: ChaCha8Rng,
    isn_rng: ChaCha8Rng,
    /// Open connections by id; a connection leaves when both ends are closed.
    conns: FxHashMap<u32, Conn>,
    next_id: u32,
    /// Each connection's pair by id (4 bytes a connection), so packets still in flight
    /// after their connection left reach the capture point.
    pair_of: Vec<u32>,
    /// With `path.rtt_max`: each connection's extra two-way delay by id (its drawn RTT
    /// less `path.rtt`; empty otherwise), and the stream it is drawn from.
    extra_rtt: Vec<Duration>,
    rtt_rng: ChaCha8Rng,
    /// Reports of the connections that left (none with `opts.totals_only`).
    reports: Vec<ConnReport>,
    /// Their memory, lists included (`check_budget`).
    reports_bytes: usize,
    /// Every connection that left, added up.
    totals: Totals,
    /// Sum of the completion times in `totals` (for the mean with `opts.totals_only`).
    complete_sum_s: f64,
    /// Connections open at once, at most.
    peak_open: usize,
    opts: RunOptions,
    /// Where captured segments go as they are captured (with `opts.capture`).
    sink: Option<&'s mut dyn CaptureSink>,
    dropped: u64,
    later: Vec<Later>,
    /// An empty buffer with capacity, swapped with a control block's `out` in `pump`.
    out_spare: Vec<Segment>,
    /// Time of the last event that did something (cancelled timers still pop later).
    last_active: Instant,
}

impl<'s> World<'s> {
    /// The world of scenario `sc`.
    pub fn new(sc: Scenario, opts: RunOptions) -> Self {
        Self::with_rate(sc, opts, None)
    }

    /// The same, with `rate` (connections/s) instead of a rate-driven workload's own (the
    /// calibration's guess for a target load, or a calibrated run's rate replayed).
    pub fn with_rate(sc: Scenario, opts: RunOptions, rate: Option<f64>) -> Self {
        let topo = Topology::build(sc.topology());
        let loss = LossModel::for_scenario(&sc);
        let mut workload = workload::build(&sc, topo.pairs(), rate);
        let first = workload.first();
        let mut w = World {
            client_cfg: Rc::new(sc.client.clone()),
            server_cfg: Rc::new(sc.server.clone()),
            q: EventQueue::default(),
            topo,
            workload,
            byte_loss: ByteLoss::new(&sc.drop),
            loss,
            queue_rng: ChaCha8Rng::seed_from_u64(sc.seed ^ 0x5155_4555),
            isn_rng: ChaCha8Rng::seed_from_u64(sc.seed ^ 0x0153_4e53),
            conns: FxHashMap::default(),
            next_id: 0,
            pair_of: Vec::new(),
            extra_rtt: Vec::new(),
            rtt_rng: ChaCha8Rng::seed_from_u64(sc.seed ^ 0x5254_5452),
            reports: Vec::new(),
            reports_bytes: 0,
            totals: Totals::default(),
            complete_sum_s: 0.0,
            peak_open: 0,
            opts,
            sink: None,
            dropped: 0,
            later: Vec::new(),
            out_spare: Vec::new(),
            last_active: Instant::ZERO,
            sc: Rc::new(sc),
        };
        if let Some(t) = first {
            w.q.schedule(t, Event::Start);
        }
        w
    }

    /// Hands every segment the capture point sees to `sink`, as it is captured (when the
    /// options ask for a capture). Segments come in time order: the queue pops events in
    /// time order and a capture is stamped with its event's time.
    pub fn capture_to(mut self, sink: &'s mut dyn CaptureSink) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Runs to the end (or the time limit) and reports.
    pub fn run(self) -> RunReport {
        self.try_run(&Budget::default()).expect("no budget, no limit")
    }

    /// Runs to the end (or the time limit) within `budget`: refused at once when the
    /// connections alone need more memory, stopped when the capture sink's state and
    /// waiting events pass it or the events pass `max_events`. Stops early, with the
    /// report so far, when the sink failed (its owner reports why).
    pub fn try_run(mut self, budget: &Budget) -> Result<RunReport, LimitError> {
        let conns_bytes = Self::check_connections(&self.sc, self.opts, budget)?;
        let limit = Instant::ZERO + self.sc.time_limit;
        while self.dispatch_next(limit) {
            if self.q.processed.is_multiple_of(BUDGET_EVERY) {
                if self.sink.as_ref().is_some_and(|s| s.failed()) {
                    break;
                }
                self.check_budget(budget, conns_bytes)?;
            }
        }
        Ok(self.finish())
    }

    /// Gives `seg`, seen by the capture point at `now`, to the sink. Out of line: the
    /// three capture points sit in the per-packet path, and most runs capture nothing.
    #[inline(never)]
    fn capture(&mut self, now: Instant, seg: &Segment) {
        if let Some(sink) = self.sink.as_deref_mut() {
            sink.packet(now, seg);
        }
        self.totals.packets_captured += 1;
        if let Some(c) = self.conns.get_mut(&seg.conn) {
            let s = &mut c.seen;
            if seg.is_synack() {
                s.synacks += 1;
            } else if seg.is_syn() {
                s.syns += 1;
            } else if seg.from_client && seg.has(crate::packet::ACK) && !seg.has(crate::packet::RST) && s.synacks > 0 {
                s.client_ack = true;
            }
        }
    }

    /// The memory the connections of a scenario need, refused beyond `budget` (before a
    /// `World` allocates them): every connection keeps its record and report to the end;
    /// the two control blocks exist only while it is open (freed at close, see
    /// `check_done`), so they count once for a sequential workload, n times in parallel.
    /// A run that keeps totals only holds the open connections alone (counted as the run
    /// goes, `check_budget`).
    pub fn check_connections(sc: &Scenario, opts: RunOptions, budget: &Budget) -> Result<u64, LimitError> {
        // Vectors the simulator's applications cannot replay are refused before the run.
        workload::abt::check_replayable(sc, "the scenario").map_err(|e| LimitError(e.to_string()))?;
        let n = u64::from(sc.workload.connections);
        let open_at_once = if sc.workload.parallel { n } else { 1 };
        let timeline = if opts.timeline { 64 * std::mem::size_of::<(f64, u64)>() } else { 0 };
        let per_conn = (std::mem::size_of::<Conn>() + timeline) as u64;
        let tcbs = 2 * std::mem::size_of::<Tcb>() as u64 * open_at_once;
        let conns_bytes = per_conn * if opts.totals_only { open_at_once } else { n } + tcbs;
        if budget.max_memory > 0 && conns_bytes > budget.max_memory {
            return Err(LimitError(format!(
                "{n} connections need about {} of memory ({per_conn} bytes each, and {} for the {open_at_once} open \
                 at once), more than the limit of {}: lower workload.connections or raise --max-memory",
                human_bytes(conns_bytes),
                human_bytes(tcbs),
                human_bytes(budget.max_memory)
            )));
        }
        Ok(conns_bytes)
    }

    fn check_budget(&self, budget: &Budget, conns_bytes: u64) -> Result<(), LimitError> {
        let now = self.q.now();
        if budget.max_events > 0 && self.q.processed >= budget.max_events {
            return Err(LimitError(format!(
                "the run reached {} events at simulated time {now} without finishing: raise --max-events, \
                 or lower time_limit, {} or the retries (syn_retries, synack_retries)",
                self.q.processed,
                self.sc.workload.kind.size_keys()
            )));
        }
        // A pcap is written as the run goes: only the sink's own state counts (a few bytes
        // a connection for the pcap writer, every segment for a capture kept in memory).
        let kept = self.sink.as_ref().map_or(0, |s| s.memory());
        let waiting = self.q.allocated_bytes();
        // The connections open now and each one's pair (4 bytes) and drawn RTT; without
        // totals only, also the report of each that left (with its lists). A workload
        // whose connections are not known before the run (Poisson, PackMime) is held to
        // the limit by these; one that is (`check_connections`' estimate) by the larger.
        // Each open connection as a few of them measure (`Conn::heap_bytes`): their lists
        // and TCBs are alike in size, and measuring all at each look would cost a pass.
        let sample: Vec<usize> = self.conns.values().take(16).map(Conn::heap_bytes).collect();
        let heap = sample.iter().sum::<usize>() / sample.len().max(1);
        // The table by its capacity: its entries lie anywhere in it, so all of its pages
        // are soon touched. Within a look's events of growing (or an eighth of itself,
        // for a table whose growth is small anyway), by what growing holds at once: itself
        // and the table twice its size it moves into.
        let (cap, len) = (self.conns.capacity(), self.conns.len());
        let slots = if cap - len < (BUDGET_EVERY as usize).min(cap / 8) { 3 * cap } else { cap };
        let open = slots * (std::mem::size_of::<(u32, Conn)>() + 1)
            + len * heap
            + 4 * self.pair_of.len()
            + std::mem::size_of::<Duration>() * self.extra_rtt.len();
        let reports = if self.opts.totals_only { 0 } else { self.reports_bytes };
        let held = if self.opts.totals_only { conns_bytes } else { conns_bytes.max((open + reports) as u64) };
        let used = held + (kept + waiting + if self.opts.totals_only { open } else { 0 }) as u64;
        if budget.max_memory > 0 && used > budget.max_memory {
            return Err(LimitError(format!(
                "the run needs more than the memory limit of {} at simulated time {now} ({} held by the capture, \
                 {} events waiting): raise --max-memory, or lower time_limit or {}",
                human_bytes(budget.max_memory),
                human_bytes(kept as u64),
                self.q.len(),
                self.sc.workload.kind.size_keys()
            )));
        }
        Ok(())
    }

    /// Runs the next event before `limit`; false when none is left. The event is matched
    /// in its queue slot (`EventQueue::pop`), its fields copied out by the pattern.
    fn dispatch_next(&mut self, limit: Instant) -> bool {
        let Some((now, ev)) = self.q.pop(limit) else { return false };
        match *ev {
            Event::Arrive { hop, seg } => self.arrive(hop, seg, now),
            Event::Timer { conn, client, kind } => self.timer(conn, client, kind, now),
            Event::Start => self.start(now),
            Event::NextRequest { conn } => {
                let Some(c) = self.conns.get_mut(&conn) else { return true };
                if let Some(tcb) = c.client.as_deref_mut() {
                    c.client_app.send_request(tcb, &c.spec, now, &mut self.later);
                }
                self.pump(conn, true, now);
            }
            Event::Respond { conn } => {
                let Some(c) = self.conns.get_mut(&conn) else { return true };
                if let Some(tcb) = c.server.as_deref_mut() {
                    c.server_app.respond(tcb, &c.spec, now, &mut self.later);
                }
                self.pump(conn, false, now);
            }
            Event::Mechanism { conn, client, slot } => self.mechanism_fire(conn, client, slot, now),
            Event::Process { seg, client } => self.endpoint_process(seg, client, now),
        }
        true
    }

    /// The workload's next connection arrives: create it, send its SYN.
    fn start(&mut self, now: Instant) {
        let (spec, next) = self.workload.arrive(now);
        if let Some(t) = next {
            self.q.schedule(t, Event::Start);
        }
        let id = self.next_id;
        self.next_id += 1;
        let iss: u32 = self.isn_rng.random();
        let mut c = Conn::new(spec);
        c.start = now;
        c.report.id = id;
        c.report.start_s = now.as_secs_f64();
        c.report.pair = c.spec.pair;
        c.report.request_bytes = c.spec.client_bytes();
        c.report.response_bytes = c.spec.server_bytes();
        c.report.think_s = c.spec.exchanges.iter().map(|x| x.think.as_secs_f64()).sum();
        c.mechanisms = [true, false].map(|client| mechanisms::for_side(&self.sc.mechanisms, client, c.spec.port));
        let mut tcb = Tcb::connect(self.client_cfg.clone(), id, iss, now);
        for p in &mut c.mechanisms[0] {
            p.mechanism.attach(&mut tcb);
        }
        c.client = Some(Box::new(tcb));
        self.pair_of.push(c.spec.pair);
        if let Some(max) = self.sc.path.rtt_max {
            // Uniform in [rtt, rtt_max] (a draw only when the scenario asks for one).
            let span = max.0 - self.sc.path.rtt.0;
            let drawn = Duration(if span == 0 { 0 } else { self.rtt_rng.random_range(0..=span) });
            self.extra_rtt.push(c.spec.extra_rtt.unwrap_or(drawn));
        } else if let Some(own) = c.spec.extra_rtt {
            // Ids are dense: the connections before without a delay of their own get none.
            self.extra_rtt.resize(id as usize, Duration::ZERO);
            self.extra_rtt.push(own);
        }
        self.conns.insert(id, c);
        self.peak_open = self.peak_open.max(self.conns.len());
        self.pump(id, true, now);
    }

    /// A packet crossed hop `hop` of its route: on to the next, or it has arrived.
    fn arrive(&mut self, hop: u8, seg: Segment, now: Instant) {
        let pair = self.pair_of[seg.conn as usize];
        let route = self.topo.route(pair, seg.from_client);
        let next = hop + 1;
        if route.hop(next).is_none() {
            self.endpoint_receive(seg, !seg.from_client, now);
            return;
        }
        if hop == 0 {
            // The router: scripted and random losses, and the router's capture point.
            if self.sc.capture_point == CapturePoint::Router && self.opts.capture {
                self.capture(now, &seg);
            }
            // Both models see every segment (each counts what it has seen).
            let by_byte = self.byte_loss.as_mut().is_some_and(|b| b.lose(&seg));
            if self.loss.decide(&seg) != Fate::Pass || by_byte {
                self.count_drop(seg.conn);
                return;
            }
        }
        self.transmit(next, &seg, now);
    }

    /// Offers `seg` to hop `hop` of its route.
    fn transmit(&mut self, hop: u8, seg: &Segment, now: Instant) {
        let pair = self.pair_of[seg.conn as usize];
        let route = self.topo.route(pair, seg.from_client);
        let Some(port) = route.hop(hop) else { return };
        match self.topo.ports[port].send(now, seg.wire_bytes(), &mut self.queue_rng) {
            Some(at) => {
                let at = at + self.extra_delay(seg.conn, hop, route.hop(hop + 1).is_none());
                self.q.schedule(at, Event::Arrive { hop, seg: *seg })
            }
            None => self.count_drop(seg.conn),
        }
    }

    /// A connection's own extra delay on hop `hop` (`path.rtt_max`): a quarter of its
    /// extra two-way delay on the sender's link (the first hop), the rest of the one-way
    /// half on the receiver's side (the last hop), as `path.rtt` splits over the four
    /// crossings. Propagation only: the ports' queues and rates see the packet unchanged.
    fn extra_delay(&self, conn: u32, hop: u8, last: bool) -> Duration {
        let Some(&Duration(x)) = self.extra_rtt.get(conn as usize) else { return Duration::ZERO };
        let first = x / 4;
        Duration(if hop == 0 {
            first
        } else if last {
            x / 2 - first
        } else {
            0
        })
    }

    fn count_drop(&mut self, conn: u32) {
        self.dropped += 1;
        if let Some(c) = self.conns.get_mut(&conn) {
            c.report.packets_dropped += 1;
        }
    }

    fn captured_at(&self, client: bool) -> bool {
        self.opts.capture && self.sc.capture_point == if client { CapturePoint::Client } else { CapturePoint::Server }
    }

    fn endpoint_receive(&mut self, seg: Segment, client: bool, now: Instant) {
        if self.captured_at(client) {
            self.capture(now, &seg);
        }
        if client && seg.is_synack() {
            if let Some(c) = self.conns.get_mut(&seg.conn).filter(|c| c.first_synack_at_client.is_none()) {
                c.first_synack_at_client = Some(now);
                c.last_syn_before_synack = c.client.as_ref().and_then(|t| t.last_handshake_sent);
            }
        }
        // The host's processing time: a segment with data reaches TCP that much later, while
        // the capture saw it arrive; segments reach TCP in the order they arrived.
        let p = if client { self.client_cfg.processing_time } else { self.server_cfg.processing_time };
        if p > Duration::ZERO {
            if let Some(c) = self.conns.get_mut(&seg.conn) {
                let side = usize::from(!client);
                let at = (now + if seg.len > 0 { p } else { Duration::ZERO }).max(c.processed_until[side]);
                c.processed_until[side] = at;
                if at > now {
                    self.q.schedule(at, Event::Process { seg, client });
                    return;
                }
            }
        }
        self.endpoint_process(seg, client, now);
    }

    fn endpoint_process(&mut self, seg: Segment, client: bool, now: Instant) {
        let conn = seg.conn;
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let side = usize::from(!client);
        for p in &mut c.mechanisms[side] {
            p.mechanism.on_receive(&seg);
        }
        let tcb = if client { c.client.as_deref_mut() } else { c.server.as_deref_mut() };
        match tcb {
            Some(tcb) => {
                if tcb.is_duplicate(&seg) {
                    c.report.spurious_retransmits += 1;
                }
                let (acked, was_established) = (tcb.bytes_acked(), tcb.state == State::Established);
                tcb.on_segment(&seg, now);
                let established = !was_established && tcb.state == State::Established;
                let acked_new = !established && tcb.bytes_acked() > acked;
                for p in &mut c.mechanisms[side] {
                    if established {
                        p.mechanism.on_established(tcb, now);
                    } else if acked_new {
                        p.mechanism.on_ack(tcb, now);
                    }
                }
            }
            None if !client && seg.is_syn() && !c.done => {
                let iss: u32 = self.isn_rng.random();
                let mut tcb = Tcb::accept(self.server_cfg.clone(), &seg, iss, now);
                for p in &mut c.mechanisms[1] {
                    p.mechanism.attach(&mut tcb);
                }
                c.server = Some(Box::new(tcb));
            }
            None => return,
        }
        self.pump(conn, client, now);
    }

    /// The timer of one side's mechanism `slot` fired.
    fn mechanism_fire(&mut self, conn: u32, client: bool, slot: u8, now: Instant) {
        let side = usize::from(!client);
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let tcb = if client { c.client.as_deref_mut() } else { c.server.as_deref_mut() };
        let Some(p) = c.mechanisms[side].get_mut(usize::from(slot)) else { return };
        if p.scheduled != Some(now) {
            return; // moved or cancelled
        }
        p.scheduled = None;
        let fired = p.mechanism.on_timer(tcb, now);
        if let Some(at) = p.reschedule() {
            self.q.schedule(at, Event::Mechanism { conn, client, slot });
        }
        match fired {
            Fired::Nothing => {}
            Fired::Endpoint => self.pump(conn, client, now),
            Fired::Send(copy) => self.send_from(&copy, client, now),
        }
    }

    fn timer(&mut self, conn: u32, client: bool, kind: TimerKind, now: Instant) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let side = usize::from(!client);
        let tcb = if client { c.client.as_deref_mut() } else { c.server.as_deref_mut() };
        let Some(tcb) = tcb else { return };
        if c.scheduled[side][kind as usize] != Some(now) {
            return; // superseded by an earlier event for this timer
        }
        c.scheduled[side][kind as usize] = None;
        match tcb.timers[kind as usize] {
            Some(at) if at == now => {}
            // Moved later since this event was queued: wait again (one event per timer
            // instead of one per re-arm: Linux re-arms the RTO on every ACK).
            Some(at) if at > now => {
                c.scheduled[side][kind as usize] = Some(at);
                self.q.schedule(at, Event::Timer { conn, client, kind });
                return;
            }
            _ => return, // cancelled
        }
        if kind == TimerKind::Retransmit && tcb.state == State::Established && tcb.outstanding() > 0 {
            // Document 004's cost function for the timer that just expired.
            if let Some(cost) = tcb.rto_cost() {
                c.report.rto_costs.push(cost);
            }
        }
        tcb.on_timer(kind, now);
        self.pump(conn, client, now);
    }

    /// A segment leaves an endpoint (or a mechanism beside it).
    fn send_from(&mut self, seg: &Segment, client: bool, now: Instant) {
        if self.captured_at(client) {
            self.capture(now, seg);
        }
        if let Some(c) = self.conns.get_mut(&seg.conn) {
            let r = &mut c.report;
            if client && seg.is_syn() {
                r.syn_transmissions += 1;
            } else if !client && seg.is_synack() {
                r.synack_transmissions += 1;
            }
        }
        self.transmit(0, seg, now);
    }

    /// After anything happened to one side of `conn`: run its application, send what TCP
    /// queued, schedule its timers, and notice the end of the connection.
    fn pump(&mut self, conn: u32, client: bool, now: Instant) {
        self.last_active = now;
        let side = usize::from(!client);
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let Some(tcb) = (if client { c.client.as_deref_mut() } else { c.server.as_deref_mut() }) else { return };
        let before = c.client_app.received;
        if client {
            c.client_app.step(tcb, &c.spec, now, &mut self.later);
        } else {
            c.server_app.step(tcb, &c.spec, now, &mut self.later);
        }
        if self.opts.timeline && client && c.client_app.received > before {
            let t = now.since(c.start).as_secs_f64();
            c.report.timeline.get_or_insert_with(Vec::new).push((t, c.client_app.received));
        }
        for k in TIMER_KINDS {
            let want = tcb.timers[k as usize];
            // A queued event at or before the deadline stays: when it fires it waits again
            // for a deadline that moved later (`timer`). Only an earlier deadline is queued.
            if let Some(at) = want.filter(|&t| c.scheduled[side][k as usize].is_none_or(|s| t < s)) {
                self.q.schedule(at, Event::Timer { conn, client, kind: k });
                c.scheduled[side][k as usize] = Some(at);
            }
        }
        // The segments TCP queued, swapped for the world's empty spare buffer: both keep
        // their capacity, so no segment costs an allocation (a new `Vec` a pump did).
        let mut out = std::mem::take(&mut self.out_spare);
        std::mem::swap(&mut out, &mut tcb.out);
        for (slot, p) in c.mechanisms[side].iter_mut().enumerate() {
            p.mechanism.on_send(tcb, &out, now);
            if let Some(at) = p.reschedule() {
                self.q.schedule(at, Event::Mechanism { conn, client, slot: slot as u8 });
            }
        }
        // Each segment is read where `emit` wrote it, by reference down to the event that
        // carries it: a copy passed on by value was read back in wider pieces than it was
        // written, and waited for the store buffer (`perf annotate`: ~20 % of `pump`).
        for seg in &out {
            self.send_from(seg, client, now);
        }
        out.clear();
        self.out_spare = out;
        let mut later = std::mem::take(&mut self.later);
        for l in later.drain(..) {
            match l {
                Later::NextRequest(at) => self.q.schedule(at, Event::NextRequest { conn }),
                Later::Respond(at) => self.q.schedule(at, Event::Respond { conn }),
            }
        }
        self.later = later;
        self.check_done(conn, now);
    }

    fn check_done(&mut self, conn: u32, now: Instant) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        if !c.done && c.client_app.finished {
            c.done = true;
            if let Some(t) = self.workload.finished(now) {
                self.q.schedule(t, Event::Start);
            }
        }
        // The connection leaves once both ends are closed: memory follows the open ones.
        let closed = |t: &Option<Box<Tcb>>| t.as_ref().is_none_or(|t| t.is_closed());
        if c.done && closed(&c.client) && closed(&c.server) {
            if let Some(mut c) = self.conns.remove(&conn) {
                Self::collect(&mut c);
                self.keep(c);
            }
        }
    }

    /// A finished (or, at the end, still open) connection: added to the totals, and its
    /// report kept unless the run keeps totals only.
    fn keep(&mut self, c: Conn) {
        let (r, s, t) = (&c.report, c.seen, &mut self.totals);
        t.connections += 1;
        t.established += u64::from(r.established);
        t.syn_transmissions += u64::from(r.syn_transmissions);
        t.synack_transmissions += u64::from(r.synack_transmissions);
        t.retransmissions += u64::from(r.retransmissions);
        t.timeouts += u64::from(r.timeouts);
        t.syns_captured += u64::from(s.syns);
        t.synacks_captured += u64::from(s.synacks);
        t.multiple_syns_captured += u64::from(s.syns > 1);
        t.multiple_synacks_captured += u64::from(s.synacks > 1);
        t.handshakes_captured += u64::from(s.client_ack);
        if let Some(d) = r.complete_s {
            t.completed += 1;
            self.complete_sum_s += d;
        }
        if self.opts.totals_only {
            return;
        }
        let mut r = c.report;
        // Asked for, a timeline is always there, empty when nothing arrived.
        if self.opts.timeline {
            r.timeline.get_or_insert_with(Vec::new);
        }
        self.reports_bytes += r.heap_bytes() + std::mem::size_of::<ConnReport>();
        self.reports.push(r);
    }

    /// Copies the endpoints' counters into the connection's report.
    fn collect(c: &mut Conn) {
        let r = &mut c.report;
        let start = c.start;
        let rel = |t: Instant| t.since(start).as_secs_f64();
        r.requests = c
            .client_app
            .sent_at
            .iter()
            .enumerate()
            .map(|(k, &s)| RequestReport { sent_s: rel(s), complete_s: c.client_app.complete_at.get(k).map(|&t| rel(t)) })
            .collect();
        r.request_sent_s = c.client_app.sent_at.first().map(|&t| rel(t));
        r.complete_s = if c.client_app.complete_at.len() == c.client_app.sent_at.len() && !c.client_app.sent_at.is_empty() {
            c.client_app.complete_at.last().map(|&t| rel(t))
        } else {
            None
        };
        r.bytes_received = c.client_app.received;
        if let (Some(a), Some(s)) = (c.first_synack_at_client, c.last_syn_before_synack) {
            r.handshake_rtt_s = Some(a.since(s).as_secs_f64());
        }
        let (mut retr, mut to, mut fr, mut da) = (0, 0, 0, 0);
        for t in [c.client.as_deref(), c.server.as_deref()].into_iter().flatten() {
            retr += t.stats.retransmissions;
            to += t.stats.timeouts;
            fr += t.stats.fast_retransmits;
            da += t.stats.delayed_acks;
            r.rack_losses += t.stats.rack_losses;
            r.tlp_probes += t.stats.tlp_probes;
            r.spurious_timeouts += t.stats.spurious_timeouts;
            r.dsacks += t.stats.dsacks;
            r.timer_slack_s += t.stats.timer_slack_ns as f64 * 1e-9;
        }
        r.established = c.client.as_ref().is_some_and(|t| t.established_at.is_some());
        r.retransmissions = retr;
        for p in c.mechanisms.iter().flatten() {
            p.mechanism.report(r);
        }
        r.timeouts = to;
        r.fast_retransmits = fr;
        r.delayed_acks = da;
    }

    /// Each direction of the shared link: bytes carried and utilisation over the run
    /// (or over the workload's duration when it has one).
    fn link_reports(&self) -> Vec<LinkReport> {
        let span =
            if self.sc.workload.duration.0 > 0 { self.sc.workload.duration } else { self.last_active.since(Instant::ZERO) };
        ["client_to_server", "server_to_client"]
            .iter()
            .zip(self.topo.bottleneck)
            .map(|(name, p)| {
                let port = &self.topo.ports[p];
                let util = if span.0 == 0 { 0.0 } else { port.busy.as_secs_f64() / span.as_secs_f64() };
                LinkReport { direction: name.to_string(), bytes: port.tx_bytes, utilisation: util, drops: port.queue.drops }
            })
            .collect()
    }

    fn finish(mut self) -> RunReport {
        let open: Vec<Conn> = std::mem::take(&mut self.conns).into_values().collect();
        for mut c in open {
            if c.client.is_some() {
                Self::collect(&mut c);
            }
            self.keep(c);
        }
        let mut connections = std::mem::take(&mut self.reports);
        connections.sort_unstable_by_key(|r| r.id);
        let t = self.totals;
        let mean_complete_s = if t.completed == 0 {
            None
        } else if self.opts.totals_only {
            Some(self.complete_sum_s / t.completed as f64)
        } else {
            // Added up in connection order (the order of the report), as ever.
            Some(connections.iter().filter_map(|c| c.complete_s).sum::<f64>() / t.completed as f64)
        };
        // Events still waiting at the end lie beyond the time limit (the loop ran dry
        // otherwise); with connections incomplete the run was cut short.
        let incomplete = t.connections - t.completed;
        let time_limit_reached = !self.q.is_empty() && incomplete > 0;
        let mut warnings = Vec::new();
        if time_limit_reached {
            warnings.push(format!(
                "the run reached its time_limit ({}) with {incomplete} of {} connections incomplete: \
                 raise time_limit if they should finish",
                self.sc.time_limit, t.connections
            ));
        }
        let summary = Summary {
            connections: t.connections as usize,
            completed: t.completed as usize,
            mean_complete_s,
            simulated_s: self.last_active.as_secs_f64(),
            events: self.q.processed,
            events_scheduled_in_past: self.q.scheduled_in_past,
            packets_dropped: self.dropped,
            time_limit_reached,
            peak_open_connections: self.peak_open,
            totals: t,
            bottleneck: self.link_reports(),
            calibration: None,
        };
        let point = match self.sc.capture_point {
            CapturePoint::Client => "client",
            CapturePoint::Router => "router",
            CapturePoint::Server => "server",
        };
        RunReport {
            scenario: self.sc.name.clone(),
            source: self.sc.source.clone(),
            seed: self.sc.seed,
            capture_point: point.to_string(),
            connections,
            summary,
            warnings,
        }
    }
}

fn human_bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b => format!("{b} B"),
    }
}
