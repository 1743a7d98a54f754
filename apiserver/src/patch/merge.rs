//! JSON merge patch (RFC 7386), and the diff that produces one.

use serde_json::{Map, Value};

/// Applies an RFC 7386 merge patch: objects merge recursively, `null` deletes a key, any
/// other value (arrays included) replaces the target.
pub fn apply(target: &Value, patch: &Value) -> Value {
    let Value::Object(patch_map) = patch else {
        return patch.clone();
    };
    let mut out = match target {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    for (key, value) in patch_map {
        if value.is_null() {
            out.remove(key);
        } else {
            let merged = apply(out.get(key).unwrap_or(&Value::Null), value);
            out.insert(key.clone(), merged);
        }
    }
    Value::Object(out)
}

/// The merge patch that turns `from` into `to` (what `kubectl` and tests send).
///
/// # Caveats
/// A merge patch cannot set a value to `null` (null means delete), so `to` must hold no
/// nulls inside objects for `apply(from, diff(from, to)) == to`.
pub fn diff(from: &Value, to: &Value) -> Value {
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => {
            let mut out = Map::new();
            for key in a.keys() {
                if !b.contains_key(key) {
                    out.insert(key.clone(), Value::Null);
                }
            }
            for (key, value) in b {
                match a.get(key) {
                    Some(old) if old == value => {}
                    Some(old @ Value::Object(_)) if value.is_object() => {
                        out.insert(key.clone(), diff(old, value));
                    }
                    _ => {
                        out.insert(key.clone(), value.clone());
                    }
                }
            }
            Value::Object(out)
        }
        _ => to.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn rfc7386_examples_apply() {
        // The table of RFC 7386 appendix A.
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "b"}), json!({"b": "c"}), json!({"a": "b", "b": "c"})),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (json!({"a": "b", "b": "c"}), json!({"a": null}), json!({"b": "c"})),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (json!({"a": {"b": "c"}}), json!({"a": {"b": "d", "c": null}}), json!({"a": {"b": "d"}})),
            (json!({"a": [{"b": "c"}]}), json!({"a": [1]}), json!({"a": [1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (json!({"e": null}), json!({"a": 1}), json!({"e": null, "a": 1})),
            (json!([1, 2]), json!({"a": "b", "c": null}), json!({"a": "b"})),
            (json!({}), json!({"a": {"bb": {"ccc": null}}}), json!({"a": {"bb": {}}})),
        ];
        for (target, patch, expected) in cases {
            assert_eq!(apply(&target, &patch), expected, "{target} + {patch}");
        }
    }

    #[test]
    fn diff_deletes_removed_keys_and_recurses() {
        let from = json!({"spec": {"replicas": 1, "paused": true}, "x": 1});
        let to = json!({"spec": {"replicas": 2}, "x": 1});
        assert_eq!(diff(&from, &to), json!({"spec": {"replicas": 2, "paused": null}}));
    }

    /// JSON without nulls inside objects (a merge patch cannot express them).
    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-z]{0,4}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-d]", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn diff_then_apply_gives_the_target(
            a in prop::collection::btree_map("[a-d]", arb_json(), 0..5),
            b in prop::collection::btree_map("[a-d]", arb_json(), 0..5),
        ) {
            let a = Value::Object(a.into_iter().collect());
            let b = Value::Object(b.into_iter().collect());
            let patch = diff(&a, &b);
            prop_assert_eq!(apply(&a, &patch), b);
        }
    }
}
