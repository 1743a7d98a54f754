//! Per-kind change notifications: which part of the cluster state changed, so a controller
//! wakes only for the kinds it reads (a pod change does not wake the EC2NodeClass controller).
//!
//! [`Cluster`](super::Cluster) keeps one generation counter per [`Kind`] and publishes the
//! whole array on a `tokio::sync::watch` channel; a [`Changes`] subscription remembers the
//! generations it last saw and returns from [`Changes::changed`] only when one of its kinds
//! moved. Like a watch receiver, a change that happens while the subscriber is busy is not
//! lost: the next `changed()` returns at once.

/// A part of the cluster state that changes on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Pods.
    Pod,
    /// Nodes.
    Node,
    /// NodeClaims.
    NodeClaim,
    /// NodePools.
    NodePool,
    /// EC2NodeClasses.
    NodeClass,
    /// PodDisruptionBudgets.
    PodDisruptionBudget,
    /// DaemonSets.
    DaemonSet,
    /// The controller's own [`Memory`](super::Memory): nominations and claims marked for
    /// deletion.
    Memory,
    /// PersistentVolumeClaims, PersistentVolumes and StorageClasses (watched only once a pod
    /// mounts a claim, see [`volume_watch`](super::volume_watch)).
    Volume,
}

impl Kind {
    /// Every kind, in declaration order (the index of a kind's generation counter).
    pub const ALL: [Kind; 9] = [
        Kind::Pod,
        Kind::Node,
        Kind::NodeClaim,
        Kind::NodePool,
        Kind::NodeClass,
        Kind::PodDisruptionBudget,
        Kind::DaemonSet,
        Kind::Memory,
        Kind::Volume,
    ];

    /// The Kubernetes kind name (`Memory` for the controller's own memory), as in
    /// [`KINDS`](super::KINDS).
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::Node => "Node",
            Kind::NodeClaim => "NodeClaim",
            Kind::NodePool => "NodePool",
            Kind::NodeClass => "EC2NodeClass",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::DaemonSet => "DaemonSet",
            Kind::Memory => "Memory",
            Kind::Volume => "Volume",
        }
    }

    const fn bit(self) -> u16 {
        1 << self as u16
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of [`Kind`]s: what a controller watches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kinds(u16);

impl Kinds {
    /// No kind: a controller that runs on its own timer only.
    pub const NONE: Kinds = Kinds(0);

    /// The given kinds.
    pub const fn of(kinds: &[Kind]) -> Kinds {
        let mut bits = 0;
        let mut i = 0;
        while i < kinds.len() {
            bits |= kinds[i].bit();
            i += 1;
        }
        Kinds(bits)
    }

    /// Whether `kind` is in the set.
    pub const fn contains(self, kind: Kind) -> bool {
        self.0 & kind.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The kinds in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Kind> {
        Kind::ALL.into_iter().filter(move |kind| self.contains(*kind))
    }
}

/// One counter per [`Kind`], bumped on each change of that kind.
pub type Generations = [u64; Kind::ALL.len()];

/// The receiving end of the cluster's per-kind notifications, for one set of kinds.
#[derive(Debug)]
pub struct Changes {
    receiver: tokio::sync::watch::Receiver<Generations>,
    kinds: Kinds,
    seen: Generations,
}

/// The cluster state was dropped: nothing will change any more.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the cluster state is gone")]
pub struct StateGone;

impl Changes {
    pub(super) fn new(mut receiver: tokio::sync::watch::Receiver<Generations>, kinds: Kinds) -> Self {
        let seen = *receiver.borrow_and_update();
        Self { receiver, kinds, seen }
    }

    /// The kinds this subscription wakes for.
    pub fn kinds(&self) -> Kinds {
        self.kinds
    }

    /// Returns once a watched kind changed since the last call (or since subscribing).
    /// Cancel-safe: no change is consumed unless this returns.
    ///
    /// # Errors
    /// [`StateGone`] when the cluster state was dropped.
    pub async fn changed(&mut self) -> Result<(), StateGone> {
        loop {
            if self.kinds.is_empty() {
                // Nothing to wake for: wait until the state goes away.
                while self.receiver.changed().await.is_ok() {}
                return Err(StateGone);
            }
            self.receiver.changed().await.map_err(|_| StateGone)?;
            let now = *self.receiver.borrow_and_update();
            let moved = self.kinds.iter().any(|kind| now[kind as usize] != self.seen[kind as usize]);
            self.seen = now;
            if moved {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_hold_exactly_what_they_were_made_of() {
        let kinds = Kinds::of(&[Kind::Pod, Kind::NodeClass]);
        assert!(kinds.contains(Kind::Pod) && kinds.contains(Kind::NodeClass));
        assert!(!kinds.contains(Kind::Node));
        assert_eq!(kinds.iter().collect::<Vec<_>>(), vec![Kind::Pod, Kind::NodeClass]);
        assert!(Kinds::NONE.is_empty());
    }

    #[test]
    fn every_kind_sits_at_its_own_index() {
        for (index, kind) in Kind::ALL.into_iter().enumerate() {
            assert_eq!(kind as usize, index);
        }
    }

    #[test]
    fn a_pod_change_does_not_wake_a_node_class_watcher() {
        use futures::FutureExt;

        let cluster = super::super::Cluster::new();
        let mut classes = cluster.changes(Kinds::of(&[Kind::NodeClass]));
        let mut pods = cluster.changes(Kinds::of(&[Kind::Pod]));
        cluster.update(Kind::Pod, |_| {});
        assert_eq!(pods.changed().now_or_never(), Some(Ok(())));
        assert_eq!(classes.changed().now_or_never(), None, "a pod change woke the class watcher");
        cluster.update(Kind::NodeClass, |_| {});
        assert_eq!(classes.changed().now_or_never(), Some(Ok(())));
    }

    #[test]
    fn a_change_while_busy_is_kept_once() {
        use futures::FutureExt;

        let cluster = super::super::Cluster::new();
        let mut claims = cluster.changes(Kinds::of(&[Kind::NodeClaim, Kind::Memory]));
        cluster.update(Kind::NodeClaim, |_| {});
        cluster.remember(|_| {});
        assert_eq!(claims.changed().now_or_never(), Some(Ok(())));
        assert_eq!(claims.changed().now_or_never(), None, "two changes before a look wake once");
    }

    #[test]
    fn a_dropped_state_ends_the_subscription() {
        use futures::FutureExt;

        let cluster = super::super::Cluster::new();
        let mut nothing = cluster.changes(Kinds::NONE);
        assert_eq!(nothing.changed().now_or_never(), None);
        drop(cluster);
        assert_eq!(nothing.changed().now_or_never(), Some(Err(StateGone)));
    }
}
