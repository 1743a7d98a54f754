//! String `format`s kube-openapi checks for custom resources (its `strfmt` registry). Formats it
//! does not know (`int32`, `int64`, `double`, `password`, ...) are ignored, as there.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `s` is valid for `format`; unknown formats accept everything.
pub(crate) fn is_valid(format: &str, s: &str) -> bool {
    match format {
        "date-time" | "datetime" => is_date_time(s),
        "date" => is_date(s),
        "duration" => is_duration(s),
        "byte" => is_base64(s),
        "uuid" => is_uuid(s, None),
        "uuid3" => is_uuid(s, Some(b'3')),
        "uuid4" => is_uuid(s, Some(b'4')),
        "uuid5" => is_uuid(s, Some(b'5')),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "hostname" => is_hostname(s),
        "email" => is_email(s),
        "uri" => is_uri(s),
        _ => true,
    }
}

fn digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    if parts.len() != 3 || !digits(parts[0], 4) || !digits(parts[1], 2) || !digits(parts[2], 2) {
        return false;
    }
    let month: u32 = parts[1].parse().unwrap_or(0);
    let day: u32 = parts[2].parse().unwrap_or(0);
    (1..=12).contains(&month) && (1..=31).contains(&day)
}

/// RFC 3339 (`2006-01-02T15:04:05.999999999Z07:00`), the layouts strfmt's `DateTime` accepts.
fn is_date_time(s: &str) -> bool {
    let Some(split) = s.find(['T', 't', ' ']) else {
        return false;
    };
    if !is_date(&s[..split]) {
        return false;
    }
    let time = &s[split + 1..];
    let (clock, zone) = match time.find(['Z', 'z', '+', '-']) {
        Some(i) => (&time[..i], &time[i..]),
        None => return false,
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((h, f)) => (h, Some(f)),
        None => (clock, None),
    };
    let hms: Vec<&str> = hms.split(':').collect();
    if hms.len() != 3 || !hms.iter().all(|p| digits(p, 2)) {
        return false;
    }
    let hour: u32 = hms[0].parse().unwrap_or(99);
    let minute: u32 = hms[1].parse().unwrap_or(99);
    let second: u32 = hms[2].parse().unwrap_or(99);
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    if let Some(f) = frac
        && (f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    if zone.eq_ignore_ascii_case("z") {
        return true;
    }
    let offset: Vec<&str> = zone[1..].split(':').collect();
    offset.len() == 2 && digits(offset[0], 2) && digits(offset[1], 2)
}

/// Go `time.ParseDuration` syntax (`1h30m`, `-1.5s`), or strfmt's `<n> <unit>` with days and
/// weeks (`3d`, `2 weeks`).
fn is_duration(s: &str) -> bool {
    is_go_duration(s) || is_strfmt_duration(s)
}

fn is_go_duration(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
        let num = &rest[..num_end];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return false;
        }
        rest = &rest[num_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        if !matches!(&rest[..unit_end], "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return false;
        }
        rest = &rest[unit_end..];
    }
    true
}

fn is_strfmt_duration(s: &str) -> bool {
    let num_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if num_end == 0 {
        return false;
    }
    let unit = s[num_end..].trim_start();
    matches!(
        unit,
        "ns" | "us"
            | "µs"
            | "ms"
            | "s"
            | "m"
            | "h"
            | "d"
            | "w"
            | "nanosecond"
            | "nanoseconds"
            | "microsecond"
            | "microseconds"
            | "millisecond"
            | "milliseconds"
            | "sec"
            | "secs"
            | "second"
            | "seconds"
            | "min"
            | "mins"
            | "minute"
            | "minutes"
            | "hr"
            | "hrs"
            | "hour"
            | "hours"
            | "day"
            | "days"
            | "wk"
            | "wks"
            | "week"
            | "weeks"
    )
}

fn is_base64(s: &str) -> bool {
    let bytes = s.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return false;
    }
    let body = s.trim_end_matches('=');
    s.len() - body.len() <= 2 && body.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

fn is_uuid(s: &str, version: Option<u8>) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    if groups.len() != 5
        || groups.iter().zip(lens).any(|(g, n)| g.len() != n || !g.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return false;
    }
    match version {
        Some(v) => groups[2].as_bytes()[0] == v,
        None => true,
    }
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, prefix)) = s.split_once('/') else {
        return false;
    };
    let Ok(prefix) = prefix.parse::<u8>() else {
        return false;
    };
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => prefix <= 32,
        Ok(IpAddr::V6(_)) => prefix <= 128,
        Err(_) => false,
    }
}

/// Go `net.ParseMAC`: 6, 8 or 20 octets, `:`/`-` separated or dotted quads of hex.
fn is_mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    let octets_ok = |n: usize| matches!(n, 6 | 8 | 20);
    for sep in [':', '-'] {
        let parts: Vec<&str> = s.split(sep).collect();
        if parts.len() > 1 && octets_ok(parts.len()) && parts.iter().all(|p| hex(p, 2)) {
            return true;
        }
    }
    let quads: Vec<&str> = s.split('.').collect();
    octets_ok(quads.len() * 2) && quads.iter().all(|p| hex(p, 4))
}

fn is_hostname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.trim_end_matches('.').split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

fn is_email(s: &str) -> bool {
    match s.rsplit_once('@') {
        Some((local, domain)) => !local.is_empty() && is_hostname(domain),
        None => false,
    }
}

fn is_uri(s: &str) -> bool {
    match s.split_once(':') {
        Some((scheme, _)) => {
            let mut b = scheme.bytes();
            b.next().is_some_and(|c| c.is_ascii_alphabetic())
                && b.all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'-' || c == b'.')
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_time_accepts_rfc3339_and_rejects_garbage() {
        assert!(is_valid("date-time", "2024-01-02T03:04:05Z"));
        assert!(is_valid("date-time", "2024-01-02T03:04:05.123+01:00"));
        assert!(!is_valid("date-time", "yesterday"));
        assert!(!is_valid("date-time", "2024-13-02T03:04:05Z"));
    }

    #[test]
    fn duration_accepts_go_and_strfmt_forms() {
        assert!(is_valid("duration", "1h30m"));
        assert!(is_valid("duration", "3d"));
        assert!(!is_valid("duration", "soon"));
    }

    #[test]
    fn unknown_formats_accept_anything() {
        assert!(is_valid("int64", "whatever"));
    }
}
