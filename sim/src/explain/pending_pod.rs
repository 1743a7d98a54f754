//! Why a pod is pending: what Karpenter last told it (a `Nominated` or `FailedScheduling`
//! Event on the pod, core `provisioning/scheduling/events.go`), checked against whether the
//! claim it was nominated to still exists.

use std::fmt;
use std::time::Duration;

use dovetail_world::SimDuration;

use super::events::EventIndex;

/// Why one pod has no node. Serialised with its variant as `kind`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum PodStatus {
    /// Karpenter nominated it to a NodeClaim or Node that still exists.
    Nominated {
        /// `nodeclaim/x`, `node/y` or both, as Karpenter wrote it.
        target: String,
        /// When last nominated.
        #[serde(serialize_with = "super::as_sim_duration")]
        at: Duration,
    },
    /// Karpenter nominated it to a NodeClaim that is gone since.
    NominatedToGone {
        /// The claim.
        claim: String,
        /// When last nominated.
        #[serde(serialize_with = "super::as_sim_duration")]
        at: Duration,
    },
    /// Karpenter could not schedule it (its `FailedScheduling` message: no offering, limits,
    /// incompatible requirements, ...).
    FailedScheduling {
        /// Karpenter's message.
        message: String,
        /// When last published (deduped for 5 minutes).
        #[serde(serialize_with = "super::as_sim_duration")]
        at: Duration,
    },
    /// Karpenter has said nothing about it yet: waiting for the batch window or the next
    /// scheduling pass.
    NotYetSeen,
}

impl fmt::Display for PodStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Nominated { target, at } => write!(f, "nominated to {target} at {}", SimDuration(*at)),
            Self::NominatedToGone { claim, at } => {
                write!(f, "nominated to nodeclaim/{claim} at {}, which is gone", SimDuration(*at))
            }
            Self::FailedScheduling { message, at } => write!(f, "{message} ({})", SimDuration(*at)),
            Self::NotYetSeen => write!(f, "no word from Karpenter yet (batch window or next scheduling pass)"),
        }
    }
}

/// The status of pending pod `pod` (`namespace/name`); `claim_exists` says whether a
/// NodeClaim of that name exists now.
pub fn status_of(events: &EventIndex, pod: &str, now: Duration, claim_exists: impl Fn(&str) -> bool) -> PodStatus {
    let Some(latest) = events.latest("Pod", pod, &["Nominated", "FailedScheduling"], now, Duration::MAX) else {
        return PodStatus::NotYetSeen;
    };
    if latest.reason == "FailedScheduling" {
        return PodStatus::FailedScheduling { message: latest.message.clone(), at: latest.last };
    }
    let target = latest.message.split_once("should schedule on: ").map_or("", |(_, t)| t).to_string();
    let claim = target.split(", ").find_map(|t| t.strip_prefix("nodeclaim/"));
    match claim {
        Some(claim) if !claim_exists(claim) => PodStatus::NominatedToGone { claim: claim.to_string(), at: latest.last },
        _ => PodStatus::Nominated { target, at: latest.last },
    }
}
