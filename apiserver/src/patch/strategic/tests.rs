//! Strategic merge patch against kubectl's and the Kubernetes docs' examples, the
//! apiserver's error codes, and JSON merge patch equivalence on list-free objects.

use super::*;
use crate::patch::kind_schema::PatchSchema;
use serde_json::json;

fn pod() -> PatchSchema {
    PatchSchema::builtin("Pod").unwrap()
}

fn smp(kind: &str, current: Value, patch: Value) -> Value {
    apply(&current, &patch, PatchSchema::builtin(kind).unwrap().root()).unwrap()
}

fn smp_err(current: Value, patch: Value) -> PatchError {
    apply(&current, &patch, pod().root()).unwrap_err()
}

#[test]
fn containers_merge_by_name_and_scalars_replace() {
    let live =
        json!({"spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "side", "image": "side:1"}]}});
    let out = smp("Pod", live, json!({"spec": {"containers": [{"name": "side", "image": "side:2"}]}}));
    assert_eq!(
        out,
        json!({"spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "side", "image": "side:2"}]}})
    );
}

#[test]
fn new_items_of_a_merging_list_go_before_server_only_items() {
    // apimachinery's mergeSortedSlice takes a patch item first when its live position is unknown.
    let live = json!({"spec": {"containers": [{"name": "a", "image": "a"}]}});
    let out = smp("Pod", live, json!({"spec": {"containers": [{"name": "b", "image": "b"}]}}));
    assert_eq!(out["spec"]["containers"], json!([{"name": "b", "image": "b"}, {"name": "a", "image": "a"}]));
}

#[test]
fn tolerations_and_taints_are_replaced() {
    let live = json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}});
    let out = smp("Pod", live, json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}));
    assert_eq!(out["spec"]["tolerations"], json!([{"key": "b", "operator": "Exists"}]));
    let node = json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}});
    let out = smp("Node", node, json!({"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}}));
    assert_eq!(out["spec"]["taints"], json!([{"key": "b", "effect": "NoExecute"}]));
}

#[test]
fn null_deletes_a_key_and_maps_merge() {
    let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
    let out = smp("Pod", live, json!({"metadata": {"labels": {"a": null, "c": "3"}}}));
    assert_eq!(out, json!({"metadata": {"labels": {"b": "2", "c": "3"}}}));
}

#[test]
fn finalizers_merge_as_a_set_and_delete_from_primitive_list_removes() {
    let live = json!({"metadata": {"finalizers": ["a", "b"]}});
    let out = smp("Pod", live.clone(), json!({"metadata": {"finalizers": ["b", "c"]}}));
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
    let out = smp("Pod", live, json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}));
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
    let none = smp("Pod", json!({"metadata": {}}), json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}));
    assert_eq!(none, json!({"metadata": {}}));
}

#[test]
fn patch_delete_item_removes_a_container() {
    // Kubernetes docs, "Use strategic merge patch ... $patch: delete".
    let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let out = smp("Pod", live, json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}));
    assert_eq!(out["spec"]["containers"], json!([{"name": "b"}]));
}

#[test]
fn patch_replace_item_replaces_the_whole_list() {
    let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let out = smp("Pod", live, json!({"spec": {"containers": [{"name": "c", "image": "c"}, {"$patch": "replace"}]}}));
    assert_eq!(out["spec"]["containers"], json!([{"name": "c", "image": "c"}]));
}

#[test]
fn patch_replace_on_a_map_replaces_it() {
    let live = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"nodeName": "n"}});
    let out = smp("Pod", live, json!({"metadata": {"labels": {"b": "2", "$patch": "replace"}}}));
    assert_eq!(out["metadata"]["labels"], json!({"b": "2"}));
    let out = smp("Pod", out, json!({"spec": {"$patch": "delete"}}));
    assert_eq!(out["spec"], json!({}));
}

#[test]
fn docs_example_patch_file_tolerations_and_containers() {
    // kubernetes.io "Update API Objects in Place Using kubectl patch": patch-file.yaml
    // adds a container (merged), patch-file-tolerations.yaml replaces tolerations.
    let live = json!({"spec": {"template": {"spec": {
        "containers": [{"name": "patch-demo-ctr", "image": "nginx"}],
        "tolerations": [{"effect": "NoSchedule", "key": "dedicated", "value": "test-team"}]
    }}}});
    let out = smp(
        "Deployment",
        live,
        json!({"spec": {"template": {"spec": {
            "containers": [{"name": "patch-demo-ctr-2", "image": "redis"}],
            "tolerations": [{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]
        }}}}),
    );
    let spec = &out["spec"]["template"]["spec"];
    assert_eq!(spec["containers"].as_array().unwrap().len(), 2);
    assert_eq!(spec["tolerations"], json!([{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}]));
}

#[test]
fn set_element_order_orders_the_merged_list_like_kubectl_apply() {
    let live = json!({"spec": {"containers": [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]}});
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "c"}, {"name": "a"}],
        "containers": [{"name": "c", "image": "c"}]
    }});
    let out = smp("Pod", live, patch);
    let names: Vec<&str> =
        out["spec"]["containers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["b", "c", "a"]);
}

#[test]
fn set_element_order_with_deletion_like_kubectl_apply() {
    // kubectl apply removing container b and adding d.
    let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}});
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "d"}, {"name": "c"}],
        "containers": [{"name": "d"}, {"$patch": "delete", "name": "b"}]
    }});
    let out = smp("Pod", live, patch);
    assert_eq!(out["spec"]["containers"], json!([{"name": "a"}, {"name": "d"}, {"name": "c"}]));
}

#[test]
fn set_element_order_for_primitive_lists() {
    let live = json!({"metadata": {"finalizers": ["x", "y"]}});
    let patch = json!({"metadata": {"$setElementOrder/finalizers": ["z", "x", "y"], "finalizers": ["z"]}});
    assert_eq!(smp("Pod", live, patch)["metadata"]["finalizers"], json!(["z", "x", "y"]));
}

#[test]
fn set_element_order_out_of_order_patch_is_refused() {
    let live = json!({"spec": {"containers": [{"name": "a"}]}});
    let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "z"}]}});
    assert_eq!(smp_err(live, patch).status_code(), 500);
}

#[test]
fn retain_keys_clears_unlisted_fields() {
    // Deployment strategy switch from RollingUpdate to Recreate, as kubectl apply sends it.
    let live = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
    let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    assert_eq!(smp("Deployment", live, patch)["spec"]["strategy"], json!({"type": "Recreate"}));
    let bad = json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}});
    assert_eq!(
        apply(
            &json!({"spec": {"strategy": {"type": "Recreate"}}}),
            &bad,
            PatchSchema::builtin("Deployment").unwrap().root()
        )
        .unwrap_err()
        .status_code(),
        400
    );
}

#[test]
fn conditions_merge_by_type_and_addresses_by_type() {
    let live = json!({"status": {
        "conditions": [{"type": "Ready", "status": "False"}, {"type": "MemoryPressure", "status": "False"}],
        "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]
    }});
    let out = smp(
        "Node",
        live,
        json!({"status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "Hostname", "address": "n1"}]
        }}),
    );
    assert_eq!(
        out["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}])
    );
    assert_eq!(out["status"]["addresses"].as_array().unwrap().len(), 2);
}

#[test]
fn owner_references_merge_by_uid_and_env_by_name() {
    let live = json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "rs"}]},
                      "spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]}});
    let out = smp(
        "Pod",
        live,
        json!({"metadata": {"ownerReferences": [{"uid": "1", "controller": true}]},
                                      "spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}}),
    );
    assert_eq!(out["metadata"]["ownerReferences"], json!([{"uid": "1", "name": "rs", "controller": true}]));
    assert_eq!(out["spec"]["containers"][0]["env"].as_array().unwrap().len(), 2);
}

#[test]
fn missing_merge_key_is_an_internal_error_like_the_apiserver() {
    let err =
        smp_err(json!({"spec": {"containers": [{"name": "a"}]}}), json!({"spec": {"containers": [{"image": "x"}]}}));
    assert_eq!(err.status_code(), 500);
    assert_eq!(err.to_string(), "map: map[image:x] does not contain declared merge key: name");
}

#[test]
fn bad_directives_are_rejected() {
    assert_eq!(smp_err(json!({"spec": {}}), json!({"spec": {"$patch": "frob"}})).status_code(), 500);
    let err = smp_err(
        json!({"metadata": {"finalizers": ["a"]}}),
        json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
    );
    assert_eq!(err.status_code(), 400);
    let lists = smp_err(json!({"metadata": {"finalizers": [["a"]]}}), json!({"metadata": {"finalizers": [["b"]]}}));
    assert_eq!(lists.status_code(), 422);
}

#[test]
fn directives_in_new_subtrees_are_dropped() {
    let out = smp(
        "Pod",
        json!({}),
        json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}, {"name": "b", "x": null}], "$retainKeys": ["containers"]}}),
    );
    assert_eq!(out, json!({"spec": {"containers": [{"name": "b"}]}}));
}

#[test]
fn volumes_image_pull_secrets_and_host_aliases_merge_by_their_keys() {
    let live = json!({"spec": {
        "volumes": [{"name": "v1", "emptyDir": {}}],
        "imagePullSecrets": [{"name": "s1"}],
        "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a"]}]
    }});
    let out = smp(
        "Pod",
        live,
        json!({"spec": {
            "volumes": [{"name": "v2", "configMap": {"name": "c"}}],
            "imagePullSecrets": [{"name": "s2"}],
            "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["b"]}]
        }}),
    );
    assert_eq!(out["spec"]["volumes"].as_array().unwrap().len(), 2);
    assert_eq!(out["spec"]["imagePullSecrets"].as_array().unwrap().len(), 2);
    assert_eq!(out["spec"]["hostAliases"], json!([{"ip": "10.0.0.1", "hostnames": ["b"]}]));
}

#[test]
fn topology_spread_constraints_merge_by_topology_key() {
    let live = json!({"spec": {"topologySpreadConstraints": [
        {"topologyKey": "zone", "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}
    ]}});
    let out = smp("Pod", live, json!({"spec": {"topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 2}]}}));
    assert_eq!(
        out["spec"]["topologySpreadConstraints"],
        json!([{"topologyKey": "zone", "maxSkew": 2, "whenUnsatisfiable": "DoNotSchedule"}])
    );
}

#[test]
fn pdb_selector_is_replaced_and_deployment_selector_merges() {
    let live = json!({"spec": {"selector": {"matchLabels": {"a": "1"}}}});
    let patch = json!({"spec": {"selector": {"matchLabels": {"b": "2"}}}});
    assert_eq!(
        smp("PodDisruptionBudget", live.clone(), patch.clone())["spec"]["selector"],
        json!({"matchLabels": {"b": "2"}})
    );
    assert_eq!(smp("Deployment", live, patch)["spec"]["selector"], json!({"matchLabels": {"a": "1", "b": "2"}}));
}

#[test]
fn node_cordon_patch_as_kubectl_sends_it() {
    let live =
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"providerID": "aws:///i-1"}});
    let out = smp("Node", live, json!({"spec": {"unschedulable": true}}));
    assert_eq!(out["spec"], json!({"providerID": "aws:///i-1", "unschedulable": true}));
}

/// Objects without lists: a strategic merge patch is a JSON merge patch.
fn arb_object() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![any::<bool>().prop_map(Value::from), "[a-z]{0,3}".prop_map(Value::from)];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop::collection::btree_map("[a-d]", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect()))
    })
}

proptest::proptest! {
    #[test]
    fn without_lists_strategic_merge_equals_json_merge(a in arb_object(), b in arb_object()) {
        let a = if a.is_object() { a } else { json!({"x": a}) };
        let b = if b.is_object() { b } else { json!({"x": b}) };
        let patch = crate::patch::merge::diff(&a, &b);
        let schema = PatchSchema::builtin("Lease").unwrap();
        proptest::prop_assert_eq!(apply(&a, &patch, schema.root()).unwrap(), b);
    }
}

#[test]
fn numeric_merge_keys_compare_as_numbers() {
    let live = json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}});
    let out = smp(
        "Pod",
        live,
        json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80.0, "hostPort": 8080}]}]}}),
    );
    assert_eq!(out["spec"]["containers"][0]["ports"].as_array().unwrap().len(), 1);
}
