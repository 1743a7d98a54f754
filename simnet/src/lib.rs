//! HTTP over the turmoil network.
//!
//! Production clients (`kube::Client`, the AWS SDK) are built on hyper. In the simulator
//! they keep every layer of their stack and only the TCP connector is swapped for one
//! that dials `turmoil::net::TcpStream`, so retries, timeouts, parsing and network
//! faults behave as in production. Build every client *inside* the turmoil host that
//! uses it: hyper's pool and tower's buffer spawn tasks on the current runtime, which
//! turmoil drops when the host crashes or bounces.

mod connector;

pub use connector::{SimIo, TurmoilConnector, http_client};
