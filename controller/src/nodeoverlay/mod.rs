//! NodeOverlay (feature gate `NodeOverlay`, off by default): price and extended-resource
//! capacity adjustments to the instance types a NodePool offers (core
//! `pkg/controllers/nodeoverlay/`). The reconciler ([`controller`]) evaluates the overlays into
//! an [`InstanceTypeStore`] that [`crate::cloudprovider::overlay::OverlayCloudProvider`] applies.

pub mod controller;
pub mod evaluate;
pub mod price;
pub mod store;

#[cfg(test)]
mod tests;

pub use controller::{NodeOverlayController, watch_overlays};
pub use store::InstanceTypeStore;
