//! Durations as people write them in scenarios: `90s`, `10m`, `1h30m`, `500ms`.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A scenario duration. Parses Go-style duration strings (the format Kubernetes and
/// Karpenter manifests use), so one notation serves the whole file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct SimDuration(pub Duration);

impl SimDuration {
    /// Parses Go duration text (`1h30m`, `45s`, `250ms`, `2.5m`; `dovetail_goduration::parse`),
    /// surrounding whitespace ignored. A scenario's durations are never negative, not even `-0s`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.starts_with('-') {
            return Err(format!("invalid duration {s:?}: negative durations are not allowed"));
        }
        dovetail_goduration::parse(s).map(Self).map_err(|e| format!("{e} (use h, m, s or ms)"))
    }
}

impl std::fmt::Display for SimDuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = self.0.as_millis();
        if !ms.is_multiple_of(1000) {
            return write!(f, "{ms}ms");
        }
        let s = ms / 1000;
        let (h, m, s) = (s / 3600, (s % 3600) / 60, s % 60);
        let mut out = String::new();
        if h > 0 {
            out += &format!("{h}h");
        }
        if m > 0 {
            out += &format!("{m}m");
        }
        if s > 0 || out.is_empty() {
            out += &format!("{s}s");
        }
        f.write_str(&out)
    }
}

impl<'de> Deserialize<'de> for SimDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        SimDuration::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl Serialize for SimDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_go_durations() {
        assert_eq!(SimDuration::parse("1h30m").unwrap().0, Duration::from_secs(5400));
        assert_eq!(SimDuration::parse("250ms").unwrap().0, Duration::from_millis(250));
        assert_eq!(SimDuration::parse("2.5m").unwrap().0, Duration::from_secs(150));
        assert!(SimDuration::parse("10").unwrap_err().contains("missing unit"));
        assert!(SimDuration::parse("3d").unwrap_err().contains("unknown unit"));
        assert_eq!(SimDuration(Duration::from_secs(5400)).to_string(), "1h30m");
        assert_eq!(SimDuration(Duration::from_millis(1500)).to_string(), "1500ms");
    }
}
