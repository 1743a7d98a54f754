//! Command-line flags and environment variables of the `dovetail-controller` binary, named as
//! Karpenter names them (core `pkg/operator/options/options.go`, aws `pkg/operator/options`),
//! so a Karpenter Helm values file or Deployment env block carries over. [`Flags::resolve`]
//! validates them into the controller's [`Settings`] plus the process-level [`ProcessOptions`]
//! (ports, leader election, logging, AWS endpoints), and every error names the flag, the value
//! given and what is allowed.
//!
//! This file holds the flag definitions and their resolution; beside it are
//! `process_options.rs` (what the process gets), `flag_error.rs` (errors and value checks) and
//! `value_parsers.rs` (Go durations, feature gates, policies).

use std::time::Duration;

use base64::Engine;
use clap::{ArgAction, Parser};

use super::settings::{FeatureGates, Settings};
use crate::scheduling::{MinValuesPolicy, PreferencePolicy};

mod flag_error;
mod process_options;
mod value_parsers;

pub use flag_error::FlagError;
use flag_error::{flag_error, format_duration, truncate, validate_dns_label, validate_url};
pub use process_options::{AwsEndpoints, LeaderElectionOptions, LogLevel, ProcessOptions};
pub use value_parsers::{parse_feature_gates, parse_go_duration};
use value_parsers::{parse_min_values_policy, parse_preference_policy};

/// Karpenter's default `--feature-gates` value (v1.6+), which a partial `FEATURE_GATES` overrides
/// gate by gate.
pub const DEFAULT_FEATURE_GATES: &str =
    "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false";

/// Karpenter's leader election Lease name (core `operator.go`, `LeaderElectionID`).
pub const DEFAULT_LEADER_ELECTION_NAME: &str = "karpenter-leader-election";

/// Every flag of the binary. Each also reads the environment variable Karpenter uses for it;
/// a flag on the command line wins over the variable.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "dovetail-controller",
    version,
    about = "Dovetail: a Karpenter v1 compatible node autoprovisioner for EKS",
    long_about = "Dovetail: a Karpenter v1 compatible node autoprovisioner for EKS.\n\n\
        Every flag can also be set through the environment variable shown, as in Karpenter.\n\
        Without the `tls` cargo feature the binary speaks plain HTTP only (kubeconfig or\n\
        in-cluster over http://, AWS endpoints such as moto_server or LocalStack over http://)."
)]
pub struct Flags {
    /// The cluster name: tags instances and scopes garbage collection (required).
    #[arg(long, env = "CLUSTER_NAME", default_value = "")]
    pub cluster_name: String,
    /// The API server URL nodes join with, written into their user data (required: Dovetail
    /// does not call eks:DescribeCluster to discover it).
    #[arg(long, env = "CLUSTER_ENDPOINT", default_value = "")]
    pub cluster_endpoint: String,
    /// The cluster's CA bundle, base64, written into node user data.
    #[arg(long, env = "CLUSTER_CA_BUNDLE", default_value = "")]
    pub cluster_ca_bundle: String,
    /// The cluster DNS service IP for kubelets (Dovetail extension; nodeadm discovers it otherwise).
    #[arg(long, env = "CLUSTER_DNS")]
    pub cluster_dns: Option<String>,
    /// The SQS queue name for spot interruption, rebalance and health events; empty disables
    /// interruption handling.
    #[arg(long, env = "INTERRUPTION_QUEUE", default_value = "")]
    pub interruption_queue: String,
    /// How long the provisioner waits for more pending pods after the last one (Go duration).
    #[arg(long, env = "BATCH_IDLE_DURATION", default_value = "1s", value_parser = parse_go_duration)]
    pub batch_idle_duration: Duration,
    /// The longest a provisioning batch may collect pods (Go duration).
    #[arg(long, env = "BATCH_MAX_DURATION", default_value = "10s", value_parser = parse_go_duration)]
    pub batch_max_duration: Duration,
    /// Feature gates, `Name=true|false` comma-separated; unnamed gates keep their defaults.
    #[arg(long, env = "FEATURE_GATES", default_value = DEFAULT_FEATURE_GATES, value_parser = parse_feature_gates)]
    pub feature_gates: FeatureGates,
    /// Whether scheduling honours preferred affinities and ScheduleAnyway spreads.
    #[arg(long, env = "PREFERENCE_POLICY", default_value = "Respect", value_parser = parse_preference_policy)]
    pub preference_policy: PreferencePolicy,
    /// What to do when a NodePool's minValues cannot be met.
    #[arg(long, env = "MIN_VALUES_POLICY", default_value = "Strict", value_parser = parse_min_values_policy)]
    pub min_values_policy: MinValuesPolicy,
    /// Fraction of instance memory reserved for the hypervisor when computing capacity.
    #[arg(long, env = "VM_MEMORY_OVERHEAD_PERCENT", default_value_t = 0.075)]
    pub vm_memory_overhead_percent: f64,
    /// ENIs reserved per node for other uses (reduces max pods).
    #[arg(long, env = "RESERVED_ENIS", default_value_t = 0)]
    pub reserved_enis: i64,
    /// The cluster has no internet egress: skip the Pricing API.
    #[arg(long, env = "ISOLATED_VPC", default_value = "false", action = ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub isolated_vpc: bool,
    /// Log verbosity; `RUST_LOG`, when set, overrides it with a full filter.
    #[arg(long, env = "LOG_LEVEL", default_value = "info", value_enum)]
    pub log_level: LogLevel,
    /// Port of the Prometheus `/metrics` endpoint.
    #[arg(long, env = "METRICS_PORT", default_value_t = 8080)]
    pub metrics_port: u16,
    /// Port of the `/healthz` and `/readyz` probes.
    #[arg(long, env = "HEALTH_PROBE_PORT", default_value_t = 8081)]
    pub health_probe_port: u16,
    /// Run without leader election (only safe with a single replica).
    #[arg(long, env = "DISABLE_LEADER_ELECTION", default_value = "false", action = ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub disable_leader_election: bool,
    /// The leader election Lease's name.
    #[arg(long, env = "LEADER_ELECTION_NAME", default_value = DEFAULT_LEADER_ELECTION_NAME)]
    pub leader_election_name: String,
    /// The leader election Lease's namespace; defaults to the controller's namespace.
    #[arg(long, env = "LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// The namespace the controller runs in (set from the downward API in the Helm chart).
    #[arg(long, env = "SYSTEM_NAMESPACE", default_value = "kube-system")]
    pub system_namespace: String,
    /// This replica's leader election identity; defaults to the pod name plus a random suffix.
    #[arg(long, env = "POD_NAME")]
    pub leader_election_identity: Option<String>,
    /// AWS region (required).
    #[arg(long, env = "AWS_REGION", default_value = "")]
    pub aws_region: String,
    /// One endpoint for every AWS service (e.g. `http://localhost:5000` for moto_server).
    #[arg(long, env = "AWS_ENDPOINT_URL")]
    pub aws_endpoint_url: Option<String>,
    /// EC2 endpoint, overriding `--aws-endpoint-url`.
    #[arg(long, env = "AWS_ENDPOINT_URL_EC2")]
    pub aws_endpoint_url_ec2: Option<String>,
    /// SQS endpoint, overriding `--aws-endpoint-url`.
    #[arg(long, env = "AWS_ENDPOINT_URL_SQS")]
    pub aws_endpoint_url_sqs: Option<String>,
    /// SSM endpoint, overriding `--aws-endpoint-url`.
    #[arg(long, env = "AWS_ENDPOINT_URL_SSM")]
    pub aws_endpoint_url_ssm: Option<String>,
    /// Price List API endpoint, overriding `--aws-endpoint-url` (not called with `--isolated-vpc`).
    #[arg(long, env = "AWS_ENDPOINT_URL_PRICING")]
    pub aws_endpoint_url_pricing: Option<String>,
}

impl Flags {
    /// Validates the flags into settings and process options.
    ///
    /// # Errors
    /// The first flag whose value is missing or out of range (Karpenter's `Validate` rules,
    /// plus what Dovetail needs because it does not discover cluster details from EKS).
    pub fn resolve(&self) -> Result<(Settings, ProcessOptions), FlagError> {
        if self.cluster_name.trim().is_empty() {
            return Err(flag_error(
                "cluster-name",
                "CLUSTER_NAME",
                &self.cluster_name,
                "a non-empty cluster name is required",
            ));
        }
        validate_url("cluster-endpoint", "CLUSTER_ENDPOINT", &self.cluster_endpoint, true)?;
        if !self.cluster_ca_bundle.is_empty()
            && base64::engine::general_purpose::STANDARD.decode(self.cluster_ca_bundle.trim()).is_err()
        {
            return Err(flag_error(
                "cluster-ca-bundle",
                "CLUSTER_CA_BUNDLE",
                truncate(&self.cluster_ca_bundle),
                "base64 of the PEM CA certificate",
            ));
        }
        if let Some(dns) = &self.cluster_dns
            && dns.parse::<std::net::IpAddr>().is_err()
        {
            return Err(flag_error("cluster-dns", "CLUSTER_DNS", dns, "an IPv4 or IPv6 address"));
        }
        if self.batch_idle_duration.is_zero() {
            return Err(flag_error(
                "batch-idle-duration",
                "BATCH_IDLE_DURATION",
                "0s",
                "a duration above zero, e.g. 1s",
            ));
        }
        if self.batch_max_duration < self.batch_idle_duration {
            return Err(flag_error(
                "batch-max-duration",
                "BATCH_MAX_DURATION",
                format_duration(self.batch_max_duration),
                format!("a duration at least --batch-idle-duration ({})", format_duration(self.batch_idle_duration)),
            ));
        }
        if !self.vm_memory_overhead_percent.is_finite() || !(0.0..1.0).contains(&self.vm_memory_overhead_percent) {
            return Err(flag_error(
                "vm-memory-overhead-percent",
                "VM_MEMORY_OVERHEAD_PERCENT",
                self.vm_memory_overhead_percent.to_string(),
                "a fraction in [0, 1), e.g. 0.075",
            ));
        }
        if self.reserved_enis < 0 {
            return Err(flag_error("reserved-enis", "RESERVED_ENIS", self.reserved_enis.to_string(), "zero or more"));
        }
        if self.aws_region.trim().is_empty() {
            return Err(flag_error("aws-region", "AWS_REGION", &self.aws_region, "an AWS region such as us-west-2"));
        }
        if self.metrics_port == self.health_probe_port {
            return Err(flag_error(
                "health-probe-port",
                "HEALTH_PROBE_PORT",
                self.health_probe_port.to_string(),
                "a port other than --metrics-port",
            ));
        }
        let endpoint = |flag: &'static str, env: &'static str, own: &Option<String>| {
            let chosen = own.clone().or_else(|| self.aws_endpoint_url.clone());
            if let Some(url) = &chosen {
                validate_url(flag, env, url, false)?;
            }
            Ok::<_, FlagError>(chosen)
        };
        if let Some(url) = &self.aws_endpoint_url {
            validate_url("aws-endpoint-url", "AWS_ENDPOINT_URL", url, false)?;
        }
        let aws_endpoints = AwsEndpoints {
            ec2: endpoint("aws-endpoint-url-ec2", "AWS_ENDPOINT_URL_EC2", &self.aws_endpoint_url_ec2)?,
            sqs: endpoint("aws-endpoint-url-sqs", "AWS_ENDPOINT_URL_SQS", &self.aws_endpoint_url_sqs)?,
            ssm: endpoint("aws-endpoint-url-ssm", "AWS_ENDPOINT_URL_SSM", &self.aws_endpoint_url_ssm)?,
            pricing: endpoint("aws-endpoint-url-pricing", "AWS_ENDPOINT_URL_PRICING", &self.aws_endpoint_url_pricing)?,
        };
        let namespace = self.leader_election_namespace.clone().unwrap_or_else(|| self.system_namespace.clone());
        if !self.disable_leader_election {
            validate_dns_label("leader-election-namespace", "LEADER_ELECTION_NAMESPACE", &namespace)?;
            if self.leader_election_name.is_empty() {
                return Err(flag_error(
                    "leader-election-name",
                    "LEADER_ELECTION_NAME",
                    "",
                    "a Lease name such as karpenter-leader-election",
                ));
            }
        }
        let settings = Settings {
            cluster_name: self.cluster_name.trim().to_string(),
            cluster_endpoint: self.cluster_endpoint.trim().to_string(),
            cluster_ca_bundle: self.cluster_ca_bundle.trim().to_string(),
            cluster_dns: self.cluster_dns.clone(),
            region: self.aws_region.trim().to_string(),
            interruption_queue: self.interruption_queue.trim().to_string(),
            batch_idle_duration: self.batch_idle_duration,
            batch_max_duration: self.batch_max_duration,
            preference_policy: self.preference_policy,
            min_values_policy: self.min_values_policy,
            vm_memory_overhead_percent: self.vm_memory_overhead_percent,
            reserved_enis: self.reserved_enis,
            isolated_vpc: self.isolated_vpc,
            feature_gates: self.feature_gates.clone(),
        };
        let process = ProcessOptions {
            log_level: self.log_level,
            metrics_port: self.metrics_port,
            health_probe_port: self.health_probe_port,
            leader_election: LeaderElectionOptions {
                enabled: !self.disable_leader_election,
                name: self.leader_election_name.clone(),
                namespace,
                identity: self.leader_election_identity.clone(),
            },
            aws_endpoints,
        };
        Ok((settings, process))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUIRED: [&str; 7] = [
        "dovetail-controller",
        "--cluster-name",
        "prod",
        "--cluster-endpoint",
        "https://ABCD.gr7.us-west-2.eks.amazonaws.com",
        "--aws-region",
        "us-west-2",
    ];

    fn parse(extra: &[&str]) -> Result<Flags, clap::Error> {
        Flags::try_parse_from(REQUIRED.iter().chain(extra.iter()))
    }

    fn resolve(extra: &[&str]) -> Result<(Settings, ProcessOptions), FlagError> {
        parse(extra).expect("flags parse").resolve()
    }

    #[test]
    fn defaults_are_karpenters() {
        let (settings, process) = resolve(&[]).unwrap();
        assert_eq!(settings.cluster_name, "prod");
        assert_eq!(settings.region, "us-west-2");
        assert_eq!(settings.batch_idle_duration, Duration::from_secs(1));
        assert_eq!(settings.batch_max_duration, Duration::from_secs(10));
        assert_eq!(settings.feature_gates, FeatureGates::default());
        assert!((settings.vm_memory_overhead_percent - 0.075).abs() < 1e-12);
        assert_eq!(settings.reserved_enis, 0);
        assert!(!settings.isolated_vpc);
        assert_eq!(process.metrics_port, 8080);
        assert_eq!(process.health_probe_port, 8081);
        assert_eq!(process.log_level, LogLevel::Info);
        assert!(process.leader_election.enabled);
        assert_eq!(process.leader_election.name, "karpenter-leader-election");
        assert_eq!(process.leader_election.namespace, "kube-system");
        assert_eq!(process.aws_endpoints, AwsEndpoints::default());
    }

    #[test]
    fn flags_override_defaults() {
        let (settings, process) = resolve(&[
            "--batch-idle-duration=500ms",
            "--batch-max-duration=1m30s",
            "--feature-gates=SpotToSpotConsolidation=true,NodeRepair=true",
            "--vm-memory-overhead-percent=0.1",
            "--reserved-enis=2",
            "--isolated-vpc",
            "--disable-leader-election=true",
            "--leader-election-namespace=karpenter",
            "--log-level=debug",
            "--interruption-queue=prod-q",
            "--aws-endpoint-url=http://localhost:5000",
            "--aws-endpoint-url-sqs=http://localhost:9324",
            "--preference-policy=Ignore",
            "--min-values-policy=BestEffort",
        ])
        .unwrap();
        assert_eq!(settings.batch_idle_duration, Duration::from_millis(500));
        assert_eq!(settings.batch_max_duration, Duration::from_secs(90));
        assert!(settings.feature_gates.spot_to_spot_consolidation);
        assert!(settings.feature_gates.node_repair);
        assert!(settings.feature_gates.reserved_capacity, "unnamed gates keep their defaults");
        assert_eq!(settings.reserved_enis, 2);
        assert!(settings.isolated_vpc);
        assert_eq!(settings.interruption_queue, "prod-q");
        assert_eq!(settings.preference_policy, PreferencePolicy::Ignore);
        assert_eq!(settings.min_values_policy, MinValuesPolicy::BestEffort);
        assert!(!process.leader_election.enabled);
        assert_eq!(process.leader_election.namespace, "karpenter");
        assert_eq!(process.log_level, LogLevel::Debug);
        assert_eq!(process.aws_endpoints.ec2.as_deref(), Some("http://localhost:5000"));
        assert_eq!(process.aws_endpoints.sqs.as_deref(), Some("http://localhost:9324"));
        assert_eq!(process.aws_endpoints.ssm.as_deref(), Some("http://localhost:5000"));
        assert_eq!(process.aws_endpoints.pricing.as_deref(), Some("http://localhost:5000"));
    }

    #[test]
    fn bad_duration_names_the_flag_and_value() {
        let err = parse(&["--batch-idle-duration=10"]).unwrap_err().to_string();
        assert!(err.contains("--batch-idle-duration"), "{err}");
        assert!(err.contains("'10'"), "{err}");
        assert!(err.contains("Go duration"), "{err}");
    }

    #[test]
    fn bad_feature_gates_are_rejected_with_the_known_list() {
        let err = parse(&["--feature-gates=Drift=true"]).unwrap_err().to_string();
        assert!(err.contains("--feature-gates") && err.contains("unknown feature gate \"Drift\""), "{err}");
        assert!(err.contains("SpotToSpotConsolidation"), "{err}");
        assert!(parse_feature_gates("NodeRepair=yes").unwrap_err().contains("not true or false"));
        assert!(parse_feature_gates("NodeRepair").unwrap_err().contains("Name=true|false"));
        assert!(parse_feature_gates("StaticCapacity=true").unwrap_err().contains("not supported"));
        assert_eq!(parse_feature_gates("StaticCapacity=false,NodeOverlay=false"), Ok(FeatureGates::default()));
        assert!(parse_feature_gates("NodeOverlay=true").unwrap().node_overlay);
    }

    #[test]
    fn missing_required_settings_name_their_variable() {
        let err =
            Flags::try_parse_from(["dovetail-controller", "--aws-region=us-west-2"]).unwrap().resolve().unwrap_err();
        assert_eq!((err.flag, err.env), ("cluster-name", "CLUSTER_NAME"));
        let err = Flags::try_parse_from(["dovetail-controller", "--cluster-name=x", "--aws-region=us-west-2"])
            .unwrap()
            .resolve()
            .unwrap_err();
        assert_eq!(err.flag, "cluster-endpoint");
        assert!(err.to_string().contains("CLUSTER_ENDPOINT"), "{err}");
    }

    #[test]
    fn out_of_range_values_say_what_is_allowed() {
        let err = resolve(&["--reserved-enis=-1"]).unwrap_err();
        assert_eq!(err.to_string(), "invalid value \"-1\" for --reserved-enis (RESERVED_ENIS): zero or more");
        let err = resolve(&["--vm-memory-overhead-percent=1.5"]).unwrap_err();
        assert_eq!(err.flag, "vm-memory-overhead-percent");
        assert!(err.allowed.contains("[0, 1)"));
        let err = resolve(&["--batch-idle-duration=20s"]).unwrap_err();
        assert_eq!(err.flag, "batch-max-duration");
        let err = resolve(&["--cluster-ca-bundle=not base64!"]).unwrap_err();
        assert_eq!(err.flag, "cluster-ca-bundle");
        let err = resolve(&["--aws-endpoint-url-ec2=localhost:5000"]).unwrap_err();
        assert_eq!(err.flag, "aws-endpoint-url-ec2");
        assert!(err.allowed.contains("http://"));
        let err = resolve(&["--metrics-port=9000", "--health-probe-port=9000"]).unwrap_err();
        assert_eq!(err.flag, "health-probe-port");
        let err = resolve(&["--leader-election-namespace=Bad_NS"]).unwrap_err();
        assert_eq!(err.flag, "leader-election-namespace");
        let err = resolve(&["--cluster-dns=ten.one"]).unwrap_err();
        assert_eq!(err.flag, "cluster-dns");
    }

    #[test]
    fn enum_and_port_errors_come_from_clap_with_the_choices() {
        let err = parse(&["--log-level=loud"]).unwrap_err().to_string();
        assert!(err.contains("--log-level") && err.contains("possible values"), "{err}");
        let err = parse(&["--metrics-port=70000"]).unwrap_err().to_string();
        assert!(err.contains("--metrics-port") && err.contains("70000"), "{err}");
        let err = parse(&["--preference-policy=Sometimes"]).unwrap_err().to_string();
        assert!(err.contains("Respect or Ignore"), "{err}");
    }
}
