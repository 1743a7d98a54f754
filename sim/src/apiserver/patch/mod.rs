//! Patches (interim; replaced by the full apimachinery port).

use serde_json::Value;

use super::resources::ResourceType;

/// Patch content types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 6902.
    Json,
    /// RFC 7386.
    Merge,
    /// Strategic merge.
    StrategicMerge,
    /// Server-side apply.
    Apply,
}

impl PatchType {
    /// From a Content-Type header.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        let ct = ct.split(';').next().unwrap_or("").trim();
        Some(match ct {
            "application/json-patch+json" => Self::Json,
            "application/merge-patch+json" => Self::Merge,
            "application/strategic-merge-patch+json" => Self::StrategicMerge,
            "application/apply-patch+yaml" | "application/apply-patch+json" => Self::Apply,
            _ => return None,
        })
    }
}

/// Apply options.
#[derive(Clone, Debug, Default)]
pub struct ApplyOptions {
    /// fieldManager.
    pub field_manager: String,
    /// force.
    pub force: bool,
}

/// Merge keys.
#[derive(Clone, Debug, Default)]
pub struct PatchSchema;

impl PatchSchema {
    /// For a type.
    pub fn for_type(_rt: &ResourceType) -> Self {
        Self
    }
}

/// Patch errors.
#[derive(Clone, Debug)]
pub enum PatchError {
    /// 400.
    BadRequest(String),
    /// 422.
    Invalid(String),
    /// 409.
    Conflict(String),
    /// 415.
    UnsupportedMediaType(String),
}

fn parse(body: &[u8]) -> Result<Value, PatchError> {
    serde_json::from_slice(body)
        .or_else(|_| serde_saphyr::from_slice(body))
        .map_err(|e| PatchError::BadRequest(format!("invalid patch body: {e}")))
}

/// Applies a patch.
pub fn patch(pt: PatchType, current: &Value, body: &[u8], _s: &PatchSchema, _o: &ApplyOptions) -> Result<Value, PatchError> {
    let p = parse(body)?;
    let mut out = current.clone();
    match pt {
        PatchType::Json => {
            let ops: json_patch::Patch = serde_json::from_value(p).map_err(|e| PatchError::BadRequest(e.to_string()))?;
            json_patch::patch(&mut out, &ops).map_err(|e| PatchError::Invalid(e.to_string()))?;
        }
        _ => json_patch::merge(&mut out, &p),
    }
    Ok(out)
}

/// Apply to a missing object.
pub fn apply_create(body: &[u8], _s: &PatchSchema, _o: &ApplyOptions) -> Result<Value, PatchError> {
    parse(body)
}
