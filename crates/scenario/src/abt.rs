//! Connection vectors in tmix's text format: the a-b-t model of a TCP connection's
//! application data units (ADUs) and quiet times, as the analyzer extracts them from a
//! capture and as the simulator and the testbed replay them.
//!
//! The format followed is tmix's for ns-2 (Weigle, Adurthi, Hernández-Campos, Jeffay,
//! Smith, "Tmix: a tool for generating realistic TCP application workloads in ns-2",
//! SIGCOMM CCR 36(3), 2006), as tmix's own connection-vector dump writes it. One vector
//! per connection, times in microseconds:
//!
//! ```text
//! SEQ <start> <epochs> <id> <id2>      a sequential vector: request/response epochs
//! w <initiator window> <acceptor window>   bytes
//! r <minimum RTT>
//! l <loss initiator→acceptor> <loss acceptor→initiator>   fractions
//! > <bytes>                            the initiator sends an ADU (a)
//! t <quiet>                            after `>`: the acceptor's wait before answering
//! < <bytes>                            the acceptor sends an ADU (b)
//! t <quiet>                            after `<`: the initiator's wait before its next ADU
//!
//! CONC <start> <initiator ADUs> <acceptor ADUs> <id> <id2>   both sides independently
//! c> <bytes> / t> <quiet>              the initiator's ADUs, each followed by its wait
//! c< <bytes> / t< <quiet>              the acceptor's
//! ```
//!
//! An epoch may lack its request (`<` first: the acceptor speaks first or again of its own
//! accord) or its response. Blank lines and `#` comments are skipped.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// One sequential epoch: a request, the acceptor's wait, a response, the initiator's wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Epoch {
    pub request: u64,
    /// µs from the request's arrival to the response (tmix's `t` after `>`).
    pub response_delay_us: u64,
    pub response: u64,
    /// µs from the response's arrival to the next request, or to the close after the last.
    pub interval_us: u64,
}

/// One side's ADU of a concurrent vector and its wait after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Adu {
    pub bytes: u64,
    pub wait_us: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Units {
    Sequential(Vec<Epoch>),
    /// [initiator's, acceptor's].
    Concurrent([Vec<Adu>; 2]),
}

/// One connection's vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnVector {
    /// µs after the first connection's start.
    pub start_us: u64,
    pub id: u64,
    /// Receive windows in bytes: [initiator, acceptor] (0: unknown).
    pub window: [u64; 2],
    /// Minimum RTT in µs (0: unknown).
    pub min_rtt_us: u64,
    /// Loss rates [initiator→acceptor, acceptor→initiator].
    pub loss: [f64; 2],
    pub units: Units,
}

impl ConnVector {
    /// Its two-way delay beyond a path's own `path_rtt_ns`, in ns: what a per-connection
    /// delay (ns-2's DelayBox) adds to its packets so it runs over its own RTT.
    pub fn extra_rtt_ns(&self, path_rtt_ns: u64) -> u64 {
        self.min_rtt_us.saturating_mul(1000).saturating_sub(path_rtt_ns)
    }
}

/// The vectors in the order a replay opens them: by start time, ties in the file's order.
pub fn in_start_order(vectors: &[ConnVector]) -> Vec<ConnVector> {
    let mut v = vectors.to_vec();
    v.sort_by_key(|v| v.start_us);
    v
}

/// A line that is not tmix's format: its number (from 1) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct AbtError {
    pub line: usize,
    pub message: String,
}

fn err(line: usize, message: impl Into<String>) -> AbtError {
    AbtError { line, message: crate::error::clip(&message.into(), 2 * crate::error::MAX_TEXT) }
}

/// The vectors of a tmix connection-vector file.
pub fn parse(text: &str) -> Result<Vec<ConnVector>, AbtError> {
    let mut out: Vec<ConnVector> = Vec::new();
    // Sequential lines are read as a list first: a `t` means what its neighbours say.
    let mut seq: Vec<(usize, char, u64)> = Vec::new();
    let mut header_line = 0;
    let mut declared: [u64; 2] = [0; 2];
    let finish = |v: &mut ConnVector, seq: &mut Vec<(usize, char, u64)>, line: usize, declared: [u64; 2]| {
        match &mut v.units {
            Units::Sequential(epochs) => {
                *epochs = epochs_of(seq)?;
                if epochs.len() as u64 != declared[0] {
                    return Err(err(line, format!("SEQ declares {} epochs, {} follow", declared[0], epochs.len())));
                }
            }
            Units::Concurrent(sides) => {
                for (k, name) in ["initiator", "acceptor"].iter().enumerate() {
                    if sides[k].len() as u64 != declared[k] {
                        let n = sides[k].len();
                        return Err(err(line, format!("CONC declares {} {name} ADUs, {n} follow", declared[k])));
                    }
                }
            }
        }
        seq.clear();
        Ok(())
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let mut fields = content.split_whitespace();
        let tag = fields.next().expect("not empty");
        let nums: Vec<&str> = fields.collect();
        let int = |k: usize| -> Result<u64, AbtError> {
            let s = nums.get(k).ok_or_else(|| err(line, format!("{tag}: field {} missing", k + 1)))?;
            s.parse::<u64>().map_err(|_| err(line, format!("{tag}: {s:?} is not a whole number")))
        };
        match tag {
            "SEQ" | "CONC" => {
                if let Some(v) = out.last_mut() {
                    finish(v, &mut seq, header_line, declared)?;
                }
                header_line = line;
                let start_us = int(0)?;
                let (units, id_at) = if tag == "SEQ" {
                    declared = [int(1)?, 0];
                    (Units::Sequential(Vec::new()), 2)
                } else {
                    declared = [int(1)?, int(2)?];
                    (Units::Concurrent([Vec::new(), Vec::new()]), 3)
                };
                let id = if nums.len() > id_at { int(id_at)? } else { out.len() as u64 };
                out.push(ConnVector { start_us, id, window: [0; 2], min_rtt_us: 0, loss: [0.0; 2], units });
            }
            _ => {
                let v = out.last_mut().ok_or_else(|| err(line, format!("{tag}: before any SEQ or CONC line")))?;
                match (tag, &mut v.units) {
                    ("w", _) => v.window = [int(0)?, int(1)?],
                    ("r", _) => v.min_rtt_us = int(0)?,
                    ("l", _) => {
                        for k in 0..2 {
                            let s = nums.get(k).ok_or_else(|| err(line, format!("l: field {} missing", k + 1)))?;
                            let x: f64 = s.parse().map_err(|_| err(line, format!("l: {s:?} is not a number")))?;
                            if !(0.0..=1.0).contains(&x) {
                                return Err(err(line, format!("l: loss rate {s} is not between 0 and 1")));
                            }
                            v.loss[k] = x;
                        }
                    }
                    (">" | "<" | "t", Units::Sequential(_)) => seq.push((line, tag.chars().next().unwrap(), int(0)?)),
                    ("c>" | "c<", Units::Concurrent(sides)) => {
                        sides[usize::from(tag == "c<")].push(Adu { bytes: int(0)?, wait_us: 0 });
                    }
                    ("t>" | "t<", Units::Concurrent(sides)) => {
                        let side = &mut sides[usize::from(tag == "t<")];
                        let last = side.last_mut().ok_or_else(|| err(line, format!("{tag}: before any ADU of its side")))?;
                        last.wait_us = int(0)?;
                    }
                    (">" | "<" | "t" | "c>" | "c<" | "t>" | "t<", _) => {
                        return Err(err(line, format!("{tag}: not a line of a {} vector", kind(&v.units))))
                    }
                    _ => {
                        return Err(err(
                            line,
                            format!("unknown line {tag:?}: expected SEQ, CONC, w, r, l, >, <, t, c>, c<, t>, t<"),
                        ))
                    }
                }
            }
        }
    }
    if let Some(v) = out.last_mut() {
        finish(v, &mut seq, header_line, declared)?;
    }
    Ok(out)
}

fn kind(u: &Units) -> &'static str {
    match u {
        Units::Sequential(_) => "SEQ",
        Units::Concurrent(_) => "CONC",
    }
}

/// The epochs of a sequential vector's `>`, `<` and `t` lines.
fn epochs_of(lines: &[(usize, char, u64)]) -> Result<Vec<Epoch>, AbtError> {
    let mut out: Vec<Epoch> = Vec::new();
    let mut last = ' ';
    // The last epoch has its request and waits for its response (a `>`, perhaps a `t`).
    let mut awaiting = false;
    for (k, &(line, tag, n)) in lines.iter().enumerate() {
        match tag {
            '>' => {
                out.push(Epoch { request: n, ..Epoch::default() });
                awaiting = true;
            }
            '<' => {
                match out.last_mut() {
                    Some(e) if awaiting => e.response = n,
                    _ => out.push(Epoch { response: n, ..Epoch::default() }),
                }
                awaiting = false;
            }
            _ => {
                let e = out.last_mut().ok_or_else(|| err(line, "t: before any ADU"))?;
                let answered = lines.get(k + 1).is_some_and(|&(_, next, _)| next == '<');
                if last == 't' {
                    return Err(err(line, "t: two quiet times in a row"));
                } else if last == '>' && answered {
                    e.response_delay_us = n;
                } else {
                    e.interval_us = n;
                    awaiting = false;
                }
            }
        }
        last = tag;
    }
    Ok(out)
}

/// The epochs as tmix's text can say them, which `format` writes and `parse` reads back
/// as they are. The text cannot tell some epochs from others, so they are put as it reads
/// them:
/// - a request left unanswered in its epoch followed by a response alone in the next (`>`,
///   `t`, `<` reads as one request, the acceptor's wait and its response): one epoch, the
///   wait between them the acceptor's;
/// - an epoch with neither request nor response after another: its wait joins that one's;
/// - a wait for a response that is not there (or after no request): none.
pub fn writable(epochs: &[Epoch]) -> Vec<Epoch> {
    let mut out: Vec<Epoch> = Vec::with_capacity(epochs.len());
    for e in epochs {
        let mut e = *e;
        if e.request == 0 || e.response == 0 {
            e.response_delay_us = 0;
        }
        match out.last_mut() {
            Some(before) if e.request == 0 && e.response == 0 => {
                before.interval_us = before.interval_us.saturating_add(e.interval_us);
            }
            Some(before) if before.request > 0 && before.response == 0 && e.request == 0 => {
                *before =
                    Epoch { response_delay_us: before.interval_us, response: e.response, interval_us: e.interval_us, ..*before };
            }
            _ => out.push(e),
        }
    }
    out
}

/// The vectors as tmix's text (a sequential vector's epochs as `writable` puts them).
pub fn format(vectors: &[ConnVector]) -> String {
    let mut s = String::new();
    for v in vectors {
        let written;
        let units = match &v.units {
            Units::Sequential(epochs) => {
                written = Units::Sequential(writable(epochs));
                &written
            }
            concurrent => concurrent,
        };
        match units {
            Units::Sequential(epochs) => {
                let _ = writeln!(s, "SEQ {} {} {} 0", v.start_us, epochs.len(), v.id);
            }
            Units::Concurrent([a, b]) => {
                let _ = writeln!(s, "CONC {} {} {} {} 0", v.start_us, a.len(), b.len(), v.id);
            }
        }
        let _ = writeln!(s, "w {} {}", v.window[0], v.window[1]);
        let _ = writeln!(s, "r {}", v.min_rtt_us);
        let _ = writeln!(s, "l {:.6} {:.6}", v.loss[0], v.loss[1]);
        match units {
            Units::Sequential(epochs) => {
                for (i, e) in epochs.iter().enumerate() {
                    let last = i + 1 == epochs.len();
                    if e.request > 0 {
                        let _ = writeln!(s, "> {}", e.request);
                    }
                    if e.request > 0 && e.response > 0 {
                        let _ = writeln!(s, "t {}", e.response_delay_us);
                    }
                    if e.response > 0 || e.request == 0 {
                        let _ = writeln!(s, "< {}", e.response);
                    }
                    if !last || e.interval_us > 0 {
                        let _ = writeln!(s, "t {}", e.interval_us);
                    }
                }
            }
            Units::Concurrent(sides) => {
                for (side, tag) in sides.iter().zip([">", "<"]) {
                    for a in side {
                        let _ = writeln!(s, "c{tag} {}", a.bytes);
                        let _ = writeln!(s, "t{tag} {}", a.wait_us);
                    }
                }
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const TMIX_EXAMPLE: &str = "\
SEQ 6851 1 21217 555382       # starts at 6.851 ms, one epoch
w 64800 6432
r 1176194
l 0.000000 0.000000
> 245
t 51257
< 510
t 6304943
CONC 1429381 2 2 26876 793318
w 65535 5840
r 36556
l 0.000000 0.000000
c> 222
t> 62436302
c< 726
t< 62400173
c> 16
t> 725
c< 84
t< 130
";

    #[test]
    fn tmixs_own_example_reads_and_writes_back() {
        let v = parse(TMIX_EXAMPLE).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].start_us, 6851);
        assert_eq!(v[0].id, 21217);
        assert_eq!(v[0].min_rtt_us, 1_176_194);
        assert_eq!(v[0].window, [64800, 6432]);
        let want = Epoch { request: 245, response_delay_us: 51257, response: 510, interval_us: 6_304_943 };
        assert_eq!(v[0].units, Units::Sequential(vec![want]));
        let Units::Concurrent([a, b]) = &v[1].units else { panic!("CONC") };
        assert_eq!(a, &[Adu { bytes: 222, wait_us: 62_436_302 }, Adu { bytes: 16, wait_us: 725 }]);
        assert_eq!(b[1], Adu { bytes: 84, wait_us: 130 });
        assert_eq!(parse(&format(&v)).unwrap(), v);
    }

    #[test]
    fn epochs_without_request_or_response_round_trip() {
        let v = parse("SEQ 0 3 1 0\n< 50\nt 10\n> 20\nt 5\n< 30\nt 7\n> 40\n").unwrap();
        let Units::Sequential(e) = &v[0].units else { panic!() };
        assert_eq!(e[0], Epoch { request: 0, response_delay_us: 0, response: 50, interval_us: 10 });
        assert_eq!(e[1], Epoch { request: 20, response_delay_us: 5, response: 30, interval_us: 7 });
        assert_eq!(e[2], Epoch { request: 40, ..Epoch::default() });
        assert_eq!(parse(&format(&v)).unwrap(), v);
    }

    #[test]
    fn bad_lines_say_where_and_what() {
        assert_eq!(parse("> 5\n").unwrap_err().to_string(), "line 1: >: before any SEQ or CONC line");
        assert_eq!(parse("SEQ 0 1 0 0\n> x\n").unwrap_err().to_string(), "line 2: >: \"x\" is not a whole number");
        assert_eq!(parse("SEQ 0 2 0 0\n> 5\n").unwrap_err().to_string(), "line 1: SEQ declares 2 epochs, 1 follow");
        assert!(parse("SEQ 0 1 0 0\nc> 5\n").unwrap_err().to_string().contains("not a line of a SEQ vector"));
        assert!(parse("SEQ 0 1 0 0\nl 0.5 2\n> 1\n").unwrap_err().to_string().contains("not between 0 and 1"));
    }
}
