//! The discrete-event core: a priority queue of events ordered by (time, insertion number),
//! so two events at the same nanosecond run in the order they were scheduled and a run is
//! the same, bit for bit, every time.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::Instant;

struct Scheduled<E> {
    at: Instant,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<E> Eq for Scheduled<E> {}
impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Scheduled<E> {
    // BinaryHeap is a max-heap: the earliest (time, seq) must compare greatest.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// Pending events and the current time.
pub struct EventQueue<E> {
    heap: BinaryHeap<Scheduled<E>>,
    now: Instant,
    next_seq: u64,
    /// Events that asked for a time before `now` (run at `now` instead). A correct model
    /// never does this; the property tests check it stays 0.
    pub scheduled_in_past: u64,
    pub processed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self { heap: BinaryHeap::new(), now: Instant::ZERO, next_seq: 0, scheduled_in_past: 0, processed: 0 }
    }
}

impl<E> EventQueue<E> {
    pub fn now(&self) -> Instant {
        self.now
    }

    pub fn schedule(&mut self, at: Instant, event: E) {
        let at = if at < self.now {
            self.scheduled_in_past += 1;
            self.now
        } else {
            at
        };
        self.heap.push(Scheduled { at, seq: self.next_seq, event });
        self.next_seq += 1;
    }

    /// Events waiting (cancelled timers included).
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Bytes one waiting event takes in the queue.
    pub const fn event_bytes() -> usize {
        std::mem::size_of::<Scheduled<E>>()
    }

    /// The next event, advancing `now` to its time; None when nothing is left before `limit`.
    pub fn pop(&mut self, limit: Instant) -> Option<E> {
        let next = self.heap.peek()?;
        if next.at > limit {
            return None;
        }
        let s = self.heap.pop()?;
        debug_assert!(s.at >= self.now);
        self.now = s.at;
        self.processed += 1;
        Some(s.event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_events_keep_their_order() {
        let mut q = EventQueue::default();
        q.schedule(Instant(5), 'b');
        q.schedule(Instant(1), 'a');
        q.schedule(Instant(5), 'c');
        let order: Vec<char> = std::iter::from_fn(|| q.pop(Instant(u64::MAX))).collect();
        assert_eq!(order, vec!['a', 'b', 'c']);
        assert_eq!(q.now(), Instant(5));
        q.schedule(Instant(2), 'z');
        assert_eq!(q.scheduled_in_past, 1);
    }
}
