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
use crate::apiserver::store::{Store, WatchMsg, WatchStart};

/// A controller that converges the store towards what it wants.
pub trait Reconciler: Send {
    /// Name, for traces and errors.
    fn name(&self) -> &'static str;
    /// `(group, plural)` of the types whose changes should wake it.
    fn watches(&self) -> Vec<(&'static str, &'static str)>;
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
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ResourceKey>();
    {
        let mut store = server.store.lock().unwrap_or_else(|e| e.into_inner());
        for key in keys {
            let Some(rt) = store.registry().by_key(&key) else { continue };
            let since = store.resource_version();
            let Ok(mut w) = store.watch(&rt, None, Arc::new(|_| true), WatchStart::After(since)) else { continue };
            let tx = tx.clone();
            tokio::spawn(async move {
                while let Some(msg) = w.rx.recv().await {
                    if matches!(msg, WatchMsg::Expired(_)) || tx.send(key.clone()).is_err() {
                        return;
                    }
                }
            });
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
                deadlines[i] = actor.reconcile(&mut store, now);
            }
        }
        // Writes made above come back as events and wake whoever watches them in the same
        // instant (a ReplicaSet created by the Deployment controller gets its pods now).
        let mut woke = false;
        while let Ok(key) = rx.try_recv() {
            mark(&watched, &mut dirty, &key);
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
                Some(key) => mark(&watched, &mut dirty, &key),
                None => return,
            },
            _ = sleep_or_forever(sleep) => {}
        }
    }
}

fn mark(watched: &[Vec<ResourceKey>], dirty: &mut [bool], key: &ResourceKey) {
    for (i, w) in watched.iter().enumerate() {
        if w.contains(key) {
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
