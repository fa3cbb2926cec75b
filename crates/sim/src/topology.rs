//! Where packets go: hosts on access links, shared links, and each client–server pair's
//! route through them.
//!
//! A topology is a set of transmitters (`Port`: rate, queue, propagation delay) and, for
//! each client–server pair, the ordered ports a segment crosses in each direction. The
//! "router" observation point (scripted and random losses, the router capture) is the
//! arrival after a route's first hop, the same place on every topology.
//!
//! `Topology::build` lays out the scenario's `TopologyConfig`:
//! * `single`: the path, client — router — server, the N = 1 case. The two-way delay
//!   splits evenly over the four link crossings; the router's egress is the bottleneck.
//! * `dumbbell`: N client and N server hosts, each on its own access link (rate, one-way
//!   delay), a left and a right router joined by one bottleneck link per direction.

use crate::link::Port;
use crate::scenario::{DumbbellConfig, PathConfig, QueueConfig, TopologyConfig};
use crate::time::Duration;

/// The ports one direction of a pair crosses, in order (at most three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    hops: [u32; 3],
    len: u8,
}

impl Route {
    fn new(hops: &[usize]) -> Self {
        let mut r = Route { hops: [0; 3], len: hops.len() as u8 };
        for (i, &h) in hops.iter().enumerate() {
            r.hops[i] = h as u32;
        }
        r
    }

    /// The port of hop `i`, None past the last hop (the segment has arrived).
    pub fn hop(&self, i: u8) -> Option<usize> {
        (i < self.len).then(|| self.hops[i as usize] as usize)
    }
}

pub struct Topology {
    pub ports: Vec<Port>,
    /// Per pair: [client → server, server → client].
    routes: Vec<[Route; 2]>,
    /// The shared links (bottleneck) as [client → server, server → client] port indices.
    pub bottleneck: [usize; 2],
    /// Two-way propagation delay of each pair (for BDP sizing and reports).
    pub pair_rtt: Vec<Duration>,
}

/// A host's own queue: never the bottleneck, never drops.
fn host_queue() -> QueueConfig {
    QueueConfig::DropTailPackets(u32::MAX)
}

impl Topology {
    /// The ports and routes of the scenario's network.
    pub fn build(cfg: TopologyConfig) -> Self {
        match cfg {
            TopologyConfig::Single(p) => Self::single(p),
            TopologyConfig::Dumbbell(d) => Self::dumbbell(d),
        }
    }

    /// Client — router — server (the N = 1 case).
    fn single(p: &PathConfig) -> Self {
        let quarter = Duration(p.rtt.0 / 4);
        let rest = Duration(p.rtt.0 / 2 - quarter.0);
        let ports = vec![
            Port::new(p.access_bandwidth_bps, quarter, host_queue()),
            Port::new(p.bandwidth_bps, quarter, p.queue.clone()),
            Port::new(p.access_bandwidth_bps, rest, host_queue()),
            Port::new(p.bandwidth_bps, rest, p.queue.clone()),
        ];
        Topology { ports, routes: vec![[Route::new(&[0, 1]), Route::new(&[2, 3])]], bottleneck: [1, 3], pair_rtt: vec![p.rtt] }
    }

    /// N pairs across one shared bottleneck. Port 0 and 1 are the bottleneck's two
    /// directions; pair i's client has ports 2+4i (up) and 3+4i (down), its server 4+4i
    /// (up) and 5+4i (down).
    fn dumbbell(d: &DumbbellConfig) -> Self {
        let n = d.pairs as usize;
        let mut ports = Vec::with_capacity(2 + 4 * n);
        ports.push(Port::new(d.bandwidth_bps, d.delay, d.queue.clone()));
        ports.push(Port::new(d.bandwidth_bps, d.delay, d.queue.clone()));
        let mut routes = Vec::with_capacity(n);
        let mut pair_rtt = Vec::with_capacity(n);
        for i in 0..n {
            let (cd, sd) = (d.client_delay[i % d.client_delay.len()], d.server_delay[i % d.server_delay.len()]);
            let base = ports.len();
            ports.push(Port::new(d.access_bandwidth_bps, cd, host_queue())); // client up
            ports.push(Port::new(d.access_bandwidth_bps, cd, host_queue())); // client down
            ports.push(Port::new(d.access_bandwidth_bps, sd, host_queue())); // server up
            ports.push(Port::new(d.access_bandwidth_bps, sd, host_queue())); // server down
            routes.push([Route::new(&[base, 0, base + 3]), Route::new(&[base + 2, 1, base + 1])]);
            pair_rtt.push(Duration(2 * (cd.0 + d.delay.0 + sd.0)));
        }
        Topology { ports, routes, bottleneck: [0, 1], pair_rtt }
    }

    pub fn pairs(&self) -> u32 {
        self.routes.len() as u32
    }

    pub fn route(&self, pair: u32, from_client: bool) -> Route {
        self.routes[pair as usize][usize::from(!from_client)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumbbell_routes_cross_the_shared_link() {
        let d = DumbbellConfig {
            pairs: 3,
            bandwidth_bps: 5_000_000,
            delay: Duration::from_millis(10),
            queue: QueueConfig::DropTailPackets(50),
            access_bandwidth_bps: 100_000_000,
            client_delay: vec![Duration::from_millis(1), Duration::from_millis(2), Duration::from_millis(3)],
            server_delay: vec![Duration::from_millis(5)],
        };
        let t = Topology::build(TopologyConfig::Dumbbell(&d));
        assert_eq!(t.ports.len(), 14);
        for p in 0..3 {
            assert_eq!(t.route(p, true).hop(1), Some(0));
            assert_eq!(t.route(p, false).hop(1), Some(1));
            assert_eq!(t.route(p, true).hop(3), None);
        }
        // Per-pair RTTs differ: 2 · (client + bottleneck + server).
        assert_eq!(t.pair_rtt[0], Duration::from_millis(32));
        assert_eq!(t.pair_rtt[2], Duration::from_millis(36));
    }
}
