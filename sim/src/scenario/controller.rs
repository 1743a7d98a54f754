//! `controller:` — whether the production controller runs, with which settings and feature
//! gates, how many replicas (leader election), and rolling upgrades mid-run.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use dovetail_world::SimDuration;

/// `controller: none` (API server only) or the controller's configuration.
#[derive(Clone, Debug, PartialEq)]
pub enum ControllerSpec {
    /// No controller: the world is the API server alone (API-level scenarios).
    None,
    /// The production controller runs.
    Run(ControllerConfig),
}

impl Default for ControllerSpec {
    fn default() -> Self {
        ControllerSpec::Run(ControllerConfig { replicas: 1, ..ControllerConfig::default() })
    }
}

/// How the controller runs.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControllerConfig {
    /// 1 (default) or 2 replicas; with 2, both run leader election on a Lease and only
    /// the leader reconciles (a `leaderFailover` fault needs 2).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub replicas: u8,
    /// `--batch-idle-duration` (1s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_idle_duration: Option<SimDuration>,
    /// `--batch-max-duration` (10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_max_duration: Option<SimDuration>,
    /// `--feature-gates`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_gates: Option<FeatureGatesSpec>,
    /// `--isolated-vpc` (false): no Price List API calls, so on-demand prices stay the
    /// controller's built-in table.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub isolated_vpc: bool,
    /// Rolling upgrades: at each time the settings change and every replica restarts, one
    /// at a time, 30 s apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upgrades: Vec<Upgrade>,
}

/// Karpenter's feature gates; unset gates keep their defaults.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FeatureGatesSpec {
    /// `SpotToSpotConsolidation` (off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spot_to_spot_consolidation: Option<bool>,
    /// `NodeRepair` (off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_repair: Option<bool>,
    /// `ReservedCapacity` (on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_capacity: Option<bool>,
    /// `NodeOverlay` (off): NodeOverlays adjust instance type prices and capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_overlay: Option<bool>,
}

/// A rolling upgrade: new settings from `at` on.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Upgrade {
    /// When the rollout starts.
    pub at: SimDuration,
    /// New `--batch-idle-duration`, if it changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_idle_duration: Option<SimDuration>,
    /// New `--batch-max-duration`, if it changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_max_duration: Option<SimDuration>,
    /// Feature gates that change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_gates: Option<FeatureGatesSpec>,
}

fn one() -> u8 {
    1
}

fn is_one(n: &u8) -> bool {
    *n == 1
}

impl ControllerConfig {
    /// Applies the initial settings over `base`.
    pub fn apply_to(&self, base: &mut dovetail_controller::runtime::Settings) {
        apply(base, self.batch_idle_duration, self.batch_max_duration, self.feature_gates.as_ref());
        base.isolated_vpc = self.isolated_vpc;
    }
}

impl Upgrade {
    /// Applies the upgrade's changes over `base`.
    pub fn apply_to(&self, base: &mut dovetail_controller::runtime::Settings) {
        apply(base, self.batch_idle_duration, self.batch_max_duration, self.feature_gates.as_ref());
    }
}

fn apply(
    base: &mut dovetail_controller::runtime::Settings,
    idle: Option<SimDuration>,
    max: Option<SimDuration>,
    gates: Option<&FeatureGatesSpec>,
) {
    {
        if let Some(d) = idle {
            base.batch_idle_duration = d.0;
        }
        if let Some(d) = max {
            base.batch_max_duration = d.0;
        }
        if let Some(g) = gates {
            let gates = &mut base.feature_gates;
            if let Some(v) = g.spot_to_spot_consolidation {
                gates.spot_to_spot_consolidation = v;
            }
            if let Some(v) = g.node_repair {
                gates.node_repair = v;
            }
            if let Some(v) = g.reserved_capacity {
                gates.reserved_capacity = v;
            }
            if let Some(v) = g.node_overlay {
                gates.node_overlay = v;
            }
        }
    }
}

impl<'de> Deserialize<'de> for ControllerSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ControllerSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "`none` or a map with replicas, batchIdleDuration, batchMaxDuration, featureGates, upgrades",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ControllerSpec, E> {
                match v {
                    "none" => Ok(ControllerSpec::None),
                    other => Err(E::invalid_value(de::Unexpected::Str(other), &"`none` or a map of settings")),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ControllerSpec, A::Error> {
                ControllerConfig::deserialize(de::value::MapAccessDeserializer::new(map)).map(ControllerSpec::Run)
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for ControllerSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ControllerSpec::None => s.serialize_str("none"),
            ControllerSpec::Run(c) => c.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_or_settings() {
        assert_eq!(serde_saphyr::from_str::<ControllerSpec>("none").unwrap(), ControllerSpec::None);
        let c: ControllerSpec =
            serde_saphyr::from_str("{replicas: 2, featureGates: {spotToSpotConsolidation: true}}").unwrap();
        let ControllerSpec::Run(c) = c else { panic!("a controller") };
        assert_eq!(c.replicas, 2);
        let mut s = dovetail_controller::runtime::Settings::default();
        c.apply_to(&mut s);
        assert!(s.feature_gates.spot_to_spot_consolidation);
        let e = serde_saphyr::from_str::<ControllerSpec>("{featureGates: {spotToSpot: true}}").unwrap_err().to_string();
        assert!(e.contains("spotToSpot") && e.contains("spotToSpotConsolidation"), "{e}");
    }
}
