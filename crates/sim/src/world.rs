//! The simulated world: client — link — router — link — server, the connections between
//! them, and the event loop that drives it all.

use std::rc::Rc;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::app::{parallel_start, ClientApp, Later, ServerApp};
use crate::capture::Capture;
use crate::engine::EventQueue;
use crate::link::Port;
use crate::loss::{Fate, LossModel};
use crate::packet::Segment;
use crate::profile::StackConfig;
use crate::report::{ConnReport, RequestReport, RunReport, Summary};
use crate::scenario::{CapturePoint, QueueConfig, Scenario, Side};
use crate::synopt::SynOptimizer;
use crate::tcp::{Tcb, TimerKind, TIMER_KINDS};
use crate::time::{Duration, Instant};

/// Link directions: the four transmitters of the path.
const CLIENT_TO_ROUTER: usize = 0;
const ROUTER_TO_SERVER: usize = 1;
const SERVER_TO_ROUTER: usize = 2;
const ROUTER_TO_CLIENT: usize = 3;

/// What a run should keep besides the per-connection report.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Keep every segment the capture point sees (for a pcap).
    pub capture: bool,
    /// Keep each connection's delivery timeline.
    pub timeline: bool,
}

enum Event {
    Arrive { port: usize, seg: Segment },
    Timer { conn: u32, client: bool, kind: TimerKind },
    Optimizer { conn: u32 },
    Start { conn: u32 },
    NextRequest { conn: u32 },
    Respond { conn: u32 },
}

#[derive(Default)]
struct Conn {
    client: Option<Box<Tcb>>,
    server: Option<Box<Tcb>>,
    /// Timer deadlines already in the event queue: [client, server][kind].
    scheduled: [[Option<Instant>; 2]; 2],
    client_app: ClientApp,
    server_app: ServerApp,
    optimizer: SynOptimizer,
    start: Instant,
    first_synack_at_client: Option<Instant>,
    last_syn_before_synack: Option<Instant>,
    report: ConnReport,
    done: bool,
}

pub struct World {
    sc: Rc<Scenario>,
    client_cfg: Rc<StackConfig>,
    server_cfg: Rc<StackConfig>,
    q: EventQueue<Event>,
    ports: [Port; 4],
    loss: LossModel,
    queue_rng: ChaCha8Rng,
    isn_rng: ChaCha8Rng,
    conns: Vec<Conn>,
    opts: RunOptions,
    pub capture: Capture,
    dropped: u64,
    later: Vec<Later>,
    /// Time of the last event that did something (cancelled timers still pop later).
    last_active: Instant,
}

impl World {
    pub fn new(sc: Scenario, opts: RunOptions) -> Self {
        // RFC-free modelling choice: the two-way delay splits evenly over the four link
        // crossings (client–router and router–server, each way).
        let quarter = Duration(sc.path.rtt.0 / 4);
        let host_queue = QueueConfig::DropTailPackets(u32::MAX);
        let (access, bottleneck) = (sc.path.access_bandwidth_bps, sc.path.bandwidth_bps);
        let ports = [
            Port::new(access, quarter, host_queue.clone()),
            Port::new(bottleneck, quarter, sc.path.queue.clone()),
            Port::new(access, Duration(sc.path.rtt.0 / 2 - quarter.0), host_queue),
            Port::new(bottleneck, Duration(sc.path.rtt.0 / 2 - quarter.0), sc.path.queue.clone()),
        ];
        let loss = LossModel::new(sc.drop.clone(), sc.random_loss.clone());
        let n = sc.workload.connections as usize;
        let mut w = World {
            client_cfg: Rc::new(sc.client.clone()),
            server_cfg: Rc::new(sc.server.clone()),
            q: EventQueue::default(),
            ports,
            loss,
            queue_rng: ChaCha8Rng::seed_from_u64(sc.seed ^ 0x5155_4555),
            isn_rng: ChaCha8Rng::seed_from_u64(sc.seed ^ 0x0153_4e53),
            conns: (0..n).map(|_| Conn::default()).collect(),
            opts,
            capture: Capture::default(),
            dropped: 0,
            later: Vec::new(),
            last_active: Instant::ZERO,
            sc: Rc::new(sc),
        };
        if w.sc.workload.parallel {
            for i in 0..n as u32 {
                w.q.schedule(parallel_start(i, &w.sc.workload), Event::Start { conn: i });
            }
        } else {
            w.q.schedule(Instant::ZERO, Event::Start { conn: 0 });
        }
        w
    }

    /// Runs to the end (or the time limit) and reports.
    pub fn run(mut self) -> (RunReport, Capture) {
        let limit = Instant::ZERO + self.sc.time_limit;
        while let Some(ev) = self.q.pop(limit) {
            self.dispatch(ev);
        }
        self.finish()
    }

    fn dispatch(&mut self, ev: Event) {
        let now = self.q.now();
        match ev {
            Event::Arrive { port, seg } => self.arrive(port, seg, now),
            Event::Timer { conn, client, kind } => self.timer(conn, client, kind, now),
            Event::Optimizer { conn } => self.optimizer_fire(conn, now),
            Event::Start { conn } => self.start(conn, now),
            Event::NextRequest { conn } => {
                let w = self.sc.workload.clone();
                let c = &mut self.conns[conn as usize];
                if let Some(tcb) = c.client.as_deref_mut() {
                    c.client_app.send_request(tcb, &w, now);
                }
                self.pump(conn, true, now);
            }
            Event::Respond { conn } => {
                let c = &mut self.conns[conn as usize];
                if let Some(tcb) = c.server.as_deref_mut() {
                    c.server_app.respond(tcb, &self.sc.workload, now);
                }
                self.pump(conn, false, now);
            }
        }
    }

    fn start(&mut self, conn: u32, now: Instant) {
        let iss: u32 = self.isn_rng.random();
        let c = &mut self.conns[conn as usize];
        c.start = now;
        c.report.id = conn;
        c.report.start_s = now.as_secs_f64();
        c.client = Some(Box::new(Tcb::connect(self.client_cfg.clone(), conn, iss, now)));
        self.pump(conn, true, now);
    }

    /// A packet reached the far end of `port`.
    fn arrive(&mut self, port: usize, seg: Segment, now: Instant) {
        match port {
            CLIENT_TO_ROUTER | SERVER_TO_ROUTER => self.router(seg, now),
            ROUTER_TO_SERVER => self.endpoint_receive(seg, false, now),
            _ => self.endpoint_receive(seg, true, now),
        }
    }

    fn router(&mut self, seg: Segment, now: Instant) {
        if self.sc.capture_point == CapturePoint::Router && self.opts.capture {
            self.capture.records.push((now, seg));
        }
        if self.loss.decide(&seg) != Fate::Pass {
            self.count_drop(seg.conn);
            return;
        }
        let out = if seg.from_client { ROUTER_TO_SERVER } else { ROUTER_TO_CLIENT };
        self.transmit(out, seg, now);
    }

    fn transmit(&mut self, port: usize, seg: Segment, now: Instant) {
        match self.ports[port].send(now, seg.wire_bytes(), &mut self.queue_rng) {
            Some(at) => self.q.schedule(at, Event::Arrive { port, seg }),
            None => self.count_drop(seg.conn),
        }
    }

    fn count_drop(&mut self, conn: u32) {
        self.dropped += 1;
        self.conns[conn as usize].report.packets_dropped += 1;
    }

    fn captured_at(&self, client: bool) -> bool {
        self.opts.capture
            && self.sc.capture_point == if client { CapturePoint::Client } else { CapturePoint::Server }
    }

    fn endpoint_receive(&mut self, seg: Segment, client: bool, now: Instant) {
        if self.captured_at(client) {
            self.capture.records.push((now, seg));
        }
        let conn = seg.conn;
        let optimizer = self.sc.syn_optimizer;
        let c = &mut self.conns[conn as usize];
        if let Some(cfg) = optimizer.filter(|o| (o.side == Side::Client) == client) {
            c.optimizer.incoming(&cfg, &seg);
        }
        if client {
            if seg.is_synack() && c.first_synack_at_client.is_none() {
                c.first_synack_at_client = Some(now);
                c.last_syn_before_synack = c.client.as_ref().and_then(|t| t.last_handshake_sent);
            }
            match c.client.as_deref_mut() {
                Some(tcb) => tcb.on_segment(&seg, now),
                None => return,
            }
        } else {
            match c.server.as_deref_mut() {
                Some(tcb) => tcb.on_segment(&seg, now),
                None if seg.is_syn() && !c.done => {
                    let iss: u32 = self.isn_rng.random();
                    c.server = Some(Box::new(Tcb::accept(self.server_cfg.clone(), &seg, iss, now)));
                }
                None => return,
            }
        }
        self.pump(conn, client, now);
    }

    fn timer(&mut self, conn: u32, client: bool, kind: TimerKind, now: Instant) {
        let c = &mut self.conns[conn as usize];
        let side = usize::from(!client);
        let tcb = if client { c.client.as_deref_mut() } else { c.server.as_deref_mut() };
        let Some(tcb) = tcb else { return };
        if tcb.timers[kind as usize] != Some(now) || c.scheduled[side][kind as usize] != Some(now) {
            return; // cancelled or moved
        }
        c.scheduled[side][kind as usize] = None;
        tcb.on_timer(kind, now);
        self.pump(conn, client, now);
    }

    fn optimizer_fire(&mut self, conn: u32, now: Instant) {
        let Some(cfg) = self.sc.syn_optimizer else { return };
        let c = &mut self.conns[conn as usize];
        if let Some(copy) = c.optimizer.fire(&cfg, now) {
            c.report.optimizer_resends += 1;
            if let Some(next) = c.optimizer.deadline {
                self.q.schedule(next, Event::Optimizer { conn });
            }
            self.send_from(copy, cfg.side == Side::Client, now);
        }
    }

    /// A segment leaves an endpoint (or its SYN optimizer).
    fn send_from(&mut self, seg: Segment, client: bool, now: Instant) {
        if self.captured_at(client) {
            self.capture.records.push((now, seg));
        }
        let r = &mut self.conns[seg.conn as usize].report;
        if client && seg.is_syn() {
            r.syn_transmissions += 1;
        } else if !client && seg.is_synack() {
            r.synack_transmissions += 1;
        }
        self.transmit(if client { CLIENT_TO_ROUTER } else { SERVER_TO_ROUTER }, seg, now);
    }

    /// After anything happened to one side of `conn`: run its application, send what TCP
    /// queued, schedule its timers, and notice the end of the connection.
    fn pump(&mut self, conn: u32, client: bool, now: Instant) {
        self.last_active = now;
        let sc = self.sc.clone();
        let w = &sc.workload;
        let side = usize::from(!client);
        let c = &mut self.conns[conn as usize];
        let Some(tcb) = (if client { c.client.as_deref_mut() } else { c.server.as_deref_mut() }) else { return };
        let before = c.client_app.received;
        if client {
            c.client_app.step(tcb, w, now, &mut self.later);
        } else {
            c.server_app.step(tcb, w, now, &mut self.later);
        }
        if self.opts.timeline && client && c.client_app.received > before {
            let t = now.since(c.start).as_secs_f64();
            c.report.timeline.get_or_insert_with(Vec::new).push((t, c.client_app.received));
        }
        for k in TIMER_KINDS {
            let want = tcb.timers[k as usize];
            if let Some(at) = want.filter(|&t| Some(t) != c.scheduled[side][k as usize]) {
                self.q.schedule(at, Event::Timer { conn, client, kind: k });
            }
            c.scheduled[side][k as usize] = want;
        }
        let out = std::mem::take(&mut tcb.out);
        let optimizer = sc.syn_optimizer.filter(|o| (o.side == Side::Client) == client);
        for seg in out {
            if let Some(cfg) = optimizer {
                let c = &mut self.conns[conn as usize];
                if let Some(at) = c.optimizer.outgoing(&cfg, &seg, w.port, now) {
                    self.q.schedule(at, Event::Optimizer { conn });
                }
            }
            self.send_from(seg, client, now);
        }
        for l in std::mem::take(&mut self.later) {
            match l {
                Later::NextRequest(at) => self.q.schedule(at, Event::NextRequest { conn }),
                Later::Respond(at) => self.q.schedule(at, Event::Respond { conn }),
            }
        }
        self.check_done(conn, now);
    }

    fn check_done(&mut self, conn: u32, now: Instant) {
        let i = conn as usize;
        let n = self.conns.len();
        let c = &mut self.conns[i];
        if !c.done && c.client_app.finished {
            c.done = true;
            if !self.sc.workload.parallel && i + 1 < n {
                self.q.schedule(now + self.sc.workload.interval, Event::Start { conn: conn + 1 });
            }
        }
        // Free the endpoints once both are closed (long sequential runs stay small).
        let closed = |t: &Option<Box<Tcb>>| t.as_ref().is_none_or(|t| t.is_closed());
        if c.done && closed(&c.client) && closed(&c.server) && c.client.is_some() {
            Self::collect(c);
            c.client = None;
            c.server = None;
        }
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
        r.timeouts = to;
        r.fast_retransmits = fr;
        r.delayed_acks = da;
    }

    fn finish(mut self) -> (RunReport, Capture) {
        for c in &mut self.conns {
            if c.client.is_some() {
                Self::collect(c);
            }
        }
        let timeline = self.opts.timeline;
        let connections: Vec<ConnReport> = self
            .conns
            .into_iter()
            .map(|mut c| {
                // Asked for, a timeline is always there, empty when nothing arrived.
                if timeline {
                    c.report.timeline.get_or_insert_with(Vec::new);
                }
                c.report
            })
            .collect();
        let done: Vec<f64> = connections.iter().filter_map(|c| c.complete_s).collect();
        let summary = Summary {
            connections: connections.len(),
            completed: done.len(),
            mean_complete_s: if done.is_empty() { None } else { Some(done.iter().sum::<f64>() / done.len() as f64) },
            simulated_s: self.last_active.as_secs_f64(),
            events: self.q.processed,
            events_scheduled_in_past: self.q.scheduled_in_past,
            packets_dropped: self.dropped,
        };
        let point = match self.sc.capture_point {
            CapturePoint::Client => "client",
            CapturePoint::Router => "router",
            CapturePoint::Server => "server",
        };
        let report = RunReport {
            scenario: self.sc.name.clone(),
            source: self.sc.source.clone(),
            seed: self.sc.seed,
            capture_point: point.to_string(),
            connections,
            summary,
        };
        (report, self.capture)
    }
}
