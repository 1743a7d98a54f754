//! Cron schedules of disruption budgets (`spec.disruption.budgets[].schedule`).
//!
//! Karpenter parses budget schedules with `robfig/cron/v3`'s standard parser in UTC
//! (`cron.ParseStandard("TZ=UTC " + schedule)`) and decides whether a budget is active with
//! `schedule.Next(now - duration) <= now`. This module ports that parser (five fields: minute,
//! hour, day of month, month, day of week; `*`, `?`, ranges, steps, lists, month and weekday
//! names; the `@yearly`/`@annually`/`@monthly`/`@weekly`/`@daily`/`@midnight`/`@hourly` macros)
//! and its `Next` algorithm, so budget windows open and close at the same instants.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::ToSpan;
use k8s_openapi::jiff::civil::DateTime;
use k8s_openapi::jiff::tz::TimeZone;

/// Why a schedule cannot be parsed or evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid schedule {schedule:?}: {reason}")]
pub struct CronError {
    /// The schedule text.
    pub schedule: String,
    /// What is wrong.
    pub reason: String,
}

/// Set when a field was `*` or `?` (robfig's `starBit`): day-of-month and day-of-week combine
/// with AND when either is a star, with OR otherwise.
const STAR_BIT: u64 = 1 << 63;

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MINUTES: Bounds = Bounds { min: 0, max: 59, names: &[] };
const HOURS: Bounds = Bounds { min: 0, max: 23, names: &[] };
const DAYS_OF_MONTH: Bounds = Bounds { min: 1, max: 31, names: &[] };
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)],
};

/// A parsed five-field cron schedule, evaluated in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CronSchedule {
    minute: u64,
    hour: u64,
    day_of_month: u64,
    month: u64,
    day_of_week: u64,
}

impl CronSchedule {
    /// Parses a schedule as robfig's `ParseStandard` does.
    pub fn parse(schedule: &str) -> Result<Self, CronError> {
        let err = |reason: String| CronError { schedule: schedule.to_owned(), reason };
        let trimmed = schedule.trim();
        let expanded = match trimmed {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => {
                return Err(err(format!("unrecognized descriptor: {other}")));
            }
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let [minute, hour, day_of_month, month, day_of_week] = fields.as_slice() else {
            return Err(err(format!("expected exactly 5 fields, found {}: [{}]", fields.len(), fields.join(" "))));
        };
        Ok(Self {
            minute: parse_field(minute, &MINUTES).map_err(err)?,
            hour: parse_field(hour, &HOURS).map_err(err)?,
            day_of_month: parse_field(day_of_month, &DAYS_OF_MONTH).map_err(err)?,
            month: parse_field(month, &MONTHS).map_err(err)?,
            day_of_week: parse_field(day_of_week, &DAYS_OF_WEEK).map_err(err)?,
        })
    }

    /// The first schedule hit strictly after `after` (robfig `SpecSchedule.Next`), or `None`
    /// when there is none within five years (e.g. `0 0 30 2 *`).
    pub fn next_after(&self, after: &Time) -> Result<Option<Time>, CronError> {
        let fail = |reason: String| CronError { schedule: String::new(), reason };
        let start = after.0.to_zoned(TimeZone::UTC).datetime();
        // Round up to the next whole second, as robfig does, so a hit at `after` is excluded.
        let start = start
            .with()
            .subsec_nanosecond(0)
            .build()
            .and_then(|t| t.checked_add(1.second()))
            .map_err(|e| fail(e.to_string()))?;
        let Some(hit) = self.next_civil(start).map_err(|e| fail(e.to_string()))? else {
            return Ok(None);
        };
        let timestamp = hit.to_zoned(TimeZone::UTC).map_err(|e| fail(e.to_string()))?.timestamp();
        Ok(Some(Time(timestamp)))
    }

    /// Whether a hit falls in `(now - window, now]`: Karpenter's `Budget.IsActive`.
    pub fn hit_within(&self, now: &Time, window: Duration) -> Result<bool, CronError> {
        let fail = |reason: String| CronError { schedule: String::new(), reason };
        let window_start = now.0.checked_sub(window).map_err(|e| fail(e.to_string()))?;
        Ok(self.next_after(&Time(window_start))?.is_some_and(|hit| hit.0 <= now.0))
    }

    fn next_civil(&self, mut t: DateTime) -> Result<Option<DateTime>, k8s_openapi::jiff::Error> {
        let year_limit = t.year() + 5;
        let mut added = false;
        // Each pass either returns or advances `t`; the year limit bounds the number of passes.
        'wrap: loop {
            if t.year() > year_limit {
                return Ok(None);
            }
            while !has_bit(self.month, t.month()) {
                if !added {
                    added = true;
                    t = t.first_of_month().start_of_day();
                }
                t = t.checked_add(1.month())?;
                if t.month() == 1 {
                    continue 'wrap;
                }
            }
            while !self.day_matches(t) {
                if !added {
                    added = true;
                    t = t.start_of_day();
                }
                t = t.checked_add(1.day())?;
                if t.day() == 1 {
                    continue 'wrap;
                }
            }
            while !has_bit(self.hour, t.hour()) {
                if !added {
                    added = true;
                    t = t.with().minute(0).second(0).subsec_nanosecond(0).build()?;
                }
                t = t.checked_add(1.hour())?;
                if t.hour() == 0 {
                    continue 'wrap;
                }
            }
            while !has_bit(self.minute, t.minute()) {
                if !added {
                    added = true;
                    t = t.with().second(0).subsec_nanosecond(0).build()?;
                }
                t = t.checked_add(1.minute())?;
                if t.minute() == 0 {
                    continue 'wrap;
                }
            }
            // Standard schedules fire at second 0 only.
            while t.second() != 0 {
                if !added {
                    added = true;
                    t = t.with().subsec_nanosecond(0).build()?;
                }
                t = t.checked_add(1.second())?;
                if t.second() == 0 {
                    continue 'wrap;
                }
            }
            return Ok(Some(t));
        }
    }

    fn day_matches(&self, t: DateTime) -> bool {
        let dom = has_bit(self.day_of_month, t.day());
        let dow = has_bit(self.day_of_week, t.weekday().to_sunday_zero_offset());
        if self.day_of_month & STAR_BIT != 0 || self.day_of_week & STAR_BIT != 0 { dom && dow } else { dom || dow }
    }
}

fn has_bit(bits: u64, value: i8) -> bool {
    u32::try_from(value).is_ok_and(|v| v < 63 && bits & (1 << v) != 0)
}

fn parse_field(field: &str, bounds: &Bounds) -> Result<u64, String> {
    let mut bits = 0;
    for range in field.split(',') {
        bits |= parse_range(range, bounds)?;
    }
    Ok(bits)
}

fn parse_range(expr: &str, bounds: &Bounds) -> Result<u64, String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let mut extra = 0;
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        extra = STAR_BIT;
        (bounds.min, bounds.max)
    } else {
        let start = parse_int_or_name(low_and_high[0], bounds)?;
        match low_and_high.as_slice() {
            [_] => (start, start),
            [_, high] => (start, parse_int_or_name(high, bounds)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.as_slice() {
        [_] => 1,
        [_, step] => {
            let step = parse_int(step)?;
            // "N/step" means "N-max/step".
            if single {
                end = bounds.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Err(format!("beginning of range ({start}) below minimum ({}): {expr}", bounds.min));
    }
    if end > bounds.max {
        return Err(format!("end of range ({end}) above maximum ({}): {expr}", bounds.max));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    let mut bits = extra;
    let mut value = start;
    while value <= end {
        bits |= 1 << value;
        value += step;
    }
    Ok(bits)
}

fn parse_int_or_name(text: &str, bounds: &Bounds) -> Result<u32, String> {
    let lower = text.to_ascii_lowercase();
    if let Some((_, value)) = bounds.names.iter().find(|(name, _)| *name == lower) {
        return Ok(*value);
    }
    parse_int(text)
}

fn parse_int(text: &str) -> Result<u32, String> {
    text.parse::<u32>().map_err(|_| format!("failed to parse int from {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Time {
        Time(text.parse().unwrap())
    }

    #[test]
    fn macros_and_fields_parse() {
        for schedule in ["@daily", "@hourly", "@weekly", "@monthly", "@yearly", "0 9 * * mon-fri", "*/15 * * * *"] {
            assert!(CronSchedule::parse(schedule).is_ok(), "{schedule}");
        }
        for schedule in ["@every 5m", "* * * *", "60 * * * *", "* * * * 7", "5-1 * * * *", "*/0 * * * *"] {
            assert!(CronSchedule::parse(schedule).is_err(), "{schedule}");
        }
    }

    #[test]
    fn next_after_is_strictly_after() {
        let daily = CronSchedule::parse("@daily").unwrap();
        assert_eq!(daily.next_after(&at("2026-01-01T00:00:00Z")).unwrap(), Some(at("2026-01-02T00:00:00Z")));
        assert_eq!(daily.next_after(&at("2026-01-01T23:59:59Z")).unwrap(), Some(at("2026-01-02T00:00:00Z")));
        let weekdays = CronSchedule::parse("0 9 * * mon-fri").unwrap();
        // 2026-01-03 is a Saturday.
        assert_eq!(weekdays.next_after(&at("2026-01-03T10:00:00Z")).unwrap(), Some(at("2026-01-05T09:00:00Z")));
    }

    #[test]
    fn day_of_month_and_week_combine_with_or_unless_starred() {
        // Either the 1st or a Monday: 2026-01-05 (Monday) comes before 2026-02-01.
        let either = CronSchedule::parse("0 0 1 * 1").unwrap();
        assert_eq!(either.next_after(&at("2026-01-02T00:00:00Z")).unwrap(), Some(at("2026-01-05T00:00:00Z")));
    }

    #[test]
    fn impossible_dates_have_no_next_hit() {
        let never = CronSchedule::parse("0 0 30 2 *").unwrap();
        assert_eq!(never.next_after(&at("2026-01-01T00:00:00Z")).unwrap(), None);
    }

    #[test]
    fn window_is_open_for_duration_after_each_hit() {
        let nine = CronSchedule::parse("0 9 * * *").unwrap();
        let eight_hours = Duration::from_secs(8 * 3600);
        assert!(nine.hit_within(&at("2026-01-01T09:00:00Z"), eight_hours).unwrap());
        assert!(nine.hit_within(&at("2026-01-01T16:59:59Z"), eight_hours).unwrap());
        assert!(!nine.hit_within(&at("2026-01-01T17:00:00Z"), eight_hours).unwrap());
        assert!(!nine.hit_within(&at("2026-01-01T08:59:59Z"), eight_hours).unwrap());
    }
}
