//! `shortflow-synflood`: a paced SYN generator for the optimizer's flood test and benchmark.
//! Sends SYNs from SRC (and the next `--sources - 1` addresses) with changing source ports
//! to DST:PORT through a raw socket, RATE per second for SECONDS, in batches every
//! millisecond on absolute deadlines, then prints one JSON line: sent, errors, seconds.
//! Use it only between namespaces you created: it forges source addresses.

use std::net::Ipv4Addr;

use clap::Parser;
use shortflow_sys::now_ns;
use shortflow_wire::{encode_frame, Endpoint, Framing, LinkType, Segment, SegmentExtra, TcpFlags, TcpOptions};

#[derive(Parser, Debug)]
#[command(name = "shortflow-synflood", about = "Paced SYN generator (raw socket) for the synopt flood test")]
struct Args {
    #[arg(long)]
    src: Ipv4Addr,
    /// Source addresses used, counting up from --src.
    #[arg(long, default_value_t = 1)]
    sources: u32,
    #[arg(long)]
    dst: Ipv4Addr,
    #[arg(long)]
    port: u16,
    /// SYNs per second.
    #[arg(long)]
    rate: u64,
    #[arg(long)]
    seconds: f64,
}

/// An IPv4 SYN with an MSS option (1460), built by the wire layer, checksums filled.
fn syn(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, isn: u32) -> Vec<u8> {
    let seg = Segment {
        src: Endpoint::v4(src.octets(), sport),
        dst: Endpoint::v4(dst.octets(), dport),
        seq: isn,
        ack: 0,
        flags: TcpFlags(TcpFlags::SYN),
        window: 64240,
        payload_len: 0,
    };
    let opts = TcpOptions { mss: Some(1460), ..TcpOptions::default() };
    let extra = SegmentExtra { ip_id: 0, ttl: 64, ip_options: 0, opts };
    let mut p = Vec::with_capacity(44);
    encode_frame(&mut p, LinkType::Raw, &Framing::default(), &seg, &extra).expect("an IPv4 SYN always encodes");
    p
}

fn sleep_until(t_ns: u64) {
    let ts = libc::timespec { tv_sec: (t_ns / 1_000_000_000) as libc::time_t, tv_nsec: (t_ns % 1_000_000_000) as libc::c_long };
    // SAFETY: absolute sleep on CLOCK_MONOTONIC with a valid timespec.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
}

fn main() {
    let a = Args::parse();
    // SAFETY: a raw socket we own (IPPROTO_RAW: we write the IP header).
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW) };
    if fd < 0 {
        eprintln!("shortflow-synflood: raw socket: {} (needs root)", std::io::Error::last_os_error());
        std::process::exit(1);
    }
    // SAFETY: zeroed sockaddr_in, filled below.
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    sa.sin_family = libc::AF_INET as libc::sa_family_t;
    sa.sin_addr.s_addr = u32::from_ne_bytes(a.dst.octets());
    let total = (a.rate as f64 * a.seconds) as u64;
    let per_ms = a.rate as f64 / 1000.0;
    let (mut sent, mut errors) = (0u64, 0u64);
    let start = now_ns();
    let mut tick = 0u64;
    while sent + errors < total {
        tick += 1;
        let due = ((tick as f64 * per_ms) as u64).min(total);
        while sent + errors < due {
            let i = sent + errors;
            let src = Ipv4Addr::from(u32::from(a.src) + (i % u64::from(a.sources.max(1))) as u32);
            let sport = 1024 + ((i / u64::from(a.sources.max(1))) % 64_000) as u16;
            let p = syn(src, a.dst, sport, a.port, (i as u32).wrapping_mul(2_654_435_761));
            // SAFETY: sendto with our buffer and sockaddr.
            let r = unsafe {
                libc::sendto(
                    fd,
                    p.as_ptr().cast(),
                    p.len(),
                    0,
                    (&sa as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as u32,
                )
            };
            if r < 0 {
                errors += 1
            } else {
                sent += 1
            }
        }
        sleep_until(start + tick * 1_000_000);
    }
    let secs = (now_ns() - start) as f64 / 1e9;
    println!("{{\"sent\": {sent}, \"errors\": {errors}, \"seconds\": {secs:.3}, \"rate\": {:.0}}}", sent as f64 / secs);
}
