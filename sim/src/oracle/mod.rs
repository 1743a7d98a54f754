//! The oracles the invariant checker judges with, written apart from the controller so
//! that a bug in the controller's decisions cannot hide itself: nothing here imports the
//! controller crate.
//!
//! | helper | module |
//! |---|---|
//! | the store and the cloud as the checker reads them | [`view`] |
//! | CPU, memory and pod slots; which offerings a NodePool allows; pod placement rules | [`resources`] |
//! | NodePool disruption budgets and their cron schedules | [`budget`] |
//! | the LP lower bound on the cost of hosting the pods | [`cost_bound`] |
//! | the consolidation moves Karpenter's rules allow, and what keeps every other node | [`moves`] |
//! | PodDisruptionBudget and do-not-disrupt protection of a pod | [`protection`] |
//! | offering prices through the NodeOverlays (gate `NodeOverlay`) | [`node_overlay`] |
//! | first-fit-decreasing packing of pending pods onto new nodes | [`first_fit`] |
//! | the host ports a pod binds, and which collide on one node | [`host_ports`] |
//! | which pending pods one provisioning pass can have seen under watch lag | [`batches`] |
//! | the pods Karpenter nominated to NodeClaims, from its Events | [`nomination`] |
//! | the NodeClaims Karpenter launched as replacements or disrupted, from its Events | [`disruption_events`] |
//! | the zones a `DoNotSchedule` zone spread leaves a pending pod | [`zone_spread`] |
//! | the zones a pod's PersistentVolumeClaims allow | [`volume_zones`] |

pub mod batches;
pub mod budget;
pub mod cost_bound;
pub mod discovered_capacity;
pub mod disruption_events;
pub mod first_fit;
pub mod host_ports;
pub mod instance_price;
pub mod moves;
pub mod node_overlay;
pub mod node_preference;
pub mod nomination;
pub mod offering_labels;
pub mod offering_table;
pub mod protection;
pub mod resources;
pub mod template_drift;
pub mod timestamp;
pub mod view;
pub mod view_readings;
pub mod volume_zones;
pub mod zone_spread;
