//! The schema of one kind as the patch engines use it: the root [`FieldSchema`], whether
//! strategic merge patch applies (built-ins only) and whether status is a subresource.

use serde_json::Value;

use super::builtin;
use super::schema::{FieldSchema, Shape};

/// Everything the patch engines need about one kind.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchSchema {
    root: FieldSchema,
    strategic: bool,
    status_subresource: bool,
}

impl PatchSchema {
    /// The schema of a built-in kind the server serves (`Pod`, `Deployment`, ...), or
    /// `None` for any other kind.
    pub fn builtin(kind: &str) -> Option<PatchSchema> {
        let root = builtin::root(kind)?;
        Some(PatchSchema { root, strategic: true, status_subresource: !matches!(kind, "Event" | "Lease") })
    }

    /// The kinds [`PatchSchema::builtin`] knows.
    pub fn builtin_kinds() -> &'static [&'static str] {
        builtin::KINDS
    }

    /// The schema of a custom resource from its CRD version's `openAPIV3Schema` (or a
    /// schemaless one for `None`). Strategic merge patch is refused for it, as the apiserver
    /// does.
    pub fn from_crd(open_api_v3_schema: Option<&Value>, status_subresource: bool) -> PatchSchema {
        let mut root = open_api_v3_schema.map(FieldSchema::from_openapi).unwrap_or_else(FieldSchema::deduced);
        // metadata is ObjectMeta whatever the CRD says (CRDs may only restrict name).
        let meta = builtin::object_meta();
        if root.shape == Shape::Struct || root.shape == Shape::Deduced {
            root.shape = Shape::Struct;
            root.fields.insert("metadata".to_string(), meta);
            for key in ["apiVersion", "kind"] {
                root.fields.entry(key.to_string()).or_insert_with(FieldSchema::scalar);
            }
            if root.element.is_none() && open_api_v3_schema.is_none() {
                root.element = Some(Box::new(FieldSchema::deduced()));
            }
        }
        PatchSchema { root, strategic: false, status_subresource }
    }

    /// The schema of one served version of a CRD manifest (`apiextensions.k8s.io/v1`):
    /// its `openAPIV3Schema` and whether it has a status subresource. `None` when the
    /// version is not in the CRD.
    pub fn from_crd_manifest(crd: &Value, version: &str) -> Option<PatchSchema> {
        let versions = crd.pointer("/spec/versions")?.as_array()?;
        let v = versions.iter().find(|v| v.get("name").and_then(Value::as_str) == Some(version))?;
        let schema = v.pointer("/schema/openAPIV3Schema");
        let status = v.pointer("/subresources/status").is_some();
        Some(PatchSchema::from_crd(schema, status))
    }

    /// A schema from a hand-built root (tests, or a kind without a table).
    pub fn from_root(root: FieldSchema, strategic: bool, status_subresource: bool) -> PatchSchema {
        PatchSchema { root, strategic, status_subresource }
    }

    /// The root node (the object).
    pub fn root(&self) -> &FieldSchema {
        &self.root
    }

    /// Whether the apiserver accepts `application/strategic-merge-patch+json` (built-ins only).
    pub fn supports_strategic_merge(&self) -> bool {
        self.strategic
    }

    /// Whether the kind has a `status` subresource, so the main endpoint ignores `status`
    /// for field ownership and the status endpoint everything else.
    pub fn has_status_subresource(&self) -> bool {
        self.status_subresource
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::schema::ListType;
    use serde_json::json;

    #[test]
    fn openapi_list_extensions_become_list_types() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "taints": {"type": "array", "items": {"type": "object"}},
                    "reqs": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key"],
                             "items": {"type": "object", "properties": {"key": {"type": "string"}}}},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "sel": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}
            }
        });
        let s = PatchSchema::from_crd(Some(&schema), true);
        let spec = s.root().child("spec");
        assert_eq!(spec.child("taints").list_type, ListType::Atomic);
        assert_eq!(spec.child("reqs").list_type, ListType::Map(vec!["key".to_string()]));
        assert_eq!(spec.child("tags").list_type, ListType::Set);
        assert!(spec.child("sel").atomic);
        assert_eq!(spec.child("free").shape, Shape::Deduced);
        assert!(!s.supports_strategic_merge());
        assert_eq!(s.root().child("metadata").child("finalizers").list_type, ListType::Set);
    }

    #[test]
    fn crd_manifests_give_the_schema_of_a_version() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "spec": {
            "versions": [{"name": "v1", "subresources": {"status": {}}, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {
                    "requirements": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "object"}}
                }}}
            }}}]
        }});
        let s = PatchSchema::from_crd_manifest(&crd, "v1").unwrap();
        assert!(s.has_status_subresource());
        assert_eq!(s.root().child("spec").child("requirements").list_type, ListType::Atomic);
        assert!(PatchSchema::from_crd_manifest(&crd, "v2").is_none());
    }

    #[test]
    fn builtin_pod_schema_knows_container_keys() {
        let s = PatchSchema::builtin("Pod").unwrap();
        let containers = s.root().child("spec").child("containers");
        assert_eq!(containers.patch_merge_key.as_deref(), Some("name"));
        assert!(s.supports_strategic_merge());
        assert!(PatchSchema::builtin("NodePool").is_none());
    }
}
