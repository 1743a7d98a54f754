//! Server-side apply and field ownership (`metadata.managedFields`), after
//! sigs.k8s.io/structured-merge-diff's `Updater.Apply` / `Updater.Update` as the apiserver
//! runs them.
//!
//! # Expected flow
//! 1. The applied configuration is merged into the live object: struct fields and granular
//!    maps merge, map lists merge by key, set lists union, atomic values are replaced.
//! 2. Fields this manager applied last time and no longer applies are removed, unless
//!    another manager also owns them.
//! 3. Fields that changed and are owned by another manager are conflicts: 409 unless
//!    `force`, in which case ownership moves to the applier.
//! 4. The manager's `Apply` entry becomes exactly the set of fields in its configuration.
//!
//! # Caveats
//! One API version per kind (no conversion). Struct fields that a write adds are not
//! recorded as owned on their own, as for the non-pointer Go structs (`spec`, `template`)
//! the apiserver always sees; optional pointer structs (`securityContext`) therefore miss
//! the `".": {}` marker the apiserver would give them. Map entries, list items, added maps
//! and lists, and leaves are owned as the apiserver owns them.

use serde_json::Value;

use super::PatchError;
use super::fieldset::{FieldSet, PathElement};
use super::kind_schema::PatchSchema;
use super::managed::{
    Entry, conflict_error, parse_managers, reset_fields, strip, strip_managed_fields, stripped_fields, write_managers,
};
use super::typed::{compare, field_set, merge, prune};

/// Who is writing, and how: the `fieldManager` and `force` query parameters, the simulated
/// time to stamp on the manager's entry, and the subresource written through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyOptions {
    /// `fieldManager` (kube-rs `PatchParams::apply("name")`, kubectl `kubectl`).
    pub field_manager: String,
    /// `force=true`: take ownership of conflicting fields instead of failing with 409.
    pub force: bool,
    /// RFC 3339 time for the manager's entry (the simulated clock; never the wall clock).
    pub time: Option<String>,
    /// `Some("status")` when writing through the status subresource.
    pub subresource: Option<String>,
}

impl ApplyOptions {
    /// Options for a manager, no force, no time, main resource.
    pub fn new(field_manager: &str) -> ApplyOptions {
        ApplyOptions { field_manager: field_manager.to_string(), force: false, time: None, subresource: None }
    }

    /// Sets `force`.
    pub fn force(mut self, force: bool) -> ApplyOptions {
        self.force = force;
        self
    }

    /// Sets the time stamped on the manager's entry.
    pub fn at(mut self, time: &str) -> ApplyOptions {
        self.time = Some(time.to_string());
        self
    }

    /// Writes through a subresource (`status`).
    pub fn subresource(mut self, subresource: &str) -> ApplyOptions {
        self.subresource = Some(subresource.to_string());
        self
    }
}

/// Runs server-side apply of `config` onto `live` (an empty object for create).
pub(crate) fn apply(
    live: &Value,
    config: &Value,
    schema: &PatchSchema,
    opts: &ApplyOptions,
) -> Result<Value, PatchError> {
    for field in ["apiVersion", "kind"] {
        if config.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(PatchError::BadRequest(format!(
                "Object '{}' is missing in apply configuration",
                if field == "kind" { "Kind" } else { field }
            )));
        }
    }
    if config.pointer("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
        return Err(PatchError::BadRequest("metadata.managedFields must be nil".to_string()));
    }
    let root = schema.root();
    let reset = reset_fields(schema, opts.subresource.as_deref());
    let stripped = stripped_fields();
    let ignored = reset.union(&stripped);
    let mut managers = parse_managers(live).unwrap_or_default();
    let me = Entry {
        manager: opts.field_manager.clone(),
        operation: "Apply".to_string(),
        api_version: config.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_string(),
        time: opts.time.clone(),
        subresource: opts.subresource.clone(),
        set: FieldSet::new(),
    };
    let key = me.identity();
    let last = managers.get(&key).map(|e| e.set.clone()).unwrap_or_default();
    let previous_time = managers.get(&key).and_then(|e| e.time.clone());

    let mut live_plain = live.clone();
    strip_managed_fields(&mut live_plain);
    // Validated first: no map-list item may lack its keys or repeat them.
    let config_set = field_set(config, root, true).map_err(|e| typed_patch_error(config, &e))?;
    let config_set = strip(&config_set, &reset);
    let merged = merge(Some(&live_plain), config, root)?;
    managers.insert(key.clone(), Entry { set: config_set.clone(), ..me });
    let result = prune(&merged, root, &managers, &last)?;

    let changes = compare(&live_plain, &result, root);
    let changed = strip(&changes.modified.union(&changes.added), &ignored);
    let removed = strip(&changes.removed, &ignored);
    let mut conflicts: Vec<(String, Vec<PathElement>)> = Vec::new();
    for (id, entry) in managers.iter_mut() {
        if *id == key {
            continue;
        }
        let clash = entry.set.intersection(&changed);
        if !clash.is_empty() {
            conflicts.extend(clash.paths().into_iter().map(|p| (entry.printable(), p)));
            if opts.force {
                entry.set = entry.set.difference(&clash);
            }
        }
        entry.set = entry.set.difference(&removed);
    }
    if !conflicts.is_empty() && !opts.force {
        return Err(conflict_error(conflicts));
    }
    if let Some(entry) = managers.get_mut(&key) {
        entry.set = strip(&entry.set, &stripped);
        let unchanged = entry.set == last && result == live_plain;
        if unchanged && previous_time.is_some() {
            entry.time = previous_time;
        }
    }
    let mut out = result;
    write_managers(&mut out, managers);
    Ok(out)
}

/// The field manager of a write: the `fieldManager` parameter, or else the client's
/// `User-Agent` up to its first `/`, printable characters only, at most 128 (apiserver
/// `managerOrUserAgent`; e.g. `kubectl/v1.34.0 (linux/amd64)` gives `kubectl`).
pub fn manager_or_user_agent(field_manager: Option<&str>, user_agent: &str) -> String {
    /// apiserver `prefixFromUserAgent` keeps at most this many bytes.
    const USER_AGENT_PREFIX_BYTES_MAX: usize = 128;
    if let Some(manager) = field_manager.filter(|m| !m.is_empty()) {
        return manager.to_string();
    }
    let mut out = String::new();
    for c in user_agent.split('/').next().unwrap_or("").chars() {
        if c.is_control() {
            continue;
        }
        if out.len() >= USER_AGENT_PREFIX_BYTES_MAX {
            break;
        }
        out.push(c);
    }
    out
}

/// The apiserver's 500 for an apply configuration that does not fit the schema
/// (`failed to create typed patch object (default/web; apps/v1, Kind=Deployment): ...`).
fn typed_patch_error(config: &Value, cause: &PatchError) -> PatchError {
    let text = |p: &str| config.pointer(p).and_then(Value::as_str).unwrap_or("");
    PatchError::Internal(format!(
        "failed to create typed patch object ({}/{}; {}, Kind={}): {cause}",
        text("/metadata/namespace"),
        text("/metadata/name"),
        text("/apiVersion"),
        text("/kind")
    ))
}

/// Records a non-apply write (create, update, JSON/merge/strategic patch) as an `Update`
/// entry for `opts.field_manager`, taking over changed fields from other managers, and
/// returns `new` with its `metadata.managedFields` set. `old` is `{}` for a create.
/// Malformed stored `managedFields` are reset, as the apiserver does. `managedFields` sent
/// by the client in `new` are replaced.
pub fn record_update(old: &Value, new: &Value, schema: &PatchSchema, opts: &ApplyOptions) -> Value {
    let root = schema.root();
    let ignored = reset_fields(schema, opts.subresource.as_deref()).union(&stripped_fields());
    let mut managers = parse_managers(old).unwrap_or_default();
    let mut old_plain = old.clone();
    strip_managed_fields(&mut old_plain);
    let mut new_plain = new.clone();
    strip_managed_fields(&mut new_plain);
    let changes = compare(&old_plain, &new_plain, root);
    let changed = strip(&changes.modified.union(&changes.added), &ignored);
    let removed = strip(&changes.removed, &ignored);
    let me = Entry {
        manager: opts.field_manager.clone(),
        operation: "Update".to_string(),
        api_version: new.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_string(),
        time: opts.time.clone(),
        subresource: opts.subresource.clone(),
        set: FieldSet::new(),
    };
    let key = me.identity();
    for (id, entry) in managers.iter_mut() {
        if *id != key {
            entry.set = entry.set.difference(&changed).difference(&removed);
        }
    }
    let previous = managers.remove(&key);
    let previous_set = previous.as_ref().map(|e| e.set.clone()).unwrap_or_default();
    let set = previous_set.difference(&removed).union(&changed);
    let time = match &previous {
        Some(p) if p.set == set => p.time.clone(),
        _ => opts.time.clone(),
    };
    managers.insert(key, Entry { set, time, ..me });
    let mut out = new.clone();
    write_managers(&mut out, managers);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::ConflictCause;
    use serde_json::json;

    fn deployment() -> PatchSchema {
        PatchSchema::builtin("Deployment").unwrap()
    }

    fn config(replicas: Option<i64>, image: &str) -> Value {
        let mut spec = json!({
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "app", "image": image}]}}
        });
        if let Some(r) = replicas {
            spec["replicas"] = json!(r);
        }
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
    }

    fn run(live: &Value, cfg: &Value, opts: &ApplyOptions) -> Result<Value, PatchError> {
        apply(live, cfg, &deployment(), opts)
    }

    fn entry<'a>(obj: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
        obj["metadata"]["managedFields"]
            .as_array()?
            .iter()
            .find(|e| e["manager"] == json!(manager) && e["operation"] == json!(operation))
    }

    #[test]
    fn apply_create_records_an_apply_entry_in_fields_v1_format() {
        let out =
            run(&json!({}), &config(Some(2), "web:1"), &ApplyOptions::new("ctl").at("2026-01-01T00:00:00Z")).unwrap();
        assert_eq!(out["spec"]["replicas"], json!(2));
        let e = entry(&out, "ctl", "Apply").unwrap();
        assert_eq!(e["apiVersion"], json!("apps/v1"));
        assert_eq!(e["fieldsType"], json!("FieldsV1"));
        assert_eq!(e["time"], json!("2026-01-01T00:00:00Z"));
        assert_eq!(
            e["fieldsV1"],
            json!({"f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}}
                }
            }})
        );
    }

    #[test]
    fn applying_twice_without_a_field_removes_it() {
        let opts = ApplyOptions::new("ctl");
        let first = run(&json!({}), &config(Some(2), "web:1"), &opts).unwrap();
        let second = run(&first, &config(None, "web:1"), &opts).unwrap();
        assert!(second["spec"].get("replicas").is_none(), "{second}");
        assert_eq!(second["spec"]["template"]["spec"]["containers"][0]["image"], json!("web:1"));
        assert!(entry(&second, "ctl", "Apply").unwrap()["fieldsV1"]["f:spec"].get("f:replicas").is_none());
    }

    #[test]
    fn a_field_another_manager_also_owns_survives_pruning() {
        let first = run(&json!({}), &config(Some(2), "web:1"), &ApplyOptions::new("a")).unwrap();
        let shared = run(&first, &config(Some(2), "web:1"), &ApplyOptions::new("b")).unwrap();
        let out = run(&shared, &config(None, "web:1"), &ApplyOptions::new("a")).unwrap();
        assert_eq!(out["spec"]["replicas"], json!(2));
    }

    #[test]
    fn a_different_value_owned_by_another_manager_conflicts() {
        let first = run(&json!({}), &config(Some(2), "web:1"), &ApplyOptions::new("a")).unwrap();
        let err = run(&first, &config(Some(5), "web:2"), &ApplyOptions::new("b")).unwrap_err();
        assert_eq!(err.status_code(), 409);
        let PatchError::Conflict { message, causes } = err else { panic!() };
        assert_eq!(
            message,
            "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"app\"].image"
        );
        assert_eq!(causes[0], ConflictCause { message: "conflict with \"a\"".into(), field: ".spec.replicas".into() });
    }

    #[test]
    fn the_same_value_is_shared_without_conflict() {
        let first = run(&json!({}), &config(Some(2), "web:1"), &ApplyOptions::new("a")).unwrap();
        let out = run(&first, &config(Some(2), "web:1"), &ApplyOptions::new("b")).unwrap();
        assert!(entry(&out, "a", "Apply").is_some() && entry(&out, "b", "Apply").is_some());
    }

    #[test]
    fn force_moves_ownership_to_the_applier() {
        let first = run(&json!({}), &config(Some(2), "web:1"), &ApplyOptions::new("a")).unwrap();
        let out = run(&first, &config(Some(5), "web:1"), &ApplyOptions::new("b").force(true)).unwrap();
        assert_eq!(out["spec"]["replicas"], json!(5));
        let a = &entry(&out, "a", "Apply").unwrap()["fieldsV1"]["f:spec"];
        assert!(a.get("f:replicas").is_none(), "{a}");
        assert!(entry(&out, "b", "Apply").unwrap()["fieldsV1"]["f:spec"].get("f:replicas").is_some());
    }

    #[test]
    fn an_update_manager_conflicts_with_apply_and_prints_its_version() {
        let first = run(&json!({}), &config(Some(2), "web:1"), &ApplyOptions::new("a")).unwrap();
        let mut scaled = first.clone();
        scaled["spec"]["replicas"] = json!(7);
        let updated = record_update(&first, &scaled, &deployment(), &ApplyOptions::new("hpa"));
        assert!(entry(&updated, "a", "Apply").unwrap()["fieldsV1"]["f:spec"].get("f:replicas").is_none());
        let hpa = entry(&updated, "hpa", "Update").unwrap();
        assert_eq!(hpa["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
        let err = run(&updated, &config(Some(3), "web:1"), &ApplyOptions::new("a")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"hpa\" using apps/v1: .spec.replicas"
        );
    }

    #[test]
    fn record_update_on_create_owns_map_entries_and_list_items() {
        let obj = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "x"}},
                         "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let out = record_update(
            &json!({}),
            &obj,
            &PatchSchema::builtin("Pod").unwrap(),
            &ApplyOptions::new("kubectl-create"),
        );
        let e = entry(&out, "kubectl-create", "Update").unwrap();
        assert_eq!(
            e["fieldsV1"],
            json!({
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}
            })
        );
    }

    #[test]
    fn map_list_items_merge_by_key_and_sets_union() {
        let schema = PatchSchema::builtin("Pod").unwrap();
        let live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["x"]},
                          "spec": {"containers": [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]}});
        let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["y"]},
                         "spec": {"containers": [{"name": "b", "image": "b2"}]}});
        let out = apply(&live, &cfg, &schema, &ApplyOptions::new("m")).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["x", "y"]));
        assert_eq!(out["spec"]["containers"], json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b2"}]));
        let e = entry(&out, "m", "Apply").unwrap();
        assert_eq!(e["fieldsV1"]["f:metadata"], json!({"f:finalizers": {"v:\"y\"": {}}}));
    }

    #[test]
    fn container_ports_key_on_port_and_defaulted_protocol() {
        let schema = PatchSchema::builtin("Pod").unwrap();
        let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}});
        let out = apply(&json!({}), &cfg, &schema, &ApplyOptions::new("m")).unwrap();
        let ports =
            &entry(&out, "m", "Apply").unwrap()["fieldsV1"]["f:spec"]["f:containers"]["k:{\"name\":\"a\"}"]["f:ports"];
        assert!(ports.get("k:{\"containerPort\":80,\"protocol\":\"TCP\"}").is_some(), "{ports}");
    }

    #[test]
    fn map_list_items_without_keys_or_with_duplicate_keys_are_refused() {
        let mut missing = config(Some(1), "x");
        missing["spec"]["template"]["spec"]["containers"] = json!([{"image": "x"}]);
        let err = run(&json!({}), &missing, &ApplyOptions::new("m")).unwrap_err();
        assert_eq!(err.status_code(), 500);
        assert_eq!(
            err.to_string(),
            "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
        );
        let mut twice = config(Some(1), "x");
        twice["spec"]["template"]["spec"]["containers"] = json!([{"name": "a"}, {"name": "a"}]);
        let err = run(&json!({}), &twice, &ApplyOptions::new("m")).unwrap_err();
        assert!(
            err.to_string().ends_with(".spec.template.spec.containers: duplicate entries for key [name=\"a\"]"),
            "{err}"
        );
    }

    #[test]
    fn the_manager_defaults_to_the_user_agent_prefix() {
        assert_eq!(manager_or_user_agent(Some("karpenter"), "kube-rs/5.0"), "karpenter");
        assert_eq!(manager_or_user_agent(None, "kubectl/v1.34.0 (linux/amd64) kubernetes/abc"), "kubectl");
        assert_eq!(manager_or_user_agent(Some(""), "kube-rs/5.0"), "kube-rs");
        assert_eq!(manager_or_user_agent(None, &"x".repeat(200)).len(), 128);
    }

    #[test]
    fn apply_requires_kind_and_refuses_managed_fields() {
        let opts = ApplyOptions::new("m");
        assert_eq!(run(&json!({}), &json!({"apiVersion": "apps/v1"}), &opts).unwrap_err().status_code(), 400);
        let mut cfg = config(None, "x");
        cfg["metadata"]["managedFields"] = json!([]);
        assert_eq!(run(&json!({}), &cfg, &opts).unwrap_err().to_string(), "metadata.managedFields must be nil");
    }

    #[test]
    fn status_is_not_owned_through_the_main_resource() {
        let mut cfg = config(Some(1), "x");
        cfg["status"] = json!({"replicas": 1});
        let out = run(&json!({}), &cfg, &ApplyOptions::new("m")).unwrap();
        assert!(entry(&out, "m", "Apply").unwrap()["fieldsV1"].get("f:status").is_none());
    }

    #[test]
    fn custom_resources_use_crd_list_types() {
        let crd = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "requirements": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key"],
                             "items": {"type": "object", "properties": {"key": {"type": "string"}, "values": {"type": "array", "items": {"type": "string"}}}}},
            "taints": {"type": "array", "items": {"type": "object"}}
        }}}});
        let schema = PatchSchema::from_crd(Some(&crd), true);
        let live = json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "np"},
                          "spec": {"requirements": [{"key": "a", "values": ["1"]}], "taints": [{"key": "t"}]}});
        let cfg = json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "np"},
                         "spec": {"requirements": [{"key": "b", "values": ["2"]}], "taints": [{"key": "u"}]}});
        let out = apply(&live, &cfg, &schema, &ApplyOptions::new("m")).unwrap();
        assert_eq!(out["spec"]["requirements"].as_array().unwrap().len(), 2);
        assert_eq!(out["spec"]["taints"], json!([{"key": "u"}]));
        let e = entry(&out, "m", "Apply").unwrap();
        assert_eq!(e["fieldsV1"]["f:spec"]["f:taints"], json!({}));
        assert!(e["fieldsV1"]["f:spec"]["f:requirements"].get("k:{\"key\":\"b\"}").is_some());
    }

    #[test]
    fn schemaless_custom_resources_own_every_map_entry() {
        let schema = PatchSchema::from_crd(None, false);
        let cfg = json!({"apiVersion": "x/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"a": {"b": 1}}});
        let out = apply(&json!({}), &cfg, &schema, &ApplyOptions::new("m")).unwrap();
        assert_eq!(
            entry(&out, "m", "Apply").unwrap()["fieldsV1"],
            json!({"f:spec": {".": {}, "f:a": {".": {}, "f:b": {}}}})
        );
    }

    #[test]
    fn dropping_a_container_from_the_config_removes_it() {
        let opts = ApplyOptions::new("ctl");
        let mut two = config(Some(1), "web:1");
        two["spec"]["template"]["spec"]["containers"] =
            json!([{"name": "app", "image": "web:1"}, {"name": "sidecar", "image": "proxy:1"}]);
        let first = run(&json!({}), &two, &opts).unwrap();
        let second = run(&first, &config(Some(1), "web:1"), &opts).unwrap();
        assert_eq!(second["spec"]["template"]["spec"]["containers"], json!([{"name": "app", "image": "web:1"}]));
    }

    #[test]
    fn items_added_by_an_update_manager_survive_the_appliers_prune() {
        let opts = ApplyOptions::new("ctl");
        let first = run(&json!({}), &config(Some(1), "web:1"), &opts).unwrap();
        let mut edited = first.clone();
        edited["metadata"]["labels"] = json!({"team": "a"});
        let edited = record_update(&first, &edited, &deployment(), &ApplyOptions::new("kubectl-label"));
        let out = run(&edited, &config(None, "web:1"), &opts).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"team": "a"}));
        assert!(entry(&out, "kubectl-label", "Update").is_some());
    }

    #[test]
    fn removed_fields_leave_every_managers_set() {
        let first = run(&json!({}), &config(Some(2), "web:1"), &ApplyOptions::new("a")).unwrap();
        let mut edited = first.clone();
        edited["spec"].as_object_mut().unwrap().remove("replicas");
        let out = record_update(&first, &edited, &deployment(), &ApplyOptions::new("editor"));
        assert!(entry(&out, "a", "Apply").unwrap()["fieldsV1"]["f:spec"].get("f:replicas").is_none());
        assert!(entry(&out, "editor", "Update").is_none(), "an update that only removes owns nothing");
    }

    #[test]
    fn status_subresource_writes_are_recorded_with_the_subresource() {
        let live = run(&json!({}), &config(Some(1), "web:1"), &ApplyOptions::new("ctl")).unwrap();
        let mut new = live.clone();
        new["status"] = json!({"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]});
        let opts = ApplyOptions::new("deployment-controller").subresource("status").at("2026-01-01T00:00:01Z");
        let out = record_update(&live, &new, &deployment(), &opts);
        let e = entry(&out, "deployment-controller", "Update").unwrap();
        assert_eq!(e["subresource"], json!("status"));
        assert_eq!(
            e["fieldsV1"],
            json!({"f:status": {"f:conditions": {".": {}, "k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}}, "f:replicas": {}}})
        );
        let order: Vec<&str> = out["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["operation"].as_str().unwrap())
            .collect();
        assert_eq!(order, ["Apply", "Update"]);
    }

    #[test]
    fn conflicts_across_managers_are_sorted_by_manager() {
        let first = run(&json!({}), &config(Some(2), "web:1"), &ApplyOptions::new("zeta")).unwrap();
        let mut labelled = first.clone();
        labelled["spec"]["template"]["spec"]["containers"][0]["image"] = json!("web:9");
        let labelled = record_update(&first, &labelled, &deployment(), &ApplyOptions::new("alpha"));
        let err = run(&labelled, &config(Some(3), "web:2"), &ApplyOptions::new("new")).unwrap_err();
        let PatchError::Conflict { message, causes } = err else { panic!() };
        assert_eq!(
            message,
            "Apply failed with 2 conflicts: conflicts with \"alpha\" using apps/v1:\n- .spec.template.spec.containers[name=\"app\"].image\nconflicts with \"zeta\":\n- .spec.replicas"
        );
        assert_eq!(causes.len(), 2);
    }

    #[test]
    fn dropping_the_last_applied_label_keeps_the_rest_of_metadata() {
        let opts = ApplyOptions::new("ctl");
        let mut labelled = config(Some(1), "web:1");
        labelled["metadata"]["labels"] = json!({"team": "a"});
        let mut live = run(&json!({}), &labelled, &opts).unwrap();
        live["metadata"]["uid"] = json!("u-1");
        let out = run(&live, &config(Some(1), "web:1"), &opts).unwrap();
        assert_eq!(out["metadata"]["name"], json!("web"));
        assert_eq!(out["metadata"]["uid"], json!("u-1"));
        assert!(out["metadata"].get("labels").is_none(), "{out}");
    }

    #[test]
    fn a_no_op_apply_keeps_the_entry_time() {
        let first = run(&json!({}), &config(Some(2), "x"), &ApplyOptions::new("m").at("2026-01-01T00:00:00Z")).unwrap();
        let again = run(&first, &config(Some(2), "x"), &ApplyOptions::new("m").at("2026-01-02T00:00:00Z")).unwrap();
        assert_eq!(again, first);
    }

    /// A Deployment configuration with random labels, replicas and at least one container
    /// (an empty map list owns nothing, so structured-merge-diff prunes its parents).
    fn arb_config() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let labels = prop::collection::btree_map("[a-c]", "[x-z]", 0..3);
        let names = Just(vec!["a", "b", "c", "d"]).prop_shuffle();
        let containers = (names, 1..4usize, prop::collection::vec("[0-2]", 4));
        (labels, proptest::option::of(0..3i64), containers).prop_map(|(labels, replicas, (names, count, images))| {
            let containers: Vec<Value> = names
                .iter()
                .zip(images)
                .take(count)
                .map(|(n, i)| json!({"name": n, "image": format!("img:{i}")}))
                .collect();
            let mut spec = json!({"template": {"spec": {"containers": containers}}});
            if let Some(r) = replicas {
                spec["replicas"] = json!(r);
            }
            let mut meta = json!({"name": "web"});
            if !labels.is_empty() {
                meta["labels"] = json!(labels);
            }
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec})
        })
    }

    proptest::proptest! {
        #[test]
        fn a_single_manager_reapplying_converges_to_its_latest_config(a in arb_config(), b in arb_config()) {
            let opts = ApplyOptions::new("ctl");
            let first = run(&json!({}), &a, &opts).unwrap();
            let updated = run(&first, &b, &opts).unwrap();
            let fresh = run(&json!({}), &b, &opts).unwrap();
            proptest::prop_assert_eq!(&updated, &fresh);
            let again = run(&updated, &b, &opts).unwrap();
            proptest::prop_assert_eq!(again, updated);
        }
    }
}
