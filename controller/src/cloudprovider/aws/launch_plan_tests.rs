//! [`super::LaunchPlan`]'s filters against aws `pkg/providers/instance/filter/filter.go`
//! (v1.14.1): with minValues on the claim the spot-price filter (l. 389-391) is skipped, as is
//! the exotic filter (l. 340-342; tested upstream in filter_test.go l. 613 and 744). And what
//! [`super::note_fleet_errors`] learns from a fleet's errors (aws `instance.go` l. 602-643).

use std::sync::Arc;

use serde_json::json;

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::instance_types::InstanceTypeProvider;
use super::instances::FleetResult;
use super::{LaunchPlan, note_fleet_errors};
use crate::apis::NodeClaim;
use crate::cloudprovider::{UnavailableOfferings, fake};
use crate::runtime::clock::ManualClock;
use crate::scheduling::requirements::Requirements;

fn claim(min_values: Option<i64>) -> NodeClaim {
    let mut type_requirement = json!({"key": "node.kubernetes.io/instance-type", "operator": "Exists"});
    if let Some(min) = min_values {
        type_requirement["minValues"] = json!(min);
    }
    serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
        "spec": {"requirements": [
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
            type_requirement],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}
    }))
    .expect("claim")
}

fn plan(min_values: Option<i64>) -> LaunchPlan {
    // 1 vCPU: on-demand $0.30, spot $0.21; 8 vCPUs: spot $1.68, dearer than the cheapest on-demand.
    let types =
        vec![Arc::new(fake::instance_type("c", 1, 2, "amd64")), Arc::new(fake::instance_type("c", 8, 16, "amd64"))];
    let claim = claim(min_values);
    let requirements = Requirements::from_node_selector(&claim.spec.requirements);
    LaunchPlan::new(&claim, &requirements, &types, &InstanceTypeProvider::default()).expect("a plan")
}

#[test]
fn spot_offerings_dearer_than_on_demand_are_dropped_unless_min_values_is_set() {
    let without = plan(None);
    assert_eq!(without.capacity_type, "spot");
    let names: Vec<&str> = without.types.iter().map(|(t, _)| t.name.as_str()).collect();
    assert_eq!(names, ["c5.1xlarge"], "the 8-vCPU spot offering costs more than the cheapest on-demand");
    let with = plan(Some(2));
    let names: Vec<&str> = with.types.iter().map(|(t, _)| t.name.as_str()).collect();
    assert_eq!(names, ["c5.1xlarge", "c5.8xlarge"], "minValues: the spot-price filter is skipped");
}

#[test]
fn a_spot_role_error_marks_spot_unavailable_and_a_full_subnet_is_chosen_last() {
    let clock = Arc::new(ManualClock::new("2026-01-05T12:00:00Z".parse().expect("timestamp")));
    let unavailable = UnavailableOfferings::new(clock);
    let ips = Mutex::new(BTreeMap::from([("subnet-a".to_string(), 200), ("subnet-b".to_string(), 100)]));
    let result = FleetResult {
        instance: None,
        unavailable: Vec::new(),
        errors: vec![
            ("AuthFailure.ServiceLinkedRoleCreationNotPermitted".into(), "no role".into()),
            ("InsufficientFreeAddressesInSubnet".into(), "full".into()),
        ],
        iced_subnets: vec!["subnet-a".into()],
    };
    note_fleet_errors(&unavailable, &ips, "spot", &result);
    assert!(unavailable.is_unavailable("spot", "m5.large", "us-east-1a"), "every spot offering");
    assert!(!unavailable.is_unavailable("on-demand", "m5.large", "us-east-1a"));
    let ips = ips.lock().expect("ips");
    assert_eq!(ips["subnet-a"], 0, "sorted after subnet-b");
    assert_eq!(ips["subnet-b"], 100);
}
