//! Go's duration text: [`parse`] is `time.ParseDuration`, [`format`] is `Duration.String()`.
//!
//! Kubernetes and Karpenter manifests, the controller's flags and the simulator's scenarios
//! all write durations this way (`720h`, `1h30m`, `500ms`); this crate is the one parser
//! they share. Only non-negative durations are represented, as [`std::time::Duration`].

use std::time::Duration;

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
/// Follows Go's `time.ParseDuration` exactly: an optional sign, then one or more decimal numbers
/// (with optional fraction, `1.5h`, `.5s`) each followed by a unit among `ns`, `us`, `µs`, `μs`,
/// `ms`, `s`, `m`, `h` (`2h45m0.5s`); a bare `"0"` is allowed; fraction digits beyond a
/// nanosecond are truncated. Values above Go's `int64` nanosecond range are rejected, and so are
/// negative ones, which no caller of ours accepts (`-0s` is zero, as in Go). No surrounding
/// whitespace, no `"Never"`: callers that allow those handle them first.
///
/// # Errors
/// [`DurationError`] saying what is wrong.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
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
pub fn format(duration: Duration) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn parses_the_durations_karpenter_users_write() {
        assert_eq!(parse("720h"), Ok(secs(720 * 3600)));
        assert_eq!(parse("1h30m"), Ok(secs(5400)));
        assert_eq!(parse("10s"), Ok(secs(10)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("8h0m0s"), Ok(secs(8 * 3600)));
    }

    #[test]
    fn parses_go_fractions_and_small_units() {
        assert_eq!(parse("1.5h"), Ok(secs(5400)));
        assert_eq!(parse("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(parse("2us"), Ok(Duration::from_micros(2)));
        assert_eq!(parse("2\u{b5}s"), Ok(Duration::from_micros(2)));
        assert_eq!(parse(".5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("1.000000001s"), Ok(Duration::new(1, 1)));
    }

    #[test]
    fn rejects_what_go_rejects() {
        for bad in ["", "h", "10", "1d", "Never", "-", "1h-2m", ".s", "9999999999999999999h"] {
            assert!(parse(bad).is_err(), "{bad:?} should fail");
        }
        assert_eq!(parse("-1h").map_err(|e| e.reason), Err("negative durations are not allowed"));
    }

    #[test]
    fn follows_go_at_the_edges() {
        assert_eq!(parse("2h45m0.5s"), Ok(Duration::from_millis((2 * 3600 + 45 * 60) * 1000 + 500)));
        assert_eq!(parse("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse("1.5h30m"), Ok(secs(7200)));
        assert_eq!(parse("+5s"), Ok(secs(5)));
        assert_eq!(parse("5.s"), Ok(secs(5)));
        assert_eq!(parse("-0s"), Ok(Duration::ZERO));
        assert_eq!(parse("1.9999999999s"), Ok(Duration::new(1, 999_999_999)));
        for bad in ["1h 30m", " 1h", "1h ", "1e3s", "-1s", "0.5"] {
            assert!(parse(bad).is_err(), "{bad:?} should fail");
        }
        assert_eq!(parse("0.5").map_err(|e| e.reason), Err("missing unit"));
        assert_eq!(parse("3d").map_err(|e| e.reason), Err("unknown unit"));
    }

    #[test]
    fn formats_like_go_duration_string() {
        assert_eq!(format(secs(720 * 3600)), "720h0m0s");
        assert_eq!(format(secs(90)), "1m30s");
        assert_eq!(format(secs(10)), "10s");
        assert_eq!(format(Duration::ZERO), "0s");
        assert_eq!(format(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format(Duration::from_millis(10)), "10ms");
        assert_eq!(format(Duration::from_nanos(5)), "5ns");
        assert_eq!(format(Duration::from_micros(15)), "15\u{b5}s");
    }
}
