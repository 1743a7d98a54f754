//! The EC2NodeClass CRD's schema constraints and CEL rules, ported rule by rule.
//!
//! Each function covers one field of `karpenter.k8s.aws_ec2nodeclasses.yaml` and cites the CEL
//! expressions it implements. Quirks of the upstream rules (`!self.all(...)` where `exists` was
//! probably meant) are kept, because the API server enforces them as written.

use std::collections::BTreeMap;

use super::{
    ALIAS_FAMILIES, AMIFamily, AMISelectorTerm, BlockDeviceMapping, CapacityReservationSelectorTerm,
    ConnectionTracking, EC2NodeClassSpec, EC2NodeClassStatus, EVICTION_SIGNALS, InterfaceType, KubeletConfiguration,
    NetworkInterface, PlacementGroupSelector, RESERVED_RESOURCES, SecurityGroupSelectorTerm, SubnetSelectorTerm,
};
use crate::apis::labels;
use crate::apis::validation::{self, ValidationErrors};

/// CEL on `amiSelectorTerms[].tags`, `subnetSelectorTerms[].tags`, ...:
/// `self.all(k, k != '' && self[k] != '')`, plus `maxProperties: 20`.
fn validate_selector_tags(errors: &mut ValidationErrors, path: &str, tags: &BTreeMap<String, String>) {
    if tags.len() > 20 {
        errors.push(path, format!("Too many: {}: must have at most 20 items", tags.len()));
    }
    errors.rule(
        tags.iter().all(|(k, v)| !k.is_empty() && !v.is_empty()),
        path,
        "empty tag keys or values aren't supported",
    );
}

/// `amiSelectorTerms`: minItems 1, maxItems 30, per-term alias rules, id pattern, tags, and the
/// list CEL rules (each cited inline).
pub(super) fn validate_ami_selector_terms(errors: &mut ValidationErrors, terms: &[AMISelectorTerm]) {
    let path = "spec.amiSelectorTerms";
    if terms.is_empty() {
        errors.push(path, "Invalid value: 0: should have at least 1 items");
    }
    errors.max_items(path, terms.len(), 30);
    for (i, term) in terms.iter().enumerate() {
        let item = format!("{path}[{i}]");
        if let Some(alias) = &term.alias {
            let alias_path = format!("{item}.alias");
            errors.max_length(alias_path.clone(), alias, 30);
            // CEL: self.matches('^[a-zA-Z0-9]+@.+$')
            errors.rule(
                validation::AMI_ALIAS.is_match(alias),
                alias_path.clone(),
                "'alias' is improperly formatted, must match the format 'family@version'",
            );
            // CEL: self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']
            let mut parts = alias.split('@');
            let family = parts.next().unwrap_or_default();
            errors.rule(
                ALIAS_FAMILIES.contains(&family),
                alias_path.clone(),
                "family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",
            );
            // CEL: self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? self.split('@')[1] == 'latest' : true
            if family.starts_with("windows") && ALIAS_FAMILIES.contains(&family) {
                errors.rule(
                    parts.next() == Some("latest"),
                    alias_path,
                    "windows families may only specify version 'latest'",
                );
            }
        }
        if let Some(id) = &term.id {
            errors.pattern(format!("{item}.id"), id, &validation::AMI_ID);
        }
        if let Some(tags) = &term.tags {
            validate_selector_tags(errors, &format!("{item}.tags"), tags);
        }
        // CEL: self.all(x, has(x.tags) || has(x.id) || has(x.name) || has(x.alias) || has(x.ssmParameter))
        errors.rule(
            term.tags.is_some()
                || term.id.is_some()
                || term.name.is_some()
                || term.alias.is_some()
                || term.ssm_parameter.is_some(),
            item.clone(),
            "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']",
        );
        // CEL: !self.exists(x, has(x.id) && (has(x.alias) || has(x.tags) || has(x.name) || has(x.owner)))
        errors.rule(
            !(term.id.is_some()
                && (term.alias.is_some() || term.tags.is_some() || term.name.is_some() || term.owner.is_some())),
            item.clone(),
            "'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",
        );
        // CEL: !self.exists(x, has(x.alias) && (has(x.id) || has(x.tags) || has(x.name) || has(x.owner)))
        errors.rule(
            !(term.alias.is_some()
                && (term.id.is_some() || term.tags.is_some() || term.name.is_some() || term.owner.is_some())),
            item,
            "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",
        );
    }
    // CEL: !(self.exists(x, has(x.alias)) && self.size() != 1)
    errors.rule(
        !(terms.iter().any(|t| t.alias.is_some()) && terms.len() != 1),
        path,
        "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
    );
}

/// `subnetSelectorTerms`: maxItems 30, id pattern, tags, and the CEL rules. Note the upstream
/// exclusivity rule uses `!self.all(...)`, so it only fails when *every* term sets both `id` and
/// `tags`; this port keeps that behaviour.
pub(super) fn validate_subnet_selector_terms(errors: &mut ValidationErrors, terms: &[SubnetSelectorTerm]) {
    let path = "spec.subnetSelectorTerms";
    errors.max_items(path, terms.len(), 30);
    // CEL: self.size() != 0
    errors.rule(!terms.is_empty(), path, "subnetSelectorTerms cannot be empty");
    for (i, term) in terms.iter().enumerate() {
        let item = format!("{path}[{i}]");
        if let Some(id) = &term.id {
            errors.pattern(format!("{item}.id"), id, &validation::SUBNET_ID);
        }
        if let Some(tags) = &term.tags {
            validate_selector_tags(errors, &format!("{item}.tags"), tags);
        }
        // CEL: self.all(x, has(x.tags) || has(x.id))
        errors.rule(term.tags.is_some() || term.id.is_some(), item, "expected at least one, got none, ['tags', 'id']");
    }
    // CEL: !self.all(x, has(x.id) && has(x.tags))
    if !terms.is_empty() {
        errors.rule(
            !terms.iter().all(|t| t.id.is_some() && t.tags.is_some()),
            path,
            "'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term",
        );
    }
}

/// `securityGroupSelectorTerms`: maxItems 30, id pattern, tags, and the CEL rules (the two
/// exclusivity rules use `!self.all(...)` upstream, kept as is).
pub(super) fn validate_security_group_selector_terms(
    errors: &mut ValidationErrors,
    terms: &[SecurityGroupSelectorTerm],
) {
    let path = "spec.securityGroupSelectorTerms";
    errors.max_items(path, terms.len(), 30);
    // CEL: self.size() != 0
    errors.rule(!terms.is_empty(), path, "securityGroupSelectorTerms cannot be empty");
    for (i, term) in terms.iter().enumerate() {
        let item = format!("{path}[{i}]");
        if let Some(id) = &term.id {
            errors.pattern(format!("{item}.id"), id, &validation::SECURITY_GROUP_ID);
        }
        if let Some(tags) = &term.tags {
            validate_selector_tags(errors, &format!("{item}.tags"), tags);
        }
        // CEL: self.all(x, has(x.tags) || has(x.id) || has(x.name))
        errors.rule(
            term.tags.is_some() || term.id.is_some() || term.name.is_some(),
            item,
            "expected at least one, got none, ['tags', 'id', 'name']",
        );
    }
    if !terms.is_empty() {
        // CEL: !self.all(x, has(x.id) && (has(x.tags) || has(x.name)))
        errors.rule(
            !terms.iter().all(|t| t.id.is_some() && (t.tags.is_some() || t.name.is_some())),
            path,
            "'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term",
        );
        // CEL: !self.all(x, has(x.name) && (has(x.tags) || has(x.id)))
        errors.rule(
            !terms.iter().all(|t| t.name.is_some() && (t.tags.is_some() || t.id.is_some())),
            path,
            "'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term",
        );
    }
}

/// `capacityReservationSelectorTerms`: maxItems 30, id/ownerID patterns, tags, and the CEL rules.
/// The exclusivity rule is `!self.all(x, has(x.id) && (...))` upstream; on an empty list `all`
/// is true, so the API server rejects `capacityReservationSelectorTerms: []`, and so do we.
pub(super) fn validate_capacity_reservation_selector_terms(
    errors: &mut ValidationErrors,
    terms: &[CapacityReservationSelectorTerm],
) {
    let path = "spec.capacityReservationSelectorTerms";
    errors.max_items(path, terms.len(), 30);
    for (i, term) in terms.iter().enumerate() {
        let item = format!("{path}[{i}]");
        if let Some(id) = &term.id {
            errors.pattern(format!("{item}.id"), id, &validation::CAPACITY_RESERVATION_ID);
        }
        if let Some(owner) = &term.owner_id {
            errors.pattern(format!("{item}.ownerID"), owner, &validation::OWNER_ID);
        }
        if let Some(tags) = &term.tags {
            validate_selector_tags(errors, &format!("{item}.tags"), tags);
        }
        // CEL: self.all(x, has(x.tags) || has(x.id) || has(x.instanceMatchCriteria))
        errors.rule(
            term.tags.is_some() || term.id.is_some() || term.instance_match_criteria.is_some(),
            item,
            "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']",
        );
    }
    // CEL: !self.all(x, has(x.id) && (has(x.tags) || has(x.ownerID) || has(x.instanceMatchCriteria)))
    errors.rule(
        !terms.iter().all(|t| {
            t.id.is_some() && (t.tags.is_some() || t.owner_id.is_some() || t.instance_match_criteria.is_some())
        }),
        path,
        "'id' is mutually exclusive, cannot be set along with other fields in a capacity reservation selector term",
    );
}

/// `placementGroupSelector`: id pattern, name minLength 1, and CEL
/// `has(self.name) || has(self.id)` and `!(has(self.name) && has(self.id))`.
pub(super) fn validate_placement_group_selector(errors: &mut ValidationErrors, selector: &PlacementGroupSelector) {
    let path = "spec.placementGroupSelector";
    if let Some(id) = &selector.id {
        errors.pattern(format!("{path}.id"), id, &validation::PLACEMENT_GROUP_ID);
    }
    if selector.name.as_deref() == Some("") {
        errors.push(format!("{path}.name"), "Invalid value: \"\": should be at least 1 chars long");
    }
    errors.rule(
        selector.name.is_some() || selector.id.is_some(),
        path,
        "expected at least one, got none, ['name', 'id']",
    );
    errors.rule(!(selector.name.is_some() && selector.id.is_some()), path, "'name' and 'id' are mutually exclusive");
}

/// `role`/`instanceProfile`: CEL `self != ''` on each, and on the spec
/// `(has(self.role) && !has(self.instanceProfile)) || (!has(self.role) && has(self.instanceProfile))`.
pub(super) fn validate_role_and_profile(errors: &mut ValidationErrors, spec: &EC2NodeClassSpec) {
    if let Some(role) = &spec.role {
        errors.rule(!role.is_empty(), "spec.role", "role cannot be empty");
    }
    if let Some(profile) = &spec.instance_profile {
        errors.rule(!profile.is_empty(), "spec.instanceProfile", "instanceProfile cannot be empty");
    }
    errors.rule(
        spec.role.is_some() != spec.instance_profile.is_some(),
        "spec",
        "must specify exactly one of ['role', 'instanceProfile']",
    );
}

/// Spec-level amiFamily rules: with an alias of family F, `amiFamily` (if set) must be F or
/// `Custom` (six CEL rules of the form `!has(self.amiFamily) || (self.amiSelectorTerms.exists(x,
/// has(x.alias) && x.alias.find('^[^@]+') == 'al2') ? (self.amiFamily == 'Custom' ||
/// self.amiFamily == 'AL2') : true)`); and `self.amiSelectorTerms.exists(x, has(x.alias)) ? true
/// : has(self.amiFamily)`.
pub(super) fn validate_ami_family(errors: &mut ValidationErrors, spec: &EC2NodeClassSpec) {
    let alias_families: Vec<&str> = spec
        .ami_selector_terms
        .iter()
        .filter_map(|term| term.alias.as_deref())
        .map(|alias| alias.split('@').next().unwrap_or_default())
        .collect();
    if let Some(family) = spec.ami_family {
        for (alias_family, family_name) in [
            ("al2", AMIFamily::AL2),
            ("al2023", AMIFamily::AL2023),
            ("bottlerocket", AMIFamily::Bottlerocket),
            ("windows2019", AMIFamily::Windows2019),
            ("windows2022", AMIFamily::Windows2022),
            ("windows2025", AMIFamily::Windows2025),
        ] {
            if alias_families.contains(&alias_family) {
                errors.rule(
                    family == AMIFamily::Custom || family == family_name,
                    "spec",
                    &format!(
                        "if set, amiFamily must be '{family_name}' or 'Custom' when using {} {family_name} alias",
                        if matches!(family_name, AMIFamily::AL2 | AMIFamily::AL2023) { "an" } else { "a" }
                    ),
                );
            }
        }
    }
    errors.rule(
        !alias_families.is_empty() || spec.ami_family.is_some(),
        "spec",
        "must specify amiFamily if amiSelectorTerms does not contain an alias",
    );
}

/// `spec.tags` CEL rules: no empty keys, and none of the restricted keys Karpenter sets itself.
pub(super) fn validate_tags(errors: &mut ValidationErrors, tags: &BTreeMap<String, String>) {
    let path = "spec.tags";
    // CEL: self.all(k, k != '')
    errors.rule(tags.keys().all(|k| !k.is_empty()), path, "empty tag keys aren't supported");
    // CEL: self.all(k, k !='eks:eks-cluster-name')
    errors.rule(
        !tags.contains_key(labels::EKS_CLUSTER_NAME_TAG_KEY),
        path,
        "tag contains a restricted tag matching eks:eks-cluster-name",
    );
    // CEL: self.all(k, !k.startsWith('kubernetes.io/cluster') )
    errors.rule(
        !tags.keys().any(|k| k.starts_with("kubernetes.io/cluster")),
        path,
        "tag contains a restricted tag matching kubernetes.io/cluster/",
    );
    // CEL: self.all(k, k != 'karpenter.sh/nodepool')
    errors.rule(
        !tags.contains_key(labels::NODE_POOL_TAG_KEY),
        path,
        "tag contains a restricted tag matching karpenter.sh/nodepool",
    );
    // CEL: self.all(k, k !='karpenter.sh/nodeclaim')
    errors.rule(
        !tags.contains_key(labels::NODE_CLAIM_TAG_KEY),
        path,
        "tag contains a restricted tag matching karpenter.sh/nodeclaim",
    );
    // CEL: self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')
    errors.rule(
        !tags.contains_key(labels::NODE_CLASS_TAG_KEY),
        path,
        "tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass",
    );
}

/// `spec.kubelet` schema and CEL rules.
pub(super) fn validate_kubelet(errors: &mut ValidationErrors, kubelet: &KubeletConfiguration) {
    let path = "spec.kubelet";
    if let Some(max_pods) = kubelet.max_pods {
        errors.range(format!("{path}.maxPods"), i64::from(max_pods), Some(0), None);
    }
    if let Some(per_core) = kubelet.pods_per_core {
        errors.range(format!("{path}.podsPerCore"), i64::from(per_core), Some(0), None);
    }
    for (field, value) in [
        ("imageGCHighThresholdPercent", kubelet.image_gc_high_threshold_percent),
        ("imageGCLowThresholdPercent", kubelet.image_gc_low_threshold_percent),
    ] {
        if let Some(value) = value {
            errors.range(format!("{path}.{field}"), i64::from(value), Some(0), Some(100));
        }
    }
    for (field, map) in [("evictionHard", &kubelet.eviction_hard), ("evictionSoft", &kubelet.eviction_soft)] {
        let Some(map) = map else { continue };
        for (signal, threshold) in map {
            errors.pattern(format!("{path}.{field}[{signal}]"), threshold, &validation::EVICTION_THRESHOLD);
        }
        // CEL: self.all(x, x in ['memory.available','nodefs.available','nodefs.inodesFree','imagefs.available','imagefs.inodesFree','pid.available'])
        errors.rule(
            map.keys().all(|k| EVICTION_SIGNALS.contains(&k.as_str())),
            format!("{path}.{field}"),
            &format!("valid keys for {field} are [{}]", quoted_list(&EVICTION_SIGNALS)),
        );
    }
    if let Some(grace) = &kubelet.eviction_soft_grace_period {
        errors.rule(
            grace.keys().all(|k| EVICTION_SIGNALS.contains(&k.as_str())),
            format!("{path}.evictionSoftGracePeriod"),
            &format!("valid keys for evictionSoftGracePeriod are [{}]", quoted_list(&EVICTION_SIGNALS)),
        );
    }
    for (field, map) in [("kubeReserved", &kubelet.kube_reserved), ("systemReserved", &kubelet.system_reserved)] {
        let Some(map) = map else { continue };
        for (resource, quantity) in map {
            errors.pattern(format!("{path}.{field}[{resource}]"), quantity, &validation::QUANTITY);
        }
        // CEL: self.all(x, x=='cpu' || x=='memory' || x=='ephemeral-storage' || x=='pid')
        errors.rule(
            map.keys().all(|k| RESERVED_RESOURCES.contains(&k.as_str())),
            format!("{path}.{field}"),
            &format!("valid keys for {field} are [{}]", quoted_list(&RESERVED_RESOURCES)),
        );
        // CEL: self.all(x, !self[x].startsWith('-'))
        errors.rule(
            map.values().all(|v| !v.starts_with('-')),
            format!("{path}.{field}"),
            &format!("{field} value cannot be a negative resource quantity"),
        );
    }
    // CEL: has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?
    //      self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent : true
    if let (Some(high), Some(low)) = (kubelet.image_gc_high_threshold_percent, kubelet.image_gc_low_threshold_percent) {
        errors.rule(high > low, path, "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent");
    }
    // CEL: has(self.evictionSoft) ? self.evictionSoft.all(e, (e in self.evictionSoftGracePeriod)) : true
    // (a missing evictionSoftGracePeriod makes the expression fail, i.e. counts as empty)
    let grace = kubelet.eviction_soft_grace_period.clone().unwrap_or_default();
    let soft = kubelet.eviction_soft.clone().unwrap_or_default();
    if kubelet.eviction_soft.is_some() {
        errors.rule(
            soft.keys().all(|k| grace.contains_key(k)),
            path,
            "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
        );
    }
    // CEL: has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, (e in self.evictionSoft)) : true
    if kubelet.eviction_soft_grace_period.is_some() {
        errors.rule(
            grace.keys().all(|k| soft.contains_key(k)),
            path,
            "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
        );
    }
}

fn quoted_list(items: &[&str]) -> String {
    items.iter().map(|item| format!("'{item}'")).collect::<Vec<_>>().join(",")
}

/// `blockDeviceMappings`: maxItems 50, CEL `self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1`,
/// and per EBS volume: volumeSize pattern, volumeInitializationRate 100–300, CEL
/// `has(self.snapshotID) || has(self.volumeSize)` and
/// `!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID != '')`.
pub(super) fn validate_block_device_mappings(errors: &mut ValidationErrors, mappings: &[BlockDeviceMapping]) {
    let path = "spec.blockDeviceMappings";
    errors.max_items(path, mappings.len(), 50);
    let roots = mappings.iter().filter(|m| m.root_volume == Some(true)).count();
    errors.rule(roots <= 1, path, "must have only one blockDeviceMappings with rootVolume");
    for (i, mapping) in mappings.iter().enumerate() {
        let Some(ebs) = &mapping.ebs else { continue };
        let ebs_path = format!("{path}[{i}].ebs");
        if let Some(size) = &ebs.volume_size {
            errors.pattern(format!("{ebs_path}.volumeSize"), &size.0, &validation::VOLUME_SIZE);
        }
        if let Some(rate) = ebs.volume_initialization_rate {
            errors.range(format!("{ebs_path}.volumeInitializationRate"), i64::from(rate), Some(100), Some(300));
        }
        errors.rule(
            ebs.snapshot_id.is_some() || ebs.volume_size.is_some(),
            ebs_path.clone(),
            "snapshotID or volumeSize must be defined",
        );
        errors.rule(
            ebs.volume_initialization_rate.is_none() || ebs.snapshot_id.as_deref().is_some_and(|s| !s.is_empty()),
            ebs_path,
            "snapshotID must be set when volumeInitializationRate is set",
        );
    }
}

/// `connectionTracking`: ranges and CEL
/// `has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)`.
pub(super) fn validate_connection_tracking(errors: &mut ValidationErrors, tracking: &ConnectionTracking) {
    let path = "spec.connectionTracking";
    for (field, value, min, max) in [
        ("tcpEstablishedTimeout", tracking.tcp_established_timeout, 60, 432_000),
        ("udpStreamTimeout", tracking.udp_stream_timeout, 60, 180),
        ("udpTimeout", tracking.udp_timeout, 30, 60),
    ] {
        if let Some(value) = value {
            errors.range(format!("{path}.{field}"), i64::from(value), Some(min), Some(max));
        }
    }
    errors.rule(
        tracking.tcp_established_timeout.is_some()
            || tracking.udp_stream_timeout.is_some()
            || tracking.udp_timeout.is_some(),
        path,
        "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set",
    );
}

/// `networkInterfaces`: maxItems 150, indexes ≥ 0, and the two CEL rules:
/// `self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 && x.interfaceType == 'interface')`
/// and `self.all(x, self.filter(y, same card && same device).size() == 1 && (x.interfaceType !=
/// 'efa-only' || self.filter(y, same card && y.interfaceType == 'efa-only').size() == 1))`.
pub(super) fn validate_network_interfaces(errors: &mut ValidationErrors, interfaces: &[NetworkInterface]) {
    let path = "spec.networkInterfaces";
    errors.max_items(path, interfaces.len(), 150);
    for (i, interface) in interfaces.iter().enumerate() {
        errors.range(format!("{path}[{i}].deviceIndex"), i64::from(interface.device_index), Some(0), None);
        errors.range(format!("{path}[{i}].networkCardIndex"), i64::from(interface.network_card_index), Some(0), None);
    }
    errors.rule(
        interfaces.is_empty()
            || interfaces.iter().any(|x| {
                x.device_index == 0 && x.network_card_index == 0 && x.interface_type == InterfaceType::Interface
            }),
        path,
        "networkInterfaces must include a primary interface with interfaceType='interface'",
    );
    let unique = interfaces.iter().all(|x| {
        let same_slot = interfaces
            .iter()
            .filter(|y| x.network_card_index == y.network_card_index && x.device_index == y.device_index)
            .count();
        let efa_on_card = interfaces
            .iter()
            .filter(|y| x.network_card_index == y.network_card_index && y.interface_type == InterfaceType::EfaOnly)
            .count();
        same_slot == 1 && (x.interface_type != InterfaceType::EfaOnly || efa_on_card == 1)
    });
    errors.rule(
        unique,
        path,
        "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card",
    );
}

/// Status rules: reservation id/owner patterns and conditions.
pub(super) fn validate_status(errors: &mut ValidationErrors, status: &EC2NodeClassStatus) {
    if let Some(reservations) = &status.capacity_reservations {
        for (i, reservation) in reservations.iter().enumerate() {
            let item = format!("status.capacityReservations[{i}]");
            errors.pattern(format!("{item}.id"), &reservation.id, &validation::CAPACITY_RESERVATION_ID);
            errors.pattern(format!("{item}.ownerID"), &reservation.owner_id, &validation::OWNER_ID);
        }
    }
    if let Some(conditions) = &status.conditions {
        validation::conditions(
            errors,
            "status.conditions",
            conditions,
            validation::ConditionRules { reason_required: true, unique_types: false },
        );
    }
}
