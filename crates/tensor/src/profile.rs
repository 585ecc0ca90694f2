//! Which of DirectML's validation rules a backend enforces. DirectML itself, the CPU backend
//! and the oracle enforce all of them (`Strict`); an implementation that validates by other
//! rules (ONNX Runtime clamps windows, accepts empty dimensions) declares what it does not
//! enforce, and the harness reports its acceptances of those must-reject cases as
//! informational instead of failing them.

use std::fmt;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ValidationProfile {
    /// Every rule of specs/ (DirectML's `E_INVALIDARG`).
    #[default]
    Strict,
    /// Values only: no rule is enforced; only what it accepts and executes is judged.
    ValuesOnly,
    /// Every rule except these (rule ids as in specs/*.yaml `id:`).
    NotEnforced(Vec<String>),
}

impl ValidationProfile {
    /// Whether a descriptor breaking `rule` must be rejected.
    pub fn enforces(&self, rule: &str) -> bool {
        match self {
            ValidationProfile::Strict => true,
            ValidationProfile::ValuesOnly => false,
            ValidationProfile::NotEnforced(rules) => !rules.iter().any(|r| r == rule),
        }
    }

    /// `strict`, `values-only`, or `not-enforced: a, b`.
    pub fn name(&self) -> String {
        match self {
            ValidationProfile::Strict => "strict".to_string(),
            ValidationProfile::ValuesOnly => "values-only".to_string(),
            ValidationProfile::NotEnforced(rules) => format!("not-enforced: {}", rules.join(", ")),
        }
    }

    /// This profile, minus `rules` besides (declared from outside, e.g. by an expectations
    /// file's `not_enforced`). No rules: the profile itself.
    pub fn without(&self, rules: &[String]) -> ValidationProfile {
        match self {
            _ if rules.is_empty() => self.clone(),
            ValidationProfile::ValuesOnly => ValidationProfile::ValuesOnly,
            ValidationProfile::Strict => ValidationProfile::NotEnforced(rules.to_vec()),
            ValidationProfile::NotEnforced(own) => {
                let mut all = own.clone();
                all.extend(rules.iter().filter(|r| !own.contains(r)).cloned());
                ValidationProfile::NotEnforced(all)
            }
        }
    }
}

impl fmt::Display for ValidationProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_profile_enforces_what_its_name_says() {
        let rules = vec!["slice1.window_inside_input".to_string()];
        let not = ValidationProfile::NotEnforced(rules.clone());
        assert!(ValidationProfile::Strict.enforces("slice1.window_inside_input"));
        assert!(!ValidationProfile::ValuesOnly.enforces("tensor.sizes_nonzero"));
        assert!(!not.enforces("slice1.window_inside_input"));
        assert!(not.enforces("tensor.sizes_nonzero"));
        assert_eq!(ValidationProfile::Strict.name(), "strict");
        assert_eq!(ValidationProfile::ValuesOnly.name(), "values-only");
        let two = not.without(&["tensor.sizes_nonzero".to_string()]);
        assert_eq!(
            two.name(),
            "not-enforced: slice1.window_inside_input, tensor.sizes_nonzero"
        );
        assert_eq!(ValidationProfile::Strict.without(&rules), not);
        assert_eq!(
            ValidationProfile::Strict.without(&[]),
            ValidationProfile::Strict
        );
        assert_eq!(
            ValidationProfile::ValuesOnly.without(&rules),
            ValidationProfile::ValuesOnly
        );
    }
}
