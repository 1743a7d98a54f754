//! The `consolidateAfter` clock: when each node last had a pod event. Upstream sets a
//! NodeClaim `Consolidatable` once `consolidateAfter` has passed since its last pod event
//! (a pod bound to it or leaving it), or since it initialized when it never had one (core
//! `pkg/controllers/nodeclaim/disruption/consolidation.go`). Read from outside, a bind or a
//! departure is seen at the next observation, never earlier, so the clock errs towards
//! "not yet consolidatable": the sound side.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::oracle::view::{PodView, View};

/// Per node: its reschedulable pods at the last look, and when that set last changed.
#[derive(Clone, Debug, Default)]
pub struct ConsolidationClock {
    nodes: BTreeMap<String, (BTreeSet<String>, Duration)>,
    /// Every node counts as past its `consolidateAfter` (see [`Self::settled`]).
    settled: bool,
}

impl ConsolidationClock {
    /// A clock that counts every node as past `consolidateAfter`: for a one-off look at a
    /// cluster (the end of a run) where no history was kept.
    pub fn settled() -> Self {
        Self { nodes: BTreeMap::new(), settled: true }
    }

    /// Looks at the initialized nodes' pods at `view.now`.
    pub fn observe(&mut self, view: &View, pods: &[PodView]) {
        let mut now_on: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for p in pods.iter().filter(|p| p.active() && !p.daemonset) {
            if let Some(n) = p.node_name.as_deref() {
                now_on.entry(n).or_default().insert(p.uid.clone());
            }
        }
        self.nodes.retain(|name, _| view.nodes.contains_key(name));
        for (name, node) in &view.nodes {
            if !node.initialized {
                continue;
            }
            let current = now_on.remove(name.as_str()).unwrap_or_default();
            match self.nodes.get_mut(name) {
                Some((seen, since)) => {
                    if *seen != current {
                        *seen = current;
                        *since = view.now;
                    }
                }
                None => {
                    self.nodes.insert(name.clone(), (current, view.now));
                }
            }
        }
    }

    /// When `node` last had a pod event (or was first seen initialized); `None` when the
    /// clock has not seen it initialized.
    pub fn last_event(&self, node: &str) -> Option<Duration> {
        if self.settled {
            return Some(Duration::ZERO);
        }
        self.nodes.get(node).map(|(_, since)| *since)
    }
}
