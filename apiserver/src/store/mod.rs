//! The object store: what etcd plus the generic registry do in a real API server.
//!
//! One global resourceVersion counter orders every mutation; each mutation appends a
//! watch event to a bounded history (older versions are "compacted" and answer 410) and
//! fans out to live watchers. Deletion honours finalizers and pod grace periods, and
//! removal garbage-collects dependents through ownerReferences. Every mutation is
//! recorded in the run's trace.
//!
//! Files: `objects.rs` (the [`Store`], its reads and the one commit path every mutation
//! goes through), the verbs `create.rs`, `update.rs` and `delete.rs`, `gc.rs`
//! (ownerReferences and the garbage collector), `namespaces.rs` (the namespace
//! lifecycle), `events.rs` (what a watcher receives), `watch.rs` (history and fan-out),
//! `paging.rs` (list pages and continue tokens), `object_ref.rs`, `options.rs` (what a
//! write asks for) and `metadata.rs` (small edits of `metadata` the verbs share).

mod create;
mod delete;
mod events;
mod gc;
mod metadata;
mod namespaces;
mod object_ref;
mod objects;
mod options;
mod paging;
mod update;
mod watch;

pub use events::{Event, EventType, Matcher, WatchMsg, WatchStart, WatchStream};
pub use object_ref::ObjRef;
pub use objects::{INITIAL_NAMESPACES, Store, StoreConfig};
pub use options::{DeleteOptions, Part, Propagation, WriteOptions};
pub use paging::ListPage;
