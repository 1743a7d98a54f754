//! Scenario names. The format names entries by kind and name alone (pods are labelled
//! `app: <name>`), while a cluster may reuse a name in two namespaces, or a StatefulSet may
//! share a Deployment's name; the second one is renamed `<namespace>-<name>` (then with a
//! number), deterministically in dump order, and the rename is listed.

use std::collections::BTreeSet;

use super::findings::{Class, Findings};

/// Names taken so far, per scenario kind.
#[derive(Debug, Default)]
pub struct Names {
    taken: BTreeSet<(String, String)>,
}

impl Names {
    /// A free name for `name` of scenario kind `kind` (`deployment`, `job`, `daemonSet`,
    /// `pdb`, `priorityClass`), recording a rename in `findings`.
    pub fn claim(&mut self, kind: &str, name: &str, namespace: &str, object: &str, findings: &mut Findings) -> String {
        let mut candidate = name.to_string();
        if self.taken.contains(&(kind.to_string(), candidate.clone())) {
            candidate = format!("{namespace}-{name}");
            let mut n = 2;
            while self.taken.contains(&(kind.to_string(), candidate.clone())) {
                candidate = format!("{namespace}-{name}-{n}");
                n += 1;
            }
            findings.push(
                Class::Changed,
                object,
                "metadata.name",
                format!(
                    "renamed {candidate}: another {kind} entry is already named {name} (scenario names are per kind)"
                ),
            );
        }
        self.taken.insert((kind.to_string(), candidate.clone()));
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_name_gets_its_namespace() {
        let mut names = Names::default();
        let mut f = Findings::default();
        assert_eq!(names.claim("deployment", "web", "a", "Deployment/a/web", &mut f), "web");
        assert_eq!(names.claim("job", "web", "a", "Job/a/web", &mut f), "web");
        assert_eq!(names.claim("deployment", "web", "b", "Deployment/b/web", &mut f), "b-web");
        assert_eq!(names.claim("deployment", "web", "b", "StatefulSet/b/web", &mut f), "b-web-2");
        assert_eq!(f.all.len(), 2);
    }
}
