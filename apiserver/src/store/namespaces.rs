//! The namespace lifecycle: the namespaces every cluster starts with, and the namespace
//! controller that empties a terminating namespace and then removes it.

use super::object_ref::ObjRef;
use super::objects::Store;
use super::options::{DeleteOptions, Propagation};
use crate::resources::ResourceKey;

impl Store {
    pub(super) fn namespace_exists(&self, ns: &str) -> bool {
        self.objects.get(&ns_key()).is_some_and(|m| m.contains_key(&(String::new(), ns.to_string())))
    }

    pub(super) fn namespace_terminating(&self, ns: &str) -> bool {
        self.objects
            .get(&ns_key())
            .and_then(|m| m.get(&(String::new(), ns.to_string())))
            .is_some_and(|s| s.obj.pointer("/metadata/deletionTimestamp").is_some())
    }

    /// The namespace controller: delete a terminating namespace's content, and the
    /// namespace itself once empty.
    pub(crate) fn drain_namespace(&mut self, ns: &str) {
        let keys: Vec<ResourceKey> = self.registry.iter().filter(|t| t.namespaced).map(|t| t.key()).collect();
        for key in keys {
            let names: Vec<String> = self
                .objects
                .get(&key)
                .map(|m| m.keys().filter(|(n, _)| n == ns).map(|(_, name)| name.clone()).collect())
                .unwrap_or_default();
            let Some(rt) = self.registry.by_key(&key) else { continue };
            for name in names {
                let opts = DeleteOptions { grace_period_seconds: Some(0), ..Default::default() };
                let _ = self.delete(&rt, ns, &name, &opts);
            }
        }
        self.finish_namespace(ns);
    }

    pub(super) fn finish_namespace(&mut self, ns: &str) {
        if ns.is_empty() || !self.namespace_terminating(ns) {
            return;
        }
        let empty = self.objects.iter().all(|(_, m)| m.keys().all(|(n, _)| n != ns));
        if empty {
            let r = ObjRef { key: ns_key(), namespace: String::new(), name: ns.to_string() };
            self.remove(&r, Propagation::Background);
        }
    }
}

pub(super) fn ns_key() -> ResourceKey {
    ResourceKey { group: String::new(), plural: "namespaces".into() }
}
