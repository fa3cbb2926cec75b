//! The 4-tuples a tracker knows: its open connections (by slab slot) and its closed ones
//! still in TIME-WAIT (their tombs), in one hash table of 8-byte entries (`probe`).
//!
//! An entry is a slot or tomb number and 32 bits of its 4-tuple's hash; the 4-tuple itself
//! stays with the connection or the tomb. The table is then 16-32 bytes per 4-tuple (it is
//! a quarter to half full) instead of ~65 (a 36-byte key beside its value): ~1 MB for a
//! shard of the benchmark trace (~60,000 open connections and tombs) instead of ~8 MB. `Tracker::prefetch_slot`
//! looks every segment up a few segments ahead; in the large table, comparing the keys of
//! that lookup waited on memory, an eighth of the whole analysis.

use std::hash::BuildHasher;

use super::probe::{Entry, ProbeTable};
use super::syn_try::SynTry;
use super::{FlowKey, Slot, Tomb};

/// Marks an entry's number as a tomb's (else it is an open connection's).
const TOMB: u32 = 1 << 31;

/// Marks an open connection's number as a held try's (`super::syn_try`), else it is a
/// slab slot's.
pub(super) const TRY: u32 = 1 << 30;

fn is_tomb(e: Entry) -> bool {
    e.value & TOMB != 0
}

/// Whether an open connection's number is a held try's.
#[inline(always)]
pub(super) fn is_try(value: u32) -> bool {
    value & TRY != 0
}

fn index(e: Entry) -> usize {
    (e.value & !(TOMB | TRY)) as usize
}

/// The bits of a 4-tuple's hash its entry keeps: the low ones, which `crate::shard` does
/// not use to pick the shard (it takes the high ones), so each shard's table spreads its
/// entries over all of its places.
fn tag(hash: u64) -> u32 {
    hash as u32
}

/// A 4-tuple's hash. Both directions of a connection have one key (`FlowKey::pair`).
#[inline]
pub(super) fn hash(key: &FlowKey) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(key)
}

#[derive(Debug, Clone, Copy)]
struct TombRecord {
    key: FlowKey,
    tomb: Tomb,
}

#[derive(Debug, Default)]
pub(super) struct FlowTable {
    refs: ProbeTable,
    tombs: Vec<TombRecord>,
    /// Numbers of `tombs` free for reuse.
    free_tombs: Vec<u32>,
}

impl FlowTable {
    pub(super) fn with_capacity(n: usize) -> Self {
        Self { refs: ProbeTable::with_capacity(n), ..Default::default() }
    }

    /// Open connections.
    pub(super) fn open_len(&self) -> usize {
        self.refs.len() - self.tomb_count()
    }

    pub(super) fn tomb_count(&self) -> usize {
        self.tombs.len() - self.free_tombs.len()
    }

    /// The slot of the open connection whose 4-tuple probably has this hash: its key is
    /// not compared (see `Tracker::prefetch_slot`, which only asks the cache for the slot).
    #[inline]
    pub(super) fn open_candidate(&self, hash: u64) -> Option<u32> {
        self.refs.find(tag(hash), |e| !is_tomb(e)).map(|at| self.refs.get(at).value)
    }

    /// Asks the CPU for the entries of `hash`, for an `open_candidate` a few segments on.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        self.refs.prefetch(tag(hash));
    }

    /// The number of the open connection on `key`: its slab slot, or its held try's
    /// number with `TRY` set.
    #[inline]
    pub(super) fn find_open(&self, key: &FlowKey, hash: u64, slab: &[Slot], tries: &[SynTry]) -> Option<u32> {
        let at = self.refs.find(tag(hash), |e| {
            !is_tomb(e) && if is_try(e.value) { tries[index(e)].key == *key } else { slab[index(e)].key == *key }
        })?;
        Some(self.refs.get(at).value)
    }

    /// The open connection numbered `from` is now numbered `to` (a held try became a
    /// connection in the slab).
    pub(super) fn renumber(&mut self, key: &FlowKey, from: u32, to: u32) {
        let entry = self.refs.find(tag(hash(key)), |e| e.value == from).expect("an open connection has its entry");
        self.refs.set_value(entry, to);
    }

    /// The tomb on `key`, if its connection closed and is still in TIME-WAIT.
    pub(super) fn find_tomb(&self, key: &FlowKey, hash: u64) -> Option<Tomb> {
        let at = self.refs.find(tag(hash), |e| is_tomb(e) && self.tombs[index(e)].key == *key)?;
        Some(self.tombs[index(self.refs.get(at))].tomb)
    }

    /// The tomb on `key` lasts until `until_ns` at least (a late packet came).
    pub(super) fn extend_tomb(&mut self, key: &FlowKey, hash: u64, until_ns: u64) {
        let tombs = &self.tombs;
        if let Some(at) = self.refs.find(tag(hash), |e| is_tomb(e) && tombs[index(e)].key == *key) {
            let t = &mut self.tombs[index(self.refs.get(at))].tomb;
            t.until_ns = t.until_ns.max(until_ns);
        }
    }

    /// Records the open connection in `slot` (whose key `slab[slot].key` already is).
    pub(super) fn insert_open(&mut self, hash: u64, slot: u32) {
        self.refs.insert(tag(hash), slot);
    }

    /// The open connection in `slot` closed: its 4-tuple's entry becomes `tomb`.
    pub(super) fn close(&mut self, key: &FlowKey, slot: u32, tomb: Tomb) {
        let h = hash(key);
        let at = match self.free_tombs.pop() {
            Some(i) => {
                self.tombs[i as usize] = TombRecord { key: *key, tomb };
                i
            }
            None => {
                self.tombs.push(TombRecord { key: *key, tomb });
                (self.tombs.len() - 1) as u32
            }
        };
        let entry = self.refs.find(tag(h), |e| e.value == slot).expect("an open connection has its entry");
        self.refs.set_value(entry, at | TOMB);
    }

    /// The open connection in `slot` ended without a TIME-WAIT: its entry goes.
    pub(super) fn remove_open(&mut self, key: &FlowKey, slot: u32) {
        if let Some(at) = self.refs.find(tag(hash(key)), |e| e.value == slot) {
            self.refs.remove(at);
        }
    }

    /// The tomb on `key` is over (a new connection on its 4-tuple, or past its TIME-WAIT).
    pub(super) fn remove_tomb(&mut self, key: &FlowKey, hash: u64) {
        let tombs = &self.tombs;
        if let Some(at) = self.refs.find(tag(hash), |e| is_tomb(e) && tombs[index(e)].key == *key) {
            let e = self.refs.remove(at);
            self.free_tombs.push(index(e) as u32);
        }
    }

    /// Drops the tombs whose TIME-WAIT ended before `now`.
    pub(super) fn expire_tombs(&mut self, now: u64) {
        let (tombs, free) = (&self.tombs, &mut self.free_tombs);
        self.refs.retain(|e| {
            let expired = is_tomb(e) && tombs[index(e)].tomb.until_ns < now;
            if expired {
                free.push(index(e) as u32);
            }
            !expired
        });
    }
}
