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

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::PatchError;
use super::error::ConflictCause;
use super::fieldset::{FieldSet, PathElement, path_string};
use super::schema::{FieldSchema, ListType, PatchSchema, Shape};

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
        ApplyOptions {
            field_manager: field_manager.to_string(),
            force: false,
            time: None,
            subresource: None,
        }
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

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: Option<String>,
    subresource: Option<String>,
    set: FieldSet,
}

impl Entry {
    /// apiserver `BuildManagerIdentifier`: appliers are identified without API version.
    fn identity(&self) -> (String, String, String, String) {
        let version = if self.operation == "Apply" {
            String::new()
        } else {
            self.api_version.clone()
        };
        (
            self.manager.clone(),
            self.operation.clone(),
            version,
            self.subresource.clone().unwrap_or_default(),
        )
    }

    /// apiserver `printManager`, as conflict messages show a manager.
    fn printable(&self) -> String {
        let mut out = serde_json::to_string(&self.manager).unwrap_or_default();
        if let Some(sub) = &self.subresource {
            out.push_str(&format!(
                " with subresource {}",
                serde_json::to_string(sub).unwrap_or_default()
            ));
        }
        if self.operation == "Update" {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert("operation".into(), Value::String(self.operation.clone()));
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(time) = &self.time {
            m.insert("time".into(), Value::String(time.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), self.set.to_fields_v1());
        if let Some(sub) = &self.subresource {
            m.insert("subresource".into(), Value::String(sub.clone()));
        }
        Value::Object(m)
    }
}

type Managers = BTreeMap<(String, String, String, String), Entry>;

fn parse_managers(object: &Value) -> Result<Managers, PatchError> {
    let mut out = Managers::new();
    let Some(entries) = object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return Ok(out);
    };
    for e in entries {
        let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
        let entry = Entry {
            manager: text("manager").unwrap_or_default(),
            operation: text("operation").unwrap_or_else(|| "Update".to_string()),
            api_version: text("apiVersion").unwrap_or_default(),
            time: text("time"),
            subresource: text("subresource").filter(|s| !s.is_empty()),
            set: FieldSet::from_fields_v1(e.get("fieldsV1").unwrap_or(&Value::Object(Map::new())))?,
        };
        out.insert(entry.identity(), entry);
    }
    Ok(out)
}

/// apiserver `sortEncodedManagedFields`: Apply before Update, then time, manager, version.
fn write_managers(object: &mut Value, managers: Managers) {
    let mut entries: Vec<Entry> = managers
        .into_values()
        .filter(|e| !e.set.is_empty())
        .collect();
    entries.sort_by(|a, b| {
        (
            &a.operation,
            a.time.as_deref().unwrap_or(""),
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                &b.operation,
                b.time.as_deref().unwrap_or(""),
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    let Some(root) = object.as_object_mut() else {
        return;
    };
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert(
            "managedFields".into(),
            Value::Array(entries.iter().map(Entry::to_json).collect()),
        );
    }
}

/// The apiserver's strip set: fields no manager ever owns. They are stripped from the
/// stored sets after the apply (`stripMetaManager`), so they still protect `metadata` from
/// pruning while the apply runs.
fn stripped_fields() -> FieldSet {
    let f = |n: &str| PathElement::Field(n.to_string());
    let mut set = FieldSet::new();
    set.insert(&[f("apiVersion")]);
    set.insert(&[f("kind")]);
    for meta in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[f("metadata"), f(meta)]);
    }
    set
}

/// The fields the endpoint resets (`ResetFieldsStrategy`): `status` through the main
/// resource, `spec` through the status subresource, for kinds with a status subresource.
fn reset_fields(schema: &PatchSchema, subresource: Option<&str>) -> FieldSet {
    let f = |n: &str| PathElement::Field(n.to_string());
    let mut set = FieldSet::new();
    if schema.has_status_subresource() {
        match subresource {
            Some("status") => set.insert(&[f("spec")]),
            _ => set.insert(&[f("status")]),
        }
    }
    set
}

/// Removes whole subtrees named by `ignored` members from `set`.
fn strip(set: &FieldSet, ignored: &FieldSet) -> FieldSet {
    let mut remove = FieldSet::new();
    for path in ignored.paths() {
        for owned in set.paths() {
            if owned.starts_with(&path) {
                remove.insert(&owned);
            }
        }
    }
    set.difference(&remove)
}

/// Runs server-side apply of `config` onto `live` (an empty object for create).
pub(crate) fn apply(
    live: &Value,
    config: &Value,
    schema: &PatchSchema,
    opts: &ApplyOptions,
) -> Result<Value, PatchError> {
    for field in ["apiVersion", "kind"] {
        if config
            .get(field)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(PatchError::BadRequest(format!(
                "Object '{}' is missing in apply configuration",
                if field == "kind" { "Kind" } else { field }
            )));
        }
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(PatchError::BadRequest(
            "metadata.managedFields must be nil".to_string(),
        ));
    }
    let root = schema.root();
    let reset = reset_fields(schema, opts.subresource.as_deref());
    let stripped = stripped_fields();
    let ignored = reset.union(&stripped);
    let mut managers = parse_managers(live).unwrap_or_default();
    let me = Entry {
        manager: opts.field_manager.clone(),
        operation: "Apply".to_string(),
        api_version: config
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        time: opts.time.clone(),
        subresource: opts.subresource.clone(),
        set: FieldSet::new(),
    };
    let key = me.identity();
    let last = managers
        .get(&key)
        .map(|e| e.set.clone())
        .unwrap_or_default();
    let previous_time = managers.get(&key).and_then(|e| e.time.clone());

    let mut live_plain = live.clone();
    strip_managed_fields(&mut live_plain);
    let merged = merge(Some(&live_plain), config, root)?;
    let config_set = strip(&field_set(config, root, true)?, &reset);
    managers.insert(
        key.clone(),
        Entry {
            set: config_set.clone(),
            ..me
        },
    );
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

fn strip_managed_fields(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
}

/// The apiserver's `NewConflictError` message and causes.
fn conflict_error(mut conflicts: Vec<(String, Vec<PathElement>)>) -> PatchError {
    conflicts.sort();
    let causes: Vec<ConflictCause> = conflicts
        .iter()
        .map(|(m, p)| ConflictCause {
            message: format!("conflict with {m}"),
            field: path_string(p),
        })
        .collect();
    let message = if let [(manager, path)] = conflicts.as_slice() {
        format!(
            "Apply failed with 1 conflict: conflict with {manager}: {}",
            path_string(path)
        )
    } else {
        let mut lines = Vec::new();
        let mut current: Option<&str> = None;
        for (manager, path) in &conflicts {
            if current != Some(manager.as_str()) {
                lines.push(format!("conflicts with {manager}:"));
                current = Some(manager);
            }
            lines.push(format!("- {}", path_string(path)));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    PatchError::Conflict { message, causes }
}

/// Records a non-apply write (create, update, JSON/merge/strategic patch) as an `Update`
/// entry for `opts.field_manager`, taking over changed fields from other managers, and
/// returns `new` with its `metadata.managedFields` set. `old` is `{}` for a create.
///
/// # Errors
/// None in practice: malformed stored `managedFields` are reset, as the apiserver does.
pub fn record_update(
    old: &Value,
    new: &Value,
    schema: &PatchSchema,
    opts: &ApplyOptions,
) -> Result<Value, PatchError> {
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
        api_version: new
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
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
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Merge
// ---------------------------------------------------------------------------------------

fn is_atomic(value: &Value, schema: &FieldSchema) -> bool {
    match value {
        Value::Object(_) => schema.atomic || matches!(schema.shape, Shape::Scalar | Shape::List),
        Value::Array(_) => {
            schema.atomic
                || *schema.apply_list_type() == ListType::Atomic
                || schema.shape != Shape::List
        }
        _ => true,
    }
}

/// Merges the applied configuration into the live value ("the config wins").
fn merge(live: Option<&Value>, config: &Value, schema: &FieldSchema) -> Result<Value, PatchError> {
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
        (Some(Value::Array(l)), Value::Array(c)) if !is_atomic(config, schema) => {
            merge_list(l, c, schema)
        }
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
    let live_pes: Vec<Option<PathElement>> = live
        .iter()
        .enumerate()
        .map(|(i, v)| item_element(schema, v, i).ok())
        .collect();
    let config_pes: Vec<PathElement> = config
        .iter()
        .enumerate()
        .map(|(i, v)| item_element(schema, v, i))
        .collect::<Result<_, _>>()?;
    let in_config = |pe: &Option<PathElement>| pe.as_ref().is_some_and(|p| config_pes.contains(p));
    let live_of = |pe: &PathElement| {
        live.iter()
            .zip(&live_pes)
            .find(|(_, p)| p.as_ref() == Some(pe))
            .map(|(v, _)| v)
    };
    let shared: Vec<&PathElement> = config_pes
        .iter()
        .filter(|pe| live_pes.contains(&Some((*pe).clone())))
        .collect();
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
            if in_config(&live_pes[li])
                && shared
                    .get(next_shared)
                    .is_some_and(|s| live_pes[li].as_ref() != Some(*s))
            {
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
            if live_pes[li]
                .as_ref()
                .is_some_and(|p| merged_config.contains(&p))
            {
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
fn item_element(
    schema: &FieldSchema,
    item: &Value,
    index: usize,
) -> Result<PathElement, PatchError> {
    match schema.apply_list_type() {
        ListType::Map(keys) => {
            let mut key_map = Map::new();
            let mut sorted = keys.clone();
            sorted.sort();
            for k in &sorted {
                let value = item.get(k).cloned().or_else(|| schema.item().child(k).default.clone()).ok_or_else(|| {
                    PatchError::BadRequest(format!(
                        "element {index}: associative list with keys has an element that omits key field \"{k}\""
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
fn field_set(value: &Value, schema: &FieldSchema, strict: bool) -> Result<FieldSet, PatchError> {
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
            for (i, item) in items.iter().enumerate() {
                let pe = match item_element(schema, item, i) {
                    Ok(pe) => pe,
                    Err(e) if strict => return Err(e),
                    Err(_) => continue,
                };
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
fn prune(
    merged: &Value,
    schema: &FieldSchema,
    managers: &Managers,
    last: &FieldSet,
) -> Result<Value, PatchError> {
    if last.is_empty() {
        return Ok(merged.clone());
    }
    let last = ensure_named(last, schema);
    let managed = managers
        .values()
        .fold(FieldSet::new(), |acc, e| acc.union(&e.set));
    let managed = ensure_named(&managed, schema);
    let merged_set = ensure_named(&field_set(merged, schema, false)?, schema);
    let pruned = remove_items(merged, &last, schema);
    let pruned_set = ensure_named(&field_set(&pruned, schema, false)?, schema);
    let pruned = remove_items(
        merged,
        &merged_set.difference(&pruned_set.union(&managed)),
        schema,
    );
    let pruned_set = ensure_named(&field_set(&pruned, schema, false)?, schema);
    Ok(remove_items(
        merged,
        &merged_set.difference(&pruned_set).intersection(&last),
        schema,
    ))
}

// ---------------------------------------------------------------------------------------
// Compare
// ---------------------------------------------------------------------------------------

#[derive(Default)]
struct Changes {
    added: FieldSet,
    modified: FieldSet,
    removed: FieldSet,
}

/// structured-merge-diff `TypedValue.Compare`.
fn compare(old: &Value, new: &Value, schema: &FieldSchema) -> Changes {
    let mut changes = Changes::default();
    diff(
        Some(old),
        Some(new),
        schema,
        &mut Vec::new(),
        &mut changes,
        false,
    );
    changes
}

fn children<'a>(value: Option<&'a Value>, schema: &FieldSchema) -> Vec<(PathElement, &'a Value)> {
    match value {
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| (PathElement::Field(k.clone()), v))
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| item_element(schema, v, i).ok().map(|pe| (pe, v)))
            .collect(),
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
        || old
            .zip(new)
            .is_some_and(|(o, n)| std::mem::discriminant(o) != std::mem::discriminant(n));
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

#[cfg(test)]
mod tests {
    use super::*;
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
        let out = run(
            &json!({}),
            &config(Some(2), "web:1"),
            &ApplyOptions::new("ctl").at("2026-01-01T00:00:00Z"),
        )
        .unwrap();
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
        assert_eq!(
            second["spec"]["template"]["spec"]["containers"][0]["image"],
            json!("web:1")
        );
        assert!(
            entry(&second, "ctl", "Apply").unwrap()["fieldsV1"]["f:spec"]
                .get("f:replicas")
                .is_none()
        );
    }

    #[test]
    fn a_field_another_manager_also_owns_survives_pruning() {
        let first = run(
            &json!({}),
            &config(Some(2), "web:1"),
            &ApplyOptions::new("a"),
        )
        .unwrap();
        let shared = run(&first, &config(Some(2), "web:1"), &ApplyOptions::new("b")).unwrap();
        let out = run(&shared, &config(None, "web:1"), &ApplyOptions::new("a")).unwrap();
        assert_eq!(out["spec"]["replicas"], json!(2));
    }

    #[test]
    fn a_different_value_owned_by_another_manager_conflicts() {
        let first = run(
            &json!({}),
            &config(Some(2), "web:1"),
            &ApplyOptions::new("a"),
        )
        .unwrap();
        let err = run(&first, &config(Some(5), "web:2"), &ApplyOptions::new("b")).unwrap_err();
        assert_eq!(err.status_code(), 409);
        let PatchError::Conflict { message, causes } = err else {
            panic!()
        };
        assert_eq!(
            message,
            "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"app\"].image"
        );
        assert_eq!(
            causes[0],
            ConflictCause {
                message: "conflict with \"a\"".into(),
                field: ".spec.replicas".into()
            }
        );
    }

    #[test]
    fn the_same_value_is_shared_without_conflict() {
        let first = run(
            &json!({}),
            &config(Some(2), "web:1"),
            &ApplyOptions::new("a"),
        )
        .unwrap();
        let out = run(&first, &config(Some(2), "web:1"), &ApplyOptions::new("b")).unwrap();
        assert!(entry(&out, "a", "Apply").is_some() && entry(&out, "b", "Apply").is_some());
    }

    #[test]
    fn force_moves_ownership_to_the_applier() {
        let first = run(
            &json!({}),
            &config(Some(2), "web:1"),
            &ApplyOptions::new("a"),
        )
        .unwrap();
        let out = run(
            &first,
            &config(Some(5), "web:1"),
            &ApplyOptions::new("b").force(true),
        )
        .unwrap();
        assert_eq!(out["spec"]["replicas"], json!(5));
        let a = &entry(&out, "a", "Apply").unwrap()["fieldsV1"]["f:spec"];
        assert!(a.get("f:replicas").is_none(), "{a}");
        assert!(
            entry(&out, "b", "Apply").unwrap()["fieldsV1"]["f:spec"]
                .get("f:replicas")
                .is_some()
        );
    }

    #[test]
    fn an_update_manager_conflicts_with_apply_and_prints_its_version() {
        let first = run(
            &json!({}),
            &config(Some(2), "web:1"),
            &ApplyOptions::new("a"),
        )
        .unwrap();
        let mut scaled = first.clone();
        scaled["spec"]["replicas"] = json!(7);
        let updated =
            record_update(&first, &scaled, &deployment(), &ApplyOptions::new("hpa")).unwrap();
        assert!(
            entry(&updated, "a", "Apply").unwrap()["fieldsV1"]["f:spec"]
                .get("f:replicas")
                .is_none()
        );
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
        )
        .unwrap();
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
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b2"}])
        );
        let e = entry(&out, "m", "Apply").unwrap();
        assert_eq!(
            e["fieldsV1"]["f:metadata"],
            json!({"f:finalizers": {"v:\"y\"": {}}})
        );
    }

    #[test]
    fn container_ports_key_on_port_and_defaulted_protocol() {
        let schema = PatchSchema::builtin("Pod").unwrap();
        let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}});
        let out = apply(&json!({}), &cfg, &schema, &ApplyOptions::new("m")).unwrap();
        let ports = &entry(&out, "m", "Apply").unwrap()["fieldsV1"]["f:spec"]["f:containers"]["k:{\"name\":\"a\"}"]
            ["f:ports"];
        assert!(
            ports
                .get("k:{\"containerPort\":80,\"protocol\":\"TCP\"}")
                .is_some(),
            "{ports}"
        );
    }

    #[test]
    fn apply_requires_kind_and_refuses_managed_fields() {
        let opts = ApplyOptions::new("m");
        assert_eq!(
            run(&json!({}), &json!({"apiVersion": "apps/v1"}), &opts)
                .unwrap_err()
                .status_code(),
            400
        );
        let mut cfg = config(None, "x");
        cfg["metadata"]["managedFields"] = json!([]);
        assert_eq!(
            run(&json!({}), &cfg, &opts).unwrap_err().to_string(),
            "metadata.managedFields must be nil"
        );
    }

    #[test]
    fn status_is_not_owned_through_the_main_resource() {
        let mut cfg = config(Some(1), "x");
        cfg["status"] = json!({"replicas": 1});
        let out = run(&json!({}), &cfg, &ApplyOptions::new("m")).unwrap();
        assert!(
            entry(&out, "m", "Apply").unwrap()["fieldsV1"]
                .get("f:status")
                .is_none()
        );
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
        assert!(
            e["fieldsV1"]["f:spec"]["f:requirements"]
                .get("k:{\"key\":\"b\"}")
                .is_some()
        );
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
        assert_eq!(
            second["spec"]["template"]["spec"]["containers"],
            json!([{"name": "app", "image": "web:1"}])
        );
    }

    #[test]
    fn items_added_by_an_update_manager_survive_the_appliers_prune() {
        let opts = ApplyOptions::new("ctl");
        let first = run(&json!({}), &config(Some(1), "web:1"), &opts).unwrap();
        let mut edited = first.clone();
        edited["metadata"]["labels"] = json!({"team": "a"});
        let edited = record_update(
            &first,
            &edited,
            &deployment(),
            &ApplyOptions::new("kubectl-label"),
        )
        .unwrap();
        let out = run(&edited, &config(None, "web:1"), &opts).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"team": "a"}));
        assert!(entry(&out, "kubectl-label", "Update").is_some());
    }

    #[test]
    fn removed_fields_leave_every_managers_set() {
        let first = run(
            &json!({}),
            &config(Some(2), "web:1"),
            &ApplyOptions::new("a"),
        )
        .unwrap();
        let mut edited = first.clone();
        edited["spec"].as_object_mut().unwrap().remove("replicas");
        let out =
            record_update(&first, &edited, &deployment(), &ApplyOptions::new("editor")).unwrap();
        assert!(
            entry(&out, "a", "Apply").unwrap()["fieldsV1"]["f:spec"]
                .get("f:replicas")
                .is_none()
        );
        assert!(
            entry(&out, "editor", "Update").is_none(),
            "an update that only removes owns nothing"
        );
    }

    #[test]
    fn status_subresource_writes_are_recorded_with_the_subresource() {
        let live = run(
            &json!({}),
            &config(Some(1), "web:1"),
            &ApplyOptions::new("ctl"),
        )
        .unwrap();
        let mut new = live.clone();
        new["status"] =
            json!({"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]});
        let opts = ApplyOptions::new("deployment-controller")
            .subresource("status")
            .at("2026-01-01T00:00:01Z");
        let out = record_update(&live, &new, &deployment(), &opts).unwrap();
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
        let first = run(
            &json!({}),
            &config(Some(2), "web:1"),
            &ApplyOptions::new("zeta"),
        )
        .unwrap();
        let mut labelled = first.clone();
        labelled["spec"]["template"]["spec"]["containers"][0]["image"] = json!("web:9");
        let labelled = record_update(
            &first,
            &labelled,
            &deployment(),
            &ApplyOptions::new("alpha"),
        )
        .unwrap();
        let err = run(
            &labelled,
            &config(Some(3), "web:2"),
            &ApplyOptions::new("new"),
        )
        .unwrap_err();
        let PatchError::Conflict { message, causes } = err else {
            panic!()
        };
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
        let first = run(
            &json!({}),
            &config(Some(2), "x"),
            &ApplyOptions::new("m").at("2026-01-01T00:00:00Z"),
        )
        .unwrap();
        let again = run(
            &first,
            &config(Some(2), "x"),
            &ApplyOptions::new("m").at("2026-01-02T00:00:00Z"),
        )
        .unwrap();
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
