//! The deterministic world that runs Dovetail.
#![warn(missing_docs)]

pub mod apiserver;
