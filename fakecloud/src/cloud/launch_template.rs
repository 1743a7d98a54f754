//! Launch templates: the per-NodeClass launch parameters Karpenter creates and reuses.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::tags::{Filter, Tags};

/// One launch template (the fake keeps a single version).
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchTemplate {
    /// `lt-…`
    pub id: String,
    /// Unique name, e.g. `karpenter.k8s.aws/123…`.
    pub name: String,
    /// When created (simulated).
    pub created_at: Duration,
    /// `LaunchTemplateData.ImageId`.
    pub image_id: Option<String>,
    /// `LaunchTemplateData.InstanceType`.
    pub instance_type: Option<String>,
    /// `LaunchTemplateData.SecurityGroupId.N`.
    pub security_group_ids: Vec<String>,
    /// `LaunchTemplateData.UserData` (base64, kept verbatim).
    pub user_data: Option<String>,
    /// Tags on the template itself.
    pub tags: Tags,
    /// Tags the template applies to instances it launches.
    pub instance_tags: Tags,
    /// Every `LaunchTemplateData.*` parameter as sent, for inspection by tests.
    pub data: BTreeMap<String, String>,
}

impl LaunchTemplate {
    /// Whether the template passes every filter.
    pub fn matches(&self, filters: &[Filter]) -> bool {
        filters.iter().all(|f| {
            f.match_tags(&self.tags).unwrap_or_else(|| match f.name.as_str() {
                "launch-template-name" => f.matches(&self.name),
                "launch-template-id" => f.matches(&self.id),
                _ => false,
            })
        })
    }
}

/// What CreateLaunchTemplate receives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaunchTemplateSpec {
    /// Name (required, unique).
    pub name: String,
    /// AMI.
    pub image_id: Option<String>,
    /// Instance type.
    pub instance_type: Option<String>,
    /// Security groups.
    pub security_group_ids: Vec<String>,
    /// User data.
    pub user_data: Option<String>,
    /// Tags for the template (`TagSpecification` with ResourceType `launch-template`).
    pub tags: Tags,
    /// Instance tags from `LaunchTemplateData.TagSpecification`.
    pub instance_tags: Tags,
    /// Raw `LaunchTemplateData.*` parameters.
    pub data: BTreeMap<String, String>,
}

/// A reference to a launch template by id or name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchTemplateRef {
    /// `LaunchTemplateId`.
    Id(String),
    /// `LaunchTemplateName`.
    Name(String),
}
