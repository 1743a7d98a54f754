//! The fault mix an imported scenario starts with, for the user to edit: a spot
//! interruption storm in one zone and a burst of API-server errors, in the library
//! scenarios' syntax (`scenarios/spot-storm.yaml`, `scenarios/steady-web.yaml`), then the
//! phases and a duration that leave the liveness invariants their full window.

use crate::scenario::SimDuration;
use crate::scenario::invariants::InvariantConfig;
use crate::scenario::liveness_window;
use std::time::Duration;

/// When the default faults heal.
pub const FAULTS_UNTIL: Duration = Duration::from_secs(10 * 60);

/// The `faults:` and `phases:` blocks (YAML with comments) and the duration to use.
pub fn block(with_faults: bool) -> (String, SimDuration) {
    let window = liveness_window::shortest_window(&InvariantConfig::default());
    if !with_faults {
        let text = "# No faults (imported with --no-faults). Add entries from docs/scenarios.md, e.g.\n\
                    # faults: [{at: 4m, spotInterruption: {zone: random, fraction: 0.5}}]\n\
                    # phases: {faultsUntil: 10m}   # and a duration of faultsUntil + 31m\n"
            .to_string();
        return (text, SimDuration(window + Duration::from_secs(60)));
    }
    let until = SimDuration(FAULTS_UNTIL);
    let live = SimDuration(FAULTS_UNTIL + Duration::from_secs(120));
    let text = format!(
        "# A default fault mix; edit or extend it (every kind is in docs/scenarios.md).\n\
         faults:\n\
         \x20 # A spot interruption storm: half the spot instances of one zone get the two-minute notice.\n\
         \x20 - at: 4m\n\
         \x20   spotInterruption: {{zone: random, fraction: 0.5}}\n\
         \x20 # An API-server error burst: throttling, 5xx and write conflicts for two minutes.\n\
         \x20 - at: 6m\n\
         \x20   for: 2m\n\
         \x20   apiServerErrors: {{throttleRate: 0.1, errorRate: 0.05, conflictRate: 0.05}}\n\
         # Faults heal at faultsUntil; the invariants (all on, defaults) judge liveness after it.\n\
         phases: {{faultsUntil: {until}, livenessFrom: {live}}}\n"
    );
    (text, SimDuration(FAULTS_UNTIL + window))
}
