//! Scenario texts more than one test binary runs (each binary declares `mod scenarios;`).

/// 100 ms RTT, fast links (serialization in µs), a small request and response; RFC 2988
/// stacks retransmit a SYN (SYN/ACK) after 3 s.
pub const HANDSHAKE_100MS: &str = r#"
[path]
rtt = "100ms"
bandwidth = "1Gbit"
[client]
stack = "rfc2988"
[server]
stack = "rfc2988"
[workload]
request = "300B"
response = "1000B"
"#;
