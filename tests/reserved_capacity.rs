//! Reserved capacity end to end (issue 20, "Karpenter fidelity"; aws/karpenter-provider-aws
//! v1.14.1 `pkg/providers/capacityreservation`, `instancetype/offering/reserved_capacity_resolver.go`,
//! `instance/instance.go`): `scenarios/reserved-capacity.yaml` holds a 3-instance targeted ODCR of
//! m5.large in us-east-1a and asks for six one-node pods on a NodePool allowing `reserved` and
//! `on-demand`. The reservation fills first, the overflow launches on-demand, and the cloud
//! bills the reservation, not its instances.

use std::path::Path;

use dovetail_sim::run::run;
use dovetail_sim::scenario::Loaded;

fn load(name: &str) -> Loaded {
    Loaded::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name)).unwrap()
}

#[test]
fn the_reservation_fills_first_and_the_overflow_launches_on_demand() {
    let report = run(&load("reserved-capacity.yaml"), 1).unwrap().report;
    eprintln!("{}", report.summary());
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let report = serde_json::to_value(&report).expect("a report serialises");
    assert_eq!(report["invariants"]["violations"].as_array().map(Vec::len), Some(0), "{}", report["invariants"]);
    let offerings: Vec<String> = report["explanation"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["offering"].as_str().map(str::to_owned))
        .collect();
    let reserved: Vec<&String> = offerings.iter().filter(|o| o.contains(" reserved ")).collect();
    let on_demand: Vec<&String> = offerings.iter().filter(|o| o.contains(" on-demand ")).collect();
    assert_eq!(reserved.len(), 3, "the 3-slot reservation is used in full: {offerings:?}");
    assert!(reserved.iter().all(|o| o.as_str() == "m5.large reserved us-east-1a"), "{offerings:?}");
    assert_eq!(on_demand.len(), 3, "the overflow pays on-demand: {offerings:?}");
    // The reservation bills 3 × $0.096/h and its instances nothing; the 3 on-demand nodes
    // bill $0.096/h each.
    let rate = report["cost"]["ratePerHour"].as_f64().expect("a rate");
    assert!((rate - 6.0 * 0.096).abs() < 1e-6, "{rate}");
    assert!(report["apiCalls"]["ec2 DescribeCapacityReservations"].as_u64().unwrap_or(0) >= 1);
}

#[test]
fn no_launch_targets_a_reservation_beyond_its_slots() {
    let report = run(&load("reserved-capacity.yaml"), 2).unwrap().report;
    let report = serde_json::to_value(&report).expect("a report serialises");
    // Six nodes, six launches: no reserved launch was refused and replaced.
    assert_eq!(report["launches"].as_u64(), Some(6), "{}", report["apiCalls"]);
    assert_eq!(report["apiCalls"]["ec2 TerminateInstances"].as_u64(), None, "{}", report["apiCalls"]);
}
