//! NodeOverlay end to end (issue 20, "Karpenter fidelity"; core `pkg/controllers/nodeoverlay/`,
//! `pkg/cloudprovider/overlay/cloudprovider.go`): `tests/fixtures/node-overlay.yaml` turns the
//! `NodeOverlay` gate on and prices m5.large at $0.01/h, below c5.large's $0.085/h. The claim
//! is annotated `karpenter.sh/price-overlay-applied`, so the launch goes by the overlay prices
//! (aws `cloudprovider.go` `Create` applies the store, l. 135-145; CreateFleet `prioritized`):
//! the one node is an m5.large from the start. A second overlay of the same weight on m5.large
//! conflicts.

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use dovetail_sim::apiserver::ApiServer;
use dovetail_sim::run::{RunOptions, run_with};
use dovetail_sim::scenario::Loaded;
use serde_json::Value;

/// The fixture; the loader installs the NodeOverlay CRD because its gate is on.
fn load() -> Loaded {
    Loaded::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/node-overlay.yaml")).expect("loads")
}

fn overlay_condition(server: &ApiServer, name: &str) -> Option<(String, String)> {
    let store = server.store.lock().expect("store");
    let key = dovetail_sim::oracle::view::key("karpenter.sh", "nodeoverlays");
    let overlay: Value = store.iter(&key, None).find(|o| o["metadata"]["name"] == name)?.as_ref().clone();
    let condition =
        overlay["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == "ValidationSucceeded")?.clone();
    Some((condition["status"].as_str()?.to_owned(), condition["reason"].as_str()?.to_owned()))
}

#[test]
fn an_overlay_makes_a_dearer_type_the_cheapest_and_a_same_weight_overlay_conflicts() {
    let server: Rc<RefCell<Option<ApiServer>>> = Rc::default();
    let mut options = RunOptions {
        on_start: Some(Box::new({
            let server = server.clone();
            move |s: &ApiServer| *server.borrow_mut() = Some(s.clone())
        })),
        ..RunOptions::default()
    };
    let outcome = run_with(&load(), 1, &mut options).expect("runs");
    drop(options);
    let report = serde_json::to_value(&outcome.report).expect("a report serialises");
    eprintln!("{}", outcome.report.summary());
    let server = server.borrow().clone().expect("started");
    assert_eq!(overlay_condition(&server, "cheap-m5"), Some(("True".into(), "ValidationSucceeded".into())));
    assert_eq!(overlay_condition(&server, "also-m5"), Some(("False".into(), "Conflict".into())));
    let offerings: Vec<String> = report["explanation"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["offering"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(offerings, ["m5.large on-demand us-east-1a"], "the overlaid-cheapest type runs");
    assert_eq!(report["launches"].as_u64(), Some(1), "launched by the overlay's priority, never replaced");
    assert_eq!(report["invariants"]["violations"].as_array().map(Vec::len), Some(0), "{:#}", report["invariants"]);
}

/// The library story `scenarios/node-overlay.yaml` (seeds 1..3): a 30% overlay discount on m5
/// (weight 10) beats a 50% surcharge (weight 1), so every node Karpenter runs is an m5 though
/// each c5 is cheaper at EC2's prices, and the oracles, pricing through the same overlays,
/// find nothing to flag.
#[test]
fn the_library_story_runs_on_the_overlay_cheapest_family_with_no_violation() {
    let path = Path::new("../scenarios/node-overlay.yaml");
    let loaded = Loaded::from_file(path).expect("loads");
    for seed in 1..=3 {
        let outcome = dovetail_sim::run::run(&loaded, seed).expect("runs");
        let report = serde_json::to_value(&outcome.report).expect("a report serialises");
        if let Ok(dir) = std::env::var("DOVETAIL_OVERLAY_REPORT_DIR") {
            let text = serde_json::to_string_pretty(&report).expect("json");
            std::fs::write(Path::new(&dir).join(format!("node-overlay-seed-{seed}.json")), text).expect("write");
        }
        let violations = report["invariants"]["violations"].as_array().map(Vec::len);
        assert_eq!(violations, Some(0), "seed {seed}: {:#}", report["invariants"]);
        let nodes = report["explanation"]["nodes"].as_array().expect("nodes");
        assert!(!nodes.is_empty(), "seed {seed}: nodes run at the end");
        for node in nodes {
            let offering = node["offering"].as_str().unwrap_or_default();
            assert!(offering.starts_with("m5."), "seed {seed}: {offering} is not the overlay-cheapest family");
        }
    }
}
