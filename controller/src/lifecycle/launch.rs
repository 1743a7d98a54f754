//! Launch (core nodeclaim/lifecycle/launch.go): ask the cloud for an instance for a NodeClaim,
//! then record providerID, image, capacity and the resolved labels. An all-ICE failure deletes
//! the claim so its pods are re-planned without those offerings; other errors leave
//! `Launched=Unknown` and are retried with backoff until the liveness timeout.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;

use super::conditions::{LAUNCHED, set_condition};
use crate::apis::condition::ConditionStatus;
use crate::apis::{EC2NodeClass, NodeClaim, labels};
use crate::cloudprovider::{CloudError, CloudProvider, InstanceType};
use crate::runtime::{Event, EventRecorder, EventType, SharedClock};
use crate::scheduling::Requirements;

/// How long a launch result is remembered by claim UID, guarding against a second launch when
/// the status write fails (core: 1 h).
pub const LAUNCH_CACHE_TTL: Duration = Duration::from_secs(3600);

/// Launch retry backoff bounds (core: 1 s → 1 min... per item rate limiter).
pub const LAUNCH_BACKOFF: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(60));

/// Launch results by claim UID, with their expiry.
#[derive(Debug, Default)]
pub struct LaunchCache(Mutex<BTreeMap<String, (jiff::Timestamp, NodeClaim)>>);

impl LaunchCache {
    fn get(&self, uid: &str, now: jiff::Timestamp) -> Option<NodeClaim> {
        let mut map = self.0.lock().expect("launch cache");
        map.retain(|_, (expiry, _)| *expiry > now);
        map.get(uid).map(|(_, claim)| claim.clone())
    }

    fn put(&self, uid: &str, claim: NodeClaim, now: jiff::Timestamp) {
        let expiry = crate::runtime::clock::add(now, LAUNCH_CACHE_TTL);
        self.0.lock().expect("launch cache").insert(uid.to_string(), (expiry, claim));
    }
}

/// The instance types a claim may launch: the pool's current types (fresh offerings and ICE
/// state) narrowed to the claim's requirements, cheapest compatible offering first.
pub fn launchable_types(claim: &NodeClaim, all: &[Arc<InstanceType>]) -> Vec<Arc<InstanceType>> {
    let requirements = Requirements::from_node_selector(&claim.spec.requirements);
    let mut types: Vec<(f64, Arc<InstanceType>)> = all
        .iter()
        .filter(|it| requirements.compatible(&it.requirements).is_ok())
        .filter_map(|it| it.cheapest_offering(&requirements).map(|o| (o.price, it.clone())))
        .collect();
    types.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    types.into_iter().map(|(_, it)| it).collect()
}

/// What a launch attempt ended in.
#[derive(Debug, PartialEq)]
pub enum LaunchOutcome {
    /// The claim now has an instance.
    Launched,
    /// The claim was deleted (ICE, node class gone).
    Deleted(String),
    /// Try again after the backoff.
    Retry(String),
}

/// Everything a launch needs.
#[derive(Clone)]
pub struct Launcher {
    /// API server.
    pub client: Client,
    /// Cloud.
    pub cloud: Arc<dyn CloudProvider>,
    /// Clock.
    pub clock: SharedClock,
    /// Events.
    pub events: EventRecorder,
    /// Results by UID.
    pub cache: Arc<LaunchCache>,
}

impl Launcher {
    /// Launches `claim` (which has no `Launched=True` yet).
    pub async fn launch(
        &self,
        claim: &NodeClaim,
        node_pool: Option<&crate::apis::NodePool>,
        node_class: Option<&EC2NodeClass>,
    ) -> LaunchOutcome {
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        let now = self.clock.now();
        let launched = match self.cache.get(&uid, now) {
            Some(launched) => launched,
            None => {
                let result = match (node_pool, node_class) {
                    (Some(pool), Some(class)) => match self.cloud.instance_types(pool, class).await {
                        Ok(types) => {
                            let types = launchable_types(claim, &types);
                            if types.is_empty() {
                                Err(CloudError::InsufficientCapacity(
                                    "no instance type of the claim has an available offering".into(),
                                ))
                            } else {
                                self.cloud.create(claim, class, &types).await
                            }
                        }
                        Err(error) => Err(error),
                    },
                    (None, _) => Err(CloudError::NodeClassNotReady("NodePool not found".into())),
                    (_, None) => Err(CloudError::NodeClassNotReady(format!(
                        "EC2NodeClass {:?} not found",
                        claim.spec.node_class_ref.name
                    ))),
                };
                match result {
                    Ok(launched) => {
                        self.cache.put(&uid, launched.clone(), now);
                        launched
                    }
                    Err(CloudError::InsufficientCapacity(message)) => {
                        self.events.publish(Event::about(
                            claim,
                            EventType::Warning,
                            "InsufficientCapacityError",
                            format!(
                                "NodeClaim {} event: {message}",
                                claim.metadata.name.as_deref().unwrap_or_default()
                            ),
                        ));
                        return self.delete(claim, "insufficient_capacity").await;
                    }
                    Err(CloudError::NodeClassNotReady(message)) => {
                        self.events.publish(Event::about(claim, EventType::Warning, "NodeClassNotReady", message));
                        return self.delete(claim, "nodeclass_not_ready").await;
                    }
                    Err(error) => {
                        let (reason, message) = match &error {
                            CloudError::Other { reason, message } => (reason.clone(), message.clone()),
                            other => ("LaunchFailed".to_string(), other.to_string()),
                        };
                        let _ = set_condition(
                            &self.client,
                            &self.clock,
                            claim,
                            LAUNCHED,
                            ConditionStatus::Unknown,
                            &reason,
                            &message,
                            json!({}),
                        )
                        .await;
                        return LaunchOutcome::Retry(format!("{reason}: {message}"));
                    }
                }
            }
        };
        match self.record(claim, &launched).await {
            Ok(()) => LaunchOutcome::Launched,
            Err(error) => LaunchOutcome::Retry(format!("recording launch: {error}")),
        }
    }

    /// Writes the launch result: labels on the claim, then providerID/image/resources and
    /// `Launched=True` on its status.
    async fn record(&self, claim: &NodeClaim, launched: &NodeClaim) -> Result<(), kube::Error> {
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        let name = claim.metadata.name.clone().unwrap_or_default();
        let mut new_labels = claim.metadata.labels.clone().unwrap_or_default();
        for (key, value) in launched.metadata.labels.iter().flatten() {
            new_labels.entry(key.clone()).or_insert_with(|| value.clone());
        }
        // Annotations the provider adds (the node class hash) are merged the same way.
        let mut new_annotations = claim.metadata.annotations.clone().unwrap_or_default();
        for (key, value) in launched.metadata.annotations.iter().flatten() {
            new_annotations.entry(key.clone()).or_insert_with(|| value.clone());
        }
        let updated = if Some(&new_labels) != claim.metadata.labels.as_ref()
            || Some(&new_annotations) != claim.metadata.annotations.as_ref()
        {
            // Guarded like the status write below: a claim read before this launch's first
            // record landed (the cache answered a second pass) gets a conflict and is re-read,
            // instead of re-sending labels the server already has.
            let patch = json!({"metadata": {
                "labels": new_labels,
                "annotations": new_annotations,
                "resourceVersion": claim.metadata.resource_version,
            }});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await?
        } else {
            claim.clone()
        };
        let status = launched.status.clone().unwrap_or_default();
        let extra = json!({
            "providerID": status.provider_id,
            "imageID": status.image_id,
            "capacity": status.capacity,
            "allocatable": status.allocatable,
        });
        set_condition(&self.client, &self.clock, &updated, LAUNCHED, ConditionStatus::True, "Launched", "", extra)
            .await?;
        tracing::info!(
            nodeclaim = %name,
            provider_id = status.provider_id.as_deref().unwrap_or_default(),
            instance_type = launched.metadata.labels.as_ref().and_then(|l| l.get(labels::INSTANCE_TYPE_LABEL)).map(String::as_str).unwrap_or_default(),
            zone = launched.metadata.labels.as_ref().and_then(|l| l.get(labels::TOPOLOGY_ZONE_LABEL)).map(String::as_str).unwrap_or_default(),
            capacity_type = launched.metadata.labels.as_ref().and_then(|l| l.get(labels::CAPACITY_TYPE_LABEL)).map(String::as_str).unwrap_or_default(),
            "launched nodeclaim"
        );
        Ok(())
    }

    async fn delete(&self, claim: &NodeClaim, reason: &str) -> LaunchOutcome {
        let api: Api<NodeClaim> = Api::all(self.client.clone());
        let name = claim.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {
                tracing::info!(nodeclaim = %name, reason, "deleted nodeclaim");
                LaunchOutcome::Deleted(reason.to_string())
            }
            Err(error) => LaunchOutcome::Retry(format!("deleting: {error}")),
        }
    }
}
