//! Applying manifests through an unmodified `kube::Client`: discovery (cached), create,
//! server-side apply, delete, with retries on the errors a faulty API server returns.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::Value;

use crate::apiserver::ApiServer;
use crate::scenario::{ObjectRef, Step};

/// An API failure during an action.
#[derive(Debug)]
pub struct StepError {
    /// HTTP status, when the API answered.
    pub code: Option<u16>,
    /// What went wrong.
    pub message: String,
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<kube::Error> for StepError {
    fn from(e: kube::Error) -> Self {
        match &e {
            kube::Error::Api(s) => StepError { code: Some(s.code), message: format!("{} ({})", s.message, s.code) },
            other => StepError { code: None, message: other.to_string() },
        }
    }
}

impl StepError {
    /// Whether trying again may succeed: throttling, server errors, conflicts and
    /// transport failures (injected faults), not validation errors.
    pub fn retryable(&self) -> bool {
        matches!(self.code, None | Some(409 | 429 | 500 | 502 | 503 | 504))
    }
}

/// A client with a discovery cache.
pub struct Applier {
    client: kube::Client,
    resources: BTreeMap<(String, String), (ApiResource, bool)>,
}

impl Applier {
    /// Wraps a client.
    pub fn new(client: kube::Client) -> Self {
        Self { client, resources: BTreeMap::new() }
    }

    async fn resource(&mut self, api_version: &str, kind: &str) -> Result<(ApiResource, bool), StepError> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(r) = self.resources.get(&key) {
            return Ok(r.clone());
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (ar, caps) = kube::discovery::pinned_kind(&self.client, &gvk).await?;
        let r = (ar, caps.scope == kube::discovery::Scope::Namespaced);
        self.resources.insert(key, r.clone());
        Ok(r)
    }

    fn api_for(&self, ar: &ApiResource, namespaced: bool, ns: Option<&str>) -> Api<DynamicObject> {
        if namespaced {
            Api::namespaced_with(self.client.clone(), ns.unwrap_or("default"), ar)
        } else {
            Api::all_with(self.client.clone(), ar)
        }
    }

    /// Creates the object, or server-side applies it when it has a name (create or update).
    pub async fn apply(&mut self, obj: &Value) -> Result<(), StepError> {
        let bad = |m: &str| StepError { code: None, message: m.to_string() };
        let api_version = obj["apiVersion"].as_str().ok_or_else(|| bad("apiVersion missing"))?;
        let kind = obj["kind"].as_str().ok_or_else(|| bad("kind missing"))?;
        let (ar, namespaced) = self.resource(api_version, kind).await?;
        let api = self.api_for(&ar, namespaced, obj["metadata"]["namespace"].as_str());
        let dynamic: DynamicObject = serde_json::from_value(obj.clone()).map_err(|e| bad(&e.to_string()))?;
        match obj["metadata"]["name"].as_str() {
            Some(name) => {
                api.patch(name, &PatchParams::apply("dovetail-scenario").force(), &Patch::Apply(&dynamic)).await?;
            }
            None => {
                api.create(&PostParams::default(), &dynamic).await?;
            }
        }
        Ok(())
    }

    /// Deletes an object.
    pub async fn delete(&mut self, r: &ObjectRef) -> Result<(), StepError> {
        let (ar, namespaced) = self.resource(&r.api_version, &r.kind).await?;
        let api = self.api_for(&ar, namespaced, r.namespace.as_deref());
        api.delete(&r.name, &DeleteParams::default()).await?;
        Ok(())
    }

    /// [`Self::apply`], retried every second (up to `tries` times) while the error is retryable.
    pub async fn apply_retrying(&mut self, obj: &Value, tries: u32) -> Result<(), StepError> {
        let mut left = tries.max(1);
        loop {
            match self.apply(obj).await {
                Err(e) if e.retryable() && left > 1 => {
                    left -= 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                other => return other,
            }
        }
    }

    /// Performs a scenario step.
    pub async fn perform(&mut self, server: &ApiServer, step: &Step) -> Result<(), StepError> {
        if let Some(obj) = &step.apply {
            return self.apply(obj).await;
        }
        if let Some(r) = &step.delete {
            return self.delete(r).await;
        }
        server.store.lock().unwrap_or_else(|e| e.into_inner()).expire_watches();
        Ok(())
    }
}

/// A step for messages.
pub fn step_name(step: &Step) -> String {
    if let Some(obj) = &step.apply {
        format!("apply {}", describe(obj))
    } else if let Some(r) = &step.delete {
        format!("delete {} {}", r.kind, r.name)
    } else {
        "expireWatches".into()
    }
}

/// `Kind name` of a manifest.
pub fn describe(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("?");
    let name = obj["metadata"]["name"].as_str().or(obj["metadata"]["generateName"].as_str()).unwrap_or("?");
    format!("{kind} {name}")
}
