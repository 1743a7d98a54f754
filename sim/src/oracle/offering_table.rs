//! A world's offerings per NodePool requirements, listed once.
//!
//! The moves oracle prices every pool's offerings each time it looks (every simulated
//! second), because spot prices and availability change; but which (instance type, zone,
//! capacity type) a pool's requirements allow, and their labels and allocatable, do not
//! change during a run: a world's catalog is fixed when it is built. The table keeps that
//! list per distinct set of requirements ([`listed_offerings`]) and only prices it per call
//! ([`price_listed`]), giving the same offerings in the same order as
//! [`super::resources::priced_offerings`]. One table belongs to one world's checker.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use dovetail_fakecloud::FakeCloud;
use serde_json::Value;

use super::node_overlay::NodeOverlays;
use super::resources::{Listed, Offering, Requirement, listed_offerings, pool_requirements, price_listed};

/// One pool requirements' listed offerings.
type ListedFor = (Vec<Requirement>, Arc<Vec<Listed>>);

/// The listed offerings of one world, per pool requirements.
#[derive(Default)]
pub struct OfferingTable {
    listed: RefCell<Vec<ListedFor>>,
}

impl OfferingTable {
    /// [`super::resources::priced_offerings`] of `pool` at `now`, from the table.
    pub fn priced(
        &self,
        cloud: &FakeCloud,
        overlays: &NodeOverlays,
        pool: &Value,
        now: Duration,
    ) -> Vec<(Offering, bool)> {
        let requirements = pool_requirements(pool);
        let found = self.listed.borrow().iter().find(|(r, _)| *r == requirements).map(|(_, l)| l.clone());
        let listed = found.unwrap_or_else(|| {
            let listed = Arc::new(listed_offerings(cloud, &requirements));
            self.listed.borrow_mut().push((requirements, listed.clone()));
            listed
        });
        let mut priced = price_listed(cloud, &listed, now);
        overlays.reprice(
            pool,
            priced.iter_mut().map(|(o, _)| (&*o.instance_type, &*o.zone, o.capacity_type, &mut o.price)),
        );
        priced
    }
}
