//! `nodeClassRef`: the reference from a NodePool template or a NodeClaim to the provider's node
//! class (an EC2NodeClass on AWS), shared by both kinds with the same schema and CEL rules.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::validation::{self, ValidationErrors};

/// A reference to the provider-specific node class (`group`, `kind`, `name`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeClassReference {
    /// API group, e.g. `karpenter.k8s.aws`. Immutable.
    pub group: String,
    /// Kind, e.g. `EC2NodeClass`. Immutable.
    pub kind: String,
    /// Name of the node class.
    pub name: String,
}

/// `nodeClassRef` rules: `group` matches `^[^/]*$`; CEL `self != ''` on group, kind and name.
pub(crate) fn validate_node_class_ref(errors: &mut ValidationErrors, path: &str, reference: &NodeClassReference) {
    errors.pattern(format!("{path}.group"), &reference.group, &validation::NODE_CLASS_GROUP);
    errors.rule(!reference.group.is_empty(), format!("{path}.group"), "group may not be empty");
    errors.rule(!reference.kind.is_empty(), format!("{path}.kind"), "kind may not be empty");
    errors.rule(!reference.name.is_empty(), format!("{path}.name"), "name may not be empty");
}
