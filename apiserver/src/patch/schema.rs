//! What the patch engines need to know about a kind: how each list merges and which
//! objects are structs, maps or atomic.
//!
//! Built-in kinds carry apimachinery's Go struct tags (`patchStrategy`, `patchMergeKey`,
//! `+listType`, `+listMapKey`, `+mapType`, `+structType`), written out in
//! [`super::builtin`]. Custom resources carry their CRD's `openAPIV3Schema`
//! (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::Value;

/// How server-side apply merges a list (`x-kubernetes-list-type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// Replaced whole; owned as one field (the default).
    Atomic,
    /// A set of scalars; each item owned separately (`v:` path elements).
    Set,
    /// A list of objects identified by these key fields (`k:` path elements).
    Map(Vec<String>),
}

/// The shape of a node in the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// An object with named fields (a Go struct; CRD `properties`).
    Struct,
    /// An object with arbitrary keys and one value schema (labels, resource lists; CRD
    /// `additionalProperties`).
    Map,
    /// A list; see [`FieldSchema::list_type`].
    List,
    /// A string, number or boolean.
    Scalar,
    /// Not described: objects behave as structs, lists as atomic (built-in kinds, fields
    /// missing from the table).
    Unknown,
    /// Not described, schema deduced from the value as structured-merge-diff does for
    /// schemaless custom resources: objects behave as maps, lists as atomic.
    Deduced,
}

/// One node of a [`PatchSchema`].
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSchema {
    /// Struct, map, list, scalar or undescribed.
    pub shape: Shape,
    /// Named fields of a struct.
    pub fields: BTreeMap<String, FieldSchema>,
    /// Item schema of a list, value schema of a map.
    pub element: Option<Box<FieldSchema>>,
    /// Server-side apply list semantics.
    pub list_type: ListType,
    /// `x-kubernetes-map-type: atomic` / `+structType=atomic`: the object is replaced
    /// whole and owned as one field.
    pub atomic: bool,
    /// Strategic merge patch `patchStrategy:"merge"` on a list.
    pub patch_merge: bool,
    /// Strategic merge patch `patchMergeKey` of a merging list of objects.
    pub patch_merge_key: Option<String>,
    /// Strategic merge patch `patchStrategy:"replace"` on an object: the patch replaces it.
    pub patch_replace: bool,
    /// A default the apiserver fills in; used for list map keys such as a port's `protocol`.
    pub default: Option<Value>,
    /// The Go field has no `omitempty`, so the apiserver always sees it (as null) and a write
    /// that fills it does not own the field itself, only its contents (`PodSpec.containers`).
    pub always_present: bool,
}

static UNKNOWN: LazyLock<FieldSchema> = LazyLock::new(|| FieldSchema::of_shape(Shape::Unknown));
static DEDUCED: LazyLock<FieldSchema> = LazyLock::new(|| FieldSchema::of_shape(Shape::Deduced));

impl FieldSchema {
    fn of_shape(shape: Shape) -> FieldSchema {
        FieldSchema {
            shape,
            fields: BTreeMap::new(),
            element: None,
            list_type: ListType::Atomic,
            atomic: false,
            patch_merge: false,
            patch_merge_key: None,
            patch_replace: false,
            default: None,
            always_present: false,
        }
    }

    /// A string, number or boolean.
    pub fn scalar() -> FieldSchema {
        FieldSchema::of_shape(Shape::Scalar)
    }

    /// An undescribed node of a built-in kind.
    pub fn unknown() -> FieldSchema {
        FieldSchema::of_shape(Shape::Unknown)
    }

    /// An undescribed node of a schemaless custom resource.
    pub fn deduced() -> FieldSchema {
        FieldSchema::of_shape(Shape::Deduced)
    }

    /// A struct with these named fields.
    pub fn structure(fields: Vec<(&str, FieldSchema)>) -> FieldSchema {
        let mut s = FieldSchema::of_shape(Shape::Struct);
        s.fields = fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        s
    }

    /// A granular map (labels, annotations, resource lists).
    pub fn map_of(element: FieldSchema) -> FieldSchema {
        let mut s = FieldSchema::of_shape(Shape::Map);
        s.element = Some(Box::new(element));
        s
    }

    /// An atomic map of strings (`+mapType=atomic`, e.g. `spec.nodeSelector`).
    pub fn atomic_map() -> FieldSchema {
        let mut s = FieldSchema::map_of(FieldSchema::scalar());
        s.atomic = true;
        s
    }

    /// Marks a struct or map atomic (`+structType=atomic`).
    pub fn atomic(mut self) -> FieldSchema {
        self.atomic = true;
        self
    }

    /// An undescribed struct owned and applied whole (`+structType=atomic`, e.g.
    /// `ObjectReference`).
    pub fn atomic_struct(self) -> FieldSchema {
        let mut s = self;
        s.shape = Shape::Struct;
        s.atomic = true;
        s
    }

    /// An atomic list that strategic merge patch replaces.
    pub fn atomic_list(element: FieldSchema) -> FieldSchema {
        let mut s = FieldSchema::of_shape(Shape::List);
        s.element = Some(Box::new(element));
        s
    }

    /// A set of scalars: `+listType=set` and `patchStrategy:"merge"` (e.g. finalizers).
    pub fn set_list() -> FieldSchema {
        let mut s = FieldSchema::atomic_list(FieldSchema::scalar());
        s.list_type = ListType::Set;
        s.patch_merge = true;
        s
    }

    /// A list of objects merged by key: `+listType=map` with `keys` for server-side apply,
    /// and `patchStrategy:"merge"` with `patchMergeKey` = the first key for strategic merge.
    pub fn map_list(keys: &[&str], element: FieldSchema) -> FieldSchema {
        let mut s = FieldSchema::atomic_list(element);
        s.list_type = ListType::Map(keys.iter().map(|k| k.to_string()).collect());
        s.patch_merge = true;
        s.patch_merge_key = keys.first().map(|k| k.to_string());
        s
    }

    /// Overrides the strategic merge key where it differs from the first apply key.
    pub fn with_patch_merge_key(mut self, key: &str) -> FieldSchema {
        self.patch_merge_key = Some(key.to_string());
        self
    }

    /// Strategic merge patch replaces this object instead of merging it.
    pub fn replaced_by_patch(mut self) -> FieldSchema {
        self.patch_replace = true;
        self
    }

    /// Server-side apply treats this list as atomic although strategic merge patch merges it
    /// (e.g. a Job's `status.conditions`).
    pub fn applied_atomically(mut self) -> FieldSchema {
        self.list_type = ListType::Atomic;
        self
    }

    /// Marks a Go field without `omitempty` (see [`FieldSchema::always_present`]).
    pub fn always_present(mut self) -> FieldSchema {
        self.always_present = true;
        self
    }

    /// Sets the value the apiserver defaults this field to.
    pub fn with_default(mut self, default: Value) -> FieldSchema {
        self.default = Some(default);
        self
    }

    /// The schema of a named field or map value; undescribed children inherit
    /// [`Shape::Unknown`] or [`Shape::Deduced`].
    pub fn child(&self, name: &str) -> &FieldSchema {
        if let Some(field) = self.fields.get(name) {
            return field;
        }
        match (&self.element, self.shape) {
            (Some(element), Shape::Map) => element,
            (_, Shape::Deduced) => &DEDUCED,
            (_, Shape::Struct) if self.element.is_some() => self.element.as_deref().unwrap_or(&UNKNOWN),
            _ => &UNKNOWN,
        }
    }

    /// The schema of a list item.
    pub fn item(&self) -> &FieldSchema {
        match (&self.element, self.shape) {
            (Some(element), _) => element,
            (None, Shape::Deduced) => &DEDUCED,
            _ => &UNKNOWN,
        }
    }

    /// Whether `name` is a named field of a struct (not a map key). Structured-merge-diff
    /// owns map entries as fields in their own right, struct fields only through their leaves.
    pub fn declares(&self, name: &str) -> bool {
        match self.shape {
            Shape::Struct => self.fields.contains_key(name) || self.element.is_none(),
            Shape::Unknown => true,
            Shape::Map | Shape::Deduced | Shape::List | Shape::Scalar => false,
        }
    }

    /// The list semantics apply uses; undescribed lists are atomic.
    pub fn apply_list_type(&self) -> &ListType {
        &self.list_type
    }

    /// Builds a node from an OpenAPI v3 schema (a CRD version's `openAPIV3Schema`).
    pub fn from_openapi(schema: &Value) -> FieldSchema {
        let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties").filter(|v| v.is_object());
        let preserve = schema.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(true);
        let mut node = if ty == "array" {
            let item = schema.get("items").map(FieldSchema::from_openapi).unwrap_or_else(FieldSchema::deduced);
            let mut list = FieldSchema::atomic_list(item);
            match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => list.list_type = ListType::Set,
                Some("map") => {
                    let keys = schema
                        .get("x-kubernetes-list-map-keys")
                        .and_then(Value::as_array)
                        .map(|ks| ks.iter().filter_map(Value::as_str).map(str::to_string).collect())
                        .unwrap_or_default();
                    list.list_type = ListType::Map(keys);
                }
                _ => {}
            }
            list
        } else if let Some(properties) = properties {
            let mut s = FieldSchema::of_shape(Shape::Struct);
            s.fields = properties.iter().map(|(k, v)| (k.clone(), FieldSchema::from_openapi(v))).collect();
            if let Some(additional) = additional {
                s.element = Some(Box::new(FieldSchema::from_openapi(additional)));
            }
            s
        } else if let Some(additional) = additional {
            FieldSchema::map_of(FieldSchema::from_openapi(additional))
        } else if ty == "object" || preserve || schema.get("x-kubernetes-embedded-resource").is_some() {
            FieldSchema::deduced()
        } else {
            FieldSchema::scalar()
        };
        if schema.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") {
            node.atomic = true;
        }
        if let Some(default) = schema.get("default") {
            node.default = Some(default.clone());
        }
        node
    }
}
