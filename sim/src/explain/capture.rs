//! Running a scenario and explaining it at a simulated time (or at its end), through the
//! runner's hooks only: the run is the same with or without the explanation.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use super::{Explanation, explain};
use crate::apiserver::ApiServer;
use crate::apiserver::store::Store;
use crate::run::{self, Outcome, RunOptions};
use crate::world::ScenarioWorld;

/// Runs `world` and explains it at the first step at or after `at` (at the end when `at` is
/// `None` or past the end). `inspect` sees the store at that same moment (tests compare the
/// explanation with the oracle's reading of it).
///
/// # Errors
/// The run's error.
pub fn explain_run(
    world: ScenarioWorld<'_>,
    at: Option<Duration>,
    inspect: impl FnMut(&Store, Duration, &Explanation) + 'static,
) -> anyhow::Result<(Explanation, Outcome)> {
    let total = world.plan.duration.0;
    let capture = Rc::new(RefCell::new(Capture { server: None, explanation: None, inspect: Box::new(inspect) }));
    let on_start = {
        let capture = capture.clone();
        move |s: &ApiServer| capture.borrow_mut().server = Some(s.clone())
    };
    let before_step = at.filter(|at| *at < total).map(|at| {
        let capture = capture.clone();
        Box::new(move |now: Duration| {
            if now >= at {
                capture.borrow_mut().take(now);
            }
        }) as Box<dyn FnMut(Duration)>
    });
    let mut options = RunOptions { on_start: Some(Box::new(on_start)), before_step, ..RunOptions::default() };
    let outcome = run::run_world(world, &mut options)?;
    let mut capture = capture.borrow_mut();
    capture.take(outcome.report.simulated.0);
    let explanation = capture.explanation.take().expect("an explanation is always taken by the end");
    Ok((explanation, outcome))
}

/// Sees the store, the time and the explanation at the explained moment.
type Inspect = Box<dyn FnMut(&Store, Duration, &Explanation)>;

/// What the hooks share: the server once started, and the one explanation taken.
struct Capture {
    server: Option<ApiServer>,
    explanation: Option<Explanation>,
    inspect: Inspect,
}

impl Capture {
    /// Explains the store at `now`, unless an explanation was already taken.
    fn take(&mut self, now: Duration) {
        if self.explanation.is_some() {
            return;
        }
        let Some(server) = self.server.as_ref() else { return };
        let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
        let explanation = explain(&store, now);
        (self.inspect)(&store, now, &explanation);
        drop(store);
        self.explanation = Some(explanation);
    }
}
