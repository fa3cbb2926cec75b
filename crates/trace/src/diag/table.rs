//! The per-connection table, built column by column as connections finish.
//!
//! Columns are plain vectors (strings as offsets + UTF-8 bytes, lists as offsets + values),
//! the layout Arrow uses, so the Python side wraps them without copying row by row.

use std::fmt::Write as _;

use super::ladder::GapClass;
use crate::track::Conn;

/// Where the capture was taken, inferred from the handshake's timing: near the client the
/// SYN → SYN/ACK gap holds the round trip; near the server the SYN/ACK → ACK gap does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Vantage {
    Unknown = 0,
    Client = 1,
    Server = 2,
}

impl Vantage {
    pub const NAMES: [&'static str; 3] = ["unknown", "client", "server"];

    pub fn of(conn: &Conn) -> Self {
        match (conn.synack_delay_ns(), conn.ack_delay_ns()) {
            (Some(a), Some(b)) if a > b => Self::Client,
            (Some(a), Some(b)) if b > a => Self::Server,
            _ => Self::Unknown,
        }
    }
}

/// UTF-8 strings as Arrow lays them out: `offsets[i]..offsets[i+1]` into `data`.
#[derive(Debug, Default, Clone)]
pub struct StringColumn {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
}

impl StringColumn {
    fn push_ip(&mut self, ip: std::net::IpAddr) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        match ip {
            // Dotted quads by hand: this runs once per connection per side, and the
            // general formatter was a visible share of the whole analysis.
            std::net::IpAddr::V4(v4) => {
                for (i, octet) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        self.data.push(b'.');
                    }
                    push_decimal(&mut self.data, octet);
                }
            }
            std::net::IpAddr::V6(v6) => {
                let _ = write!(AppendUtf8(&mut self.data), "{v6}");
            }
        }
        self.offsets.push(self.data.len() as i32);
    }
}

fn push_decimal(out: &mut Vec<u8>, x: u8) {
    if x >= 100 {
        out.push(b'0' + x / 100);
    }
    if x >= 10 {
        out.push(b'0' + (x / 10) % 10);
    }
    out.push(b'0' + x % 10);
}

/// Formats straight into the column's byte buffer (no temporary String per row).
struct AppendUtf8<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for AppendUtf8<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Variable-length lists: `offsets[i]..offsets[i+1]` into `values`.
#[derive(Debug, Default, Clone)]
pub struct ListColumn<T> {
    pub offsets: Vec<i32>,
    pub values: Vec<T>,
}

impl<T> ListColumn<T> {
    fn push(&mut self, items: impl IntoIterator<Item = T>) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.values.extend(items);
        self.offsets.push(self.values.len() as i32);
    }
}

/// One row per connection. Times are seconds (f64); absent values are NaN.
#[derive(Debug, Default, Clone)]
pub struct ConnectionTable {
    pub trace: Vec<u32>,
    pub conn_id: Vec<u64>,
    pub client_ip: StringColumn,
    pub client_port: Vec<u16>,
    pub server_ip: StringColumn,
    pub server_port: Vec<u16>,
    pub syn_seen: Vec<bool>,
    pub client_isn: Vec<u32>,
    pub first_ts_s: Vec<f64>,
    pub duration_s: Vec<f64>,
    pub syn_count: Vec<u32>,
    pub synack_count: Vec<u32>,
    pub established: Vec<bool>,
    pub handshake_rtt_s: Vec<f64>,
    pub synack_delay_s: Vec<f64>,
    pub ack_delay_s: Vec<f64>,
    pub vantage: Vec<u8>,
    pub syn_gaps_s: ListColumn<f64>,
    pub syn_gap_class: ListColumn<u8>,
    pub synack_gaps_s: ListColumn<f64>,
    pub synack_gap_class: ListColumn<u8>,
    pub end: Vec<u8>,
    pub packets_c2s: Vec<u32>,
    pub packets_s2c: Vec<u32>,
    pub bytes_c2s: Vec<u64>,
    pub bytes_s2c: Vec<u64>,
}

pub(crate) fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn opt_secs(ns: Option<u64>) -> f64 {
    ns.map_or(f64::NAN, secs)
}

impl ConnectionTable {
    pub fn len(&self) -> usize {
        self.conn_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conn_id.is_empty()
    }

    pub fn push(&mut self, trace: u32, c: &Conn) {
        self.trace.push(trace);
        self.conn_id.push(c.id);
        self.client_ip.push_ip(c.client.ip());
        self.client_port.push(c.client.port);
        self.server_ip.push_ip(c.server.ip());
        self.server_port.push(c.server.port);
        self.syn_seen.push(c.syn_seen);
        self.client_isn.push(c.client_isn);
        self.first_ts_s.push(secs(c.first_ts));
        self.duration_s.push(secs(c.last_ts.saturating_sub(c.first_ts)));
        self.syn_count.push(c.syns.count);
        self.synack_count.push(c.synacks.count);
        self.established.push(c.established_ts.is_some());
        let (a, b) = (c.synack_delay_ns(), c.ack_delay_ns());
        self.synack_delay_s.push(opt_secs(a));
        self.ack_delay_s.push(opt_secs(b));
        self.handshake_rtt_s.push(match (a, b) {
            (Some(a), Some(b)) => secs(a + b),
            _ => f64::NAN,
        });
        self.vantage.push(Vantage::of(c) as u8);
        push_gaps(&mut self.syn_gaps_s, &mut self.syn_gap_class, &c.syns.gaps_ns);
        push_gaps(&mut self.synack_gaps_s, &mut self.synack_gap_class, &c.synacks.gaps_ns);
        self.end.push(c.end as u8);
        self.packets_c2s.push(c.packets[0]);
        self.packets_s2c.push(c.packets[1]);
        self.bytes_c2s.push(c.payload_bytes[0]);
        self.bytes_s2c.push(c.payload_bytes[1]);
    }

    /// Appends another table's rows (several traces into one result).
    pub fn append(&mut self, mut other: ConnectionTable) {
        macro_rules! cat {
            ($($f:ident),*) => { $( self.$f.append(&mut other.$f); )* };
        }
        cat!(trace, conn_id, client_port, server_port, syn_seen, client_isn, first_ts_s, duration_s,
             syn_count, synack_count, established, handshake_rtt_s, synack_delay_s, ack_delay_s,
             vantage, end, packets_c2s, packets_s2c, bytes_c2s, bytes_s2c);
        append_strings(&mut self.client_ip, other.client_ip);
        append_strings(&mut self.server_ip, other.server_ip);
        append_list(&mut self.syn_gaps_s, other.syn_gaps_s);
        append_list(&mut self.syn_gap_class, other.syn_gap_class);
        append_list(&mut self.synack_gaps_s, other.synack_gaps_s);
        append_list(&mut self.synack_gap_class, other.synack_gap_class);
    }
}

fn push_gaps(gaps: &mut ListColumn<f64>, classes: &mut ListColumn<u8>, gaps_ns: &[u64]) {
    gaps.push(gaps_ns.iter().map(|&g| secs(g)));
    classes.push(gaps_ns.iter().map(|&g| GapClass::classify(secs(g)).code()));
}

fn append_strings(a: &mut StringColumn, b: StringColumn) {
    if b.offsets.is_empty() {
        return;
    }
    if a.offsets.is_empty() {
        *a = b;
        return;
    }
    let base = a.data.len() as i32;
    a.offsets.extend(b.offsets[1..].iter().map(|o| o + base));
    a.data.extend_from_slice(&b.data);
}

fn append_list<T>(a: &mut ListColumn<T>, mut b: ListColumn<T>) {
    if b.offsets.is_empty() {
        return;
    }
    if a.offsets.is_empty() {
        *a = b;
        return;
    }
    let base = a.values.len() as i32;
    a.offsets.extend(b.offsets[1..].iter().map(|o| o + base));
    a.values.append(&mut b.values);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_formatted_ipv4_equals_the_standard_formatter() {
        let mut col = StringColumn::default();
        let addrs = ["0.0.0.0", "10.0.9.1", "192.168.100.255", "255.255.255.255", "1.20.199.7"];
        for a in addrs {
            col.push_ip(a.parse().unwrap());
        }
        col.push_ip("2001:db8::1".parse().unwrap());
        let text = String::from_utf8(col.data.clone()).unwrap();
        let items: Vec<&str> = col.offsets.windows(2).map(|w| &text[w[0] as usize..w[1] as usize]).collect();
        assert_eq!(items, [&addrs[..], &["2001:db8::1"]].concat());
    }
}
