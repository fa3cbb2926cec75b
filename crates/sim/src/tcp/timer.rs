//! When a timer armed at `now` for `timeout` fires: exactly, or as Linux's timers do —
//! whole jiffies (usecs_to_jiffies rounds up; expiry at a tick of the jiffies clock), and
//! with `timer_slack`, on the timer wheel's bucket (kernel/time/timer.c calc_index: level
//! L holds timers 64·8^(L−1) .. 64·8^L jiffies ahead at a granularity of 8^L jiffies and
//! rounds the expiry up to the next multiple, so a 1 s timer at HZ 250 fires up to 32 ms
//! late, a 3 s one up to 256 ms).

use crate::time::{Duration, Instant};

/// kernel/time/timer.c: LVL_CLK_SHIFT 3, LVL_BITS 6.
const LVL_CLK_SHIFT: u32 = 3;
const LVL_BITS: u32 = 6;

/// The jiffies clock of one machine: tick length and the counter's value at time zero
/// (both ends of a testbed run share the kernel, so the world has one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jiffies {
    pub jiffy: Duration,
    /// jiffies at simulated time 0, in nanoseconds (value × jiffy + phase within the tick).
    pub origin_ns: u64,
    pub slack: bool,
}

impl Jiffies {
    fn now_j(&self, now: Instant) -> u64 {
        (self.origin_ns + now.0) / self.jiffy.0
    }

    /// The jiffies counter at `now`.
    pub fn ticks(&self, now: Instant) -> u64 {
        self.now_j(now)
    }

    /// The instant a timer armed at `now` for `timeout` fires.
    pub fn deadline(&self, now: Instant, timeout: Duration) -> Instant {
        let j = self.jiffy.0;
        let ticks = timeout.0.div_ceil(j).max(1);
        let now_j = self.now_j(now);
        let mut expires = now_j + ticks;
        if self.slack {
            // calc_wheel_index: the level by distance; calc_index rounds up to its granularity.
            let delta = ticks;
            let mut lvl = 0;
            while lvl < 8 && delta >= 1u64 << (LVL_BITS + lvl * LVL_CLK_SHIFT) {
                lvl += 1;
            }
            if lvl > 0 {
                let shift = lvl * LVL_CLK_SHIFT;
                expires = ((expires >> shift) + 1) << shift;
            }
        }
        let at = (expires * j).saturating_sub(self.origin_ns);
        Instant(at.max(now.0))
    }

    /// The range a timer of `timeout` may fire in, after `now` (for judging agreement).
    pub fn range(&self, timeout: Duration) -> (Duration, Duration) {
        let j = self.jiffy.0;
        let ticks = timeout.0.div_ceil(j).max(1);
        let mut lvl = 0;
        while self.slack && lvl < 8 && ticks >= 1u64 << (LVL_BITS + lvl * LVL_CLK_SHIFT) {
            lvl += 1;
        }
        let gran = if lvl > 0 { 1u64 << (lvl * LVL_CLK_SHIFT) } else { 0 };
        (Duration((ticks - 1) * j), Duration((ticks + gran) * j))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_second_lands_on_the_level_one_grid_up_to_32ms_late() {
        let clk = Jiffies { jiffy: Duration::from_millis(4), origin_ns: 0, slack: true };
        // 1 s = 250 jiffies: level 1 (64..511), granularity 8 jiffies = 32 ms.
        let d = clk.deadline(Instant::ZERO, Duration::from_secs(1));
        assert_eq!(d, Instant::ZERO + Duration::from_millis(1024), "(250 >> 3) + 1 = 32 → 256 jiffies");
        let (lo, hi) = clk.range(Duration::from_secs(1));
        assert_eq!((lo, hi), (Duration::from_millis(996), Duration::from_millis(1032)));
        // 3 s = 750 jiffies: level 2, granularity 64 jiffies = 256 ms.
        let (_, hi) = clk.range(Duration::from_secs(3));
        assert_eq!(hi, Duration::from_millis(3256));
        // A short timer (40 ms = 10 jiffies) stays on level 0: whole jiffies only.
        let d = clk.deadline(Instant(1_000_000), Duration::from_millis(40));
        assert_eq!(d, Instant(40_000_000));
    }

    #[test]
    fn without_slack_only_whole_jiffies() {
        let clk = Jiffies { jiffy: Duration::from_millis(4), origin_ns: 2_000_000, slack: false };
        // now = 1 ms is 3 ms into a tick (origin 2 ms): 260 ms = 65 ticks from that tick.
        let d = clk.deadline(Instant(1_000_000), Duration::from_millis(260));
        assert_eq!(d, Instant(65 * 4_000_000 - 2_000_000), "a jiffies timer counts the tick it was armed in");
    }
}
