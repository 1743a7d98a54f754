//! Rendering simulated instants as the ISO-8601 timestamps AWS APIs return.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the UNIX epoch of `epoch + at`.
pub(crate) fn unix_secs(epoch: SystemTime, at: Duration) -> f64 {
    let base = epoch.duration_since(UNIX_EPOCH).unwrap_or_default();
    (base + at).as_secs_f64()
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for `epoch + at` (EC2's XML timestamp format).
pub(crate) fn iso8601_millis(epoch: SystemTime, at: Duration) -> String {
    let total = epoch.duration_since(UNIX_EPOCH).unwrap_or_default() + at;
    let (date, hms) = split(total.as_secs());
    format!("{date}T{hms}.{:03}Z", total.subsec_millis())
}

/// `YYYY-MM-DDTHH:MM:SSZ` (EventBridge's `time` field format).
pub(crate) fn iso8601_secs(epoch: SystemTime, at: Duration) -> String {
    let total = epoch.duration_since(UNIX_EPOCH).unwrap_or_default() + at;
    let (date, hms) = split(total.as_secs());
    format!("{date}T{hms}Z")
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fff]Z` back to seconds since the UNIX epoch.
pub(crate) fn parse_iso8601(s: &str) -> Option<f64> {
    let s = s.strip_suffix('Z').unwrap_or(s);
    let (date, time) = s.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.split(':');
    let h: i64 = t.next()?.parse().ok()?;
    let min: i64 = t.next()?.parse().ok()?;
    let sec: f64 = t.next()?.parse().ok()?;
    let days = days_from_civil(y, m, day);
    Some((days * 86_400 + h * 3600 + min * 60) as f64 + sec)
}

fn split(secs: u64) -> (String, String) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    (format!("{y:04}-{m:02}-{d:02}"), format!("{:02}:{:02}:{:02}", rem / 3600, (rem / 60) % 60, rem % 60))
}

/// Howard Hinnant's `civil_from_days`: proleptic Gregorian date of a day count.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The inverse of [`civil_from_days`].
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        let epoch = UNIX_EPOCH + Duration::from_secs(1_767_225_600); // 2026-01-01T00:00:00Z
        assert_eq!(iso8601_millis(epoch, Duration::ZERO), "2026-01-01T00:00:00.000Z");
        assert_eq!(iso8601_secs(epoch, Duration::from_millis(90_061_500)), "2026-01-02T01:01:01Z");
        assert_eq!(iso8601_millis(UNIX_EPOCH, Duration::from_secs(951_782_400)), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn parse_round_trips() {
        let epoch = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
        let s = iso8601_millis(epoch, Duration::from_millis(12_345_678));
        let parsed = parse_iso8601(&s).expect("parses");
        assert!((parsed - unix_secs(epoch, Duration::from_millis(12_345_678))).abs() < 1e-6);
    }
}
