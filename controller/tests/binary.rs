//! The built `dovetail-controller` binary: help text, and that bad configuration fails fast
//! with a message naming what to fix. No cluster or AWS endpoint is needed: every case fails
//! (or exits) before the first network call.

use std::process::{Command, Output};

const BINARY: &str = env!("CARGO_BIN_EXE_dovetail-controller");

/// The binary with an empty environment (so the developer's AWS or Kubernetes variables
/// cannot change the outcome) plus `env`.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(BINARY);
    command.env_clear().args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

const VALID: [(&str, &str); 5] = [
    ("CLUSTER_NAME", "prod"),
    ("CLUSTER_ENDPOINT", "https://ABCD.gr7.us-west-2.eks.amazonaws.com"),
    ("AWS_REGION", "us-west-2"),
    ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
    ("AWS_SECRET_ACCESS_KEY", "secret"),
];

#[test]
fn help_lists_flags_with_their_environment_variables() {
    let output = run(&["--help"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let help = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "--cluster-name",
        "CLUSTER_NAME",
        "--batch-idle-duration",
        "BATCH_IDLE_DURATION",
        "--feature-gates",
        "--interruption-queue",
        "METRICS_PORT",
        "[default: 8080]",
        "HEALTH_PROBE_PORT",
        "DISABLE_LEADER_ELECTION",
        "AWS_ENDPOINT_URL",
        "tls",
    ] {
        assert!(help.contains(expected), "help lacks {expected:?}:\n{help}");
    }
}

#[test]
fn a_malformed_flag_names_the_flag_value_and_format() {
    let output = run(&["--batch-idle-duration", "ten"], &VALID);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains("--batch-idle-duration") && err.contains("'ten'") && err.contains("Go duration"), "{err}");
}

#[test]
fn a_malformed_environment_variable_is_reported_like_a_flag() {
    let env = [VALID.as_slice(), &[("FEATURE_GATES", "Drift=true")]].concat();
    let output = run(&[], &env);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains("--feature-gates") && err.contains("unknown feature gate \"Drift\""), "{err}");
}

#[test]
fn a_missing_cluster_name_exits_2_naming_the_variable() {
    let output = run(&[], &VALID[1..]);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains("--cluster-name (CLUSTER_NAME)") && err.contains("required"), "{err}");
}

#[test]
fn an_out_of_range_value_says_what_is_allowed() {
    let output = run(&["--reserved-enis=-3"], &VALID);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("invalid value \"-3\" for --reserved-enis (RESERVED_ENIS): zero or more"));
}

/// Without the `tls` feature, an HTTPS endpoint is refused at startup with the fix spelled out.
#[test]
#[cfg_attr(feature = "tls", ignore = "the tls build can reach https endpoints")]
fn a_plain_build_refuses_https_endpoints_at_startup() {
    // The AWS regional defaults are HTTPS.
    let output = run(&[], &VALID);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("without the `tls` feature") && err.contains("AWS_ENDPOINT_URL_EC2"), "{err}");

    // An https:// API server in the kubeconfig.
    let dir = std::env::temp_dir().join(format!("dovetail-binary-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\ncurrent-context: eks\n\
         clusters: [{name: eks, cluster: {server: 'https://ABCD.gr7.us-west-2.eks.amazonaws.com'}}]\n\
         users: [{name: me, user: {token: t}}]\n\
         contexts: [{name: eks, context: {cluster: eks, user: me}}]\n",
    )
    .unwrap();
    let env = [
        VALID.as_slice(),
        &[("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"), ("KUBECONFIG", kubeconfig.to_str().unwrap())],
    ]
    .concat();
    let output = run(&[], &env);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("Kubernetes API server https://") && err.contains("--features tls"), "{err}");
}
