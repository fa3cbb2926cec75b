//! The discrete-event core: a priority queue of events ordered by (time, insertion number),
//! so two events at the same nanosecond run in the order they were scheduled and a run is
//! the same, bit for bit, every time.
//!
//! The heap holds only 16-byte keys; the events (a segment each, ~80 bytes) wait in a
//! slab beside it. Sifting moves keys, not segments: the heap was a third of a run's time
//! when it moved whole events. A key is two words, the time and the insertion number with
//! the slot in its low bits, compared as one 128-bit number: a 24-byte key (time, number,
//! slot) was written in pieces and read back whole while it sifted, and the store buffer
//! could not forward it (~15 % of a run's cycles waited there, `perf annotate`).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::Instant;

/// Bits of a key's second word that hold the slot: events waiting at once, at most.
const SLOT_BITS: u32 = 26;
/// Events a run may schedule in all (the insertion number's bits: 2^38, ~2.7e11).
const MAX_SEQ: u64 = 1 << (64 - SLOT_BITS);

/// (time, insertion number) orders the events; the slot rides in the number's low bits
/// (numbers are unique, so it never decides an order).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    at: Instant,
    seq_slot: u64,
}

impl Key {
    fn order(&self) -> u128 {
        (u128::from(self.at.0) << 64) | u128::from(self.seq_slot)
    }
    fn slot(&self) -> usize {
        (self.seq_slot & ((1 << SLOT_BITS) - 1)) as usize
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    // BinaryHeap is a max-heap: the earliest (time, seq) must compare greatest.
    fn cmp(&self, o: &Self) -> Ordering {
        o.order().cmp(&self.order())
    }
}

/// Pending events and the current time. Events are `Copy`: a slot is read, not taken,
/// and a freed slot keeps its stale event until it is reused.
pub struct EventQueue<E> {
    heap: BinaryHeap<Key>,
    slab: Vec<E>,
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

impl<E: Copy> EventQueue<E> {
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Inlined: the event is then built in its slot, not built on the caller's stack and
    /// copied in wider pieces than it was written (a store-forwarding stall per event).
    #[inline(always)]
    pub fn schedule(&mut self, at: Instant, event: E) {
        let at = if at < self.now {
            self.scheduled_in_past += 1;
            self.now
        } else {
            at
        };
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = event;
                i
            }
            None => {
                self.slab.push(event);
                u32::try_from(self.slab.len() - 1)
                    .ok()
                    .filter(|&s| s < 1 << SLOT_BITS)
                    .expect("fewer than 2^26 events waiting at once")
            }
        };
        assert!(self.next_seq < MAX_SEQ, "fewer than 2^38 events scheduled in one run");
        self.heap.push(Key { at, seq_slot: (self.next_seq << SLOT_BITS) | u64::from(slot) });
        self.next_seq += 1;
    }

    /// Events waiting (cancelled timers included).
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Bytes the queue holds from the allocator: its heap, slab and free list as allocated
    /// (a vector that doubled holds twice what waits in it).
    pub fn allocated_bytes(&self) -> usize {
        self.heap.capacity() * std::mem::size_of::<Key>()
            + self.slab.capacity() * std::mem::size_of::<E>()
            + self.free.capacity() * std::mem::size_of::<u32>()
    }

    /// The next event and its time, advancing `now` to it; None when nothing is left before `limit`.
    /// A reference into its slot (free again, not overwritten before the next `schedule`):
    /// matched in place, its fields are read from where `schedule` wrote them long before.
    /// A copy of the whole event, made here and read back at once, was written in pieces
    /// the store buffer could not forward to the segment's wider reads (a quarter of the
    /// event loop's own cycles, `perf annotate`).
    pub fn pop(&mut self, limit: Instant) -> Option<(Instant, &E)> {
        let next = self.heap.peek()?;
        if next.at > limit {
            return None;
        }
        let k = self.heap.pop()?;
        debug_assert!(k.at >= self.now);
        self.now = k.at;
        self.processed += 1;
        let slot = k.slot();
        self.free.push(slot as u32);
        Some((k.at, &self.slab[slot]))
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
        let order: Vec<char> = std::iter::from_fn(|| q.pop(Instant(u64::MAX)).map(|(_, &e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'c']);
        assert_eq!(q.now(), Instant(5));
        q.schedule(Instant(2), 'z');
        assert_eq!(q.scheduled_in_past, 1);
    }
}
