//! What the controller takes from its environment: the clock, the random source, settings,
//! events and metrics. Production wires the system clock and an OS-seeded RNG; the simulator
//! wires simulated time and a seeded stream. Nothing else in the crate reads time or entropy.

pub mod clock;
pub mod events;
pub mod random;
pub mod settings;

pub use clock::{Clock, SharedClock, SystemClock};
pub use events::{Event, EventRecorder, EventType};
pub use random::SharedRng;
pub use settings::{FeatureGates, Settings};
