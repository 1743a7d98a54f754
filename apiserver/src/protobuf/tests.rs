//! The decoder against real protobuf: values of k8s-pb's prost types (Kubernetes' own
//! messages), encoded by prost in the envelope client-go writes, must decode to the JSON
//! kube-apiserver would store, which k8s-openapi's types read back.

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message as _;
use serde_json::json;

use super::{MAGIC, decode};

/// A body as client-go's protobuf serializer writes it.
fn body(api_version: &str, kind: &str, msg: &impl prost::Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta { api_version: Some(api_version.into()), kind: Some(kind.into()) }),
        raw: Some(msg.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// ObjectMeta as Go writes it: every non-pointer string present, empty or not.
fn meta(name: &str, labels: &[(&str, &str)]) -> meta::ObjectMeta {
    meta::ObjectMeta {
        name: Some(name.into()),
        generate_name: Some(String::new()),
        namespace: Some(String::new()),
        uid: Some(String::new()),
        resource_version: Some(String::new()),
        generation: Some(0),
        // Go writes a zero creationTimestamp as an empty message.
        creation_timestamp: Some(meta::Time::default()),
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    }
}

fn container(name: &str, image: &str) -> core::Container {
    core::Container {
        name: Some(name.into()),
        image: Some(image.into()),
        resources: Some(core::ResourceRequirements {
            requests: [("cpu".to_string(), Quantity { string: Some("250m".into()) })].into(),
            ..Default::default()
        }),
        termination_message_path: Some(String::new()),
        image_pull_policy: Some(String::new()),
        ..Default::default()
    }
}

#[test]
fn kubectl_create_namespace() {
    let ns = core::Namespace {
        metadata: Some(meta("team-a", &[])),
        spec: Some(Default::default()),
        status: Some(Default::default()),
    };
    let got = decode(&body("v1", "Namespace", &ns)).unwrap();
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "generation": 0}, "spec": {}, "status": {}})
    );
    assert_eq!(got.as_object().unwrap().keys().take(2).collect::<Vec<_>>(), ["apiVersion", "kind"]);
}

#[test]
fn kubectl_run_pod() {
    let pod = core::Pod {
        metadata: Some(meta("web", &[("run", "web")])),
        spec: Some(core::PodSpec {
            containers: vec![container("web", "nginx")],
            restart_policy: Some("Always".into()),
            dns_policy: Some("ClusterFirst".into()),
            host_ipc: Some(false),
            termination_grace_period_seconds: Some(30),
            ..Default::default()
        }),
        status: Some(Default::default()),
    };
    let got = decode(&body("v1", "Pod", &pod)).unwrap();
    assert_eq!(got["metadata"]["labels"], json!({"run": "web"}));
    assert_eq!(
        got["spec"],
        json!({
            "containers": [{"name": "web", "image": "nginx", "resources": {"requests": {"cpu": "250m"}}}],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "hostIPC": false
        })
    );
    let typed: k8s_openapi::api::core::v1::Pod = serde_json::from_value(got).unwrap();
    assert_eq!(typed.spec.unwrap().containers[0].image.as_deref(), Some("nginx"));
}

#[test]
fn kubectl_create_deployment_keeps_zero_replicas() {
    let labels = [("app", "web")];
    let d = apps::Deployment {
        metadata: Some(meta("web", &labels)),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            selector: Some(meta::LabelSelector {
                match_labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                ..Default::default()
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta("", &labels)),
                spec: Some(core::PodSpec { containers: vec![container("nginx", "nginx")], ..Default::default() }),
            }),
            strategy: Some(Default::default()),
            ..Default::default()
        }),
        status: Some(Default::default()),
    };
    let got = decode(&body("apps/v1", "Deployment", &d)).unwrap();
    assert_eq!(got["spec"]["replicas"], json!(0), "a pointer to zero is not absent");
    assert_eq!(got["spec"]["selector"], json!({"matchLabels": {"app": "web"}}));
    assert_eq!(got["spec"]["template"]["metadata"], json!({"labels": {"app": "web"}, "generation": 0}));
    let typed: k8s_openapi::api::apps::v1::Deployment = serde_json::from_value(got).unwrap();
    assert_eq!(typed.spec.unwrap().template.spec.unwrap().containers[0].name, "nginx");
}

#[test]
fn kubectl_expose_service_with_int_or_string_ports() {
    let port = |name: &str, target: IntOrString| core::ServicePort {
        name: Some(name.into()),
        protocol: Some("TCP".into()),
        port: Some(80),
        target_port: Some(target),
        ..Default::default()
    };
    let svc = core::Service {
        metadata: Some(meta("web", &[])),
        spec: Some(core::ServiceSpec {
            ports: vec![
                port("http", IntOrString { r#type: Some(0), int_val: Some(8080), str_val: Some(String::new()) }),
                port("named", IntOrString { r#type: Some(1), int_val: Some(0), str_val: Some("http".into()) }),
            ],
            selector: [("app".to_string(), "web".to_string())].into(),
            ..Default::default()
        }),
        status: Some(Default::default()),
    };
    let got = decode(&body("v1", "Service", &svc)).unwrap();
    assert_eq!(got["spec"]["ports"][0]["targetPort"], json!(8080));
    assert_eq!(got["spec"]["ports"][1]["targetPort"], json!("http"));
    assert_eq!(got["spec"]["selector"], json!({"app": "web"}));
    let _: k8s_openapi::api::core::v1::Service = serde_json::from_value(got).unwrap();
}

#[test]
fn configmaps_secrets_times_and_inline_structs() {
    let mut m = meta("creds", &[]);
    m.creation_timestamp = Some(meta::Time { seconds: Some(1_767_225_600), nanos: Some(0) });
    m.deletion_timestamp = Some(meta::Time { seconds: Some(0), nanos: Some(0) });
    let secret = core::Secret {
        metadata: Some(m),
        data: [("password".to_string(), b"hunter2".to_vec())].into(),
        r#type: Some("Opaque".into()),
        ..Default::default()
    };
    let got = decode(&body("v1", "Secret", &secret)).unwrap();
    assert_eq!(got["data"], json!({"password": "aHVudGVyMg=="}), "bytes are base64 in JSON");
    assert_eq!(got["metadata"]["creationTimestamp"], json!("2026-01-01T00:00:00Z"));
    assert_eq!(got["metadata"]["deletionTimestamp"], json!("1970-01-01T00:00:00Z"), "a present zero Unix time");
    let mut zero_time = meta("x", &[]);
    zero_time.creation_timestamp = Some(meta::Time { seconds: Some(-62_135_596_800), nanos: Some(0) });
    let cm = core::ConfigMap {
        metadata: Some(zero_time),
        data: [("k".to_string(), "v".to_string())].into(),
        ..Default::default()
    };
    let got = decode(&body("v1", "ConfigMap", &cm)).unwrap();
    assert_eq!(got["metadata"].get("creationTimestamp"), None, "Go's zero time is null, left out");
    assert_eq!(got["data"], json!({"k": "v"}));

    // Volume embeds VolumeSource inline; Probe embeds ProbeHandler inline.
    let pod = core::Pod {
        metadata: Some(meta("p", &[])),
        spec: Some(core::PodSpec {
            volumes: vec![core::Volume {
                name: Some("cfg".into()),
                volume_source: Some(core::VolumeSource {
                    config_map: Some(core::ConfigMapVolumeSource {
                        local_object_reference: Some(core::LocalObjectReference { name: Some("settings".into()) }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
            }],
            containers: vec![core::Container {
                name: Some("c".into()),
                readiness_probe: Some(core::Probe {
                    handler: Some(core::ProbeHandler {
                        tcp_socket: Some(core::TcpSocketAction {
                            port: Some(IntOrString { r#type: Some(0), int_val: Some(80), str_val: None }),
                            host: None,
                        }),
                        ..Default::default()
                    }),
                    period_seconds: Some(5),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    let got = decode(&body("v1", "Pod", &pod)).unwrap();
    assert_eq!(got["spec"]["volumes"], json!([{"name": "cfg", "configMap": {"name": "settings"}}]));
    assert_eq!(got["spec"]["containers"][0]["readinessProbe"], json!({"tcpSocket": {"port": 80}, "periodSeconds": 5}));
}

#[test]
fn bad_bodies_are_refused_with_a_reason() {
    assert!(decode(b"{\"kind\":\"Pod\"}").unwrap_err().contains("k8s\\x00"));
    let ns = core::Namespace::default();
    assert!(decode(&body("karpenter.sh/v1", "NodePool", &ns)).unwrap_err().contains("no protobuf message"));
    let mut truncated =
        body("v1", "Namespace", &core::Namespace { metadata: Some(meta("a", &[])), ..Default::default() });
    truncated.truncate(truncated.len() / 2);
    assert!(decode(&truncated).is_err());
    let mut gz = Unknown::decode(&body("v1", "Namespace", &ns)[4..]).unwrap();
    gz.content_encoding = Some("gzip".into());
    let mut b = MAGIC.to_vec();
    b.extend(gz.encode_to_vec());
    assert!(decode(&b).unwrap_err().contains("gzip"));
}

#[test]
fn delete_options_in_any_group_version() {
    let opts = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        propagation_policy: Some("Foreground".into()),
        preconditions: Some(meta::Preconditions { uid: Some("u-1".into()), resource_version: None }),
        ..Default::default()
    };
    let got = decode(&body("apps/v1", "DeleteOptions", &opts)).unwrap();
    assert_eq!(
        got,
        json!({"apiVersion": "apps/v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "preconditions": {"uid": "u-1"}, "propagationPolicy": "Foreground"})
    );
}
