//! The resource types the server serves, and the discovery documents that describe them.
//!
//! Built-in types are registered at start; custom resources appear when a
//! CustomResourceDefinition is created, exactly as on a real API server, so the
//! simulator installs Karpenter by applying its unmodified CRD manifests.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::schema::CrdSchema;

/// What the server knows about one resource type (one group/version/resource).
#[derive(Clone, Debug)]
pub struct ResourceType {
    /// API group; empty for core.
    pub group: String,
    /// Served version (one per type in this server).
    pub version: String,
    /// Plural resource name in URLs, e.g. `pods`.
    pub plural: String,
    /// Singular name, e.g. `pod`.
    pub singular: String,
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Short names for kubectl, e.g. `po`.
    pub short_names: Vec<String>,
    /// Categories for kubectl, e.g. `all`.
    pub categories: Vec<String>,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Has a `status` subresource: main-resource writes keep the old status, status
    /// writes keep the old spec.
    pub status_subresource: bool,
    /// Whether `metadata.generation` tracks spec changes.
    pub has_spec: bool,
    /// Defined by a CRD rather than built in.
    pub custom: bool,
    /// The CRD object (for custom resources): schema and printer columns.
    pub crd: Option<Arc<Value>>,
    /// The compiled schema custom resources are admitted with.
    pub schema: Option<Arc<CrdSchema>>,
}

impl ResourceType {
    /// `apiVersion` of objects of this type.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// `plural.group` (or just `plural` for core), as apimachinery names a resource.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() { self.plural.clone() } else { format!("{}.{}", self.plural, self.group) }
    }

    /// The key under which objects of this type are stored.
    pub fn key(&self) -> ResourceKey {
        ResourceKey { group: self.group.clone(), plural: self.plural.clone() }
    }

    fn builtin(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            short_names: Vec::new(),
            categories: Vec::new(),
            namespaced,
            status_subresource: true,
            has_spec: true,
            custom: false,
            crd: None,
            schema: None,
        }
    }

    fn short(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|s| s.to_string()).collect();
        self
    }

    fn all(mut self) -> Self {
        self.categories = vec!["all".into()];
        self
    }

    fn no_status(mut self) -> Self {
        self.status_subresource = false;
        self
    }

    fn no_spec(mut self) -> Self {
        self.has_spec = false;
        self
    }

    /// Subresources listed in discovery.
    pub fn subresources(&self) -> Vec<&'static str> {
        let mut subs = Vec::new();
        if self.status_subresource {
            subs.push("status");
        }
        if self.group.is_empty() && self.plural == "pods" {
            subs.extend(["binding", "eviction"]);
        }
        if self.has_scale() {
            subs.push("scale");
        }
        subs
    }

    /// Whether the type serves the `scale` subresource (autoscaling/v1 `Scale`), as
    /// kube-apiserver does for the replicated workload types.
    pub fn has_scale(&self) -> bool {
        self.group == "apps" && matches!(self.plural.as_str(), "deployments" | "replicasets" | "statefulsets")
    }
}

/// Identifies a resource type in the store: group + plural.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKey {
    /// API group; empty for core.
    pub group: String,
    /// Plural resource name.
    pub plural: String,
}

impl std::fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() { f.write_str(&self.plural) } else { write!(f, "{}.{}", self.plural, self.group) }
    }
}

/// Every served resource type, by group and plural.
#[derive(Clone, Debug)]
pub struct Registry {
    types: BTreeMap<ResourceKey, Arc<ResourceType>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::with_builtins()
    }
}

impl Registry {
    /// The built-in types Dovetail's world uses.
    pub fn with_builtins() -> Self {
        let b = ResourceType::builtin;
        let types = [
            b("", "v1", "namespaces", "Namespace", false).short(&["ns"]),
            b("", "v1", "pods", "Pod", true).short(&["po"]).all(),
            b("", "v1", "nodes", "Node", false).short(&["no"]),
            b("", "v1", "events", "Event", true).short(&["ev"]).no_status().no_spec(),
            b("", "v1", "services", "Service", true).short(&["svc"]).all(),
            b("", "v1", "configmaps", "ConfigMap", true).short(&["cm"]).no_status().no_spec(),
            b("", "v1", "secrets", "Secret", true).no_status().no_spec(),
            b("", "v1", "serviceaccounts", "ServiceAccount", true).short(&["sa"]).no_status().no_spec(),
            b("apps", "v1", "deployments", "Deployment", true).short(&["deploy"]).all(),
            b("apps", "v1", "replicasets", "ReplicaSet", true).short(&["rs"]).all(),
            b("apps", "v1", "daemonsets", "DaemonSet", true).short(&["ds"]).all(),
            b("apps", "v1", "statefulsets", "StatefulSet", true).short(&["sts"]).all(),
            b("batch", "v1", "jobs", "Job", true).all(),
            b("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true).short(&["pvc"]),
            b("", "v1", "persistentvolumes", "PersistentVolume", false).short(&["pv"]),
            b("storage.k8s.io", "v1", "storageclasses", "StorageClass", false).short(&["sc"]).no_status().no_spec(),
            b("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", false),
            b("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true).short(&["pdb"]),
            b("coordination.k8s.io", "v1", "leases", "Lease", true).no_status(),
            b("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false)
                .short(&["pc"])
                .no_status()
                .no_spec(),
            b("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false)
                .short(&["crd", "crds"]),
        ];
        let types = types.into_iter().map(|t| (t.key(), Arc::new(t))).collect();
        Self { types }
    }

    /// Looks a type up by group and plural.
    pub fn get(&self, group: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.types.get(&ResourceKey { group: group.into(), plural: plural.into() }).cloned()
    }

    /// Looks a type up by its storage key.
    pub fn by_key(&self, key: &ResourceKey) -> Option<Arc<ResourceType>> {
        self.types.get(key).cloned()
    }

    /// Adds or replaces a type (a CRD was created or updated).
    pub fn insert(&mut self, t: ResourceType) {
        self.types.insert(t.key(), Arc::new(t));
    }

    /// Removes a type (its CRD was deleted).
    pub fn remove(&mut self, key: &ResourceKey) {
        self.types.remove(key);
    }

    /// Every type, in (group, plural) order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.types.values()
    }

    /// Groups other than core, with their (single) versions, in a stable order.
    fn groups(&self) -> BTreeMap<&str, &str> {
        self.types.values().filter(|t| !t.group.is_empty()).map(|t| (t.group.as_str(), t.version.as_str())).collect()
    }

    /// `GET /api`.
    pub fn core_versions(&self) -> Value {
        json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "apiserver:6443"}]})
    }

    /// `GET /apis`.
    pub fn group_list(&self) -> Value {
        let groups: Vec<Value> = self
            .groups()
            .into_iter()
            .map(|(g, v)| {
                let gv = json!({"groupVersion": format!("{g}/{v}"), "version": v});
                json!({"name": g, "versions": [gv.clone()], "preferredVersion": gv})
            })
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `GET /apis/{group}`.
    pub fn group(&self, group: &str) -> Option<Value> {
        let v = self.groups().get(group).map(|v| v.to_string())?;
        let gv = json!({"groupVersion": format!("{group}/{v}"), "version": v});
        Some(
            json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": [gv.clone()], "preferredVersion": gv}),
        )
    }

    /// `GET /api/v1` or `GET /apis/{group}/{version}`.
    pub fn resource_list(&self, group: &str, version: &str) -> Option<Value> {
        let mut resources = Vec::new();
        for t in self.types.values().filter(|t| t.group == group && t.version == version) {
            let verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
            let mut r = json!({
                "name": t.plural, "singularName": t.singular, "namespaced": t.namespaced,
                "kind": t.kind, "verbs": verbs,
            });
            if !t.short_names.is_empty() {
                r["shortNames"] = json!(t.short_names);
            }
            if !t.categories.is_empty() {
                r["categories"] = json!(t.categories);
            }
            resources.push(r);
            for sub in t.subresources() {
                let (kind, verbs): (&str, &[&str]) = match sub {
                    "status" => (&t.kind, &["get", "patch", "update"]),
                    "binding" => ("Binding", &["create"]),
                    "scale" => ("Scale", &["get", "patch", "update"]),
                    _ => ("Eviction", &["create"]),
                };
                let mut r = json!({
                    "name": format!("{}/{sub}", t.plural), "singularName": "", "namespaced": t.namespaced,
                    "kind": kind, "verbs": verbs,
                });
                if sub == "scale" {
                    // kubectl's scale client finds the Scale's group-version here.
                    r["group"] = json!("autoscaling");
                    r["version"] = json!("v1");
                }
                resources.push(r);
            }
        }
        if resources.is_empty() {
            return None;
        }
        let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}))
    }

    /// Builds the resource type a CRD object defines (its storage version), with its
    /// compiled schema. Errors are `field: message` lines.
    pub fn type_from_crd(crd: &Value) -> Result<ResourceType, String> {
        let mut t = Self::type_from_crd_names(crd)?;
        let schema = CrdSchema::compile(crd, &t.version).map_err(|e| e.to_string())?;
        t.schema = Some(Arc::new(schema));
        Ok(t)
    }

    fn type_from_crd_names(crd: &Value) -> Result<ResourceType, String> {
        let spec = crd.get("spec").ok_or("spec: Required value")?;
        let group = spec["group"].as_str().ok_or("spec.group: Required value")?;
        let names = &spec["names"];
        let plural = names["plural"].as_str().ok_or("spec.names.plural: Required value")?;
        let kind = names["kind"].as_str().ok_or("spec.names.kind: Required value")?;
        let namespaced = match spec["scope"].as_str() {
            Some("Namespaced") => true,
            Some("Cluster") => false,
            other => {
                return Err(format!(
                    "spec.scope: Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""
                ));
            }
        };
        let versions = spec["versions"].as_array().ok_or("spec.versions: Required value")?;
        let storage: Vec<&Value> = versions.iter().filter(|v| v["storage"].as_bool() == Some(true)).collect();
        if storage.len() != 1 {
            return Err("spec.versions: Invalid value: must have exactly one version marked as storage version".into());
        }
        let version = storage[0]["name"].as_str().ok_or("spec.versions[].name: Required value")?;
        let status_subresource = storage[0].pointer("/subresources/status").is_some();
        let strings = |v: &Value| -> Vec<String> {
            v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect()).unwrap_or_default()
        };
        Ok(ResourceType {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: names["singular"].as_str().map(String::from).unwrap_or_else(|| kind.to_lowercase()),
            kind: kind.into(),
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            namespaced,
            status_subresource,
            has_spec: true,
            custom: true,
            crd: Some(Arc::new(crd.clone())),
            schema: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_lists_builtins_and_subresources() {
        let r = Registry::with_builtins();
        let core = r.resource_list("", "v1").unwrap();
        let names: Vec<&str> =
            core["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"pods/eviction"));
        assert!(names.contains(&"nodes/status"));
        assert!(r.group("policy").is_some());
        assert!(r.resource_list("karpenter.sh", "v1").is_none());
    }
}
