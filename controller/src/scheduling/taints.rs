//! Taints and tolerations (core `pkg/scheduling/taints.go`): a pod may only land on a node whose
//! every taint it tolerates; `PreferNoSchedule` counts too until preference relaxation adds a
//! toleration for it (karpenter-behaviour.md §2.3).

use std::fmt;

/// What a taint does to pods that do not tolerate it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaintEffect {
    /// New pods are not scheduled.
    NoSchedule,
    /// The scheduler avoids the node if it can.
    PreferNoSchedule,
    /// Running pods are evicted too.
    NoExecute,
}

impl TaintEffect {
    /// Parses the API spelling.
    pub fn from_api(text: &str) -> Option<Self> {
        match text {
            "NoSchedule" => Some(Self::NoSchedule),
            "PreferNoSchedule" => Some(Self::PreferNoSchedule),
            "NoExecute" => Some(Self::NoExecute),
            _ => None,
        }
    }

    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoSchedule => "NoSchedule",
            Self::PreferNoSchedule => "PreferNoSchedule",
            Self::NoExecute => "NoExecute",
        }
    }
}

/// A node taint.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    pub value: String,
    /// Effect.
    pub effect: TaintEffect,
}

impl Taint {
    /// A taint; `effect` is the API spelling and unknown effects read as `NoSchedule`.
    pub fn new(key: impl Into<String>, value: impl Into<String>, effect: TaintEffect) -> Self {
        Self { key: key.into(), value: value.into(), effect }
    }

    /// Converts the Kubernetes type; an unknown effect is treated as `NoSchedule` (strictest
    /// that still lets tolerations with that key match).
    pub fn from_k8s(taint: &k8s_openapi::api::core::v1::Taint) -> Self {
        Self {
            key: taint.key.clone(),
            value: taint.value.clone().unwrap_or_default(),
            effect: TaintEffect::from_api(&taint.effect).unwrap_or(TaintEffect::NoSchedule),
        }
    }
}

impl fmt::Display for Taint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect.as_str())
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect.as_str())
        }
    }
}

/// A pod toleration.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Toleration {
    /// Key to match; empty with `exists` matches every key.
    pub key: String,
    /// `Exists` (any value) rather than `Equal`.
    pub exists: bool,
    /// Value for `Equal`.
    pub value: String,
    /// Effect to match; `None` matches every effect.
    pub effect: Option<TaintEffect>,
}

impl Toleration {
    /// Tolerates every taint with `effect` (how relaxation tolerates `PreferNoSchedule`).
    pub fn all_with_effect(effect: TaintEffect) -> Self {
        Self { key: String::new(), exists: true, value: String::new(), effect: Some(effect) }
    }

    /// Converts the Kubernetes type.
    pub fn from_k8s(toleration: &k8s_openapi::api::core::v1::Toleration) -> Self {
        Self {
            key: toleration.key.clone().unwrap_or_default(),
            exists: toleration.operator.as_deref() == Some("Exists"),
            value: toleration.value.clone().unwrap_or_default(),
            effect: toleration.effect.as_deref().and_then(TaintEffect::from_api),
        }
    }

    /// Kubernetes `ToleratesTaint`.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|effect| effect != taint.effect) {
            return false;
        }
        if self.key.is_empty() {
            return self.exists;
        }
        self.key == taint.key && (self.exists || self.value == taint.value)
    }
}

/// The first taint in `taints` that `tolerations` do not tolerate, as an error message.
pub fn untolerated(taints: &[Taint], tolerations: &[Toleration]) -> Option<String> {
    taints
        .iter()
        .find(|taint| !tolerations.iter().any(|t| t.tolerates(taint)))
        .map(|taint| format!("did not tolerate taint {taint}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn equal(key: &str, value: &str, effect: Option<TaintEffect>) -> Toleration {
        Toleration { key: key.to_owned(), exists: false, value: value.to_owned(), effect }
    }

    #[test]
    fn tolerations_match_key_value_and_effect() {
        let taint = Taint::new("gpu", "true", TaintEffect::NoSchedule);
        assert!(equal("gpu", "true", None).tolerates(&taint));
        assert!(equal("gpu", "true", Some(TaintEffect::NoSchedule)).tolerates(&taint));
        assert!(!equal("gpu", "false", None).tolerates(&taint));
        assert!(!equal("gpu", "true", Some(TaintEffect::NoExecute)).tolerates(&taint));
        let exists_all = Toleration { key: String::new(), exists: true, value: String::new(), effect: None };
        assert!(exists_all.tolerates(&taint));
    }

    #[test]
    fn prefer_no_schedule_must_be_tolerated_until_relaxed() {
        let taints = [Taint::new("spot", "", TaintEffect::PreferNoSchedule)];
        assert_eq!(untolerated(&taints, &[]).as_deref(), Some("did not tolerate taint spot:PreferNoSchedule"));
        assert_eq!(untolerated(&taints, &[Toleration::all_with_effect(TaintEffect::PreferNoSchedule)]), None);
    }
}
