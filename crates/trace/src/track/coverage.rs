//! Which of a sender's data bytes the capture has seen: a segment that brings bytes not
//! seen before moves the data on *at the capture point*, be it beyond the highest byte
//! or into a stretch below it that was lost before the capture point (its repair). The
//! last such segment is when the data was whole there: where the testbed's router link
//! sees the response complete.

/// Stretches below the highest byte kept as unseen: a segment into a stretch forgotten
/// beyond this many counts as nothing new (a trace that leaves so many holes open is not
/// a short flow's).
const MAX_UNSEEN: usize = 64;

/// The bytes seen, as offsets relative to the sender's sequence base: one span from the
/// lowest to one past the highest byte seen, less the stretches inside it never seen.
/// Compact (the tracker keeps one per direction of every open connection): no span is
/// `low > high`, no time is `NONE`, and the stretches are allocated only when there is one.
#[derive(Debug, Clone)]
pub struct Coverage {
    low: i64,
    high: i64,
    // Boxed: 8 bytes where a Vec takes 24, in every half of every open connection.
    #[allow(clippy::box_collection)]
    unseen: Option<Box<Vec<(i64, i64)>>>,
    first_ts: u64,
    last_new_ts: u64,
}

const NONE: u64 = u64::MAX;

impl Default for Coverage {
    fn default() -> Self {
        Coverage { low: 1, high: 0, unseen: None, first_ts: NONE, last_new_ts: NONE }
    }
}

impl Coverage {
    /// When the first data passed (None before any data).
    pub fn first_ts(&self) -> Option<u64> {
        (self.first_ts != NONE).then_some(self.first_ts)
    }

    /// When data bytes not seen before last passed (None before any data).
    pub fn last_new_ts(&self) -> Option<u64> {
        (self.last_new_ts != NONE).then_some(self.last_new_ts)
    }

    /// Data bytes [start, end) passed at `ts`; true when some were not seen before.
    pub fn add(&mut self, start: i64, end: i64, ts: u64) -> bool {
        if end <= start {
            return false;
        }
        if self.low > self.high {
            (self.low, self.high) = (start, end);
            self.first_ts = ts;
            self.last_new_ts = ts;
            return true;
        }
        let (low, high) = (self.low, self.high);
        let mut new = false;
        // Below the lowest byte seen (the first ones sent were lost before the capture
        // point): new, and what lies between it and the span is a stretch not seen.
        if start < low {
            new = true;
            if end < low {
                self.note_unseen(end, low);
            }
        }
        if end > high {
            new = true;
            if start > high {
                self.note_unseen(high, start);
            }
        }
        // Inside the span: what it covers of the stretches not seen is new. Most segments
        // cover none of them: the stretches are rebuilt only when one is met.
        let meets = |&(a, b): &(i64, i64)| b > start && a < end;
        if let Some(unseen) = self.unseen.as_deref_mut().filter(|u| u.iter().any(meets)) {
            let mut kept = Vec::with_capacity(unseen.len() + 1);
            for &(a, b) in unseen.iter() {
                if !meets(&(a, b)) {
                    kept.push((a, b));
                    continue;
                }
                new = true;
                if a < start {
                    kept.push((a, start));
                }
                if end < b {
                    kept.push((end, b));
                }
            }
            *unseen = kept;
        }
        (self.low, self.high) = (low.min(start), high.max(end));
        if new {
            self.last_new_ts = ts;
        }
        new
    }

    fn note_unseen(&mut self, a: i64, b: i64) {
        let unseen = self.unseen.get_or_insert_with(Box::default);
        if unseen.len() == MAX_UNSEEN {
            unseen.remove(0);
        }
        unseen.push((a, b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_data_is_new_and_a_resend_is_not() {
        let mut c = Coverage::default();
        assert!(c.add(1, 1001, 10));
        assert!(c.add(1001, 2001, 20));
        assert!(!c.add(1, 1001, 30), "a resend of bytes seen");
        assert!(!c.add(500, 1500, 40), "a repacketized resend of bytes seen");
        assert_eq!((c.first_ts(), c.last_new_ts()), (Some(10), Some(20)));
    }

    #[test]
    fn a_hole_left_before_the_capture_point_is_new_when_its_repair_passes() {
        let mut c = Coverage::default();
        c.add(1, 1001, 10);
        assert!(c.add(2001, 3001, 20), "beyond the hole");
        assert!(c.add(1001, 1501, 30), "half of the hole");
        assert!(!c.add(1001, 1501, 35), "that half again");
        assert!(c.add(1001, 2001, 40), "the rest of the hole, with a part seen");
        assert!(!c.add(1, 3001, 50), "everything seen");
        assert_eq!(c.last_new_ts(), Some(40));
    }

    #[test]
    fn bytes_before_the_first_seen_are_new_and_leave_no_false_hole() {
        let mut c = Coverage::default();
        c.add(1001, 2001, 10);
        assert!(c.add(1, 501, 20), "the first bytes, lost before the capture point");
        assert!(c.add(501, 1001, 30), "the stretch between them");
        assert!(!c.add(1, 2001, 40));
    }

    #[test]
    fn empty_segments_are_not_data() {
        let mut c = Coverage::default();
        assert!(!c.add(5, 5, 1));
        assert_eq!((c.first_ts(), c.last_new_ts()), (None, None));
    }
}
