//! Where a run's CPU goes, by part of the world: the API server, the cluster's actors, the
//! fake cloud, the invariant checker, and what is left (the controller under test and the
//! runtime that steps it). Issue 21's P7 asks that the harness take at most a fifth of a
//! run; `dovetail bench split` reports the shares.
//!
//! The meter is off unless [`start`] turned it on for this thread, and then costs two
//! thread-CPU-clock reads per measured span. It reads the thread's CPU clock, so what it
//! measures never reaches the simulation: nothing here feeds a trace, a report or a
//! decision, and runs stay byte-identical with the meter on or off. The whole simulation
//! runs on one thread, so the thread's clock is the run's.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// A part of the world and, within it, what ran (an actor's name, or the part again).
pub type Label = (&'static str, &'static str);

#[derive(Default)]
struct Meter {
    /// CPU spent in each label, its nested spans' time excluded.
    totals: BTreeMap<Label, Duration>,
    /// Open spans: label, thread CPU at entry, CPU of the spans nested in it.
    open: Vec<(Label, Duration, Duration)>,
}

thread_local! {
    static METER: RefCell<Option<Meter>> = const { RefCell::new(None) };
}

/// This thread's CPU time so far.
pub fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(u64::try_from(t.tv_sec).unwrap_or(0), u32::try_from(t.tv_nsec).unwrap_or(0))
}

/// Turns the meter on for this thread, from zero.
pub fn start() {
    METER.with(|m| *m.borrow_mut() = Some(Meter::default()));
}

/// Turns the meter off and returns what it measured since [`start`].
pub fn finish() -> BTreeMap<Label, Duration> {
    METER.with(|m| m.borrow_mut().take().map(|m| m.totals).unwrap_or_default())
}

fn on() -> bool {
    METER.with(|m| m.borrow().is_some())
}

fn enter(label: Label) {
    let now = thread_cpu();
    METER.with(|m| {
        if let Some(m) = m.borrow_mut().as_mut() {
            m.open.push((label, now, Duration::ZERO));
        }
    });
}

fn exit() {
    let now = thread_cpu();
    METER.with(|m| {
        let mut m = m.borrow_mut();
        let Some(m) = m.as_mut() else { return };
        let Some((label, entered, nested)) = m.open.pop() else { return };
        let spent = now.saturating_sub(entered);
        *m.totals.entry(label).or_default() += spent.saturating_sub(nested);
        if let Some(parent) = m.open.last_mut() {
            parent.2 += spent;
        }
    });
}

/// Runs `f`, charging its CPU (less any span measured inside it) to `label`.
pub fn measure<R>(label: Label, f: impl FnOnce() -> R) -> R {
    if !on() {
        return f();
    }
    enter(label);
    let out = f();
    exit();
    out
}

/// A future whose every poll is charged to one label ([`metered`]).
pub struct Metered<F> {
    label: Label,
    inner: Pin<Box<F>>,
}

/// Wraps `future` so that its polls are charged to `label` (a spawned task's: a task it
/// spawns in turn is not, unless wrapped too).
pub fn metered<F: Future>(label: Label, future: F) -> Metered<F> {
    Metered { label, inner: Box::pin(future) }
}

impl<F: Future> Future for Metered<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let label = self.label;
        measure(label, || self.inner.as_mut().poll(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(d: Duration) {
        let until = thread_cpu() + d;
        let mut x = 0u64;
        while thread_cpu() < until {
            x = std::hint::black_box(x.wrapping_add(1));
        }
    }

    /// Nested spans charge their own time to themselves and not to the span around them;
    /// with the meter off nothing is recorded. (Each bound holds by construction: the spins
    /// run until the thread's clock has moved that far.)
    #[test]
    fn nested_spans_are_charged_once() {
        measure(("off", "off"), || spin(Duration::from_millis(1)));
        start();
        let before = thread_cpu();
        measure(("outer", "outer"), || {
            spin(Duration::from_millis(5));
            measure(("inner", "inner"), || spin(Duration::from_millis(5)));
        });
        let spent = thread_cpu() - before;
        let totals = finish();
        assert!(!totals.contains_key(&("off", "off")));
        let outer = totals[&("outer", "outer")];
        let inner = totals[&("inner", "inner")];
        assert!(inner >= Duration::from_millis(5) && outer >= Duration::from_millis(5), "{totals:?}");
        assert!(outer + inner <= spent, "the inner span is not charged to the outer one too: {totals:?}");
        assert!(finish().is_empty(), "finish turns the meter off");
    }
}
