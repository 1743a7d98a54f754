//! Go duration strings (`"720h"`, `"1h30m"`, `"10s"`) and Karpenter's `"Never"`.
//!
//! Karpenter's API stores durations as Go `time.Duration` text (`expireAfter`,
//! `consolidateAfter`, `terminationGracePeriod`, budget `duration`). A manifest must round-trip
//! unchanged, so these wrappers keep the original text next to the parsed value and serialize
//! the text back. Deserialization accepts any Go duration syntax; the narrower per-field CRD
//! patterns (for example "no fractions, no `ms`") are checked by validation with a field path.
//! The parser itself is `dovetail-goduration`, shared with the simulator.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub use dovetail_goduration::{DurationError, format as format_go_duration, parse as parse_go_duration};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The text Karpenter uses for "no duration" in `expireAfter` and `consolidateAfter`.
pub const NEVER: &str = "Never";

/// A Go duration that keeps its original text, e.g. `terminationGracePeriod: 24h`.
///
/// Equality compares the text, so `"60s"` and `"1m"` differ: what matters for round-trips and
/// for Karpenter's spec hashes is what the user wrote. Compare [`GoDuration::duration`] for time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GoDuration {
    text: String,
    duration: Duration,
}

impl GoDuration {
    /// Parses Go duration text.
    pub fn parse(text: &str) -> Result<Self, DurationError> {
        Ok(Self { duration: parse_go_duration(text)?, text: text.to_owned() })
    }

    /// The parsed length of time.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The text as written (or as Go would print it, when built from a [`Duration`]).
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl From<Duration> for GoDuration {
    /// Builds the value Karpenter would write for `duration` (Go's `Duration.String()`).
    fn from(duration: Duration) -> Self {
        Self { text: format_go_duration(duration), duration }
    }
}

impl FromStr for GoDuration {
    type Err = DurationError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for GoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for GoDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for GoDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GoDuration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^([0-9]+(s|m|h))+$" })
    }
    fn inline_schema() -> bool {
        true
    }
}

/// A Go duration or `"Never"` (Karpenter's `NillableDuration`), e.g. `expireAfter: 720h`.
///
/// `None` from [`NillableDuration::duration`] means "never": the node never expires, or
/// consolidation is disabled. Like [`GoDuration`] it serializes back to its original text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NillableDuration {
    text: String,
    duration: Option<Duration>,
}

impl NillableDuration {
    /// Parses Go duration text or `"Never"`.
    pub fn parse(text: &str) -> Result<Self, DurationError> {
        let duration = if text == NEVER { None } else { Some(parse_go_duration(text)?) };
        Ok(Self { text: text.to_owned(), duration })
    }

    /// The value `"Never"`.
    pub fn never() -> Self {
        Self { text: NEVER.to_owned(), duration: None }
    }

    /// The length of time, or `None` for `"Never"`.
    pub fn duration(&self) -> Option<Duration> {
        self.duration
    }

    /// Whether this is `"Never"`.
    pub fn is_never(&self) -> bool {
        self.duration.is_none()
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Replaces the text of a value built from a constant, e.g. to write `720h` rather than
    /// `720h0m0s`. The caller guarantees `text` parses to the same duration.
    pub(crate) fn with_text(mut self, text: &str) -> Self {
        debug_assert_eq!(parse_go_duration(text).ok(), self.duration);
        text.clone_into(&mut self.text);
        self
    }
}

impl From<Duration> for NillableDuration {
    /// Builds the value Karpenter would write for `duration` (Go's `Duration.String()`).
    fn from(duration: Duration) -> Self {
        Self { text: format_go_duration(duration), duration: Some(duration) }
    }
}

impl From<Option<Duration>> for NillableDuration {
    /// `None` becomes `"Never"`.
    fn from(duration: Option<Duration>) -> Self {
        duration.map_or_else(Self::never, Self::from)
    }
}

impl FromStr for NillableDuration {
    type Err = DurationError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for NillableDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for NillableDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for NillableDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for NillableDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NillableDuration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^(([0-9]+(s|m|h))+|Never)$" })
    }
    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn wrappers_round_trip_their_original_text() {
        for text in ["720h", "1h30m", "10s", "60s", "0s"] {
            let value: NillableDuration = serde_json::from_value(serde_json::json!(text)).unwrap();
            assert_eq!(serde_json::to_value(&value).unwrap(), serde_json::json!(text));
            let value: GoDuration = serde_json::from_value(serde_json::json!(text)).unwrap();
            assert_eq!(serde_json::to_value(&value).unwrap(), serde_json::json!(text));
        }
        let never: NillableDuration = serde_json::from_value(serde_json::json!("Never")).unwrap();
        assert!(never.is_never());
        assert_eq!(serde_json::to_value(&never).unwrap(), serde_json::json!("Never"));
        assert!(serde_json::from_value::<GoDuration>(serde_json::json!("Never")).is_err());
    }

    #[test]
    fn built_from_std_duration_uses_go_text() {
        assert_eq!(NillableDuration::from(secs(3600)).as_str(), "1h0m0s");
        assert_eq!(NillableDuration::from(None).as_str(), "Never");
        assert_eq!(GoDuration::from(secs(30)).duration(), secs(30));
    }
}
