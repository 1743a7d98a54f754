//! How the cluster's actors run: event-driven reconcilers against the store.
//!
//! Actors live in the API server's host and read and write its store directly (as
//! kube-controller-manager would through a local cache). Each declares the resource types
//! it watches; it runs when one of them changes, or when its own next deadline comes, so a
//! quiet simulated hour costs almost nothing. Writes go through the store's normal paths,
//! so they are versioned, watched and traced like any client's.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::apiserver::ApiServer;
use crate::apiserver::resources::ResourceKey;
use serde_json::Value;

use crate::apiserver::store::{EventType, Store, WatchMsg, WatchStart, WatchStream};
use tokio::sync::mpsc::UnboundedSender;

/// How long an actor waits after an outside change before it reconciles, so the changes of
/// one tick are handled in one pass (a millisecond: turmoil's default tick).
const COALESCE: Duration = Duration::from_millis(1);

/// A controller that converges the store towards what it wants.
pub trait Reconciler: Send {
    /// Name, for traces and errors.
    fn name(&self) -> &'static str;
    /// `(group, plural)` of the types whose changes should wake it.
    fn watches(&self) -> Vec<(&'static str, &'static str)>;
    /// Whether this change to a watched type should wake it (default: every change). A
    /// controller that only cares about some objects (the Job controller and its pods)
    /// says so here, so unrelated churn (the scheduler's condition writes on thousands of
    /// pending pods) does not cost it a pass; it may also note which objects changed, as
    /// a workqueue would, to reconcile only those.
    fn wakes_on(&mut self, _key: &ResourceKey, _event: EventType, _obj: &Value) -> bool {
        true
    }
    /// Converges everything once. `now` is simulated time since the epoch. Returns when
    /// it next wants to run even if nothing changes (a timer), if ever.
    fn reconcile(&mut self, store: &mut Store, now: Duration) -> Option<Duration>;
}

/// Runs `actors` until the host stops. Each actor is reconciled once at start, then on
/// changes to what it watches (coalesced: one reconcile per wake-up however many events
/// arrived), and at its deadlines.
pub async fn run(server: ApiServer, mut actors: Vec<Box<dyn Reconciler>>) {
    let keys: BTreeSet<ResourceKey> = actors
        .iter()
        .flat_map(|a| a.watches())
        .map(|(g, p)| ResourceKey { group: g.to_string(), plural: p.to_string() })
        .collect();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Change>();
    {
        let mut store = server.store.lock().unwrap_or_else(|e| e.into_inner());
        for key in keys {
            let Some(rt) = store.registry().by_key(&key) else { continue };
            let since = store.resource_version();
            let Ok(w) = store.watch(&rt, None, Arc::new(|_| true), WatchStart::After(since)) else { continue };
            tokio::spawn(forward(server.clone(), key, w, tx.clone()));
        }
    }
    drop(tx);
    let mut deadlines: Vec<Option<Duration>> = vec![Some(Duration::ZERO); actors.len()];
    let mut dirty: Vec<bool> = vec![true; actors.len()];
    let watched: Vec<Vec<ResourceKey>> = actors
        .iter()
        .map(|a| a.watches().into_iter().map(|(g, p)| ResourceKey { group: g.into(), plural: p.into() }).collect())
        .collect();
    loop {
        let now = server.store.lock().unwrap_or_else(|e| e.into_inner()).elapsed();
        for (i, actor) in actors.iter_mut().enumerate() {
            let due = deadlines[i].is_some_and(|d| d <= now);
            if dirty[i] || due {
                dirty[i] = false;
                let mut store = server.store.lock().unwrap_or_else(|e| e.into_inner());
                deadlines[i] =
                    dovetail_world::cpu_meter::measure(("actors", actor.name()), || actor.reconcile(&mut store, now));
            }
        }
        // Writes made above come back as events and wake whoever watches them in the same
        // instant (a ReplicaSet created by the Deployment controller gets its pods now).
        let mut woke = false;
        while let Ok(key) = rx.try_recv() {
            mark(&mut actors, &watched, &mut dirty, &key);
            woke = true;
        }
        if woke {
            tokio::task::yield_now().await;
            continue;
        }
        let next = deadlines.iter().flatten().min().copied();
        let sleep = next.map(|d| d.saturating_sub(now));
        tokio::select! {
            biased;
            key = rx.recv() => match key {
                Some(key) => {
                    mark(&mut actors, &watched, &mut dirty, &key);
                    // Coalesce: everything else that changes in this tick (other clients'
                    // writes land one request at a time) joins the same reconcile pass,
                    // as a workqueue's batching would, instead of one pass per event.
                    tokio::time::sleep(COALESCE).await;
                    while let Ok(key) = rx.try_recv() {
                        mark(&mut actors, &watched, &mut dirty, &key);
                    }
                }
                None => return,
            },
            _ = sleep_or_forever(sleep) => {}
        }
    }
}

/// Forwards the changes of one watched type to the loop. When the server ends the watch
/// with 410 Gone (the `watchExpiry` fault compacts history and expires every watch), it
/// watches again from the current state, as an informer relists: every current object
/// arrives as ADDED, so each actor watching the type reconciles. Without this the
/// forwarders ended at the first expiry, and with them the whole actor loop (node agents,
/// kubelets, scheduler, workload controllers) for the rest of the run.
async fn forward(server: ApiServer, key: ResourceKey, mut w: WatchStream, tx: UnboundedSender<Change>) {
    loop {
        for msg in std::mem::take(&mut w.initial) {
            if let WatchMsg::Event(event, obj, _) = msg
                && tx.send((key.clone(), event, obj)).is_err()
            {
                return;
            }
        }
        loop {
            match w.rx.recv().await {
                Some(WatchMsg::Event(event, obj, _)) => {
                    if tx.send((key.clone(), event, obj)).is_err() {
                        return;
                    }
                }
                Some(WatchMsg::Expired(_)) => break,
                None => return,
            }
        }
        let relist = {
            let mut store = server.store.lock().unwrap_or_else(|e| e.into_inner());
            let Some(rt) = store.registry().by_key(&key) else { return };
            store.watch(&rt, None, Arc::new(|_| true), WatchStart::Current)
        };
        let Ok(relisted) = relist else { return };
        w = relisted;
    }
}

/// One change from a watch: the type, what happened, the object.
type Change = (ResourceKey, EventType, Arc<Value>);

fn mark(actors: &mut [Box<dyn Reconciler>], watched: &[Vec<ResourceKey>], dirty: &mut [bool], change: &Change) {
    let (key, event, obj) = change;
    for (i, w) in watched.iter().enumerate() {
        // Every actor sees every change it watches (it may be noting which objects to
        // reconcile), even when it is already due to run.
        if w.contains(key) && actors[i].wakes_on(key, *event, obj) {
            dirty[i] = true;
        }
    }
}

async fn sleep_or_forever(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d.max(Duration::from_millis(1))).await,
        None => std::future::pending().await,
    }
}
