//! Operations on objects guided by a [`FieldSchema`], after structured-merge-diff's typed
//! values: merge (the config wins), the field set of a value, removing items, pruning what
//! an applier dropped, and comparing two versions of an object.

use serde_json::{Map, Value};

use super::PatchError;
use super::fieldset::{FieldSet, PathElement, path_string};
use super::managed::Managers;
use super::schema::{FieldSchema, ListType, Shape};

// ---------------------------------------------------------------------------------------
// Merge
// ---------------------------------------------------------------------------------------

pub(super) fn is_atomic(value: &Value, schema: &FieldSchema) -> bool {
    match value {
        Value::Object(_) => schema.atomic || matches!(schema.shape, Shape::Scalar | Shape::List),
        Value::Array(_) => {
            schema.atomic || *schema.apply_list_type() == ListType::Atomic || schema.shape != Shape::List
        }
        _ => true,
    }
}

/// Merges the applied configuration into the live value ("the config wins").
pub(super) fn merge(live: Option<&Value>, config: &Value, schema: &FieldSchema) -> Result<Value, PatchError> {
    match (live, config) {
        (Some(Value::Object(l)), Value::Object(c)) if !is_atomic(config, schema) => {
            let mut out = l.clone();
            for (k, v) in c {
                if v.is_null() {
                    out.remove(k);
                    continue;
                }
                let merged = merge(out.get(k), v, schema.child(k))?;
                out.insert(k.clone(), merged);
            }
            Ok(Value::Object(out))
        }
        (Some(Value::Array(l)), Value::Array(c)) if !is_atomic(config, schema) => merge_list(l, c, schema),
        (_, Value::Object(c)) => {
            let mut out = Map::new();
            for (k, v) in c {
                if !v.is_null() {
                    out.insert(k.clone(), merge(None, v, schema.child(k))?);
                }
            }
            Ok(Value::Object(out))
        }
        _ => Ok(config.clone()),
    }
}

/// structured-merge-diff's list merge: live-only items keep their place, items in the
/// configuration follow its order.
fn merge_list(live: &[Value], config: &[Value], schema: &FieldSchema) -> Result<Value, PatchError> {
    let live_pes: Vec<Option<PathElement>> =
        live.iter().enumerate().map(|(i, v)| item_element(schema, v, i).ok()).collect();
    let config_pes: Vec<PathElement> =
        config.iter().enumerate().map(|(i, v)| item_element(schema, v, i)).collect::<Result<_, _>>()?;
    let in_config = |pe: &Option<PathElement>| pe.as_ref().is_some_and(|p| config_pes.contains(p));
    let live_of = |pe: &PathElement| live.iter().zip(&live_pes).find(|(_, p)| p.as_ref() == Some(pe)).map(|(v, _)| v);
    let shared: Vec<&PathElement> = config_pes.iter().filter(|pe| live_pes.contains(&Some((*pe).clone()))).collect();
    let mut next_shared = 0;
    let mut merged_config: Vec<&PathElement> = Vec::new();
    let mut out = Vec::new();
    let (mut li, mut ri) = (0, 0);
    for _ in 0..(2 * (live.len() + config.len()) + 1) {
        if li >= live.len() && ri >= config.len() {
            break;
        }
        if li < live.len() && ri < config.len() {
            if live_pes[li].as_ref() == Some(&config_pes[ri]) {
                out.push(merge(Some(&live[li]), &config[ri], schema.item())?);
                merged_config.push(&config_pes[ri]);
                if shared.get(next_shared) == Some(&&config_pes[ri]) {
                    next_shared += 1;
                }
                li += 1;
                ri += 1;
                continue;
            }
            if in_config(&live_pes[li]) && shared.get(next_shared).is_some_and(|s| live_pes[li].as_ref() != Some(*s)) {
                li += 1;
                continue;
            }
        }
        if li < live.len() {
            if !in_config(&live_pes[li]) {
                out.push(live[li].clone());
                li += 1;
                continue;
            }
            if live_pes[li].as_ref().is_some_and(|p| merged_config.contains(&p)) {
                li += 1;
                continue;
            }
        }
        if ri < config.len() {
            let pe = &config_pes[ri];
            out.push(merge(live_of(pe), &config[ri], schema.item())?);
            merged_config.push(pe);
            if shared.get(next_shared) == Some(&pe) {
                next_shared += 1;
            }
            ri += 1;
        }
    }
    Ok(Value::Array(out))
}

/// The path element of a list item: `k:` for map lists (missing keys take their schema
/// default), `v:` for sets.
fn item_element(schema: &FieldSchema, item: &Value, index: usize) -> Result<PathElement, PatchError> {
    match schema.apply_list_type() {
        ListType::Map(keys) => {
            let mut key_map = Map::new();
            let mut sorted = keys.clone();
            sorted.sort();
            for k in &sorted {
                let value = item.get(k).cloned().or_else(|| schema.item().child(k).default.clone()).ok_or_else(|| {
                    PatchError::BadRequest(format!(
                        "element {index}: associative list with keys has an element that omits key field \"{k}\" (and doesn't have default value)"
                    ))
                })?;
                key_map.insert(k.clone(), value);
            }
            Ok(PathElement::Key(Value::Object(key_map).to_string()))
        }
        ListType::Set => Ok(PathElement::Value(item.to_string())),
        ListType::Atomic => Ok(PathElement::Index(index)),
    }
}

// ---------------------------------------------------------------------------------------
// Field sets of values
// ---------------------------------------------------------------------------------------

/// structured-merge-diff `ToFieldSet`: leaves, map entries and list items are members;
/// struct fields only through their leaves (or when null or empty).
pub(super) fn field_set(value: &Value, schema: &FieldSchema, strict: bool) -> Result<FieldSet, PatchError> {
    let mut set = FieldSet::new();
    walk(value, schema, &mut Vec::new(), &mut set, strict)?;
    Ok(set)
}

fn walk(
    value: &Value,
    schema: &FieldSchema,
    path: &mut Vec<PathElement>,
    set: &mut FieldSet,
    strict: bool,
) -> Result<(), PatchError> {
    if is_atomic(value, schema) {
        set.insert(path);
        return Ok(());
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                path.push(PathElement::Field(k.clone()));
                walk(v, schema.child(k), path, set, strict)?;
                let empty = v.is_null() || v.as_object().is_some_and(Map::is_empty);
                if empty || !schema.declares(k) {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let mut seen: Vec<PathElement> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let pe = match item_element(schema, item, i) {
                    Ok(pe) => pe,
                    Err(e) if strict => {
                        return Err(PatchError::BadRequest(format!("{}: {e}", path_string(path))));
                    }
                    Err(_) => continue,
                };
                if strict && !matches!(pe, PathElement::Index(_)) {
                    if seen.contains(&pe) {
                        return Err(PatchError::BadRequest(format!(
                            "{}: duplicate entries for key {pe}",
                            path_string(path)
                        )));
                    }
                    seen.push(pe.clone());
                }
                path.push(pe);
                walk(item, schema.item(), path, set, strict)?;
                set.insert(path);
                path.pop();
            }
        }
        _ => set.insert(path),
    }
    Ok(())
}

/// structured-merge-diff `EnsureNamedFieldsAreMembers`: struct fields with owned children
/// count as owned themselves (so pruning never removes a struct another manager uses).
fn ensure_named(set: &FieldSet, schema: &FieldSchema) -> FieldSet {
    let mut out = set.clone();
    for path in set.paths() {
        let mut node = schema;
        for depth in 0..path.len().saturating_sub(1) {
            node = match &path[depth] {
                PathElement::Field(name) => {
                    if node.declares(name) {
                        out.insert(&path[..=depth]);
                    }
                    node.child(name)
                }
                _ => node.item(),
            };
        }
    }
    out
}

/// structured-merge-diff `RemoveItems`: drops every member path (with its subtree).
fn remove_items(value: &Value, set: &FieldSet, schema: &FieldSchema) -> Value {
    match value {
        Value::Object(map) if !is_atomic(value, schema) => {
            let mut out = Map::new();
            for (k, v) in map {
                let pe = PathElement::Field(k.clone());
                if set.members().contains(&pe) {
                    continue;
                }
                match set.child(&pe) {
                    Some(sub) => out.insert(k.clone(), remove_items(v, sub, schema.child(k))),
                    None => out.insert(k.clone(), v.clone()),
                };
            }
            Value::Object(out)
        }
        Value::Array(items) if !is_atomic(value, schema) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let Ok(pe) = item_element(schema, item, i) else {
                    out.push(item.clone());
                    continue;
                };
                if set.members().contains(&pe) {
                    continue;
                }
                match set.child(&pe) {
                    Some(sub) => out.push(remove_items(item, sub, schema.item())),
                    None => out.push(item.clone()),
                }
            }
            Value::Array(out)
        }
        other => other.clone(),
    }
}

/// Removes what the applier owned before and no longer applies, unless someone else owns
/// it (`Updater.prune`, `addBackOwnedItems`, `addBackDanglingItems`).
pub(super) fn prune(
    merged: &Value,
    schema: &FieldSchema,
    managers: &Managers,
    last: &FieldSet,
) -> Result<Value, PatchError> {
    if last.is_empty() {
        return Ok(merged.clone());
    }
    let last = ensure_named(last, schema);
    let managed = managers.values().fold(FieldSet::new(), |acc, e| acc.union(&e.set));
    let managed = ensure_named(&managed, schema);
    let merged_set = ensure_named(&field_set(merged, schema, false)?, schema);
    let pruned = remove_items(merged, &last, schema);
    let pruned_set = ensure_named(&field_set(&pruned, schema, false)?, schema);
    let pruned = remove_items(merged, &merged_set.difference(&pruned_set.union(&managed)), schema);
    let pruned_set = ensure_named(&field_set(&pruned, schema, false)?, schema);
    Ok(remove_items(merged, &merged_set.difference(&pruned_set).intersection(&last), schema))
}

// ---------------------------------------------------------------------------------------
// Compare
// ---------------------------------------------------------------------------------------

#[derive(Default)]
pub(super) struct Changes {
    pub(super) added: FieldSet,
    pub(super) modified: FieldSet,
    pub(super) removed: FieldSet,
}

/// structured-merge-diff `TypedValue.Compare`.
pub(super) fn compare(old: &Value, new: &Value, schema: &FieldSchema) -> Changes {
    let mut changes = Changes::default();
    diff(Some(old), Some(new), schema, &mut Vec::new(), &mut changes, false);
    changes
}

fn children<'a>(value: Option<&'a Value>, schema: &FieldSchema) -> Vec<(PathElement, &'a Value)> {
    match value {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (PathElement::Field(k.clone()), v)).collect(),
        Some(Value::Array(items)) => {
            items.iter().enumerate().filter_map(|(i, v)| item_element(schema, v, i).ok().map(|pe| (pe, v))).collect()
        }
        _ => Vec::new(),
    }
}

/// Maps and lists that a write adds are owned in their own right (their Go fields are
/// `omitempty`); structs are not (Go zero values make them look present already).
fn is_owned_when_added(schema: &FieldSchema) -> bool {
    !schema.always_present && matches!(schema.shape, Shape::Map | Shape::Deduced | Shape::List)
}

/// `own` says whether this node is owned in its own right when added: list items, map
/// entries and maps are; struct fields are not.
fn diff(
    old: Option<&Value>,
    new: Option<&Value>,
    schema: &FieldSchema,
    path: &mut Vec<PathElement>,
    out: &mut Changes,
    own: bool,
) {
    let probe = new.or(old).unwrap_or(&Value::Null);
    let leaf = is_atomic(probe, schema)
        || old.zip(new).is_some_and(|(o, n)| std::mem::discriminant(o) != std::mem::discriminant(n));
    if leaf {
        match (old, new) {
            (None, Some(_)) => out.added.insert(path),
            (Some(_), None) => out.removed.insert(path),
            (Some(o), Some(n)) if o != n => out.modified.insert(path),
            _ => {}
        }
        return;
    }
    match (old, new) {
        (None, Some(_)) if own || is_owned_when_added(schema) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        _ => {}
    }
    let old_children = children(old, schema);
    let new_children = children(new, schema);
    let mut keys: Vec<&PathElement> = old_children.iter().map(|(k, _)| k).collect();
    for (k, _) in &new_children {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for pe in keys {
        let o = old_children.iter().find(|(k, _)| k == pe).map(|(_, v)| *v);
        let n = new_children.iter().find(|(k, _)| k == pe).map(|(_, v)| *v);
        let (child, own_child) = match pe {
            PathElement::Field(name) => (schema.child(name), !schema.declares(name)),
            _ => (schema.item(), true),
        };
        path.push(pe.clone());
        diff(o, n, child, path, out, own_child);
        path.pop();
    }
}
