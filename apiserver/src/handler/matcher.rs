//! Which objects a list, watch or deletecollection wants: the request's label and field
//! selectors, with field labels checked against what the type indexes.

use std::sync::Arc;

use serde_json::Value;

use super::request::Query;
use crate::error::{ApiError, ApiResult};
use crate::resources::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::Matcher;

/// Builds the matcher of a request's `labelSelector` and `fieldSelector` (400 when either
/// is malformed or names a field the type does not index).
pub(super) fn matcher(rt: &ResourceType, q: &Query) -> ApiResult<Matcher> {
    let labels = match &q.label_selector {
        Some(s) => Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?),
        None => None,
    };
    let fields = match &q.field_selector {
        Some(s) => Some(field_selector(rt, s)?),
        None => None,
    };
    Ok(Arc::new(move |obj: &Value| {
        labels.as_ref().is_none_or(|l| l.matches(&crate::labels_of(obj)))
            && fields.as_ref().is_none_or(|f| f.matches(obj))
    }))
}

/// Parses a field selector and checks its fields against the type: a built-in kind's
/// indexed fields, or a custom resource's name, namespace and `selectableFields`.
fn field_selector(rt: &ResourceType, s: &str) -> ApiResult<FieldSelector> {
    let f = FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let supported = if rt.custom {
        let selectable = selectable_fields(rt);
        let refs: Vec<&str> = selectable.iter().map(String::as_str).collect();
        f.supported_for_custom_resource(!rt.namespaced, &refs)
    } else {
        f.supported_for(&rt.kind)
    };
    supported.map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(f)
}

/// A CRD version's `selectableFields`, as field labels (`spec.x`).
fn selectable_fields(rt: &ResourceType) -> Vec<String> {
    rt.crd
        .as_ref()
        .and_then(|crd| {
            crd.pointer("/spec/versions")?.as_array()?.iter().find(|v| v["name"].as_str() == Some(&rt.version)).cloned()
        })
        .and_then(|v| v["selectableFields"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|f| f["jsonPath"].as_str().map(|p| p.trim_start_matches('.').to_string()))
        .collect()
}
