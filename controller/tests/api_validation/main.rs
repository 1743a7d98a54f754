//! One test per ported CRD rule (schema constraint or CEL `x-kubernetes-validations`), plus
//! Karpenter's runtime validation, defaults and condition roll-up. Each test starts from a valid
//! object, breaks one thing, and checks the error names the field and says what is wrong.

use dovetail_controller::apis::condition::CONDITION_READY;
use dovetail_controller::apis::nodeclaim::{CONDITION_INITIALIZED, CONDITION_LAUNCHED, CONDITION_REGISTERED};
use dovetail_controller::apis::{
    BudgetNodes, ConditionStatus, EC2NodeClass, NodeClaim, NodeOverlay, NodePool, StatusConditions, ValidationErrors,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};

mod conditions;
mod ec2nodeclass;
mod nodeclaim;
mod nodeoverlay;
mod nodepool_disruption;
mod nodepool_limits;
mod nodepool_requirements;
mod nodepool_template;

// Fixtures

fn nodepool_json() -> Value {
    json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {
            "template": {
                "spec": {
                    "requirements": [
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                        {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]}
                    ],
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
                }
            }
        }
    })
}

fn nodepool(edit: impl FnOnce(&mut Value)) -> NodePool {
    let mut value = nodepool_json();
    edit(&mut value);
    serde_json::from_value(value).expect("NodePool deserializes")
}

fn nodepool_errors(edit: impl FnOnce(&mut Value)) -> ValidationErrors {
    nodepool(edit).validate().expect_err("NodePool should be invalid")
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> Value {
    json!({"key": key, "operator": operator, "values": values})
}

fn set_requirements(value: &mut Value, requirements: Vec<Value>) {
    value["spec"]["template"]["spec"]["requirements"] = Value::Array(requirements);
}

fn ec2nodeclass_json() -> Value {
    json!({
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-test",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test"}}],
            "amiSelectorTerms": [{"alias": "al2023@latest"}]
        }
    })
}

fn ec2nodeclass(edit: impl FnOnce(&mut Value)) -> EC2NodeClass {
    let mut value = ec2nodeclass_json();
    edit(&mut value);
    serde_json::from_value(value).expect("EC2NodeClass deserializes")
}

fn ec2nodeclass_errors(edit: impl FnOnce(&mut Value)) -> ValidationErrors {
    ec2nodeclass(edit).validate().expect_err("EC2NodeClass should be invalid")
}

fn nodeclaim_json() -> Value {
    json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "default-abcde", "labels": {"karpenter.sh/nodepool": "default"}},
        "spec": {
            "requirements": [
                {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large", "m5.xlarge"], "minValues": 2}
            ],
            "resources": {"requests": {"cpu": "1500m", "memory": "2Gi", "pods": 3}},
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
        }
    })
}

fn nodeclaim(edit: impl FnOnce(&mut Value)) -> NodeClaim {
    let mut value = nodeclaim_json();
    edit(&mut value);
    serde_json::from_value(value).expect("NodeClaim deserializes")
}

fn time(text: &str) -> Time {
    Time(text.parse().expect("timestamp"))
}

// Fixtures are valid

#[test]
fn fixtures_are_valid() {
    nodepool(|_| {}).validate().expect("nodepool fixture");
    nodepool(|_| {}).runtime_validate().expect("nodepool fixture runtime");
    ec2nodeclass(|_| {}).validate().expect("ec2nodeclass fixture");
    nodeclaim(|_| {}).validate().expect("nodeclaim fixture");
    nodeclaim(|_| {}).runtime_validate().expect("nodeclaim fixture runtime");
}
