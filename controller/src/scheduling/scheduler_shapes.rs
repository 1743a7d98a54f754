//! Interned pod shapes of a scheduling pass and what is derived from each once (its
//! requirements, the nodes and claims closed to it): identical pods share the work.

use std::collections::{BTreeMap, BTreeSet};

use super::super::pod::PodShape;
use super::super::requirements::Requirements;

/// A set of small integers (node or claim indexes).
#[derive(Clone, Debug, Default)]
pub(super) struct BitSet {
    pub(super) words: Vec<u64>,
    pub(super) len: usize,
}

impl BitSet {
    pub(super) fn contains(&self, index: usize) -> bool {
        self.words.get(index / 64).is_some_and(|w| w & (1 << (index % 64)) != 0)
    }

    pub(super) fn insert(&mut self, index: usize) {
        if self.words.len() <= index / 64 {
            self.words.resize(index / 64 + 1, 0);
        }
        let bit = 1 << (index % 64);
        if self.words[index / 64] & bit == 0 {
            self.words[index / 64] |= bit;
            self.len += 1;
        }
    }
}

/// Interned pod shapes and what is derived from them once.
#[derive(Default)]
pub(super) struct Shapes {
    pub(super) ids: BTreeMap<PodShape, usize>,
    pub(super) shapes: Vec<PodShape>,
    pub(super) requirements: Vec<Requirements>,
    pub(super) closed_existing: Vec<BitSet>,
    pub(super) closed_claims: Vec<BitSet>,
    /// For shapes most claims are closed to: the claims still open to them, so a pod of that
    /// shape visits only those instead of scanning every claim.
    pub(super) open_claims: Vec<Option<BTreeSet<usize>>>,
    /// Per shape and claim: 1 + the topology stamp at which the claim last rejected the shape
    /// for a topology reason (0 = never). Same stamp ⇒ same answer, so the check is skipped.
    pub(super) topology_rejections: Vec<Vec<u64>>,
}

/// A shape gets an explicit open-claim set once it is closed to this many claims and to more
/// than half of them; below that, scanning the global order is cheaper.
const OPEN_SET_THRESHOLD: usize = 64;

impl Shapes {
    pub(super) fn intern(&mut self, shape: &PodShape) -> usize {
        if let Some(id) = self.ids.get(shape) {
            return *id;
        }
        let id = self.shapes.len();
        self.ids.insert(shape.clone(), id);
        self.requirements.push(shape.requirements());
        self.shapes.push(shape.clone());
        self.closed_existing.push(BitSet::default());
        self.closed_claims.push(BitSet::default());
        self.open_claims.push(None);
        self.topology_rejections.push(Vec::new());
        id
    }

    /// Marks claim `index` closed to `shape_id`.
    pub(super) fn close_claim(&mut self, shape_id: usize, index: usize) {
        self.closed_claims[shape_id].insert(index);
        if let Some(open) = &mut self.open_claims[shape_id] {
            open.remove(&index);
        }
    }

    /// Builds the open set for `shape_id` when most of `claim_count` claims are closed to it.
    pub(super) fn maybe_index_open_claims(&mut self, shape_id: usize, claim_count: usize) {
        let closed = &self.closed_claims[shape_id];
        if self.open_claims[shape_id].is_none() && closed.len >= OPEN_SET_THRESHOLD && closed.len * 2 > claim_count {
            let open = (0..claim_count).filter(|i| !closed.contains(*i)).collect();
            self.open_claims[shape_id] = Some(open);
        }
    }

    /// Records a new claim: it is open to every shape.
    pub(super) fn add_claim(&mut self, index: usize) {
        for open in self.open_claims.iter_mut().flatten() {
            open.insert(index);
        }
    }
}
