//! Kubernetes `resource.Quantity` strings parsed exactly into integers.
//!
//! The actors account resources in integers (milli-CPU, bytes, counts) so that sums are exact
//! and ordering is deterministic. Parsing follows apimachinery's grammar
//! (`<sign><digits>[.<digits>]<suffix>`, suffix one of the binary SI `Ki Mi Gi Ti Pi Ei`, the
//! decimal SI `n u m "" k M G T P E`, or a decimal exponent `e<int>`/`E<int>`), and rounds up
//! like `Quantity.Value()` and `Quantity.MilliValue()` do.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Why a quantity string could not be turned into an integer. Not retryable: the input is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The string does not follow the Quantity grammar.
    #[error("quantity {0:?} is not a valid Kubernetes quantity")]
    Syntax(String),
    /// The value does not fit in an `i64` at the requested scale.
    #[error("quantity {0:?} is too large")]
    Overflow(String),
}

/// An exact rational value: `sign * mantissa * 2^exp2 * 10^exp10`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Exact {
    negative: bool,
    mantissa: u128,
    exp2: u32,
    exp10: i32,
}

/// Mantissa digits kept; apimachinery itself caps at about this precision.
const MANTISSA_DIGITS_MAX: usize = 36;

fn parse_exact(text: &str) -> Result<Exact, QuantityError> {
    let syntax = || QuantityError::Syntax(text.to_string());
    let s = text.trim();
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        Some(_) => (false, s),
        None => return Err(syntax()),
    };
    let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(syntax());
    }
    if frac_part.contains('.') {
        return Err(syntax());
    }
    let digits: String = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    let mut frac_len = frac_part.len() as i32;
    let mut kept = digits;
    // Drop trailing fractional zeros and excess precision deterministically (truncation of
    // digits beyond 36 would change the value; refuse instead).
    while kept.len() > MANTISSA_DIGITS_MAX && kept.ends_with('0') {
        kept = &kept[..kept.len() - 1];
        frac_len -= 1;
    }
    if kept.len() > MANTISSA_DIGITS_MAX {
        return Err(QuantityError::Overflow(text.to_string()));
    }
    let mantissa: u128 = if kept.is_empty() { 0 } else { kept.parse().map_err(|_| syntax())? };
    let (exp2, exp10_suffix) = parse_suffix(suffix).ok_or_else(syntax)?;
    Ok(Exact { negative: negative && mantissa != 0, mantissa, exp2, exp10: exp10_suffix - frac_len })
}

/// Returns (binary exponent, decimal exponent) for a suffix.
fn parse_suffix(suffix: &str) -> Option<(u32, i32)> {
    let pair = match suffix {
        "" => (0, 0),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        _ => {
            let exponent = suffix.strip_prefix('e').or_else(|| suffix.strip_prefix('E'))?;
            let body = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let value: i32 = exponent.parse().ok()?;
            (0, value)
        }
    };
    Some(pair)
}

/// `ceil(value * 10^scale)` as an `i64`, exactly.
fn scaled_ceil(text: &str, exact: Exact, scale: i32) -> Result<i64, QuantityError> {
    let overflow = || QuantityError::Overflow(text.to_string());
    let mut numerator: u128 = exact.mantissa;
    numerator = numerator.checked_mul(1u128.checked_shl(exact.exp2).ok_or_else(overflow)?).ok_or_else(overflow)?;
    let exp10 = exact.exp10 + scale;
    let mut denominator: u128 = 1;
    if exp10 >= 0 {
        let factor = 10u128.checked_pow(exp10 as u32).ok_or_else(overflow)?;
        numerator = numerator.checked_mul(factor).ok_or_else(overflow)?;
    } else if numerator != 0 {
        match 10u128.checked_pow((-exp10) as u32) {
            Some(d) => denominator = d,
            // A denominator this large makes any representable value round to 0 or 1.
            None => return Ok(if exact.negative { 0 } else { 1 }),
        }
    }
    let quotient = numerator / denominator;
    let remainder = numerator % denominator;
    let magnitude = i64::try_from(quotient).map_err(|_| overflow())?;
    if exact.negative {
        // ceil of a negative value truncates toward zero.
        Ok(-magnitude)
    } else if remainder != 0 {
        magnitude.checked_add(1).ok_or_else(overflow)
    } else {
        Ok(magnitude)
    }
}

/// The value rounded up to an integer, like apimachinery's `Quantity.Value()`.
/// Use it for memory and storage (bytes) and for counts (pods, GPUs).
pub fn parse_value(text: &str) -> Result<i64, QuantityError> {
    scaled_ceil(text, parse_exact(text)?, 0)
}

/// The value in thousandths rounded up, like apimachinery's `Quantity.MilliValue()`.
/// Use it for CPU: `"100m"` is 100, `"1.5"` is 1500.
pub fn parse_milli(text: &str) -> Result<i64, QuantityError> {
    scaled_ceil(text, parse_exact(text)?, 3)
}

/// [`parse_value`] over a k8s-openapi `Quantity`.
pub fn value(quantity: &Quantity) -> Result<i64, QuantityError> {
    parse_value(&quantity.0)
}

/// [`parse_milli`] over a k8s-openapi `Quantity`.
pub fn milli(quantity: &Quantity) -> Result<i64, QuantityError> {
    parse_milli(&quantity.0)
}

/// Formats milli-CPU the way the kubelet reports it: whole cores as `"2"`, otherwise `"1930m"`.
pub fn format_milli_cpu(milli_cpu: i64) -> Quantity {
    if milli_cpu % 1000 == 0 { Quantity(format!("{}", milli_cpu / 1000)) } else { Quantity(format!("{milli_cpu}m")) }
}

/// Formats bytes the way the kubelet reports memory: `"7934440Ki"` when a whole number of KiB,
/// otherwise plain bytes.
pub fn format_bytes(bytes: i64) -> Quantity {
    if bytes % 1024 == 0 && bytes != 0 { Quantity(format!("{}Ki", bytes / 1024)) } else { Quantity(format!("{bytes}")) }
}

/// Formats a plain count (`pods`, `nvidia.com/gpu`).
pub fn format_count(count: i64) -> Quantity {
    Quantity(format!("{count}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_quantities_parse_to_millicores() {
        assert_eq!(parse_milli("100m"), Ok(100));
        assert_eq!(parse_milli("1.5"), Ok(1500));
        assert_eq!(parse_milli("2"), Ok(2000));
        assert_eq!(parse_milli("0.1"), Ok(100));
        assert_eq!(parse_milli("1e3"), Ok(1_000_000));
        assert_eq!(parse_milli("250u"), Ok(1), "sub-milli rounds up");
        assert_eq!(parse_milli("+.5"), Ok(500));
        assert_eq!(parse_milli("0"), Ok(0));
    }

    #[test]
    fn memory_quantities_parse_to_bytes() {
        assert_eq!(parse_value("1Gi"), Ok(1 << 30));
        assert_eq!(parse_value("512M"), Ok(512_000_000));
        assert_eq!(parse_value("1e3"), Ok(1000));
        assert_eq!(parse_value("1E3"), Ok(1000));
        assert_eq!(parse_value("1.5Gi"), Ok(3 << 29));
        assert_eq!(parse_value("128974848"), Ok(128_974_848));
        assert_eq!(parse_value("129e6"), Ok(129_000_000));
        assert_eq!(parse_value("123Mi"), Ok(123 << 20));
        assert_eq!(parse_value("7934440Ki"), Ok(7_934_440 * 1024));
        assert_eq!(parse_value("100m"), Ok(1), "Value() rounds up");
        assert_eq!(parse_value("1k"), Ok(1000));
        assert_eq!(parse_value("2e-3"), Ok(1));
    }

    #[test]
    fn negative_quantities_round_toward_positive_infinity() {
        assert_eq!(parse_value("-1.5"), Ok(-1));
        assert_eq!(parse_milli("-100m"), Ok(-100));
    }

    #[test]
    fn malformed_quantities_are_rejected() {
        for bad in ["", "abc", "1.2.3", "1Ki2", "1 Gi", "--1", "1e", "1ee3", "Mi", "1X"] {
            assert!(parse_value(bad).is_err(), "{bad:?} should fail");
        }
        assert!(matches!(parse_value("1Ei1"), Err(QuantityError::Syntax(_))));
        assert!(matches!(parse_value("100Ei"), Err(QuantityError::Overflow(_))));
    }

    #[test]
    fn formatting_matches_kubelet_style() {
        assert_eq!(format_milli_cpu(2000).0, "2");
        assert_eq!(format_milli_cpu(1930).0, "1930m");
        assert_eq!(format_bytes(8 << 30).0, "8388608Ki");
        assert_eq!(format_bytes(1001).0, "1001");
        assert_eq!(parse_value(&format_bytes(123_456_789).0), Ok(123_456_789));
    }
}
