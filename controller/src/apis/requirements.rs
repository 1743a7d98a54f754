//! Node selector requirements with Karpenter's `minValues` extension.
//!
//! NodePool and NodeClaim requirements are Kubernetes `NodeSelectorRequirement`s plus an optional
//! `minValues` (core `NodeSelectorRequirementWithMinValues`): the minimum number of distinct
//! values of `key` that the instance types kept for a NodeClaim must span (for example "at least
//! 5 instance families" for spot flexibility).

use std::fmt;

use k8s_openapi::api::core::v1::NodeSelectorRequirement;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a requirement relates a label key to its values (the CRD's operator enum).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
pub enum NodeSelectorOperator {
    /// The label value is one of `values` (at least one value is required).
    In,
    /// The label value is none of `values`, or the label is absent.
    NotIn,
    /// The label is present with any value.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The label value, as an integer, is greater than the single value.
    Gt,
    /// The label value, as an integer, is less than the single value.
    Lt,
    /// The label value, as an integer, is greater than or equal to the single value.
    Gte,
    /// The label value, as an integer, is less than or equal to the single value.
    Lte,
}

impl NodeSelectorOperator {
    /// All operators, in the CRD's enum order.
    pub const ALL: [Self; 8] =
        [Self::Gte, Self::Lte, Self::In, Self::NotIn, Self::Exists, Self::DoesNotExist, Self::Gt, Self::Lt];

    /// The API spelling (`"In"`, `"Gte"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::In => "In",
            Self::NotIn => "NotIn",
            Self::Exists => "Exists",
            Self::DoesNotExist => "DoesNotExist",
            Self::Gt => "Gt",
            Self::Lt => "Lt",
            Self::Gte => "Gte",
            Self::Lte => "Lte",
        }
    }

    /// Parses the API spelling; `None` for anything else.
    pub fn from_api(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.as_str() == text)
    }

    /// Whether the operator compares a single integer value (`Gt`, `Lt`, `Gte`, `Lte`).
    pub fn is_numeric(self) -> bool {
        matches!(self, Self::Gt | Self::Lt | Self::Gte | Self::Lte)
    }
}

impl fmt::Display for NodeSelectorOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One requirement of a NodePool template or NodeClaim: `key operator values`, plus `minValues`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorRequirementWithMinValues {
    /// The label key the requirement applies to.
    pub key: String,
    /// How the key relates to `values`.
    pub operator: NodeSelectorOperator,
    /// Values for `In`/`NotIn` (non-empty for `In`), one integer for `Gt`/`Lt`/`Gte`/`Lte`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
    /// Minimum number of distinct values of `key` the chosen instance types must span (1–50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_values: Option<i64>,
}

impl NodeSelectorRequirementWithMinValues {
    /// A requirement without values or minValues (for `Exists`/`DoesNotExist`).
    pub fn new(key: impl Into<String>, operator: NodeSelectorOperator) -> Self {
        Self { key: key.into(), operator, values: None, min_values: None }
    }

    /// A requirement with the given values.
    pub fn with_values<I, S>(key: impl Into<String>, operator: NodeSelectorOperator, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self { key: key.into(), operator, values: Some(values.into_iter().map(Into::into).collect()), min_values: None }
    }

    /// Sets `minValues`.
    #[must_use]
    pub fn min_values(mut self, min_values: i64) -> Self {
        self.min_values = Some(min_values);
        self
    }

    /// The values, empty when absent.
    pub fn values(&self) -> &[String] {
        self.values.as_deref().unwrap_or_default()
    }

    /// The plain Kubernetes requirement (drops `minValues`), e.g. for a Node's affinity.
    pub fn to_node_selector_requirement(&self) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: self.key.clone(),
            operator: self.operator.as_str().to_owned(),
            values: self.values.clone(),
        }
    }
}

impl TryFrom<NodeSelectorRequirement> for NodeSelectorRequirementWithMinValues {
    type Error = String;
    /// Converts a pod's node-affinity requirement; fails on an operator Karpenter does not know.
    fn try_from(requirement: NodeSelectorRequirement) -> Result<Self, Self::Error> {
        let operator = NodeSelectorOperator::from_api(&requirement.operator)
            .ok_or_else(|| format!("unsupported operator {:?}", requirement.operator))?;
        Ok(Self { key: requirement.key, operator, values: requirement.values, min_values: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deserializes_exists_with_min_values_and_no_values() {
        let requirement: NodeSelectorRequirementWithMinValues = serde_json::from_value(
            serde_json::json!({"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 5}),
        )
        .unwrap();
        assert_eq!(requirement.operator, NodeSelectorOperator::Exists);
        assert_eq!(requirement.min_values, Some(5));
        assert!(requirement.values().is_empty());
    }

    #[test]
    fn unknown_operator_fails_with_the_supported_set() {
        let err = serde_json::from_value::<NodeSelectorRequirementWithMinValues>(
            serde_json::json!({"key": "a", "operator": "Contains"}),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("unknown variant `Contains`"), "{err}");
        assert!(err.contains("Gte"), "{err}");
    }

    #[test]
    fn converts_to_and_from_core_requirements() {
        let requirement = NodeSelectorRequirementWithMinValues::with_values(
            "kubernetes.io/arch",
            NodeSelectorOperator::In,
            ["amd64"],
        )
        .min_values(1);
        let core = requirement.to_node_selector_requirement();
        assert_eq!(core.operator, "In");
        let back = NodeSelectorRequirementWithMinValues::try_from(core).unwrap();
        assert_eq!(back.min_values, None);
        assert_eq!(back.values(), ["amd64".to_owned()]);
    }
}
