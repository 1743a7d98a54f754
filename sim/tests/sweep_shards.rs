//! A sweep cut into shards (`--shard i/n`, 0-based as a Kubernetes Indexed Job's
//! `$JOB_COMPLETION_INDEX`) and merged back (`dovetail sweep --merge`) is the sweep run
//! whole: the same summary, the same runs, and `dovetail compare` reads the merged
//! directory. The Indexed Job manifest in docs/distributed-sweeps.md is a valid `batch/v1`
//! Job that shards by its completion index.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use k8s_openapi::api::batch::v1::Job;
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// spot-storm's cluster and workload without its faults, with `extra` appended.
fn scenario(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let storm = std::fs::read_to_string(repo().join("scenarios/spot-storm.yaml")).expect("spot-storm reads");
    let (cluster, _faults) = storm.split_once("\nfaults:").expect("spot-storm has faults");
    let cluster = cluster
        .lines()
        .map(|l| if l.starts_with("name:") { format!("name: {name}") } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n");
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, format!("{cluster}\n{extra}")).expect("writing the scenario");
    path
}

fn dovetail(args: &[&str], paths: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dovetail")).args(args).args(paths).output().expect("dovetail runs")
}

fn text(out: &Output) -> String {
    format!("{}\n--- stderr\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// stdout without the lines that differ by design (the sweep's wall time, the merge's
/// "merged N directories" line), with the report directory replaced by `OUT`.
fn summary(out: &Output, dir: &Path) -> String {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("wall ") && !l.starts_with("merged "))
        .map(|l| l.replace(&dir.display().to_string(), "OUT"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn record(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json")).expect("sweep.json")).expect("JSON")
}

#[test]
fn two_shards_merged_are_the_whole_sweep() {
    let dir = std::env::temp_dir().join(format!("dovetail-sweep-shards-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    // Every pod waits longer than 1s for a node: strandedPods fires, so the summary has
    // failing seeds with reasons, reproduce lines and timelines, and a cost gap.
    let tight = scenario(&dir, "tight", "invariants: {strandedPods: {boundWithin: 1s}}\n");
    let calm = scenario(&dir, "calm", "");
    let seeds = ["--seeds", "1..2", "--jobs", "2"];
    let whole = dir.join("whole");
    let out = dovetail(&[&["sweep", "--out"][..], &[whole.to_str().unwrap()], &seeds].concat(), &[&tight, &calm]);
    assert_eq!(out.status.code(), Some(1), "tight violates strandedPods: {}", text(&out));
    let whole_summary = summary(&out, &whole);
    assert!(
        whole_summary.contains("FAIL tight seed 2") && whole_summary.contains("4 runs, 2 passed, 2 failed"),
        "{}",
        text(&out)
    );

    let mut shards = Vec::new();
    for i in 0..2 {
        let shard = dir.join(format!("shard-{i}"));
        let spec = format!("{i}/2");
        let out = dovetail(
            &[&["sweep", "--shard", &spec, "--out", shard.to_str().unwrap()][..], &seeds].concat(),
            &[&tight, &calm],
        );
        // Runs are dealt round-robin, scenario-major: each shard gets one tight seed.
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert_eq!(record(&shard)["shard"], serde_json::json!({"index": i, "count": 2}));
        assert_eq!(record(&shard)["runs"].as_array().map(Vec::len), Some(2), "{}", text(&out));
        shards.push(shard);
    }

    let merged = dir.join("merged");
    let out = dovetail(
        &["sweep", "--merge", "--seeds", "1..2", "--out", merged.to_str().unwrap()],
        &[&shards[0], &shards[1]],
    );
    assert_eq!(out.status.code(), Some(1), "the merge exits as the sweep did: {}", text(&out));
    assert_eq!(summary(&out, &merged), whole_summary, "merged vs whole:\n{}", text(&out));
    let (mut whole_runs, mut merged_runs) = (record(&whole)["runs"].clone(), record(&merged)["runs"].clone());
    for runs in [&mut whole_runs, &mut merged_runs] {
        runs.as_array_mut().unwrap().sort_by_key(|r| (r["scenario"].to_string(), r["seed"].as_u64()));
    }
    assert_eq!(merged_runs, whole_runs, "the merged record holds the whole sweep's verdicts");
    assert_eq!(record(&merged)["shard"], Value::Null);
    assert!(merged.join("tight/1.html").is_file(), "a failing seed's timeline is merged too");

    // Upgrade validation reads the merged directory like any sweep's: nothing changed.
    let out = dovetail(&["compare"], &[&whole, &merged]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("4 seeds compared, 0 changed"), "{}", text(&out));
    // One shard alone is refused, with the way out.
    let out = dovetail(&["compare"], &[&whole, &shards[0]]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("merge the shards first"), "{}", text(&out));

    // A missing shard, a shard given twice, and seeds the shards never ran are refused.
    let out = dovetail(&["sweep", "--merge"], &[&shards[0]]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("shard 1/2 is missing") && text(&out).contains("tight seed 2 is missing"),
        "{}",
        text(&out)
    );
    let out = dovetail(&["sweep", "--merge"], &[&shards[0], &shards[1], &shards[1]]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("shard 1/2 is given twice"), "{}", text(&out));
    let out = dovetail(&["sweep", "--merge", "--seeds", "1..3"], &[&shards[0], &shards[1]]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("calm seed 3 is missing"), "{}", text(&out));

    // Shards are 0-based: n/n is past the end.
    let out = dovetail(&["sweep", "--shard", "2/2"], &[&calm]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("0-based"), "{}", text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every YAML document in the doc's ```yaml blocks.
fn doc_manifests() -> Vec<Value> {
    let doc = std::fs::read_to_string(repo().join("docs/distributed-sweeps.md")).expect("the doc reads");
    let mut docs = Vec::new();
    for block in doc.split("```yaml\n").skip(1) {
        let (yaml, _) = block.split_once("```").expect("the yaml block is closed");
        let parsed: Vec<Value> = serde_saphyr::from_multiple(yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        docs.extend(parsed.into_iter().filter(|d| !d.is_null()));
    }
    docs
}

#[test]
fn the_documented_indexed_job_shards_by_its_completion_index() {
    let manifests = doc_manifests();
    let indexed: Vec<&Value> =
        manifests.iter().filter(|m| m["kind"] == "Job" && m["spec"]["completionMode"] == "Indexed").collect();
    assert_eq!(indexed.len(), 1, "one Indexed Job in the doc");
    let yaml = indexed[0];
    // Every field is one Kubernetes knows: the typed Job serialises back to the same document.
    let job: Job = serde_json::from_value(yaml.clone()).expect("a batch/v1 Job");
    assert_eq!(serde_json::to_value(&job).expect("serialises"), *yaml, "a field k8s-openapi does not know was dropped");
    assert_eq!(yaml["apiVersion"], "batch/v1");
    let spec = job.spec.as_ref().expect("spec");
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    let n = spec.completions.expect("completions");
    assert!(spec.parallelism.is_some_and(|p| p >= 1 && p <= n), "parallelism within completions");
    let pod = spec.template.spec.as_ref().expect("pod spec");
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"), "backoffLimitPerIndex and podFailurePolicy need it");
    let container = &pod.containers[0];
    let command =
        [container.command.clone().unwrap_or_default(), container.args.clone().unwrap_or_default()].concat().join(" ");
    assert!(command.contains("dovetail sweep "), "{command}");
    assert!(
        command.contains(&format!("--shard \"$JOB_COMPLETION_INDEX/{n}\"")),
        "--shard INDEX/completions: {command}"
    );
    assert!(command.contains("--out \"/reports/shard-$JOB_COMPLETION_INDEX\""), "one directory per shard: {command}");
    let mount = container.volume_mounts.as_ref().and_then(|m| m.first()).expect("a volume for the reports");
    assert_eq!(mount.mount_path, "/reports");
    let volume = pod.volumes.as_ref().and_then(|v| v.iter().find(|v| v.name == mount.name)).expect("the volume");
    let claim = volume.persistent_volume_claim.as_ref().expect("a PVC the merge reads too");
    assert!(
        manifests
            .iter()
            .any(|m| m["kind"] == "PersistentVolumeClaim" && m["metadata"]["name"] == claim.claim_name.as_str()),
        "the PVC is in the doc"
    );
    // A failure policy naming a container names this one.
    for rule in spec.pod_failure_policy.iter().flat_map(|p| &p.rules) {
        if let Some(codes) = &rule.on_exit_codes {
            assert_eq!(codes.container_name.as_deref(), Some(container.name.as_str()), "{rule:?}");
        }
    }
    // The merge Job reads every shard directory from the same volume.
    let merge: Vec<Job> = manifests
        .iter()
        .filter(|m| m["kind"] == "Job" && m["spec"]["completionMode"] != "Indexed")
        .map(|m| serde_json::from_value(m.clone()).expect("a batch/v1 Job"))
        .collect();
    let merge_args = merge
        .iter()
        .flat_map(|j| j.spec.iter().flat_map(|s| s.template.spec.iter().flat_map(|p| &p.containers)))
        .flat_map(|c| c.args.clone().unwrap_or_default())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(merge_args.contains("dovetail sweep --merge /reports/shard-*"), "{merge_args}");
}
