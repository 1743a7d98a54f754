//! NodeOverlay validation.

use super::*;

#[test]
fn nodeoverlay_rules() {
    let overlay: NodeOverlay = serde_json::from_value(json!({
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "gpu-discount"},
        "spec": {
            "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": []}],
            "price": "1.5",
            "priceAdjustment": "-10%",
            "capacity": {"cpu": 1},
            "weight": 0
        }
    }))
    .expect("NodeOverlay deserializes");
    let errors = overlay.validate().expect_err("invalid");
    for (path, message) in [
        ("spec.requirements[0].values", "requirements with operator 'NotIn' must have a value defined"),
        ("spec", "cannot set both 'price' and 'priceAdjustment'"),
        ("spec.capacity", "invalid resource restricted"),
        ("spec.weight", "greater than or equal to 1"),
    ] {
        assert!(errors.has(path, message), "{path}: {errors}");
    }
}
