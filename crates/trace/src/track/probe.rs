//! The hash table under `flows`: 8-byte entries (32 bits of a 4-tuple's hash and a
//! number), linear probing, never more than half full.
//!
//! Written here rather than taken from hashbrown because a lookup has to be started long
//! before it is made. The trackers look each segment's connection up a few segments ahead
//! (`Tracker::prefetch_slot`) so that its state is in the cache on its turn; but that
//! lookup itself waited on memory for the table's entries, a tenth of the analysis' CPU
//! (BENCHMARKS.md, fourteenth round). Here the one cache line where a hash's entries
//! begin is known from the hash alone (`ProbeTable::prefetch`), so it is fetched further
//! ahead still (`Tracker::prefetch_entry`); hashbrown's `HashTable` does not say where a
//! hash's group lies.

/// `Entry::value` of a free place. No number `flows` keeps reaches it: slots stay below
/// 2^30 (the top bits mark tombs and held tries), and a tomb's would take 2^31 - 1 tombs.
const EMPTY: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Entry {
    /// The low 32 bits of the key's hash: where the entry belongs (`home`) and most of
    /// what tells two keys apart without reading them.
    pub hash: u32,
    pub value: u32,
}

const FREE: Entry = Entry { hash: 0, value: EMPTY };

#[derive(Debug)]
pub(super) struct ProbeTable {
    entries: Vec<Entry>,
    mask: usize,
    len: usize,
}

impl Default for ProbeTable {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl ProbeTable {
    /// Room for `n` entries before the table grows.
    pub(super) fn with_capacity(n: usize) -> Self {
        let places = (n.max(4) * 2).next_power_of_two();
        Self { entries: vec![FREE; places], mask: places - 1, len: 0 }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn home(&self, hash: u32) -> usize {
        hash as usize & self.mask
    }

    /// Asks the CPU for the cache line where the entries of `hash` begin. A probe
    /// sequence is short at half load (1.5 places on average for a key that is there),
    /// so it rarely leaves that line.
    #[inline(always)]
    pub(super) fn prefetch(&self, hash: u32) {
        super::prefetch_bytes(&self.entries[self.home(hash)]);
    }

    /// The place of the first entry of `hash` that `eq` accepts.
    #[inline]
    pub(super) fn find(&self, hash: u32, mut eq: impl FnMut(Entry) -> bool) -> Option<usize> {
        let mut i = self.home(hash);
        loop {
            let e = self.entries[i];
            if e.value == EMPTY {
                return None;
            }
            if e.hash == hash && eq(e) {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    pub(super) fn get(&self, at: usize) -> Entry {
        self.entries[at]
    }

    pub(super) fn set_value(&mut self, at: usize, value: u32) {
        debug_assert!(value != EMPTY && self.entries[at].value != EMPTY);
        self.entries[at].value = value;
    }

    /// Adds an entry (the caller knows its key is not in the table).
    pub(super) fn insert(&mut self, hash: u32, value: u32) {
        debug_assert!(value != EMPTY, "a number the table keeps for free places");
        if (self.len + 1) * 2 > self.entries.len() {
            self.grow();
        }
        self.place(Entry { hash, value });
        self.len += 1;
    }

    fn place(&mut self, e: Entry) {
        let mut i = self.home(e.hash);
        while self.entries[i].value != EMPTY {
            i = (i + 1) & self.mask;
        }
        self.entries[i] = e;
    }

    fn grow(&mut self) {
        let places = self.entries.len() * 2;
        let old = std::mem::replace(&mut self.entries, vec![FREE; places]);
        self.mask = self.entries.len() - 1;
        for e in old.into_iter().filter(|e| e.value != EMPTY) {
            self.place(e);
        }
    }

    /// Removes the entry at `at`. The entries after it in its run move back into the gap
    /// where their own home allows, so that no lookup stops short at it (no markers of
    /// removed entries, which would lengthen every later probe).
    pub(super) fn remove(&mut self, at: usize) -> Entry {
        let removed = self.entries[at];
        let mut hole = at;
        let mut j = (at + 1) & self.mask;
        loop {
            let e = self.entries[j];
            if e.value == EMPTY {
                break;
            }
            // `e` may fill the hole if the hole lies between its home and `j`.
            let from_home = j.wrapping_sub(self.home(e.hash)) & self.mask;
            let from_hole = j.wrapping_sub(hole) & self.mask;
            if from_home >= from_hole {
                self.entries[hole] = e;
                hole = j;
            }
            j = (j + 1) & self.mask;
        }
        self.entries[hole] = FREE;
        self.len -= 1;
        removed
    }

    /// Keeps only the entries `keep` accepts; each entry is offered once or, if moved
    /// back by a removal, again (the answer must not change for it).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(Entry) -> bool) {
        let mut i = 0;
        while i < self.entries.len() {
            let e = self.entries[i];
            if e.value != EMPTY && !keep(e) {
                // A later entry may have moved into `i`: look at it again. Entries only
                // move back, and those that wrap round to the end were offered already.
                self.remove(i);
                continue;
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A small generator of 32-bit hashes, many of them sharing their home.
    fn hashes(n: usize, seed: u64) -> Vec<u32> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Few distinct low bits: long runs, and runs wrapping round the end.
                (x as u32) & 0x3f | ((x >> 40) as u32) << 6
            })
            .collect()
    }

    fn check(t: &ProbeTable, model: &HashMap<u32, u32>) {
        assert_eq!(t.len(), model.len());
        for (&value, &hash) in model {
            let at = t.find(hash, |e| e.value == value).unwrap_or_else(|| panic!("{value} lost"));
            assert_eq!(t.get(at), Entry { hash, value });
        }
    }

    #[test]
    fn inserts_removals_and_growth_keep_every_entry_findable() {
        for seed in 1..20u64 {
            let hs = hashes(400, seed);
            let mut t = ProbeTable::with_capacity(4);
            // value -> hash
            let mut model = HashMap::new();
            for (v, &h) in hs.iter().enumerate() {
                t.insert(h, v as u32);
                model.insert(v as u32, h);
                if v % 3 == 2 {
                    // Remove an older one: the runs are rearranged under the lookups.
                    let victim = (v as u32 * 7 + seed as u32) % (v as u32);
                    if let Some(h) = model.remove(&victim) {
                        let at = t.find(h, |e| e.value == victim).expect("present");
                        assert_eq!(t.remove(at).value, victim);
                    }
                }
                check(&t, &model);
            }
            assert!(t.find(0xdead_beef, |_| true).is_none() || model.values().any(|&h| h == 0xdead_beef));
        }
    }

    #[test]
    fn retain_offers_every_entry_and_keeps_the_rest_findable() {
        for seed in 1..20u64 {
            let hs = hashes(300, seed);
            let mut t = ProbeTable::with_capacity(300);
            let mut model = HashMap::new();
            for (v, &h) in hs.iter().enumerate() {
                t.insert(h, v as u32);
                model.insert(v as u32, h);
            }
            let mut offered = std::collections::HashSet::new();
            t.retain(|e| {
                offered.insert(e.value);
                e.value % 3 != 0
            });
            assert_eq!(offered.len(), 300, "every entry was asked about");
            model.retain(|v, _| v % 3 != 0);
            check(&t, &model);
        }
    }

    #[test]
    fn set_value_changes_the_number_in_place() {
        let mut t = ProbeTable::default();
        t.insert(5, 1);
        t.insert(5, 2);
        let at = t.find(5, |e| e.value == 2).expect("present");
        t.set_value(at, 9);
        assert!(t.find(5, |e| e.value == 2).is_none());
        assert_eq!(t.get(t.find(5, |e| e.value == 9).expect("moved")).hash, 5);
    }
}
