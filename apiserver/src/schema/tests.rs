//! Admission of a small synthetic CRD that uses every schema keyword the Karpenter CRDs do not.

use serde_json::{Value, json};

use super::{CrdSchema, Rejection};

fn crd(spec_schema: Value, scope: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": scope,
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": spec_schema
                    }
                }}
            }]
        }
    })
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": spec})
}

fn schema() -> CrdSchema {
    let spec = json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 0, "exclusiveMinimum": true, "multipleOf": 2},
            "ratio": {"type": "number", "maximum": 1.5},
            "note": {"type": "string", "nullable": true, "minLength": 2},
            "port": {"x-kubernetes-int-or-string": true},
            "when": {"type": "string", "format": "date-time"},
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "minItems": 1},
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "number": {"type": "integer", "default": 80}},
                    "x-kubernetes-validations": [{"rule": "self.number == oldSelf.number", "message": "number is immutable"}]
                }
            },
            "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}, "minProperties": 1},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"known": {"type": "string"}}},
            "choice": {"type": "string", "oneOf": [{"pattern": "^a"}, {"pattern": "b$"}]},
            "evalError": {"type": "string", "x-kubernetes-validations": [{"rule": "int(self) > 0"}]},
            "forbidden": {"type": "string", "x-kubernetes-validations": [
                {"rule": "self != 'x'", "message": "x is not allowed", "reason": "FieldValueForbidden", "fieldPath": ".inner"}
            ]}
        }
    });
    CrdSchema::compile(&crd(spec, "Namespaced"), "v1").expect("compiles")
}

fn messages(spec: Value) -> Vec<String> {
    let mut obj = widget(spec);
    match schema().admit(&mut obj, None, false) {
        Ok(_) => Vec::new(),
        Err(Rejection::Invalid(errors)) => errors.into_iter().map(|e| e.message).collect(),
        Err(other) => panic!("{other:?}"),
    }
}

const SKIPPED: &str = "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

#[test]
fn integers_and_numbers_are_distinguished_like_the_apiserver() {
    assert_eq!(messages(json!({"count": 2.0})), Vec::<String>::new(), "2.0 decodes as an integer");
    assert_eq!(
        messages(json!({"count": 2.5})),
        [r#"spec.count: Invalid value: "number": spec.count in body must be of type integer: "number""#, SKIPPED]
    );
    assert_eq!(
        messages(json!({"count": 0})),
        ["spec.count: Invalid value: 0: spec.count in body should be greater than 0",]
    );
    assert_eq!(
        messages(json!({"count": 3})),
        ["spec.count: Invalid value: 3: spec.count in body should be a multiple of 2"]
    );
    assert_eq!(
        messages(json!({"ratio": 2})),
        ["spec.ratio: Invalid value: 2: spec.ratio in body should be less than or equal to 1.5"]
    );
}

#[test]
fn nullable_int_or_string_format_and_length_follow_kube_openapi() {
    assert!(messages(json!({"note": null, "port": 8080})).is_empty());
    assert!(messages(json!({"port": "http"})).is_empty());
    assert_eq!(
        messages(json!({"port": true})),
        [
            r#"spec.port: Invalid value: "": spec.port in body must validate at least one schema (anyOf)"#,
            r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer: "boolean""#,
            SKIPPED
        ]
    );
    assert_eq!(
        messages(json!({"when": "tomorrow"})),
        [r#"spec.when: Invalid value: "tomorrow": spec.when in body must be of type date-time: "tomorrow""#, SKIPPED]
    );
    assert_eq!(
        messages(json!({"note": "a"})),
        [r#"spec.note: Invalid value: "a": spec.note in body should be at least 2 chars long"#]
    );
    assert_eq!(
        messages(json!({"labels": {"a": "long"}})),
        ["spec.labels.a: Too long: may not be more than 3 bytes", SKIPPED]
    );
    assert_eq!(
        messages(json!({"labels": {}})),
        ["spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties"]
    );
}

#[test]
fn non_nullable_nulls_are_dropped_or_defaulted() {
    let mut obj = widget(json!({"count": null, "ports": [{"name": "a", "number": null}]}));
    schema().admit(&mut obj, None, true).expect("admitted");
    assert_eq!(obj["spec"], json!({"ports": [{"name": "a", "number": 80}]}));
}

#[test]
fn list_types_reject_duplicates() {
    assert_eq!(
        messages(json!({"tags": ["a", "b", "a"]})),
        [r#"spec.tags[2]: Duplicate value: "a""#],
        "Duplicate does not block CEL"
    );
    assert_eq!(
        messages(json!({"tags": []})),
        ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]
    );
    assert_eq!(
        messages(json!({"ports": [{"name": "a"}, {"name": "a", "number": 81}]})),
        [r#"spec.ports[1]: Duplicate value: map[string]interface {}{"name":"a"}"#]
    );
}

#[test]
fn junctors_and_preserve_unknown_fields_work() {
    assert!(messages(json!({"choice": "ab"})).len() == 1, "both branches match: oneOf fails");
    assert!(messages(json!({"choice": "ax"})).is_empty());
    let mut obj = widget(json!({"free": {"known": "k", "anything": {"deep": 1}}}));
    let admitted = schema().admit(&mut obj, None, true).expect("admitted");
    assert!(admitted.pruned.is_empty());
    assert_eq!(obj["spec"]["free"]["anything"], json!({"deep": 1}));
}

#[test]
fn cel_rules_that_cannot_be_evaluated_fail_closed() {
    assert!(messages(json!({"evalError": "5"})).is_empty());
    let errors = messages(json!({"evalError": "five"}));
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with(r#"spec.evalError: Invalid value: "string": "#), "{errors:?}");
}

#[test]
fn cel_reason_and_field_path_shape_the_error() {
    assert_eq!(messages(json!({"forbidden": "x"})), ["spec.forbidden.inner: Forbidden: x is not allowed"]);
}

#[test]
fn map_list_items_are_correlated_by_key_for_transition_rules() {
    let s = schema();
    let mut old = widget(json!({"ports": [{"name": "a", "number": 1}, {"name": "b", "number": 2}]}));
    s.admit(&mut old, None, true).expect("create");
    // Reordered but unchanged: correlated by name, so no immutability error.
    let mut reordered = widget(json!({"ports": [{"name": "b", "number": 2}, {"name": "a", "number": 1}]}));
    assert!(s.admit(&mut reordered, Some(&old), true).is_ok());
    let mut changed = widget(json!({"ports": [{"name": "b", "number": 3}, {"name": "a", "number": 1}]}));
    let Err(Rejection::Invalid(errors)) = s.admit(&mut changed, Some(&old), true) else { panic!("rejected") };
    assert_eq!(errors[0].message, r#"spec.ports[0]: Invalid value: "object": number is immutable"#);
    // A new item has no old value: its transition rule does not run.
    let mut added =
        widget(json!({"ports": [{"name": "a", "number": 1}, {"name": "b", "number": 2}, {"name": "c", "number": 9}]}));
    assert!(s.admit(&mut added, Some(&old), true).is_ok());
}

#[test]
fn namespaced_resources_need_a_namespace() {
    let mut obj = widget(json!({}));
    obj["metadata"] = json!({"name": "w"});
    let Err(Rejection::Invalid(errors)) = schema().admit(&mut obj, None, true) else { panic!("rejected") };
    assert_eq!(errors[0].message, "metadata.namespace: Required value");
    assert!(schema().has_status_subresource());
    assert!(schema().namespaced());
}

#[test]
fn admission_is_deterministic() {
    let spec = json!({"count": 3, "tags": ["a", "a"], "labels": {"z": "long", "a": "long"}, "when": "x"});
    let first = messages(spec.clone());
    for _ in 0..5 {
        assert_eq!(messages(spec.clone()), first);
    }
}

/// cel-rust lacks `cel.bind` and the two-variable comprehensions the apiserver has. A CRD using
/// them still installs (the apiserver would accept it), but an object that reaches such a rule
/// is rejected with a message saying why: admitting it unchecked could store what EKS refuses.
#[test]
fn rules_kube_cel_cannot_run_reject_instead_of_admitting() {
    for rule in ["cel.bind(x, self, x == 'a')", "self.all(i, v, v != '')"] {
        let spec = json!({"type": "object", "properties": {"v": {"type": "string", "x-kubernetes-validations": [{"rule": rule}]}}});
        let s = CrdSchema::compile(&crd(spec, "Cluster"), "v1").expect("the apiserver accepts this CRD");
        let mut obj =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"v": "a"}});
        let Err(Rejection::Invalid(errors)) = s.admit(&mut obj, None, true) else { panic!("{rule} must fail closed") };
        assert!(errors[0].message.contains("does not support"), "{rule}: {errors:?}");
    }
}

#[test]
fn crds_with_invalid_defaults_are_refused() {
    let spec = json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "default": 0}}});
    let err = CrdSchema::compile(&crd(spec, "Cluster"), "v1").expect_err("bad default");
    assert!(err.to_string().contains("should be greater than or equal to 1"), "{err}");
    let spec = json!({"type": "object", "properties": {"o": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"b": "x"}}}});
    let err = CrdSchema::compile(&crd(spec, "Cluster"), "v1").expect_err("unpruned default");
    assert!(err.to_string().contains("must not have unknown fields"), "{err}");
}

/// The API server shares compiled schemas between tasks and threads.
#[test]
fn crd_schema_can_move_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CrdSchema>();
}

/// An object stored under an older, looser CRD can still be updated as long as the invalid
/// part is left alone (validation ratcheting, on by default since Kubernetes 1.30).
#[test]
fn unchanged_invalid_values_ratchet_on_update() {
    let s = schema();
    let old = widget(json!({"count": 3, "forbidden": "x", "note": "ok"}));
    let mut touched_elsewhere = widget(json!({"count": 3, "forbidden": "x", "note": "fine"}));
    assert!(s.admit(&mut touched_elsewhere, Some(&old), true).is_ok());
    let mut touched_count = widget(json!({"count": 5, "forbidden": "x", "note": "ok"}));
    let Err(Rejection::Invalid(errors)) = s.admit(&mut touched_count, Some(&old), true) else { panic!("rejected") };
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].field, "spec.count");
    let mut created = old.clone();
    assert!(s.admit(&mut created, None, true).is_err(), "no ratcheting on create");
}

#[test]
fn object_meta_is_validated_like_the_apiserver() {
    let mut obj = widget(json!({}));
    obj["metadata"]["labels"] = json!({"team/": "a", "ok": "bad value!"});
    let Err(Rejection::Invalid(errors)) = schema().admit(&mut obj, None, true) else { panic!("rejected") };
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            r#"metadata.labels: Invalid value: "team/": name part must be non-empty"#,
            r#"metadata.labels: Invalid value: "bad value!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
        ]
    );
    let mut unnamed = widget(json!({}));
    unnamed["metadata"] = json!({"namespace": "ns"});
    let Err(Rejection::Invalid(errors)) = schema().admit(&mut unnamed, None, true) else { panic!("rejected") };
    assert_eq!(errors[0].message, "metadata.name: Required value: name or generateName is required");
}
