#!/usr/bin/env python3
"""Writes apiserver/src/protobuf/messages.txt: the Kubernetes protobuf messages (field tag,
JSON name, cardinality, kind) that the API server's protobuf decoder reads request bodies with.

The messages come from the k8s-pb crate (prost code generated from Kubernetes' own
generated.proto files); the JSON names from k8s-openapi (the JSON keys its deserializers
match), because prost renames fields to snake_case and loses `hostIPC`, `podIP`, `$ref`.
Both crates must be the versions in Cargo.lock (k8s-pb 0.9.0 and k8s-openapi 0.29.0, v1_34:
both carry Kubernetes 1.34, e.g. PodSpec.hostnameOverride). The test
`protobuf::tests` encodes k8s-pb values with prost and decodes them with this table.

Run from the repository root after `cargo fetch`:
    python3 apiserver/tools/gen_protobuf_messages.py > apiserver/src/protobuf/messages.txt
"""

import glob
import json
import os
import re
import subprocess
import sys

PB_VERSION = "0.9.0"
OPENAPI_VERSION = "0.29.0"
K8S = "v1_34"


def crate_dir(name, version):
    meta = json.loads(subprocess.check_output(["cargo", "metadata", "--format-version", "1"]))
    for p in meta["packages"]:
        if p["name"] == name and p["version"] == version:
            return os.path.dirname(p["manifest_path"])
    sys.exit(f"{name} {version} is not in Cargo.lock")


def norm(name):
    return re.sub(r"[^a-z0-9]", "", name.replace("r#", "").lower())


def snake(camel):
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", camel)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def openapi_keys(openapi_src, module, struct):
    """The JSON keys k8s-openapi's type `module::struct` reads, by normalised name."""
    base = os.path.join(openapi_src, K8S, *module)
    candidates = [os.path.join(base, snake(struct) + ".rs")]
    candidates += glob.glob(os.path.join(base, "*.rs"))
    for path in candidates:
        if not os.path.exists(path):
            continue
        text = open(path).read()
        if not re.search(rf"pub struct {struct}\b", text, re.IGNORECASE):
            continue
        return {norm(k): k for k in re.findall(r'"([^"]+)" => Field::Key_', text)}
    return {}


FIELD = re.compile(r"#\[prost\(([^)]*)\)\]\s*pub (r#)?(\w+):(.*?)(?=#\[prost|\Z)", re.S)


def field_type(text):
    """The Rust type at the start of `text`, up to the comma that ends the field."""
    depth = 0
    for i, c in enumerate(text):
        depth += {"<": 1, ">": -1}.get(c, 0)
        if c == "," and depth == 0:
            return " ".join(text[:i].split())
    return " ".join(text.split())
STRUCT = re.compile(r"pub struct (\w+) \{(.*?)\n\}", re.S)
RESOURCE = re.compile(
    r'impl crate::Resource for (\w+) \{\s*const API_VERSION: &\'static str = "([^"]*)";.*?const KIND: &\'static str = "([^"]*)";',
    re.S,
)


def resolve(module, rust_type):
    """The module path of a field's message type, written relative to `module`."""
    inner = rust_type
    for wrapper in ("::core::option::Option<", "::prost::alloc::vec::Vec<", "::prost::alloc::boxed::Box<"):
        inner = inner.replace(wrapper, "")
    inner = inner.rstrip(">").strip().rstrip(",").strip()
    if inner.startswith("::prost::alloc::collections::BTreeMap<"):
        inner = inner.split(",", 1)[1].strip()
    parts = inner.split("::")
    path = list(module)
    while parts and parts[0] == "super":
        path.pop()
        parts.pop(0)
    if parts and parts[0] == "crate":
        path, parts = [], parts[1:]
    return "::".join(path + parts)


def inlines_into(messages, path, keys, depth=3):
    """Whether every field of message `path` is one of the parent's JSON `keys` (or itself
    inlines into them): the message is a Go struct embedded with `json:",inline"`."""
    fields = messages[path][3]
    return depth > 0 and bool(fields) and all(
        norm(field) in keys or (kind_ == "message" and target in messages and inlines_into(messages, target, keys, depth - 1))
        for _, field, _, kind_, target in fields
    )


def main():
    pb = os.path.join(crate_dir("k8s-pb", PB_VERSION), "src")
    openapi = os.path.join(crate_dir("k8s-openapi", OPENAPI_VERSION), "src")
    messages = {}  # module path -> (apiVersion, kind, openapi keys, [fields])
    for path in sorted(glob.glob(os.path.join(pb, "**", "mod.rs"), recursive=True)):
        module = os.path.relpath(os.path.dirname(path), pb).split(os.sep)
        text = open(path).read()
        resources = {m.group(1): (m.group(2), m.group(3)) for m in RESOURCE.finditer(text)}
        versions = {v for v, _ in resources.values()}
        group_version = versions.pop() if len(versions) == 1 else ""
        for s in STRUCT.finditer(text):
            name, body = s.group(1), s.group(2)
            keys = openapi_keys(openapi, module, name)
            api_version, kind = resources.get(name, (group_version, name))
            fields = []
            for f in FIELD.finditer(body):
                attrs, field, rust_type = f.group(1), f.group(3), field_type(f.group(4))
                tag = re.search(r'tag = "(\d+)"', attrs).group(1)
                if attrs.startswith("btree_map"):
                    card, kind_ = "map", re.search(r'btree_map = "string, (\w+)"', attrs).group(1)
                else:
                    kind_ = attrs.split(",")[0].split("=")[0].strip()
                    card = "rep" if "repeated" in attrs else "opt"
                target = resolve(module, rust_type) if kind_ == "message" else "-"
                fields.append([tag, field, card, kind_, target])
            messages["::".join(module + [name])] = (api_version or "-", kind, keys, fields)
    out = []
    for path, (api_version, kind, keys, fields) in messages.items():
        out.append(f"message {path} {api_version} {kind}")
        for tag, field, card, kind_, target in fields:
            json_name = keys.get(norm(field))
            if json_name is None:
                head, *rest = field.split("_")
                json_name = head + "".join(w[:1].upper() + w[1:] for w in rest)
                # A Go struct embedded with `json:",inline"` is a field of its own in protobuf
                # and flattened in JSON: its fields are the parent's JSON keys.
                if keys and target in messages and inlines_into(messages, target, keys):
                    card = "inline"
                elif keys:
                    print(f"no k8s-openapi key for {path}.{field}: {json_name} (newer than {K8S})", file=sys.stderr)
            out.append(f"{tag} {json_name} {card} {kind_} {target}")
    print("# Generated by apiserver/tools/gen_protobuf_messages.py from k8s-pb", PB_VERSION,
          "and k8s-openapi", OPENAPI_VERSION, f"({K8S}); do not edit.")
    print("# message <module path> <apiVersion> <kind> | <tag> <json name> <opt|rep|map|inline> <kind> <message>")
    print("\n".join(out))


main()
