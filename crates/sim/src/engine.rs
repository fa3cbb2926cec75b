//! The discrete-event core: a priority queue of events ordered by (time, insertion number),
//! so two events at the same nanosecond run in the order they were scheduled and a run is
//! the same, bit for bit, every time.
//!
//! The heap holds only the 24-byte keys; the events (a segment each, ~80 bytes) wait in a
//! slab beside it. Sifting moves keys, not segments: the heap was a third of a run's time
//! when it moved whole events.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::Instant;

/// (time, insertion number) orders the events; `slot` says where the event waits.
#[derive(Clone, Copy)]
struct Key {
    at: Instant,
    seq: u64,
    slot: u32,
}

impl PartialEq for Key {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    // BinaryHeap is a max-heap: the earliest (time, seq) must compare greatest.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// Pending events and the current time.
pub struct EventQueue<E> {
    heap: BinaryHeap<Key>,
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    now: Instant,
    next_seq: u64,
    /// Events that asked for a time before `now` (run at `now` instead). A correct model
    /// never does this; the property tests check it stays 0.
    pub scheduled_in_past: u64,
    pub processed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self {
            heap: BinaryHeap::new(),
            slab: Vec::new(),
            free: Vec::new(),
            now: Instant::ZERO,
            next_seq: 0,
            scheduled_in_past: 0,
            processed: 0,
        }
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
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(event);
                i
            }
            None => {
                self.slab.push(Some(event));
                u32::try_from(self.slab.len() - 1).expect("fewer than 2^32 events waiting")
            }
        };
        self.heap.push(Key { at, seq: self.next_seq, slot });
        self.next_seq += 1;
    }

    /// Events waiting (cancelled timers included).
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Bytes one waiting event takes in the queue (its key and its slab slot).
    pub const fn event_bytes() -> usize {
        std::mem::size_of::<Key>() + std::mem::size_of::<Option<E>>()
    }

    /// The next event, advancing `now` to its time; None when nothing is left before `limit`.
    pub fn pop(&mut self, limit: Instant) -> Option<E> {
        let next = self.heap.peek()?;
        if next.at > limit {
            return None;
        }
        let k = self.heap.pop()?;
        debug_assert!(k.at >= self.now);
        self.now = k.at;
        self.processed += 1;
        self.free.push(k.slot);
        self.slab[k.slot as usize].take()
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
