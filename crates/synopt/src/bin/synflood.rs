//! `shortflow-synflood`: a paced SYN generator for the optimizer's flood test and benchmark.
//! Sends SYNs from SRC (and the next `--sources - 1` addresses) with changing source ports
//! to DST:PORT through a raw socket, RATE per second for SECONDS, in batches every
//! millisecond on absolute deadlines, then prints one JSON line: sent, errors, seconds.
//! Use it only between namespaces you created: it forges source addresses.

use std::net::Ipv4Addr;

use clap::Parser;
use shortflow_synopt::packet::{fix_checksums, SYN};
use shortflow_synopt::sys::now_ns;

#[derive(Parser, Debug)]
#[command(
    name = "shortflow-synflood",
    about = "Paced SYN generator (raw socket) for the synopt flood test"
)]
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

fn syn(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, isn: u32) -> Vec<u8> {
    let mut p = vec![0u8; 44];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&44u16.to_be_bytes());
    p[6] = 0x40; // don't fragment
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    let t = &mut p[20..];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[4..8].copy_from_slice(&isn.to_be_bytes());
    t[12] = 6 << 4;
    t[13] = SYN;
    t[14..16].copy_from_slice(&64240u16.to_be_bytes());
    t[20..24].copy_from_slice(&[2, 4, 0x05, 0xb4]); // MSS 1460
    fix_checksums(&mut p);
    p
}

fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (t_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: absolute sleep on CLOCK_MONOTONIC with a valid timespec.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

fn main() {
    let a = Args::parse();
    // SAFETY: a raw socket we own (IPPROTO_RAW: we write the IP header).
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW) };
    if fd < 0 {
        eprintln!(
            "shortflow-synflood: raw socket: {} (needs root)",
            std::io::Error::last_os_error()
        );
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
            let p = syn(
                src,
                a.dst,
                sport,
                a.port,
                (i as u32).wrapping_mul(2_654_435_761),
            );
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
    println!(
        "{{\"sent\": {sent}, \"errors\": {errors}, \"seconds\": {secs:.3}, \"rate\": {:.0}}}",
        sent as f64 / secs
    );
}
