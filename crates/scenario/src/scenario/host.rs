//! `[client]` and `[server]`: each host's stack profile with the file's overrides.

use super::err;
use super::raw::*;
use crate::error::ScenarioError;
use crate::profile::{
    self, AckCount, CongestionControlName, DelayedAck, InitialWindow, RecoveryName, SpuriousRtoName, StackConfig,
};
use crate::time::Duration;

/// What SACK off implies, as the kernel implies it: without SACK (tcp_is_reno) Linux runs
/// no RACK (tcp_identify_packet_loss calls tcp_newreno_mark_lost instead of
/// tcp_rack_mark_lost) and no tail loss probe (tcp_schedule_loss_probe returns at
/// `!tcp_is_sack(tp)`); its PRR stays, duplicate ACKs counting as SACKed segments
/// (tcp_add_reno_sack). A mechanism the profile had on is turned off with a note; one the
/// file itself turns on is a contradiction, refused in one message naming every key
/// involved and the fix.
fn sack_off(c: &mut StackConfig, h: &RawHost, src: &str, side: &str, notes: &mut Vec<String>) -> Result<(), ScenarioError> {
    let needs = c.recovery.needs_sack();
    let involved = [
        (needs, h.recovery.is_some(), "recovery", format!("{:?}", c.recovery.name())),
        (c.rack, h.rack.is_some(), "rack", "true".to_string()),
        (c.tlp, h.tlp.is_some(), "tlp", "true".to_string()),
    ];
    let explicit: Vec<(&str, &String)> =
        involved.iter().filter(|(on, set, ..)| *on && *set).map(|(_, _, k, v)| (*k, v)).collect();
    if !explicit.is_empty() {
        let why = if h.sack.is_some() { "the file sets sack = false" } else { "the profile has no SACK" };
        let with_values: Vec<String> = explicit.iter().map(|(k, v)| format!("{side}.{k} = {v}")).collect();
        let keys: Vec<String> = explicit.iter().map(|(k, _)| format!("{side}.{k}")).collect();
        return Err(err(
            src,
            &format!("{side}.sack"),
            format!(
                "false ({why}), but {} work on SACK information: set {side}.sack = true, or drop {} (without SACK \
                 the model does what the kernel does: no RACK, no TLP, duplicate ACKs counted as SACKs)",
                with_values.join(", "),
                keys.join(" and "),
            ),
        ));
    }
    let implied: Vec<&str> = involved.iter().filter(|(on, ..)| *on).map(|(_, _, k, _)| *k).collect();
    if implied.is_empty() {
        return Ok(());
    }
    if needs {
        c.recovery = RecoveryName::NewReno; // RFC 6675 without SACK: RFC 6582
    }
    c.rack = false;
    c.tlp = false;
    let what: Vec<String> = implied
        .iter()
        .map(|k| match *k {
            "recovery" => format!("{side}.recovery = \"newreno\""),
            k => format!("{side}.{k} = false"),
        })
        .collect();
    let prr =
        if c.recovery == RecoveryName::Prr { "; PRR stays, duplicate ACKs counted as SACKs (tcp_add_reno_sack)" } else { "" };
    notes.push(format!(
        "{side}.sack = false implies {}, as the kernel without SACK (tcp_is_reno: tcp_newreno_mark_lost, \
         no tcp_schedule_loss_probe){prr}",
        what.join(", ")
    ));
    Ok(())
}

pub(super) fn host(
    h: &RawHost,
    src: &str,
    side: &str,
    default: &str,
    notes: &mut Vec<String>,
) -> Result<StackConfig, ScenarioError> {
    let key = |k: &str| format!("{side}.{k}");
    let name = h.stack.as_deref().unwrap_or(default);
    let mut c = profile::profile(name).ok_or_else(|| {
        err(src, &key("stack"), format!("unknown stack profile {name:?} (known: {})", profile::PROFILE_NAMES.join(", ")))
    })?;
    macro_rules! set {
        ($field:expr, $value:expr) => {
            if let Some(v) = $value {
                $field = v;
            }
        };
    }
    set!(c.rto.initial, h.syn_rto.map(|d| d.0));
    set!(c.rto.min, h.rto_min.map(|d| d.0));
    set!(c.rto.max, h.rto_max.map(|d| d.0));
    set!(c.rto.granularity, h.clock_granularity.map(|d| d.0));
    set!(c.rto.min_on_variance, h.rto_min_on_variance);
    if let Some(d) = h.rto_after_syn_loss {
        c.rto.after_syn_loss = Some(d.0);
    }
    set!(c.syn_retries, h.syn_retries);
    set!(c.synack_retries, h.synack_retries);
    set!(c.synack_on_duplicate_syn, h.synack_on_duplicate_syn);
    set!(c.iw_one_after_handshake_loss, h.iw_one_after_handshake_loss);
    set!(c.linux_handshake, h.linux_handshake);
    set!(c.slow_start_after_idle, h.slow_start_after_idle);
    set!(c.abc_limit, h.abc_limit);
    set!(c.dupack_threshold, h.dupack_threshold);
    set!(c.ack.ack_every, h.ack_every);
    set!(c.ack.quick_acks, h.quick_acks);
    set!(c.coalesce_writes, h.coalesce_writes);
    if c.rto.min > c.rto.max {
        return Err(err(src, &key("rto_min"), "is larger than rto_max"));
    }
    initial_window(&mut c, h, src, side)?;
    if let Some(cc) = &h.congestion_control {
        congestion_control(&mut c, cc, src, side)?;
    }
    set!(c.timestamps, h.timestamps);
    set!(c.sack, h.sack);
    set!(c.window_scaling, h.window_scaling);
    set!(c.rack, h.rack);
    set!(c.tlp, h.tlp);
    set!(c.hystart, h.hystart);
    set!(c.timer_slack, h.timer_slack);
    if let Some(p) = h.processing_time {
        c.processing_time = p.0;
    }
    if let Some(l) = h.timer_lag {
        if c.jiffy.is_none() {
            return Err(err(src, &key("timer_lag"), format!("the {:?} profile has no jiffies timers to run late", c.profile)));
        }
        c.timer_lag = l.0;
    }
    if let Some(r) = &h.recovery {
        c.recovery = RecoveryName::from_name(r)
            .ok_or_else(|| err(src, &key("recovery"), format!("{r:?}: unknown recovery (known: {})", RecoveryName::known())))?;
    }
    if let Some(s) = &h.spurious_rto {
        c.spurious_rto = SpuriousRtoName::from_name(s).ok_or_else(|| {
            let known = SpuriousRtoName::known();
            err(src, &key("spurious_rto"), format!("{s:?}: unknown spurious-timeout response (known: {known})"))
        })?;
    }
    if !c.sack {
        sack_off(&mut c, h, src, side, notes)?;
    }
    if c.timer_slack && c.jiffy.is_none() {
        return Err(err(src, &key("timer_slack"), format!("the {:?} profile has no jiffies timers to be slack", c.profile)));
    }
    ack_policy(&mut c, h, src, side)?;
    segment_sizes(&mut c, h, src, side)?;
    if c.ack.ack_every == 0 {
        return Err(err(src, &key("ack_every"), "must be at least 1"));
    }
    if c.dupack_threshold == 0 {
        return Err(err(src, &key("dupack_threshold"), "must be at least 1"));
    }
    Ok(c)
}

fn ack_policy(c: &mut StackConfig, h: &RawHost, src: &str, side: &str) -> Result<(), ScenarioError> {
    let key = |k: &str| format!("{side}.{k}");
    let timeout = h.delayed_ack_timeout.map(|d| d.0);
    if let Some(mode) = &h.delayed_ack {
        c.ack.delayed = match mode.as_str() {
            "off" => DelayedAck::Off,
            "timer" => DelayedAck::Timer(timeout.unwrap_or(Duration::from_millis(200))),
            "bsd_tick" => DelayedAck::Tick { period: timeout.unwrap_or(Duration::from_millis(200)), phase: Duration::ZERO },
            other => {
                return Err(err(src, &key("delayed_ack"), format!("{other:?}: expected \"timer\", \"bsd_tick\" or \"off\"")))
            }
        };
    } else if let Some(t) = timeout {
        c.ack.delayed = match c.ack.delayed {
            DelayedAck::Tick { phase, .. } => DelayedAck::Tick { period: t, phase },
            _ => DelayedAck::Timer(t),
        };
    }
    if let Some(p) = h.delayed_ack_phase {
        match &mut c.ack.delayed {
            DelayedAck::Tick { period, phase } if p.0 < *period => *phase = p.0,
            DelayedAck::Tick { .. } => return Err(err(src, &key("delayed_ack_phase"), "must be shorter than the tick period")),
            _ => return Err(err(src, &key("delayed_ack_phase"), "applies only to delayed_ack = \"bsd_tick\"")),
        }
    }
    if matches!(c.ack.delayed, DelayedAck::Timer(d) | DelayedAck::Tick { period: d, .. } if d == Duration::ZERO) {
        return Err(err(src, &key("delayed_ack_timeout"), "must be longer than 0ms (use delayed_ack = \"off\")"));
    }
    if let Some(q) = h.quickack {
        if q && h.delayed_ack.as_deref().is_some_and(|m| m != "off") {
            return Err(err(src, &key("quickack"), "quickack = true contradicts delayed_ack"));
        }
        if q {
            c.ack.delayed = DelayedAck::Off;
        }
    }
    if let Some(count) = &h.ack_count {
        c.ack.count = match count.as_str() {
            "bytes" => AckCount::Bytes,
            "segments" => AckCount::Segments,
            other => return Err(err(src, &key("ack_count"), format!("{other:?}: expected \"bytes\" or \"segments\""))),
        };
    }
    Ok(())
}

/// `initial_window` (or Solaris's `slow_start_initial`) over the profile's.
fn initial_window(c: &mut StackConfig, h: &RawHost, src: &str, side: &str) -> Result<(), ScenarioError> {
    let key = |k: &str| format!("{side}.{k}");
    match (&h.initial_window, h.slow_start_initial) {
        (Some(_), Some(_)) => {
            return Err(err(src, &key("slow_start_initial"), "is Solaris's name for initial_window: set one of them"))
        }
        (Some(RawWindow::Segments(n)), None) => c.initial_window = InitialWindow::Segments(*n),
        (Some(RawWindow::Named(s)), None) if s == "rfc3390" => c.initial_window = InitialWindow::Rfc3390,
        (Some(RawWindow::Named(s)), None) => {
            return Err(err(src, &key("initial_window"), format!("{s:?}: expected a number of segments or \"rfc3390\"")))
        }
        (None, Some(n)) => c.initial_window = InitialWindow::Segments(n),
        (None, None) => {}
    }
    if c.initial_window == InitialWindow::Segments(0) {
        return Err(err(src, &key("initial_window"), "must be at least 1 segment"));
    }
    Ok(())
}

/// The congestion control the file names, `cc`, over the profile's.
fn congestion_control(c: &mut StackConfig, cc: &str, src: &str, side: &str) -> Result<(), ScenarioError> {
    let key = |k: &str| format!("{side}.{k}");
    // "reno"/"newreno" name Reno's window rules, and for a profile without SACK also
    // that recovery (their meaning before congestion control became a plug-in).
    match cc {
        "reno" | "newreno" => {
            c.congestion_control = CongestionControlName::Reno;
            if matches!(c.recovery, RecoveryName::Reno | RecoveryName::NewReno) {
                c.recovery = RecoveryName::from_name(cc).expect("reno and newreno are recoveries");
            }
        }
        "cubic" => c.congestion_control = CongestionControlName::Cubic,
        // BBR is modelled as the kernel's tcp_bbr.c on the Linux sender (rate samples,
        // pacing, PRR-free recovery): no other profile has that sender.
        "bbr" if c.profile == "linux" => c.congestion_control = CongestionControlName::Bbr,
        "bbr" => {
            return Err(err(
                src,
                &key("congestion_control"),
                format!("\"bbr\" is Linux's tcp_bbr.c: it needs stack = \"linux\", not {:?}", c.profile),
            ))
        }
        other => {
            return Err(err(
                src,
                &key("congestion_control"),
                format!("{other:?}: the simulator models \"reno\", \"newreno\", \"cubic\" and \"bbr\""),
            ))
        }
    }
    Ok(())
}

/// `mss`, `mtu` and `receive_window` over the profile's (the window sizes the Linux
/// receiver's buffers as the testbed sets them).
fn segment_sizes(c: &mut StackConfig, h: &RawHost, src: &str, side: &str) -> Result<(), ScenarioError> {
    let key = |k: &str| format!("{side}.{k}");
    if let Some(m) = h.mss {
        if !(64..=65_495).contains(&m.0) {
            return Err(err(src, &key("mss"), "must be between 64B and 65495B"));
        }
        c.mss = m.0 as u32;
    }
    if let Some(m) = h.mtu {
        if c.mtu.is_none() {
            return Err(err(
                src,
                &key("mtu"),
                format!("the {:?} profile sends with the MSS it announces: set mss instead", c.profile),
            ));
        }
        if !(576..=65_535).contains(&m.0) {
            return Err(err(src, &key("mtu"), "must be between 576B (RFC 791) and 65535B"));
        }
        c.mtu = Some(m.0 as u32);
        if h.mss.is_none() {
            // The route's advmss follows its MTU (ipv4_default_advmss: mtu − 40).
            c.mss = m.0 as u32 - 40;
        }
    }
    if let Some(w) = h.receive_window {
        if w.0 == 0 || w.0 > u64::from(u32::MAX) {
            return Err(err(src, &key("receive_window"), "must be between 1B and 4GB"));
        }
        c.receive_window = w.0 as u32;
        if let Some(lr) = &mut c.linux_receiver {
            // As the testbed sets it: tcp_rmem[1] = 2 × window (tcp_adv_win_scale 1),
            // tcp_rmem[2] at least 6 MB, route initrwnd = the window in segments.
            let buf = 2 * w.0;
            lr.rmem = [4096, buf, buf.max(6_291_456)];
            lr.init_rcv_wnd = Some(w.0.div_ceil(u64::from(c.mss)) as u32);
        }
    }
    Ok(())
}
