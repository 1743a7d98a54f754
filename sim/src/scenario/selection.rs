//! The `nodePool` / `count` / `fraction` selection faults that pick some of a pool's nodes or
//! instances share (`nodeConditions`, `instanceStatus`): its validation, and how many of the
//! matching ones it takes.

use super::error::FieldError;

/// Checks a selection: exactly one of `count` (≥ 1) and `fraction` (in (0, 1]), and a
/// non-blank `nodePool` when given; `kind` is the entry's key for error paths, `what` names
/// the things selected (`nodes`, `instances`).
pub fn validate(
    kind: &str,
    what: &str,
    node_pool: Option<&str>,
    count: Option<u32>,
    fraction: Option<f64>,
) -> Result<(), FieldError> {
    match (count, fraction) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(FieldError::new(kind, format!("set exactly one of `count` and `fraction` (which {what})")));
        }
        (Some(0), None) => return Err(FieldError::new(format!("{kind}.count"), "must be at least 1")),
        (None, Some(f)) if !(f > 0.0 && f <= 1.0) => {
            return Err(FieldError::new(format!("{kind}.fraction"), format!("{f} is not a share in (0, 1]")));
        }
        _ => {}
    }
    if node_pool.is_some_and(|pool| pool.trim().is_empty()) {
        return Err(FieldError::new(format!("{kind}.nodePool"), "name a NodePool, or leave it out for every one"));
    }
    Ok(())
}

/// How many of `matching` candidates a selection takes: `count`, else `fraction` of them
/// rounded up, else all.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
pub fn how_many(count: Option<u32>, fraction: Option<f64>, matching: usize) -> usize {
    match (count, fraction) {
        (Some(c), _) => c as usize,
        (None, Some(f)) => (f * matching as f64).ceil() as usize,
        (None, None) => matching,
    }
}
