//! Kubernetes timestamps as simulated time: the one conversion every oracle reading an
//! object's or an Event's time uses.

use std::time::Duration;

use dovetail_world::clock::{parse_rfc3339, sim_epoch};
use serde_json::Value;

/// A Kubernetes timestamp as simulated time since the epoch.
pub fn sim_time(value: &Value) -> Option<Duration> {
    parse_rfc3339(value.as_str()?)?.duration_since(sim_epoch()).ok()
}
