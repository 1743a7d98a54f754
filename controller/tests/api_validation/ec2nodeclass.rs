//! EC2NodeClass validation.

use super::*;

#[test]
fn exactly_one_of_role_and_instance_profile() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["instanceProfile"] = json!("profile"));
    assert!(errors.has("spec", "must specify exactly one of ['role', 'instanceProfile']"), "{errors}");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"].as_object_mut().map(|s| s.remove("role"));
    });
    assert!(errors.has("spec", "must specify exactly one of ['role', 'instanceProfile']"), "{errors}");
    let errors = ec2nodeclass_errors(|v| v["spec"]["role"] = json!(""));
    assert!(errors.has("spec.role", "role cannot be empty"), "{errors}");
    ec2nodeclass(|v| {
        v["spec"].as_object_mut().map(|s| s.remove("role"));
        v["spec"]["instanceProfile"] = json!("KarpenterNodeInstanceProfile");
    })
    .validate()
    .expect("instanceProfile alone");
}

#[test]
fn ami_alias_is_exclusive_with_other_terms_and_fields() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiSelectorTerms"] = json!([{"alias": "al2023@latest"}, {"id": "ami-0123"}]);
    });
    assert!(
        errors.has(
            "spec.amiSelectorTerms",
            "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"
        ),
        "{errors}"
    );
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiSelectorTerms"] = json!([{"alias": "al2023@latest", "tags": {"team": "a"}}]);
    });
    assert!(
        errors.has(
            "spec.amiSelectorTerms[0]",
            "'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"
        ),
        "{errors}"
    );
}

#[test]
fn ami_id_is_exclusive_with_other_fields() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiFamily"] = json!("AL2023");
        v["spec"]["amiSelectorTerms"] = json!([{"id": "ami-0123", "name": "my-ami"}]);
    });
    assert!(
        errors.has(
            "spec.amiSelectorTerms[0]",
            "'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms"
        ),
        "{errors}"
    );
    // ssmParameter is not in the id exclusivity list upstream.
    ec2nodeclass(|v| {
        v["spec"]["amiFamily"] = json!("AL2023");
        v["spec"]["amiSelectorTerms"] = json!([{"id": "ami-0123", "ssmParameter": "/x"}]);
    })
    .validate()
    .expect("id with ssmParameter");
}

#[test]
fn ami_terms_need_a_selector_and_there_must_be_one_to_30() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiFamily"] = json!("AL2023");
        v["spec"]["amiSelectorTerms"] = json!([{"owner": "amazon"}]);
    });
    assert!(
        errors.has(
            "spec.amiSelectorTerms[0]",
            "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"
        ),
        "{errors}"
    );
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiFamily"] = json!("AL2023");
        v["spec"]["amiSelectorTerms"] = json!([]);
    });
    assert!(errors.has("spec.amiSelectorTerms", "should have at least 1 items"), "{errors}");
}

#[test]
fn ami_aliases_are_family_at_version_with_known_families() {
    for (alias, message) in [
        ("al2023", "'alias' is improperly formatted, must match the format 'family@version'"),
        ("ubuntu@latest", "family is not supported"),
        ("windows2022@v20240101", "windows families may only specify version 'latest'"),
        ("al2023@a-very-long-version-string-x", "Too long"),
    ] {
        let errors = ec2nodeclass_errors(|v| v["spec"]["amiSelectorTerms"] = json!([{"alias": alias}]));
        assert!(errors.has("spec.amiSelectorTerms[0].alias", message), "{alias}: {errors}");
    }
    for alias in ["al2@latest", "bottlerocket@v1.20.0", "windows2025@latest", "al2023@v20240625"] {
        ec2nodeclass(|v| v["spec"]["amiSelectorTerms"] = json!([{"alias": alias}]))
            .validate()
            .unwrap_or_else(|e| panic!("{alias}: {e}"));
    }
}

#[test]
fn ami_family_must_agree_with_the_alias_and_is_required_without_one() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["amiFamily"] = json!("AL2"));
    assert!(
        errors.has("spec", "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias"),
        "{errors}"
    );
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiSelectorTerms"] = json!([{"alias": "bottlerocket@latest"}]);
        v["spec"]["amiFamily"] = json!("AL2023");
    });
    assert!(
        errors.has("spec", "if set, amiFamily must be 'Bottlerocket' or 'Custom' when using a Bottlerocket alias"),
        "{errors}"
    );
    ec2nodeclass(|v| v["spec"]["amiFamily"] = json!("Custom")).validate().expect("Custom with an alias");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["amiSelectorTerms"] = json!([{"tags": {"team": "a"}}]);
    });
    assert!(errors.has("spec", "must specify amiFamily if amiSelectorTerms does not contain an alias"), "{errors}");
}

#[test]
fn subnet_selector_terms_rules() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["subnetSelectorTerms"] = json!([]));
    assert!(errors.has("spec.subnetSelectorTerms", "subnetSelectorTerms cannot be empty"), "{errors}");
    let errors = ec2nodeclass_errors(|v| v["spec"]["subnetSelectorTerms"] = json!([{}]));
    assert!(errors.has("spec.subnetSelectorTerms[0]", "expected at least one, got none, ['tags', 'id']"), "{errors}");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["subnetSelectorTerms"] = json!([{"id": "subnet-0123", "tags": {"a": "b"}}]);
    });
    assert!(errors.has("spec.subnetSelectorTerms", "'id' is mutually exclusive"), "{errors}");
    // Upstream's rule is `!self.all(...)`: it only fires when every term combines id and tags.
    ec2nodeclass(|v| {
        v["spec"]["subnetSelectorTerms"] = json!([{"id": "subnet-0123", "tags": {"a": "b"}}, {"tags": {"a": "b"}}]);
    })
    .validate()
    .expect("quirk kept");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["subnetSelectorTerms"] = json!([{"tags": {"karpenter.sh/discovery": ""}}]);
    });
    assert!(errors.has("spec.subnetSelectorTerms[0].tags", "empty tag keys or values aren't supported"), "{errors}");
    let errors = ec2nodeclass_errors(|v| v["spec"]["subnetSelectorTerms"] = json!([{"id": "sn-1"}]));
    assert!(errors.has("spec.subnetSelectorTerms[0].id", "should match"), "{errors}");
}

#[test]
fn security_group_selector_terms_rules() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["securityGroupSelectorTerms"] = json!([]));
    assert!(errors.has("spec.securityGroupSelectorTerms", "securityGroupSelectorTerms cannot be empty"), "{errors}");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["securityGroupSelectorTerms"] = json!([{"id": "sg-0123", "name": "nodes"}]);
    });
    assert!(errors.has("spec.securityGroupSelectorTerms", "'id' is mutually exclusive"), "{errors}");
    assert!(errors.has("spec.securityGroupSelectorTerms", "'name' is mutually exclusive"), "{errors}");
}

#[test]
fn capacity_reservation_selector_terms_rules() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["capacityReservationSelectorTerms"] = json!([{"id": "cr-0123", "ownerID": "123456789012"}]);
    });
    assert!(errors.has("spec.capacityReservationSelectorTerms", "'id' is mutually exclusive"), "{errors}");
    // `!self.all(...)` over an empty list is false upstream, so an empty list is rejected.
    let errors = ec2nodeclass_errors(|v| v["spec"]["capacityReservationSelectorTerms"] = json!([]));
    assert!(errors.has("spec.capacityReservationSelectorTerms", "'id' is mutually exclusive"), "{errors}");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["capacityReservationSelectorTerms"] = json!([{"ownerID": "1234"}]);
    });
    assert!(errors.has("spec.capacityReservationSelectorTerms[0]", "expected at least one, got none"), "{errors}");
    assert!(errors.has("spec.capacityReservationSelectorTerms[0].ownerID", "should match"), "{errors}");
    ec2nodeclass(|v| {
        v["spec"]["capacityReservationSelectorTerms"] =
            json!([{"tags": {"team": "ml"}, "ownerID": "123456789012"}, {"instanceMatchCriteria": "open"}]);
    })
    .validate()
    .expect("valid reservation terms");
}

#[test]
fn placement_group_selector_needs_exactly_one_of_name_and_id() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["placementGroupSelector"] = json!({}));
    assert!(errors.has("spec.placementGroupSelector", "expected at least one, got none, ['name', 'id']"), "{errors}");
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["placementGroupSelector"] = json!({"name": "pg", "id": "pg-0123"});
    });
    assert!(errors.has("spec.placementGroupSelector", "'name' and 'id' are mutually exclusive"), "{errors}");
}

#[test]
fn restricted_tags_are_rejected() {
    for (key, message) in [
        ("kubernetes.io/cluster/prod", "restricted tag matching kubernetes.io/cluster/"),
        ("eks:eks-cluster-name", "restricted tag matching eks:eks-cluster-name"),
        ("karpenter.sh/nodepool", "restricted tag matching karpenter.sh/nodepool"),
        ("karpenter.sh/nodeclaim", "restricted tag matching karpenter.sh/nodeclaim"),
        ("karpenter.k8s.aws/ec2nodeclass", "restricted tag matching karpenter.k8s.aws/ec2nodeclass"),
        ("", "empty tag keys aren't supported"),
    ] {
        let errors = ec2nodeclass_errors(|v| v["spec"]["tags"] = json!({key: "x"}));
        assert!(errors.has("spec.tags", message), "{key}: {errors}");
    }
    ec2nodeclass(|v| v["spec"]["tags"] = json!({"team": "platform", "Name": "node"}))
        .validate()
        .expect("ordinary tags");
}

#[test]
fn kubelet_rules() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["kubelet"] = json!({
            "evictionHard": {"memory.free": "100Mi"},
            "evictionSoft": {"memory.available": "10%"},
            "imageGCHighThresholdPercent": 50,
            "imageGCLowThresholdPercent": 60,
            "kubeReserved": {"cpu": "-100m", "gpu": "1"},
            "maxPods": -1
        });
    });
    for (path, message) in [
        ("spec.kubelet.evictionHard", "valid keys for evictionHard are ['memory.available'"),
        ("spec.kubelet", "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod"),
        ("spec.kubelet", "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"),
        ("spec.kubelet.kubeReserved", "kubeReserved value cannot be a negative resource quantity"),
        ("spec.kubelet.kubeReserved", "valid keys for kubeReserved are ['cpu','memory','ephemeral-storage','pid']"),
        ("spec.kubelet.maxPods", "should be greater than or equal to 0"),
    ] {
        assert!(errors.has(path, message), "{path}: {message}: {errors}");
    }
    ec2nodeclass(|v| {
        v["spec"]["kubelet"] = json!({
            "maxPods": 110,
            "evictionHard": {"memory.available": "5%", "nodefs.available": "10%"},
            "evictionSoft": {"memory.available": "500Mi"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
            "systemReserved": {"cpu": "100m", "memory": "100Mi"},
            "imageGCHighThresholdPercent": 85,
            "imageGCLowThresholdPercent": 80
        });
    })
    .validate()
    .expect("valid kubelet");
}

#[test]
fn block_device_mapping_rules() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["blockDeviceMappings"] = json!([
            {"deviceName": "/dev/xvda", "rootVolume": true, "ebs": {"volumeSize": "70000Gi"}},
            {"deviceName": "/dev/xvdb", "rootVolume": true, "ebs": {"volumeType": "gp3"}},
            {"deviceName": "/dev/xvdc", "ebs": {"volumeSize": "20Gi", "volumeInitializationRate": 100}}
        ]);
    });
    for (path, message) in [
        ("spec.blockDeviceMappings", "must have only one blockDeviceMappings with rootVolume"),
        ("spec.blockDeviceMappings[0].ebs.volumeSize", "should match"),
        ("spec.blockDeviceMappings[1].ebs", "snapshotID or volumeSize must be defined"),
        ("spec.blockDeviceMappings[2].ebs", "snapshotID must be set when volumeInitializationRate is set"),
    ] {
        assert!(errors.has(path, message), "{path}: {errors}");
    }
}

#[test]
fn metadata_options_are_defaulted_and_hop_limit_is_1_to_64() {
    let class = ec2nodeclass(|_| {});
    let value = serde_json::to_value(class.defaulted()).expect("serialize");
    assert_eq!(
        value["spec"]["metadataOptions"],
        json!({"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": 1, "httpTokens": "required"})
    );
    let partial = ec2nodeclass(|v| v["spec"]["metadataOptions"] = json!({"httpTokens": "optional"}));
    let value = serde_json::to_value(partial.defaulted()).expect("serialize");
    assert_eq!(value["spec"]["metadataOptions"]["httpTokens"], json!("optional"));
    assert_eq!(value["spec"]["metadataOptions"]["httpPutResponseHopLimit"], json!(1));
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["metadataOptions"] = json!({"httpPutResponseHopLimit": 65});
    });
    assert!(errors.has("spec.metadataOptions.httpPutResponseHopLimit", "less than or equal to 64"), "{errors}");
}

#[test]
fn network_interfaces_need_a_primary_and_unique_slots() {
    let errors = ec2nodeclass_errors(|v| {
        v["spec"]["networkInterfaces"] = json!([
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "interface"}
        ]);
    });
    assert!(
        errors.has("spec.networkInterfaces", "must include a primary interface with interfaceType='interface'"),
        "{errors}"
    );
    assert!(
        errors.has("spec.networkInterfaces", "must not have duplicate networkCardIndex and deviceIndex pairs"),
        "{errors}"
    );
    ec2nodeclass(|v| {
        v["spec"]["networkInterfaces"] = json!([
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}
        ]);
    })
    .validate()
    .expect("valid EFA layout");
}

#[test]
fn connection_tracking_needs_a_timeout_in_range() {
    let errors = ec2nodeclass_errors(|v| v["spec"]["connectionTracking"] = json!({}));
    assert!(errors.has("spec.connectionTracking", "at least one of tcpEstablishedTimeout"), "{errors}");
    let errors = ec2nodeclass_errors(|v| v["spec"]["connectionTracking"] = json!({"udpTimeout": 10}));
    assert!(errors.has("spec.connectionTracking.udpTimeout", "greater than or equal to 30"), "{errors}");
}
