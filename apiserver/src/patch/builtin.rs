//! The patch table of the built-in kinds the server serves, transcribed from the Go struct
//! tags of k8s.io/api (`patchStrategy`, `patchMergeKey`, `+listType`, `+listMapKey`,
//! `+mapType`, `+structType`). Fields not listed merge as structs, and their lists are
//! replaced (no strategy, atomic), which is also what the Go types say for them.

use serde_json::json;

use super::schema::FieldSchema as S;

/// The built-in kinds with a patch table (the server serves exactly these).
pub const KINDS: &[&str] = &[
    "Pod",
    "Node",
    "Namespace",
    "Event",
    "Service",
    "Deployment",
    "ReplicaSet",
    "DaemonSet",
    "StatefulSet",
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "PriorityClass",
    "Job",
    "PodDisruptionBudget",
    "Lease",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "VolumeAttachment",
];

/// The root schema of a built-in kind, or `None` if the server does not serve it.
pub fn root(kind: &str) -> Option<S> {
    let (spec, status) = match kind {
        "Pod" => (pod_spec(), pod_status()),
        "Node" => (node_spec(), node_status()),
        "Namespace" => (
            S::structure(vec![("finalizers", S::atomic_list(S::scalar()))]),
            S::structure(vec![("conditions", conditions())]),
        ),
        "Service" => (service_spec(), service_status()),
        "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet" => (
            S::structure(vec![("selector", label_selector()), ("template", pod_template())]),
            S::structure(vec![("conditions", conditions())]),
        ),
        "Job" => (
            S::structure(vec![("selector", label_selector()), ("template", pod_template())]),
            S::structure(vec![("conditions", conditions().applied_atomically())]),
        ),
        "PodDisruptionBudget" => (
            S::structure(vec![("selector", label_selector().replaced_by_patch())]),
            S::structure(vec![("conditions", conditions()), ("disruptedPods", S::map_of(S::scalar()))]),
        ),
        "Event" => {
            let reference = S::unknown().atomic_struct();
            return Some(S::structure(vec![
                ("apiVersion", S::scalar()),
                ("kind", S::scalar()),
                ("metadata", object_meta()),
                ("involvedObject", reference.clone()),
                ("related", reference),
            ]));
        }
        "Lease" => (S::unknown(), S::unknown()),
        // Their lists (accessModes, nodeSelectorTerms, topologies) are atomic in k8s.io/api:
        // replaced, as the unlisted fields of a structure are.
        "PersistentVolumeClaim" => (S::structure(vec![]), S::structure(vec![("conditions", conditions())])),
        "PersistentVolume" | "VolumeAttachment" => (S::structure(vec![]), S::structure(vec![])),
        // No spec or status: data maps merge key by key; ServiceAccount.secrets merges by
        // name (`patchStrategy:"merge" patchMergeKey:"name"`).
        "ConfigMap" | "Secret" | "ServiceAccount" | "PriorityClass" | "StorageClass" => {
            let mut fields = vec![("apiVersion", S::scalar()), ("kind", S::scalar()), ("metadata", object_meta())];
            if kind == "ServiceAccount" {
                fields.push(("secrets", S::map_list(&["name"], S::unknown())));
            }
            return Some(S::structure(fields));
        }
        _ => return None,
    };
    Some(S::structure(vec![
        ("apiVersion", S::scalar()),
        ("kind", S::scalar()),
        ("metadata", object_meta()),
        ("spec", spec),
        ("status", status),
    ]))
}

/// metav1.ObjectMeta: shared by every kind, custom resources included.
pub fn object_meta() -> S {
    S::structure(vec![
        ("labels", S::map_of(S::scalar())),
        ("annotations", S::map_of(S::scalar())),
        ("finalizers", S::set_list()),
        ("ownerReferences", S::map_list(&["uid"], S::unknown())),
        ("managedFields", S::atomic_list(S::unknown())),
    ])
}

/// metav1.LabelSelector is `+structType=atomic`.
fn label_selector() -> S {
    S::structure(vec![("matchLabels", S::map_of(S::scalar())), ("matchExpressions", S::atomic_list(S::unknown()))])
        .atomic()
}

/// Status conditions merged by `type`.
fn conditions() -> S {
    S::map_list(&["type"], S::unknown())
}

fn pod_template() -> S {
    S::structure(vec![("metadata", object_meta()), ("spec", pod_spec())])
}

fn container() -> S {
    let port = S::structure(vec![("containerPort", S::scalar()), ("protocol", S::scalar().with_default(json!("TCP")))]);
    S::structure(vec![
        ("args", S::atomic_list(S::scalar())),
        ("command", S::atomic_list(S::scalar())),
        ("env", S::map_list(&["name"], S::unknown())),
        ("envFrom", S::atomic_list(S::unknown())),
        ("ports", S::map_list(&["containerPort", "protocol"], port)),
        ("volumeMounts", S::map_list(&["mountPath"], S::unknown())),
        ("volumeDevices", S::map_list(&["devicePath"], S::unknown())),
        ("resizePolicy", S::atomic_list(S::unknown())),
        (
            "resources",
            S::structure(vec![
                ("limits", S::map_of(S::scalar())),
                ("requests", S::map_of(S::scalar())),
                ("claims", S::map_list(&["name"], S::unknown())),
            ]),
        ),
    ])
}

fn pod_spec() -> S {
    S::structure(vec![
        ("containers", S::map_list(&["name"], container()).always_present()),
        ("initContainers", S::map_list(&["name"], container())),
        ("ephemeralContainers", S::map_list(&["name"], container())),
        ("volumes", S::map_list(&["name"], S::unknown())),
        ("imagePullSecrets", S::map_list(&["name"], S::unknown())),
        ("hostAliases", S::map_list(&["ip"], S::unknown())),
        ("topologySpreadConstraints", S::map_list(&["topologyKey", "whenUnsatisfiable"], S::unknown())),
        ("schedulingGates", S::map_list(&["name"], S::unknown())),
        ("resourceClaims", S::map_list(&["name"], S::unknown())),
        ("tolerations", S::atomic_list(S::unknown())),
        ("readinessGates", S::atomic_list(S::unknown())),
        ("nodeSelector", S::atomic_map()),
        ("overhead", S::map_of(S::scalar())),
    ])
}

fn pod_status() -> S {
    S::structure(vec![
        ("conditions", conditions()),
        ("podIPs", S::map_list(&["ip"], S::unknown())),
        ("hostIPs", S::map_list(&["ip"], S::unknown())),
        ("containerStatuses", S::atomic_list(S::unknown())),
        ("initContainerStatuses", S::atomic_list(S::unknown())),
        ("ephemeralContainerStatuses", S::atomic_list(S::unknown())),
        ("resourceClaimStatuses", S::map_list(&["name"], S::unknown())),
    ])
}

fn node_spec() -> S {
    S::structure(vec![("podCIDRs", S::set_list()), ("taints", S::atomic_list(S::unknown()))])
}

fn node_status() -> S {
    S::structure(vec![
        ("addresses", S::map_list(&["type"], S::unknown())),
        ("conditions", conditions()),
        ("capacity", S::map_of(S::scalar())),
        ("allocatable", S::map_of(S::scalar())),
        ("images", S::atomic_list(S::unknown())),
        ("volumesInUse", S::atomic_list(S::scalar())),
        ("volumesAttached", S::atomic_list(S::unknown())),
    ])
}

fn service_spec() -> S {
    let port = S::structure(vec![("port", S::scalar()), ("protocol", S::scalar().with_default(json!("TCP")))]);
    S::structure(vec![
        ("ports", S::map_list(&["port", "protocol"], port)),
        ("selector", S::atomic_map()),
        ("clusterIPs", S::atomic_list(S::scalar())),
        ("externalIPs", S::atomic_list(S::scalar())),
        ("ipFamilies", S::atomic_list(S::scalar())),
        ("loadBalancerSourceRanges", S::atomic_list(S::scalar())),
    ])
}

fn service_status() -> S {
    S::structure(vec![("conditions", conditions())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::schema::ListType;

    #[test]
    fn every_served_kind_has_a_table() {
        for kind in KINDS {
            assert!(root(kind).is_some(), "{kind}");
        }
        assert!(root("NodePool").is_none());
    }

    #[test]
    fn deployment_template_containers_merge_by_name_and_ports_by_container_port() {
        let d = root("Deployment").unwrap();
        let c = d.child("spec").child("template").child("spec").child("containers");
        assert_eq!(c.list_type, ListType::Map(vec!["name".to_string()]));
        let ports = c.item().child("ports");
        assert_eq!(ports.patch_merge_key.as_deref(), Some("containerPort"));
        assert_eq!(ports.list_type, ListType::Map(vec!["containerPort".to_string(), "protocol".to_string()]));
        assert!(d.child("spec").child("selector").atomic);
    }
}
