//! Loading Karpenter manifests (multi-document YAML) into typed objects, losing nothing.
//!
//! Scenario files and tests paste manifests users would `kubectl apply`. [`parse_manifests`]
//! dispatches each document on `apiVersion`/`kind` and refuses documents with fields our types
//! would drop (the strict counterpart of the API server's unknown-field pruning), so a typo or a
//! field we do not model is reported instead of silently ignored.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ec2nodeclass::EC2NodeClass;
use super::nodeclaim::NodeClaim;
use super::nodeoverlay::NodeOverlay;
use super::nodepool::NodePool;

/// One typed Karpenter object.
#[derive(Debug, Clone, PartialEq)]
pub enum Manifest {
    /// `karpenter.sh/v1` NodePool.
    NodePool(Box<NodePool>),
    /// `karpenter.sh/v1` NodeClaim.
    NodeClaim(Box<NodeClaim>),
    /// `karpenter.k8s.aws/v1` EC2NodeClass.
    EC2NodeClass(Box<EC2NodeClass>),
    /// `karpenter.sh/v1alpha1` NodeOverlay.
    NodeOverlay(Box<NodeOverlay>),
}

impl Manifest {
    /// `kind` of the object.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NodePool(_) => "NodePool",
            Self::NodeClaim(_) => "NodeClaim",
            Self::EC2NodeClass(_) => "EC2NodeClass",
            Self::NodeOverlay(_) => "NodeOverlay",
        }
    }

    /// The object serialized back to JSON.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        match self {
            Self::NodePool(object) => serde_json::to_value(object),
            Self::NodeClaim(object) => serde_json::to_value(object),
            Self::EC2NodeClass(object) => serde_json::to_value(object),
            Self::NodeOverlay(object) => serde_json::to_value(object),
        }
    }
}

/// Why a manifest could not be loaded. `document` is the 0-based index among non-empty documents.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The text is not YAML.
    #[error("invalid YAML: {0}")]
    Yaml(String),
    /// A document lacks `apiVersion` or `kind`.
    #[error("document {document}: missing apiVersion or kind")]
    MissingKind {
        /// Index of the document.
        document: usize,
    },
    /// A document is not a Karpenter kind we model.
    #[error("document {document}: unsupported kind {api_version}/{kind}")]
    UnsupportedKind {
        /// Index of the document.
        document: usize,
        /// Its apiVersion.
        api_version: String,
        /// Its kind.
        kind: String,
    },
    /// A document does not match the schema of its kind.
    #[error("document {document} ({kind}): {source}")]
    Invalid {
        /// Index of the document.
        document: usize,
        /// Its kind.
        kind: String,
        /// The deserialization error.
        #[source]
        source: serde_json::Error,
    },
    /// A document has fields our types do not carry.
    #[error("document {document} ({kind}): unknown fields {paths:?}")]
    UnknownFields {
        /// Index of the document.
        document: usize,
        /// Its kind.
        kind: String,
        /// JSON paths of the fields that would be dropped.
        paths: Vec<String>,
    },
}

/// Parses every non-empty document of a multi-document YAML string.
pub fn parse_manifests(yaml: &str) -> Result<Vec<Manifest>, ManifestError> {
    let documents: Vec<Value> = serde_saphyr::from_multiple(yaml).map_err(|e| ManifestError::Yaml(e.to_string()))?;
    documents
        .into_iter()
        .filter(|document| !document.is_null())
        .enumerate()
        .map(|(index, document)| manifest_from_value(index, document))
        .collect()
}

/// Converts one JSON document into a typed object, rejecting fields that would be dropped.
pub fn manifest_from_value(document: usize, value: Value) -> Result<Manifest, ManifestError> {
    let api_version = value.get("apiVersion").and_then(Value::as_str).map(str::to_owned);
    let kind = value.get("kind").and_then(Value::as_str).map(str::to_owned);
    let (Some(api_version), Some(kind)) = (api_version, kind) else {
        return Err(ManifestError::MissingKind { document });
    };
    match (api_version.as_str(), kind.as_str()) {
        ("karpenter.sh/v1", "NodePool") => strict(document, &kind, value).map(|o| Manifest::NodePool(Box::new(o))),
        ("karpenter.sh/v1", "NodeClaim") => strict(document, &kind, value).map(|o| Manifest::NodeClaim(Box::new(o))),
        ("karpenter.k8s.aws/v1", "EC2NodeClass") => {
            strict(document, &kind, value).map(|o| Manifest::EC2NodeClass(Box::new(o)))
        }
        ("karpenter.sh/v1alpha1", "NodeOverlay") => {
            strict(document, &kind, value).map(|o| Manifest::NodeOverlay(Box::new(o)))
        }
        _ => Err(ManifestError::UnsupportedKind { document, api_version, kind }),
    }
}

fn strict<T: DeserializeOwned + Serialize>(document: usize, kind: &str, value: Value) -> Result<T, ManifestError> {
    let object: T = serde_json::from_value(value.clone()).map_err(|source| ManifestError::Invalid {
        document,
        kind: kind.to_owned(),
        source,
    })?;
    let round_tripped = serde_json::to_value(&object).map_err(|source| ManifestError::Invalid {
        document,
        kind: kind.to_owned(),
        source,
    })?;
    let paths = dropped_paths(&value, &round_tripped);
    if paths.is_empty() {
        Ok(object)
    } else {
        Err(ManifestError::UnknownFields { document, kind: kind.to_owned(), paths })
    }
}

/// JSON paths present in `original` but missing (or null) in `round_tripped`: the fields a
/// deserialize/serialize cycle through our types would lose. Arrays are compared by index.
pub fn dropped_paths(original: &Value, round_tripped: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    collect_dropped(original, round_tripped, "", &mut paths);
    paths
}

fn collect_dropped(original: &Value, kept: &Value, path: &str, out: &mut Vec<String>) {
    match (original, kept) {
        (Value::Object(original), Value::Object(kept)) => {
            for (key, value) in original {
                let child = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                match kept.get(key) {
                    Some(kept_value) => collect_dropped(value, kept_value, &child, out),
                    None if value.is_null() => {}
                    None => out.push(child),
                }
            }
        }
        (Value::Array(original), Value::Array(kept)) => {
            for (i, value) in original.iter().enumerate() {
                let child = format!("{path}[{i}]");
                match kept.get(i) {
                    Some(kept_value) => collect_dropped(value, kept_value, &child, out),
                    None => out.push(child),
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_reported_with_their_path() {
        let yaml = r#"
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: p}
spec:
  template:
    spec:
      requirements: []
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfterr: 1h
"#;
        match parse_manifests(yaml) {
            Err(ManifestError::UnknownFields { paths, .. }) => {
                assert_eq!(paths, ["spec.template.spec.expireAfterr"]);
            }
            other => panic!("expected UnknownFields, got {other:?}"),
        }
    }

    #[test]
    fn unsupported_kinds_are_rejected() {
        let yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n";
        assert!(matches!(parse_manifests(yaml), Err(ManifestError::UnsupportedKind { .. })));
    }
}
