//! Sets of field paths in structured-merge-diff form: what a manager owns, encoded in
//! `managedFields[].fieldsV1` as `{"f:spec":{"f:replicas":{}},"k:{\"name\":\"app\"}":{".":{}}}`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use super::PatchError;

/// One step of a field path. The variant order is structured-merge-diff's sort order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathElement {
    /// A struct field or map key: `f:name`.
    Field(String),
    /// An item of a map list, by its key fields as compact JSON with sorted keys:
    /// `k:{"name":"app"}`.
    Key(String),
    /// An item of a set list, as compact JSON: `v:"example.com/finalizer"`.
    Value(String),
    /// A list position (lists without keys that are not atomic): `i:0`.
    Index(usize),
}

impl PathElement {
    /// The `fieldsV1` key (`f:`, `k:`, `v:` or `i:` prefix).
    pub fn encode(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(json) => format!("k:{json}"),
            PathElement::Value(json) => format!("v:{json}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `fieldsV1` key.
    ///
    /// # Errors
    /// [`PatchError::BadRequest`] for an unknown prefix.
    pub fn decode(key: &str) -> Result<PathElement, PatchError> {
        let bad = || PatchError::BadRequest(format!("invalid managedFields path element: {key}"));
        let (prefix, rest) = key.split_at_checked(2).ok_or_else(bad)?;
        Ok(match prefix {
            "f:" => PathElement::Field(rest.to_string()),
            "k:" => PathElement::Key(rest.to_string()),
            "v:" => PathElement::Value(rest.to_string()),
            "i:" => PathElement::Index(rest.parse().map_err(|_| bad())?),
            _ => return Err(bad()),
        })
    }
}

impl fmt::Display for PathElement {
    /// structured-merge-diff's `PathElement.String()`: `.name`, `[name="app"]`, `[="v"]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(json) => {
                let fields: Map<String, Value> = serde_json::from_str(json).unwrap_or_default();
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(json) => write!(f, "[={json}]"),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// Renders a path as structured-merge-diff prints it in conflict messages.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of paths as a tree: `members` are owned paths ending here, `children` continue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// True when no path is in the set.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// Adds one path (the empty path is ignored: the root is never owned).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether the exact path is a member.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.contains(rest)),
        }
    }

    /// The members directly under this node.
    pub fn members(&self) -> &BTreeSet<PathElement> {
        &self.members
    }

    /// The subtree under one element, if any.
    pub fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element)
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    /// Paths in `self` and not in `other` (path by path: a member of `other` does not
    /// remove the paths below it).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        out.members = self.members.difference(&other.members).cloned().collect();
        for (pe, child) in &self.children {
            let rest = match other.children.get(pe) {
                Some(theirs) => child.difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(pe.clone(), rest);
            }
        }
        out
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet::new();
        out.members = self.members.intersection(&other.members).cloned().collect();
        for (pe, child) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    out.children.insert(pe.clone(), both);
                }
            }
        }
        out
    }

    /// Every path, members of a node before the paths below its children, in sorted order
    /// (structured-merge-diff's `Set.Iterate`).
    pub fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(path);
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Encodes as `fieldsV1` JSON, keys in structured-merge-diff's order; a node that is
    /// both owned and has owned children carries `".": {}`.
    pub fn to_fields_v1(&self) -> Value {
        let mut elements: BTreeSet<&PathElement> = self.members.iter().collect();
        elements.extend(self.children.iter().filter(|(_, c)| !c.is_empty()).map(|(pe, _)| pe));
        let mut out = Map::new();
        for pe in elements {
            let mut node = match self.children.get(pe) {
                Some(child) if !child.is_empty() => match child.to_fields_v1() {
                    Value::Object(m) => m,
                    _ => Map::new(),
                },
                _ => Map::new(),
            };
            if self.members.contains(pe) && !node.is_empty() {
                let mut with_dot = Map::new();
                with_dot.insert(".".to_string(), Value::Object(Map::new()));
                with_dot.extend(node);
                node = with_dot;
            }
            out.insert(pe.encode(), Value::Object(node));
        }
        Value::Object(out)
    }

    /// Decodes `fieldsV1` JSON.
    ///
    /// # Errors
    /// [`PatchError::BadRequest`] when it is not an object tree of valid path elements.
    pub fn from_fields_v1(value: &Value) -> Result<FieldSet, PatchError> {
        let Value::Object(map) = value else {
            return Err(PatchError::BadRequest("managedFields fieldsV1 must be an object".to_string()));
        };
        let mut out = FieldSet::new();
        for (key, child) in map {
            if key == "." {
                continue;
            }
            let pe = PathElement::decode(key)?;
            let child_map = child.as_object();
            let is_leaf = child_map.is_none_or(|m| m.is_empty());
            let has_dot = child_map.is_some_and(|m| m.contains_key("."));
            if is_leaf || has_dot {
                out.members.insert(pe.clone());
            }
            if !is_leaf {
                let sub = FieldSet::from_fields_v1(child)?;
                if !sub.is_empty() {
                    out.children.insert(pe, sub);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    #[test]
    fn fields_v1_round_trips_with_dot_markers() {
        let v1 = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}, "f:replicas": {}}
        });
        let set = FieldSet::from_fields_v1(&v1).unwrap();
        assert!(set.contains(&[f("spec"), f("replicas")]));
        assert!(set.contains(&[f("spec"), f("containers"), PathElement::Key("{\"name\":\"app\"}".into())]));
        assert!(!set.contains(&[f("spec")]));
        assert_eq!(set.to_fields_v1(), v1);
    }

    #[test]
    fn set_algebra_is_path_by_path() {
        let mut a = FieldSet::new();
        a.insert(&[f("spec"), f("replicas")]);
        a.insert(&[f("spec"), f("paused")]);
        let mut b = FieldSet::new();
        b.insert(&[f("spec"), f("replicas")]);
        assert_eq!(a.difference(&b).paths(), vec![vec![f("spec"), f("paused")]]);
        assert_eq!(a.intersection(&b), b);
        assert_eq!(b.union(&a), a);
    }

    #[test]
    fn paths_print_like_structured_merge_diff() {
        let path = vec![f("spec"), f("containers"), PathElement::Key("{\"name\":\"app\"}".into()), f("image")];
        assert_eq!(path_string(&path), ".spec.containers[name=\"app\"].image");
        assert_eq!(
            path_string(&[f("metadata"), f("finalizers"), PathElement::Value("\"x\"".into())]),
            ".metadata.finalizers[=\"x\"]"
        );
    }
}
