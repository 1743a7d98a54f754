//! Resource quantities that remember whether they were written as a number or a string.
//!
//! Karpenter's ResourceList fields (`spec.limits`, NodeClaim `resources.requests`, status
//! `capacity`/`allocatable`/`resources`) are `x-kubernetes-int-or-string`. A user writes
//! `limits: {cpu: 100}` (a YAML integer). `k8s_openapi`'s `Quantity` accepts that but always
//! serializes a string, which would change the manifest on a round-trip, so this wrapper keeps
//! the original form.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A resource name to quantity map (Kubernetes `ResourceList`) with int-or-string values.
pub type ResourceList = BTreeMap<String, IntOrQuantity>;

/// A quantity such as `100`, `"100"`, `"1500m"` or `"16Gi"`, as written.
#[derive(Debug, Clone, PartialEq)]
pub enum IntOrQuantity {
    /// Written as a JSON/YAML integer, e.g. `cpu: 100`.
    Int(i64),
    /// Written as a string, e.g. `memory: 16Gi`.
    String(String),
}

impl IntOrQuantity {
    /// The quantity text (`"100"`, `"16Gi"`), whichever way it was written.
    pub fn as_text(&self) -> String {
        match self {
            Self::Int(value) => value.to_string(),
            Self::String(text) => text.clone(),
        }
    }

    /// The value as a `k8s_openapi` [`Quantity`], for code that works with core types.
    pub fn to_quantity(&self) -> Quantity {
        Quantity(self.as_text())
    }
}

impl From<Quantity> for IntOrQuantity {
    fn from(quantity: Quantity) -> Self {
        Self::String(quantity.0)
    }
}

impl From<i64> for IntOrQuantity {
    fn from(value: i64) -> Self {
        Self::Int(value)
    }
}

impl From<&str> for IntOrQuantity {
    fn from(text: &str) -> Self {
        Self::String(text.to_owned())
    }
}

impl fmt::Display for IntOrQuantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(value) => write!(f, "{value}"),
            Self::String(text) => f.write_str(text),
        }
    }
}

impl Serialize for IntOrQuantity {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Int(value) => serializer.serialize_i64(*value),
            Self::String(text) => serializer.serialize_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrQuantity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = IntOrQuantity;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or a quantity string")
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Self::Value, E> {
                Ok(IntOrQuantity::Int(value))
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Self::Value, E> {
                i64::try_from(value)
                    .map(IntOrQuantity::Int)
                    .map_err(|_| E::custom(format!("quantity {value} is out of range")))
            }
            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
                Ok(IntOrQuantity::String(value.to_owned()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl JsonSchema for IntOrQuantity {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IntOrQuantity".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [{ "type": "integer" }, { "type": "string" }],
            "x-kubernetes-int-or-string": true
        })
    }
    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_integer_and_string_forms() {
        let list: ResourceList =
            serde_json::from_value(serde_json::json!({"cpu": 100, "memory": "16Gi", "nodes": "10"})).unwrap();
        assert_eq!(list["cpu"], IntOrQuantity::Int(100));
        assert_eq!(list["memory"].as_text(), "16Gi");
        assert_eq!(
            serde_json::to_value(&list).unwrap(),
            serde_json::json!({"cpu": 100, "memory": "16Gi", "nodes": "10"})
        );
        assert_eq!(list["cpu"].to_quantity(), Quantity("100".to_owned()));
    }
}
