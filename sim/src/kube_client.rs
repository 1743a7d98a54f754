//! An unmodified `kube::Client` that reaches the simulated API server over turmoil.

use std::time::Duration;

use dovetail_simnet::{TurmoilConnector, http_client};
use kube::client::Body;

/// Builds a `kube::Client` for `http://{host}:{port}`. Call it inside the turmoil host
/// that will use the client (its connection pool lives on that host's runtime).
pub fn sim_kube_client(host: &str, port: u16) -> kube::Client {
    let connector = TurmoilConnector::new(Duration::from_secs(10));
    let client = http_client::<Body>(connector);
    let base: http::Uri = format!("http://{host}:{port}").parse().expect("host and port make a valid URI");
    let service = tower::ServiceBuilder::new().layer(kube::client::middleware::BaseUriLayer::new(base)).service(client);
    kube::Client::new(service, "default")
}
