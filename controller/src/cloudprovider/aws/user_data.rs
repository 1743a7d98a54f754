//! Node bootstrap user data per AMI family (aws:pkg/providers/amifamily/bootstrap): AL2023
//! nodeadm `NodeConfig` in MIME multipart, AL2 `bootstrap.sh`, Bottlerocket TOML, or the
//! user's own for Custom. Every family registers with the NodeClaim's labels and taints plus
//! `karpenter.sh/unregistered:NoExecute`, which registration removes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use base64::Engine as _;

use crate::apis::ec2nodeclass::AMIFamily;
use crate::apis::labels;

/// What the bootstrap needs to know.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bootstrap {
    /// EKS cluster name.
    pub cluster_name: String,
    /// API server endpoint.
    pub cluster_endpoint: String,
    /// Base64 CA bundle.
    pub ca_bundle: String,
    /// Cluster DNS IP (kubelet `clusterDNS`), when known.
    pub cluster_dns: Option<String>,
    /// Node labels (the NodeClaim's single-valued labels).
    pub labels: BTreeMap<String, String>,
    /// `key=value:Effect` taints, including startup taints and the unregistered taint.
    pub taints: Vec<String>,
    /// `kubelet.maxPods`, when the class sets it.
    pub max_pods: Option<i32>,
    /// The class's `spec.userData`, merged as Karpenter does.
    pub custom: Option<String>,
}

/// The service CIDR nodeadm needs, derived from the cluster DNS IP (EKS puts DNS at `.10` of
/// the service range, which is 10.100.0.0/16 or 172.20.0.0/16 unless customised).
fn service_cidr(dns: &str) -> Option<String> {
    let octets: Vec<&str> = dns.split('.').collect();
    (octets.len() == 4).then(|| format!("{}.{}.0.0/16", octets[0], octets[1]))
}

impl Bootstrap {
    fn label_flag(&self) -> String {
        self.labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
    }

    /// The taints in kubelet `--register-with-taints` form, the unregistered taint first.
    fn taint_flag(&self) -> String {
        let unregistered = format!("{}:{}", labels::UNREGISTERED_TAINT_KEY, labels::UNREGISTERED_TAINT_EFFECT);
        std::iter::once(unregistered).chain(self.taints.iter().cloned()).collect::<Vec<_>>().join(",")
    }

    /// The user data for `family`, base64-encoded as EC2 wants it.
    pub fn render(&self, family: AMIFamily) -> String {
        let text = match family {
            AMIFamily::AL2023 => self.nodeadm(),
            AMIFamily::AL2 => self.bootstrap_sh(),
            AMIFamily::Bottlerocket => self.bottlerocket(),
            AMIFamily::Custom | AMIFamily::Windows2019 | AMIFamily::Windows2022 | AMIFamily::Windows2025 => {
                self.custom.clone().unwrap_or_default()
            }
        };
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    fn nodeadm(&self) -> String {
        let mut config = String::new();
        let _ = writeln!(config, "apiVersion: node.eks.aws/v1alpha1");
        let _ = writeln!(config, "kind: NodeConfig");
        let _ = writeln!(config, "spec:");
        let _ = writeln!(config, "  cluster:");
        let _ = writeln!(config, "    name: {}", self.cluster_name);
        let _ = writeln!(config, "    apiServerEndpoint: {}", self.cluster_endpoint);
        let _ = writeln!(config, "    certificateAuthority: {}", self.ca_bundle);
        if let Some(cidr) = self.cluster_dns.as_deref().and_then(service_cidr) {
            let _ = writeln!(config, "    cidr: {cidr}");
        }
        let _ = writeln!(config, "  kubelet:");
        let _ = writeln!(config, "    config:");
        if let Some(dns) = &self.cluster_dns {
            let _ = writeln!(config, "      clusterDNS:");
            let _ = writeln!(config, "      - {dns}");
        }
        if let Some(max_pods) = self.max_pods {
            let _ = writeln!(config, "      maxPods: {max_pods}");
        }
        let _ = writeln!(config, "    flags:");
        let _ = writeln!(config, "    - --node-labels=\"{}\"", self.label_flag());
        let _ = writeln!(config, "    - --register-with-taints=\"{}\"", self.taint_flag());
        if let Some(max_pods) = self.max_pods {
            let _ = writeln!(config, "    - --max-pods={max_pods}");
        }
        let boundary = "//";
        let mut mime = format!("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"{boundary}\"\n\n");
        if let Some(custom) = &self.custom {
            // The user's part first, as Karpenter merges it: nodeadm applies ours last.
            let content_type = if custom.contains("apiVersion: node.eks.aws") {
                "application/node.eks.aws"
            } else {
                "text/x-shellscript; charset=\"us-ascii\""
            };
            let _ = write!(mime, "--{boundary}\nContent-Type: {content_type}\n\n{}\n\n", custom.trim_end());
        }
        let _ = write!(mime, "--{boundary}\nContent-Type: application/node.eks.aws\n\n{config}\n--{boundary}--\n");
        mime
    }

    fn bootstrap_sh(&self) -> String {
        let mut args = format!("--node-labels={} --register-with-taints={}", self.label_flag(), self.taint_flag());
        if let Some(max_pods) = self.max_pods {
            let _ = write!(args, " --max-pods={max_pods}");
        }
        let mut script = String::from(
            "#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n",
        );
        if let Some(custom) = &self.custom {
            let _ = writeln!(script, "{}", custom.trim_end());
        }
        let _ = writeln!(
            script,
            "/etc/eks/bootstrap.sh '{}' --apiserver-endpoint '{}' --b64-cluster-ca '{}'{} --use-max-pods false --kubelet-extra-args '{args}'",
            self.cluster_name,
            self.cluster_endpoint,
            self.ca_bundle,
            self.cluster_dns.as_deref().map(|dns| format!(" --dns-cluster-ip '{dns}'")).unwrap_or_default(),
        );
        script
    }

    fn bottlerocket(&self) -> String {
        let mut toml = String::new();
        if let Some(custom) = &self.custom {
            let _ = writeln!(toml, "{}", custom.trim_end());
        }
        let _ = writeln!(toml, "[settings.kubernetes]");
        let _ = writeln!(toml, "cluster-name = \"{}\"", self.cluster_name);
        let _ = writeln!(toml, "api-server = \"{}\"", self.cluster_endpoint);
        let _ = writeln!(toml, "cluster-certificate = \"{}\"", self.ca_bundle);
        if let Some(dns) = &self.cluster_dns {
            let _ = writeln!(toml, "cluster-dns-ip = \"{dns}\"");
        }
        if let Some(max_pods) = self.max_pods {
            let _ = writeln!(toml, "max-pods = {max_pods}");
        }
        let _ = writeln!(toml, "[settings.kubernetes.node-labels]");
        for (key, value) in &self.labels {
            let _ = writeln!(toml, "\"{key}\" = \"{value}\"");
        }
        let _ = writeln!(toml, "[settings.kubernetes.node-taints]");
        let unregistered = format!("{}:{}", labels::UNREGISTERED_TAINT_KEY, labels::UNREGISTERED_TAINT_EFFECT);
        for taint in std::iter::once(&unregistered).chain(&self.taints) {
            let (key_value, effect) = taint.rsplit_once(':').unwrap_or((taint, "NoSchedule"));
            let (key, value) = key_value.split_once('=').unwrap_or((key_value, ""));
            let _ = writeln!(toml, "\"{key}\" = [\"{value}:{effect}\"]");
        }
        // Bottlerocket reads --register-with-taints nowhere; keep the flag form in a comment so
        // tooling that greps kubelet flags (and our simulator's node agent) sees the same taints.
        let _ = writeln!(toml, "# --node-labels={} --register-with-taints={}", self.label_flag(), self.taint_flag());
        toml
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(text: &str) -> String {
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(text).expect("base64")).expect("utf8")
    }

    fn bootstrap() -> Bootstrap {
        Bootstrap {
            cluster_name: "dovetail".into(),
            cluster_endpoint: "https://apiserver:6443".into(),
            ca_bundle: "Q0E=".into(),
            cluster_dns: Some("10.100.0.10".into()),
            labels: BTreeMap::from([("karpenter.sh/nodepool".into(), "default".into())]),
            taints: vec!["dedicated=gpu:NoSchedule".into()],
            max_pods: None,
            custom: None,
        }
    }

    #[test]
    fn al2023_registers_with_labels_and_the_unregistered_taint_first() {
        let text = decode(&bootstrap().render(AMIFamily::AL2023));
        assert!(text.contains("kind: NodeConfig"), "{text}");
        assert!(text.contains("--node-labels=\"karpenter.sh/nodepool=default\""), "{text}");
        assert!(
            text.contains("--register-with-taints=\"karpenter.sh/unregistered:NoExecute,dedicated=gpu:NoSchedule\""),
            "{text}"
        );
        assert!(text.contains("cidr: 10.100.0.0/16"), "{text}");
        assert!(!text.contains("max-pods"), "{text}");
    }

    #[test]
    fn max_pods_and_custom_user_data_are_carried() {
        let mut b = bootstrap();
        b.max_pods = Some(58);
        b.custom = Some("#!/bin/bash\necho hi".into());
        let text = decode(&b.render(AMIFamily::AL2023));
        assert!(text.contains("maxPods: 58") && text.contains("--max-pods=58"), "{text}");
        assert!(text.find("echo hi") < text.find("kind: NodeConfig"), "the user's part comes first: {text}");
        let al2 = decode(&b.render(AMIFamily::AL2));
        assert!(al2.contains("/etc/eks/bootstrap.sh 'dovetail'") && al2.contains("--max-pods=58"), "{al2}");
        let custom = decode(&b.render(AMIFamily::Custom));
        assert_eq!(custom, "#!/bin/bash\necho hi");
    }
}
