//! The controller's AWS provider against moto, an AWS fake we did not write: discovery of
//! subnets, security groups and an AMI, DescribeInstanceTypes/Offerings, a launch template,
//! CreateFleet, DescribeInstances (get and the GC list) and TerminateInstances, all through the
//! same `aws-sdk-ec2` calls the controller makes against AWS.
//!
//! Needs `moto_server` on PATH (`pip install 'moto[server]'`); without it the test says so and
//! passes, so a machine without Python can still run the suite.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};
use dovetail_controller::apis::{EC2NodeClass, NodeClaim, NodePool};
use dovetail_controller::aws_http::{AwsConnection, ec2_client, pricing_client, ssm_client};
use dovetail_controller::cloudprovider::CloudProvider;
use dovetail_controller::cloudprovider::aws::AwsCloudProvider;
use dovetail_controller::runtime::{Settings, SharedClock, SystemClock};
use serde_json::json;

struct Moto(Child);

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("an address").port()
}

async fn start_moto() -> Option<(Moto, String)> {
    let port = free_port();
    let child = Command::new("moto_server")
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(child) = child else {
        eprintln!("SKIPPED: moto_server is not installed (pip install 'moto[server]')");
        return None;
    };
    let moto = Moto(child);
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Some((moto, format!("http://127.0.0.1:{port}")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("moto_server did not start listening on {port}");
}

fn tag(key: &str, value: &str) -> Tag {
    Tag::builder().key(key).value(value).build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aws_provider_launches_describes_and_terminates_through_moto() {
    let Some((_moto, endpoint)) = start_moto().await else { return };
    let credentials = aws_credential_types::provider::SharedCredentialsProvider::new(
        aws_credential_types::Credentials::new("testing", "testing", None, None, "test"),
    );
    let conn = AwsConnection::plain_http("us-east-1", credentials);
    let ec2 = ec2_client(Some(&endpoint), &conn);
    let ssm = ssm_client(Some(&endpoint), &conn);
    let pricing = pricing_client(Some(&endpoint), &conn);

    // The account a user would have: a tagged subnet and security group, and an AMI.
    let discovery = |resource| {
        TagSpecification::builder().resource_type(resource).tags(tag("karpenter.sh/discovery", "moto")).build()
    };
    let vpc = ec2.create_vpc().cidr_block("10.0.0.0/16").send().await.expect("CreateVpc");
    let vpc_id = vpc.vpc().and_then(|v| v.vpc_id()).expect("a vpc id").to_owned();
    ec2.create_subnet()
        .vpc_id(&vpc_id)
        .cidr_block("10.0.1.0/24")
        .availability_zone("us-east-1a")
        .tag_specifications(discovery(ResourceType::Subnet))
        .send()
        .await
        .expect("CreateSubnet");
    ec2.create_security_group()
        .group_name("nodes")
        .description("nodes")
        .vpc_id(&vpc_id)
        .tag_specifications(discovery(ResourceType::SecurityGroup))
        .send()
        .await
        .expect("CreateSecurityGroup");
    let images = ec2.describe_images().owners("amazon").send().await.expect("DescribeImages");
    let image = images
        .images()
        .iter()
        .find(|i| i.architecture().map(|a| a.as_str()) == Some("x86_64"))
        .and_then(|i| i.image_id())
        .expect("moto ships x86_64 AMIs")
        .to_owned();

    let settings = Settings {
        cluster_name: "moto".into(),
        cluster_endpoint: "https://example.eks.amazonaws.com".into(),
        region: "us-east-1".into(),
        ..Settings::default()
    };
    let clock: SharedClock = Arc::new(SystemClock);
    let provider = AwsCloudProvider::new(ec2.clone(), ssm, pricing, Arc::new(settings), clock);
    let types = provider.refresh_instance_types().await.expect("DescribeInstanceTypes and offerings");
    assert!(types > 100, "moto describes the EC2 catalog, got {types} types");

    let mut class: EC2NodeClass = serde_json::from_value(json!({
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-moto",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "moto"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "moto"}}],
            "amiSelectorTerms": [{"id": image}]
        }
    }))
    .expect("a class");
    let resolved = provider.resolve_node_class(&class, "1.34").await.expect("discovery through moto");
    assert_eq!(resolved.subnets.as_ref().map(Vec::len), Some(1), "{resolved:?}");
    assert_eq!(resolved.security_groups.as_ref().map(Vec::len), Some(1), "{resolved:?}");
    assert_eq!(resolved.amis.as_ref().map(|a| a[0].id.clone()), Some(image.clone()));
    class.status = Some(resolved);

    let pool: NodePool = serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
        "spec": {"template": {"spec": {"requirements": [],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}}}
    }))
    .expect("a pool");
    let instance_types = provider.instance_types(&pool, &class).await.expect("instance types");
    assert!(instance_types.iter().any(|t| t.name == "m5.large"), "m5.large is offered in us-east-1a");

    let claim: NodeClaim = serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "default-abcde", "labels": {"karpenter.sh/nodepool": "default"}},
        "spec": {
            "requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large", "m5.xlarge"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
            ],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
        }
    }))
    .expect("a claim");
    let launched = provider.create(&claim, &class, &instance_types).await.expect("CreateFleet through moto");
    let status = launched.status.clone().expect("a status");
    let provider_id = status.provider_id.clone().expect("a provider id");
    assert!(provider_id.starts_with("aws:///us-east-1a/i-"), "{provider_id}");
    assert_eq!(status.image_id.as_deref(), Some(image.as_str()));
    let labels = launched.metadata.labels.clone().unwrap_or_default();
    assert!(["m5.large", "m5.xlarge"].contains(&labels["node.kubernetes.io/instance-type"].as_str()), "{labels:?}");
    assert_eq!(labels["karpenter.sh/capacity-type"], "on-demand");
    assert!(status.allocatable.is_some_and(|a| a.contains_key("cpu")));

    let got = provider.get(&provider_id).await.expect("DescribeInstances by id");
    assert_eq!(got.status.and_then(|s| s.provider_id), Some(provider_id.clone()));
    let listed = provider.list().await.expect("DescribeInstances by tags");
    assert!(
        listed.iter().any(|c| c.status.as_ref().and_then(|s| s.provider_id.as_deref()) == Some(&provider_id)),
        "the GC list finds the instance by its cluster and nodepool tags"
    );

    provider.delete(&launched).await.expect("TerminateInstances");
    // As upstream (aws `pkg/providers/instance/instance.go`): `Get` answers from the instance
    // cache, so only `Delete` (which reads fresh, `Get(SkipCache)`) or the next `List` learns
    // that the instance went; the termination finalizer calls delete until NotFound.
    let mut gone = false;
    for _ in 0..50 {
        match provider.delete(&launched).await {
            Err(e) if e.is_not_found() => {
                gone = true;
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert!(gone, "a terminated instance reads as gone");
}
