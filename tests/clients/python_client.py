#!/usr/bin/env python3
"""The official Python `kubernetes` client (PyPI, pinned in tests/clients/install.sh) against
`dovetail serve`: CRUD, server-side apply, the three patch types, watch with resume from a
resourceVersion, eviction (allowed and refused by a PDB), finalizers and the scale
subresource. Run by sim/tests/live_clients.rs as `python_client.py http://127.0.0.1:PORT`.

Prints one `step ok: ...` line per step; any failure raises (non-zero exit) with the step.
"""

import sys
import time

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

NS = "py-client"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def ok(step, detail=""):
    print(f"step ok: {step}{': ' + detail if detail else ''}", flush=True)


def expect_status(code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        assert e.status == code, f"expected HTTP {code}, got {e.status}: {e.body}"
        return e
    raise AssertionError(f"expected HTTP {code}, the call succeeded")


def main(url):
    config = client.Configuration(host=url)
    api = client.ApiClient(config)
    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    policy = client.PolicyV1Api(api)

    version = client.VersionApi(api).get_code()
    ok("version", version.git_version)

    # CRUD on a namespace.
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS, labels={"team": "a"})))
    got = core.read_namespace(NS)
    assert got.metadata.labels == {"team": "a"}, got.metadata.labels
    names = [n.metadata.name for n in core.list_namespace(label_selector="team=a").items]
    assert names == [NS], names
    ok("namespace create/read/list", NS)
    # A pod for the eviction step at the end; the controller launches a node for it meanwhile.
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="victim", labels={"role": "victim"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]),
    )
    core.create_namespaced_pod(NS, pod)

    # ConfigMap CRUD and the three patch types.
    cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"), data={"a": "1"})
    created = core.create_namespaced_config_map(NS, cm)
    created.data["b"] = "2"
    replaced = core.replace_namespaced_config_map("settings", NS, created)
    assert replaced.data == {"a": "1", "b": "2"}, replaced.data
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    stale = expect_status(409, core.replace_namespaced_config_map, "settings", NS, created)
    ok("configmap create/replace, stale replace is 409", stale.reason)
    p = core.patch_namespaced_config_map("settings", NS, {"data": {"c": "3", "a": None}}, _content_type=MERGE)
    assert p.data == {"b": "2", "c": "3"}, p.data
    p = core.patch_namespaced_config_map("settings", NS, {"metadata": {"labels": {"x": "y"}}}, _content_type=STRATEGIC)
    assert p.metadata.labels == {"x": "y"}, p.metadata.labels
    p = core.patch_namespaced_config_map(
        "settings", NS, [{"op": "replace", "path": "/data/b", "value": "20"}], _content_type=JSON_PATCH
    )
    assert p.data == {"b": "20", "c": "3"}, p.data
    ok("patch: merge, strategic merge, json", str(p.data))

    # Server-side apply: create, then a second manager conflicts on a field it does not own.
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"k": "v"}}
    a = core.patch_namespaced_config_map("applied", NS, body, field_manager="py", _content_type=APPLY)
    assert a.data == {"k": "v"} and any(m.manager == "py" for m in a.metadata.managed_fields), a
    body["data"]["k"] = "other"
    conflict = expect_status(
        409, core.patch_namespaced_config_map, "applied", NS, body, field_manager="other", _content_type=APPLY
    )
    forced = core.patch_namespaced_config_map(
        "applied", NS, body, field_manager="other", force=True, _content_type=APPLY
    )
    assert forced.data == {"k": "other"}, forced.data
    ok("server-side apply, conflict 409 then force", conflict.reason)

    # Watch: a list's resourceVersion, then resume from it and see only later events.
    listed = core.list_namespaced_config_map(NS)
    rv = listed.metadata.resource_version
    core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w1")))
    core.delete_namespaced_config_map("w1", NS)
    w = watch.Watch()
    seen = []
    for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=rv, timeout_seconds=5):
        seen.append((ev["type"], ev["object"].metadata.name))
        last_rv = ev["object"].metadata.resource_version
        if len(seen) == 2:
            w.stop()
    assert seen == [("ADDED", "w1"), ("DELETED", "w1")], seen
    core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w2")))
    resumed = []
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=last_rv, timeout_seconds=5):
        resumed.append((ev["type"], ev["object"].metadata.name))
        w.stop()
    assert resumed == [("ADDED", "w2")], resumed
    ok("watch (watch=True) with resume from resourceVersion", f"{seen} then {resumed}")

    # Finalizers hold a deleted object until they are removed.
    core.create_namespaced_config_map(
        NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="held", finalizers=["example.com/hold"]))
    )
    core.delete_namespaced_config_map("held", NS)
    held = core.read_namespaced_config_map("held", NS)
    assert held.metadata.deletion_timestamp is not None, held.metadata
    core.patch_namespaced_config_map("held", NS, {"metadata": {"finalizers": None}}, _content_type=MERGE)
    expect_status(404, core.read_namespaced_config_map, "held", NS)
    ok("finalizers hold a deletion until removed")

    # A Deployment and its scale subresource.
    labels = {"app": "web"}
    dep = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="web", image="nginx")]),
            ),
        ),
    )
    apps.create_namespaced_deployment(NS, dep)
    scale = apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 3}}, _content_type=MERGE)
    assert scale.spec.replicas == 3, scale
    assert apps.read_namespaced_deployment("web", NS).spec.replicas == 3
    assert apps.read_namespaced_deployment_scale("web", NS).status.selector == "app=web"
    ok("deployment create, scale subresource patch/read", "replicas 3")
    apps.delete_namespaced_deployment("web", NS)
    sts = client.V1StatefulSet(
        metadata=client.V1ObjectMeta(name="db"),
        spec=client.V1StatefulSetSpec(
            replicas=1, service_name="db", selector=dep.spec.selector, template=dep.spec.template
        ),
    )
    apps.create_namespaced_stateful_set(NS, sts)
    # The simulated StatefulSet controller writes the new object's status, so a read may be
    # stale by the time of the replace: read and replace again on 409, as client-go's
    # RetryOnConflict does.
    for _ in range(50):
        before = apps.read_namespaced_stateful_set_scale("db", NS)
        before.spec.replicas = 2
        try:
            scale = apps.replace_namespaced_stateful_set_scale("db", NS, before)
            break
        except client.exceptions.ApiException as e:
            if e.status != 409:
                raise
    else:
        raise AssertionError("the scale replace met a conflict 50 times")
    assert scale.spec.replicas == 2 and apps.read_namespaced_stateful_set("db", NS).spec.replicas == 2
    # `before` still carries the old resourceVersion: a precondition that no longer holds.
    stale = expect_status(409, apps.replace_namespaced_stateful_set_scale, "db", NS, before)
    ok("statefulset scale subresource read/replace, stale replace is 409", stale.reason)

    # Eviction: refused (429) while a PDB allows no disruption, allowed once it is gone. The
    # pod must be running (a pending pod is evicted whatever its PDBs say, as upstream's
    # canIgnorePDB does), so serve runs with --karpenter and the controller gives it a node.
    for _ in range(600):
        if core.read_namespaced_pod("victim", NS).status.phase == "Running":
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the pod never ran")
    pdb = client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name="keep"),
        spec=client.V1PodDisruptionBudgetSpec(min_available=1, selector=client.V1LabelSelector(match_labels={"role": "victim"})),
    )
    policy.create_namespaced_pod_disruption_budget(NS, pdb)
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="victim", namespace=NS))
    refused = expect_status(429, core.create_namespaced_pod_eviction, "victim", NS, eviction)
    for _ in range(100):
        status = policy.read_namespaced_pod_disruption_budget("keep", NS).status
        if status is not None and status.current_healthy == 1:
            break
        time.sleep(0.1)
    refused = expect_status(429, core.create_namespaced_pod_eviction, "victim", NS, eviction)
    policy.delete_namespaced_pod_disruption_budget("keep", NS)
    core.create_namespaced_pod_eviction("victim", NS, eviction)
    for _ in range(300):
        try:
            core.read_namespaced_pod("victim", NS)
        except ApiException as e:
            assert e.status == 404, e
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the evicted pod was never deleted")
    ok("eviction: 429 under a PDB, then evicted", refused.reason)

    core.delete_namespace(NS)
    ok("namespace delete")


if __name__ == "__main__":
    main(sys.argv[1])
