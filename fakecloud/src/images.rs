//! AMIs and the public SSM parameters that resolve Karpenter's AMI aliases.
//!
//! Karpenter resolves `al2023@latest` through SSM
//! (`/aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<arch>/<variant>/recommended/image_id`)
//! and pinned versions through the versioned path. A scenario rolls the AMI forward with
//! [`Images::release`], which registers new images and repoints `recommended`, so nodes
//! launched before it drift.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::ids::IdGen;
use crate::tags::{Filter, Tags};

/// Owner id of Amazon's EKS-optimised AMIs.
pub const AMAZON_EKS_OWNER: &str = "602401143452";

/// One AMI.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// `ami-…`
    pub id: String,
    /// e.g. `amazon-eks-node-al2023-x86_64-standard-1.34-v20260101`.
    pub name: String,
    /// EC2 architecture: `x86_64` or `arm64`.
    pub architecture: String,
    /// Owner account.
    pub owner_id: String,
    /// When registered (simulated).
    pub created_at: Duration,
    /// `standard`, `nvidia`, `neuron`.
    pub variant: String,
    /// Release version, e.g. `v20260101`.
    pub version: String,
    /// Tags.
    pub tags: Tags,
    /// Set when deprecated (simulated time).
    pub deprecated_at: Option<Duration>,
}

impl Image {
    /// Whether the image passes every filter.
    pub fn matches(&self, filters: &[Filter]) -> bool {
        filters.iter().all(|f| {
            f.match_tags(&self.tags).unwrap_or_else(|| match f.name.as_str() {
                "image-id" => f.matches(&self.id),
                "name" => f.matches(&self.name),
                "architecture" => f.matches(&self.architecture),
                "owner-id" => f.matches(&self.owner_id),
                "state" => f.matches("available"),
                "image-type" => f.matches("machine"),
                "is-public" => f.matches("true"),
                _ => false,
            })
        })
    }
}

/// The AMI registry and the SSM parameter store.
#[derive(Debug, Clone, Default)]
pub struct Images {
    /// Images by id.
    pub images: BTreeMap<String, Image>,
    /// SSM parameters (path → value).
    pub parameters: BTreeMap<String, String>,
    kubernetes_version: String,
}

const VARIANTS: &[(&str, &str)] =
    &[("x86_64", "standard"), ("arm64", "standard"), ("x86_64", "nvidia"), ("arm64", "nvidia"), ("x86_64", "neuron")];

impl Images {
    pub(crate) fn new(kubernetes_version: &str) -> Self {
        Self { kubernetes_version: kubernetes_version.into(), ..Self::default() }
    }

    /// Registers AL2023 images of `version` for every architecture/variant and points the
    /// `recommended` SSM parameters at them. Returns the new image ids.
    pub(crate) fn release(&mut self, ids: &mut IdGen, version: &str, at: Duration) -> Vec<String> {
        let k8s = self.kubernetes_version.clone();
        let mut created = Vec::new();
        for (arch, variant) in VARIANTS {
            let id = ids.long("ami");
            let name = format!("amazon-eks-node-al2023-{arch}-{variant}-{k8s}-{version}");
            let base = format!("/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/{arch}/{variant}");
            self.parameters.insert(format!("{base}/recommended/image_id"), id.clone());
            self.parameters.insert(format!("{base}/{name}/image_id"), id.clone());
            self.images.insert(
                id.clone(),
                Image {
                    id: id.clone(),
                    name,
                    architecture: (*arch).to_string(),
                    owner_id: AMAZON_EKS_OWNER.into(),
                    created_at: at,
                    variant: (*variant).to_string(),
                    version: version.to_string(),
                    tags: Tags::new(),
                    deprecated_at: None,
                },
            );
            created.push(id);
        }
        created
    }

    /// Resolves an SSM parameter.
    pub fn parameter(&self, path: &str) -> Option<&str> {
        self.parameters.get(path).map(String::as_str)
    }
}
