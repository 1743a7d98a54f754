//! Instance reads through a cache (aws:pkg/providers/instance/instance.go v1.14.1, `Get`, `List`,
//! `Delete`; the cache is built in pkg/operator/operator.go with `cache.NoExpiration`): a read
//! returns the cached instance when there is one, otherwise asks EC2 through the
//! [`DescribeBatcher`] and caches the answer; a read that must see EC2's current state (`Delete`
//! reads with `SkipCache`) always asks. EC2 saying the instance does not exist evicts it. The
//! garbage collector's list refreshes every listed instance and evicts the ones it no longer
//! returns, so a cached entry is at most one list period old. Drift and the NotReady-node check
//! read through the cache, as upstream's `CloudProvider.Get` and `getInstance` do.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use aws_sdk_ec2::types::Instance;

use crate::cloudprovider::CloudError;
use crate::cloudprovider::aws::describe_batcher::DescribeBatcher;

/// Whether a read may be answered from the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// The cached instance if there is one (upstream `Get` without options).
    Cached,
    /// Always EC2 (upstream `SkipCache`).
    Fresh,
}

/// The cached instance reads of one provider.
#[derive(Debug)]
pub struct InstanceCache {
    describes: DescribeBatcher,
    instances: Mutex<BTreeMap<String, Instance>>,
}

impl InstanceCache {
    /// An empty cache in front of `describes`.
    pub fn new(describes: DescribeBatcher) -> Self {
        Self { describes, instances: Mutex::default() }
    }

    /// The live instance `id`, `None` when EC2 says it does not exist.
    ///
    /// # Errors
    /// The EC2 error of the read (the cache is left as it was).
    pub async fn get(&self, id: &str, read: Read) -> Result<Option<Instance>, CloudError> {
        if read == Read::Cached
            && let Some(instance) = self.instances.lock().expect("instance cache").get(id)
        {
            return Ok(Some(instance.clone()));
        }
        let found = self.describes.get(id).await?;
        let mut instances = self.instances.lock().expect("instance cache");
        match &found {
            Some(instance) => instances.insert(id.to_owned(), instance.clone()),
            None => instances.remove(id),
        };
        Ok(found)
    }

    /// Records a full list of the cluster's live instances: each is cached, every cached
    /// instance the list did not return is evicted.
    pub fn listed(&self, listed: &[Instance]) {
        let ids: BTreeSet<&str> = listed.iter().filter_map(Instance::instance_id).collect();
        let mut instances = self.instances.lock().expect("instance cache");
        instances.retain(|id, _| ids.contains(id.as_str()));
        for instance in listed {
            if let Some(id) = instance.instance_id() {
                instances.insert(id.to_owned(), instance.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn instance(id: &str) -> Instance {
        Instance::builder().instance_id(id).build()
    }

    /// A cache over a fake EC2 that knows the ids in `live` and counts its calls.
    fn cache(live: Arc<Mutex<Vec<&'static str>>>, calls: Arc<Mutex<usize>>) -> InstanceCache {
        InstanceCache::new(DescribeBatcher::with(Arc::new(move |ids: Vec<String>| {
            *calls.lock().expect("calls") += 1;
            let live = live.lock().expect("live").clone();
            Box::pin(
                async move { Ok(ids.iter().filter(|id| live.contains(&id.as_str())).map(|id| instance(id)).collect()) },
            )
        })))
    }

    #[tokio::test(start_paused = true)]
    async fn cached_reads_ask_ec2_once_and_fresh_reads_always() {
        let (live, calls) = (Arc::new(Mutex::new(vec!["i-1"])), Arc::default());
        let cache = cache(Arc::clone(&live), Arc::clone(&calls));
        for _ in 0..3 {
            assert!(cache.get("i-1", Read::Cached).await.expect("read").is_some());
        }
        assert_eq!(*calls.lock().expect("calls"), 1);
        // The instance is terminated: a cached read still sees it, a fresh one does not and
        // evicts it, so the next cached read asks again.
        live.lock().expect("live").clear();
        assert!(cache.get("i-1", Read::Cached).await.expect("read").is_some());
        assert!(cache.get("i-1", Read::Fresh).await.expect("read").is_none());
        assert!(cache.get("i-1", Read::Cached).await.expect("read").is_none());
        assert_eq!(*calls.lock().expect("calls"), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_list_refreshes_and_evicts() {
        let (live, calls) = (Arc::new(Mutex::new(vec!["i-1", "i-2"])), Arc::default());
        let cache = cache(Arc::clone(&live), Arc::clone(&calls));
        assert!(cache.get("i-1", Read::Cached).await.expect("read").is_some());
        cache.listed(&[instance("i-2")]);
        assert!(cache.get("i-2", Read::Cached).await.expect("read").is_some());
        assert_eq!(*calls.lock().expect("calls"), 1, "i-2 came from the list");
        live.lock().expect("live").retain(|id| *id == "i-2");
        assert!(cache.get("i-1", Read::Cached).await.expect("read").is_none(), "i-1 was evicted by the list");
        assert_eq!(*calls.lock().expect("calls"), 2);
    }
}
