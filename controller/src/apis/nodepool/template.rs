//! `spec.template` of a NodePool: the metadata and spec every NodeClaim of the pool starts from.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apis::duration::{GoDuration, NillableDuration};
use crate::apis::node_class_reference::NodeClassReference;
use crate::apis::nodeclaim::default_expire_after;
use crate::apis::requirements::NodeSelectorRequirementWithMinValues;

/// `spec.template`: metadata and spec copied onto every NodeClaim.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaimTemplate {
    /// Labels and annotations for the NodeClaim and its Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<NodeClaimTemplateMetadata>,
    /// The NodeClaim spec, without resource requests.
    pub spec: NodeClaimTemplateSpec,
}

/// `spec.template.metadata`: only labels and annotations are allowed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaimTemplateMetadata {
    /// Labels copied onto NodeClaims and Nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations copied onto NodeClaims and Nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// `spec.template.spec` (core `NodeClaimTemplateSpec`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaimTemplateSpec {
    /// Label requirements every node of this pool satisfies (at most 100).
    pub requirements: Vec<NodeSelectorRequirementWithMinValues>,
    /// The provider node class (an EC2NodeClass on AWS).
    pub node_class_ref: NodeClassReference,
    /// Taints put on the nodes; pods must tolerate them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<Taint>>,
    /// Taints expected to be removed by something else; pods need not tolerate them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_taints: Option<Vec<Taint>>,
    /// Node lifetime before forced expiration (`720h` by default, or `Never`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_after: Option<NillableDuration>,
    /// Maximum drain time once deletion starts; absent means wait forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period: Option<GoDuration>,
}

impl NodeClaimTemplateSpec {
    /// The effective `expireAfter` (the CRD default `720h` when absent).
    pub fn expire_after(&self) -> NillableDuration {
        self.expire_after.clone().unwrap_or_else(default_expire_after)
    }

    /// The taints, empty when absent.
    pub fn taints(&self) -> &[Taint] {
        self.taints.as_deref().unwrap_or_default()
    }

    /// The startup taints, empty when absent.
    pub fn startup_taints(&self) -> &[Taint] {
        self.startup_taints.as_deref().unwrap_or_default()
    }
}
