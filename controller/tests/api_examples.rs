//! Every Karpenter example manifest (`shared/data/karpenter-examples/*.yaml`) loads into our
//! types, round-trips unchanged, and passes validation.

mod common;

use dovetail_controller::apis::manifest::{Manifest, manifest_from_value};
use dovetail_controller::apis::{EC2NodeClass, NodePool};
use serde_json::Value;

fn example_documents() -> Vec<(String, Value)> {
    let files = common::yaml_files("karpenter-examples");
    assert!(files.len() >= 22, "expected the 22 example files, found {}", files.len());
    let mut documents = Vec::new();
    for file in files {
        let name = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&file).expect("readable example");
        for (i, document) in common::yaml_documents(&text).into_iter().enumerate() {
            documents.push((format!("{name}#{i}"), document));
        }
    }
    documents
}

#[test]
fn every_example_manifest_round_trips_unchanged() {
    let documents = example_documents();
    assert!(documents.len() >= 45, "expected at least 45 documents, found {}", documents.len());
    for (name, original) in documents {
        let manifest = manifest_from_value(0, original.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let round_tripped = manifest.to_value().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(round_tripped, original, "{name} changed on a round trip");
    }
}

/// The one upstream example a real API server rejects: `windows-custom-userdata.yaml` sets
/// `nodeClassRef.group: karpenter.k8s.aws/v1`, which violates the CRD pattern `^[^/]*$`.
const INVALID_UPSTREAM_EXAMPLE: &str = "windows-custom-userdata.yaml#0";

#[test]
fn every_example_manifest_passes_crd_and_runtime_validation() {
    for (name, original) in example_documents() {
        match manifest_from_value(0, original).unwrap_or_else(|e| panic!("{name}: {e}")) {
            Manifest::NodePool(pool) if name == INVALID_UPSTREAM_EXAMPLE => {
                let errors = pool.validate().expect_err("the API server rejects this example");
                assert_eq!(errors.errors.len(), 1, "{errors}");
                assert!(errors.has("spec.template.spec.nodeClassRef.group", "should match '^[^/]*$'"), "{errors}");
            }
            Manifest::NodePool(pool) => {
                pool.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
                pool.runtime_validate().unwrap_or_else(|e| panic!("{name}: {e}"));
                pool.defaulted().validate().unwrap_or_else(|e| panic!("{name} (defaulted): {e}"));
            }
            Manifest::EC2NodeClass(class) => {
                class.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
                class.defaulted().validate().unwrap_or_else(|e| panic!("{name} (defaulted): {e}"));
            }
            other => panic!("{name}: unexpected kind {}", other.kind()),
        }
    }
}

#[test]
fn example_kinds_match_the_readme_inventory() {
    let documents = example_documents();
    let pools = documents.iter().filter(|(_, d)| d["kind"] == "NodePool").count();
    let classes = documents.iter().filter(|(_, d)| d["kind"] == "EC2NodeClass").count();
    // README: 22 files, multiple-arch.yaml has two NodePools.
    assert_eq!((pools, classes), (23, 22));
}

#[test]
fn example_values_are_typed_as_karpenter_reads_them() {
    let text = common::read_shared("karpenter-examples/max-node-lifetime.yaml");
    let documents = common::yaml_documents(&text);
    let pool: NodePool = serde_json::from_value(documents[0].clone()).expect("NodePool");
    let spec = &pool.spec;
    assert_eq!(spec.template.spec.expire_after().duration(), Some(std::time::Duration::from_secs(168 * 3600)));
    let grace = spec.template.spec.termination_grace_period.as_ref().map(|g| g.duration());
    assert_eq!(grace, Some(std::time::Duration::from_secs(24 * 3600)));
    assert_eq!(spec.consolidate_after().duration(), Some(std::time::Duration::from_secs(60)));
    assert_eq!(spec.consolidation_policy(), dovetail_controller::apis::ConsolidationPolicy::WhenEmpty);

    let text = common::read_shared("karpenter-examples/general-purpose.yaml");
    let documents = common::yaml_documents(&text);
    let class: EC2NodeClass = serde_json::from_value(documents[1].clone()).expect("EC2NodeClass");
    assert_eq!(class.spec.ami_family(), Some(dovetail_controller::apis::AMIFamily::AL2023));
    assert_eq!(class.spec.alias(), Some(("al2023", "latest")));
}
