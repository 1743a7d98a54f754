//! The host ports a pod binds on its node, and when two of them collide: kube-scheduler's
//! NodePorts filter, as Karpenter's scheduler applies it to the nodes it plans.
//!
//! Upstream (core `pkg/scheduling/hostportusage.go`): a pod's host ports are the
//! `hostPort`s of its containers' ports (`GetHostPorts`, l. 93–115: init containers are
//! not read; an empty `hostIP` means `0.0.0.0`), and two entries collide when protocol and
//! port are equal and the IPs are equal or either is unspecified (`0.0.0.0` or `::`;
//! `HostPort.Matches`, l. 50–62). Karpenter checks every pod it plans against the ports
//! of the pods already on a node or planned for it (`Conflicts`, l. 75–86, from
//! `scheduling/existingnode.go` l. 91 and `scheduling/nodeclaim.go` l. 563). Written from
//! that source; nothing here comes from the controller.

use std::net::IpAddr;

use serde_json::Value;

/// One `<hostIP, hostPort, protocol>` a pod binds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPort {
    /// The host IP as written, `0.0.0.0` when empty.
    ip: String,
    port: i64,
    /// `TCP` when empty: the API server's default for `ContainerPort.protocol`.
    protocol: String,
}

impl HostPort {
    /// Whether `self` and `other` cannot both be bound on one node.
    pub fn collides_with(&self, other: &HostPort) -> bool {
        if self.protocol != other.protocol || self.port != other.port {
            return false;
        }
        let parse = |ip: &str| ip.parse::<IpAddr>().ok();
        match (parse(&self.ip), parse(&other.ip)) {
            (Some(a), Some(b)) => a == b || a.is_unspecified() || b.is_unspecified(),
            _ => self.ip == other.ip,
        }
    }
}

/// The host ports `pod` binds (its containers' ports with a non-zero `hostPort`).
pub fn host_ports(pod: &Value) -> Vec<HostPort> {
    let containers = pod["spec"]["containers"].as_array().into_iter().flatten();
    containers
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .filter_map(|p| {
            let port = p["hostPort"].as_i64().filter(|port| *port != 0)?;
            let ip = p["hostIP"].as_str().filter(|ip| !ip.is_empty()).unwrap_or("0.0.0.0");
            let protocol = p["protocol"].as_str().filter(|p| !p.is_empty()).unwrap_or("TCP");
            Some(HostPort { ip: ip.to_owned(), port, protocol: protocol.to_owned() })
        })
        .collect()
}

/// Whether any of `ports` collides with any of `taken`.
pub fn any_collision(ports: &[HostPort], taken: &[HostPort]) -> bool {
    ports.iter().any(|p| taken.iter().any(|t| p.collides_with(t)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(ports: Value) -> Value {
        json!({"spec": {"containers": [{"name": "c", "ports": ports}]}})
    }

    #[test]
    fn only_host_ports_count_with_upstreams_defaults() {
        let p = pod(json!([{"containerPort": 80}, {"containerPort": 80, "hostPort": 8080}]));
        let ports = host_ports(&p);
        assert_eq!(ports, vec![HostPort { ip: "0.0.0.0".into(), port: 8080, protocol: "TCP".into() }]);
        let init = json!({"spec": {"containers": [], "initContainers": [{"ports": [{"hostPort": 1}]}]}});
        assert!(host_ports(&init).is_empty(), "init containers' ports are not read upstream");
    }

    #[test]
    fn collisions_follow_protocol_port_and_unspecified_ips() {
        let of = |v: Value| host_ports(&pod(v));
        let any = of(json!([{"hostPort": 53}]));
        let udp = of(json!([{"hostPort": 53, "protocol": "UDP"}]));
        let ten = of(json!([{"hostPort": 53, "hostIP": "10.0.0.1"}]));
        let eleven = of(json!([{"hostPort": 53, "hostIP": "10.0.0.2"}]));
        let v6_any = of(json!([{"hostPort": 53, "hostIP": "::"}]));
        let other_port = of(json!([{"hostPort": 54}]));
        assert!(any_collision(&any, &any));
        assert!(!any_collision(&any, &udp), "protocols differ");
        assert!(!any_collision(&any, &other_port), "ports differ");
        assert!(any_collision(&any, &ten), "0.0.0.0 takes every address");
        assert!(!any_collision(&ten, &eleven), "two specific addresses share the port");
        assert!(any_collision(&v6_any, &ten), ":: is unspecified too");
        assert!(any_collision(&ten, &ten));
    }
}
