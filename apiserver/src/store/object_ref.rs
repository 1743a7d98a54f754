//! Where an object lives: its type, namespace and name.

use crate::resources::ResourceKey;

/// Where an object lives: resource type, namespace ("" if cluster-scoped) and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjRef {
    /// Resource type.
    pub key: ResourceKey,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl std::fmt::Display for ObjRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.key, self.name)
        } else {
            write!(f, "{} {}/{}", self.key, self.namespace, self.name)
        }
    }
}
