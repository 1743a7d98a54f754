//! The clap value parsers of flags whose values are not plain strings or numbers: Go durations,
//! feature gates and the scheduling policies. Their errors say what is accepted; clap adds the
//! flag and the value.

use std::time::Duration;

use crate::runtime::settings::FeatureGates;
use crate::scheduling::{MinValuesPolicy, PreferencePolicy};

/// Parses a Go `time.ParseDuration` string (`dovetail_goduration::parse`): a sequence of
/// decimal numbers with units `ns`, `us`/`µs`, `ms`, `s`, `m`, `h` (`1m30s`, `1.5s`, `500ms`),
/// surrounding whitespace ignored. Negative durations, `-0` included, are rejected: no
/// Karpenter duration setting may be negative.
///
/// # Errors
/// A message saying what is accepted, which clap prefixes with the flag and the value.
pub fn parse_go_duration(s: &str) -> Result<Duration, String> {
    const ALLOWED: &str = "a Go duration such as 1s, 500ms, 1m30s (units ns, us, ms, s, m, h)";
    let s = s.trim();
    if s.starts_with('-') {
        return Err(ALLOWED.to_string());
    }
    dovetail_goduration::parse(s).map_err(|e| format!("{ALLOWED}: {}", e.reason))
}

/// Parses `--feature-gates`: `Name=bool` pairs, comma-separated, applied over
/// [`FeatureGates::default`]. Gates Karpenter has but Dovetail does not implement are accepted
/// only when off, so a copied Helm value keeps working but nothing silently does less than asked.
///
/// # Errors
/// A message naming the bad pair and the known gates.
pub fn parse_feature_gates(s: &str) -> Result<FeatureGates, String> {
    const KNOWN: &str = "known gates: NodeRepair, ReservedCapacity, SpotToSpotConsolidation, \
                         NodeOverlay, StaticCapacity (false only)";
    let mut gates = FeatureGates::default();
    for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(format!("{pair:?} is not Name=true|false; {KNOWN}"));
        };
        let on = match value.trim() {
            "true" | "True" | "TRUE" => true,
            "false" | "False" | "FALSE" => false,
            other => return Err(format!("{name}: {other:?} is not true or false")),
        };
        match name.trim() {
            "NodeRepair" => gates.node_repair = on,
            "ReservedCapacity" => gates.reserved_capacity = on,
            "SpotToSpotConsolidation" => gates.spot_to_spot_consolidation = on,
            "NodeOverlay" => gates.node_overlay = on,
            "StaticCapacity" if !on => {}
            "StaticCapacity" => {
                return Err(format!("{name}=true is not supported by Dovetail; {KNOWN}"));
            }
            other => return Err(format!("unknown feature gate {other:?}; {KNOWN}")),
        }
    }
    Ok(gates)
}

/// Parses `--preference-policy`.
pub(super) fn parse_preference_policy(s: &str) -> Result<PreferencePolicy, String> {
    match s.trim() {
        "Respect" => Ok(PreferencePolicy::Respect),
        "Ignore" => Ok(PreferencePolicy::Ignore),
        _ => Err("Respect or Ignore".into()),
    }
}

/// Parses `--min-values-policy`.
pub(super) fn parse_min_values_policy(s: &str) -> Result<MinValuesPolicy, String> {
    match s.trim() {
        "Strict" => Ok(MinValuesPolicy::Strict),
        "BestEffort" => Ok(MinValuesPolicy::BestEffort),
        _ => Err("Strict or BestEffort".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse_like_go() {
        assert_eq!(parse_go_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_go_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_go_duration("2h45m"), Ok(Duration::from_secs(2 * 3600 + 45 * 60)));
        assert_eq!(parse_go_duration("300us"), Ok(Duration::from_micros(300)));
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "10", "1x", "-1s", "s", "1.2.3s"] {
            assert!(parse_go_duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
