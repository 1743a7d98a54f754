//! The cache's accounting: removed pods and nodes, assumed pods and stale updates.

use super::*;

#[test]
fn removing_pods_and_nodes_keeps_accounting_exact() {
    let mut s = scheduler(&[node("a", "z0", "2", "4Gi", "20")]);
    let mut r = rng();
    let p = pod("p", "1500m", "1Gi");
    place(&mut s, &p, &mut r).unwrap();
    assert!(place(&mut s, &pod("q", "1", "1Gi"), &mut r).is_err());
    s.cache_mut().remove_pod(&PodKey::of(&p));
    assert_eq!(s.cache().node("a").unwrap().requested.milli_cpu, 0);
    assert!(place(&mut s, &pod("q", "1", "1Gi"), &mut r).is_ok());
    s.cache_mut().remove_node("a");
    assert_eq!(s.cache().node_count(), 0);
    s.cache_mut().upsert_node(&node("a", "z0", "2", "4Gi", "20"));
    assert_eq!(s.cache().node("a").unwrap().requested.milli_cpu, 1000, "pod re-attached");
}

#[test]
fn assumed_pods_survive_stale_unbound_updates_until_forgotten() {
    let mut s = scheduler(&[node("a", "z0", "2", "4Gi", "20")]);
    let p = pod("p", "1500m", "1Gi");
    place(&mut s, &p, &mut rng()).unwrap();
    s.cache_mut().upsert_pod(&p); // a stale, still-unbound copy from the store
    assert_eq!(s.cache().node("a").unwrap().requested.milli_cpu, 1500);
    s.cache_mut().forget_assumed(&PodKey::of(&p)); // the binding failed
    assert_eq!(s.cache().node("a").unwrap().requested.milli_cpu, 0);
    let mut bound = p.clone();
    spec(&mut bound).node_name = Some("a".into());
    s.cache_mut().upsert_pod(&bound);
    s.cache_mut().forget_assumed(&PodKey::of(&p)); // confirmed pods are not forgotten
    assert_eq!(s.cache().node("a").unwrap().requested.milli_cpu, 1500);
}
