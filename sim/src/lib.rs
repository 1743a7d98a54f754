//! The deterministic world that runs Dovetail.

pub mod apiserver;
