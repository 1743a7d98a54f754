//! The AWS provider's launch templates against the fake cloud's EC2.

use std::collections::BTreeMap;
use std::sync::Arc;

use dovetail_controller::apis::ec2nodeclass::MetadataOptions;
use dovetail_controller::cloudprovider::aws::launch_template::{LaunchTemplateInput, LaunchTemplateProvider};
use dovetail_fakecloud::cloud::lock;
use dovetail_fakecloud::sdk::{SdkOptions, ec2_client};
use dovetail_sim::controller_host::{AWS_ENDPOINT, SimClock};
use dovetail_tests::cloud_world;

/// Two launches that need the same new template at once create it once: upstream holds the
/// provider's lock across `EnsureAll` (aws `pkg/providers/launchtemplate/launchtemplate.go`
/// l. 146-147), so the second finds it in the cache. Without that, both describe it
/// missing and both create it, one failing with `AlreadyExists` (found by drift-rollout: 3
/// CreateLaunchTemplate calls for 2 templates once interruption handling became concurrent).
#[test]
fn concurrent_launches_create_a_new_launch_template_once() {
    let (mut sim, _server, fake) = cloud_world(23);
    let image = lock(&fake).images().images.keys().next().cloned().expect("an image");
    sim.client("controller", async move {
        let ec2 = ec2_client(&SdkOptions::ec2(AWS_ENDPOINT, "us-east-1"));
        let provider = LaunchTemplateProvider::new(Arc::new(SimClock));
        let input = LaunchTemplateInput {
            image_id: image,
            user_data: "dXNlcg==".into(),
            security_group_ids: vec!["sg-1".into()],
            instance_profile: "KarpenterNodeRole".into(),
            metadata: MetadataOptions::crd_default(),
            block_devices: Vec::new(),
            monitoring: false,
            tags: BTreeMap::new(),
            capacity_reservation: None,
        };
        let (a, b) = tokio::join!(provider.ensure(&ec2, &input), provider.ensure(&ec2, &input));
        assert_eq!(a.map_err(|e| e.to_string())?, b.map_err(|e| e.to_string())?);
        Ok(())
    });
    sim.run().expect("the simulation");
    let creates: Vec<String> = lock(&fake)
        .ledger()
        .calls
        .iter()
        .filter(|c| c.action == "CreateLaunchTemplate")
        .map(|c| c.outcome.clone())
        .collect();
    assert_eq!(creates, ["OK"], "one CreateLaunchTemplate, accepted");
}
