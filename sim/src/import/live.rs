//! Reading the same kinds from a live cluster through a kubeconfig (kube-rs), as one
//! `kind: List` dump, so the rest of the import is the same as for a file. A kind the
//! cluster does not serve (no NodeOverlay CRD, say) is skipped and named.

use std::path::Path;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

use super::Input;

/// The kinds `kubectl get nodepools,ec2nodeclasses,nodeoverlays,deployments,statefulsets,
/// daemonsets,jobs,pdbs,priorityclasses -A` reads: (group, version, kind, plural).
pub const KINDS: &[(&str, &str, &str, &str)] = &[
    ("karpenter.sh", "v1", "NodePool", "nodepools"),
    ("karpenter.k8s.aws", "v1", "EC2NodeClass", "ec2nodeclasses"),
    ("karpenter.sh", "v1alpha1", "NodeOverlay", "nodeoverlays"),
    ("apps", "v1", "Deployment", "deployments"),
    ("apps", "v1", "StatefulSet", "statefulsets"),
    ("apps", "v1", "DaemonSet", "daemonsets"),
    ("batch", "v1", "Job", "jobs"),
    ("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets"),
    ("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses"),
];

/// What a live read found: the dump, and the kinds the cluster does not serve.
#[derive(Debug)]
pub struct Fetched {
    /// One `kind: List` (JSON) with every object, named after the kubeconfig.
    pub input: Input,
    /// Kinds answered with 404 (not installed).
    pub not_served: Vec<String>,
}

/// Lists every kind of [`KINDS`] in every namespace from the cluster `kubeconfig` points at
/// (its current context).
pub async fn fetch(kubeconfig: &Path) -> anyhow::Result<Fetched> {
    let kc = Kubeconfig::read_from(kubeconfig).map_err(|e| anyhow::anyhow!("{}: {e}", kubeconfig.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| anyhow::anyhow!("{}: {e}", kubeconfig.display()))?;
    let client = kube::Client::try_from(config).map_err(|e| anyhow::anyhow!("{}: {e}", kubeconfig.display()))?;
    let mut items = Vec::new();
    let mut not_served = Vec::new();
    for (group, version, kind, plural) in KINDS {
        let api_version = if group.is_empty() { (*version).to_string() } else { format!("{group}/{version}") };
        let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let list = match api.list(&ListParams::default()).await {
            Ok(list) => list,
            Err(kube::Error::Api(e)) if e.code == 404 => {
                not_served.push(format!("{plural}.{group}"));
                continue;
            }
            Err(e) => anyhow::bail!("{}: listing {plural}.{group}: {e}", kubeconfig.display()),
        };
        for object in list.items {
            let mut v = serde_json::to_value(&object)?;
            // List items come without their type; the dump format needs it.
            v["apiVersion"] = json!(api_version);
            v["kind"] = json!(kind);
            items.push(v);
        }
    }
    let dump = json!({"apiVersion": "v1", "kind": "List", "items": Value::Array(items)});
    Ok(Fetched {
        input: Input { path: kubeconfig.to_path_buf(), text: serde_json::to_string_pretty(&dump)? },
        not_served,
    })
}
