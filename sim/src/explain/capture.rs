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
    mut inspect: impl FnMut(&Store, Duration, &Explanation) + 'static,
) -> anyhow::Result<(Explanation, Outcome)> {
    let total = world.plan.duration.0;
    let server: Rc<RefCell<Option<ApiServer>>> = Rc::default();
    let captured: Rc<RefCell<Option<Explanation>>> = Rc::default();
    let take = {
        let (server, captured) = (server.clone(), captured.clone());
        move |now: Duration, inspect: &mut dyn FnMut(&Store, Duration, &Explanation)| {
            if captured.borrow().is_some() {
                return;
            }
            let server = server.borrow();
            let Some(server) = server.as_ref() else { return };
            let store = server.store.lock().unwrap_or_else(|e| e.into_inner());
            let explanation = explain(&store, now);
            inspect(&store, now, &explanation);
            *captured.borrow_mut() = Some(explanation);
        }
    };
    let inspect: Rc<RefCell<dyn FnMut(&Store, Duration, &Explanation)>> =
        Rc::new(RefCell::new(move |s: &Store, t, e: &Explanation| inspect(s, t, e)));
    let mut options = RunOptions::default();
    options.on_start = Some(Box::new({
        let server = server.clone();
        move |s: &ApiServer| *server.borrow_mut() = Some(s.clone())
    }));
    if let Some(at) = at.filter(|at| *at < total) {
        let (take, inspect) = (take.clone(), inspect.clone());
        options.before_step = Some(Box::new(move |now| {
            if now >= at {
                take(now, &mut *inspect.borrow_mut());
            }
        }));
    }
    let outcome = run::run_world(world, &mut options)?;
    take(outcome.report.simulated.0, &mut *inspect.borrow_mut());
    let explanation = captured.borrow_mut().take().expect("an explanation is always taken by the end");
    Ok((explanation, outcome))
}
