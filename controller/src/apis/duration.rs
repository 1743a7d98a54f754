//! Go duration strings (`"720h"`, `"1h30m"`, `"10s"`) and Karpenter's `"Never"`.
//!
//! Karpenter's API stores durations as Go `time.Duration` text (`expireAfter`,
//! `consolidateAfter`, `terminationGracePeriod`, budget `duration`). A manifest must round-trip
//! unchanged, so these wrappers keep the original text next to the parsed value and serialize
//! the text back. Deserialization accepts any Go duration syntax; the narrower per-field CRD
//! patterns (for example "no fractions, no `ms`") are checked by validation with a field path.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The text Karpenter uses for "no duration" in `expireAfter` and `consolidateAfter`.
pub const NEVER: &str = "Never";

/// Why a string is not a Go duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {text:?}: {reason}")]
pub struct DurationError {
    /// The rejected text.
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Parses a Go duration string into a non-negative [`Duration`].
///
/// Follows Go's `time.ParseDuration`: an optional sign, then one or more decimal numbers (with
/// optional fraction) each followed by a unit among `ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`;
/// a bare `"0"` is allowed. Negative durations and values above Go's `int64` nanosecond range are
/// rejected, since no Karpenter field accepts them.
pub fn parse_go_duration(text: &str) -> Result<Duration, DurationError> {
    let err = |reason| DurationError { text: text.to_owned(), reason };
    let mut rest = text;
    let mut negative = false;
    if let Some(stripped) = rest.strip_prefix('-') {
        negative = true;
        rest = stripped;
    } else if let Some(stripped) = rest.strip_prefix('+') {
        rest = stripped;
    }
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(err("empty duration"));
    }
    let mut total_ns: u128 = 0;
    // Each iteration consumes one `<number><unit>` group, so the loop is bounded by the length.
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after_int) = rest.split_at(int_len);
        let (frac_part, after_number) = match after_int.strip_prefix('.') {
            Some(after_dot) => {
                let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
                after_dot.split_at(frac_len)
            }
            None => ("", after_int),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(err("expected a number"));
        }
        let unit_len = after_number
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(after_number.len(), |(i, _)| i);
        let (unit, after_unit) = after_number.split_at(unit_len);
        let unit_ns: u128 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3_600 * 1_000_000_000,
            "" => return Err(err("missing unit")),
            _ => return Err(err("unknown unit")),
        };
        let int_value: u128 =
            if int_part.is_empty() { 0 } else { int_part.parse().map_err(|_| err("number out of range"))? };
        let mut group_ns = int_value.checked_mul(unit_ns).ok_or_else(|| err("duration out of range"))?;
        // Fraction digits beyond nanosecond precision are truncated, as Go does.
        let mut scale = unit_ns;
        for digit in frac_part.bytes() {
            if scale < 10 {
                break;
            }
            scale /= 10;
            group_ns += u128::from(digit - b'0') * scale;
        }
        total_ns = total_ns.checked_add(group_ns).ok_or_else(|| err("duration out of range"))?;
        if total_ns > i64::MAX as u128 {
            return Err(err("duration out of range"));
        }
        rest = after_unit;
    }
    if negative && total_ns != 0 {
        return Err(err("negative durations are not allowed"));
    }
    let secs = u64::try_from(total_ns / 1_000_000_000).map_err(|_| err("duration out of range"))?;
    let nanos = u32::try_from(total_ns % 1_000_000_000).map_err(|_| err("duration out of range"))?;
    Ok(Duration::new(secs, nanos))
}

/// Formats a duration as Go's `time.Duration.String()` does (`"720h0m0s"`, `"1.5s"`, `"10ms"`).
pub fn format_go_duration(duration: Duration) -> String {
    let total_ns = duration.as_nanos();
    if total_ns == 0 {
        return "0s".to_owned();
    }
    if total_ns < 1_000_000_000 {
        let (scale, unit) = if total_ns < 1_000 {
            (1, "ns")
        } else if total_ns < 1_000_000 {
            (1_000, "\u{b5}s")
        } else {
            (1_000_000, "ms")
        };
        return format!("{}{unit}", format_fraction(total_ns, scale));
    }
    let seconds = format_fraction(total_ns % 60_000_000_000, 1_000_000_000);
    let total_minutes = total_ns / 60_000_000_000;
    if total_minutes == 0 {
        return format!("{seconds}s");
    }
    let minutes = total_minutes % 60;
    let hours = total_minutes / 60;
    if hours == 0 { format!("{minutes}m{seconds}s") } else { format!("{hours}h{minutes}m{seconds}s") }
}

/// `value / scale` with the fraction printed without trailing zeros (Go's `fmtFrac`).
fn format_fraction(value: u128, scale: u128) -> String {
    let whole = value / scale;
    let frac = value % scale;
    if frac == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

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
    fn parses_the_durations_karpenter_users_write() {
        assert_eq!(parse_go_duration("720h"), Ok(secs(720 * 3600)));
        assert_eq!(parse_go_duration("1h30m"), Ok(secs(5400)));
        assert_eq!(parse_go_duration("10s"), Ok(secs(10)));
        assert_eq!(parse_go_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_go_duration("8h0m0s"), Ok(secs(8 * 3600)));
    }

    #[test]
    fn parses_go_fractions_and_small_units() {
        assert_eq!(parse_go_duration("1.5h"), Ok(secs(5400)));
        assert_eq!(parse_go_duration("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_go_duration("2us"), Ok(Duration::from_micros(2)));
        assert_eq!(parse_go_duration("2\u{b5}s"), Ok(Duration::from_micros(2)));
        assert_eq!(parse_go_duration(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("1.000000001s"), Ok(Duration::new(1, 1)));
    }

    #[test]
    fn rejects_what_go_rejects() {
        for bad in ["", "h", "10", "1d", "Never", "-", "1h-2m", ".s", "9999999999999999999h"] {
            assert!(parse_go_duration(bad).is_err(), "{bad:?} should fail");
        }
        assert_eq!(parse_go_duration("-1h").map_err(|e| e.reason), Err("negative durations are not allowed"));
    }

    #[test]
    fn formats_like_go_duration_string() {
        assert_eq!(format_go_duration(secs(720 * 3600)), "720h0m0s");
        assert_eq!(format_go_duration(secs(90)), "1m30s");
        assert_eq!(format_go_duration(secs(10)), "10s");
        assert_eq!(format_go_duration(Duration::ZERO), "0s");
        assert_eq!(format_go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_go_duration(Duration::from_millis(10)), "10ms");
        assert_eq!(format_go_duration(Duration::from_nanos(5)), "5ns");
        assert_eq!(format_go_duration(Duration::from_micros(15)), "15\u{b5}s");
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
