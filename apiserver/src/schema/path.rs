//! Field paths spelled as apimachinery's `field.Path.String()` spells them.

/// `path.Child(name)`: `a.b`, or `b` at the root.
pub(crate) fn child(base: &str, name: &str) -> String {
    if base.is_empty() { name.to_string() } else { format!("{base}.{name}") }
}

/// `path.Index(i)`: `a[0]`.
pub(crate) fn index(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

/// `path.Key(k)`: `a[k]` (map entries of `additionalProperties` maps).
pub(crate) fn key(base: &str, k: &str) -> String {
    format!("{base}[{k}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_like_apimachinery() {
        let p = index(&child(&child("", "spec"), "requirements"), 0);
        assert_eq!(child(&p, "operator"), "spec.requirements[0].operator");
        assert_eq!(key("spec.limits", "cpu"), "spec.limits[cpu]");
    }
}
