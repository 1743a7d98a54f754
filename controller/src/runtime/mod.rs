//! What the controller takes from its environment: the clock, the random source, settings,
//! events and metrics. Production wires the system clock and an OS-seeded RNG; the simulator
//! wires simulated time and a seeded stream. Nothing else in the crate reads time or entropy.
//! [`reconcile`] is the runtime every controller loop runs on.

pub mod api_retry;
pub mod api_timeout;
pub mod clock;
pub mod event_writer;
pub mod events;
pub mod flags;
pub mod leader;
pub mod metrics;
pub mod random;
pub mod reconcile;
pub mod settings;

pub use clock::{Clock, SharedClock, SystemClock};
pub use event_writer::EventWriter;
pub use events::{Event, EventRecorder, EventType};
pub use flags::{Flags, ProcessOptions};
pub use leader::{LeaderElection, LeaderElectionConfig, Leadership};
pub use metrics::Metrics;
pub use random::SharedRng;
pub use reconcile::{Action, Env, Reconciler};
pub use settings::{FeatureGates, Settings};
