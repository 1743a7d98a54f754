//! The structural schema: one served version's `openAPIV3Schema`, parsed once into a typed tree
//! so admission never re-reads raw JSON.

use indexmap::IndexMap;
use serde_json::Value;

use super::cel::CelRule;
use super::path;
use super::pattern::Pattern;

/// OpenAPI `type` of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl Ty {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "object" => Self::Object,
            "array" => Self::Array,
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            _ => return None,
        })
    }

    /// The name kube-openapi and CEL errors use.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Object => "object",
            Self::Array => "array",
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
        }
    }
}

/// `x-kubernetes-list-type`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ListType {
    /// The default: the list is one value.
    Atomic,
    /// Scalars, each at most once.
    Set,
    /// Objects, unique by these keys (`x-kubernetes-list-map-keys`).
    Map(Vec<String>),
}

/// `additionalProperties`.
#[derive(Debug)]
pub(crate) enum Additional {
    /// Absent or `false`: only `properties` are known.
    None,
    /// `true`: any value under any key.
    Any,
    /// A schema for every value of a map.
    Schema(Box<Node>),
}

/// A numeric bound, keeping the JSON number for rendering (`greater than or equal to 1`).
#[derive(Clone, Debug)]
pub(crate) struct Bound {
    pub(crate) value: f64,
    pub(crate) number: serde_json::Number,
    pub(crate) exclusive: bool,
}

/// One schema node with every keyword admission uses.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) ty: Option<Ty>,
    pub(crate) nullable: bool,
    pub(crate) int_or_string: bool,
    pub(crate) preserve_unknown: bool,
    pub(crate) embedded_resource: bool,
    /// Declared properties, in schema order (which fixes error order).
    pub(crate) properties: IndexMap<String, Node>,
    pub(crate) additional: Additional,
    pub(crate) items: Option<Box<Node>>,
    pub(crate) required: Vec<String>,
    pub(crate) enum_values: Option<Vec<Value>>,
    pub(crate) pattern: Option<Pattern>,
    pub(crate) format: Option<String>,
    pub(crate) min_length: Option<u64>,
    pub(crate) max_length: Option<u64>,
    pub(crate) min_items: Option<u64>,
    pub(crate) max_items: Option<u64>,
    pub(crate) min_properties: Option<u64>,
    pub(crate) max_properties: Option<u64>,
    pub(crate) minimum: Option<Bound>,
    pub(crate) maximum: Option<Bound>,
    pub(crate) multiple_of: Option<Bound>,
    pub(crate) default: Option<Value>,
    pub(crate) list_type: ListType,
    pub(crate) all_of: Vec<Node>,
    pub(crate) any_of: Vec<Node>,
    pub(crate) one_of: Vec<Node>,
    pub(crate) not: Option<Box<Node>>,
    /// `x-kubernetes-validations` at this node, compiled.
    pub(crate) rules: Vec<CelRule>,
}

/// Schema nesting limit, so a hostile CRD cannot recurse us off the stack.
const DEPTH_MAX: usize = 64;

impl Node {
    /// Parses `schema` at `at` (a field path used only in problem messages). Every problem found
    /// is pushed to `problems`; the node is still built so that all problems surface at once.
    pub(crate) fn parse(schema: &Value, at: &str, problems: &mut Vec<String>) -> Node {
        Self::parse_at(schema, at, problems, 0)
    }

    fn parse_at(schema: &Value, at: &str, problems: &mut Vec<String>, depth: usize) -> Node {
        let mut node = Node::empty();
        let Some(obj) = schema.as_object() else {
            problems.push(format!("{at}: schema must be an object"));
            return node;
        };
        if depth > DEPTH_MAX {
            problems.push(format!("{at}: schema nesting deeper than {DEPTH_MAX}"));
            return node;
        }
        let flag = |k: &str| obj.get(k).and_then(Value::as_bool) == Some(true);
        let uint = |k: &str| obj.get(k).and_then(Value::as_u64);
        let bound = |k: &str, ex: &str| {
            obj.get(k).and_then(Value::as_number).map(|n| Bound {
                value: n.as_f64().unwrap_or(f64::NAN),
                number: n.clone(),
                exclusive: obj.get(ex).and_then(Value::as_bool) == Some(true),
            })
        };
        if let Some(t) = obj.get("type") {
            match t.as_str().and_then(Ty::parse) {
                Some(ty) => node.ty = Some(ty),
                None => problems.push(format!("{at}.type: Unsupported value: {t}")),
            }
        }
        node.nullable = flag("nullable");
        node.int_or_string = flag("x-kubernetes-int-or-string");
        node.preserve_unknown = flag("x-kubernetes-preserve-unknown-fields");
        node.embedded_resource = flag("x-kubernetes-embedded-resource");
        if node.ty.is_none() && !node.int_or_string && !node.preserve_unknown && depth > 0 {
            problems.push(format!("{at}.type: Required value: must not be empty for specified object fields"));
        }
        let next = depth + 1;
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                let child = Self::parse_at(sub, &path::child(at, &format!("properties[{name}]")), problems, next);
                node.properties.insert(name.clone(), child);
            }
        }
        node.additional = match obj.get("additionalProperties") {
            None | Some(Value::Bool(false)) => Additional::None,
            Some(Value::Bool(true)) => Additional::Any,
            Some(sub) => Additional::Schema(Box::new(Self::parse_at(
                sub,
                &path::child(at, "additionalProperties"),
                problems,
                next,
            ))),
        };
        if !node.properties.is_empty() && !matches!(node.additional, Additional::None) {
            problems.push(format!(
                "{at}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
            ));
        }
        if let Some(items) = obj.get("items") {
            node.items = Some(Box::new(Self::parse_at(items, &path::child(at, "items"), problems, next)));
        } else if node.ty == Some(Ty::Array) {
            problems.push(format!("{at}.items: Required value: must be specified"));
        }
        node.required = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        node.enum_values = obj.get("enum").and_then(Value::as_array).cloned();
        if let Some(p) = obj.get("pattern").and_then(Value::as_str) {
            match Pattern::compile(p) {
                Ok(pat) => node.pattern = Some(pat),
                Err(e) => problems.push(format!("{at}.pattern: Invalid value: {p:?}: {e}")),
            }
        }
        node.format = obj.get("format").and_then(Value::as_str).map(str::to_string);
        node.min_length = uint("minLength");
        node.max_length = uint("maxLength");
        node.min_items = uint("minItems");
        node.max_items = uint("maxItems");
        node.min_properties = uint("minProperties");
        node.max_properties = uint("maxProperties");
        node.minimum = bound("minimum", "exclusiveMinimum");
        node.maximum = bound("maximum", "exclusiveMaximum");
        node.multiple_of = bound("multipleOf", "");
        node.default = obj.get("default").cloned();
        node.list_type = match obj.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListType::Set,
            Some("map") => {
                let keys: Vec<String> = obj
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|k| k.iter().filter_map(Value::as_str).map(str::to_string).collect())
                    .unwrap_or_default();
                if keys.is_empty() {
                    problems.push(format!("{at}.x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"));
                }
                ListType::Map(keys)
            }
            Some("atomic") | None => ListType::Atomic,
            Some(other) => {
                problems.push(format!("{at}.x-kubernetes-list-type: Unsupported value: {other:?}"));
                ListType::Atomic
            }
        };
        for (key, list) in [("allOf", &mut node.all_of), ("anyOf", &mut node.any_of), ("oneOf", &mut node.one_of)] {
            if let Some(arr) = obj.get(key).and_then(Value::as_array) {
                for (i, sub) in arr.iter().enumerate() {
                    list.push(Self::parse_junctor(sub, &path::index(&path::child(at, key), i), problems, next));
                }
            }
        }
        if let Some(sub) = obj.get("not") {
            node.not = Some(Box::new(Self::parse_junctor(sub, &path::child(at, "not"), problems, next)));
        }
        node.rules = CelRule::compile_all(schema, at, problems);
        node
    }

    /// Parses a branch of `allOf`/`anyOf`/`oneOf`/`not`, where structural schemas allow value
    /// validations without `type`.
    fn parse_junctor(schema: &Value, at: &str, problems: &mut Vec<String>, depth: usize) -> Node {
        let mut local = Vec::new();
        let mut node = Self::parse_at(schema, at, &mut local, depth);
        // A missing `type` is fine inside a junctor; keep every other problem.
        local.retain(|p| !(p.starts_with(at) && p.contains(".type: Required value")));
        problems.append(&mut local);
        node.rules.clear();
        node
    }

    fn empty() -> Node {
        Node {
            ty: None,
            nullable: false,
            int_or_string: false,
            preserve_unknown: false,
            embedded_resource: false,
            properties: IndexMap::new(),
            additional: Additional::None,
            items: None,
            required: Vec::new(),
            enum_values: None,
            pattern: None,
            format: None,
            min_length: None,
            max_length: None,
            min_items: None,
            max_items: None,
            min_properties: None,
            max_properties: None,
            minimum: None,
            maximum: None,
            multiple_of: None,
            default: None,
            list_type: ListType::Atomic,
            all_of: Vec::new(),
            any_of: Vec::new(),
            one_of: Vec::new(),
            not: None,
            rules: Vec::new(),
        }
    }

    /// The type name CEL errors show as the bad value (`"object"`, `"array"`, ...).
    pub(crate) fn type_name(&self) -> &'static str {
        self.ty.map(Ty::name).unwrap_or("")
    }
}
