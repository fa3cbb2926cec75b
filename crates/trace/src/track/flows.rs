//! The 4-tuples a tracker knows: its open connections (by slab slot) and its closed ones
//! still in TIME-WAIT (their tombs), in one hash table of 8-byte entries.
//!
//! An entry is a slot or tomb number and 32 bits of its 4-tuple's hash; the 4-tuple itself
//! stays with the connection or the tomb. The table is then ~9 bytes per 4-tuple instead of
//! ~65 (a 36-byte key beside its value): ~1 MB for a shard of the benchmark trace (~60,000
//! open connections and tombs) instead of ~8 MB. `Tracker::prefetch` looks every segment
//! up a few segments ahead; in the large table, comparing the keys of that lookup waited
//! on memory, an eighth of the whole analysis.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::{FlowKey, Slot, Tomb};

/// Marks an entry's number as a tomb's (else it is a slab slot's).
const TOMB: u32 = 1 << 31;

#[derive(Debug, Clone, Copy)]
struct FlowRef {
    /// Bits of the 4-tuple's hash that its position in the table does not fix: most other
    /// 4-tuples differ here, and are told apart without reading their keys.
    tag: u32,
    /// A slab slot, or a tomb with `TOMB` set.
    at: u32,
}

impl FlowRef {
    fn open(hash: u64, slot: u32) -> Self {
        Self { tag: tag(hash), at: slot }
    }

    fn is_tomb(self) -> bool {
        self.at & TOMB != 0
    }

    fn index(self) -> usize {
        (self.at & !TOMB) as usize
    }
}

fn tag(hash: u64) -> u32 {
    (hash >> 32) as u32
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
    refs: HashTable<FlowRef>,
    tombs: Vec<TombRecord>,
    /// Numbers of `tombs` free for reuse.
    free_tombs: Vec<u32>,
}

impl FlowTable {
    pub(super) fn with_capacity(n: usize) -> Self {
        Self { refs: HashTable::with_capacity(n), ..Default::default() }
    }

    /// Open connections.
    pub(super) fn open_len(&self) -> usize {
        self.refs.len() - self.tomb_count()
    }

    pub(super) fn tomb_count(&self) -> usize {
        self.tombs.len() - self.free_tombs.len()
    }

    /// The slot of the open connection whose 4-tuple probably has this hash: its key is
    /// not compared (see `Tracker::prefetch`, which only asks the cache for the slot).
    #[inline]
    pub(super) fn open_candidate(&self, hash: u64) -> Option<u32> {
        let t = tag(hash);
        self.refs.find(hash, |r| r.tag == t && !r.is_tomb()).map(|r| r.at)
    }

    /// The slot of the open connection on `key`.
    #[inline]
    pub(super) fn find_open(&self, key: &FlowKey, hash: u64, slab: &[Slot]) -> Option<u32> {
        let t = tag(hash);
        self.refs.find(hash, |r| r.tag == t && !r.is_tomb() && slab[r.index()].key == *key).map(|r| r.at)
    }

    /// The tomb on `key`, if its connection closed and is still in TIME-WAIT.
    pub(super) fn find_tomb(&self, key: &FlowKey, hash: u64) -> Option<Tomb> {
        let t = tag(hash);
        let r = self.refs.find(hash, |r| r.tag == t && r.is_tomb() && self.tombs[r.index()].key == *key)?;
        Some(self.tombs[r.index()].tomb)
    }

    /// Records the open connection in `slot` (whose key `slab[slot].key` already is).
    pub(super) fn insert_open(&mut self, hash: u64, slot: u32, slab: &[Slot]) {
        let tombs = &self.tombs;
        self.refs.insert_unique(hash, FlowRef::open(hash, slot), |r| entry_hash(*r, slab, tombs));
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
        let r = self.refs.find_mut(h, |r| r.at == slot).expect("an open connection has its entry");
        r.at = at | TOMB;
    }

    /// The open connection in `slot` ended without a TIME-WAIT: its entry goes.
    pub(super) fn remove_open(&mut self, key: &FlowKey, slot: u32) {
        if let Ok(e) = self.refs.find_entry(hash(key), |r| r.at == slot) {
            e.remove();
        }
    }

    /// The tomb on `key` is over (a new connection on its 4-tuple, or past its TIME-WAIT).
    pub(super) fn remove_tomb(&mut self, key: &FlowKey, hash: u64) {
        let t = tag(hash);
        let tombs = &self.tombs;
        if let Ok(e) = self.refs.find_entry(hash, |r| r.tag == t && r.is_tomb() && tombs[r.index()].key == *key) {
            let (r, _) = e.remove();
            self.free_tombs.push(r.index() as u32);
        }
    }

    /// Drops the tombs whose TIME-WAIT ended before `now`.
    pub(super) fn expire_tombs(&mut self, now: u64) {
        let (tombs, free) = (&self.tombs, &mut self.free_tombs);
        self.refs.retain(|r| {
            let expired = r.is_tomb() && tombs[r.index()].tomb.until_ns < now;
            if expired {
                free.push(r.index() as u32);
            }
            !expired
        });
    }
}

/// The hash of an entry's 4-tuple, read where it lies (the table grows rarely).
fn entry_hash(r: FlowRef, slab: &[Slot], tombs: &[TombRecord]) -> u64 {
    if r.is_tomb() {
        hash(&tombs[r.index()].key)
    } else {
        hash(&slab[r.index()].key)
    }
}
