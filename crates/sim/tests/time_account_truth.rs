//! The analyzer's time account against the simulator's truth on scenarios drawn at random
//! (their own seed; paths, sizes, keep-alive exchanges with client pauses and server think
//! times, scripted losses, both Linux profiles' probes on): every instant of each
//! connection in one cause, the response complete when the simulator says, the client's
//! pauses idle and the server's think times the application's, each within one round trip
//! of the truth per exchange.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use shortflow_sim::{simulate, RunOptions};
use shortflow_trace::{analyze_capture, CaptureReader, Options, Progress};

/// Log-uniform in [lo, hi].
fn log_uniform(rng: &mut ChaCha20Rng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + rng.random::<f64>() * (hi.ln() - lo.ln())).exp()
}

struct Drawn {
    sets: Vec<String>,
    rtt_s: f64,
    requests: u32,
    think_s: f64,
    idle_s: f64,
    at_server: bool,
}

fn draw(rng: &mut ChaCha20Rng) -> Drawn {
    let rtt_s = log_uniform(rng, 0.002, 0.3);
    let requests = rng.random_range(1..=4u32);
    let think_s = if rng.random_bool(0.5) { 0.0 } else { log_uniform(rng, 0.01, 0.5) };
    let idle_s = if requests > 1 { log_uniform(rng, 0.05, 3.0) } else { 0.0 };
    let response = log_uniform(rng, 500.0, 300_000.0) as u64;
    let mut sets = vec![
        format!("path.rtt=\"{:.3}ms\"", rtt_s * 1e3),
        format!("path.bandwidth=\"{}Mbit\"", log_uniform(rng, 5.0, 1000.0) as u64),
        format!("workload.response=\"{response}B\""),
        format!("workload.request=\"{}B\"", log_uniform(rng, 100.0, 5000.0) as u64),
        format!("workload.requests={requests}"),
        format!("workload.think_time=\"{:.3}ms\"", think_s * 1e3),
        format!("workload.idle=\"{:.3}ms\"", idle_s * 1e3),
    ];
    // Losses are seen where the sender is: behind the loss (at the client) a lost response
    // is a quiet stretch the client's capture cannot tell from the server's think time
    // (the simulator numbers no IP IDs, which would tell it on a real capture).
    let lossy = rng.random_bool(0.4);
    if lossy {
        let segments = response.div_ceil(1448).max(1);
        let lost: Vec<String> = (0..rng.random_range(1..=2)).map(|_| (rng.random_range(1..=segments)).to_string()).collect();
        sets.push(format!("drop.data=[{}]", lost.join(", ")));
    }
    let at_server = lossy || rng.random_bool(0.5);
    sets.push(format!("capture.point=\"{}\"", if at_server { "server" } else { "client" }));
    Drawn { sets, rtt_s, requests, think_s, idle_s, at_server }
}

const BASE: &str = r#"
[client]
stack = "linux"
quickack = true
[server]
stack = "linux"
[workload]
close = "client"
"#;

/// `SF_TRUTH_SEED` and `SF_TRUTH_N` draw other scenarios than the suite's 40 of seed 33
/// (a wider run: `SF_TRUTH_SEED=34 SF_TRUTH_N=300 cargo test --release -p shortflow-sim
/// --test time_account_truth`).
fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn the_time_account_matches_the_simulators_truth_on_random_scenarios() {
    let n = env_or("SF_TRUTH_N", 40);
    let mut rng = ChaCha20Rng::seed_from_u64(env_or("SF_TRUTH_SEED", 33));
    let mut checked = 0;
    for k in 0..n {
        let d = draw(&mut rng);
        let opts = RunOptions { capture: true, timeline: false, totals_only: false };
        let scenario = format!("seed = {k}\n{BASE}");
        let (report, cap, sc) = simulate(&scenario, "random.toml", &d.sets, opts).expect("scenario");
        let c = &report.connections[0];
        let Some(complete) = c.complete_s else { continue };
        let mut pcap = Vec::new();
        cap.write_pcap(&mut pcap, &sc).unwrap();
        let reader = CaptureReader::from_bytes("sim.pcap", pcap).unwrap();
        let (t, x, _, stats) = analyze_capture(reader, 0, &Options::default(), &Progress::default());
        assert!(stats.error.is_none());
        let by = t.time_by_cause_s(0);
        let why = format!("scenario {k} {:?}: {by:?}", d.sets);
        assert!((by.iter().sum::<f64>() - t.duration_s[0]).abs() < 1e-6, "{why}");
        // The client ACKs the last byte as it arrives (quick ACKs): complete then at the
        // client, half a round trip later at the server.
        let late = if d.at_server { d.rtt_s } else { 0.0 };
        let off = t.response_complete_s[0] - complete;
        assert!((-0.002..=late + 0.002).contains(&off), "{why}: {} vs {complete}", t.response_complete_s[0]);
        // Per exchange, one round trip of slack (and the server's delayed ACK of a request
        // it is still thinking about, ≤ 40 ms, which the client sees as the path's).
        let slack = f64::from(d.requests) * (d.rtt_s + 0.045) + 0.002;
        let idle = f64::from(d.requests - 1) * d.idle_s;
        assert!((t.time_idle_s[0] - idle).abs() <= slack, "{why}: idle {} vs {idle}", t.time_idle_s[0]);
        let think = f64::from(d.requests) * d.think_s;
        assert!((t.time_application_s[0] - think).abs() <= slack, "{why}: application {} vs {think}", t.time_application_s[0]);
        // Exchange by exchange: the simulator's requests and responses, exactly; the
        // client's pause before each request idle and the server's think its application,
        // each within the exchange's round trip (and delayed ACK) of the truth.
        assert_eq!(x.len(), d.requests as usize, "{why}: exchanges {:?}", x.request_bytes);
        let one = d.rtt_s + 0.045 + 0.002;
        for i in 0..x.len() {
            let by = x.time_by_cause_s(i);
            assert!((by.iter().sum::<f64>() - x.duration_s[i]).abs() < 1e-6, "{why}: exchange {i}");
            assert_eq!(x.request_bytes[i], report.connections[0].request_bytes / u64::from(d.requests), "{why}");
            assert_eq!(x.response_bytes[i], report.connections[0].response_bytes / u64::from(d.requests), "{why}");
            if i > 0 {
                assert!((x.time_idle_s[i].min(x.think_before_s[i]) - d.idle_s).abs() <= one, "{why}: exchange {i} idle {by:?}");
            }
            assert!((x.time_application_s[i] - d.think_s).abs() <= one, "{why}: exchange {i} application {by:?}");
        }
        let spans: f64 = x.duration_s.iter().sum();
        assert!((spans - t.duration_s[0]).abs() < 1e-6, "{why}: the exchanges tile the connection");
        checked += 1;
    }
    assert!(checked * 8 >= n * 7, "only {checked} of {n} scenarios completed");
}
