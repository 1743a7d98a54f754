//! The cloud provider as the scheduler sees it: instance types with their resources, labels and
//! priced offerings ([`types`]). The AWS implementation that fills these from EC2 lives beside it.

pub mod fake;
pub mod types;

pub use types::{InstanceType, InstanceTypeFacts, KubeletOverrides, Offering, Overhead};
