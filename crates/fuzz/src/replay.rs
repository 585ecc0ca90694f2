//! The words replay commands are made of: the `DMLCTS_*` settings that shaped this process,
//! and shell quoting. The saved cases' replay lines and the campaign's own command use them.

/// The `DMLCTS_*` settings of this process, as `NAME=value ` words for a command line: they
/// shape a run (adapter choice, Vulkan driver, extra cases), so a replay needs them.
pub fn env_prefix() -> String {
    let mut settings: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| name.starts_with("DMLCTS_"))
        .collect();
    settings.sort();
    settings
        .iter()
        .map(|(name, value)| format!("{name}={} ", shell_word(value)))
        .collect()
}

pub(crate) fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}
