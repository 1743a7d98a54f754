//! [`FlagError`], the error of a flag whose value is not allowed, and the value checks that
//! `Flags::resolve` reports through it.

use std::time::Duration;

/// A flag whose value is not allowed. The message names the flag (and its variable), the value
/// given and what would be accepted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid value {given:?} for --{flag} ({env}): {allowed}")]
pub struct FlagError {
    /// The flag, without dashes.
    pub flag: &'static str,
    /// Its environment variable.
    pub env: &'static str,
    /// What was given.
    pub given: String,
    /// What is allowed.
    pub allowed: String,
}

/// A [`FlagError`] for `flag` and its variable `env`.
pub(super) fn flag_error(
    flag: &'static str,
    env: &'static str,
    given: impl Into<String>,
    allowed: impl Into<String>,
) -> FlagError {
    FlagError { flag, env, given: given.into(), allowed: allowed.into() }
}

/// `s` cut to 40 characters, for echoing a long value in an error.
pub(super) fn truncate(s: &str) -> String {
    if s.chars().count() > 40 { format!("{}…", s.chars().take(40).collect::<String>()) } else { s.to_string() }
}

/// Checks that `url` is an absolute http(s) URL with a host (or empty, unless `required`).
pub(super) fn validate_url(flag: &'static str, env: &'static str, url: &str, required: bool) -> Result<(), FlagError> {
    let url = url.trim();
    if url.is_empty() {
        if required {
            return Err(flag_error(
                flag,
                env,
                url,
                "a URL such as https://ABCD.gr7.us-west-2.eks.amazonaws.com is required",
            ));
        }
        return Ok(());
    }
    let parsed: Result<http::Uri, _> = url.parse();
    match parsed {
        Ok(uri) if matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some() => Ok(()),
        _ => Err(flag_error(flag, env, url, "an absolute http:// or https:// URL with a host")),
    }
}

/// Checks that `value` is a namespace name (a DNS-1123 label).
pub(super) fn validate_dns_label(flag: &'static str, env: &'static str, value: &str) -> Result<(), FlagError> {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(flag_error(flag, env, value, "a namespace name (lowercase letters, digits and '-', at most 63)"))
    }
}

/// A duration as seconds, for error messages.
pub(super) fn format_duration(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}
