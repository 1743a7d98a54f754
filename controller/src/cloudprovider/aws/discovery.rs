//! Resolving an EC2NodeClass's selector terms to concrete subnets, security groups and AMIs
//! (aws:pkg/providers/{subnet,securitygroup,amifamily}). Terms are ORed; within a term every
//! field must match. Results are sorted so the status (and everything keyed on it) is stable.

use std::collections::BTreeMap;

use aws_sdk_ec2::types::Filter;
use k8s_openapi::api::core::v1::NodeSelectorRequirement;

use crate::apis::ec2nodeclass::{
    AMI, EC2NodeClassSpec, SecurityGroup, SecurityGroupSelectorTerm, Subnet, SubnetSelectorTerm,
};
use crate::apis::labels;
use crate::cloudprovider::CloudError;
use crate::cloudprovider::aws::errors::classify;

/// A subnet with the free addresses the launch path balances on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveredSubnet {
    /// ID, zone and zone ID as the status shows them.
    pub subnet: Subnet,
    /// `AvailableIpAddressCount`.
    pub available_ips: i64,
}

/// Tag filters: `key=*` matches any value (tag-key), otherwise `tag:key=value`.
fn tag_filters(tags: &BTreeMap<String, String>) -> Vec<Filter> {
    tags.iter()
        .map(|(key, value)| {
            if value == "*" {
                Filter::builder().name("tag-key").values(key).build()
            } else {
                Filter::builder().name(format!("tag:{key}")).values(value).build()
            }
        })
        .collect()
}

/// Subnets matching any term, sorted by zone then ID.
///
/// # Errors
/// The EC2 error.
pub async fn subnets(
    ec2: &aws_sdk_ec2::Client,
    terms: &[SubnetSelectorTerm],
) -> Result<Vec<DiscoveredSubnet>, CloudError> {
    let mut found: BTreeMap<String, DiscoveredSubnet> = BTreeMap::new();
    for term in terms {
        let mut filters = tag_filters(term.tags.as_ref().unwrap_or(&BTreeMap::new()));
        if let Some(id) = &term.id {
            filters.push(Filter::builder().name("subnet-id").values(id).build());
        }
        let output = ec2.describe_subnets().set_filters(Some(filters)).send().await.map_err(|e| classify(&e))?;
        for subnet in output.subnets() {
            let (Some(id), Some(zone)) = (subnet.subnet_id(), subnet.availability_zone()) else { continue };
            found.insert(
                id.to_owned(),
                DiscoveredSubnet {
                    subnet: Subnet {
                        id: id.to_owned(),
                        zone: zone.to_owned(),
                        zone_id: subnet.availability_zone_id().map(str::to_owned),
                    },
                    available_ips: i64::from(subnet.available_ip_address_count().unwrap_or(0)),
                },
            );
        }
    }
    let mut subnets: Vec<DiscoveredSubnet> = found.into_values().collect();
    subnets.sort_by(|a, b| a.subnet.zone.cmp(&b.subnet.zone).then_with(|| a.subnet.id.cmp(&b.subnet.id)));
    Ok(subnets)
}

/// Security groups matching any term, sorted by ID.
///
/// # Errors
/// The EC2 error.
pub async fn security_groups(
    ec2: &aws_sdk_ec2::Client,
    terms: &[SecurityGroupSelectorTerm],
) -> Result<Vec<SecurityGroup>, CloudError> {
    let mut found: BTreeMap<String, SecurityGroup> = BTreeMap::new();
    for term in terms {
        let mut filters = tag_filters(term.tags.as_ref().unwrap_or(&BTreeMap::new()));
        if let Some(id) = &term.id {
            filters.push(Filter::builder().name("group-id").values(id).build());
        }
        if let Some(name) = &term.name {
            filters.push(Filter::builder().name("group-name").values(name).build());
        }
        let output =
            ec2.describe_security_groups().set_filters(Some(filters)).send().await.map_err(|e| classify(&e))?;
        for group in output.security_groups() {
            let Some(id) = group.group_id() else { continue };
            found.insert(
                id.to_owned(),
                SecurityGroup { id: id.to_owned(), name: group.group_name().map(str::to_owned) },
            );
        }
    }
    Ok(found.into_values().collect())
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.to_owned(),
        operator: operator.to_owned(),
        values: if values.is_empty() { None } else { Some(values.iter().map(|v| (*v).to_owned()).collect()) },
    }
}

/// One SSM parameter an alias resolves through, and the instance types its image serves.
#[derive(Clone, Debug, PartialEq)]
pub struct AliasParameter {
    /// The SSM parameter path.
    pub path: String,
    /// Requirements the image's instance types must meet.
    pub requirements: Vec<NodeSelectorRequirement>,
}

/// The SSM parameters behind an alias (`al2023@latest`, `al2023@v20240807`, `al2@latest`,
/// `bottlerocket@latest`) for Kubernetes `k8s_version`.
///
/// # Errors
/// An alias family this controller cannot resolve.
pub fn alias_parameters(family: &str, version: &str, k8s_version: &str) -> Result<Vec<AliasParameter>, String> {
    let arches = [("x86_64", labels::ARCHITECTURE_AMD64), ("arm64", labels::ARCHITECTURE_ARM64)];
    let mut parameters = Vec::new();
    match family {
        "al2023" => {
            for (arch, label) in arches {
                for (variant, gpu) in [("standard", "DoesNotExist"), ("nvidia", "Exists")] {
                    let leaf = if version == "latest" {
                        "recommended".to_owned()
                    } else {
                        format!("amazon-eks-node-al2023-{arch}-{variant}-{k8s_version}-{version}")
                    };
                    parameters.push(AliasParameter {
                        path: format!(
                            "/aws/service/eks/optimized-ami/{k8s_version}/amazon-linux-2023/{arch}/{variant}/{leaf}/image_id"
                        ),
                        requirements: vec![
                            requirement(labels::ARCH_LABEL, "In", &[label]),
                            requirement(labels::INSTANCE_GPU_COUNT_LABEL, gpu, &[]),
                        ],
                    });
                }
            }
        }
        "al2" => {
            for (suffix, label, gpu) in [
                ("", labels::ARCHITECTURE_AMD64, "DoesNotExist"),
                ("-arm64", labels::ARCHITECTURE_ARM64, "DoesNotExist"),
                ("-gpu", labels::ARCHITECTURE_AMD64, "Exists"),
            ] {
                let leaf = if version == "latest" {
                    "recommended".to_owned()
                } else {
                    format!("amazon-eks{suffix}-node-{k8s_version}-{version}")
                };
                parameters.push(AliasParameter {
                    path: format!(
                        "/aws/service/eks/optimized-ami/{k8s_version}/amazon-linux-2{suffix}/{leaf}/image_id"
                    ),
                    requirements: vec![
                        requirement(labels::ARCH_LABEL, "In", &[label]),
                        requirement(labels::INSTANCE_GPU_COUNT_LABEL, gpu, &[]),
                    ],
                });
            }
        }
        "bottlerocket" => {
            let leaf =
                if version == "latest" { "latest".to_owned() } else { version.trim_start_matches('v').to_owned() };
            for (arch, label) in arches {
                parameters.push(AliasParameter {
                    path: format!("/aws/service/bottlerocket/aws-k8s-{k8s_version}/{arch}/{leaf}/image_id"),
                    requirements: vec![requirement(labels::ARCH_LABEL, "In", &[label])],
                });
            }
        }
        other => return Err(format!("AMI alias family {other:?} is not supported (al2023, al2, bottlerocket)")),
    }
    Ok(parameters)
}

fn architecture_label(ec2_architecture: &str) -> Option<&'static str> {
    match ec2_architecture {
        "x86_64" => Some(labels::ARCHITECTURE_AMD64),
        "arm64" => Some(labels::ARCHITECTURE_ARM64),
        _ => None,
    }
}

/// The AMIs the class's `amiSelectorTerms` select: alias terms through SSM, other terms through
/// `DescribeImages` (newest image per architecture wins, as Karpenter orders them). Sorted by
/// ID within requirement order so the status is stable.
///
/// # Errors
/// The AWS error, or an alias that cannot be resolved.
pub async fn amis(
    ec2: &aws_sdk_ec2::Client,
    ssm: &aws_sdk_ssm::Client,
    spec: &EC2NodeClassSpec,
    k8s_version: &str,
) -> Result<Vec<AMI>, CloudError> {
    if let Some((family, version)) = spec.alias() {
        let parameters = alias_parameters(family, version, k8s_version).map_err(CloudError::NodeClassNotReady)?;
        let mut amis = Vec::new();
        for parameter in parameters {
            let output = match ssm.get_parameter().name(&parameter.path).send().await {
                Ok(output) => output,
                // A variant that does not exist in this region (GPU AMIs) just serves no types.
                Err(error) if aws_sdk_ssm::error::ProvideErrorMetadata::code(&error) == Some("ParameterNotFound") => {
                    continue;
                }
                Err(error) => {
                    let code = aws_sdk_ssm::error::ProvideErrorMetadata::code(&error).unwrap_or("SSMError").to_owned();
                    return Err(CloudError::other(code, format!("{}: {error}", parameter.path)));
                }
            };
            let Some(id) = output.parameter().and_then(|p| p.value()) else { continue };
            amis.push(AMI { id: id.to_owned(), deprecated: None, name: None, requirements: parameter.requirements });
        }
        return Ok(amis);
    }
    // Newest image per (architecture) across all terms.
    let mut newest: BTreeMap<&'static str, (String, String, String, bool)> = BTreeMap::new();
    for term in &spec.ami_selector_terms {
        let mut request = ec2.describe_images();
        let mut filters = tag_filters(term.tags.as_ref().unwrap_or(&BTreeMap::new()));
        if let Some(id) = &term.id {
            request = request.image_ids(id);
        }
        if let Some(name) = &term.name {
            filters.push(Filter::builder().name("name").values(name).build());
        }
        if let Some(owner) = &term.owner {
            request = request.owners(owner);
        }
        if let Some(path) = &term.ssm_parameter {
            let output = ssm.get_parameter().name(path).send().await.map_err(|error| {
                let code = aws_sdk_ssm::error::ProvideErrorMetadata::code(&error).unwrap_or("SSMError").to_owned();
                CloudError::other(code, format!("{path}: {error}"))
            })?;
            let id = output.parameter().and_then(|p| p.value()).unwrap_or_default().to_owned();
            request = request.image_ids(id);
        }
        let output = request.set_filters(Some(filters)).send().await.map_err(|e| classify(&e))?;
        for image in output.images() {
            let (Some(id), Some(arch)) =
                (image.image_id(), image.architecture().and_then(|a| architecture_label(a.as_str())))
            else {
                continue;
            };
            let created = image.creation_date().unwrap_or_default().to_owned();
            let deprecated = image.deprecation_time().is_some();
            let entry = (created.clone(), id.to_owned(), image.name().unwrap_or_default().to_owned(), deprecated);
            if newest.get(arch).is_none_or(|seen| (&seen.0, &seen.1) < (&entry.0, &entry.1)) {
                newest.insert(arch, entry);
            }
        }
    }
    Ok(newest
        .into_iter()
        .map(|(arch, (_, id, name, deprecated))| AMI {
            id,
            deprecated: deprecated.then_some(true),
            name: (!name.is_empty()).then_some(name),
            requirements: vec![requirement(labels::ARCH_LABEL, "In", &[arch])],
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn al2023_latest_resolves_through_recommended_parameters() {
        let parameters = alias_parameters("al2023", "latest", "1.34").expect("supported");
        assert_eq!(parameters.len(), 4);
        assert_eq!(
            parameters[0].path,
            "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id"
        );
        assert_eq!(parameters[0].requirements[0].values.as_deref(), Some(&["amd64".to_owned()][..]));
    }

    #[test]
    fn pinned_al2023_versions_use_the_versioned_parameter() {
        let parameters = alias_parameters("al2023", "v20240807", "1.34").expect("supported");
        assert!(parameters[0].path.ends_with("/amazon-eks-node-al2023-x86_64-standard-1.34-v20240807/image_id"));
    }

    #[test]
    fn unknown_alias_families_are_named() {
        let error = alias_parameters("windows2019", "latest", "1.34").unwrap_err();
        assert!(error.contains("windows2019"), "{error}");
    }

    #[test]
    fn wildcard_tags_become_tag_key_filters() {
        let filters = tag_filters(&BTreeMap::from([
            ("karpenter.sh/discovery".to_owned(), "dovetail".to_owned()),
            ("team".to_owned(), "*".to_owned()),
        ]));
        assert_eq!(filters[0].name(), Some("tag:karpenter.sh/discovery"));
        assert_eq!(filters[1].name(), Some("tag-key"));
        assert_eq!(filters[1].values(), ["team".to_owned()]);
    }
}
