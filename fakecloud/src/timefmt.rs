//! Simulated instants as the ISO-8601 timestamps AWS APIs exchange, through jiff.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

/// Seconds since the UNIX epoch of `epoch + at`.
pub(crate) fn unix_secs(epoch: SystemTime, at: Duration) -> f64 {
    let base = epoch.duration_since(UNIX_EPOCH).unwrap_or_default();
    (base + at).as_secs_f64()
}

/// The instant `epoch + at` (clamped to jiff's range, far beyond any simulation).
fn timestamp(epoch: SystemTime, at: Duration) -> Timestamp {
    Timestamp::try_from(epoch + at).unwrap_or(Timestamp::MAX)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for `epoch + at` (EC2's XML timestamp format).
pub(crate) fn iso8601_millis(epoch: SystemTime, at: Duration) -> String {
    timestamp(epoch, at).strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// `YYYY-MM-DDTHH:MM:SSZ` (EventBridge's `time` field format).
pub(crate) fn iso8601_secs(epoch: SystemTime, at: Duration) -> String {
    timestamp(epoch, at).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The simulated instant (time since `epoch`) that a request's timestamp names: ISO-8601
/// (`2026-01-01T00:10:00Z`; without an offset, UTC) or UNIX seconds (`1767226200.5`), the
/// forms the EC2 query protocol accepts. Instants before `epoch` are zero.
pub(crate) fn parse_instant(epoch: SystemTime, text: &str) -> Option<Duration> {
    let iso = text
        .parse::<Timestamp>()
        .ok()
        .or_else(|| text.parse::<DateTime>().ok().and_then(|t| t.to_zoned(TimeZone::UTC).ok()).map(|z| z.timestamp()));
    if let Some(instant) = iso {
        let since = instant.duration_since(Timestamp::try_from(epoch).ok()?);
        return Some(Duration::try_from(since).unwrap_or_default());
    }
    let secs: f64 = text.parse().ok()?;
    Some(Duration::from_secs_f64((secs - unix_secs(epoch, Duration::ZERO)).max(0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        let epoch = UNIX_EPOCH + crate::config::EPOCH_2026;
        assert_eq!(iso8601_millis(epoch, Duration::ZERO), "2026-01-01T00:00:00.000Z");
        assert_eq!(iso8601_secs(epoch, Duration::from_millis(90_061_500)), "2026-01-02T01:01:01Z");
        assert_eq!(iso8601_millis(UNIX_EPOCH, Duration::from_secs(951_782_400)), "2000-02-29T00:00:00.000Z");
        // Milliseconds are truncated, not rounded.
        assert_eq!(iso8601_millis(epoch, Duration::from_nanos(1_999_999_999)), "2026-01-01T00:00:01.999Z");
    }

    #[test]
    fn parses_what_it_formats_and_unix_seconds() {
        let epoch = UNIX_EPOCH + crate::config::EPOCH_2026;
        let at = Duration::from_millis(12_345_678);
        assert_eq!(parse_instant(epoch, &iso8601_millis(epoch, at)), Some(at));
        assert_eq!(parse_instant(epoch, "2026-01-01T00:10:00"), Some(Duration::from_secs(600)));
        assert_eq!(parse_instant(epoch, "1767226200"), Some(Duration::from_secs(600)));
        assert_eq!(parse_instant(epoch, "2025-12-31T23:00:00Z"), Some(Duration::ZERO));
        assert_eq!(parse_instant(epoch, "yesterday"), None);
    }
}
