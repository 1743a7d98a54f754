//! Karpenter's API types: NodePool, NodeClaim, EC2NodeClass (and the optional NodeOverlay).
//!
//! Start with [`NodePool`] (what may be launched), [`NodeClaim`] (one node being launched) and
//! [`EC2NodeClass`] (how to launch it on AWS). They are `kube::CustomResource` types carrying
//! every v1 field of the upstream CRDs (`../shared/data/crds/`), so Karpenter manifests
//! round-trip unchanged; optional fields stay `Option`, and defaults are applied explicitly with
//! `apply_defaults()` (what the API server does) or read through accessors such as
//! [`NodePoolSpec::budgets`]. Each kind has `validate()` porting the CRD's schema and CEL rules
//! with field-path messages, and NodePool has Karpenter's `runtime_validate()`.
//!
//! Supporting modules: [`labels`] (well-known labels, annotations, taints, finalizers and the
//! restricted-domain rules), [`requirements`] (requirements with `minValues`), [`duration`]
//! (Go durations and `Never`), [`quantity`] (int-or-string resource lists), [`condition`]
//! (status conditions and the Ready roll-up), [`cron`] (budget schedules), [`validation`]
//! (errors and shared rules), [`node_class_reference`] (the `nodeClassRef` NodePool templates
//! and NodeClaims share) and [`manifest`] (strict multi-document YAML loading).

#![warn(missing_docs)]

pub mod condition;
pub mod cron;
pub mod duration;
pub mod ec2nodeclass;
pub mod hash;
pub mod labels;
pub mod manifest;
pub mod node_class_reference;
pub mod nodeclaim;
pub mod nodeoverlay;
pub mod nodepool;
pub mod quantity;
pub mod requirements;
pub mod validation;

pub use condition::{Condition, ConditionStatus, StatusConditions};
pub use duration::{GoDuration, NillableDuration};
pub use ec2nodeclass::{AMIFamily, EC2NodeClass, EC2NodeClassSpec, EC2NodeClassStatus};
pub use manifest::{Manifest, ManifestError, parse_manifests};
pub use node_class_reference::NodeClassReference;
pub use nodeclaim::{NodeClaim, NodeClaimSpec, NodeClaimStatus};
pub use nodeoverlay::{NodeOverlay, NodeOverlaySpec, NodeOverlayStatus};
pub use nodepool::{
    Budget, BudgetNodes, ConsolidationPolicy, Disruption, DisruptionReason, NodeClaimTemplate, NodePool, NodePoolSpec,
    NodePoolStatus,
};
pub use quantity::{IntOrQuantity, ResourceList};
pub use requirements::{NodeSelectorOperator, NodeSelectorRequirementWithMinValues};
pub use validation::{FieldError, ValidationErrors};
